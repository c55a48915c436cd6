"""The "complexity" visual (Q9): the exact multiply-add count of softmax(Q Kᵀ) V, N·M·(d + l), against the four
options' formulas while one of N, M, d, l is swept, each formula scaled to the count at the sweep's first point.
Counts, not timings: wall times on a shared two-core server are mostly fixed overhead at small sizes.

Big-O in the swept variable decides whether an option "parts" from the count: an option with the count's power of
it (1 in each of N, M, d and l) stays within a constant factor, its ratio bounded; one with a higher power does not.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

import numpy as np
from pydantic import Field

from app.engine import attention_flops

from .. import register
from ..base import NARROW_WIDTH, WIDTH, Control, VisualKind, VisualParams
from ..predictions import NumberParam

# The swept variable's range, from 1 to the control's bound, in the order of Q (N × d), K (M × d) and V (M × l).
LARGEST = {"N": 2048, "M": 2048, "d": 256, "l": 256}
NAMES = {"N": "N (queries)", "M": "M (keys)", "d": "d (query/key width)", "l": "l (value width)"}
SWEEP_POINTS = 49  # log-spaced points of a sweep, before the student's own value is added


@dataclass(frozen=True)
class Option:
    id: str  # the bank's option id
    text: str  # as the question writes it
    cost: Callable[[int, int, int, int], int]  # the formula with constant 1, of (N, M, d, l)
    exponents: dict[str, int]  # its power of each variable alone, as that variable grows: d + l has power 1 in d
    wrong: str = ""  # what it gets wrong, at the student's {point}, with {doubling_m} and {doubling_d}


# Q9's options, in the bank's order (quizzes/attention-transformers.yaml, attention-complexity).
OPTIONS = (
    Option("nm-d-plus-l", "O(NM(d+l))", lambda n, m, d, l: n * m * (d + l), {"N": 1, "M": 1, "d": 1, "l": 1}),
    Option("nm2-dl", "O(NM²dl)", lambda n, m, d, l: n * m * m * d * l, {"N": 1, "M": 2, "d": 1, "l": 1},
           "O(NM²dl) grows with M², but doubling M only doubles Q Kᵀ and weights·V, each linear in M: at {point}, "
           "{doubling_m}, not ×4. It also multiplies d by l, but the two products run one after the other, so their "
           "costs add (d + l)."),
    Option("nm2-d2l", "O(NM²d²l)", lambda n, m, d, l: n * m * m * d * d * l, {"N": 1, "M": 2, "d": 2, "l": 1},
           "O(NM²d²l) squares M and d, but each of the two products is linear in N, M and its inner width: at "
           "{point}, {doubling_m}, not ×4, and {doubling_d}, not 4; the costs of Q Kᵀ and weights·V add (d + l)."),
    Option("nmd2l", "O(NMd²l)", lambda n, m, d, l: n * m * d * d * l, {"N": 1, "M": 1, "d": 2, "l": 1},
           "O(NMd²l) has N and M right, but squares d and multiplies it by l: Q Kᵀ costs N·M·d and weights·V "
           "N·M·l, one after the other, so they add (d + l): at {point}, {doubling_d}, not 4."),
)
CORRECT = "nm-d-plus-l"
COUNT = OPTIONS[0]  # the correct option is the count's own formula: its powers are the count's
SUPERSCRIPT = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")


def power_text(variable: str, power: int) -> str:
    """"d" for d¹, "d²" for d²."""
    return variable if power == 1 else variable + str(power).translate(SUPERSCRIPT)


class ComplexityParams(VisualParams):
    n: int = Field(default=512, ge=1, le=LARGEST["N"])
    m: int = Field(default=512, ge=1, le=LARGEST["M"])
    d: int = Field(default=64, ge=1, le=LARGEST["d"])
    l: int = Field(default=64, ge=1, le=LARGEST["l"])  # noqa: E741 - the value width's name in the question
    vary: Literal["M", "N", "d", "l"] = "M"  # M first: the sweep that separates M from M²
    choice: Literal["", "nm-d-plus-l", "nm2-dl", "nm2-d2l", "nmd2l"] = ""  # the student's option
    predicted_count: NumberParam = ""  # a numeric question's answer: the multiply-adds at N, M, d, l


@dataclass(frozen=True)
class OptionCurve:
    option: Option
    normalised: np.ndarray  # cost(x) · exact(1) / cost(1), float, one per sweep value
    growth: Fraction  # cost at the sweep's end / cost at its start
    ratio: Fraction  # growth / the exact count's growth: 1 when it grows like the count
    ratios: np.ndarray  # normalised / exact at each sweep value, float
    power: int  # its power of the swept variable
    # What the ratio tends to as the swept variable grows without bound: 1 when the curve lies on the count, a
    # larger bound it rises towards but never passes when the option has the count's power of the variable but
    # another constant factor (a product of widths against d + l), None when it has a higher power and parts.
    ceiling: Fraction | None

    @property
    def follows(self) -> bool:  # the option's curve lies on the exact count over the whole sweep
        return self.ceiling == 1

    @property
    def levels_off(self) -> bool:  # the same big-O in the swept variable, but a bounded factor apart
        return self.ceiling is not None and self.ceiling != 1


@dataclass(frozen=True)
class ComplexityResult:
    sizes: dict[str, int]  # the student's N, M, d and l
    vary: str
    sweep: np.ndarray  # the swept variable's values, 1 … LARGEST[vary], int, with the student's own
    exact: np.ndarray  # attention_flops along the sweep, float for the plot
    exact_growth: Fraction  # exact count at the end / at the start
    curves: tuple[OptionCurve, ...]  # in the bank's order
    scores: int  # Q Kᵀ at the student's values: attention_flops(n, m, d, 0)
    weighted_values: int  # weights · V: attention_flops(n, m, 0, l)
    total: int  # attention_flops(n, m, d, l)
    separating: dict[str, tuple[str, ...]]  # option id -> the variables of which its power is not the count's
    choice: str  # the student's option id, "" when not known
    predicted: float | None = None  # the student's count, when a numeric question asked for it


def number_text(value: Fraction) -> str:
    """A whole number with thousands separators; otherwise 3 significant figures, more when those
    would read as a whole number (513/257 is 1.996, not 2), and ≈ with none above 1000."""
    if value.denominator == 1:
        return f"{value.numerator:,}"
    if value > 1000:
        return f"≈{float(value):,.0f}"
    for digits in range(3, 17):
        text = f"{float(value):.{digits}g}"
        if Fraction(text).denominator != 1:
            return text
    return text


def sizes_text(sizes: dict[str, int], leave_out: str = "") -> str:
    """"N = 512, M = 512, d = 64, l = 64", without the variable `leave_out`."""
    return ", ".join(f"{variable} = {value}" for variable, value in sizes.items() if variable != leave_out)


def joined(items, conjunction: str = "and") -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + f" {conjunction} " + items[-1]


def other_width(variable: str) -> str:
    """The width a sweep of d or l holds: the other term of d + l."""
    return "l" if variable == "d" else "d"


def ceiling_text(result: ComplexityResult) -> str:
    """"l + 1 = 65": the bound that the ratio of every option levelling off in this sweep tends to ("" when none
    does: only a sweep of d or l has one, as only there does the count have a part that the sweep does not grow)."""
    ceilings = {curve.ceiling for curve in result.curves if curve.levels_off}
    if not ceilings:
        return ""
    (ceiling,) = ceilings  # x·(count at 1)/(count at x) for each: they share it
    return f"{other_width(result.vary)} + 1 = {number_text(ceiling)}"


def all_separating(result: ComplexityResult) -> tuple[str, ...]:
    """The variables whose sweep parts some wrong option from the count, in the order N, M, d, l."""
    return tuple(variable for variable in LARGEST if any(variable in parts for parts in result.separating.values()))


def count_sentence(result: ComplexityResult) -> str:
    n, m, d, l = result.sizes.values()  # noqa: E741
    return (f"At {sizes_text(result.sizes)}: {n}·{m}·({d}+{l}) = {result.total:,} multiply-adds "
            f"(Q Kᵀ {n}·{m}·{d} = {result.scores:,}, weights·V {n}·{m}·{l} = {result.weighted_values:,}).")


def answer_sentence(result: ComplexityResult) -> str:
    """What the student's option gets right or wrong, and which sweeps show it ("" when no option is known)."""
    if not result.choice:
        return ""
    curve = next(curve for curve in result.curves if curve.option.id == result.choice)
    option, x, end = curve.option, result.vary, int(result.sweep[-1])
    if option.id == CORRECT:
        return (f"Your answer {option.text} is right: scaled at the first point, its curve lies on the exact count "
                "in every sweep (N, M, d and l).")
    n, m, d, l = result.sizes.values()  # noqa: E741
    doubled_m = attention_flops(n, 2 * m, d, l)
    doubled_d = Fraction(attention_flops(n, m, 2 * d, l), result.total)
    wrong = option.wrong.format(
        point=sizes_text(result.sizes),
        doubling_m=(f"doubling M from {m} to {2 * m} takes the count from {result.total:,} to {doubled_m:,} "
                    f"(×{number_text(Fraction(doubled_m, result.total))})"),
        doubling_d=(f"doubling d from {d} to {2 * d} multiplies the count by ({2 * d}+{l})/({d}+{l}) = "
                    f"{number_text(doubled_d)}"))
    separating = joined(result.separating[option.id], "or")
    if curve.follows:
        seen = (f"In this sweep of {x} it lies on the exact count, so this picture cannot tell it from the right "
                f"answer: vary {separating} to see it part from it.")
    elif curve.levels_off:  # a sweep of d or l, and an option of power 1 in it: a product of widths
        w, held = other_width(x), result.sizes[other_width(x)]
        widths = "·".join(power_text(variable, option.exponents[variable]) for variable in "dl")
        together = power_text("w", option.exponents["d"] + option.exponents["l"])
        # d·l outgrows d + l only as both widths grow; d²·l also as d alone grows.
        alone = [variable for variable in "dl" if option.exponents[variable] > COUNT.exponents[variable]]
        faster = "only" if not alone else ", ".join(
            f"as {variable} grows ({power_text(variable, option.exponents[variable])} against {variable})"
            for variable in alone) + ", or"
        seen = (f"In this sweep of {x} it does not part from the exact count: its ratio to it, {x}·({w}+1)/({x}+{w}), "
                f"is {end}·{held + 1}/({end}+{held}) = {number_text(curve.ratio)} at {x} = {end} and levels off "
                f"towards {ceiling_text(result)}, which it never passes (it nears it as {x} grows past {w} = {held}). "
                f"Both grow linearly in {x}, so in {x} alone their big-O is the same, a constant factor apart. Its "
                f"{widths} where the count has d + l grows faster {faster} when d and l grow together (at d = l = w, "
                f"{together} against 2w); vary {separating} to see it part from the count.")
    else:
        seen = (f"In this sweep it reaches {number_text(curve.ratio)} times the exact count at {x} = {end} and keeps "
                f"rising: it grows as {power_text(x, curve.power)}, the count only as {x}, so its big-O in {x} is "
                f"higher; it parts from the count when {separating} varies.")
    return f"Your answer {option.text} is wrong. {wrong} {seen}"


def count_answer_sentence(result: ComplexityResult) -> str:
    """The student's count against the engine's, and the slip it matches, if any ("" when no count is known)."""
    if result.predicted is None:
        return ""
    n, m, d, l = result.sizes.values()  # noqa: E741
    yours, total = result.predicted, result.total
    shown, count = f"{yours:,.12g}", f"N·M·(d+l) = {n}·{m}·({d}+{l}) = {total:,} multiply-adds"
    if yours <= 0:
        return f"Your answer, {shown}, is no count: {count}."
    if yours == total:
        return f"Your answer {shown} is the count: {count}."
    slips = (  # (the count a slip gives, what it does)
        (result.scores, f"Q Kᵀ alone, N·M·d = {n}·{m}·{d}: weights·V adds N·M·l = {result.weighted_values:,}"),
        (result.weighted_values, f"weights·V alone, N·M·l = {n}·{m}·{l}: Q Kᵀ adds N·M·d = {result.scores:,}"),
        (2 * total, "twice the count, as if a multiply-add were two operations (a multiply and an add, the FLOPs "
                    "some texts count): the question counts multiply-adds"),
        (n * m * d * l, f"N·M·d·l = {n}·{m}·{d}·{l}, the widths multiplied: the two products run one after the "
                        "other, so their costs add, N·M·(d+l)"),
        (n * m, f"N·M = {n}·{m}, the number of scores: each takes d multiply-adds, and each output feature of "
                "weights·V another M"),
    )
    slip = next((words for count, words in slips if count != total and yours == count), None)
    ratio = yours / total
    if abs(ratio - 1) < 0.005:
        times = f"{abs(yours - total):,.12g} {'more' if yours > total else 'less'} than"
    else:
        times = f"×{ratio:.3g}" if ratio >= 0.01 else f"1/{1 / ratio:,.0f} of"
    text = f"Your answer {shown} is {times} the count: {count} (your number is the diamond in (a))"
    return f"{text}. It is {slip}." if slip else f"{text}."


@register
class ComplexityKind(VisualKind[ComplexityResult]):
    name = "complexity"
    title = "The cost of attention: N·M·(d + l) against four candidate formulas"
    Params = ComplexityParams
    controls = (
        Control("vary", "Vary", "choice", choices=tuple((variable, NAMES[variable]) for variable in "MNdl"),
                help="The swept variable runs from 1 to its largest value; the others stay as set."),
        Control("n", "Queries N", "int", min=1, max=LARGEST["N"], step=1),
        Control("m", "Keys M", "int", min=1, max=LARGEST["M"], step=1),
        Control("d", "Query/key width d", "int", min=1, max=LARGEST["d"], step=1),
        Control("l", "Value width l", "int", min=1, max=LARGEST["l"], step=1),
    )
    choice_param = "choice"
    predictions = {"numeric": ("predicted_count", None)}  # the multiply-adds a numeric question asks for
    prediction_grid = ("n", "m", "d", "l")
    learn = "/learn/complexity"
    inches = (WIDTH, 4.3)
    narrow_inches = (NARROW_WIDTH, 7.6)

    def compute(self, params: ComplexityParams) -> ComplexityResult:
        sizes = {"N": params.n, "M": params.m, "d": params.d, "l": params.l}
        vary = params.vary

        def at(variable: str, value) -> tuple[int, int, int, int]:  # (N, M, d, l) with `variable` at `value`
            return tuple({**sizes, variable: int(value)}.values())

        # Distinct integers from 1 to the variable's bound, evenly spaced on a log scale, with the student's own.
        grid = np.round(np.geomspace(1, LARGEST[vary], SWEEP_POINTS)).astype(np.int64)
        sweep = np.unique(np.append(grid, sizes[vary]))
        counts = [attention_flops(*at(vary, x)) for x in sweep]
        exact = np.array(counts, dtype=float)

        def growth(cost, variable: str) -> Fraction:  # from 1 to the variable's bound: the ends of its sweep
            return Fraction(cost(*at(variable, LARGEST[variable])), cost(*at(variable, 1)))

        def ceiling(option: Option) -> Fraction | None:  # what the ratio tends to as `vary` grows without bound
            if option.exponents[vary] != COUNT.exponents[vary]:
                return None  # a higher power of `vary` than the count's: the ratio grows without bound
            # Both are linear in `vary`, f(x) = f(0) + (f(1) - f(0))·x, so f(x)/f(1) tends to x·(f(1) - f(0))/f(1).
            def slope_share(cost) -> Fraction:
                return Fraction(cost(*at(vary, 1)) - cost(*at(vary, 0)), cost(*at(vary, 1)))

            return slope_share(option.cost) / slope_share(attention_flops)

        exact_growth, curves = growth(attention_flops, vary), []
        for option in OPTIONS:
            costs = [option.cost(*at(vary, x)) for x in sweep]
            normalised = np.array([Fraction(cost * counts[0], costs[0]) for cost in costs], dtype=float)
            option_growth = growth(option.cost, vary)
            curves.append(OptionCurve(option, normalised, option_growth, option_growth / exact_growth,
                                      normalised / exact, option.exponents[vary], ceiling(option)))
        return ComplexityResult(
            sizes=sizes, vary=vary, sweep=sweep, exact=exact, exact_growth=exact_growth,
            curves=tuple(curves), scores=attention_flops(params.n, params.m, params.d, 0),
            weighted_values=attention_flops(params.n, params.m, 0, params.l),
            total=attention_flops(params.n, params.m, params.d, params.l),
            separating={option.id: tuple(variable for variable in LARGEST
                                         if option.exponents[variable] != COUNT.exponents[variable])
                        for option in OPTIONS},
            choice=params.choice,
            predicted=float(params.predicted_count) if params.predicted_count else None,
        )

    def alt(self, params: ComplexityParams, result: ComplexityResult) -> str:
        x, end = result.vary, int(result.sweep[-1])
        growths = ", ".join(f"{curve.option.text} ×{number_text(curve.growth)}{' (the same)' if curve.follows else ''}"
                            for curve in result.curves)
        followers = [curve.option.text for curve in result.curves if curve.follows]
        levelling = [curve.option.text for curve in result.curves if curve.levels_off]
        parting = [curve.option.text for curve in result.curves if curve.ceiling is None]
        groups = [f"On the exact count in this sweep: {joined(followers)}"]
        if levelling:
            groups.append(f"levelling off towards {ceiling_text(result)} times it (the same big-O in {x}, a constant "
                          f"factor apart): {joined(levelling)}")
        if parting:
            groups.append(f"parting from it (a higher power of {x}): {joined(parting)}")
        follow = "; ".join(groups) + "."
        if not parting:
            follow += (f" No option has a higher power of {x} than the count, so varying {x} cannot tell them apart in "
                       f"big-O; vary {joined(all_separating(result), 'or')} to see the wrong ones part.")
        text = (f"Two log-log plots against {NAMES[x]}, from 1 to {end}: the exact multiply-add count N·M·(d+l) "
                "with the curves of four candidate formulas (the options of the seed quiz's complexity question), "
                "and each divided by the exact count. "
                f"From {x} = 1 to {x} = {end}, with {sizes_text(result.sizes, x)}, the exact count grows "
                f"×{number_text(result.exact_growth)}; scaled to it at {x} = 1, {growths}. {follow} "
                f"{count_sentence(result)}")
        return " ".join(filter(None, [count_answer_sentence(result), text, answer_sentence(result)]))

    def caption(self, params: ComplexityParams, result: ComplexityResult) -> str:
        x, end = result.vary, int(result.sweep[-1])
        if x in ("N", "M"):
            exact_slope = "1 (doubling it doubles the count)"
        else:  # the slope of x·(stuff) + (other)·(stuff) against x on log-log axes
            other_name = "l" if x == "d" else "d"
            other = result.sizes[other_name]
            exact_slope = (f"{x}/({x}+{other_name}), which rises from 1/(1+{other}) = "
                           f"{number_text(Fraction(1, 1 + other))} at {x} = 1 to {end}/({end}+{other}) = "
                           f"{number_text(Fraction(end, end + other))} at {x} = {end} and never reaches 1, because "
                           f"the {other_name} part of the count does not grow with {x}; it nears 1 as {x} grows past "
                           f"{other_name}, so a formula of slope 1 stays within a factor {ceiling_text(result)} of "
                           f"the count, the same big-O in {x}")
        ceiling = ceiling_text(result)
        bounded = f", or under the dotted ceiling {ceiling}" if ceiling else ""
        slopes = "; ".join(f"{curve.option.text} the same" if curve.option.id == CORRECT
                           else f"{curve.option.text} {curve.option.exponents.get(x, 0)}" for curve in result.curves)
        return " ".join(filter(None, [count_answer_sentence(result), answer_sentence(result), (
            "Exact counts from the engine's attention_flops: Q Kᵀ needs N·M·d multiply-adds and weights·V "
            "needs N·M·l, done one after the other, so softmax(Q Kᵀ)V costs N·M·(d + l); the softmax adds "
            "only N·M more, no more than either product. "
            f"Each candidate formula is scaled to equal the exact count at {x} = 1, so the plot compares how "
            "they grow, not the constant factors big-O leaves out. "
            f"In (b), a formula with the count's big-O in {x} stays bounded (on 1{bounded}); one with a higher power "
            f"of {x} keeps rising. "
            f"Slopes against {x}: the exact count {exact_slope}; {slopes}. {count_sentence(result)} "
            "These are counts, not timings: on a shared server, times at small sizes are mostly fixed "
            "overhead and change from run to run, so they would not show these slopes.")]))

    def draw(self, params: ComplexityParams, result: ComplexityResult, inches):
        from app.plots.complexity import draw_complexity

        return draw_complexity(result, inches)
