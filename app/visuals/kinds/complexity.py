"""The "complexity" visual (Q9): softmax(Q Kᵀ) V costs N·M·(d + l) multiply-adds.

One of N, M, d and l is swept over its whole range, the others held at the student's values, and the
exact count (engine.attention_flops) is drawn against the four options' formulas on log-log axes. Each
option is scaled to equal the exact count at the sweep's first point (1), so shapes are compared, not
constant factors: only O(NM(d+l)) follows the count in every sweep.

There is no timing: the counts are exact for every value, where wall times on a shared two-core server
are dominated by fixed overheads at small sizes and change from run to run.
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

# The swept variable's range: from 1 to the control's bound.
LARGEST = {"N": 2048, "M": 2048, "d": 256, "l": 256}
VARIABLES = tuple(LARGEST)  # the order of the question's Q (N × d), K (M × d), V (M × l)
SWEEP_POINTS = 49  # log-spaced points of a sweep, before the student's own value is added

VARIABLE_NAMES = {"N": "N (queries)", "M": "M (keys)", "d": "d (query/key width)", "l": "l (value width)"}


@dataclass(frozen=True)
class Option:
    id: str  # the bank's option id
    text: str  # as the question writes it
    cost: Callable[[int, int, int, int], int]  # the formula with constant 1, of (N, M, d, l)
    exponents: dict[str, int]  # its power of each variable; d + l counts as neither d nor l


# Q9's options, in the bank's order (quizzes/attention-transformers.yaml, attention-complexity).
OPTIONS = (
    Option("nm-d-plus-l", "O(NM(d+l))", lambda n, m, d, l: n * m * (d + l), {"N": 1, "M": 1}),
    Option("nm2-dl", "O(NM²dl)", lambda n, m, d, l: n * m * m * d * l, {"N": 1, "M": 2, "d": 1, "l": 1}),
    Option("nm2-d2l", "O(NM²d²l)", lambda n, m, d, l: n * m * m * d * d * l, {"N": 1, "M": 2, "d": 2, "l": 1}),
    Option("nmd2l", "O(NMd²l)", lambda n, m, d, l: n * m * d * d * l, {"N": 1, "M": 1, "d": 2, "l": 1}),
)
OPTION_BY_ID = {option.id: option for option in OPTIONS}
CORRECT = "nm-d-plus-l"
NO_CHOICE = ""


class ComplexityParams(VisualParams):
    n: int = Field(default=512, ge=1, le=LARGEST["N"])
    m: int = Field(default=512, ge=1, le=LARGEST["M"])
    d: int = Field(default=64, ge=1, le=LARGEST["d"])
    l: int = Field(default=64, ge=1, le=LARGEST["l"])  # noqa: E741 - the value width's name in the question
    vary: Literal["M", "N", "d", "l"] = "M"  # M first: the sweep that separates M from M²
    choice: Literal["", "nm-d-plus-l", "nm2-dl", "nm2-d2l", "nmd2l"] = NO_CHOICE  # the student's option


def sweep_values(variable: str, own: int) -> np.ndarray:
    """Distinct integers from 1 to the variable's bound, evenly spaced on a log scale, with `own`."""
    grid = np.round(np.geomspace(1, LARGEST[variable], SWEEP_POINTS)).astype(np.int64)
    return np.unique(np.append(grid, own))


def _at(params: ComplexityParams, variable: str, value: int) -> tuple[int, int, int, int]:
    """(N, M, d, l) at the student's values, with `variable` set to `value`."""
    sizes = {"N": params.n, "M": params.m, "d": params.d, "l": params.l}
    sizes[variable] = int(value)
    return sizes["N"], sizes["M"], sizes["d"], sizes["l"]


@dataclass(frozen=True)
class OptionCurve:
    option: Option
    normalised: np.ndarray  # cost(x) · exact(1) / cost(1), float, one per sweep value
    growth: Fraction  # cost at the sweep's end / cost at its start
    ratio: Fraction  # growth / the exact count's growth: 1 when it grows like the count
    ratios: np.ndarray  # normalised / exact at each sweep value, float

    @property
    def follows(self) -> bool:
        """True when the option's curve lies on the exact count over the whole sweep."""
        return self.ratio == 1


@dataclass(frozen=True)
class ComplexityResult:
    n: int
    m: int
    d: int
    l: int  # noqa: E741
    vary: str
    own: int  # the student's value of the swept variable
    sweep: np.ndarray  # the swept variable's values, 1 … LARGEST[vary], int
    exact: np.ndarray  # attention_flops along the sweep, float for the plot
    exact_growth: Fraction  # exact count at the end / at the start
    curves: tuple[OptionCurve, ...]  # in the bank's order
    scores: int  # Q Kᵀ at the student's values: attention_flops(n, m, d, 0)
    weighted_values: int  # weights · V: attention_flops(n, m, 0, l)
    total: int  # attention_flops(n, m, d, l)
    separating: dict[str, tuple[str, ...]]  # option id -> the variables whose sweep parts it from the count
    choice: str  # the student's option id, "" when not known

    def curve(self, option_id: str) -> OptionCurve:
        return next(curve for curve in self.curves if curve.option.id == option_id)


def complexity_result(params: ComplexityParams) -> ComplexityResult:
    vary = params.vary
    own = {"N": params.n, "M": params.m, "d": params.d, "l": params.l}[vary]
    sweep = sweep_values(vary, own)
    exact_counts = [attention_flops(*_at(params, vary, x)) for x in sweep]
    exact_growth = Fraction(exact_counts[-1], exact_counts[0])
    exact = np.array(exact_counts, dtype=float)
    curves = []
    for option in OPTIONS:
        costs = [option.cost(*_at(params, vary, x)) for x in sweep]
        growth = Fraction(costs[-1], costs[0])
        normalised = np.array([Fraction(c * exact_counts[0], costs[0]) for c in costs], dtype=float)
        curves.append(OptionCurve(option, normalised, growth, growth / exact_growth, normalised / exact))
    separating = {
        option.id: tuple(
            variable for variable in VARIABLES
            if Fraction(option.cost(*_at(params, variable, LARGEST[variable])), option.cost(*_at(params, variable, 1)))
            != Fraction(attention_flops(*_at(params, variable, LARGEST[variable])),
                        attention_flops(*_at(params, variable, 1)))
        )
        for option in OPTIONS
    }
    return ComplexityResult(
        n=params.n, m=params.m, d=params.d, l=params.l, vary=vary, own=own, sweep=sweep, exact=exact,
        exact_growth=exact_growth, curves=tuple(curves),
        scores=attention_flops(params.n, params.m, params.d, 0),
        weighted_values=attention_flops(params.n, params.m, 0, params.l),
        total=attention_flops(params.n, params.m, params.d, params.l),
        separating=separating, choice=params.choice,
    )


# Words shared by the alt text, the caption and the figure --------------------------------------------


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


def factor_text(factor: Fraction) -> str:
    """×2,048, ×4.92, ×≈13,312."""
    return f"×{number_text(factor)}"


def point_text(result: ComplexityResult) -> str:
    return f"N = {result.n}, M = {result.m}, d = {result.d}, l = {result.l}"


def fixed_text(result: ComplexityResult) -> str:
    """The three variables held fixed, e.g. "N = 512, d = 64, l = 64"."""
    values = {"N": result.n, "M": result.m, "d": result.d, "l": result.l}
    return ", ".join(f"{variable} = {values[variable]}" for variable in VARIABLES if variable != result.vary)


def count_sentence(result: ComplexityResult) -> str:
    n, m, d, l = result.n, result.m, result.d, result.l  # noqa: E741
    return (f"At {point_text(result)}: {n}·{m}·({d}+{l}) = {result.total:,} multiply-adds "
            f"(Q Kᵀ {n}·{m}·{d} = {result.scores:,}, weights·V {n}·{m}·{l} = {result.weighted_values:,}).")


def growth_sentence(result: ComplexityResult) -> str:
    """How much each curve grows over the sweep, and which follow the exact count."""
    x, end = result.vary, int(result.sweep[-1])
    parts = []
    for curve in result.curves:
        same = " (the same)" if curve.follows else ""
        parts.append(f"{curve.option.text} {factor_text(curve.growth)}{same}")
    return (f"From {x} = 1 to {x} = {end}, with {fixed_text(result)}, the exact count grows "
            f"{factor_text(result.exact_growth)}; scaled to it at {x} = 1, " + ", ".join(parts) + ".")


def exact_slope_text(result: ComplexityResult) -> str:
    """The exact count's slope on log-log axes against the swept variable."""
    x = result.vary
    if x in ("N", "M"):
        return "1 (doubling it doubles the count)"
    other_name = "l" if x == "d" else "d"
    other = result.l if x == "d" else result.d
    end = int(result.sweep[-1])
    return (f"{x}/({x}+{other_name}), which rises from 1/(1+{other}) = {number_text(Fraction(1, 1 + other))} "
            f"at {x} = 1 to {end}/({end}+{other}) = {number_text(Fraction(end, end + other))} at {x} = {end} "
            "and never reaches 1, "
            f"because the {other_name} part of the count does not grow with {x}")


def slopes_sentence(result: ComplexityResult) -> str:
    x = result.vary
    options = "; ".join(f"{curve.option.text} {curve.option.exponents.get(x, 0)}"
                        if curve.option.id != CORRECT else f"{curve.option.text} the same"
                        for curve in result.curves)
    return f"Slopes against {x}: the exact count {exact_slope_text(result)}; {options}."


def followers_sentence(result: ComplexityResult) -> str:
    x = result.vary
    followers = [curve.option.text for curve in result.curves if curve.follows]
    others = [curve.option.text for curve in result.curves if not curve.follows]
    if not others:
        return (f"Every option is linear in {x}, like the exact count, so in this sweep all four curves lie on "
                f"it: varying {x} cannot tell them apart; vary M, d or l.")
    return (f"On the exact count in this sweep: {_joined(followers)}; "
            f"parting from it: {_joined(others)}.")


def _joined(items: list[str], conjunction: str = "and") -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + f" {conjunction} " + items[-1]


def _doubling_d(result: ComplexityResult) -> str:
    d, l = result.d, result.l  # noqa: E741
    doubled = Fraction(attention_flops(result.n, result.m, 2 * d, l), result.total)
    return (f"doubling d from {d} to {2 * d} multiplies the count by ({2 * d}+{l})/({d}+{l}) = "
            f"{number_text(doubled)}")


def _doubling_m(result: ComplexityResult) -> str:
    m = result.m
    doubled = attention_flops(result.n, 2 * m, result.d, result.l)
    return (f"doubling M from {m} to {2 * m} takes the count from {result.total:,} to {doubled:,} "
            f"({factor_text(Fraction(doubled, result.total))})")


WHAT_IS_WRONG: dict[str, Callable[[ComplexityResult], str]] = {
    "nm2-dl": lambda r: (
        f"O(NM²dl) grows with M², but doubling M only doubles Q Kᵀ and weights·V, each linear in M: at "
        f"{point_text(r)}, {_doubling_m(r)}, not ×4. It also multiplies d by l, but the two products run one "
        "after the other, so their costs add (d + l)."),
    "nm2-d2l": lambda r: (
        f"O(NM²d²l) squares M and d, but each of the two products is linear in N, M and its inner width: at "
        f"{point_text(r)}, {_doubling_m(r)}, not ×4, and {_doubling_d(r)}, not 4; the costs of Q Kᵀ and "
        "weights·V add (d + l)."),
    "nmd2l": lambda r: (
        "O(NMd²l) has N and M right, but squares d and multiplies it by l: Q Kᵀ costs N·M·d and "
        f"weights·V N·M·l, one after the other, so they add (d + l): at {point_text(r)}, {_doubling_d(r)}, not 4."),
}


def choice_sentence(result: ComplexityResult) -> str:
    """What the student's option gets right or wrong, and which sweeps show it; "" with no choice."""
    if not result.choice:
        return ""
    option = OPTION_BY_ID[result.choice]
    if option.id == CORRECT:
        return (f"Your answer {option.text} is right: scaled at the first point, its curve lies on the exact "
                "count in every sweep (N, M, d and l).")
    curve = result.curve(option.id)
    where = result.separating[option.id]
    if curve.follows:
        seen = (f"In this sweep of {result.vary} it lies on the exact count; vary {_joined(list(where), 'or')} "
                "to see it part from it.")
    else:
        seen = (f"In this sweep it reaches {number_text(curve.ratio)} times the exact count at "
                f"{result.vary} = {int(result.sweep[-1])}; it parts from it when {_joined(list(where), 'or')} varies.")
    return f"Your answer {option.text} is wrong. {WHAT_IS_WRONG[option.id](result)} {seen}"


@register
class ComplexityKind(VisualKind[ComplexityResult]):
    name = "complexity"
    title = "The cost of attention: N·M·(d + l) against the options"
    Params = ComplexityParams
    controls = (
        Control("vary", "Vary", "choice",
                choices=(("M", "M (keys)"), ("N", "N (queries)"), ("d", "d (query/key width)"),
                         ("l", "l (value width)")),
                help="The swept variable runs from 1 to its largest value; the others stay as set."),
        Control("n", "Queries N", "int", min=1, max=LARGEST["N"], step=1),
        Control("m", "Keys M", "int", min=1, max=LARGEST["M"], step=1),
        Control("d", "Query/key width d", "int", min=1, max=LARGEST["d"], step=1),
        Control("l", "Value width l", "int", min=1, max=LARGEST["l"], step=1),
    )
    choice_param = "choice"
    learn = "/learn/complexity"
    inches = (WIDTH, 4.3)
    narrow_inches = (NARROW_WIDTH, 7.6)

    def compute(self, params: ComplexityParams) -> ComplexityResult:
        return complexity_result(params)

    def alt(self, params: ComplexityParams, result: ComplexityResult) -> str:
        x = result.vary
        text = (f"Two log-log plots against {VARIABLE_NAMES[x]}, from 1 to {int(result.sweep[-1])}: the exact "
                f"multiply-add count N·M·(d+l) with the four options' curves, and each option divided by the "
                f"exact count. {growth_sentence(result)} {followers_sentence(result)} {count_sentence(result)}")
        choice = choice_sentence(result)
        return f"{text} {choice}" if choice else text

    def caption(self, params: ComplexityParams, result: ComplexityResult) -> str:
        x = result.vary
        return (
            "Exact counts from the engine's attention_flops: Q Kᵀ needs N·M·d multiply-adds and weights·V "
            "needs N·M·l, done one after the other, so softmax(Q Kᵀ)V costs N·M·(d + l); the softmax adds "
            "only N·M more, no more than either product. "
            f"Each option's formula is scaled to equal the exact count at {x} = 1, so the plot compares how "
            "they grow, not the constant factors big-O leaves out. "
            f"{slopes_sentence(result)} {count_sentence(result)} "
            "These are counts, not timings: on a shared server, times at small sizes are mostly fixed "
            "overhead and change from run to run, so they would not show these slopes."
        )

    def draw(self, params: ComplexityParams, result: ComplexityResult, inches):
        from app.plots.complexity import draw_complexity

        return draw_complexity(result, inches)

