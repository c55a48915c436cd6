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


def check_visual(kind: str, params: dict, question_type: str | None = None, key=None) -> list[tuple[tuple, str]]:
    """Problems with a bank's visual spec, as (path, message) pairs for the bank loader.

    A cells question's visual draws the student's prediction: its kind must declare cells predictions
    (VisualKind.predictions). A numeric question's visual draws it where its kind declares numeric predictions
    (elsewhere the figure shows the quantity its own way: a count, a head width). Either way the visual must
    take the question's `key` (its answer) as a prediction.
    """
    from .service import describe_validation_error

    _load_kinds()
    visual_kind = KINDS.get(kind)
    if visual_kind is None:
        return [(("kind",), f"unknown visual kind {kind!r}; the kinds are {', '.join(sorted(KINDS))}")]
    if question_type == "cells" and "cells" not in visual_kind.predictions:
        able = sorted(name for name, other in KINDS.items() if "cells" in other.predictions)
        return [(("kind",), f"a cells question's visual draws the student's prediction, and {kind!r} cannot; "
                            f"the kinds that can: {', '.join(able)}")]
    try:
        visual_kind.parse(params)
    except ValidationError as error:
        return describe_validation_error(error)
    if question_type in visual_kind.predictions and key is not None:
        # The key drawn as a prediction (and as the answer, where the kind draws one) must fit the figure.
        prediction, key_param = visual_kind.predictions[question_type]
        try:
            visual_kind.parse({**params, prediction: key, **({key_param: key} if key_param else {})})
        except ValidationError as error:
            return [(("params",), f"the question's answer cannot be drawn on this figure: {message}")
                    for _, message in describe_validation_error(error)]
    return []


def _load_kinds() -> None:
    if not KINDS:
        from . import kinds  # noqa: F401  (registers every kind)


__all__ = ["Computed", "Control", "KINDS", "Rendered", "VisualKind", "VisualParams", "check_visual", "get_kind",
           "register"]
