"""The live visuals a question can ask for: their kinds and the validation of their parameters.

`check_visual(kind, params)` returns a list of (path, message) problems for the bank loader.
"""

from __future__ import annotations

KINDS: dict[str, object] = {}


def check_visual(kind: str, params: dict) -> list[tuple[tuple, str]]:
    if KINDS and kind not in KINDS:
        return [(("kind",), f"unknown visual kind {kind!r}; known kinds are {', '.join(sorted(KINDS))}")]
    return []
