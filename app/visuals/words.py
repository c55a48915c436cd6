"""Wording shared by the visuals' alt texts and captions, so that every figure says a thing the same way."""

from __future__ import annotations

from collections.abc import Sequence

from .base import estimated_width


LABEL_POINTS, MAX_LABEL_WIDTH = 10, 16 * 0.64 * 10 / 72  # inches: 16 average letters at 10 pt


def short(word: str) -> str:
    """A word as a figure labels it: cut ("…") to the width of 16 average letters, so one long word, or one of
    wide letters ("mmmm…"), cannot crowd out the panels; the words have it whole."""
    if estimated_width([word], LABEL_POINTS) <= MAX_LABEL_WIDTH:
        return word
    cut = len(word)
    while cut > 1 and estimated_width([word[:cut] + "…"], LABEL_POINTS) > MAX_LABEL_WIDTH:
        cut -= 1
    return word[:cut] + "…"


def format_temperature(temperature: float) -> str:
    """1 -> "1.0", 0.05 -> "0.05": as typed, with a decimal point so it reads as a temperature."""
    text = f"{temperature:g}"
    return text if any(mark in text for mark in ".e") else text + ".0"


def quoted_list(words: Sequence[str]) -> str:
    """'a', 'b' and 'c'."""
    quoted = [f"'{word}'" for word in words]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " and " + quoted[-1]


def unknown_words_sentence(unknown: Sequence[str]) -> str:
    return f"Words not in the toy lexicon, given pseudo-random features: {', '.join(unknown)}."


def plural(count: int, noun: str) -> str:
    """plural(1, "step") -> "1 step"; plural(3, "step") -> "3 steps"."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def minus(number: str) -> str:
    """A printed number with a true minus sign (U+2212), as the figures' tick labels print it and as a screen reader
    reads "minus"; a number that prints as zero ("-0.00") loses its sign."""
    return number.lstrip("+-") if float(number) == 0 else number.replace("-", "−")


def format_difference(value: float) -> str:
    """0 stays "0"; rounding-level values keep their exponent rather than showing as 0.00."""
    if value == 0:
        return "0"
    if value < 1e-3:
        return f"{value:.1e}"
    return f"{value:.3f}"


def format_small(value: float) -> str:
    """3 significant figures, with an exponent below 1e-3."""
    return f"{value:.2g}" if abs(value) < 1e-3 and value != 0 else f"{value:.3g}"


def symmetric_limit(*arrays) -> float:
    """The half-range for a diverging colour map centred on zero, from the data itself."""
    import numpy as np

    peak = max(float(np.max(np.abs(a))) for a in arrays if np.size(a))
    return peak if peak > 0 else 1.0
