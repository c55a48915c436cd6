"""The soft-lookup visual: every number it shows is the engine's, every claim of its alt text and caption
holds across its whole parameter space, and a student can redo score → softmax → weighted sum by hand."""

from __future__ import annotations

import itertools
import math
import re

import numpy as np
import pytest
from pydantic import ValidationError
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from app.engine import hard_attention, scaled_dot_product_attention
from app.visuals import get_kind
from app.visuals.base import NARROW_WIDTH, WIDTH, pixel_size
from app.visuals.kinds import soft_lookup as sl
from app.visuals.toy import _LEXICON_SPEC, FEATURE_COUNT, FEATURE_INDEX, LEXICON, embed

from .helpers import grid, texts_outside

KIND = get_kind("soft-lookup")
WORDS = sorted(LEXICON)
UNKNOWN = st.text("abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=9).filter(lambda w: w not in LEXICON)
WORD = st.one_of(st.sampled_from(WORDS), st.sampled_from(WORDS), UNKNOWN)  # lexicon words twice as often
TEMPERATURE = st.one_of(
    st.sampled_from([sl.TEMPERATURE_MIN, 1.0, sl.TEMPERATURE_MAX]),
    st.floats(sl.TEMPERATURE_MIN, sl.TEMPERATURE_MAX, allow_nan=False),
)
# Ties and even weights must come up, not just by luck: words that score alike, and featureless ones.
TIE_PRONE = st.sampled_from(["car", "truck", "bus", "bike", "train", "and", "but", "ran", "sat", "cat", "dog"])


@st.composite
def params(draw):
    word = st.one_of(WORD, TIE_PRONE)
    queries = draw(st.lists(word, min_size=1, max_size=sl.MAX_QUERIES))
    keys = draw(st.lists(word, min_size=sl.MIN_KEYS, max_size=sl.MAX_KEYS))
    return sl.SoftLookupParams(queries=" ".join(queries), keys=" ".join(keys), temperature=draw(TEMPERATURE))


SWEEP = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def number(text: str) -> float:
    return float(text)


def rule_score(a: str, b: str) -> int:
    """The caption's rule, from the lexicon's own spec (not from the vectors): +1 per feature both words
    have, and on cat+/dog−, +1 for cat·cat or dog·dog and −1 for cat·dog."""
    (cat_a, tags_a), (cat_b, tags_b) = _LEXICON_SPEC[a], _LEXICON_SPEC[b]
    plain_a = {t for t in tags_a if t not in ("cat", "dog")} | ({cat_a} & set(FEATURE_INDEX))
    plain_b = {t for t in tags_b if t not in ("cat", "dog")} | ({cat_b} & set(FEATURE_INDEX))
    sign_a = 1 if "cat" in tags_a else -1 if "dog" in tags_a else 0
    sign_b = 1 if "cat" in tags_b else -1 if "dog" in tags_b else 0
    return len(plain_a & plain_b) + sign_a * sign_b


def shared_feature_count(a: str, b: str) -> int:
    """The old caption's wrong rule: the number of features the two words share (both +1)."""
    return int(np.count_nonzero((LEXICON[a].features == 1) & (LEXICON[b].features == 1)))


# --- the caption's score rule ------------------------------------------------------------------------


def test_the_caption_score_rule_gives_every_lexicon_pair_the_figures_score():
    pairs = 0
    for start in range(0, len(WORDS), sl.MAX_QUERIES):
        queries = WORDS[start:start + sl.MAX_QUERIES]
        for key_start in range(0, len(WORDS), sl.MAX_KEYS):
            keys = WORDS[key_start:key_start + sl.MAX_KEYS]
            if len(keys) < sl.MIN_KEYS:
                keys = keys + WORDS[:1]
            result = KIND.compute(sl.SoftLookupParams(queries=" ".join(queries), keys=" ".join(keys)))
            for (i, a), (j, b) in itertools.product(enumerate(queries), enumerate(keys)):
                assert result.scores[i, j] == rule_score(a, b), (a, b)
                pairs += 1
    assert pairs >= len(WORDS) ** 2


def test_the_old_shared_features_wording_is_gone_and_would_be_wrong():
    result = KIND.compute(sl.SoftLookupParams())
    caption = KIND.caption(sl.SoftLookupParams(), result)
    assert "features the two words share" not in caption and "number of features" not in caption
    # kitten and dog share three features but score 2: the old rule would not let a student recompute it.
    assert shared_feature_count("kitten", "dog") == 3 and rule_score("kitten", "dog") == 2
    assert result.scores[0, 1] == 2 and "kitten·dog = 3 − 1 = 2" in caption
    assert result.scores[0, 0] == 4 and "kitten·cat = 3 + 1 = 4" in caption
    # The seed's picture, as the issue quotes it: 0.78 on cat and 0.11 on dog.
    assert sl.shown_cells(result)["soft"][0][:2] == ["0.78", "0.11"]


# --- the sweep: engine numbers, alt and caption claims -------------------------------------------------


@SWEEP
def named(keys: list[str], j: int) -> str:
    """Key j as the words name it: quoted, and with its column when the word is typed more than once."""
    return f"'{keys[j]}' (column {j + 1})" if keys.count(keys[j]) > 1 else f"'{keys[j]}'"


@given(params())
# A near tie beside a word typed twice: the words tell the two 'a' keys apart by column (found by hypothesis).
@example(KIND.parse({"queries": "a", "keys": "a a o", "temperature": 0.05}))
def test_every_number_is_the_engines_and_every_claim_holds(p):
    result = KIND.compute(p)
    q_tokens, k_tokens = list(result.query_tokens), list(result.key_tokens)
    x, y = embed(q_tokens, FEATURE_COUNT), embed(k_tokens, FEATURE_COUNT)
    values = y[:, [FEATURE_INDEX[f] for f in sl.VALUE_FEATURES]]
    q, k = sl.FEATURE_SCALE * x, sl.FEATURE_SCALE * y

    # The engine's numbers, through its public functions.
    output, weights = scaled_dot_product_attention(q, k, values, temperature=p.temperature)
    hard_output, hard_weights = hard_attention(q, k, values)
    np.testing.assert_array_equal(result.soft_weights, weights)
    np.testing.assert_array_equal(result.soft_output, output)
    np.testing.assert_array_equal(result.hard_weights, hard_weights)
    np.testing.assert_array_equal(result.hard_output, hard_output)
    np.testing.assert_array_equal(result.values, values)
    # "q·k/√d is exactly the dot product of the two words' feature vectors", for unknown words too.
    np.testing.assert_array_equal(result.scores, x @ y.T)
    np.testing.assert_allclose(result.scores, q @ k.T / math.sqrt(FEATURE_COUNT), rtol=0, atol=0)
    np.testing.assert_array_equal(result.scaled_scores, result.scores / p.temperature)

    alt, caption = KIND.alt(p, result), KIND.caption(p, result)
    cells = sl.shown_cells(result)
    assert not any(re.fullmatch(r"-0(\.0*)?", t) for panel in cells.values() for row in panel for t in row)
    assert not re.search(r"-0\.0+\b(?!\d)", alt + caption)

    n_keys = len(k_tokens)
    assert f"temperature {sl.format_temperature(p.temperature)}" in alt
    assert f"T = {sl.format_temperature(p.temperature)}" in caption
    assert f"towards 1/{n_keys} = {1 / n_keys:.2f} each" in caption
    for row, query in enumerate(q_tokens):
        scores = result.scores[row]
        # Equal scores tie, though a matrix product may round an identical key's score in the last digit.
        best = np.flatnonzero(np.isclose(scores, scores.max(), rtol=1e-12, atol=0))
        for j in best:  # a word typed twice among the keys ties with itself
            assert all(i in best for i in range(n_keys) if k_tokens[i] == k_tokens[j])
        hard_key = int(np.argmax(result.hard_weights[row]))
        assert hard_key == best[0], "the hard lookup takes the first of the best-scoring keys"
        assert result.hard_weights[row].sum() == 1
        np.testing.assert_array_equal(result.hard_output[row], values[hard_key])
        w = result.soft_weights[row]
        shown_scores = ", ".join(f"{key} {sl.format_number(s)}" for key, s in zip(k_tokens, scores))
        assert f"Query '{query}' scores the keys {shown_scores}" in alt
        if len(best) == n_keys:
            assert np.allclose(w, 1 / n_keys, rtol=1e-12, atol=0)
            assert (f"Query '{query}' scores the keys {shown_scores}; every score is the same, so it spreads its "
                    f"weight evenly ({w[0]:.2f} on each key)") in alt
            assert f"'{query}' scores every key the same ({sl.format_number(scores[0])}), so its weights are even" in caption
            assert f"hard lookup takes the first key, '{k_tokens[hard_key]}'" in caption
        elif len(best) > 1:
            assert np.allclose(w[best], w.max(), rtol=1e-12, atol=0)
            tied = ", ".join(named(k_tokens, j) for j in best[:-1]) + " and " + named(k_tokens, best[-1])
            assert f"on the tied keys {tied} (score {sl.format_number(scores.max())})" in alt
            assert f"hard lookup picks the first of them, {named(k_tokens, best[0])}, with weight 1" in alt
            assert f"For query '{query}', the keys {tied} tie for the best score" in caption
            assert f"hard lookup takes the first, {named(k_tokens, best[0])}" in caption
        else:
            assert w[best[0]] == w.max()  # the largest soft weight sits on the best key
            assert (f"it puts its largest weight, {w[best[0]]:.2f}, on key {named(k_tokens, best[0])} "
                    f"(score {sl.format_number(scores.max())}); hard lookup picks {named(k_tokens, best[0])} with "
                    "weight 1") in alt
        feature = int(np.argmax(result.soft_output[row]))
        if result.soft_output[row].any() or result.hard_output[row].any():
            assert (f"soft output {sl.VALUE_FEATURES[feature]} {result.soft_output[row, feature]:.2f} vs hard "
                    f"{result.hard_output[row, feature]:.2f}") in alt
        else:
            assert not result.values.any()  # soft weights are positive and values are not negative
            assert "soft and hard outputs 0 on every value feature, as every key's value is 0" in alt
        # A near tie (equal at the shown rounding, but not equal) is named, with the digits that separate them.
        shown_best = sl.format_number(scores.max())
        near = [j for j in range(n_keys) if j not in best and sl.format_number(scores[j]) == shown_best]
        if near:
            assert f"'{query}' scores {named(k_tokens, best[0])} and {named(k_tokens, near[0])} the same to the shown" in alt
    unknown = [w for w in dict.fromkeys(q_tokens + k_tokens) if w not in LEXICON]
    assert list(result.unknown) == unknown
    if unknown:
        assert f"Words marked * ({', '.join(unknown)}) are not in the toy lexicon" in caption
        assert f"counts of shared features: {', '.join(unknown)}." in alt
        assert all(word_label.endswith("*") for word_label in (sl.word_label(w, result.unknown) for w in unknown))
    else:
        assert "not in the toy lexicon" not in alt + caption


@SWEEP
@given(params())
def test_recomputing_by_hand_from_the_shown_numbers_gives_the_shown_weights_and_outputs(p):
    result = KIND.compute(p)
    cells = {name: np.array([[number(t) for t in row] for row in panel]) for name, panel in sl.shown_cells(result).items()}
    half = 0.005  # every shown number is rounded to 2 decimals
    # score ÷ T, from the shown scores: the division magnifies their rounding by 1/T.
    assert np.all(np.abs(cells["scores"] / p.temperature - cells["scaled"]) <= half / p.temperature + half + 1e-9)
    # softmax of the shown score ÷ T: a logit error e moves a weight by at most e/2.
    z = cells["scaled"]
    recomputed = np.exp(z - z.max(axis=1, keepdims=True))
    recomputed /= recomputed.sum(axis=1, keepdims=True)
    assert np.all(np.abs(recomputed - cells["soft"]) <= half / 2 + half + 1e-9)
    # output = Σ weight × value, from the shown weights and values.
    w, v = cells["soft"], cells["values"]
    bound = half * (np.abs(v).sum(axis=0)[None, :] + w.sum(axis=1, keepdims=True)) + half * half * len(v) + half
    assert np.all(np.abs(w @ v - cells["soft_output"]) <= bound + 1e-9)
    # The hard lookup copies one shown value row; its 1 sits on a shown best score.
    for row in range(len(result.query_tokens)):
        (picked,) = np.flatnonzero(cells["hard"][row] == 1)
        np.testing.assert_array_equal(cells["hard_output"][row], v[picked])
        assert cells["scores"][row, picked] == cells["scores"][row].max()


def test_all_lexicon_values_are_exact_so_lexicon_outputs_recompute_to_the_rounding():
    result = KIND.compute(sl.SoftLookupParams(queries="kitten truck", keys="cat dog car tree sky"))
    cells = sl.shown_cells(result)
    assert cells["values"] == [["1", "0", "0", "0", "0"], ["1", "0", "0", "0", "0"], ["0", "0", "1", "0", "0"],
                               ["0", "0", "0", "0", "1"], ["0", "0", "0", "0", "1"]]
    assert cells["scores"] == [["4", "2", "1", "1", "1"], ["1", "1", "2", "1", "1"]]
    # kitten: e^4 / (e^4 + e^2 + 3e) = 0.78; its animal output is the cat and dog weights, 0.78 + 0.11.
    assert cells["soft"][0][:2] == ["0.78", "0.11"] and cells["soft_output"][0][0] == "0.88"


@pytest.mark.parametrize(("text", "shown"), [(-0.004, "0"), (-0.001, "0"), (0.0, "0"), (-0.0, "0"), (2.0, "2"),
                                             (2.5, "2.5"), (0.667, "0.67"), (-19.874, "-19.87"), (80.0, "80"),
                                             (79.99999999999999, "80"), (100.0, "100")])
def test_numbers_are_written_without_negative_zero_or_trailing_zeros(text, shown):
    assert sl.format_number(text) == shown


def test_a_near_tie_is_named_with_the_digits_that_separate_it():
    # Two hashed keys whose scores against the query differ but round to the same 2 decimals.
    candidates = [f"w{i}" for i in range(300)]
    scores = embed(["zorblax"], FEATURE_COUNT) @ embed(candidates, FEATURE_COUNT).T  # (1, 300)
    shown = [sl.format_number(s) for s in scores[0]]
    a, b = next((i, j) for i, j in itertools.combinations(range(len(candidates)), 2)
                if shown[i] == shown[j] and scores[0, i] != scores[0, j])
    p = sl.SoftLookupParams(queries="zorblax", keys=f"{candidates[a]} {candidates[b]}")
    result = KIND.compute(p)
    high, low = (0, 1) if result.scores[0, 0] > result.scores[0, 1] else (1, 0)
    high_text, low_text = sl.distinguishing(result.scores[0, high], result.scores[0, low])
    assert high_text != low_text and float(high_text) > float(low_text)
    expected = (f"'zorblax' scores '{result.key_tokens[high]}' and '{result.key_tokens[low]}' the same to the "
                f"shown 2 decimals, but '{result.key_tokens[high]}' is higher ({high_text} against {low_text}), "
                f"so the hard lookup picks '{result.key_tokens[high]}'")
    assert result.hard_weights[0, high] == 1
    assert expected in KIND.alt(p, result) and expected in KIND.caption(p, result)


def test_repeated_keys_tie_exactly_and_the_first_wins():
    p = sl.SoftLookupParams(queries="zorblax kitten", keys="dog flumph flumph cat cat")
    result = KIND.compute(p)
    alt = KIND.alt(p, result)
    assert result.scores[0, 1] == result.scores[0, 2] and result.hard_weights[0, 1] == 1
    # A word typed twice is told apart by its column, so "the first of them" says which copy.
    assert "hard lookup picks the first of them, 'flumph' (column 2)" in alt
    assert "hard lookup picks the first of them, 'cat' (column 4)" in alt and result.hard_weights[1, 3] == 1
    assert "the keys 'cat' (column 4) and 'cat' (column 5) tie for the best score" in KIND.caption(p, result)


# --- the figure --------------------------------------------------------------------------------------

EXTREMES = [
    {},
    {"queries": "kitten truck queen zorblax and river", "keys": "cat dog car tree sky puppy bus flumph park girl",
     "temperature": 0.05},
    {"queries": "kitten truck queen zorblax and river", "keys": "cat dog car tree sky puppy bus flumph park girl",
     "temperature": 20},
    {"queries": "internationalization a b c d e", "keys": "extraordinarily x y z w v u t s r", "temperature": 0.35},
    {"queries": "ran", "keys": "and but", "temperature": 1.0},
]


def measured_width(text: str, points: float) -> float:
    """The drawn width of text in inches, measured by matplotlib."""
    from matplotlib.font_manager import FontProperties
    from matplotlib.textpath import TextToPath

    width, _, _ = TextToPath().get_text_width_height_descent(text, FontProperties(size=points), ismath=False)
    return width / 72


def check_plan(result, width):
    layout = sl.plan_layout(result, width)
    cells = sl.shown_cells(result)
    fig_width, fig_height = layout.size
    assert fig_width == width
    names = {p.name for p in layout.placements}
    assert names == set(sl.PANEL_DATA), "every panel is drawn"
    rects = []
    for p in layout.placements:
        left, bottom, w, h = p.rect
        assert left >= 0 and bottom >= 0 and left + w <= fig_width + 1e-9 and bottom + h <= fig_height + 1e-9
        cell = w / (p.stop - p.start)
        for row in cells[p.name]:
            for text in row[p.start:p.stop]:
                assert measured_width(text, layout.points) <= cell - 0.05, (p.name, text, cell)
        if not p.rotate_columns:
            for label in p.col_labels[p.start:p.stop]:
                assert measured_width(label, layout.points) <= cell, (p.name, label)
        rects.append((left, bottom, left + w, bottom + h))
    for a, b in itertools.combinations(rects, 2):
        assert min(a[2], b[2]) <= max(a[0], b[0]) or min(a[3], b[3]) <= max(a[1], b[1]), "axes overlap"
    # Every key column appears exactly once per query×key panel, across its chunks.
    for name in ("scores", "scaled", "soft", "hard"):
        spans = sorted((p.start, p.stop) for p in layout.placements if p.name == name)
        assert spans[0][0] == 0 and spans[-1][1] == len(result.key_tokens)
        assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))
    if layout.note:
        assert all(measured_width(line, layout.points) <= width - 0.16 for line in layout.note.split("\n"))
    return layout


@settings(max_examples=25, deadline=None)
@given(params())
def test_every_layout_fits_its_numbers_in_their_cells(p):
    result = KIND.compute(p)
    wide, narrow = check_plan(result, WIDTH), check_plan(result, NARROW_WIDTH)
    # A phone shows the narrow image at about its own size (340 px on a 375 px screen): 8 pt = 11 px.
    assert narrow.points * 100 / 72 >= 10 and wide.points >= narrow.points


@pytest.mark.parametrize("values", EXTREMES)
@pytest.mark.parametrize("layout", ["wide", "narrow"])
def test_the_figure_shows_the_shown_numbers_and_has_the_planned_size(values, layout):
    p = KIND.parse(values)
    result = KIND.compute(p)
    rendered = KIND.render(p, layout=layout)
    assert rendered.image == KIND.render(p, layout=layout).image, "deterministic bytes"
    width, height = int.from_bytes(rendered.image[16:20], "big"), int.from_bytes(rendered.image[20:24], "big")
    assert (width, height) == KIND.size(p, layout) == pixel_size(KIND.figure_inches(p, layout))
    assert width == (340 if layout == "narrow" else 760)
    figure = KIND.draw(p, result, KIND.figure_inches(p, layout))
    cells = sl.shown_cells(result)
    plan = sl.plan_layout(result, width / 100)
    assert len(figure.axes) == len(plan.placements)
    for ax, placement in zip(figure.axes, plan.placements):
        (collection,) = [c for c in ax.collections if hasattr(c, "cell_texts")]
        expected = [t for row in cells[placement.name] for t in row[placement.start:placement.stop]]
        assert list(collection.cell_texts) == expected
        assert ax.get_title(loc="left") == placement.title
        assert ax.get_ylabel() == placement.row_title and ax.get_xlabel() == placement.col_title
        if placement.name in ("soft", "hard", "values", "soft_output", "hard_output"):
            assert grid(ax).get_clim() == (0.0, 1.0)
        else:
            data = getattr(result, sl.PANEL_DATA[placement.name][0])
            low, high = grid(ax).get_clim()
            assert low <= data.min() and data.max() <= high
    if result.unknown:
        assert any("not in the toy lexicon" in t.get_text() for t in figure.texts)


def test_the_query_key_axes_say_rows_are_queries_and_columns_are_keys():
    result = KIND.compute(sl.SoftLookupParams())
    for p in sl.plan_layout(result, WIDTH).placements:
        if p.name in ("scores", "scaled", "soft", "hard"):
            assert (p.row_title, p.col_title) == ("query", "key")
            assert p.row_labels == ("kitten", "truck") and p.col_labels == ("cat", "dog", "car", "tree", "sky")
        elif p.name == "values":
            assert (p.row_title, p.col_title) == ("key", "value feature")
        else:
            assert (p.row_title, p.col_title) == ("query", "value feature")


def test_a_split_panel_names_its_columns_keys_or_features():
    """A long key word splits the phone layout's panels; the value panels' columns are features, not keys."""
    params = KIND.parse({"queries": "kitten truck", "keys": "достопримечательность кот"})
    placements = sl.plan_layout(KIND.compute(params), NARROW_WIDTH).placements
    for placement in placements:
        if "(" in placement.title.split("\n")[-1] and " to " in placement.title:
            noun = "keys" if placement.col_title == "key" else "features"
            assert f"({noun} {placement.start + 1} to {placement.stop})" in placement.title, placement.title
    assert any("(features 1 to" in p.title for p in placements)  # the case the phone layout meets


@pytest.mark.parametrize("choice", ["true", "false"])
def test_with_tied_best_keys_nothing_says_low_temperatures_reach_the_one_hot_pick(choice):
    """park·house = park·tree = 2: as T → 0 the soft weights go to 0.5 and 0.5, not to panel 6's pick of the first."""
    params = KIND.parse({"queries": "park", "keys": "house tree", "temperature": 0.05, "choice": choice})
    result = KIND.compute(params)
    np.testing.assert_allclose(result.soft_weights[0], [0.5, 0.5])
    caption = KIND.caption(params, result)
    assert caption.endswith("where keys tie for the best score, the weights split evenly among them instead.")
    untied = KIND.describe(KIND.parse({"choice": choice})).caption  # kitten and truck each have one best key
    assert untied.endswith(sl.CHOICE_SENTENCES[choice])
    titles = [title for group in sl.GROUPS for (_, title, *_) in group]
    assert "6. hard lookup:\nweight 1 on best key" in titles and not any("T → 0" in title for title in titles)
    assert "hard lookup" not in next(c.label for c in KIND.controls if c.name == "temperature")


def test_a_query_whose_keys_have_no_value_features_names_no_feature():
    alt = KIND.describe(KIND.parse({"queries": "the", "keys": "on in"})).alt
    assert "soft and hard outputs 0 on every value feature, as every key's value is 0" in alt
    assert "soft output animal" not in alt


def test_the_alt_text_says_each_panels_rows_and_columns_as_the_figure_draws_them():
    """Panels 4, 5 and 7 are not queries × keys: the value table is keys × value features, the outputs queries ×
    value features (the alt text once called every panel queries × keys)."""
    from .helpers import heatmap_axes

    params = KIND.parse({"queries": "kitten truck bus", "keys": "cat dog car tree"})
    computed = KIND.describe(params)
    figure = KIND.draw(params, computed.result, KIND.figure_inches(params))
    queries, keys, features = 3, 4, len(sl.VALUE_FEATURES)
    shapes = [grid(ax).get_array().shape for ax in heatmap_axes(figure)]
    assert shapes == [(queries, keys)] * 3 + [(keys, features), (queries, features), (queries, keys),
                                              (queries, features)]
    assert "Panels 1, 2, 3 and 6 have a row per query and a column per key" in computed.alt
    assert "Panel 4, the value table, has a row per key and a column per value feature" in computed.alt
    assert "panels 5 and 7 have a row per query and a column per value feature" in computed.alt


# --- a numeric prediction is judged at the temperature it was made for -------------------------------------------


def test_a_numeric_prediction_takes_the_temperature_it_was_made_for():
    made = KIND.parse({"predicted_weight": 0.78, "weight_cell": "0,0", "temperature": 1.0})
    assert made.weight_temperature == 1.0  # set from the figure's own temperature when it arrives without one
    assert KIND.parse({"temperature": 0.5}).weight_temperature is None  # no prediction, nothing to remember
    cleared = KIND.parse({**made.model_dump(), "predicted_weight": "", "weight_temperature": ""})
    assert cleared.weight_temperature is None and not KIND.compute(cleared).shows_prediction
    # A temperature that cannot be taken is refused once, by its own field, not again as the prediction's.
    for bad in ("abc", "99", "nan"):
        with pytest.raises(ValidationError) as refused:
            KIND.parse({"predicted_weight": 0.78, "weight_cell": "0,0", "temperature": bad})
        assert [error["loc"] for error in refused.value.errors()] == [("temperature",)]


@pytest.mark.parametrize("layout", ["wide", "narrow"])
def test_a_numeric_prediction_is_not_judged_at_a_temperature_it_was_not_made_for(layout):
    """0.78 is right for kitten·cat at the question's T = 1; moved to T = 0.05 (weight 1.00 there) it stays right."""
    params = KIND.parse({"predicted_weight": 0.78, "weight_cell": "0,0", "weight_temperature": 1.0,
                         "temperature": 0.05})
    result = KIND.compute(params)
    assert f"{result.soft_weights[0, 0]:.2f}" == "1.00"
    caption, alt = KIND.caption(params, result), KIND.alt(params, result)
    for words in (caption, alt):
        assert words.startswith("In panel 3, you predicted 0.78 for the weight of query 'kitten' on key 'cat' "
                                "(outlined with dashes and a solid line) at T = 1.0, the question's temperature; at "
                                "that T the engine's weight there is 0.78, which your prediction matches to the 2 "
                                "decimals shown. This figure is drawn at T = 0.05, where that weight is 1.00.")
        assert "higher than your prediction" not in words
    figure = KIND.draw(params, result, KIND.figure_inches(params, layout, result))
    assert [text.get_text() for legend in figure.legends for text in legend.get_texts()] == [
        "your prediction for T = 1.0: 0.78", "the engine's weight: 0.78 at T = 1.0, 1.00 here"]
    # The cell the prediction is about stays outlined: the student watches its weight change with T.
    (panel_3,) = [ax for ax in figure.axes if ax.get_title(loc="left").startswith("3.")]
    assert {(round(patch.get_y() + patch.get_height() / 2), round(patch.get_x() + patch.get_width() / 2))
            for patch in panel_3.patches} == {(0, 0)} and len(panel_3.patches) == 2
    # A wrong prediction is wrong against the weight at its own temperature, 0.78, not against 1.00.
    wrong = KIND.describe(KIND.parse({**params.model_dump(), "predicted_weight": 0.5}))
    assert "at that T the engine's weight there is 0.78, 0.28 higher than your prediction." in wrong.caption
    # At its own temperature the words are the ones of a prediction on its own figure.
    own = KIND.describe(KIND.parse({**params.model_dump(), "temperature": 1.0}))
    assert "the question's temperature" not in own.caption
    assert "; the engine's weight there is 0.78, which your prediction matches" in own.caption


NUMERIC_BANK = """\
id: weights
title: Weights
questions:
  - id: kitten-cat
    type: numeric
    prompt: What weight does the query kitten give the key cat at temperature 1?
    answer: 0.78
    tolerance: {abs: 0.01}
    explanation: Panel 3 of the figure.
    visual: {kind: soft-lookup, params: {queries: kitten truck, keys: cat dog car tree sky, temperature: 1.0,
                                         weight_cell: "0,0"}}
"""


def test_the_answer_page_keeps_judging_a_numeric_prediction_at_the_questions_temperature(tmp_path):
    """The audit's case: 0.78 answered at T = 1, then the temperature control moved to 0.05."""
    from html import unescape

    from conftest import answer_via_form

    from app import create_app

    folder = tmp_path / "quizzes"
    folder.mkdir()
    (folder / "weights.yaml").write_text(NUMERIC_BANK)
    app = create_app({"TESTING": True, "SECRET_KEY": "test-secret-key", "QUIZ_DIR": str(folder),
                      "DATABASE_URL": f"sqlite:///{tmp_path / 'test.sqlite3'}"})
    client = app.test_client()
    assert answer_via_form(client, "weights", "kitten-cat", "0.78").status_code == 303
    answer = "/quiz/weights/kitten-cat/answer"
    own = unescape(client.get(answer).get_data(as_text=True))
    # The live controls send the prediction's temperature with the prediction.
    assert re.search(r'<input type="hidden" name="weight_temperature" value="1.0" data-plot-param data-prediction>', own)
    cold = unescape(client.get(f"{answer}?v=soft-lookup&temperature=0.05&queries=kitten+truck"
                               "&keys=cat+dog+car+tree+sky").get_data(as_text=True))
    alt = re.search(r'<img class="visual-image" src="[^"]+"[^>]*alt="([^"]*)"', cold).group(1)
    assert "the engine's weight is 1.00, 0.22 higher" not in alt and "0.22 higher" not in alt
    assert ("at that T the engine's weight there is 0.78, which your prediction matches to the 2 decimals shown. "
            "This figure is drawn at T = 0.05, where that weight is 1.00.") in alt
    # The image and the live controls' JSON, asked with what the page sends, say the same.
    described = client.get("/plots/soft-lookup.json?queries=kitten+truck&keys=cat+dog+car+tree+sky&temperature=0.05"
                           "&predicted_weight=0.78&weight_cell=0,0&weight_temperature=1.0").get_json()
    assert described["alt"] == alt


# --- the colours of panels 1 and 2 ------------------------------------------------------------------------------


def score_clims(params):
    """Panels 1 and 2's colour ranges, one per axes, as drawn."""
    result = KIND.compute(params)
    figure = KIND.draw(params, result, KIND.figure_inches(params, "wide", result))
    return result, {grid(ax).get_clim() for ax in figure.axes if ax.get_title(loc="left")[:2] in ("1.", "2.")}


@pytest.mark.parametrize("values", [
    {"queries": "kitten", "keys": "w189x w383x"},  # scores 2.26038 and 2.26040: weights 0.50 and 0.50
    {"queries": "zebra", "keys": "quokka wombat"},  # 4.64 and 4.92: weights 0.43 and 0.57
])
def test_a_small_score_difference_gets_a_small_colour_difference(values):
    params = KIND.parse(values)
    result, clims = score_clims(params)
    ((low, high),) = clims
    a, b = result.scores[0]
    # The colours of the two keys differ by no more than their scores do, as a share of the larger one: once
    # they were the map's two ends.
    assert abs(a - b) / (high - low) <= abs(a - b) / max(abs(a), abs(b)) + 1e-12
    assert low <= 0 <= high


@pytest.mark.parametrize("values", [{"queries": "a", "keys": "a a a"}, {"queries": "the", "keys": "on in"}])
def test_equal_scores_take_their_place_on_a_scale_from_0_not_the_middle(values):
    params = KIND.parse(values)
    result, ((low, high),) = score_clims(params)
    score = result.scores[0, 0]
    assert np.all(result.scores == score) and low == 0 and high >= 1
    assert (score - low) / (high - low) == (1.0 if score else 0.0)  # 1: the top of the map; 0: its bottom


@SWEEP
@given(params())
def test_panels_1_and_2_share_one_colour_range_from_0_that_holds_all_their_numbers(p):
    result = KIND.compute(p)
    low, high = sl.score_range(result)
    both = np.concatenate([result.scores.ravel(), result.scaled_scores.ravel()])
    assert low <= min(0.0, both.min()) and max(0.0, both.max()) <= high and high - low >= sl.MIN_SCORE_SPAN
    assert low == min(0.0, both.min())  # anchored at 0, or at a negative score
    assert sl.COLOUR_WORDS in KIND.caption(p, result)


def test_the_caption_says_what_the_colours_of_panels_1_and_2_are():
    params = KIND.parse({"temperature": 0.05})
    result, clims = score_clims(params)
    assert clims == {(0.0, 80.0)}  # kitten·cat = 4, ÷ 0.05: both panels on one scale, from 0
    assert ("Panels 1 and 2 share one colour scale, from 0 (or the lowest value, if one is below 0) to the largest "
            "value in either") in KIND.caption(params, result)


# --- the student's choice, marked in the figure -------------------------------------------------------------------


def choice_texts(figure) -> list[str]:
    return [text.get_text() for text in figure.texts if text.get_gid() == "choice"]


@pytest.mark.parametrize("choice, headline, verdict", [("true", "Your answer: True ✓ right", "True, as right"),
                                                      ("false", "Your answer: False ✗ wrong", "False, as wrong")])
@pytest.mark.parametrize("layout", ["wide", "narrow"])
def test_the_figure_marks_the_students_answer_and_the_alt_text_says_it(choice, headline, verdict, layout):
    params = KIND.parse({"choice": choice})
    rendered = KIND.render(params, layout=layout)
    assert rendered.image != KIND.render(KIND.parse({}), layout=layout).image
    result = KIND.compute(params)
    figure = KIND.draw(params, result, KIND.figure_inches(params, layout, result))
    lines = choice_texts(figure)
    assert lines[0] == headline and figure.texts[0].get_fontweight() == "bold"
    # The reason names the panels that show it: the weights (3), the soft lookup (5) and the hard one (7).
    assert " ".join(lines[1:]) == sl.CHOICE_REASON[0].upper() + sl.CHOICE_REASON[1:]
    assert all(f"panel {n}" in sl.CHOICE_REASON for n in (3, 5, 7))
    width, _ = KIND.figure_inches(params, layout, result)
    from matplotlib.font_manager import FontProperties
    from matplotlib.textpath import TextToPath

    points = sl.plan_layout(result, width).points + 0.5
    for index, line in enumerate(lines):  # each line fits the figure
        font = FontProperties(size=points, weight="bold" if index == 0 else "normal")
        assert TextToPath().get_text_width_height_descent(line, font, ismath=False)[0] / 72 <= width - 2 * sl.EDGE
    # Above every panel.
    top_of_panels = max(p.rect[1] + p.rect[3] for p in sl.plan_layout(result, width).placements)
    _, height = KIND.figure_inches(params, layout, result)
    assert all(t.get_position()[1] * height > top_of_panels for t in figure.texts if t.get_gid() == "choice")
    assert f"At its top the figure marks your answer, {verdict}: {sl.CHOICE_REASON}" in rendered.alt


@pytest.mark.parametrize("choice", ["true", "false"])
@pytest.mark.parametrize("layout", ["wide", "narrow"])
def test_with_tied_best_keys_the_mark_says_they_weigh_the_same(choice, layout):
    """'and' scores 'the' and 'a' the same (0) at every temperature: the soft weights never approach panel 7's pick
    of the first key, so the mark's reason and the alt text must not say it is simply its soft form."""
    params = KIND.parse({"choice": choice, "queries": "and", "keys": "the a"})
    result = KIND.compute(params)
    assert sl.has_tied_best(result)
    figure = KIND.draw(params, result, KIND.figure_inches(params, layout, result))
    reason = " ".join(choice_texts(figure)[1:])
    assert reason == sl.CHOICE_TIE_REASON[0].upper() + sl.CHOICE_TIE_REASON[1:]
    assert "tied for the best score weigh the same" in reason
    assert sl.CHOICE_TIE_REASON in KIND.render(params, layout=layout).alt
    assert sl.CHOICE_REASON not in KIND.render(params, layout=layout).alt
    assert not texts_outside(figure)


def test_no_choice_marks_nothing_and_both_options_are_refused():
    with pytest.raises(ValidationError, match="choice is one answer"):  # a true/false answer is one of them
        KIND.parse({"choice": "true,false"})
    for choice in ("",):
        params = KIND.parse({"choice": choice})
        result = KIND.compute(params)
        assert choice_texts(KIND.draw(params, result, KIND.figure_inches(params, "wide", result))) == []
        assert "marks your answer" not in KIND.alt(params, result)
