"""The live visuals a question can ask for (`visual: {kind, params}`): their kinds, bounded
parameters, and a bounded render cache. Each kind computes with app.engine and draws with app.plots.
"""

from __future__ import annotations

from pydantic import ValidationError

from .base import Control, Description, Rendered, VisualKind, VisualParams, describe_validation_error

KINDS: dict[str, VisualKind] = {}


def register(kind_class: type[VisualKind]) -> type[VisualKind]:
    KINDS[kind_class.name] = kind_class()
    return kind_class


def get_kind(name: str) -> VisualKind | None:
    _load_kinds()
    return KINDS.get(name)


def check_visual(kind: str, params: dict) -> list[tuple[tuple, str]]:
    """Problems with a bank's visual spec, as (path, message) pairs for the bank loader."""
    _load_kinds()
    visual_kind = KINDS.get(kind)
    if visual_kind is None:
        return [(("kind",), f"unknown visual kind {kind!r}; the kinds are {', '.join(sorted(KINDS))}")]
    try:
        visual_kind.parse(params)
    except ValidationError as error:
        return describe_validation_error(error)
    return []


_loaded = False


def _load_kinds() -> None:
    # Imported lazily: the kinds pull in matplotlib, which `validate-quizzes` needs only for visuals.
    global _loaded
    if not _loaded:
        from . import kinds  # noqa: F401  (registers every kind)

        _loaded = True


__all__ = ["Control", "Description", "KINDS", "Rendered", "VisualKind", "VisualParams", "check_visual", "get_kind", "register"]
