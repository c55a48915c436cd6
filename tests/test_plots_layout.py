"""Every visual's layout keeps each label inside the figure and clear of the other axes, at the default
and at the most demanding parameters a student can set; measured with matplotlib's public API."""

from __future__ import annotations

import pytest
from matplotlib.text import Text

import app.plots.figure as figure_module
from app.visuals import get_kind
from app.visuals.base import LAYOUTS

LONG_SENTENCE = "the extraordinarily sleepy cat sat quietly on the mat while dog ran"  # 12 words, one long
LONG_WORD = "a" * 80  # one word as long as a sentence control takes: its label is cut, the panels keep their room

CASES = [
    ("attention-playground", {}),
    ("attention-playground", {"num_heads": 8, "d_model": 64, "causal": "on", "sentence": LONG_SENTENCE}),
    ("attention-playground", {"num_heads": 5, "d_model": 40, "sentence": "internationalization cat sat"}),
    ("attention-playground", {"sentence": LONG_WORD}),
    ("autoregressive-pixels", {}),
    ("autoregressive-pixels", {"height": 16, "width": 16, "row": 15, "col": 15}),
    ("autoregressive-pixels", {"height": 2, "width": 2, "row": 0, "col": 0}),
    ("complexity", {}),
    ("complexity", {"d": 256, "l": 256, "n": 2048, "m": 2048, "vary": "d"}),
    ("complexity", {"d": 1, "l": 1, "n": 1, "m": 1, "vary": "N", "choice": "nm2-d2l"}),
    ("complexity", {"choice": "nmd2l"}),  # the note that this sweep hides a wrong answer
    ("complexity", {"d": 256, "l": 256, "n": 2048, "m": 2048, "vary": "N", "choice": "nm2-dl"}),
    ("head-split", {}),
    ("head-split", {"d_model": 1024, "num_heads": 64}),
    ("head-split", {"d_model": 1, "num_heads": 1}),
    ("head-split", {"answer_width": "32", "choice": "512"}),  # the right answer: its row has both marks
    ("long-range", {}),
    ("long-range", {"max_distance": 512, "distance": 512}),
    ("long-range", {"max_distance": 2, "distance": 1}),
    ("model-heads", {}),
    ("model-heads", {"sentence": "cat sat", "layer": 3, "head": "12"}),  # the shortest: the bars set the height
    ("model-heads", {"sentence": LONG_SENTENCE, "layer": 6, "head": "all"}),
    ("model-overview", {"sentence": "cat sat"}),
    ("multi-head", {}),
    ("multi-head", {"num_heads": 8, "d_model": 64, "sentence": LONG_SENTENCE}),
    ("multi-head", {"num_heads": 2, "d_model": 8, "temperature": 0.05, "sentence": "cat"}),
    ("multi-head", {"choice": "false", "temperature": 20}),
    ("multi-head", {"choice": "true", "sentence": LONG_SENTENCE, "num_heads": 8, "d_model": 64}),
    ("multi-head", {"sentence": LONG_WORD}),
    ("order-blindness", {}),
    ("order-blindness", {"d_model": 64, "positional": "on", "sentence": LONG_SENTENCE}),
    ("order-blindness", {"sentence": LONG_WORD}),
    ("position-encoding", {}),
    ("position-encoding", {"length": 512, "d_model": 256, "train_length": 1}),
    ("position-encoding", {"length": 2, "d_model": 2, "train_length": 2}),
    ("qkv-projections", {}),
    ("qkv-projections", {"d_model": 16, "d_k": 16, "sentence": LONG_SENTENCE}),
    ("qkv-projections", {"d_model": 2, "d_k": 1, "sentence": "cat"}),
    ("qkv-projections", {"sentence": LONG_WORD}),
    ("qkv-projections", {"sentence": LONG_WORD, "d_model": 8, "d_k": 8}),  # X too narrow for its turned names
    ("qkv-projections", {"choice": "values,embeddings"}),
    ("soft-lookup", {}),
    ("soft-lookup", {"queries": "kitten truck internationalization a b c",
                     "keys": "cat dog car tree sky extraordinarily bus river mountain x"}),
]


@pytest.fixture
def drawn_figures(monkeypatch):
    """Render through the kind (its real params and layout), keeping the figure to inspect."""
    figures = []

    def keeping(save):
        def keep(figure, *args, **kwargs):
            figures.append(figure)
            return save(figure, *args, **kwargs)
        return keep

    monkeypatch.setattr(figure_module, "to_png", keeping(figure_module.to_png))
    monkeypatch.setattr(figure_module, "to_svg", keeping(figure_module.to_svg))
    return figures


def drawn_tick_labels(ax, axis, frame):
    """The tick labels drawing shows: visible, with text, and at a tick inside the axes' span."""
    for label in axis.get_ticklabels(which="both"):
        if not (label.get_visible() and label.get_text()):
            continue
        anchor_x, anchor_y = label.get_transform().transform(label.get_position())  # the tick, in pixels
        low, high, at = (frame.x0, frame.x1, anchor_x) if axis is ax.xaxis else (frame.y0, frame.y1, anchor_y)
        if low - 1 <= at <= high + 1:
            yield label


def label_boxes(figure, renderer):
    """(axes or None, what, bbox) of every tick label, axis label, title, text and legend as drawn."""
    boxes = []
    for ax in figure.axes:
        if not ax.get_visible():
            continue
        frame = ax.get_window_extent(renderer)
        texts = []
        if ax.axison:
            for axis in (ax.xaxis, ax.yaxis):
                texts += [(f"tick {label.get_text()!r}", label) for label in drawn_tick_labels(ax, axis, frame)]
                texts += [(f"axis label {axis.label.get_text()!r}", axis.label),
                          (f"offset {axis.get_offset_text().get_text()!r}", axis.get_offset_text())]
        # The titles (centre, left, right) and every text placed in the axes are its Text children.
        texts += [(f"text {child.get_text()!r}", child) for child in ax.get_children() if isinstance(child, Text)]
        if ax.get_legend() is not None:
            texts.append(("legend", ax.get_legend()))
        for what, text in texts:
            if text.get_visible() and (not isinstance(text, Text) or text.get_text()):
                boxes.append((ax, what, text.get_window_extent(renderer)))
    boxes += [(None, "figure legend", legend.get_window_extent(renderer)) for legend in figure.legends]
    return boxes


def overlap(a, b) -> float:
    """How far two boxes overlap, in pixels (the smaller of the two directions; <= 0 when apart)."""
    return min(min(a.x1, b.x1) - max(a.x0, b.x0), min(a.y1, b.y1) - max(a.y0, b.y0))


def layouts(kind_name: str) -> list[str]:
    return list(LAYOUTS) if get_kind(kind_name).has_narrow_layout else ["wide"]


DRAWN = [(kind_name, params, layout) for kind_name, params in CASES for layout in layouts(kind_name)]


@pytest.mark.parametrize(("kind_name", "params", "layout"), DRAWN,
                         ids=[f"{k}-{i}-{layout}" for i, (k, _, layout) in enumerate(DRAWN)])
def test_labels_stay_inside_the_figure_and_off_the_other_axes(kind_name, params, layout, drawn_figures):
    kind = get_kind(kind_name)
    kind.render(kind.parse(params), layout=layout)
    (figure,) = drawn_figures
    renderer = figure.canvas.get_renderer()  # the one to_png drew with: positions are as drawn
    page = figure.bbox
    frames = {ax: ax.get_window_extent(renderer) for ax in figure.axes if ax.get_visible() and ax.axison}
    boxes = label_boxes(figure, renderer)
    assert boxes, "the figure has labels"
    tolerance = 1.0  # pixels: rounding of positions
    for ax, what, box in boxes:
        assert (box.x0 >= page.x0 - tolerance and box.x1 <= page.x1 + tolerance
                and box.y0 >= page.y0 - tolerance and box.y1 <= page.y1 + tolerance), f"{what} is clipped: {box}"
        for other, frame in frames.items():
            if other is not ax:
                assert overlap(box, frame) <= tolerance, f"{what} overlaps another axes"
    for index, (ax, what, box) in enumerate(boxes):
        for other_ax, other_what, other_box in boxes[index + 1:]:
            if other_ax is not ax:
                assert overlap(box, other_box) <= tolerance, f"{what} overlaps {other_what}"


def test_cell_numbers_keep_their_point_size_on_2x_images(drawn_figures):
    """The 2x image (for sharp numbers on 2x screens) draws the cell numbers twice as many pixels tall."""
    kind = get_kind("attention-playground")  # the default's cells are numbered
    params = kind.parse({})
    kind.render(params)
    kind.render(params, scale=2)
    heights = []
    for figure in drawn_figures:
        (numbers, *_) = [c for ax in figure.axes for c in ax.collections if getattr(c, "cell_texts", ())]
        outline = numbers.get_paths()[0].get_extents(numbers.get_transform())  # pixels
        heights.append(outline.height / figure.dpi * 72)  # points
    assert len(heights) == 2 and heights[0] > 4, heights  # an 8 pt "0.17" is about 6 pt tall
    assert heights[1] == pytest.approx(heights[0], rel=0.02)
