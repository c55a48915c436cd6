"""The "order-blindness" visual answers Q6 (why position encodings): without position information,
permuting the input only permutes the output rows; sinusoidal position encodings make the outputs depend
on word order. Every claim of the alt text and caption is checked against naive loops, for every sentence,
permutation, width and answer the controls accept, including words that collapse at small widths."""

from __future__ import annotations

import html
import math
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from app.visuals import check_visual, get_kind
from app.visuals.base import NARROW_WIDTH, WIDTH
from app.visuals.kinds.order_blindness import (
    D_MODEL_MAX,
    D_MODEL_MIN,
    OPTIONS,
    PERMUTATIONS,
    ROUNDING,
    permutation_order,
)
from app.visuals.toy import FEATURE_COUNT, FEATURE_NAMES, MAX_TOKENS, embed, lookup, tokenize, unknown_words
from app.visuals.words import format_difference
from conftest import SEED_BANK, answer_via_form, image_size

from .helpers import SENTENCE, grid, grids, heatmap_axes, naive_matmul, naive_softmax, tick_texts

KIND = "order-blindness"
CHOICES = ("", "order-agnostic", "adversarial")

# Words that collapse: 'dog'/'cat' below d_model 16, 'puppy'/'kitten' too, 'the'/'a' and 'sat'/'ran' at
# every width, connectives with no features at all, and at d_model 2 every word that is not a noun or verb.
COLLAPSING = st.sampled_from("dog cat puppy kitten the a sat ran and but on big it bird fish zorblax".split())
COLLAPSING_SENTENCE = st.lists(COLLAPSING, min_size=1, max_size=MAX_TOKENS).map(" ".join)
ANY_SENTENCE = st.one_of(SENTENCE, COLLAPSING_SENTENCE)


# --- naive references ----------------------------------------------------------------------------------


def naive_model(d_model: int):
    """W_Q, W_K of the kind's model, drawn as averaging_self_attention documents: seeded N(0, 1), W_V = W_O = I."""
    w_q, w_k = np.random.default_rng(0).normal(0.0, 1.0, size=(2, d_model, d_model))
    return w_q, w_k


def naive_attention_output(x, d_model: int):
    """softmax(x W_Q (x W_K)ᵀ / sqrt(d)) x, by loops."""
    w_q, w_k = naive_model(d_model)
    q, k = naive_matmul(x, w_q), naive_matmul(x, w_k)
    out = np.zeros_like(x)
    for i in range(len(x)):
        weights = naive_softmax([sum(q[i, m] * k[j, m] for m in range(d_model)) / math.sqrt(d_model)
                                 for j in range(len(x))])
        for j, w in enumerate(weights):
            out[i] += w * x[j]
    return out


def naive_features(word: str, d_model: int) -> list[float]:
    """A word's embedding at d_model, from its toy features: the first d_model, then zeros."""
    features = list(lookup(word).features)
    return (features + [0.0] * d_model)[:d_model]


def naive_encoding(n: int, d_model: int) -> np.ndarray:
    """PE[p, 2i] = sin(p / 10000^(2i/d)), PE[p, 2i+1] = cos(p / 10000^(2i/d)), by loops."""
    return np.array([[math.sin(p / 10000 ** (c / d_model)) if c % 2 == 0 else math.cos(p / 10000 ** ((c - 1) / d_model))
                      for c in range(d_model)] for p in range(n)])


def naive_comparison(tokens, order, positional: bool, d_model: int):
    """(original output, permuted output, difference in original order) by loops. The permuted output is put
    back by the permutation, or left as it is when the permuted input equals the original (nothing moved)."""
    n = len(tokens)
    rows = [naive_features(token, d_model) for token in tokens]
    permuted_rows = [rows[i] for i in order]
    put_back = list(range(n)) if permuted_rows == rows else order
    x, x_permuted = np.array(rows), np.array(permuted_rows)
    if positional:
        x, x_permuted = x + naive_encoding(n, d_model), x_permuted + naive_encoding(n, d_model)
    original, permuted = naive_attention_output(x, d_model), naive_attention_output(x_permuted, d_model)
    difference = np.zeros_like(original)
    for j in range(n):
        difference[put_back[j]] = permuted[j] - original[put_back[j]]
    return original, permuted, difference


def naive_order(name: str, n: int) -> list[int]:
    """The permutation by hand: reverse, rotate left by one, or swap the ends."""
    if name == "reverse":
        return [n - 1 - j for j in range(n)]
    if name == "rotate":
        return [(j + 1) % n for j in range(n)]
    order = list(range(n))
    order[0], order[-1] = order[-1], order[0]
    return order


def parse(values: dict):
    kind = get_kind(KIND)
    params = kind.parse(values)
    result = kind.compute(params)
    return params, result, kind.alt(params, result), kind.caption(params, result)


def stated_number(text: str) -> float:
    """'exactly 0' -> 0; '2.2e-16, floating-point…' -> 2.2e-16; '1.964' -> 1.964."""
    return 0.0 if text.startswith("exactly 0") else float(re.match(r"[0-9.e+-]+", text).group(0).rstrip("."))


def read_values(text: str) -> list[float]:
    return [float(value.replace("−", "-")) for value in text.strip("()").replace(", …", "").split(", ")]


# --- every claim, for every value ----------------------------------------------------------------------


@settings(max_examples=25, deadline=None)
@given(ANY_SENTENCE, st.sampled_from(sorted(PERMUTATIONS)), st.sampled_from(["off", "on"]),
       st.integers(D_MODEL_MIN, D_MODEL_MAX), st.sampled_from(CHOICES))
def test_every_claim_holds_against_naive_loops(sentence, permutation, positional, d_model, choice):
    params, result, alt, caption = parse({"sentence": sentence, "permutation": permutation, "positional": positional,
                                          "d_model": d_model, "choice": choice})
    tokens = tokenize(sentence)
    n = len(tokens)
    order = naive_order(permutation, n)
    permuted = [tokens[i] for i in order]
    assert list(result.permuted_tokens) == permuted
    same_words = permuted == tokens
    same_input = all(naive_features(a, d_model) == naive_features(b, d_model) for a, b in zip(tokens, permuted))
    assert (result.same_words, result.same_input) == (same_words, same_input)
    runs = {flag: naive_comparison(tokens, order, flag, d_model) for flag in (False, True)}
    largest = {flag: float(np.max(np.abs(runs[flag][2]))) for flag in runs}
    # The engine's numbers are the naive ones.
    for flag, run in ((False, result.without), (True, result.with_encoding)):
        np.testing.assert_allclose(run.output, runs[flag][0], atol=1e-9)
        np.testing.assert_allclose(run.permuted_output, runs[flag][1], atol=1e-9)
        np.testing.assert_allclose(run.difference, runs[flag][2], atol=1e-9)
    for text in (alt, caption):
        assert f"'{' '.join(tokens)}'" in text and f"'{' '.join(permuted)}'" in text
        assert not re.search(r"[-−]0\.0*(?![0-9]*[1-9])\b|\bnan\b|\binf\b", text)
        if same_words:
            assert f"The '{permutation}' permutation leaves '{' '.join(tokens)}' as it was" in text
            assert "the difference is exactly 0, with position encodings or without" in text
            assert result.without.max_abs_difference == 0 and result.with_encoding.max_abs_difference == 0
            if n == 1:
                assert "a single word has no order to change" in text
            elif permutation == "swap-ends":
                assert tokens[0] == tokens[-1] and "the first and last words are the same" in text
            elif permutation == "rotate":
                assert len(set(tokens)) == 1 and "every word is the same" in text
            else:
                assert tokens == tokens[::-1] and "the words read the same backwards" in text
        elif same_input:
            assert f"At d_model {d_model}, '{' '.join(permuted)}' is the same input as '{' '.join(tokens)}'" in text
            assert "the difference is exactly 0, with position encodings or without" in text
            assert result.without.max_abs_difference == 0 and result.with_encoding.max_abs_difference == 0
            listed = re.search(r"the word now in its place \((.*?)\), so", text).group(1)
            for a, b in zip(tokens, permuted):
                if a != b:
                    assert " and ".join(f"'{w}'" for w in sorted((a, b))) in listed
        else:
            check_the_comparison(text, result, tokens, permuted, largest, runs, positional == "on")
        check_collapsed_words(text, tokens, d_model)
        unknown = unknown_words(tokens)
        if unknown:
            assert f"Words not in the toy lexicon, given pseudo-random features: {', '.join(unknown)}." in text
        else:
            assert "pseudo-random" not in text
        check_the_choice(text, choice)
    assert f"width d_model {d_model}" in caption and "not a trained model" in caption
    assert ("nothing is put back" in caption) == same_input


def check_the_comparison(text, result, tokens, permuted, largest, runs, positional):
    without = re.search(r"the largest \|difference\| is (exactly 0|[0-9.e+-]+, floating-point rounding)", text)
    assert without, text
    assert f"cannot tell '{' '.join(tokens)}' from '{' '.join(permuted)}'" in text
    assert largest[False] <= ROUNDING and stated_number(without.group(1)) <= ROUNDING
    if result.without.max_abs_difference > 0:
        assert without.group(1).startswith(format_difference(result.without.max_abs_difference))
    else:
        assert without.group(1) == "exactly 0"
    with_encoding = re.search(r"they differ by up to ([0-9.e+-]+) \(at '([^']+)', row (\d+), feature (\d+)\)", text)
    if with_encoding:
        value, word, row, feature = with_encoding.groups()
        row, feature = int(row) - 1, int(feature) - 1
        assert float(value) == pytest.approx(largest[True], abs=6e-4) and largest[True] > ROUNDING
        assert tokens[row] == word
        assert abs(runs[True][2][row, feature]) == pytest.approx(largest[True], abs=1e-9)
        assert "the outputs now depend on where each word stands" in text
    else:
        assert "Even with sinusoidal position encodings added, the outputs re-ordered back match here" in text
        assert largest[True] <= ROUNDING
    example = re.search(r"'([^']+)' \(row (\d+) of the original, row (\d+) of the permuted sentence\) has (.*?)"
                        r"(?= in features| in feature| in the original)", text)
    assert example, text
    word, i, j = example.group(1), int(example.group(2)) - 1, int(example.group(3)) - 1
    assert tokens[i] == permuted[j] == word and i != j and tokens[j] != permuted[j]
    original, permuted_output, _ = runs[positional]
    count = min(3, original.shape[1])
    if "the same output row in both, up to rounding" in example.group(4):
        assert not positional
        values = re.search(r"up to rounding: (\(.*?\))", text).group(1)
        assert read_values(values) == pytest.approx(original[i, :count], abs=0.0051)
        np.testing.assert_allclose(original[i], permuted_output[j], atol=1e-12)
    else:
        assert positional
        pair = re.search(r"has output (\(.*?\)) in the original and (\(.*?\)) in the permuted sentence", text)
        assert read_values(pair.group(1)) == pytest.approx(original[i, :count], abs=0.0051)
        assert read_values(pair.group(2)) == pytest.approx(permuted_output[j, :count], abs=0.0051)


def check_collapsed_words(text, tokens, d_model):
    """Every pair of distinct words with one embedding at this width is named, with the true reason."""
    words = list(dict.fromkeys(tokens))
    groups = re.findall(r"(?:At d_model \d+, )?((?:'[^']+'(?:, | and ))+'[^']+') have the same (toy features|embedding)"
                        r"(?:: the features that tell (them|some of them) apart begin at feature (\d+) \('([^']+)'\))?",
                        text)
    named = [re.findall(r"'([^']+)'", group[0]) for group in groups]
    for group, (_, what, some, feature, name) in zip(named, groups):
        vectors = [naive_features(word, d_model) for word in group]
        assert all(vector == vectors[0] for vector in vectors), group
        full = [naive_features(word, FEATURE_COUNT) for word in group]
        if what == "toy features":
            assert all(vector == full[0] for vector in full) and "at every width" in text
        else:
            first = int(feature) - 1
            assert first >= d_model and FEATURE_NAMES[first] == name
            pairs = [(a, b) for index, a in enumerate(full) for b in full[index + 1:]]
            assert all(a[:first] == b[:first] for a, b in pairs)
            assert any(a[first] != b[first] for a, b in pairs)
            assert (some == "some of them") == any(a == b for a, b in pairs)
    for index, a in enumerate(words):
        for b in words[index + 1:]:
            if naive_features(a, d_model) == naive_features(b, d_model):
                assert any(a in group and b in group for group in named), (a, b, text)


def check_the_choice(text, choice):
    if choice == "order-agnostic":
        assert f"You chose '{OPTIONS['order-agnostic']}': correct." in text
    elif choice == "adversarial":
        assert f"You chose '{OPTIONS['adversarial']}': that is not what position encodings do." in text
        assert "they do nothing for robustness to adversarial attacks" in text
        assert f"The correct option is '{OPTIONS['order-agnostic']}'." in text
    else:
        assert "You chose" not in text


# --- the issue's own example at the default width ------------------------------------------------------


def test_the_default_width_tells_the_default_sentences_words_apart():
    params, result, alt, caption = parse({})
    assert params.d_model == FEATURE_COUNT == 16
    words = sorted(set(result.tokens))
    vectors = embed(words, params.d_model)
    assert len({tuple(vector) for vector in vectors}) == len(words)  # the, dog, chased, cat: four embeddings
    assert not np.array_equal(embed(["dog"], params.d_model), embed(["cat"], params.d_model))
    assert result.collapsed == () and not result.same_input
    assert "cannot tell 'the dog chased the cat' from 'cat the chased dog the'" in caption
    assert "the dog chased the cat' from 'the cat chased the dog'" not in caption  # no example of its own
    assert result.with_encoding.max_abs_difference > 0.1 and result.without.max_abs_difference <= ROUNDING


@pytest.mark.parametrize("d_model", range(D_MODEL_MIN, FEATURE_COUNT))
def test_below_sixteen_dog_and_cat_collapse_and_the_caption_says_so(d_model):
    _, result, alt, caption = parse({"d_model": d_model})
    for text in (alt, caption):
        assert f"At d_model {d_model}, 'dog' and 'cat' have the same embedding" in text
        assert "begin at feature 16 ('cat+/dog−')" in text


def test_swapping_words_that_collapse_is_the_same_input_even_with_position_encodings():
    _, result, alt, _ = parse({"sentence": "dog cat", "permutation": "swap-ends", "d_model": 8, "positional": "on"})
    assert result.same_input and not result.same_words
    assert result.with_encoding.max_abs_difference == 0.0
    assert "At d_model 8, 'cat dog' is the same input as 'dog cat'" in alt
    _, result, alt, _ = parse({"sentence": "dog cat", "permutation": "swap-ends", "d_model": 16, "positional": "on"})
    assert not result.same_input and result.with_encoding.max_abs_difference > 0.1
    assert "the outputs now depend on where each word stands" in alt


@pytest.mark.parametrize(("name", "length"), [(name, length) for name in PERMUTATIONS for length in range(1, 8)])
def test_permutations(name, length):
    assert permutation_order(name, length).tolist() == naive_order(name, length)


# --- the student's answer ------------------------------------------------------------------------------


def test_the_choice_is_an_option_of_q6_or_nothing():
    kind = get_kind(KIND)
    assert kind.choice_param == "choice" and "choice" not in {control.name for control in kind.controls}
    for choice in CHOICES:
        assert kind.parse({"choice": choice}).choice == choice
    with pytest.raises(ValidationError):
        kind.parse({"choice": "order-agnostic,adversarial"})
    assert check_visual(KIND, {"choice": "bogus"})[0][0] == ("params", "choice")


@pytest.mark.parametrize("layout", ["wide", "narrow"])
@pytest.mark.parametrize(("choice", "header"), [
    ("", "Why position encodings? Attention alone is agnostic to token order"),
    ("order-agnostic", "✓ Your answer, “agnostic to token ordering”, is correct"),
    ("adversarial", "✗ Your answer, “adversarial robustness”, is wrong: position encodings add word order"),
])
def test_the_figure_marks_the_choice_in_its_top_line(choice, header, layout):
    figure, result = drawn({"choice": choice}, layout)
    (text,) = figure.texts
    assert " ".join(text.get_text().split("\n")) == header
    assert text.get_position()[1] > max(ax.get_position().y1 for ax in figure.axes)  # above every panel


def test_the_answer_page_passes_the_students_choice(client):
    response = answer_via_form(client, SEED_BANK, "why-position-encodings", "adversarial")
    page = html.unescape(client.get(response.location).get_data(as_text=True))
    assert re.search(r"/plots/order-blindness\.png\?[^\"]*choice=adversarial", page)
    assert "they do nothing for robustness to adversarial attacks" in page


# --- the figure ----------------------------------------------------------------------------------------


def drawn(values: dict, layout: str = "wide"):
    kind = get_kind(KIND)
    params = kind.parse(values)
    result = kind.compute(params)
    figure = kind.draw(params, result, kind.figure_inches(params, layout, result))
    figure.canvas.draw()
    return figure, result


@pytest.mark.parametrize("layout", ["wide", "narrow"])
@pytest.mark.parametrize("values", [{"permutation": "rotate", "positional": "on"}, {"sentence": "and but"},
                                    {"sentence": "cat", "d_model": 2}])
def test_three_panels_share_one_symmetric_scale_with_their_rows_labelled(values, layout):
    figure, result = drawn(values, layout)
    axes = heatmap_axes(figure)
    assert len(axes) == 3
    run = result.run
    assert run is (result.with_encoding if values.get("positional") == "on" else result.without)
    peak = max(np.abs(run.output).max(), np.abs(run.permuted_output).max(), np.abs(run.difference).max())
    limit = peak if peak > 0 else 1.0
    for ax, values_drawn in zip(axes, (run.output, run.permuted_output, run.difference)):
        assert grid(ax).get_clim() == pytest.approx((-limit, limit))
        np.testing.assert_array_equal(grid(ax).get_array(), values_drawn)
        assert ax.get_xlabel() == "output feature"
        assert len(ax.texts) == 0 and list(ax.collections) == grids(ax)  # nothing written or boxed over the data
    assert tick_texts(axes[0].get_yticklabels()) == list(result.tokens)
    assert tick_texts(axes[1].get_yticklabels()) == list(result.permuted_tokens)
    assert tick_texts(axes[2].get_yticklabels()) == list(result.tokens)
    assert f"max |difference| = {format_difference(run.max_abs_difference)}" in axes[2].get_title()
    assert ("same input" in axes[2].get_title()) == result.same_input
    setting = "+ position encodings" if result.positional else "no position encodings"
    assert setting in axes[0].get_title() and setting in axes[1].get_title()


def text_boxes(figure):
    """(what, bbox, fontsize) of every visible text as drawn: tick labels, axis labels, titles, figure texts."""
    renderer = figure.canvas.get_renderer()
    boxes = []
    for ax in figure.axes:
        for axis in (ax.xaxis, ax.yaxis):
            for label in axis.get_ticklabels():
                if label.get_visible() and label.get_text():
                    boxes.append((f"tick {label.get_text()!r}", label.get_window_extent(renderer),
                                  label.get_fontsize()))
            if axis.label.get_text():
                boxes.append((f"label {axis.label.get_text()!r}", axis.label.get_window_extent(renderer),
                              axis.label.get_fontsize()))
        if ax.get_title():
            boxes.append((f"title {ax.get_title()!r}", ax.title.get_window_extent(renderer), ax.title.get_fontsize()))
    for text in figure.texts:
        boxes.append((f"text {text.get_text()!r}", text.get_window_extent(renderer), text.get_fontsize()))
    return boxes


LAYOUT_CASES = [{"d_model": d} for d in [*range(D_MODEL_MIN, 21), 24, 31, 32, 33, 47, 48, 63, 64]] + [
    {"sentence": "the extraordinarily sleepy cat sat quietly on the mat while dog ran", "d_model": 64,
     "positional": "on", "choice": "adversarial"},
    {"sentence": "internationalization", "d_model": 13, "choice": "order-agnostic"},
]


@pytest.mark.parametrize("layout", ["wide", "narrow"])
@pytest.mark.parametrize("values", LAYOUT_CASES, ids=lambda values: "-".join(map(str, values.values()))[:40])
def test_no_two_labels_collide_and_every_label_is_inside_the_figure(values, layout):
    figure, result = drawn(values, layout)
    boxes = text_boxes(figure)
    page = figure.bbox
    for what, box, size in boxes:
        assert box.x0 >= page.x0 - 1 and box.x1 <= page.x1 + 1 and box.y0 >= page.y0 - 1 and box.y1 <= page.y1 + 1, \
            f"{what} is clipped"
        if layout == "narrow":
            assert size >= 8, what  # ≥ 10 CSS px on a 375 px phone
    for index, (what, box, _) in enumerate(boxes):
        for other, other_box, _ in boxes[index + 1:]:
            gap = min(min(box.x1, other_box.x1) - max(box.x0, other_box.x0),
                      min(box.y1, other_box.y1) - max(box.y0, other_box.y0))
            assert gap <= 0.5, f"{what} overlaps {other}"
    for ax in figure.axes:  # no label or title over any axes but its own
        frame = ax.get_window_extent()
        for what, box, _ in boxes:
            if box.overlaps(frame) and not any(what.endswith(repr(t.get_text())) for t in own_texts(ax)):
                gap = min(min(box.x1, frame.x1) - max(box.x0, frame.x0), min(box.y1, frame.y1) - max(box.y0, frame.y0))
                assert gap <= 0.5, f"{what} lies over an axes"
    # Column numbers are 1, 1 + k, 1 + 2k, ... and the whole width is numbered.
    for ax in heatmap_axes(figure):
        numbers = [int(text) for text in tick_texts(ax.get_xticklabels())]
        step = numbers[1] - numbers[0] if len(numbers) > 1 else result.d_model
        assert numbers == list(range(1, result.d_model + 1, step)) and numbers[-1] + step > result.d_model


def own_texts(ax):
    return [*ax.xaxis.get_ticklabels(), *ax.yaxis.get_ticklabels(), ax.xaxis.label, ax.yaxis.label, ax.title]


@pytest.mark.parametrize("values", [{}, {"positional": "on"}, {"sentence": "a", "d_model": 2},
                                    {"d_model": 37, "positional": "on"}])
def test_colour_bar_ticks_are_round_signed_and_never_minus_zero(values):
    figure, result = drawn(values)
    (colour_bar,) = [ax for ax in figure.axes if not grids(ax)]
    labels = tick_texts(colour_bar.get_yticklabels())
    assert len(labels) == 5 and labels[2] == "0"
    assert not any(re.fullmatch(r"[-−]0(\.0*)?", label) for label in labels)
    ticks = colour_bar.get_yticks()
    assert [float(label.replace("−", "-")) for label in labels] == pytest.approx(list(ticks))
    low, high = colour_bar.get_ylim()
    assert ticks[0] == -ticks[-1] and low <= ticks[0] and ticks[-1] <= high  # inside the bar's ±limit


@pytest.mark.parametrize("sentence", ["the dog chased the cat", "cat", " ".join(["cat"] * MAX_TOKENS)])
def test_the_page_sizes_the_images_it_gets(sentence):
    kind = get_kind(KIND)
    params = kind.parse({"sentence": sentence})
    for layout, width in (("wide", WIDTH), ("narrow", NARROW_WIDTH)):
        rendered = kind.render(params, layout=layout)
        assert image_size(rendered.image) == kind.size(params, layout)
        assert kind.size(params, layout)[0] == round(width * 100)


def test_the_captions_formula_names_the_layers_input_encodings_included():
    """With encodings on, the layer reads x_j + PE[j] in its weights and its values; the formula says so."""
    kind = get_kind("order-blindness")
    off = kind.describe(kind.parse({"positional": "off"})).caption
    on = kind.describe(kind.parse({"positional": "on"})).caption
    assert "output row i = Σ_j w_ij x_j with w_i = softmax((x_i W_Q)(X W_K)ᵀ / √d_model)" in off
    assert ("output row i = Σ_j w_ij (x_j + PE[j]) with w_i = softmax(((x_i + PE[i]) W_Q)((X + PE) W_K)ᵀ / √d_model)"
            in on)
    assert "PE" not in off.split("A row's weights")[0]
