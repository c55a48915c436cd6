"""The "position-encoding" visual: one panel per property of Q7 (relative, unique, any length), each claim of
its alt text and caption checked against naive recomputations over the whole parameter space, and the
student's ticks marked on the panels."""

from __future__ import annotations

import math
import re
from itertools import combinations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from app import engine
from app.visuals import check_visual, get_kind
from app.visuals.base import NARROW_WIDTH
from app.visuals.kinds.position_encoding import FINE_SAMPLES, OPTIONS

from .helpers import computed

KIND = "position-encoding"
# Every subset of Q7's options, in the options' order, joined by "," as the answer page passes them.
CHOICES = tuple(",".join(subset) for size in range(len(OPTIONS) + 1) for subset in combinations(OPTIONS, size))


def naive_encoding(length: int, d_model: int) -> np.ndarray:
    """PE[p, 2i] = sin(p / 10000^(2i/d)), PE[p, 2i+1] = cos(p / 10000^(2i/d)), entry by entry."""
    encoding = np.zeros((length, d_model))
    for p in range(length):
        for i in range(d_model // 2):
            angle = p / 10000 ** (2 * i / d_model)
            encoding[p, 2 * i], encoding[p, 2 * i + 1] = math.sin(angle), math.cos(angle)
    return encoding


def naive_distances(encoding: np.ndarray) -> np.ndarray:
    """(length, length) ||PE(p) − PE(q)|| from direct differences, one row at a time."""
    return np.array([np.sqrt(((encoding - row) ** 2).sum(axis=1)) for row in encoding])


def number_after(prefix: str, text: str) -> float:
    match = re.search(re.escape(prefix) + r" ([0-9.e+−-]+)", text)
    assert match, f"{prefix!r} not in {text!r}"
    return float(match.group(1).rstrip(".").replace("−", "-"))


def stated_within(prefix: str, text: str) -> float:
    """The number of "<prefix> to within 1e-15" (0 for "<prefix> exactly")."""
    match = re.search(re.escape(prefix) + r" ?(exactly|to within ([0-9.e+-]+))", text)
    assert match, f"{prefix!r} not in {text!r}"
    return 0.0 if match.group(1) == "exactly" else float(match.group(2))


def words_and_result(values: dict):
    kind = get_kind(KIND)
    params = kind.parse(values)
    result = kind.compute(params)
    return params, result, kind.alt(params, result), kind.caption(params, result)


PARAMS = st.tuples(st.integers(2, 512), st.integers(1, 128).map(lambda half: 2 * half)).flatmap(
    lambda sizes: st.tuples(st.just(sizes[0]), st.just(sizes[1]), st.integers(1, sizes[0]),
                            st.sampled_from(CHOICES)))


def check_claims(length: int, d_model: int, train_length: int, choice: str) -> None:
    """Every claim of the alt text and caption, against numbers recomputed without the kind."""
    _, result, alt, caption = words_and_result(
        {"length": length, "d_model": d_model, "train_length": train_length, "choice": choice})
    encoding = engine.sinusoidal_positional_encoding(length, d_model)
    np.testing.assert_array_equal(result.encoding, encoding)

    # (a) Relative: every diagonal of PE·PEᵀ is constant, at PE(0)·PE(k); the main one is d/2.
    similarity = encoding @ encoding.T
    deviation = max(float(np.max(np.abs(np.diagonal(similarity, offset) - similarity[0, abs(offset)])))
                    for offset in range(-(length - 1), length))
    stated = stated_within("equals PE(0)·PE(|q − p|)", alt)
    assert stated == pytest.approx(deviation, rel=0.05, abs=1e-300) and deviation < 1e-9  # 2 figures below 1e-3
    assert f"its diagonal is PE(p)·PE(p) = {d_model // 2:g}." in alt
    assert f"PE(p)·PE(p) = d/2 = {d_model // 2:g}." in caption

    # (b) Unique: the distance at each offset, the same from every p; the closest offset and its words.
    distances = naive_distances(encoding)
    from_zero = distances[0]
    spread = max(float(np.ptp(np.diagonal(distances, offset))) for offset in range(length))
    assert stated_within("the same for every p (", alt) <= 2 * spread + 1e-12 and spread < 1e-9
    np.testing.assert_allclose(result.offset_distance, from_zero, atol=1e-12)
    off_diagonal = distances + np.diag(np.full(length, np.inf))
    smallest = float(off_diagonal.min())
    assert smallest > 0
    if length > 2:
        assert "no two positions share an encoding" in alt
    else:
        assert "so the two positions have different encodings" in alt
    k = 1 + int(np.argmin(from_zero[1:]))
    assert result.closest_offset == k and from_zero[k] == pytest.approx(smallest, rel=1e-9)
    if length == 2:
        assert f"The only pair, positions 0 and 1, is {result.min_distance:.3g} apart" in alt
        assert smallest > 0
    elif k == 1:
        assert f"The closest positions are neighbours (k = 1), {smallest:.3g} apart" in alt
        assert np.all(from_zero[2:] > from_zero[1])  # "every larger offset is further apart, at least ..."
        if length > 2:
            assert number_after("every larger offset is further apart, at least", alt) == pytest.approx(
                from_zero[2:].min(), rel=5e-3)
        # Never "the distance grows with k" where it does not: where it falls somewhere, the words say where.
        falls = np.diff(from_zero[1:])
        assert ("does not grow steadily with k" in alt) == bool(falls.size and falls.min() < 0)
        if "does not grow steadily" in alt:
            j = int(falls.argmin()) + 1
            assert f"k = {j + 1} is " in alt and f"closer than k = {j} at" in alt
            assert from_zero[j + 1] < from_zero[j]
    else:
        assert f"The closest positions are {k} apart (positions 0 and {k}, or any pair {k} apart)" in alt
        assert from_zero[k] < from_zero[1]  # "closer than neighbours"
        turns = round(k / (2 * math.pi))
        assert f"{k} ≈ {turns} × 2π = {turns * 2 * math.pi:.2f}" in alt
        assert abs(k - turns * 2 * math.pi) < 0.5  # "nearly a whole number of turns of the fastest wave"
    assert number_after("closest offset k = " + str(k) + ", PE(0)·PE(" + str(k) + ") =", caption) == pytest.approx(
        similarity[0, k], abs=1e-4)
    assert caption.endswith(".") and f"= {smallest:.3g}. A collision" in caption
    assert ("with d_model = 2 the encoding is a single sine and cosine pair" in alt) == (d_model == 2)
    near = smallest < 0.1 * from_zero[1]
    assert (f"positions 0 and {k} nearly collide" in alt) == near

    # (c) Any length: the drawn pairs and their periods 2π / ω_i, ω_i = 10000^(−2i/d).
    pairs = [wave.pair for wave in result.waves]
    assert pairs == sorted(set(pairs)) and pairs[0] == 0 and pairs[-1] == d_model // 2 - 1
    periods = [2 * math.pi * 10000 ** (2 * i / d_model) for i in pairs]
    np.testing.assert_allclose([wave.period for wave in result.waves], periods, rtol=1e-9)
    if len(pairs) > 1:
        assert "the waves slow down from dimension 0 to dimension" in alt
        assert all(a < b for a, b in zip(periods, periods[1:]))
    else:
        assert "slow down" not in alt and d_model == 2
    for wave in result.waves:  # the fine curves pass through the engine's values at whole positions
        np.testing.assert_allclose(wave.fine_sine[::FINE_SAMPLES], encoding[:, 2 * wave.pair], atol=1e-11)
        np.testing.assert_allclose(wave.fine_cosine[::FINE_SAMPLES], encoding[:, 2 * wave.pair + 1], atol=1e-11)
    if train_length < length:
        trained = naive_encoding(train_length, d_model)
        assert np.max(np.abs(trained - encoding[:train_length])) < 1e-9
        assert f"the same encoding whether the engine computes {train_length} or {length} positions" in alt
        unseen = float(distances[train_length:, :train_length].min())
        assert number_after("no position past training comes closer than", alt) == pytest.approx(unseen, rel=6e-3)
        assert unseen > 0
        assert "The dashed square in (a)" in caption
    else:
        assert "positions lie within the training length" in alt and "dashed square" not in caption

    # The student's ticks: all three options are correct, so the words name the ones left out.
    chosen = [option for option in OPTIONS if option in choice.split(",")]
    missed = [option for option in OPTIONS if option not in chosen]
    if not chosen:
        assert alt.endswith("All three properties hold.")
    elif not missed:
        assert "You ticked all three options, and each is correct" in alt
    else:
        assert "You ticked " in alt and "correct too" in alt
        sentence = alt[alt.index("You ticked "):]
        ticked_part, missed_part = sentence.split(";", 1)
        for option in OPTIONS:
            name = {"any-length": "any length"}.get(option, option)
            assert (f"'{name}'" in ticked_part) == (option in chosen)
            assert (f"'{name}'" in missed_part.split(":")[0]) == (option in missed)


@settings(max_examples=40, deadline=None)
@given(PARAMS)
def test_every_claim_holds_for_every_length_width_training_length_and_choice(values):
    check_claims(*values)


@pytest.mark.parametrize("values", [
    (2, 2, 1, ""), (2, 2, 2, "unique"), (7, 2, 3, ""), (6, 2, 6, ""), (44, 2, 44, ""), (45, 2, 20, ""),
    (512, 2, 100, "unique"), (512, 4, 1, ""), (512, 6, 511, ""), (100, 8, 99, "relative"),
    (512, 256, 1, "any-length"), (64, 32, 32, "unique,relative,any-length"),
])
def test_the_claims_at_the_degenerate_corners(values):
    check_claims(*values)


def test_uniqueness_words_hold_for_every_width_and_length():
    """The wording of (b) picks one of four cases from the closest offset; check the facts each case states
    for every (length, d_model) the controls accept, from the distances at each offset."""
    for d_model in range(2, 257, 2):
        encoding = naive_encoding(512, d_model) if d_model <= 8 else engine.sinusoidal_positional_encoding(512, d_model)
        from_zero = np.sqrt(((encoding - encoding[0]) ** 2).sum(axis=1))  # (512,)
        for length in range(2, 513):
            distances = from_zero[:length]
            k = 1 + int(np.argmin(distances[1:]))
            assert distances[k] > 0
            if k == 1:
                assert np.all(distances[2:] > distances[1])
            else:
                assert distances[k] < distances[1]
                assert abs(k - round(k / (2 * math.pi)) * 2 * math.pi) < 0.5
            # Near-collisions (under a tenth of the neighbours' distance) happen only at d_model = 2.
            assert (distances[k] < 0.1 * distances[1]) == (d_model == 2 and length > 44)
        # /learn says: from d = 12 up the closest positions are neighbours at every length.
        assert np.all(from_zero[2:] > from_zero[1]) == (d_model >= 12)


def test_d_model_2_never_repeats_exactly_but_positions_0_and_333_nearly_collide():
    params, result, alt, caption = words_and_result({"length": 400, "d_model": 2, "train_length": 400})
    assert result.closest_offset == 333 and result.near_collision
    assert "(positions 0 and 333, or any pair 333 apart): 0.00882, closer than neighbours (0.959)" in alt
    assert "only because 2π is irrational" in alt and "positions 0 and 333 nearly collide" in alt
    assert "Both" not in alt and "All 400 positions lie within the training length 400" in alt
    # The caption's hand computation gives the same distance from its printed numbers.
    dot = number_after("PE(0)·PE(333) =", caption)
    assert math.sqrt(2 - 2 * dot) == pytest.approx(result.min_distance, rel=2e-3)


# --- the figure -------------------------------------------------------------------------------------------


def panel_axes(figure):
    """(a)'s matrix, (b)'s distances and (c)'s strips (the colour bar left out)."""
    titled = [ax for ax in figure.axes if ax.get_title(loc="left")]
    heat, distance, first_strip = titled
    strips = [ax for ax in figure.axes if ax.get_ylabel().startswith("dims ")]
    assert strips[0] is first_strip
    return heat, distance, strips


def test_figure_draws_the_engine_numbers():
    params, result, figure, alt, caption = computed(KIND, {"length": 40, "d_model": 8, "train_length": 24})
    encoding = naive_encoding(40, 8)
    heat, distance, strips = panel_axes(figure)

    image = heat.images[0]
    np.testing.assert_allclose(image.get_array(), encoding @ encoding.T, atol=1e-12)
    assert image.get_clim() == pytest.approx(((encoding @ encoding.T).min(), 4.0))  # the data's range
    assert (heat.get_ylabel(), heat.get_xlabel()) == ("position p", "position q")
    squares = [patch for patch in heat.patches if patch.get_width() == 24 and patch.get_height() == 24]
    assert len(squares) == 2  # the trained positions' square, drawn twice (black under white dashes)

    dots = distance.lines[0]
    np.testing.assert_allclose(dots.get_xdata(), range(1, 40))
    np.testing.assert_allclose(dots.get_ydata(), naive_distances(encoding)[0, 1:], atol=1e-12)
    ring = distance.lines[2]
    assert list(ring.get_xdata()) == [result.closest_offset] == [6]
    assert distance.get_ylim()[0] == 0  # a collision would touch the axis
    legend = [text.get_text() for text in distance.get_legend().get_texts()]
    assert legend[-1] == "closest: k = 6, 0.658"

    assert [ax.get_ylabel() for ax in strips] == ["dims 0, 1\nperiod 6.28", "dims 2, 3\nperiod 62.8",
                                                 "dims 4, 5\nperiod 628", "dims 6, 7\nperiod 6,283"]
    for ax, pair in zip(strips, (0, 1, 2, 3)):
        sine, cosine, sine_dots, cosine_dots = ax.lines
        assert cosine.get_linestyle() == "--" and sine.get_linestyle() == "-"  # told apart by style too
        np.testing.assert_allclose(sine.get_ydata()[::FINE_SAMPLES], encoding[:, 2 * pair], atol=1e-11)
        np.testing.assert_allclose(sine_dots.get_ydata(), encoding[:, 2 * pair], atol=1e-12)
        np.testing.assert_allclose(cosine_dots.get_ydata(), encoding[:, 2 * pair + 1], atol=1e-12)
        (shade,) = ax.patches
        assert shade.get_x() == pytest.approx(23.5)
    legend = [text.get_text() for text in strips[0].get_legend().get_texts()]
    assert legend == ["sin, dim 2i (solid)", "cos, dim 2i+1 (dashed)", "past training: p ≥ 24"]


def test_no_shading_when_nothing_lies_past_training_and_a_too_fast_wave_is_a_band_on_a_phone():
    kind = get_kind(KIND)
    params = kind.parse({"length": 512, "d_model": 16, "train_length": 512})
    result = kind.compute(params)
    narrow = kind.draw(params, result, kind.figure_inches(params, "narrow"))
    assert kind.figure_inches(params, "narrow")[0] == NARROW_WIDTH
    _, _, strips = panel_axes(narrow)
    assert all(not ax.patches for ax in strips[1:])  # nothing past training
    assert strips[0].get_ylabel() == "dims 0, 1\nperiod 6.28\n81 turns: a band"
    assert not strips[0].lines and strips[0].collections  # the band, not an aliased curve
    assert "all 512 positions lie within the training length T = 512" in strips[0].get_title(loc="left")
    wide = kind.draw(params, result, kind.figure_inches(params))
    assert len(panel_axes(wide)[2][0].lines) == 2  # 7.7 pixels a turn on the wide image: drawn


@pytest.mark.parametrize(("choice", "ticked"), [
    ("", ()), ("unique", ("unique",)), ("relative, unique", ("unique", "relative")),
    ("any-length,relative,unique", OPTIONS),
])
def test_the_panels_mark_the_students_ticks_and_the_true_options_left_out(choice, ticked):
    params, result, figure, alt, caption = computed(KIND, {"choice": choice})
    assert params.choice == ",".join(ticked) and result.chosen == ticked
    heat, distance, strips = panel_axes(figure)
    titles = {"relative": heat.get_title(loc="left"), "unique": distance.get_title(loc="left"),
              "any-length": strips[0].get_title(loc="left")}
    for option, title in titles.items():
        first_line = title.split("\n")[0]
        if not ticked:
            assert "✓" not in first_line and "✗" not in first_line
        elif option in ticked:
            assert first_line.endswith("✓ you ticked it")
        else:
            assert first_line.endswith("✗ not ticked, but it holds")
    assert (choice != "") == ("You ticked" in caption)


def test_choice_takes_the_answer_pages_ids_in_any_order_and_refuses_others():
    kind = get_kind(KIND)
    assert kind.choice_param == "choice" and "choice" not in {control.name for control in kind.controls}
    assert kind.parse({"choice": "any-length,unique"}).choice == "unique,any-length"
    assert kind.parse({"choice": "relative, unique,relative"}).choice == "unique,relative"
    assert kind.parse({}).choice == ""
    for bogus, unknown in (("unique,noise", "noise"), ("position", "position"), ("unique;relative", "unique;relative")):
        problems = check_visual(KIND, {"choice": bogus})
        assert len(problems) == 1 and problems[0][0] == ("params", "choice")
        assert f"choice must name options among unique, relative, any-length; got {unknown}" in problems[0][1]


def test_params_cross_checks():
    kind = get_kind(KIND)
    with pytest.raises(ValidationError) as error:
        kind.parse({"length": 30, "train_length": 40})
    assert "train_length (40) must be at most length (30)" in str(error.value)
    with pytest.raises(ValidationError) as error:
        kind.parse({"d_model": 33})
    assert "d_model must be even, got 33" in str(error.value)
    assert check_visual(KIND, {"length": "513"}) == [
        (("params", "length"), "length must be at most 512, got '513'")
    ]
    assert kind.parse({"length": "100", "d_model": "16", "train_length": "50"}).d_model == 16


@pytest.mark.parametrize("train_length, words", [(1, "position 0 gets the same encoding"),
                                                 (2, "the first 2 positions get the same encoding")])
def test_the_positions_before_the_training_length_are_named_in_good_english(train_length, words):
    kind = get_kind(KIND)
    alt = kind.describe(kind.parse({"train_length": train_length})).alt
    assert words in alt and "the first 1 position" not in alt
