"""The "qkv-projections" visual: queries, keys and values are X·W_Q, X·W_K and X·W_V."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.visuals import get_kind
from app.visuals.toy import embed, project_qkv, tokenize, unknown_words

from .helpers import (
    SENTENCE,
    computed,
    grid,
    heatmap_axes,
    naive_matmul,
    row_labels,
    tick_texts,
    words,
)

TITLES = {"input embeddings X\n(the layer's input, 6×6)", "$W_Q$\n(6×4)", "$W_K$\n(6×4)", "$W_V$\n(6×4)",
          "Q = X·$W_Q$\n(6×4)", "K = X·$W_K$\n(6×4)", "V = X·$W_V$\n(6×4)"}


def written(value: float) -> str:
    """A value as the alt text writes it: signed, with a true minus (read "minus" aloud), and 0.00 without a sign."""
    text = f"{value:+.2f}"
    return text[1:] if float(text) == 0 else text.replace("-", "\u2212")


def largest_entries(product: np.ndarray, tokens: list[str]) -> set[tuple[str, str, int]]:
    """(value as written, token, column) of every entry whose |value| is the largest (ties included)."""
    peak = np.abs(product).max()
    return {(written(product[i, j]), tokens[i], j + 1) for i, j in np.ndindex(product.shape)
            if abs(product[i, j]) >= peak - 1e-12}


def test_alt_and_figure_name_shapes_and_largest_entries(default_renders):
    alt = default_renders["qkv-projections"].rendered.alt
    tokens = tokenize("the cat sat on the mat")
    x = embed(tokens, 6)
    weights = project_qkv(x, 4, seed=0)
    assert "Input embeddings X (6×6" in alt and "(each 6×4)" in alt and "each 6×4, one row per token" in alt
    limit = 0.0
    for name, w in (("Q", weights.w_q), ("K", weights.w_k), ("V", weights.w_v)):
        product = naive_matmul(x, w)
        row, column = max(np.ndindex(product.shape), key=lambda ij: abs(product[ij]))
        assert f"{name} {written(product[row, column])} (token '{tokens[row]}', column {column + 1})" in alt
        limit = max(limit, np.abs(product).max(), np.abs(w).max())
    limit = max(limit, np.abs(x).max())
    assert f"from \u2212{limit:.2f} to {limit:.2f}" in alt
    assert "-" not in alt.split("Largest |entry|: ")[1].split(" shared by")[0]  # no hyphen for a minus
    caption = default_renders["qkv-projections"].rendered.caption
    assert "constructed illustration, not a trained model" in caption.lower() and "seed 0" in caption

    _, _, figure, _, _ = computed("qkv-projections", {})
    axes = {ax.get_title(): ax for ax in heatmap_axes(figure)}
    assert set(axes) == TITLES
    for ax in axes.values():  # one diverging scale, symmetric about 0, from all seven matrices
        assert grid(ax).get_clim() == pytest.approx((-limit, limit), rel=1e-12)
    x_axes = axes["input embeddings X\n(the layer's input, 6×6)"]
    assert tick_texts(x_axes.get_yticklabels()) == tokens
    assert tick_texts(x_axes.get_xticklabels()) == ["noun", "verb", "determiner", "adjective", "preposition",
                                                    "pronoun"]
    assert row_labels(axes["Q = X·$W_Q$\n(6×4)"]) == tokens
    np.testing.assert_allclose(grid(axes["Q = X·$W_Q$\n(6×4)"]).get_array(), naive_matmul(x, weights.w_q),
                               atol=1e-12)


@settings(max_examples=30, deadline=None)
@given(SENTENCE, st.integers(2, 16), st.integers(1, 16), st.integers(0, 9999))
def test_shapes_largest_entries_and_scale_hold_for_every_input(sentence, d_model, d_k, seed):
    alt, caption = words("qkv-projections", {"sentence": sentence, "d_model": d_model, "d_k": d_k, "seed": seed})
    tokens = tokenize(sentence)
    n = len(tokens)
    x = embed(tokens, d_model)
    weights = project_qkv(x, d_k, seed=seed)
    assert f"Input embeddings X ({n}×{d_model}:" in alt and f"(each {d_model}×{d_k})" in alt
    assert f"each {n}×{d_k}, one row per token" in alt and f"seed {seed}" in alt and f"seed {seed}" in caption
    limit = np.abs(x).max()
    for name, w in (("Q", weights.w_q), ("K", weights.w_k), ("V", weights.w_v)):
        product = naive_matmul(x, w)
        if not product.any():
            assert f"{name} all 0" in alt
        else:
            value, token, column = re.search(rf"\b{name} ([+\u2212]?\d+\.\d\d) \(token '([^']+)', column (\d+)\)",
                                             alt).groups()
            assert (value, token, int(column)) in largest_entries(product, tokens), name
        limit = max(limit, np.abs(product).max(), np.abs(w).max())
    assert f"from \u2212{limit:.2f} to {limit:.2f}" in alt
    unknown = unknown_words(tokens)
    assert ("pseudo-random features: " + ", ".join(unknown)) in alt if unknown else "pseudo-random" not in alt


def test_the_scale_and_the_numbers_in_the_cells_follow_the_sizes():
    kind = get_kind("qkv-projections")
    params = kind.parse({"sentence": "the quick brown fox jumped over the lazy dog", "d_model": 16, "d_k": 16})
    result = kind.compute(params)
    figure = kind.draw(params, result, kind.figure_inches(params))
    for ax in heatmap_axes(figure):
        assert grid(ax).get_clim() == pytest.approx((-result.limit, result.limit))
        assert not [c for c in ax.collections if getattr(c, "cell_texts", None)]  # too small for numbers


# --- the phone layout: stacked panels, 8 pt text, numbers only where they fit ----------------------

from matplotlib.text import Text
from test_plots_layout import label_boxes, overlap

from app.visuals.base import NARROW_WIDTH

KIND = get_kind("qkv-projections")
LONG = "the extraordinarily sleepy cat sat quietly on the mat while dog ran"
EXTREMES = [{}, {"d_model": 16, "d_k": 16, "sentence": LONG}, {"d_model": 16, "d_k": 4, "sentence": LONG},
            {"d_model": 2, "d_k": 1, "sentence": "cat"}, {"d_model": 8, "d_k": 8, "sentence": "the zorblax sat"}]
CELL_FONT = 8.0


def narrow_figure(values: dict):
    params = KIND.parse(values)
    result = KIND.compute(params)
    inches = KIND.figure_inches(params, "narrow", result)
    figure = KIND.draw(params, result, inches)
    figure.canvas.draw()
    return params, result, inches, figure


def number_collections(figure):
    return [(ax, c) for ax in figure.axes for c in ax.collections if getattr(c, "cell_texts", None)]


def assert_legible_and_apart(figure) -> None:
    """Every drawn text ≥ 8 pt; cell numbers 8 pt and inside their cells; no label on another axes or label."""
    texts = [t for t in figure.findobj(Text) if t.get_visible() and t.get_text()]
    assert texts
    for text in texts:
        assert text.get_fontsize() >= 8, (text.get_text(), text.get_fontsize())
    for ax, collection in number_collections(figure):
        x0, x1 = ax.get_xlim()
        cell_px = ax.get_window_extent().width / abs(x1 - x0)
        for label, path in zip(collection.cell_texts, collection.get_paths()):
            extents = path.get_extents()  # in points (the collection's transform scales points to pixels)
            assert extents.width * figure.dpi / 72 < 0.95 * cell_px, (label, cell_px)
            if any(ch.isdigit() for ch in label):
                assert extents.height >= 0.7 * CELL_FONT  # a digit is 0.73 em tall: the numbers are 8 pt
    renderer = figure.canvas.get_renderer()
    page = figure.bbox
    frames = {ax: ax.get_window_extent(renderer) for ax in figure.axes if ax.axison}
    boxes = label_boxes(figure, renderer)
    for ax, what, box in boxes:
        assert box.x0 >= page.x0 - 1 and box.x1 <= page.x1 + 1 and box.y0 >= page.y0 - 1 and box.y1 <= page.y1 + 1, what
        for other, frame in frames.items():
            if other is not ax:
                assert overlap(box, frame) <= 1, f"{what} overlaps another axes"
    for index, (ax, what, box) in enumerate(boxes):
        for other_ax, other_what, other_box in boxes[index + 1:]:
            if other_ax is not ax:
                assert overlap(box, other_box) <= 1, f"{what} overlaps {other_what}"


@pytest.mark.parametrize("values", EXTREMES)
def test_narrow_figure_is_phone_wide_and_its_pngs_match_its_size(values):
    params = KIND.parse(values)
    width, height = KIND.figure_inches(params, "narrow")
    assert width == NARROW_WIDTH and KIND.figure_inches(params) == KIND.inches
    for scale in (1, 2):
        image = KIND.render(params, scale=scale, layout="narrow").image
        assert image == KIND.render(params, scale=scale, layout="narrow").image  # deterministic
        assert (int.from_bytes(image[16:20], "big"), int.from_bytes(image[20:24], "big")) == (
            round(340 * scale), round(height * 100 * scale))


@pytest.mark.parametrize("values", EXTREMES)
def test_narrow_text_is_at_least_8_pt_and_nothing_overlaps(values):
    _, _, _, figure = narrow_figure(values)
    assert_legible_and_apart(figure)


@settings(max_examples=12, deadline=None)
@given(SENTENCE, st.integers(2, 16), st.integers(1, 16))
def test_narrow_layout_is_legible_for_every_size(sentence, d_model, d_k):
    _, _, _, figure = narrow_figure({"sentence": sentence, "d_model": d_model, "d_k": d_k})
    assert_legible_and_apart(figure)


def test_narrow_stacks_each_w_above_its_product_and_numbers_the_cells_that_fit():
    _, result, _, figure = narrow_figure({})
    axes = {ax.get_title(loc="left"): ax for ax in heatmap_axes(figure)}
    x_axes = axes["input embeddings X (6×6)\nthe layer's input, looked up"]
    for name in "QKV":
        w_box = axes[f"$W_{name}$ (6×4), learned"].get_position()
        product_box = axes[f"{name} = X·$W_{name}$ (6×4)"].get_position()
        # The caption's claim, in this layout too: the product is drawn under its W, column over column.
        assert w_box.x0 == pytest.approx(product_box.x0) and w_box.x1 == pytest.approx(product_box.x1)
        assert w_box.y0 > product_box.y1 and x_axes.get_position().y0 > w_box.y1
    assert "drawn under its W" in KIND.caption(KIND.parse({}), result)
    # One column: every panel starts at the same left edge, top to bottom X, W_Q, Q, W_K, K, W_V, V.
    tops = [ax.get_position().y1 for ax in heatmap_axes(figure)]
    assert tops == sorted(tops, reverse=True)
    assert len({round(ax.get_position().x0, 6) for ax in heatmap_axes(figure)}) == 1
    # At the default sizes every panel's cells carry their numbers: X's, then each W's and product's.
    collections = number_collections(figure)
    assert len(collections) == 7
    from app.visuals.kinds.qkv_projections import cell_text

    expected = [result.x, result.w_q, result.q, result.w_k, result.k, result.w_v, result.v]
    for (_, collection), matrix in zip(collections, expected):
        assert list(collection.cell_texts) == [cell_text(v) for v in matrix.ravel()]


def test_narrow_drops_numbers_only_where_they_cannot_fit():
    _, _, _, figure = narrow_figure({"d_model": 16, "d_k": 4, "sentence": LONG})
    numbered = {ax.get_title(loc="left") for ax, _ in number_collections(figure)}
    # 16 columns of X leave no room for a number; 4 columns of each W and product do.
    assert numbered == {"$W_Q$ (16×4), learned", "Q = X·$W_Q$ (12×4)", "$W_K$ (16×4), learned",
                        "K = X·$W_K$ (12×4)", "$W_V$ (16×4), learned", "V = X·$W_V$ (12×4)"}
    _, _, _, figure = narrow_figure({"d_model": 16, "d_k": 16, "sentence": LONG})
    assert not number_collections(figure)
    alt = KIND.alt(KIND.parse({"d_model": 16, "d_k": 16}), KIND.compute(KIND.parse({"d_model": 16, "d_k": 16})))
    assert "number" not in alt.lower()  # the alt text never claims the cells' numbers, so none to withdraw


@pytest.mark.parametrize("layout", ["wide", "narrow"])
def test_no_cell_shows_minus_zero(layout):
    from app.visuals.kinds.qkv_projections import cell_text

    assert cell_text(-0.04) == "0.0" and cell_text(-0.06) == "-0.1" and cell_text(0.04) == "0.0"
    params = KIND.parse({})
    result = KIND.compute(params)
    assert ((result.w_k < 0) & (result.w_k > -0.05)).any()  # an entry that "{:.1f}" writes as "-0.0"
    figure = KIND.draw(params, result, KIND.figure_inches(params, layout, result))
    labels = [label for _, c in number_collections(figure) for label in c.cell_texts]
    assert labels and not [label for label in labels if label in ("-0.0", "\u22120.0")]


def test_an_all_zero_projection_is_called_all_zero_not_given_a_largest_entry():
    kind = get_kind("qkv-projections")
    result = kind.compute(kind.parse({"sentence": "and"}))
    assert not (result.q.any() or result.k.any() or result.v.any())
    assert "Largest |entry|: Q all 0; K all 0; V all 0." in kind.describe(kind.parse({"sentence": "and"})).alt


@pytest.mark.parametrize("ticked, says", [
    (("keys", "queries"), " You ticked queries and keys: right, each a learned map of X. You left values unticked, "
                          "but the figure computes it from X with a learned matrix."),
    (("embeddings",), " You left queries, keys and values unticked, but the figure computes them from X"),
    (("queries", "keys", "values"), " You ticked queries, keys and values, each a learned map of X, and left X itself "
                                    "out: right."),
])
def test_the_words_credit_the_right_ticks_and_list_the_missed_ones(ticked, says):
    from app.visuals.kinds.qkv_projections import choice_sentence

    assert choice_sentence(ticked).startswith(says)
