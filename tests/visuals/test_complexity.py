"""The "complexity" visual (Q9): the exact count N·M·(d + l) from attention_flops against the four options'
formulas, one variable swept at a time, each option scaled to the count at the sweep's first point.

The option formulas and the sweeps' expectations are written here again, from the question's option
texts, so that a slip in the kind's table shows up."""

from __future__ import annotations

import math
import re
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.engine import attention_flops
from app.visuals import check_visual, get_kind
from app.visuals.base import LAYOUTS, NARROW_WIDTH
from app.visuals.kinds import complexity

from .helpers import texts_of

KIND = get_kind("complexity")
BOUNDS = {"N": (1, 2048), "M": (1, 2048), "d": (1, 256), "l": (1, 256)}
FIELD = {"N": "n", "M": "m", "d": "d", "l": "l"}

# The question's options (quizzes/attention-transformers.yaml), with constant 1, of (N, M, d, l).
FORMULAS = {
    "nm-d-plus-l": ("O(NM(d+l))", lambda n, m, d, l: n * m * (d + l)),
    "nm2-dl": ("O(NM²dl)", lambda n, m, d, l: n * m**2 * d * l),
    "nm2-d2l": ("O(NM²d²l)", lambda n, m, d, l: n * m**2 * d**2 * l),
    "nmd2l": ("O(NMd²l)", lambda n, m, d, l: n * m * d**2 * l),
}
# Each option's power of N, M, d, l alone (d + l is a power of neither).
POWERS = {"nm-d-plus-l": {"N": 1, "M": 1}, "nm2-dl": {"N": 1, "M": 2, "d": 1, "l": 1},
          "nm2-d2l": {"N": 1, "M": 2, "d": 2, "l": 1}, "nmd2l": {"N": 1, "M": 1, "d": 2, "l": 1}}


def naive_multiply_adds(n: int, m: int, d: int, l: int) -> int:  # noqa: E741
    """Q Kᵀ (n × d times d × m) then weights · V (n × m times m × l), counted by their loops."""
    scores = sum(d for _ in range(n) for _ in range(m))
    values = sum(l for _ in range(n) for _ in range(m))
    return scores + values


def at(values: dict, variable: str, x: int) -> tuple[int, int, int, int]:
    sizes = {**values, FIELD[variable]: int(x)}
    return sizes["n"], sizes["m"], sizes["d"], sizes["l"]


def scaled_curve(option: str, values: dict, variable: str, sweep) -> list[Fraction]:
    """The option's formula along the sweep, scaled to equal the exact count at its first point."""
    formula = FORMULAS[option][1]
    first = at(values, variable, sweep[0])
    return [Fraction(formula(*at(values, variable, x)) * attention_flops(*first), formula(*first)) for x in sweep]


def follows_everywhere(option: str, values: dict, variable: str) -> bool:
    """Whether the option, scaled at 1, equals the exact count at every value of the variable's range
    (at the range's ends and a few between: the formulas are polynomials of low degree)."""
    low, high = BOUNDS[variable]
    sweep = sorted({low, 2, 3, 7, 64, high})
    exact = [attention_flops(*at(values, variable, x)) for x in sweep]
    return scaled_curve(option, values, variable, sweep) == exact


def ratio_at(option: str, values: dict, variable: str, x: int) -> Fraction:
    """The option's formula over the exact count at x, each scaled to 1 at the variable's first value, 1:
    what panel (b) draws, here also far past the sweep's end."""
    formula = FORMULAS[option][1]
    return (Fraction(formula(*at(values, variable, x)), formula(*at(values, variable, 1)))
            / Fraction(attention_flops(*at(values, variable, x)), attention_flops(*at(values, variable, 1))))


def bounded(option: str, values: dict, variable: str) -> bool:
    """Whether the option has the count's big-O in the variable: its ratio to the count stays bounded as the
    variable grows without limit. Far past the sweep, at 10¹² and 10¹⁵, a bounded ratio has all but stopped
    changing; one of a higher power has grown a thousandfold."""
    return ratio_at(option, values, variable, 10**15) < 2 * ratio_at(option, values, variable, 10**12)


def limit(option: str, values: dict, variable: str) -> Fraction:
    """What a bounded ratio tends to, by hand: 1 for a formula that lies on the count; against d or l, a
    formula with a product of widths where the count has d + l gains at most the factor (other width) + 1."""
    if ratio_at(option, values, variable, BOUNDS[variable][1]) == 1:
        return Fraction(1)
    return Fraction(values["l" if variable == "d" else "d"] + 1)


def parting_sweeps(option: str, values: dict) -> tuple[str, ...]:
    """The sweeps in which the option's ratio to the count grows without bound, in the order N, M, d, l."""
    return tuple(v for v in BOUNDS if not bounded(option, values, v))


def log_log_slope(f, x: int) -> float:
    """d log f / d log x at x, numerically."""
    step = 1e-6
    return (math.log(f(x * (1 + step))) - math.log(f(x))) / math.log1p(step)


VALUES = st.fixed_dictionaries({"n": st.integers(1, 2048), "m": st.integers(1, 2048), "d": st.integers(1, 256),
                                "l": st.integers(1, 256), "vary": st.sampled_from(["N", "M", "d", "l"]),
                                "choice": st.sampled_from(["", *FORMULAS])})
# The edges count most: the smallest and largest sizes, d = l, d = 1, l = 1.
EDGE_VALUES = st.fixed_dictionaries({"n": st.sampled_from([1, 2, 2048]), "m": st.sampled_from([1, 2, 2048]),
                                     "d": st.sampled_from([1, 2, 255, 256]), "l": st.sampled_from([1, 2, 256]),
                                     "vary": st.sampled_from(["N", "M", "d", "l"]),
                                     "choice": st.sampled_from(["", *FORMULAS])})


def compute(values: dict):
    params = KIND.parse(values)
    result = KIND.compute(params)
    return params, result, KIND.alt(params, result), KIND.caption(params, result)


# --- the numbers ------------------------------------------------------------------------------------------


def test_attention_flops_is_the_loop_count():
    for sizes in [(1, 1, 1, 1), (3, 5, 2, 7), (8, 4, 16, 1)]:
        assert attention_flops(*sizes) == naive_multiply_adds(*sizes)


@settings(max_examples=40, deadline=None)
@given(st.one_of(VALUES, EDGE_VALUES))
def test_curves_are_the_exact_count_and_the_scaled_option_formulas(values):
    params, result, _, _ = compute(values)
    variable = values["vary"]
    own = values[FIELD[variable]]
    sweep = result.sweep
    # The sweep runs over the variable's whole range, through the student's own value.
    assert (sweep[0], sweep[-1]) == BOUNDS[variable]
    assert np.all(np.diff(sweep) > 0) and own in sweep and result.sizes[variable] == own
    exact = [attention_flops(*at(values, variable, x)) for x in sweep]
    np.testing.assert_array_equal(result.exact, np.array(exact, dtype=float))
    assert [curve.option.id for curve in result.curves] == list(FORMULAS)  # the bank's order
    for curve in result.curves:
        assert curve.option.text == FORMULAS[curve.option.id][0]
        expected = scaled_curve(curve.option.id, values, variable, sweep)
        np.testing.assert_allclose(curve.normalised, [float(v) for v in expected], rtol=1e-12)
        assert curve.normalised[0] == result.exact[0]  # scaled at the first point
        np.testing.assert_allclose(curve.ratios, [float(v / e) for v, e in zip(expected, exact)], rtol=1e-12)
        assert curve.follows == (expected == exact) == follows_everywhere(curve.option.id, values, variable)
        # Bounded (the same big-O in the variable) or not, and the bound: the ratio never passes it and tends to it.
        if bounded(curve.option.id, values, variable):
            ceiling = limit(curve.option.id, values, variable)
            assert curve.ceiling == ceiling and curve.levels_off == (ceiling != 1) != curve.follows
            assert all(ratio_at(curve.option.id, values, variable, x) <= ceiling for x in sweep)
            assert ratio_at(curve.option.id, values, variable, 10**15) > ceiling * (1 - Fraction(1, 10**9))
        else:
            assert curve.ceiling is None and not curve.follows and not curve.levels_off
    # Only the correct option has the count's big-O in every variable; each wrong one parts in some sweep:
    # O(NM²dl) in M's alone, O(NM²d²l) in M's and d's, O(NMd²l) in d's. No sweep of l parts any.
    expected = {"nm-d-plus-l": (), "nm2-dl": ("M",), "nm2-d2l": ("M", "d"), "nmd2l": ("d",)}
    for option in FORMULAS:
        assert result.separating[option] == parting_sweeps(option, values) == expected[option]


@settings(max_examples=40, deadline=None)
@given(st.one_of(VALUES, EDGE_VALUES))
def test_every_claim_of_the_alt_text_and_caption_holds(values):
    params, result, alt, caption = compute(values)
    n, m, d, l = values["n"], values["m"], values["d"], values["l"]  # noqa: E741
    variable = values["vary"]
    low, high = BOUNDS[variable]
    total = attention_flops(n, m, d, l)

    # The count at the student's values, with its two products, by hand.
    count = (f"At N = {n}, M = {m}, d = {d}, l = {l}: {n}·{m}·({d}+{l}) = {total:,} multiply-adds "
             f"(Q Kᵀ {n}·{m}·{d} = {n * m * d:,}, weights·V {n}·{m}·{l} = {n * m * l:,}).")
    assert count in alt and count in caption
    assert total == n * m * d + n * m * l
    # "the softmax adds only N·M more, no more than either product"
    assert "the softmax adds only N·M more, no more than either product" in caption
    softmax = attention_flops(n, m, d, l, include_softmax=True) - total
    assert softmax == n * m <= min(n * m * d, n * m * l)

    # How much each curve grows over the sweep, and which follow the count.
    exact_growth = Fraction(attention_flops(*at(values, variable, high)), attention_flops(*at(values, variable, low)))
    assert f"the exact count grows {'×' + complexity.number_text(exact_growth)}; scaled to it at {variable} = 1" in alt
    followers, levelling, others = [], [], []
    for option, (text, formula) in FORMULAS.items():
        growth = Fraction(formula(*at(values, variable, high)), formula(*at(values, variable, low)))
        same = follows_everywhere(option, values, variable)
        assert (growth == exact_growth) == same
        assert f"{text} ×{complexity.number_text(growth)}{' (the same)' if same else ''}" in alt
        (followers if same else levelling if bounded(option, values, variable) else others).append(text)
    assert followers[0] == "O(NM(d+l))"  # the correct option follows in every sweep
    groups = alt.split("On the exact count in this sweep: ")[1].split(". ")[0]
    assert groups.startswith(complexity.joined(followers))
    if levelling:  # only against d or l: a product of widths against the count's d + l
        other_name = "l" if variable == "d" else "d"
        assert variable in "dl"
        assert (f"levelling off towards {other_name} + 1 = {values[other_name] + 1} times it (the same big-O in "
                f"{variable}, a constant factor apart): {complexity.joined(levelling)}") in groups
    else:
        assert "levelling" not in groups
    if others:
        assert groups.endswith(f"parting from it (a higher power of {variable}): {complexity.joined(others)}")
    else:  # N and l: no sweep of them parts an option in big-O; M and d do
        assert variable in "Nl" and "parting" not in groups
        assert (f"No option has a higher power of {variable} than the count, so varying {variable} cannot tell them "
                "apart in big-O; vary M or d to see the wrong ones part.") in alt

    # Slopes on the log-log axes, checked numerically against the engine and the formulas.
    exact = lambda x: _count_at(values, variable, x)  # noqa: E731
    if variable in ("N", "M"):
        assert f"Slopes against {variable}: the exact count 1 (doubling it doubles the count)" in caption
        assert (f"In (b), a formula with the count's big-O in {variable} stays bounded (on 1); one with a higher "
                f"power of {variable} keeps rising.") in caption
        for x in (low, high, values[FIELD[variable]]):
            assert log_log_slope(exact, x) == pytest.approx(1.0, abs=1e-5)
    else:
        other_name = "l" if variable == "d" else "d"
        other = values[other_name]
        first, last = Fraction(1, 1 + other), Fraction(high, high + other)
        assert (f"the exact count {variable}/({variable}+{other_name}), which rises from 1/(1+{other}) = "
                f"{complexity.number_text(first)} at {variable} = 1 to {high}/({high}+{other}) = "
                f"{complexity.number_text(last)} at {variable} = {high} and never reaches 1") in caption
        # "so a formula of slope 1 stays within a factor l + 1 of the count": x·(1 + other)/(x + other) < other + 1
        assert (f"it nears 1 as {variable} grows past {other_name}, so a formula of slope 1 stays within a factor "
                f"{other_name} + 1 = {other + 1} of the count, the same big-O in {variable}") in caption
        assert log_log_slope(exact, 10**9) == pytest.approx(1.0, abs=1e-5)
        assert ratio_at("nm2-dl", values, variable, 10**15) < other + 1
        assert (f"In (b), a formula with the count's big-O in {variable} stays bounded (on 1, or under the dotted "
                f"ceiling {other_name} + 1 = {other + 1}); one with a higher power of {variable} keeps "
                "rising.") in caption
        assert log_log_slope(exact, 1) == pytest.approx(float(first), abs=1e-5)
        assert log_log_slope(exact, high) == pytest.approx(float(last), abs=1e-5)
        assert first < last < 1
    for option, (text, formula) in FORMULAS.items():
        power = POWERS[option].get(variable, 0)
        stated = "the same" if option == "nm-d-plus-l" else str(power)
        assert f"{text} {stated}" in caption.split("Slopes against")[1]
        if option != "nm-d-plus-l":
            f = lambda x, formula=formula: float(formula(*_sizes_at(values, variable, x)))  # noqa: E731
            assert log_log_slope(f, 3) == pytest.approx(power, abs=1e-5)
    assert f"scaled to equal the exact count at {variable} = 1" in caption
    assert "These are counts, not timings" in caption


def _sizes_at(values: dict, variable: str, x: float) -> tuple:
    """(N, M, d, l) with the swept variable at a real x, for slopes."""
    sizes = {**values, FIELD[variable]: x}
    return sizes["n"], sizes["m"], sizes["d"], sizes["l"]


def _count_at(values: dict, variable: str, x: float) -> float:
    """attention_flops with the swept variable at a real x (its formula is polynomial, for slopes)."""
    n, m, d, l = _sizes_at(values, variable, x)  # noqa: E741
    return float(n * m * (d + l))


def test_the_real_valued_count_used_for_slopes_is_attention_flops():
    values = {"n": 3, "m": 5, "d": 7, "l": 2}
    for variable in BOUNDS:
        for x in (1, 4, 9):
            assert _count_at(values, variable, x) == attention_flops(*at(values, variable, x))


@settings(max_examples=40, deadline=None)
@given(st.one_of(VALUES, EDGE_VALUES))
def test_the_choice_sentence_says_what_the_chosen_option_gets_wrong(values):
    params, result, alt, caption = compute(values)
    n, m, d, l = values["n"], values["m"], values["d"], values["l"]  # noqa: E741
    choice, variable = values["choice"], values["vary"]
    high = BOUNDS[variable][1]
    total = attention_flops(n, m, d, l)
    if not choice:
        assert "Your answer" not in alt + caption
        return
    text = FORMULAS[choice][0]
    assert alt.count("Your answer") == 1
    # The visible caption leads with the same sentence: the picture alone cannot say which answer it was.
    answer = alt[alt.index("Your answer"):]
    assert caption.startswith(answer + " ")
    if choice == "nm-d-plus-l":
        assert f"Your answer {text} is right" in alt
        assert "lies on the exact count in every sweep (N, M, d and l)" in alt
        assert all(follows_everywhere(choice, values, v) for v in BOUNDS)
        return
    assert f"Your answer {text} is wrong." in alt
    if POWERS[choice]["M"] == 2:
        doubled = attention_flops(n, 2 * m, d, l)
        assert doubled == 2 * total  # linear in M: doubling M doubles the count
        assert f"doubling M from {m} to {2 * m} takes the count from {total:,} to {doubled:,} (×2), not ×4" in alt
    if POWERS[choice]["d"] == 2:
        factor = Fraction(attention_flops(n, m, 2 * d, l), total)
        assert factor == Fraction(2 * d + l, d + l) and 1 < factor < 2  # less than doubles, never ×4
        shown = complexity.number_text(factor)
        assert f"doubling d from {d} to {2 * d} multiplies the count by ({2 * d}+{l})/({d}+{l}) = {shown}, not 4" in alt
        assert shown != "2" and float(shown) == pytest.approx(float(factor), rel=5e-3)
    if choice == "nm2-dl":
        assert "O(NM²dl) grows with M², but doubling M only doubles Q Kᵀ and weights·V" in alt
    # Where the option parts from the count (its ratio grows without bound): in this sweep, or in the sweeps the
    # sentence names. A ratio that stays bounded is the same big-O in this variable, whatever factor it reaches.
    joined = complexity.joined(parting_sweeps(choice, values), "or")
    ratio = ratio_at(choice, values, variable, high)
    if follows_everywhere(choice, values, variable):
        assert ratio == 1
        assert (f"In this sweep of {variable} it lies on the exact count, so this picture cannot tell it from the "
                f"right answer: vary {joined} to see it part from it.") in alt
    elif bounded(choice, values, variable):
        w = "l" if variable == "d" else "d"
        held = values[w]
        assert ratio == Fraction(high * (held + 1), high + held) < held + 1  # the ratio's closed form, by hand
        assert (f"In this sweep of {variable} it does not part from the exact count: its ratio to it, "
                f"{variable}·({w}+1)/({variable}+{w}), is {high}·{held + 1}/({high}+{held}) = "
                f"{complexity.number_text(ratio)} at {variable} = {high} and levels off towards {w} + 1 = {held + 1}, "
                f"which it never passes") in alt
        assert f"so in {variable} alone their big-O is the same, a constant factor apart." in alt
        # d·l against d + l: bounded unless both widths grow; d²·l also outgrows it as d alone grows.
        widths, faster = {"nm2-dl": ("d·l w²", "only"), "nm2-d2l": ("d²·l w³", "as d grows (d² against d), or"),
                          "nmd2l": ("d²·l w³", "as d grows (d² against d), or")}[choice]
        widths, together = widths.split()
        assert bounded(choice, values, "l") and bounded(choice, values, "d") == (choice == "nm2-dl")
        assert (f"Its {widths} where the count has d + l grows faster {faster} when d and l grow together "
                f"(at d = l = w, {together} against 2w); vary {joined} to see it part from the count.") in alt
        assert "parts from it" not in alt and "keeps rising" not in alt
    else:
        assert ratio > 1
        power = POWERS[choice][variable]
        assert (f"In this sweep it reaches {complexity.number_text(ratio)} times the exact count at "
                f"{variable} = {high} and keeps rising: it grows as {variable}{'²' if power == 2 else ''}, the count "
                f"only as {variable}, so its big-O in {variable} is higher; it parts from the count when {joined} "
                "varies.") in alt
        assert variable in parting_sweeps(choice, values)


def end_slope(ax, gid: str) -> float:
    """The log-log slope of the curve `gid` between its last two drawn points."""
    line = lines_by_gid(ax)[gid]
    x, y = line.get_xdata(), line.get_ydata()
    return math.log(y[-1] / y[-2]) / math.log(x[-1] / x[-2])


def named_sweeps(sentence: str) -> list[str]:
    """The sweeps a sentence sends the student to: "vary M or d to see it part", "parts from the count when d
    varies"."""
    sweeps = r"((?:[NMdl](?:, | or )?)+)"
    found = re.search(rf"vary {sweeps} to see it part|parts from the count when {sweeps} varies", sentence)
    return re.split(r", | or ", found.group(1) or found.group(2))


EXTREMES = [{"n": 1, "m": 1, "d": 1, "l": 1}, {"n": 2048, "m": 2048, "d": 256, "l": 256}, {},
            {"n": 1, "m": 2048, "d": 1, "l": 256}, {"n": 2048, "m": 1, "d": 256, "l": 1}]


@pytest.mark.parametrize("sizes", EXTREMES)
@pytest.mark.parametrize("vary", ["N", "M", "d", "l"])
@pytest.mark.parametrize("choice", ["nm2-dl", "nm2-d2l", "nmd2l"])
def test_the_words_say_an_option_parts_exactly_when_its_drawn_ratio_keeps_rising(choice, vary, sizes):
    """Panel (b) on log-log axes: the ratio of a formula with the count's big-O in the swept variable ends with a
    slope under 1, (other width)/(x + other width) or 0, bending over under its ceiling; one with a higher power
    ends with a slope of at least 1 and rises without bound. The words must say which, and send the student to
    the sweeps that really part the answer from the count (a bounded factor is no growth difference)."""
    values = {**sizes, "vary": vary, "choice": choice}
    _, result, alt, caption = compute(values)
    _, figure = draw(values)
    ratio_ax = figure.axes[1]
    rising = {option: end_slope(ratio_ax, option) > 0.9 for option in FORMULAS}
    assert not rising["nm-d-plus-l"]
    parting = re.search(r"parting from it[^:]*: ([^.]*)\.", alt)  # the options the alt text says part in this sweep
    parting = parting.group(1) if parting else ""
    for option, (text, _) in FORMULAS.items():
        assert (text in parting) == rising[option], (option, parting)
    seen = alt[alt.index("Your answer"):].split(" In this sweep")[1]
    drawn = lines_by_gid(ratio_ax)[choice].get_ydata()
    if rising[choice]:
        assert "keeps rising" in seen and "so its big-O in " + vary + " is higher" in seen
        assert vary in named_sweeps(seen)
    else:
        assert "keeps rising" not in seen and "parts from it" not in seen and vary not in named_sweeps(seen)
        if np.allclose(drawn, 1.0):
            assert seen.startswith(f" of {vary} it lies on the exact count")
        else:  # a bounded factor: levelling off under the drawn ceiling that the words name
            (ceiling,) = [line.get_ydata()[0] for line in ratio_ax.lines if line.get_gid() == "ceiling"]
            assert drawn.max() < ceiling
            assert seen.startswith(f" of {vary} it does not part from the exact count")
            assert f"levels off towards {'l' if vary == 'd' else 'd'} + 1 = {ceiling:g}, which it never passes" in seen
            assert f"so in {vary} alone their big-O is the same" in seen
    # The sweeps the words name part the answer from the count when drawn; the others do not.
    for other in BOUNDS:
        _, other_figure = draw({**values, "vary": other})
        assert (end_slope(other_figure.axes[1], choice) > 0.9) == (other in named_sweeps(seen)), other


def test_a_bounded_factor_is_not_called_a_growth_difference():
    """The d·l of O(NM²dl) against d alone, and the d²l of O(NMd²l) against l alone, stay within a factor of the
    count (l + 1, d + 1): the words say so and send the student to the sweep that parts each, not to d or l."""
    _, _, alt, _ = compute({"n": 1, "m": 1, "d": 1, "l": 1, "vary": "d", "choice": "nm2-dl"})
    assert "parts from it" not in alt
    assert ("its ratio to it, d·(l+1)/(d+l), is 256·2/(256+1) = 1.99 at d = 256 and levels off towards "
            "l + 1 = 2") in alt
    assert "Its d·l where the count has d + l grows faster only when d and l grow together" in alt
    assert alt.endswith("vary M to see it part from the count.")
    _, _, alt, _ = compute({"vary": "l", "choice": "nmd2l"})  # the seed question's sizes
    assert "parts from it" not in alt
    assert "is 256·65/(256+64) = 52 at l = 256 and levels off towards d + 1 = 65" in alt
    assert alt.endswith("vary d to see it part from the count.")
    _, _, alt, _ = compute({"choice": "nmd2l"})  # the seed question's own sweep, of M
    assert alt.endswith("so this picture cannot tell it from the right answer: vary d to see it part from it.")


def test_the_default_sweep_of_m_separates_the_m_squared_options():
    _, result, alt, _ = compute({})
    assert result.vary == "M" and result.sizes == {"N": 512, "M": 512, "d": 64, "l": 64}
    assert ("From M = 1 to M = 2048, with N = 512, d = 64, l = 64, the exact count grows ×2,048; scaled to it "
            "at M = 1, O(NM(d+l)) ×2,048 (the same), O(NM²dl) ×4,194,304, O(NM²d²l) ×4,194,304, "
            "O(NMd²l) ×2,048 (the same).") in alt
    assert "At N = 512, M = 512, d = 64, l = 64: 512·512·(64+64) = 33,554,432 multiply-adds" in alt


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 10**6), st.integers(1, 10**6))
def test_number_text_never_shows_a_fraction_as_a_whole_number(numerator, denominator):
    value = Fraction(numerator, denominator)
    text = complexity.number_text(value)
    if value.denominator == 1:
        assert text == f"{numerator // denominator:,}"
    elif value > 1000:
        assert text.startswith("≈")
    else:
        assert Fraction(text).denominator != 1 and float(text) == pytest.approx(float(value), rel=5e-3)
    assert not re.search(r"\bnan\b|\binf\b|-0\b", text)


# --- the figure ------------------------------------------------------------------------------------------


def draw(values: dict, layout: str = "wide"):
    params = KIND.parse(values)
    result = KIND.compute(params)
    return result, KIND.draw(params, result, KIND.figure_inches(params, layout))


def lines_by_gid(ax) -> dict:
    return {line.get_gid(): line for line in ax.lines if line.get_gid()}


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("values", [{}, {"vary": "d", "choice": "nmd2l"}, {"vary": "N", "choice": "nm2-dl"},
                                    {"choice": "nmd2l"}, {"vary": "N", "choice": "nm-d-plus-l"},
                                    {"vary": "l", "n": 1, "m": 1, "d": 1, "l": 1, "choice": "nm2-d2l"},
                                    {"vary": "d", "d": 256, "l": 256, "choice": "nm-d-plus-l"}])
def test_the_figure_draws_the_count_and_the_options_and_marks_the_choice(values, layout):
    result, figure = draw(values, layout)
    count_ax, ratio_ax = figure.axes
    if layout == "narrow":
        assert figure.get_size_inches()[0] == NARROW_WIDTH
        assert count_ax.get_position().y0 > ratio_ax.get_position().y1  # stacked
    for ax in (count_ax, ratio_ax):
        assert ax.get_xscale() == ax.get_yscale() == "log"
    variable = result.vary
    values = {**KIND.parse(values).model_dump()}
    sweep = result.sweep
    counts = lines_by_gid(count_ax)
    np.testing.assert_array_equal(counts["exact"].get_xdata(), sweep)
    np.testing.assert_array_equal(counts["exact"].get_ydata(),
                                  [float(attention_flops(*at(values, variable, x))) for x in sweep])
    ratios = lines_by_gid(ratio_ax)
    for option in FORMULAS:
        expected = scaled_curve(option, values, variable, sweep)
        np.testing.assert_allclose(counts[option].get_ydata(), [float(v) for v in expected], rtol=1e-12)
        exact = [attention_flops(*at(values, variable, x)) for x in sweep]
        np.testing.assert_allclose(ratios[option].get_ydata(), [float(v / e) for v, e in zip(expected, exact)],
                                   rtol=1e-12)
    own = values[FIELD[variable]]
    total = attention_flops(values["n"], values["m"], values["d"], values["l"])
    assert f"{total:,}\nat {variable} = {own}" in texts_of(figure)
    legend = {text.get_text(): text for text in figure.legends[0].get_texts()}
    assert "exact count (attention_flops)" in legend
    choice = values["choice"]
    for option, (text, _) in FORMULAS.items():
        label = text + (" ✓" if option == "nm-d-plus-l" else "") + (" (your answer)" if option == choice else "")
        assert label in legend
        assert (legend[label].get_fontweight() == "bold") == (option == choice)
        if option == choice:
            assert counts[option].get_linewidth() > counts[other(option)].get_linewidth()
    # A wrong answer of the count's big-O in this variable is named on panel (b), with the sweeps that part it.
    notes = [text.get_text() for text in ratio_ax.texts if text.get_gid() == "hidden-by-sweep"]
    hidden = choice not in ("", "nm-d-plus-l") and bounded(choice, values, variable)
    where = "lies on 1" if hidden and follows_everywhere(choice, values, variable) else "is bounded"
    assert notes == ([f"your answer {FORMULAS[choice][0]} {where}:\nthe same big-O in {variable}; vary "
                      + " or ".join(parting_sweeps(choice, values))] if hidden else [])
    # The dotted ceiling that the bounded ratios tend to, drawn when some option levels off (a sweep of d or l).
    levelling = [o for o in FORMULAS if bounded(o, values, variable) and limit(o, values, variable) != 1]
    ceilings = [line for line in ratio_ax.lines if line.get_gid() == "ceiling"]
    labels = [text.get_text() for text in ratio_ax.texts if text.get_gid() == "ceiling-label"]
    if levelling:
        other_name = "l" if variable == "d" else "d"
        (line,) = ceilings
        assert tuple(line.get_ydata()) == (values[other_name] + 1,) * 2
        assert labels == [f"ceiling\n{other_name} + 1 = {values[other_name] + 1}"]
        assert ratio_ax.get_ylim()[1] > values[other_name] + 1
        for option in levelling:
            assert max(ratios[option].get_ydata()) < values[other_name] + 1
    else:
        assert ceilings == [] and labels == []
    for ax in (count_ax, ratio_ax):
        assert ax.get_xlabel().startswith(variable)
        ticks = [int(t) for t in ax.get_xticks()]
        assert ticks[0] == 1 and ticks[-1] == BOUNDS[variable][1]


def other(option: str) -> str:
    return next(o for o in FORMULAS if o != option)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("vary", ["N", "M", "d", "l"])
@pytest.mark.parametrize("sizes", [{}, {"n": 1, "m": 1, "d": 1, "l": 1}, {"n": 2048, "m": 2048, "d": 256, "l": 256},
                                   {"d": 1, "l": 256}])
@pytest.mark.parametrize("predicted", ["", "-1000000000000", "1000000000000"])
def test_labels_stay_in_the_figure_and_apart_for_every_sweep(vary, sizes, layout, predicted):
    from test_plots_layout import label_boxes, overlap

    _, figure = draw({**sizes, "vary": vary, "choice": "nm2-d2l", "predicted_count": predicted}, layout)
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    page = figure.bbox
    boxes = label_boxes(figure, renderer)
    for _, what, box in boxes:
        assert box.x0 >= page.x0 - 1 and box.x1 <= page.x1 + 1 and box.y0 >= page.y0 - 1 and box.y1 <= page.y1 + 1, what
    for index, (ax, what, box) in enumerate(boxes):
        for other_ax, other_what, other_box in boxes[index + 1:]:
            if other_ax is not ax or "tick" in what and "tick" in other_what:
                assert overlap(box, other_box) <= 1, f"{what} overlaps {other_what}"


# --- no timing, params --------------------------------------------------------------------------------------


def test_nothing_is_timed_so_the_bytes_repeat(monkeypatch):
    def no_attention(*args, **kwargs):
        raise AssertionError("the complexity visual shows counts; it does not run attention")

    monkeypatch.setattr("app.engine.scaled_dot_product_attention", no_attention)
    monkeypatch.setattr("app.engine.attention.scaled_dot_product_attention", no_attention)
    params = KIND.parse({"vary": "d", "choice": "nm2-dl"})
    first, second = KIND.render(params, layout="narrow"), KIND.render(params, layout="narrow")
    assert first == second


def test_params():
    assert check_visual("complexity", {"n": 0}) == [(("params", "n"), "n must be at least 1, got 0")]
    assert check_visual("complexity", {"d": 0, "l": 300}) == [
        (("params", "d"), "d must be at least 1, got 0"),
        (("params", "l"), "l must be at most 256, got 300"),
    ]
    assert check_visual("complexity", {"m": 4096}) == [(("params", "m"), "m must be at most 2048, got 4096")]
    assert check_visual("complexity", {"vary": "x"})
    assert check_visual("complexity", {"choice": "nm2"})  # not one of Q9's option ids
    assert KIND.parse({"vary": "l", "choice": "nmd2l"}).choice == "nmd2l"
    assert KIND.choice_param == "choice" and "choice" not in {control.name for control in KIND.controls}
    assert [control.name for control in KIND.controls] == ["vary", "n", "m", "d", "l"]


def test_the_old_max_n_is_refused_with_a_sentence():
    assert check_visual("complexity", {"max_n": 128}) == [(("params", "max_n"), "unknown parameter 'max_n'")]


# --- a numeric question's count, drawn and named -------------------------------------------------------------


@pytest.mark.parametrize("sizes", [{"n": 256, "m": 256, "d": 64, "l": 64}, {"n": 16, "m": 32, "d": 8, "l": 24},
                                   {"n": 1, "m": 1, "d": 1, "l": 1}])
def test_a_students_count_is_drawn_at_their_point_and_the_slip_it_matches_is_named(sizes):
    n, m, d, l = sizes.values()  # noqa: E741
    total = naive_multiply_adds(n, m, d, l)
    slips = [  # each count a slip gives, and the words that name it (the first that matches, as the words do)
        (n * m * d, "It is Q Kᵀ alone, N·M·d"),
        (n * m * l, "It is weights·V alone, N·M·l"),
        (2 * total, "It is twice the count, as if a multiply-add were two operations"),
        (n * m * d * l, "It is N·M·d·l"),
        (n * m, "It is N·M"),
    ]
    for yours in [total, *(slip for slip, _ in slips), total + 7, total * 1000, 3, 0, -5]:
        values = {**sizes, "vary": "M", "predicted_count": yours}
        params = KIND.parse(values)
        result = KIND.compute(params)
        caption, alt = KIND.caption(params, result), KIND.alt(params, result)
        count = f"N·M·(d+l) = {n}·{m}·({d}+{l}) = {total:,} multiply-adds"
        assert caption.split(" Exact counts")[0] == alt.split(" Two log-log")[0]  # the same words first, in both
        if yours == total:
            assert caption.startswith(f"Your answer {yours:,} is the count: {count}.")
        elif yours <= 0:
            assert caption.startswith(f"Your answer, {yours:,}, is no count: {count}.")
        else:
            assert caption.startswith(f"Your answer {yours:,} is ") and count in caption
            named = next((words for slip, words in slips if slip == yours and slip != total), None)
            if named:
                assert named in caption.split(" Exact counts")[0]
            else:
                assert ". It is " not in caption.split(" Exact counts")[0]
        for layout in LAYOUTS:
            _, figure = draw(values, layout)
            count_ax = figure.axes[0]
            mine = lines_by_gid(count_ax).get("your-count")
            legend = [t.get_text() for t in figure.legends[0].get_texts()]
            if yours > 0:
                assert tuple(mine.get_xdata()) == (m,) and tuple(mine.get_ydata()) == (yours,)
                low, high = count_ax.get_ylim()
                assert low < yours < high
                assert f"your answer: {yours:,}" in legend
            else:
                assert mine is None and not any("your answer" in text for text in legend)


def test_a_count_question_on_the_complexity_figure_draws_the_answer_on_its_answer_page(client):
    from test_model_bank import csrf_token

    url = "/quiz/attention-practice/attention-cost-variant"
    page = client.get(url).get_data(as_text=True)
    n, d = (int(re.search(rf'alttext="{name} = (\d+)"', page).group(1)) for name in "Nd")
    response = client.post(url, data={"csrf_token": csrf_token(page), "answer": str(n * n * d)})
    answer = client.get(response.location).get_data(as_text=True)
    assert f"predicted_count={n * n * d}" in answer
    assert f'alt="Your answer {n * n * d:,} is ×0.5 the count: ' in answer
    assert "It is Q Kᵀ alone, N·M·d" in answer
