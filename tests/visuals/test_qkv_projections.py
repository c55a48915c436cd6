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
    texts_outside,
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
            {"d_model": 2, "d_k": 1, "sentence": "cat"}, {"d_model": 8, "d_k": 8, "sentence": "the zorblax sat"},
            # an answer page's marks, above the option panels, with their legend on top
            {"choice": "values,embeddings"}, {"d_model": 16, "d_k": 1, "sentence": LONG, "choice": "queries,embeddings"},
            {"d_model": 2, "d_k": 1, "sentence": "cat", "choice": "values,keys,queries,embeddings"}]
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
    assert width == NARROW_WIDTH and KIND.figure_inches(params)[0] == KIND.inches[0]
    # The wide figure is taller only by the marks' two lines, and only when there are ticks to mark.
    assert (KIND.figure_inches(params)[1] > KIND.inches[1]) == bool(values.get("choice"))
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
@given(SENTENCE, st.integers(2, 16), st.integers(1, 16), st.sampled_from(["", "keys", "values,embeddings"]))
def test_narrow_layout_is_legible_for_every_size(sentence, d_model, d_k, choice):
    _, _, _, figure = narrow_figure({"sentence": sentence, "d_model": d_model, "d_k": d_k, "choice": choice})
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


# --- the student's ticks, marked on the panels an option names (an answer page passes them in `choice`) --------

import itertools

from matplotlib.colors import to_rgba
from matplotlib.text import Annotation

from app.bank.loader import load_bank_file
from app.paths import resource_dir
from app.plots.figure import PREDICTED_STYLE
from app.visuals.kinds.qkv_projections import OPTIONS

PANEL_TITLES = {"wide": {"x": "input embeddings X\n(the layer's input, 6×6)", "q": "Q = X·$W_Q$\n(6×4)",
                         "k": "K = X·$W_K$\n(6×4)", "v": "V = X·$W_V$\n(6×4)"},
                "narrow": {"x": "input embeddings X (6×6)\nthe layer's input, looked up", "q": "Q = X·$W_Q$ (6×4)",
                           "k": "K = X·$W_K$ (6×4)", "v": "V = X·$W_V$ (6×4)"}}
OPTION_PANEL = {"embeddings": "x", "queries": "q", "keys": "k", "values": "v"}
CHOICES = [",".join(combo) for size in range(len(OPTIONS) + 1) for combo in itertools.combinations(OPTIONS, size)]


@pytest.fixture(scope="module")
def key() -> dict[str, bool]:
    """The quiz question's own answer key: option id -> correct, read from the bank the page uses."""
    result = load_bank_file(resource_dir("quizzes") / "attention-transformers.yaml")
    question = result.bank.question("qkv-projections")
    assert question.visual.kind == "qkv-projections"
    return {option.id: option.correct for option in question.options}


def drawn(values: dict, layout: str):
    params = KIND.parse(values)
    result = KIND.compute(params)
    figure = KIND.draw(params, result, KIND.figure_inches(params, layout, result))
    figure.canvas.draw()
    return figure


def panel_axes(figure, layout: str) -> dict:
    titles = {ax.get_title(loc="left" if layout == "narrow" else "center"): ax for ax in heatmap_axes(figure)}
    return {panel: titles[title] for panel, title in PANEL_TITLES[layout].items()}


def marks_in(ax) -> list[Annotation]:
    return [text for text in ax.texts if isinstance(text, Annotation) and text.get_text()[:1] in "✓✗"]


def dashed_outlines(ax) -> list:
    return [patch for patch in ax.patches if patch.get_edgecolor() == to_rgba(PREDICTED_STYLE["edgecolor"])]


@pytest.mark.parametrize("layout", ["wide", "narrow"])
@pytest.mark.parametrize("choice", CHOICES)
def test_each_option_panel_marks_the_tick_against_the_banks_key(choice, layout, key):
    assert set(key) == set(OPTIONS)
    figure = drawn({"choice": choice}, layout)
    ticked = set(choice.split(",")) - {""}
    axes = panel_axes(figure, layout)
    if not ticked:  # no answer (a lesson, or before answering): nothing marked, no key given away
        assert not any(marks_in(ax) or dashed_outlines(ax) for ax in figure.axes) and not figure.legends
        return
    renderer = figure.canvas.get_renderer()
    for option, panel in OPTION_PANEL.items():
        ax = axes[panel]
        (mark,) = marks_in(ax)
        verdict, reason = mark.get_text().replace(": ", "\n").split("\n")
        right = (option in ticked) == key[option]
        assert verdict.startswith("✓" if right else "✗"), (option, verdict)
        assert verdict[2:] == ({True: "ticked", False: "left out" if right else "missed"}[option in ticked])
        assert reason == ("learned map" if key[option] else "looked up")  # what the panel shows decides it
        # Ticked: a dashed outline round the panel's cells; not ticked: none.
        outlines = dashed_outlines(ax)
        assert len(outlines) == (option in ticked)
        if outlines:
            rows, cols = grid(ax).get_array().shape
            assert (outlines[0].get_x(), outlines[0].get_y(), outlines[0].get_width(), outlines[0].get_height()) == (
                -0.5, -0.5, cols, rows)
        # The mark sits just above its panel's title, over the panel, not over the W above it.
        mark_box = mark.get_window_extent(renderer)
        (title,) = [text for text in ax.get_children() if isinstance(text, Text) and not isinstance(text, Annotation)
                    and text.get_text() == PANEL_TITLES[layout][panel]]
        title_box = title.get_window_extent(renderer)
        assert title_box.y1 <= mark_box.y0 <= title_box.y1 + 8
        assert title_box.x0 - 40 <= mark_box.x0 and mark_box.x1 <= figure.bbox.x1
    # The W panels carry no marks; a legend says what the outline and ✓/✗ mean.
    assert sum(len(marks_in(ax)) for ax in figure.axes) == 4
    (legend,) = figure.legends
    assert [text.get_text() for text in legend.get_texts()] == ["your tick", "✓ right, ✗ wrong"]


def test_the_ticks_change_the_picture_and_every_tick_set_draws_the_same_bytes_twice():
    plain = {layout: KIND.render(KIND.parse({}), layout=layout).image for layout in ("wide", "narrow")}
    for choice in ("embeddings", "values,embeddings", "values,keys,queries", "values,keys,queries,embeddings"):
        params = KIND.parse({"choice": choice})
        for layout in ("wide", "narrow"):
            image = KIND.render(params, layout=layout).image
            assert image != plain[layout], (choice, layout)  # the student's ticks are drawn, not only written
            assert image == KIND.render(params, layout=layout).image
            width, height = KIND.size(params, layout)
            assert (int.from_bytes(image[16:20], "big"), int.from_bytes(image[20:24], "big")) == (width, height)
    # No ticks: the figure a lesson shows, unchanged by an empty answer.
    assert KIND.render(KIND.parse({"choice": ""}), layout="wide").image == plain["wide"]


@pytest.mark.parametrize("values", [{"choice": "values,embeddings"},
                                    {"d_model": 16, "d_k": 1, "sentence": LONG, "choice": "keys,values"},
                                    {"d_model": 16, "d_k": 16, "sentence": LONG, "choice": "embeddings"},
                                    {"d_model": 2, "d_k": 1, "sentence": "cat", "choice": "queries"}])
def test_wide_marks_stay_apart_from_each_other_and_from_every_other_label(values):
    assert_marks_apart(drawn(values, "wide"))


@settings(max_examples=10, deadline=None)
@given(SENTENCE, st.integers(2, 16), st.integers(1, 16))
def test_wide_marks_stay_apart_for_every_size(sentence, d_model, d_k):
    assert_marks_apart(drawn({"sentence": sentence, "d_model": d_model, "d_k": d_k, "choice": "keys,embeddings"},
                             "wide"))


def assert_marks_apart(figure) -> None:
    """The four marks at least 8 pt, inside the figure, off every axes and every other label, and apart."""
    renderer = figure.canvas.get_renderer()
    marks = [(ax, mark.get_window_extent(renderer)) for ax in figure.axes for mark in marks_in(ax)]
    assert len(marks) == 4 and all(mark.get_fontsize() >= 8 for ax in figure.axes for mark in marks_in(ax))
    frames = [ax.get_window_extent(renderer) for ax in figure.axes]
    others = [box for _, _, box in label_boxes(figure, renderer) if all(box.bounds != mark.bounds for _, mark in marks)]
    for _, box in marks:
        assert figure.bbox.x0 <= box.x0 and box.x1 <= figure.bbox.x1 and box.y1 <= figure.bbox.y1
        assert all(overlap(box, frame) <= 0 for frame in frames)
        assert all(overlap(box, other) <= 0 for other in others)
        assert all(overlap(box, mark) <= 0 for _, mark in marks if mark is not box)


@pytest.mark.parametrize("choice, says", [
    ("values,embeddings", " The figure marks your answer above X, Q, K and V, with your ticks outlined in dashes: "
                          "X ticked, wrong (looked up); Q not ticked, wrong (learned map); K not ticked, wrong "
                          "(learned map); V ticked, right (learned map)."),
    ("values,keys,queries", "X not ticked, right (looked up); Q ticked, right (learned map); K ticked, right "
                            "(learned map); V ticked, right (learned map)."),
])
def test_the_alt_text_reads_the_marks_out(choice, says):
    params = KIND.parse({"choice": choice})
    alt = KIND.describe(params).alt
    assert alt.endswith(says)
    assert "marks your answer" not in KIND.describe(KIND.parse({})).alt


def test_the_caption_credits_leaving_x_out_as_the_figure_marks_it():
    caption = KIND.describe(KIND.parse({"choice": "values"})).caption
    assert caption.endswith(" You left word embeddings unticked: right, X is the layer's input, looked up.")


def test_cell_numbers_are_written_only_where_they_fit_their_cells():
    """A long word narrows the panels: past the point where the widest number fits a cell the numbers go (the
    colours and the description carry the values), instead of running into each other; a word of any length the
    control takes draws, with its label cut."""
    kind = get_kind("qkv-projections")

    def numbered(sentence: str) -> bool:
        params = kind.parse({"sentence": sentence})
        figure = kind.draw(params, kind.compute(params), kind.figure_inches(params))
        return any(getattr(collection, "cell_texts", None) for ax in figure.axes for collection in ax.collections)

    assert numbered("the cat sat on the mat")
    assert not numbered("the hippopotamus sat on the mat")  # "-0.7" no longer fits a 0.22-inch cell
    long_word = "a" * 80
    for layout in ("wide", "narrow"):
        assert kind.render(kind.parse({"sentence": long_word}), layout=layout).image.startswith(b"\x89PNG")


@pytest.mark.parametrize("word", ["m" * 80, "a" * 80, "W" * 40])
def test_a_word_of_wide_letters_is_cut_by_width_and_every_text_stays_inside(word):
    """Labels are cut by their width, not their count of letters: 80 'm's cut at 16 letters still pushed the
    phone's marks and titles off its right edge (re-audit)."""
    from app.visuals.words import MAX_LABEL_WIDTH, short
    from app.visuals.base import estimated_width

    assert estimated_width([short(word)], 10) <= MAX_LABEL_WIDTH and short(word).endswith("…")
    assert short("extraordinarily") == "extraordinarily"
    kind = get_kind("qkv-projections")
    params = kind.parse({"sentence": word, "d_model": 8, "d_k": 8, "choice": "keys"})
    for layout in ("wide", "narrow"):
        figure = kind.draw(params, kind.compute(params), kind.figure_inches(params, layout))
        assert texts_outside(figure) == [], layout
