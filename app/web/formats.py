"""How the pages write numbers: scores and percentages rounded half up (12.5 % is 13 %, as students learnt it,
not Python's half-to-even 12 %), and answers without an exponent a student would not have typed."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal


def _half_up(value: float, places: int) -> str:
    text = f"{Decimal(repr(float(value))).quantize(Decimal(1).scaleb(-places), ROUND_HALF_UP):f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def score(value: float) -> str:
    """A score to two decimals, half up, without trailing zeros: 0.125 -> '0.13', 2.0 -> '2'."""
    return _half_up(value, 2)


def percent(earned: float, out_of: float) -> str:
    """earned / out_of as a whole percentage, half up: 1 of 8 -> '13'."""
    return _half_up(100 * earned / out_of, 0) if out_of else "0"


def number(value: float, exact: bool = False) -> str:
    """A number as an answer page shows it: a whole number in full (8388608, never 8.38861e+06); otherwise six
    significant figures, or, `exact` (what the student typed), the shortest text that reads back as the same
    number (3.0100001, which six figures would show as 3.01 beside a tolerance it misses)."""
    value = float(value)
    if value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(value) if exact else f"{value:.6g}"
