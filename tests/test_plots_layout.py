"""The one-pass grid layout (app.plots.layout) keeps every label inside the figure and clear of the
other axes, at the default and at the most demanding parameters a student can set."""

from __future__ import annotations

import pytest

import app.plots.figure as figure_module
from app.visuals import get_kind

LONG_SENTENCE = "the extraordinarily sleepy cat sat quietly on the mat while dog ran"  # 12 words, one long

CASES = [
    ("attention-playground", {}),
    ("attention-playground", {"num_heads": 8, "d_model": 64, "causal": "on", "sentence": LONG_SENTENCE}),
    ("attention-playground", {"num_heads": 5, "d_model": 40, "sentence": "internationalization cat sat"}),
    ("autoregressive-pixels", {}),
    ("autoregressive-pixels", {"height": 16, "width": 16, "row": 15, "col": 15}),
    ("autoregressive-pixels", {"height": 2, "width": 2, "row": 0, "col": 0}),
    ("complexity", {}),
    ("complexity", {"d": 256, "l": 256, "max_n": 2048}),
    ("complexity", {"d": 1, "l": 1, "max_n": 16}),
    ("long-range", {}),
    ("long-range", {"max_distance": 512, "distance": 512}),
    ("long-range", {"max_distance": 2, "distance": 1}),
    ("multi-head", {}),
    ("multi-head", {"num_heads": 8, "d_model": 64, "sentence": LONG_SENTENCE}),
    ("multi-head", {"num_heads": 3, "d_model": 3, "temperature": 0.05, "sentence": "cat"}),
    ("order-blindness", {}),
    ("order-blindness", {"d_model": 64, "positional": "on", "sentence": LONG_SENTENCE}),
    ("position-encoding", {}),
    ("position-encoding", {"length": 512, "d_model": 256, "train_length": 1}),
    ("position-encoding", {"length": 2, "d_model": 2, "train_length": 2}),
    ("qkv-projections", {}),
    ("qkv-projections", {"d_model": 16, "d_k": 16, "sentence": LONG_SENTENCE}),
    ("qkv-projections", {"d_model": 2, "d_k": 1, "sentence": "cat"}),
    ("soft-lookup", {}),
    ("soft-lookup", {"queries": "kitten truck internationalization a b c",
                     "keys": "cat dog car tree sky extraordinarily bus river mountain x"}),
]


@pytest.fixture
def drawn_figures(monkeypatch):
    """Render through the kind (its real params and layout), keeping the figure to inspect."""
    figures = []
    original = figure_module.to_png

    def keep(figure):
        figures.append(figure)
        return original(figure)

    monkeypatch.setattr(figure_module, "to_png", keep)
    import bench.stubs

    monkeypatch.setattr("app.visuals.kinds.complexity.measure_attention_seconds", bench.stubs.quadratic_seconds)
    return figures


def label_boxes(figure, renderer):
    """(axes, what, bbox) of every tick label, axis label and title as drawn."""
    boxes = []
    for ax in figure.axes:
        if not ax.get_visible():
            continue
        texts = []
        if ax.axison:
            for axis in (ax.xaxis, ax.yaxis):
                drawn = axis._update_ticks()  # the ticks inside the view, which drawing shows
                texts += [(f"tick {label.get_text()!r}", label) for tick in drawn for label in (tick.label1, tick.label2)]
                texts.append((f"axis label {axis.label.get_text()!r}", axis.label))
        texts += [(f"title {title.get_text()!r}", title) for title in (ax.title, ax._left_title, ax._right_title)]
        for what, text in texts:
            if text.get_visible() and text.get_text():
                boxes.append((ax, what, text.get_window_extent(renderer)))
    return boxes


@pytest.mark.parametrize(("kind_name", "params"), CASES, ids=[f"{k}-{i}" for i, (k, _) in enumerate(CASES)])
def test_labels_stay_inside_the_figure_and_off_the_other_axes(kind_name, params, drawn_figures):
    kind = get_kind(kind_name)
    kind.render(kind.parse(params))
    (figure,) = drawn_figures
    renderer = figure.canvas.get_renderer()
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
                overlap_x = min(box.x1, frame.x1) - max(box.x0, frame.x0)
                overlap_y = min(box.y1, frame.y1) - max(box.y0, frame.y0)
                assert min(overlap_x, overlap_y) <= tolerance, f"{what} overlaps another axes"
    for index, (ax, what, box) in enumerate(boxes):
        for other_ax, other_what, other_box in boxes[index + 1:]:
            if other_ax is not ax:
                overlap_x = min(box.x1, other_box.x1) - max(box.x0, other_box.x0)
                overlap_y = min(box.y1, other_box.y1) - max(box.y0, other_box.y0)
                assert min(overlap_x, overlap_y) <= tolerance, f"{what} overlaps {other_what}"
