"""Item analysis for instructors: facility, discrimination, score histograms and answer counts.

Pure functions over plain lists (no Flask, no database), so every number on the instructor pages can be
checked by hand. Definitions follow classical test theory; docs/instructors.md gives the formulas.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

# Below this many finished attempts a correlation over students is mostly noise, so none is reported.
MIN_ATTEMPTS = 5
# Below this many it is shown but not flagged: with 8 students scoring 70-80 %, the item-rest r of a sound item
# came out at -1.00 (the rest score falls whenever the item is right when totals barely vary), beside D = +1.00.
# Item-analysis texts ask for 20 to 30 students or more before acting on discrimination.
MIN_FLAG_SAMPLE = 20
# Kelley's groups: the top and bottom 27% of students by total score.
UPPER_LOWER_FRACTION = 0.27
# Standard item-analysis guidance (e.g. Ebel & Frisbie): keep facility in 0.3..0.9 and
# item-rest discrimination at 0.2 or above.
HARD_BELOW = 0.3
EASY_ABOVE = 0.9
WEAK_DISCRIMINATION_BELOW = 0.2

FULL_CREDIT_TOLERANCE = 1e-9


@dataclass(frozen=True)
class Estimate:
    """A statistic that may be unavailable; `reason` says why when `value` is None."""

    value: float | None
    reason: str | None = None


@dataclass(frozen=True)
class Bin:
    lower: float  # inclusive
    upper: float  # exclusive, except the last bin, which includes 1.0
    count: int


@dataclass(frozen=True)
class ValueFacility:
    """The answers to a parameterised question whose variant drew `param` = `value`, and their mean score."""

    param: str
    value: int | float | str
    responses: int
    facility: float
    few: bool  # fewer than MIN_ATTEMPTS answers: a difference from the other values is mostly chance


@dataclass(frozen=True)
class Flag:
    code: str  # "hard" | "easy" | "weak-discrimination" | "negative-discrimination"
    label: str
    explanation: str


def mean(values: Sequence[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None


def full_credit_rate(scores: Sequence[float]) -> float | None:
    """The fraction of responses that earned the whole point (score == 1)."""
    if not scores:
        return None
    return sum(1 for s in scores if s >= 1.0 - FULL_CREDIT_TOLERANCE) / len(scores)


def _too_few(n: int, min_n: int) -> Estimate:
    return Estimate(None, f"only {n} finished attempt{'s' if n != 1 else ''} answered it; "
                          f"at least {min_n} are needed")


def point_biserial(item_scores: Sequence[float], totals: Sequence[float], min_n: int = MIN_ATTEMPTS) -> Estimate:
    """Item-rest correlation: Pearson's r between the item score and the total minus the item.

    For 0/1 items this is the (corrected) point-biserial correlation; partial credit makes it the
    plain Pearson correlation. Leaving the item out of the total avoids correlating it with itself.
    """
    if len(item_scores) != len(totals):
        raise ValueError("item_scores and totals must have one entry per attempt")
    n = len(item_scores)
    if n < min_n:
        return _too_few(n, min_n)
    rest = [total - item for item, total in zip(item_scores, totals)]
    mean_item, mean_rest = math.fsum(item_scores) / n, math.fsum(rest) / n
    item_dev = [x - mean_item for x in item_scores]
    rest_dev = [r - mean_rest for r in rest]
    item_ss = math.fsum(d * d for d in item_dev)
    rest_ss = math.fsum(d * d for d in rest_dev)
    if item_ss <= 1e-12:
        return Estimate(None, "every finished attempt got the same score on it, so it cannot separate students")
    if rest_ss <= 1e-12:
        return Estimate(None, "every finished attempt got the same score on the other questions")
    covariance = math.fsum(a * b for a, b in zip(item_dev, rest_dev))
    return Estimate(max(-1.0, min(1.0, covariance / math.sqrt(item_ss * rest_ss))))


def group_size(n: int, fraction: float = UPPER_LOWER_FRACTION) -> int:
    """Students in each of the upper and lower groups: fraction * n rounded half up, at least 1."""
    return max(1, math.floor(fraction * n + 0.5))


def upper_lower_difference(item_scores: Sequence[float], totals: Sequence[float],
                           fraction: float = UPPER_LOWER_FRACTION, min_n: int = MIN_ATTEMPTS) -> Estimate:
    """Kelley's D: mean item score of the top `fraction` of students by total minus that of the bottom.

    Students tied on the total at a group's boundary share its places left equally (each counts with the same
    weight), so D does not depend on the order the attempts were made in.
    """
    if len(item_scores) != len(totals):
        raise ValueError("item_scores and totals must have one entry per attempt")
    n = len(item_scores)
    if n < min_n:
        return _too_few(n, min_n)
    if max(item_scores) - min(item_scores) <= 1e-12:
        return Estimate(None, "every finished attempt got the same score on it, so it cannot separate students")
    g = group_size(n, fraction)
    rounded = [round(total, 6) for total in totals]  # 0.1 + 0.2 ties with 0.3
    return Estimate(_group_mean(item_scores, rounded, g) - _group_mean(item_scores, [-t for t in rounded], g))


def _group_mean(item_scores: Sequence[float], totals: Sequence[float], g: int) -> float:
    """The mean item score of the g students with the highest totals, ties at the boundary sharing its places."""
    boundary = sorted(totals, reverse=True)[g - 1]
    inside = [score for score, total in zip(item_scores, totals) if total > boundary]
    tied = [score for score, total in zip(item_scores, totals) if total == boundary]
    return (math.fsum(inside) + (g - len(inside)) * math.fsum(tied) / len(tied)) / g


def histogram(fractions: Sequence[float], bins: int = 10) -> list[Bin]:
    """Counts of scores (fractions of the maximum, 0..1) in `bins` equal bands; 1.0 falls in the last."""
    counts = [0] * bins
    for value in fractions:
        # The epsilon keeps 0.3 (which may arrive as 0.29999999999999993) in the 0.3 band.
        index = int(math.floor(value * bins + 1e-9))
        counts[min(max(index, 0), bins - 1)] += 1
    return [Bin(i / bins, (i + 1) / bins, c) for i, c in enumerate(counts)]


def pick_counts(selections: Sequence[Sequence[str]], option_ids: Sequence[str]) -> tuple[dict[str, int], int]:
    """How often each option was picked (every id of a multi-select counts), in option order.

    Returns the counts and the number of picks of ids that are not options (answers to an older
    version of the question).
    """
    counts = dict.fromkeys(option_ids, 0)
    other = 0
    for selected in selections:
        for option_id in selected:
            if option_id in counts:
                counts[option_id] += 1
            else:
                other += 1
    return counts, other


def most_common(values: Sequence[Hashable], limit: int) -> tuple[list[tuple[Hashable, int]], int]:
    """The `limit` most frequent values, ties in order of first appearance, and how many others remain."""
    ranked = Counter(values).most_common()  # Counter keeps first-seen order among equal counts
    shown = ranked[:limit]
    return shown, sum(count for _, count in ranked[limit:])


def facility_by_value(answers: Sequence[tuple[Mapping[str, int | float | str], float]],
                      min_n: int = MIN_ATTEMPTS) -> list[ValueFacility]:
    """For each parameter (in order of first use) and each value it took (numbers ascending, then text), the
    answers whose variant drew that value and their mean score. `answers` holds (parameter values, score) pairs;
    every answer counts once per parameter, with the other parameters' values mixed in."""
    groups: dict[str, dict[int | float | str, list[float]]] = {}
    for values, score in answers:
        for param, value in values.items():
            groups.setdefault(param, {}).setdefault(value, []).append(score)
    rows = []
    for param, by_value in groups.items():
        for value in sorted(by_value, key=lambda v: (isinstance(v, str), v)):
            scores = by_value[value]
            rows.append(ValueFacility(param, value, len(scores), math.fsum(scores) / len(scores), len(scores) < min_n))
    return rows


def item_flags(facility: float | None, discrimination: float | None, responses: int, sample: int,
               min_n: int = MIN_ATTEMPTS, min_sample: int = MIN_FLAG_SAMPLE) -> list[Flag]:
    """Warnings for an item that standard guidance says to review; none on too little data: `responses` answers
    for facility, a discrimination `sample` of finished attempts for discrimination."""
    flags: list[Flag] = []
    if facility is not None and responses >= min_n:
        if facility < HARD_BELOW:
            flags.append(Flag("hard", "Hard",
                              f"Students earned under {HARD_BELOW:.0%} of the credit. Check the answer key and the "
                              "wording, and whether the topic was taught before the quiz."))
        elif facility > EASY_ABOVE:
            flags.append(Flag("easy", "Easy",
                              f"Students earned over {EASY_ABOVE:.0%} of the credit, so it tells strong and weak "
                              "students apart very little. Keep it as a warm-up, or make the wrong options "
                              "more plausible."))
    if discrimination is not None and sample >= min_sample:
        if discrimination < 0:
            flags.append(Flag("negative-discrimination", "Negative discrimination",
                              f"The item-rest correlation is {discrimination:.3f}: students who did well on the "
                              "rest of the quiz did worse on this question than those who did badly. Check the "
                              "answer key first, then look for a misleading wording."))
        elif discrimination < WEAK_DISCRIMINATION_BELOW:
            flags.append(Flag("weak-discrimination", "Weak discrimination",
                              f"The item-rest correlation is {discrimination:.3f}, below "
                              f"{WEAK_DISCRIMINATION_BELOW}: students who did well on the rest of the quiz were "
                              "hardly more likely to get this right. Look for ambiguity, a second defensible "
                              "answer, or an option that gives the answer away."))
    return flags
