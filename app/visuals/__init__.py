"""The live visuals a question can ask for (`visual: {kind, params}`): their kinds, with bounded
parameters, each computing with app.engine and drawing with app.plots.
"""

from __future__ import annotations

from pydantic import ValidationError

from .base import Computed, Control, Rendered, VisualKind, VisualParams

KINDS: dict[str, VisualKind] = {}


def register(kind_class: type[VisualKind]) -> type[VisualKind]:
    KINDS[kind_class.name] = kind_class()
    return kind_class


def get_kind(name: str) -> VisualKind | None:
    _load_kinds()
    return KINDS.get(name)


def check_visual(kind: str, params: dict) -> list[tuple[tuple, str]]:
    """Problems with a bank's visual spec, as (path, message) pairs for the bank loader."""
    from .service import describe_validation_error

    _load_kinds()
    visual_kind = KINDS.get(kind)
    if visual_kind is None:
        return [(("kind",), f"unknown visual kind {kind!r}; the kinds are {', '.join(sorted(KINDS))}")]
    try:
        visual_kind.parse(params)
    except ValidationError as error:
        return describe_validation_error(error)
    return []


def _load_kinds() -> None:
    if not KINDS:
        from . import kinds  # noqa: F401  (registers every kind)


__all__ = ["Computed", "Control", "KINDS", "Rendered", "VisualKind", "VisualParams", "check_visual", "get_kind",
           "register"]
