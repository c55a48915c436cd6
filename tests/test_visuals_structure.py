"""The structural visuals: long-range, head-split, position-encoding, autoregressive-pixels, complexity.

Each: deterministic bytes, alt text checked against numbers computed here, figure properties, params.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from matplotlib.patches import Rectangle
from pydantic import ValidationError

from app import engine
from app.plots.autoregressive_pixels import draw_autoregressive_pixels
from app.plots.complexity import draw_complexity
from app.plots.head_split import draw_head_split
from app.plots.long_range import draw_long_range
from app.plots.position_encoding import draw_position_encoding
from app.visuals import check_visual, get_kind
from app.visuals.kinds import autoregressive_pixels, complexity, head_split, long_range, position_encoding

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
MY_KINDS = ("long-range", "head-split", "position-encoding", "autoregressive-pixels", "complexity")

# Worst-case (largest) params within the bounds; the complexity kind measures for real here.
WORST_CASE = {
    "long-range": {"max_distance": 512, "distance": 512},
    "head-split": {"d_model": 4096, "num_heads": 64},
    "position-encoding": {"length": 512, "d_model": 256, "train_length": 1},
    "autoregressive-pixels": {"height": 16, "width": 16, "row": 15, "col": 15},
    "complexity": {"d": 256, "l": 256, "max_n": 2048},
}


def quadratic_seconds(sizes, d, l):
    """Stand-in for the measurement: 0.1 µs overhead plus N²·(d + l)·0.1 ns, so the slope is ~2."""
    sizes = np.asarray(sizes, dtype=float)
    return 1e-7 + sizes**2 * (d + l) * 1e-10


@pytest.fixture
def stub_timing(monkeypatch):
    monkeypatch.setattr(complexity, "measure_attention_seconds", quadratic_seconds)


def texts_of(figure) -> list[str]:
    """Every string drawn in the axes: Text artists and the cell numbers drawn as glyph outlines."""
    return [*(text.get_text() for ax in figure.axes for text in ax.texts),
            *(label for ax in figure.axes for collection in ax.collections
              for label in getattr(collection, "cell_texts", ()))]


def parse(kind_name: str, values: dict):
    return get_kind(kind_name).parse(values)


def message_of(error: pytest.ExceptionInfo) -> str:
    return str(error.value)


# --- shared contract ------------------------------------------------------------------------------


@pytest.mark.parametrize("kind_name", MY_KINDS)
def test_default_render_is_deterministic_and_well_formed(kind_name, stub_timing):
    kind = get_kind(kind_name)
    params = kind.parse({})  # the seed questions use the defaults
    first, second = kind.render(params), kind.render(params)
    assert first.image == second.image
    assert first.alt == second.alt and first.alt
    if kind.format == "svg":
        assert first.mimetype == "image/svg+xml"
        assert first.image.startswith(b"<?xml") and b"<svg" in first.image[:500]
    else:
        assert first.mimetype == "image/png"
        assert first.image.startswith(PNG_SIGNATURE)


@pytest.mark.parametrize("kind_name", MY_KINDS)
def test_controls_match_the_field_bounds(kind_name):
    kind = get_kind(kind_name)
    fields = kind.Params.model_fields
    assert kind.learn.startswith("/learn/")
    assert {control.name for control in kind.controls} == set(fields)
    for control in kind.controls:
        bounds = {type(item).__name__: item for item in fields[control.name].metadata}
        assert control.label
        assert control.type == "int" and control.step in (1, 2)
        assert control.min == bounds["Ge"].ge, control.name
        assert control.max == bounds["Le"].le, control.name


@pytest.mark.parametrize("kind_name", MY_KINDS)
def test_check_visual_accepts_the_defaults_and_names_an_unknown_param(kind_name):
    assert check_visual(kind_name, {}) == []
    problems = check_visual(kind_name, {"colour": "red"})
    assert problems == [(("params", "colour"), "unknown parameter 'colour'")]


@pytest.mark.parametrize("kind_name", MY_KINDS)
def test_worst_case_params_render(kind_name):
    kind = get_kind(kind_name)
    rendered = kind.render(kind.parse(WORST_CASE[kind_name]))
    assert rendered.image and rendered.alt


# --- long-range -----------------------------------------------------------------------------------


def test_long_range_alt_and_lines_count_steps():
    params = parse("long-range", {"max_distance": 40, "distance": 9})
    figure, alt = draw_long_range(long_range.long_range_result(params))
    assert "k = 9 apart" in alt and "9 steps in an RNN" in alt and "1 step in self-attention" in alt
    assert "n = 10 tokens" in alt and "RNN 10 sequential steps" in alt and "1 parallel step" in alt
    path_ax, steps_ax = figure.axes
    rnn, attention = path_ax.lines[0], path_ax.lines[1]
    # An RNN step per token of distance; one attention hop whatever the distance.
    assert list(rnn.get_xdata()) == list(range(1, 41)) and list(rnn.get_ydata()) == list(range(1, 41))
    assert set(attention.get_ydata()) == {1}
    assert list(steps_ax.lines[0].get_ydata()) == list(range(1, 42))
    assert "k = 9: RNN 9 steps,\nattention 1 step" in texts_of(figure)
    assert path_ax.get_xlabel() == "distance k between the two tokens"


def test_long_range_rejects_a_distance_beyond_the_plot():
    with pytest.raises(ValidationError) as error:
        parse("long-range", {"max_distance": 32, "distance": 40})
    assert "distance (40) must be at most max_distance (32)" in message_of(error)
    problems = check_visual("long-range", {"max_distance": 1000})
    assert problems == [(("params", "max_distance"), "max_distance must be at most 512, got 1000")]


def test_long_range_coerces_query_strings_and_refuses_fractions():
    assert parse("long-range", {"max_distance": "20", "distance": " 8 "}).distance == 8
    with pytest.raises(ValidationError):
        parse("long-range", {"distance": "2.5"})
    assert check_visual("long-range", {"distance": "many"}) == [
        (("params", "distance"), "distance must be a whole number, got 'many'")
    ]


# --- head-split -----------------------------------------------------------------------------------


def test_head_split_alt_and_blocks_come_from_the_engine_split():
    params = parse("head-split", {})
    figure, alt = draw_head_split(head_split.head_split_result(params))
    heads = engine.split_heads(np.zeros((1, 128)), 4)  # (h, 1, d_k)
    assert heads.shape == (4, 1, 32)
    assert alt.startswith(
        "Shape diagram. d_model = 128 split into 4 heads of 32 features each (head i takes columns i·32"
    )
    assert "concatenated back to 128, then multiplied by W_O (128×128) to give N × 128" in alt
    texts = texts_of(figure)
    assert [t for t in texts if t.startswith("head ")] == [f"head {i}\nd_k = 32" for i in range(4)]
    assert "concat\nN × (4·32)\n= N × 128" in texts
    assert "multiply by W_O (128 × 128), which mixes the heads" in texts
    # The column numbers at the head boundaries: head i starts at column i·d_k.
    assert [t for t in texts if t.isdigit()] == ["0", "32", "64", "96", "128"]


def test_head_split_groups_many_heads_but_states_the_count():
    result = head_split.head_split_result(parse("head-split", {"d_model": 4096, "num_heads": 64}))
    assert result.head_columns[63] == (4032, 4095)
    figure, alt = draw_head_split(result)
    texts = texts_of(figure)
    labelled = [t.split("\n")[0] for t in texts if t.startswith("head ")]
    assert labelled == ["head 0", "head 1", "head 2", "head 62", "head 63"]
    assert "59 more:\nheads 3–61,\nd_k = 64 each" in texts
    assert "64 heads\neach N × 64" in texts
    assert "64 heads of 64 features" in alt and "Heads 3 to 61 are grouped" in alt


def test_head_split_refuses_heads_that_do_not_divide_d_model_with_the_engines_sentence():
    with pytest.raises(ValueError) as engine_error:
        engine.split_heads(np.zeros((1, 130)), 4)
    with pytest.raises(ValidationError) as error:
        parse("head-split", {"d_model": "130", "num_heads": "4"})
    assert str(engine_error.value) in message_of(error)
    assert "d_model=130 is not divisible by num_heads=4" in message_of(error)
    problems = check_visual("head-split", {"d_model": 130, "num_heads": 4})
    assert len(problems) == 1 and problems[0][1].startswith("d_model=130 is not divisible by num_heads=4")
    assert check_visual("head-split", {"num_heads": 65})[0][1] == "num_heads must be at most 64, got 65"
    assert parse("head-split", {"d_model": "96", "num_heads": "12"}).num_heads == 12


# --- position-encoding ----------------------------------------------------------------------------


def naive_nearest_distances(encoding: np.ndarray) -> np.ndarray:
    """For each position, the distance to its nearest other position, from direct differences."""
    length = len(encoding)
    nearest = np.full(length, np.inf)
    for p in range(length):
        for q in range(length):
            if p != q:
                nearest[p] = min(nearest[p], float(np.sqrt(np.sum((encoding[p] - encoding[q]) ** 2))))
    return nearest


def number_after(prefix: str, text: str) -> float:
    match = re.search(re.escape(prefix) + r" ([0-9.e+-]+)", text)
    assert match, f"{prefix!r} not in {text!r}"
    return float(match.group(1).rstrip("."))


def test_position_encoding_alt_names_spread_min_distance_and_the_positions_beyond_training():
    params = parse("position-encoding", {"length": 40, "d_model": 8, "train_length": 24})
    result = position_encoding.position_encoding_result(params)
    figure, alt = draw_position_encoding(result)
    encoding = engine.sinusoidal_positional_encoding(40, 8)

    # PE(p)·PE(p+k) by a plain loop for p = 0, 10, 20: the curves agree to rounding.
    curves = [[float(sum(encoding[p, i] * encoding[p + k, i] for i in range(8))) for k in range(20)]
              for p in (0, 10, 20)]
    naive_spread = float(np.max(np.ptp(np.array(curves), axis=0)))
    assert naive_spread < 1e-12
    assert number_after("the largest spread between the curves is", alt) < 1e-12
    assert "for p = 0, 10, 20 coincide for every offset k from 0 to 19" in alt

    nearest = naive_nearest_distances(encoding)
    assert number_after("The smallest distance between two different positions is", alt) == pytest.approx(
        nearest.min(), rel=2e-3)
    # Distances depend only on |p - q|; the first closest pair is position 0 and the offset nearest a
    # whole number of turns of the fastest wave (6 radians ≈ 2π).
    offset = 1 + int(np.argmin([np.linalg.norm(encoding[0] - encoding[k]) for k in range(1, 40)]))
    assert offset == 6 and f"(positions 0 and {offset})" in alt
    assert "Positions 24 to 39 lie beyond the training length 24 and are still defined and unique" in alt
    assert number_after("each at least", alt) == pytest.approx(nearest[24:].min(), rel=2e-3)

    heat_ax, wave_ax, dot_ax, unique_ax = figure.axes[:4]
    image = heat_ax.images[0]
    assert image.get_clim() == (-1.0, 1.0)  # sin and cos's true range
    np.testing.assert_array_equal(image.get_array(), encoding)
    assert (heat_ax.get_ylabel(), heat_ax.get_xlabel()) == ("position p", "dimension")
    assert [line.get_label() for line in wave_ax.lines] == ["0 sin", "1 cos", "4 sin", "5 cos", "6 sin"]
    assert [line.get_label() for line in dot_ax.lines] == ["p = 0", "p = 10", "p = 20"]
    np.testing.assert_allclose(unique_ax.lines[0].get_ydata(), nearest, atol=1e-9)
    shaded = [patch for patch in unique_ax.patches if patch.get_label() == "beyond training length"]
    assert len(shaded) == 1 and shaded[0].get_x() == pytest.approx(23.5)


def test_position_encoding_nearly_colliding_positions_are_reported_honestly():
    # With one frequency (d_model = 2), positions 0 and 333 are 333 radians ≈ 53 turns apart.
    result = position_encoding.position_encoding_result(
        parse("position-encoding", {"length": 400, "d_model": 2, "train_length": 400}))
    _, alt = draw_position_encoding(result)
    assert result.closest_pair == (0, 333)
    assert "is 0.00882 (positions 0 and 333)" in alt
    assert "All 400 positions are within the training length 400." in alt


def test_position_encoding_params_cross_checks():
    with pytest.raises(ValidationError) as error:
        parse("position-encoding", {"length": 30, "train_length": 40})
    assert "train_length (40) must be at most length (30)" in message_of(error)
    with pytest.raises(ValidationError) as error:
        parse("position-encoding", {"d_model": 33})
    assert "d_model must be even, got 33" in message_of(error)
    assert check_visual("position-encoding", {"length": "513"}) == [
        (("params", "length"), "length must be at most 512, got '513'")
    ]
    assert parse("position-encoding", {"length": "100", "d_model": "16", "train_length": "50"}).d_model == 16


# --- autoregressive-pixels ------------------------------------------------------------------------


def test_autoregressive_alt_counts_come_from_the_causal_mask():
    params = parse("autoregressive-pixels", {})
    figure, alt = draw_autoregressive_pixels(autoregressive_pixels.autoregressive_pixels_result(params))
    # Raster order by a plain loop: rows top to bottom, left to right within a row.
    order = [(r, c) for r in range(6) for c in range(6)]
    index = order.index((3, 2))
    assert index == 20
    allowed = [j for j in range(36) if engine.causal_mask(36)[index, j]]
    assert alt.endswith(
        f"Pixel (3, 2) is number {index} in raster order; under the causal mask it may attend to "
        f"{len(allowed)} pixels (0–{allowed[-1]}) and not to the {36 - len(allowed)} after it."
    )
    assert (len(allowed), 36 - len(allowed)) == (21, 15)

    grid_ax, mask_ax = figure.axes[:2]
    state = grid_ax.images[0].get_array()
    assert int((state > 0).sum()) == 21 and state[3, 2] == 2 and state[3, 3] == 0
    np.testing.assert_array_equal(mask_ax.images[0].get_array(), engine.causal_mask(36).astype(int))
    assert mask_ax.images[0].get_clim() == (0, 1)
    assert "query" in mask_ax.get_ylabel() and "key" in mask_ax.get_xlabel()
    highlighted = [p for p in mask_ax.patches if isinstance(p, Rectangle) and p.get_height() == 1]
    assert len(highlighted) == 1 and highlighted[0].get_y() == pytest.approx(19.5)
    assert sorted(t for t in texts_of(figure) if t.isdigit()) == sorted(str(i) for i in range(36))


def test_autoregressive_edge_pixels():
    result = autoregressive_pixels.autoregressive_pixels_result(
        parse("autoregressive-pixels", {"height": "2", "width": "3", "row": "0", "col": "0"}))
    _, alt = draw_autoregressive_pixels(result)
    assert "may attend to 1 pixel (0) and not to the 5 after it." in alt
    result = autoregressive_pixels.autoregressive_pixels_result(
        parse("autoregressive-pixels", {"height": 2, "width": 3, "row": 1, "col": 2}))
    _, alt = draw_autoregressive_pixels(result)
    assert alt.endswith("Pixel (1, 2) is number 5 in raster order; under the causal mask it may attend to "
                        "6 pixels (0–5); it is the last pixel, so none come after it.")


def test_autoregressive_refuses_a_pixel_outside_the_image():
    with pytest.raises(ValidationError) as error:
        parse("autoregressive-pixels", {"height": 4, "width": 4, "row": 3, "col": 5})
    sentence = "pixel (row 3, col 5) lies outside the 4 × 4 image: choose row from 0 to 3 and col from 0 to 3"
    assert sentence in message_of(error)
    problems = check_visual("autoregressive-pixels", {"height": 4, "row": 4})
    assert len(problems) == 1 and "lies outside the 4 × 6 image" in problems[0][1]
    assert check_visual("autoregressive-pixels", {"width": 17})[0][1] == "width must be at most 16, got 17"


# --- complexity -----------------------------------------------------------------------------------


def test_complexity_alt_and_count_curves_use_n_m_d_plus_l(stub_timing):
    result = complexity.complexity_result(parse("complexity", {}))
    figure, alt = draw_complexity(result)
    assert 512 * 512 * (64 + 64) == 33_554_432
    assert "At N = M = 512 with d = 64, l = 64: 512·512·(64+64) = 33,554,432 multiply-adds" in alt
    assert "(Q Kᵀ 16,777,216, weights·V 16,777,216)" in alt
    assert "grows with fitted slope 2.0 on a log-log plot" in alt  # the stub is ~N²

    count_ax, time_ax = figure.axes[:2]
    assert count_ax.get_xscale() == count_ax.get_yscale() == "log"
    total = next(line for line in count_ax.lines if line.get_label() == "total N·M·(d+l)")
    n = total.get_xdata()
    np.testing.assert_array_equal(total.get_ydata(), [float(x * x * 128) for x in n])
    assert (n[0], n[-1]) == (16, 512)
    measured = time_ax.lines[0]
    assert measured.get_label() == "measured (fitted slope 2.0)"
    np.testing.assert_allclose(measured.get_ydata(), quadratic_seconds(result.timed_n, 64, 64) * 1e3)
    assert time_ax.get_ylabel() == "wall time (ms)"


def test_complexity_asymmetric_widths_and_the_fitted_slope():
    params = parse("complexity", {"d": "1", "l": "200", "max_n": "100"})
    sizes = complexity.size_grid(100, complexity.TIMED_SIZES)
    assert sizes[0] == 12 and sizes[-1] == 100 and len(sizes) == 7  # the grid spans a factor of 8
    cubic = sizes.astype(float) ** 3 * 1e-9
    result = complexity.complexity_result(params, seconds=cubic)
    _, alt = draw_complexity(result)
    assert result.slope == pytest.approx(3.0)
    assert "100·100·(1+200) = 2,010,000 multiply-adds (Q Kᵀ 10,000, weights·V 2,000,000)" in alt
    assert "fitted slope 3.0" in alt


def test_complexity_measurement_is_bounded_by_its_budget(monkeypatch):
    calls = []

    def counting_attention(q, k, v):
        calls.append(q.shape[0])
        return None

    monkeypatch.setattr(complexity, "scaled_dot_product_attention", counting_attention)
    clock = iter(range(10_000))  # a fake timer: every reading is one second later
    seconds = complexity.measure_attention_seconds([16, 32, 64], 8, 8, timer=lambda: float(next(clock)),
                                                   budget_seconds=0.5)
    # The warm-up, then each size exactly once: a second round would overrun the budget.
    assert calls == [16, 16, 32, 64]
    assert list(seconds) == [1.0, 1.0, 1.0]


def test_complexity_real_measurement_is_positive_and_finite():
    seconds = complexity.measure_attention_seconds([8, 16], 4, 4, max_repeats=2)
    assert seconds.shape == (2,) and np.all(np.isfinite(seconds)) and np.all(seconds > 0)


def test_complexity_params():
    assert check_visual("complexity", {"max_n": 8}) == [
        (("params", "max_n"), "max_n must be at least 16, got 8")
    ]
    assert check_visual("complexity", {"d": 0, "l": 300}) == [
        (("params", "d"), "d must be at least 1, got 0"),
        (("params", "l"), "l must be at most 256, got 300"),
    ]
    assert parse("complexity", {"max_n": "1024"}).max_n == 1024

