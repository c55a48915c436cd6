"""The "attention-playground" visual: the constructed multi-head model with every knob, and a causal mask."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.engine import causal_mask
from app.visuals import check_visual, get_kind
from app.visuals.toy import constructed_multi_head, embed, lookup, tokenize

from .helpers import SENTENCE, first_max, grid, heatmap_axes, naive_softmax, tick_texts

MODEL_SEED = 0  # the playground shows the same seeded model to everyone


def engine_weights(sentence: str, num_heads: int, d_model: int, temperature: float, causal: bool):
    tokens = tokenize(sentence)
    model = constructed_multi_head(d_model, num_heads, seed=MODEL_SEED)
    mask = causal_mask(len(tokens)) if causal else None
    return model(embed(tokens, d_model), mask=mask, temperature=temperature)[1]  # (h, N, N)


def choosing_rows(weights: np.ndarray, causal: bool):
    """(query, the weights it sees) for the rows that choose, by a plain loop: two keys or more, not all equal."""
    for query, row in enumerate(weights):
        seen = row[: query + 1] if causal else row
        if len(seen) >= 2 and max(seen) - min(seen) > 1e-12:
            yield query, seen


def naive_strongest(weights: np.ndarray, causal: bool) -> float | None:
    return max((float(max(seen)) for _, seen in choosing_rows(weights, causal)), default=None)


def naive_role_share(tokens, weights: np.ndarray, causal: bool, role: str):
    """(mean weight the role's queries put on the role's keys, the same for an even split over the keys each
    sees), over the role queries that see two keys or more; None if there are none."""
    shares, evens = [], []
    for query, token in enumerate(tokens):
        keys = range(query + 1) if causal else range(len(tokens))
        if lookup(token).category != role or len(keys) < 2:
            continue
        in_role = [key for key in keys if lookup(tokens[key]).category == role]
        shares.append(sum(weights[query, key] for key in in_role))
        evens.append(len(in_role) / len(keys))
    return (float(np.mean(shares)), float(np.mean(evens))) if shares else None


def test_causal_mask_zeroes_and_hatches_the_future():
    kind = get_kind("attention-playground")
    params = kind.parse({"causal": "on"})
    result = kind.compute(params)
    tokens = tokenize(params.sentence)
    n = len(tokens)
    future = ~causal_mask(n)
    assert np.all(result.weights[:, future] == 0.0)  # exactly 0, not merely small
    np.testing.assert_allclose(result.weights.sum(axis=-1), 1.0, rtol=1e-12)
    # The engine module with the same mask agrees, and so does a naive masked softmax of its scores.
    weights = engine_weights(params.sentence, 2, 16, 1.0, True)
    np.testing.assert_allclose(result.weights, weights, rtol=0, atol=1e-15)
    trace = constructed_multi_head(16, 2, seed=MODEL_SEED).forward_detailed(embed(tokens, 16))
    for head in range(2):
        for i in range(n):
            np.testing.assert_allclose(result.weights[head, i, :i + 1], naive_softmax(trace.scores[head, i, :i + 1]),
                                       rtol=1e-12)

    figure = kind.draw(params, result, kind.figure_inches(params))
    for ax in heatmap_axes(figure):
        (hatched,) = [patch for patch in ax.patches if patch.get_hatch()]
        # Exactly the masked cells are covered: test each cell's centre, in data coordinates.
        path = hatched.get_path()
        covered = [[path.contains_point((j, i)) for j in range(n)] for i in range(n)]
        assert np.array_equal(covered, future)
        assert grid(ax).get_clim() == (0.0, 1.0)
        assert ax.get_xlabel() == "key"
    assert heatmap_axes(figure)[0].get_ylabel() == "query"
    alt, caption = kind.alt(params, result), kind.caption(params, result)
    assert "Causal mask on" in alt and "causal mask" in caption.lower()
    assert "constructed illustration, not a trained model" in caption.lower()
    for head in range(2):
        best, _, _ = first_max(weights[head][1:])  # the first query sees only itself: its weight 1 says nothing
        assert f"strongest weight {best:.2f}" in alt  # each head's strongest weight
    assert "it leaves out the first query, which sees only itself (weight 1), and any query that splits its " \
           "weight evenly over the keys it sees." in alt


def test_under_the_mask_the_noun_share_counts_only_the_heads_choices_against_an_even_split():
    """At temperature 20 the noun head barely prefers nouns. 'cat' sees only itself (its 1.00 is the mask's) and
    'sat' sees two keys it weighs alike (0.50 each): neither shows the head. 'mat' puts 0.45 on nouns where an even
    split over its 5 keys would put 0.40."""
    params = KIND.parse({"sentence": "cat sat on the mat", "causal": "on", "temperature": 20})
    alt = KIND.alt(params, KIND.compute(params))
    assert "0.72" not in alt and "0.50, query 'sat'" not in alt  # the old words: the mask's numbers as the head's
    assert ("Head 1 (nouns↔nouns): the noun 'mat' puts 0.45 of its weight on nouns, against 0.40 for an even split "
            "over the 5 keys it sees ('cat', the first token, sees only itself and is left out); strongest weight "
            "0.22, query 'mat' → key 'cat' (an even split over the 5 keys it sees would give 0.20); 1 other pair "
            "ties.") in alt


@pytest.mark.parametrize("values, words", [
    ({"sentence": "cat dog", "causal": "on"},  # 'dog' sees two nouns: its 0.50s are no preference
     "Head 1 (nouns↔nouns): the noun 'dog' puts 1.00 of its weight on nouns, against 1.00 for an even split over "
     "the 2 keys it sees: every key it sees is a noun, so there is none to prefer ('cat', the first token, sees "
     "only itself and is left out); every query that sees more than one key splits its weight evenly over them, "
     "so no key is strongest."),
    ({"sentence": "cat sat on the", "causal": "on"},
     "Head 1 (nouns↔nouns): the only noun, 'cat', is the first token and sees only itself under the mask, so its "
     "weight of 1 shows nothing of the head; every query that sees more than one key splits its weight evenly "
     "over them, so no key is strongest."),
    ({"sentence": "the cat on the mat"},  # no verb and no unknown word: head 2 has nothing to read
     "Head 2 (verbs↔verbs): the sentence has no verbs of the toy lexicon; every query that sees more than one key "
     "splits its weight evenly over them, so no key is strongest."),
    ({"sentence": "cat", "causal": "on"},
     "Head 1 (nouns↔nouns): the only token, 'cat', has only itself to attend to (weight 1)."),
])
def test_degenerate_rows_get_their_own_words(values, words):
    params = KIND.parse(values)
    assert words in KIND.alt(params, KIND.compute(params))


def test_a_head_without_lexicon_verbs_says_what_the_unknown_words_give_it():
    """zebra and quokka are outside the lexicon: their random features hold some 'verb', which head 2 reads
    (quokka → quokka 0.49), so "nothing to relate" would contradict the figure."""
    params = KIND.parse({"sentence": "zebra quokka the cat", "d_model": 4})
    result = KIND.compute(params)
    alt = KIND.alt(params, result)
    assert "nothing to relate" not in alt
    assert ("Head 2 (verbs↔verbs): the sentence has no verbs of the toy lexicon, so only the pseudo-random features "
            "of the words outside the lexicon give this head something to read; strongest weight 0.49, query "
            "'quokka' → key 'quokka'") in alt
    assert result.weights[1, 1, 1] == result.weights[1].max() and f"{result.weights[1, 1, 1]:.2f}" == "0.49"


@settings(max_examples=40, deadline=None)
@given(SENTENCE, st.sampled_from([(h, d) for d in range(2, 65) for h in range(1, 9) if d % h == 0]),
       st.floats(0.05, 20.0), st.sampled_from(["off", "on"]))
def test_weights_are_the_engines_and_the_mask_is_stated_for_every_setting(sentence, heads, temperature, causal):
    num_heads, d_model = heads
    kind = get_kind("attention-playground")
    params = kind.parse({"sentence": sentence, "num_heads": num_heads, "d_model": d_model,
                         "temperature": temperature, "causal": causal})
    result = kind.compute(params)
    weights = engine_weights(sentence, num_heads, d_model, temperature, causal == "on")
    np.testing.assert_allclose(result.weights, weights, rtol=0, atol=1e-15)
    np.testing.assert_allclose(result.weights.sum(axis=-1), 1.0, rtol=1e-12)
    n = len(tokenize(sentence))
    if causal == "on":
        assert np.all(result.weights[:, ~causal_mask(n)] == 0.0)
    alt, caption = kind.alt(params, result), kind.caption(params, result)
    assert ("Causal mask on" in alt) == (causal == "on")
    assert ("causal mask on" in caption.lower()) == (causal == "on")
    tokens = tokenize(sentence)
    for head in range(num_heads):
        best = naive_strongest(weights[head], causal == "on")
        if n == 1:  # nothing to choose between
            assert f"the only token, '{tokens[0]}', has only itself to attend to (weight 1)" in alt
        elif best is None:  # every row that could choose weighs its keys alike
            assert "every query that sees more than one key splits its weight evenly over them" in alt
        else:  # among the queries that see two keys or more and do not split them evenly
            assert f"strongest weight {best:.2f}" in alt
    for head, role in enumerate(["noun", "verb"][:num_heads]):
        shares = naive_role_share(tokens, weights[head], causal == "on", role)
        if shares is not None:  # each share beside the even split over the keys its query sees
            assert f"{shares[0]:.2f} of" in alt and f"against {shares[1]:.2f} for an even split" in alt
        if not any(lookup(token).category == role for token in tokens) and n > 1:
            assert f"the sentence has no {role}s of the toy lexicon" in alt
            reads = next(choosing_rows(weights[head], causal == "on"), None) is not None
            assert (f"no {role}s of the toy lexicon, so only the pseudo-random features" in alt) == reads
            assert not reads or any(not lookup(token).known for token in tokens)  # what the words claim


def test_heads_must_divide_the_width():
    problems = check_visual("attention-playground", {"num_heads": 4, "d_model": 18})
    assert len(problems) == 1
    assert "num_heads=4" in problems[0][1] and "d_model=18" in problems[0][1] and "divid" in problems[0][1]


def test_query_string_values_coerce():
    kind = get_kind("attention-playground")
    parsed = kind.parse({"num_heads": "4", "d_model": "32", "temperature": "0.5", "causal": "on",
                         "sentence": " a cat "})
    assert (parsed.num_heads, parsed.d_model, parsed.temperature, parsed.causal) == (4, 32, 0.5, "on")
    assert parsed.sentence == "a cat"
    assert kind.parse({"causal": True}).causal == "on"


@pytest.mark.parametrize("causal", ["off", "on"])
def test_the_caption_names_words_outside_the_lexicon(causal):
    kind = get_kind("attention-playground")
    params = kind.parse({"sentence": "the zorblax sat", "causal": causal})
    result = kind.compute(params)
    assert "zorblax" in kind.caption(params, result) and "zorblax" in kind.alt(params, result)


@settings(max_examples=60, deadline=None)
@given(words=st.lists(st.sampled_from("the cat sat on mat dog ran it was big because zebra tired".split()),
                      min_size=1, max_size=8),
       heads=st.sampled_from([1, 2, 4]), temperature=st.sampled_from([0.05, 1.0, 20.0]),
       causal=st.sampled_from(["off", "on"]))
def test_evenly_is_claimed_only_for_the_lexicons_words_and_only_of_heads_that_exist(words, heads, temperature, causal):
    """Words outside the lexicon get random features, a fraction of "noun" and "verb" among them, so the hand-set
    heads read them (their rows are not even): the words say so, and claim evenness only of the lexicon's words."""
    kind = get_kind("attention-playground")
    params = kind.parse({"sentence": " ".join(words), "num_heads": heads, "d_model": 16, "temperature": temperature,
                         "causal": causal})
    result = kind.compute(params)
    alt, caption = kind.alt(params, result), kind.caption(params, result)
    roles = ["noun", "verb"][:heads]
    assert f"In the {' and '.join(roles)} head{'s' if heads > 1 else ''}, a query of a lexicon word of another part " \
           "of speech spreads its weight evenly over the keys it sees." in alt
    for head, role in enumerate(roles):
        for query, token in enumerate(result.tokens):
            if lookup(token).known and lookup(token).category != role:
                seen = result.weights[head, query][: query + 1] if causal == "on" else result.weights[head, query]
                np.testing.assert_allclose(seen, seen[0], atol=1e-12)  # what the sentence claims
    unknown = [token for token in dict.fromkeys(result.tokens) if not lookup(token).known]
    assert ("need not be even" in alt) == bool(unknown)
    assert ("head 2" in caption) == (heads >= 2) and ("further heads" in caption) == (heads > 2)
    assert "subject or an object" not in alt  # the multi-head visual's words, not this one's
    # "A noun attends more to nouns than to other words" (of the lexicon), at every temperature: each role query
    # puts more weight on every key of its role than on any other lexicon key it sees.
    assert "attends more to nouns than to other words" in caption and "nouns attend to nouns" not in caption
    for head, role in enumerate(roles):
        for query, token in enumerate(result.tokens):
            if lookup(token).category != role:
                continue
            seen = range(query + 1) if causal == "on" else range(len(result.tokens))
            mine = [result.weights[head, query, key] for key in seen if lookup(result.tokens[key]).category == role]
            rest = [result.weights[head, query, key] for key in seen if lookup(result.tokens[key]).known
                    and lookup(result.tokens[key]).category != role]
            assert not rest or min(mine) > max(rest)


# --- the phone layout: one column of heads, 8 pt text, weights in the cells where they fit ----------

import itertools

from app.visuals.base import NARROW_WIDTH

from .test_qkv_projections import assert_legible_and_apart, number_collections

KIND = get_kind("attention-playground")
LONG = "the extraordinarily sleepy cat sat quietly on the mat while dog ran"
EXTREMES = [{}, {"num_heads": 8, "d_model": 64, "causal": "on", "sentence": LONG},
            {"num_heads": 5, "d_model": 40, "sentence": "internationalization cat sat"},
            {"num_heads": 1, "d_model": 8, "sentence": "cat"}, {"num_heads": 8, "d_model": 8, "sentence": LONG}]


def narrow_figure(values: dict):
    params = KIND.parse(values)
    result = KIND.compute(params)
    figure = KIND.draw(params, result, KIND.figure_inches(params, "narrow", result))
    figure.canvas.draw()
    return params, result, figure


@pytest.mark.parametrize("values", EXTREMES)
def test_narrow_figure_is_phone_wide_and_its_pngs_match_its_size(values):
    params = KIND.parse(values)
    width, height = KIND.figure_inches(params, "narrow")
    assert width == NARROW_WIDTH
    assert KIND.figure_inches(params) == (7.6, 3.9 if params.num_heads <= 3 else 6.0)  # wide: by the heads
    image = KIND.render(params, layout="narrow").image
    assert image == KIND.render(params, layout="narrow").image
    assert (int.from_bytes(image[16:20], "big"), int.from_bytes(image[20:24], "big")) == (340, round(height * 100))


def test_the_narrow_column_grows_with_the_heads():
    heights = [KIND.figure_inches(KIND.parse({"num_heads": h, "d_model": 8 * h}), "narrow")[1] for h in (1, 2, 4, 8)]
    assert heights == sorted(heights) and len(set(heights)) == 4


@pytest.mark.parametrize("values", EXTREMES)
def test_narrow_text_is_at_least_8_pt_and_nothing_overlaps(values):
    _, _, figure = narrow_figure(values)
    assert_legible_and_apart(figure)


@settings(max_examples=12, deadline=None)
@given(SENTENCE, st.sampled_from([(h, d) for d in range(2, 65) for h in range(1, 9) if d % h == 0]),
       st.sampled_from(["off", "on"]))
def test_narrow_layout_is_legible_for_every_setting(sentence, heads, causal):
    num_heads, d_model = heads
    _, _, figure = narrow_figure({"sentence": sentence, "num_heads": num_heads, "d_model": d_model,
                                 "causal": causal})
    assert len(heatmap_axes(figure)) == num_heads
    assert_legible_and_apart(figure)


@pytest.mark.parametrize("causal", ["off", "on"])
def test_narrow_stacks_the_heads_in_one_column_with_their_weights(causal):
    params, result, figure = narrow_figure({"num_heads": 4, "d_model": 16, "causal": causal})
    axes = heatmap_axes(figure)
    assert [ax.get_title(loc="left") for ax in axes] == list(result.head_titles)
    boxes = [ax.get_position() for ax in axes]
    assert len({round(box.x0, 6) for box in boxes}) == 1  # one column
    assert all(upper.y0 > lower.y1 for upper, lower in itertools.pairwise(boxes))  # head 1 on top, apart
    tokens = tokenize(params.sentence)
    for ax in axes:  # every head keeps its own query and key labels, on the true 0..1 scale
        assert ax.get_ylabel() == "query" and ax.get_xlabel() == "key"
        assert tick_texts(ax.get_yticklabels()) == tokens and tick_texts(ax.get_xticklabels()) == tokens
        assert grid(ax).get_clim() == (0.0, 1.0)
    # 6 words: the cells are wide enough for their weights, which are the engine's (masked cells: none).
    weights = engine_weights(params.sentence, 4, 16, 1.0, causal == "on")
    mask = causal_mask(len(tokens)) if causal == "on" else np.ones((len(tokens),) * 2, dtype=bool)
    collections = number_collections(figure)
    assert len(collections) == 4
    for head, (_, collection) in enumerate(collections):
        assert list(collection.cell_texts) == [f"{w:.2f}" for w in weights[head][mask]]


def test_narrow_drops_the_weights_only_when_the_cells_are_too_small():
    _, _, figure = narrow_figure({"num_heads": 2, "d_model": 16, "sentence": LONG})
    assert not number_collections(figure)  # 12 words: cells of about 0.18 inch, "0.17" needs 0.25
    _, _, figure = narrow_figure({"num_heads": 2, "d_model": 16, "sentence": "the cat sat on the mat while dog"})
    assert len(number_collections(figure)) == 2
    params = KIND.parse({"sentence": LONG})
    assert "number" not in KIND.alt(params, KIND.compute(params)).lower()  # the alt never claims them


# --- the model switch: the real pretrained model's heads in the same playground ----------------------------

from app.engine.pretrained import load_model  # noqa: E402
from app.visuals.model import FOCUSED_BELOW, SHARE_MARK, drawable, head_characters  # noqa: E402

from .test_model_heads import on_its_side  # noqa: E402

REAL_SENTENCES = ["the cat sat on the mat", "The animal didn't cross the street, because it was tired!",
                  "internationalization antidisestablishmentarianism cat", "Кошка sat on the mat", "cat sat"]
TOY_VALUES = [{}, {"num_heads": 8, "d_model": 64, "temperature": 0.05, "causal": "on"},
              {"num_heads": 3, "d_model": 16}]  # the last one the toy refuses (3 does not divide 16)


def real_run(sentence: str):
    return load_model().run(sentence)  # the engine itself, not the visuals' cache


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(REAL_SENTENCES), st.integers(1, 6), st.integers(1, 12), st.sampled_from(TOY_VALUES))
def test_the_real_model_shows_the_engines_head_and_ignores_the_toy_knobs(sentence, layer, head, toy):
    params = KIND.parse({"model": "real", "sentence": sentence, "layer": layer, "head": head, **toy})
    result = KIND.compute(params)
    reference = real_run(sentence)
    assert result.tokens == tuple(reference.tokens)
    np.testing.assert_allclose(result.weights, reference.attentions[layer - 1, head - 1: head], rtol=0, atol=1e-6)
    alt, caption = KIND.alt(params, result), KIND.caption(params, result)
    # The same words whatever the toy's knobs say: they do not apply, and the caption says so.
    plain = KIND.parse({"model": "real", "sentence": sentence, "layer": layer, "head": head})
    assert (alt, caption) == (KIND.alt(plain, KIND.compute(plain)), KIND.caption(plain, KIND.compute(plain)))
    assert f"all-MiniLM-L6-v2, layer {layer} head {head}" in alt and "rows are queries and columns are keys" in alt
    assert "Constructed" not in alt and "not a trained model" not in caption
    assert "toy model only" in caption and "causal mask" in caption
    characters = head_characters(reference.attentions)
    for share in (characters.previous, characters.next, characters.cls, characters.sep):
        assert on_its_side(float(share[layer - 1, head - 1]), SHARE_MARK) in alt
    entropy = float(characters.entropy[layer - 1, head - 1])
    assert f"row entropy {on_its_side(entropy, FOCUSED_BELOW)} nats" in alt
    # The fixed mark beside the row's own maximum, ln N, and the spread in keys: "focused" over 4 keys is not
    # "focused" over 64.
    n = len(reference.tokens)
    assert f"of the {n} each row sees, and the most a row can have is ln {n} = {np.log(n):.2f}" in alt
    assert f"≈ {np.exp(entropy):.1f} keys" in alt and "however many a row sees" in alt
    weights = reference.attentions[layer - 1, head - 1]
    for query in range(len(reference.tokens)):  # where each token attends most, with its weight
        key = int(np.argmax(weights[query]))
        assert f"'{reference.tokens[query]}'({query}) → " in alt and f"'{reference.tokens[key]}'({key})" in alt
    title = result.head_titles[0]
    assert title.startswith(f"layer {layer} head {head}")


def test_the_toy_ignores_the_real_models_layer_and_head_and_says_so():
    toy = KIND.parse({})
    words = KIND.alt(toy, KIND.compute(toy)), KIND.caption(toy, KIND.compute(toy))
    other = KIND.parse({"layer": 6, "head": 12})
    assert (KIND.alt(other, KIND.compute(other)), KIND.caption(other, KIND.compute(other))) == words
    np.testing.assert_array_equal(KIND.compute(other).weights, KIND.compute(toy).weights)
    assert "real model only" in words[1] and "not a trained model" in words[1]


def test_a_short_sentences_focused_head_is_set_against_its_few_keys():
    """'cat dog' is 4 tokens: a row can have at most ln 4 = 1.39 nats, so 0.91 (below the 1-nat mark) is a
    spread over about 2.5 of the 4 keys, which the words must say beside 'focused'."""
    params = KIND.parse({"model": "real", "sentence": "cat dog", "layer": 6, "head": 12})
    alt = KIND.alt(params, KIND.compute(params))
    assert ("row entropy 0.91 nats on average, below the 1-nat mark (an even split over e ≈ 2.7 keys, however many "
            "a row sees), so focused: 0.91 nats is the entropy of an even split over e^0.91 ≈ 2.5 keys, of the 4 "
            "each row sees, and the most a row can have is ln 4 = 1.39 (all 4 keys alike)") in alt


def test_each_model_checks_only_its_own_rules():
    assert check_visual("attention-playground", {"model": "real", "num_heads": 3, "d_model": 16}) == []
    assert check_visual("attention-playground", {"num_heads": 3, "d_model": 16})  # the toy refuses it
    for values, words in [({"model": "real", "sentence": "a\x00b"}, "control character U+0000"),
                          ({"model": "real", "sentence": "a " + "!" * 70}, "tokens long after WordPiece"),
                          ({"model": "mixed"}, "model"), ({"model": "real", "head": 13}, "head"),
                          ({"model": "real", "layer": 0}, "layer")]:
        problems = check_visual("attention-playground", values)
        assert len(problems) == 1 and words in problems[0][1], (values, problems)
    assert check_visual("attention-playground", {"sentence": "a " + "!" * 70}) == []  # one word for the toy


@pytest.mark.parametrize("sentence", REAL_SENTENCES)
@pytest.mark.parametrize("layout", ["wide", "narrow"])
def test_the_real_head_is_drawn_from_its_weights_legibly_in_both_layouts(sentence, layout):
    params = KIND.parse({"model": "real", "sentence": sentence, "layer": 2, "head": 9})
    result = KIND.compute(params)
    figure = KIND.draw(params, result, KIND.figure_inches(params, layout, result))
    figure.canvas.draw()
    (ax,) = heatmap_axes(figure)
    labels = [drawable(token) for token in real_run(sentence).tokens]
    assert tick_texts(ax.get_yticklabels()) == labels and tick_texts(ax.get_xticklabels()) == labels
    assert ax.get_ylabel() == "query" and ax.get_xlabel() == "key"
    np.testing.assert_array_equal(np.asarray(grid(ax).get_array()), result.weights[0])
    assert grid(ax).get_clim() == (0.0, 1.0)
    assert ax.get_title(loc="left" if layout == "narrow" else "center") == result.head_titles[0]
    assert_legible_and_apart(figure)
    image = KIND.render(params, layout=layout).image
    size = KIND.size(params, layout)
    assert (int.from_bytes(image[16:20], "big"), int.from_bytes(image[20:24], "big")) == size


def test_the_real_heads_non_latin_tokens_are_code_points_where_the_font_has_no_glyph():
    params = KIND.parse({"model": "real", "sentence": "猫が座った"})
    result = KIND.compute(params)
    assert "U+304C" in "".join(result.labels) or "U+304B" in "".join(result.labels)
    assert "has no glyph" in KIND.alt(params, result) and "has no glyph" in KIND.caption(params, result)
