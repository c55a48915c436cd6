"""The figures' font, DejaVu Sans (matplotlib's bundled default): which characters it can draw, and the words
for those it cannot. The real model's tokens are drawn with code points for those; the toy refuses them."""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path


@functools.cache
def _font_code_points() -> frozenset[int]:
    # The figures' font is matplotlib's bundled DejaVu Sans (the default sans-serif). Its character map is
    # read with fontTools (a matplotlib dependency) from the file, without importing matplotlib itself.
    from fontTools.ttLib import TTFont

    package = Path(importlib.util.find_spec("matplotlib").submodule_search_locations[0])
    with TTFont(package / "mpl-data" / "fonts" / "ttf" / "DejaVuSans.ttf", lazy=True) as font:
        return frozenset(font.getBestCmap())


def missing_glyphs(text: str) -> list[str]:
    """The characters of `text` the figure's font (DejaVu Sans) has no glyph for, each once, in order."""
    covered = _font_code_points()
    return list(dict.fromkeys(ch for ch in text if ord(ch) not in covered))


def named(characters) -> str:
    """'日 (U+65E5), 本 (U+672C)': characters with their code points, for the words."""
    return ", ".join(f"{ch} (U+{ord(ch):04X})" for ch in characters)


def drawable(token: str) -> str:
    """The token as the figure writes it: characters the font lacks as their code point, e.g. 'U+304B'."""
    covered = _font_code_points()
    return "".join(ch if ord(ch) in covered else f"U+{ord(ch):04X}" for ch in token)


def font_sentence(tokens) -> str:
    """What the alt text and caption say when the font cannot show some tokens ('' when it can)."""
    missing = missing_glyphs("".join(tokens))
    if not missing:
        return ""
    return (f" The figure's font, DejaVu Sans, has no glyph for {named(missing)}, so the figure writes "
            f"{'that character' if len(missing) == 1 else 'those characters'} as the code point.")
