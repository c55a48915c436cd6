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


def check_visual(kind: str, params: dict, question_type: str | None = None, key=None,
                 grid=None) -> list[tuple[tuple, str]]:
    """Problems with a bank's visual spec, as (path, message) pairs for the bank loader: paths within `visual`,
    except those that start with "grid", the question's own.

    A cells question's visual draws the student's prediction: its kind must declare cells predictions
    (VisualKind.predictions), and the question's `grid` (its rows and cols: labels or counts) must be the
    figure's, in order, or the student would tick "sun" on a grid whose figure says "sky". A numeric question's
    visual draws it where its kind declares numeric predictions (elsewhere the figure shows the quantity its own
    way: a count, a head width). Either way the visual must take the question's `key` (its answer) as a
    prediction.
    """
    from ..bank.messages import closest
    from .service import describe_validation_error

    _load_kinds()
    visual_kind = KINDS.get(kind)
    if visual_kind is None:
        close = closest(str(kind), sorted(KINDS))
        hint = f" (did you mean {close!r}?)" if close else ""
        return [(("kind",), f"unknown visual kind {kind!r}{hint}; the kinds are {', '.join(sorted(KINDS))}")]
    if question_type == "cells" and "cells" not in visual_kind.predictions:
        able = sorted(name for name, other in KINDS.items() if "cells" in other.predictions)
        return [(("kind",), f"a cells question's visual draws the student's prediction, and {kind!r} cannot; "
                            f"the kinds that can: {', '.join(able)}")]
    try:
        parsed = visual_kind.parse(params)
    except ValidationError as error:
        return describe_validation_error(error)
    if question_type == "cells" and grid is not None:
        problems = _grid_problems(grid, visual_kind.figure_grid(parsed))
        if problems:
            return problems
    if question_type in visual_kind.predictions and key is not None:
        # The key drawn as a prediction (and as the answer, where the kind draws one) must fit the figure.
        prediction, key_param = visual_kind.predictions[question_type]
        try:
            visual_kind.parse({**params, prediction: key, **({key_param: key} if key_param else {})})
        except ValidationError as error:
            return [(("params",), f"the question's answer cannot be drawn on this figure: {message}")
                    for _, message in describe_validation_error(error)]
    return []


def _grid_problems(grid, figure_grid: tuple[list[str], list[str]]) -> list[tuple[tuple, str]]:
    """Where a cells question's grid (rows and cols: labels, or a count) is not the figure's."""
    problems = []
    for axis, labels, what in (("rows", figure_grid[0], "queries"), ("cols", figure_grid[1], "keys")):
        given = getattr(grid, axis)
        given = [str(i) for i in range(1, given + 1)] if isinstance(given, int) else list(given)
        if given != labels:
            numbered = given == [str(i) for i in range(1, len(given) + 1)]
            problems.append((("grid", axis), f"the grid's {axis} must be the figure's {what}, in order: "
                                             f"{', '.join(labels)}; the grid has "
                                             + (f"{len(given)} numbered ones" if numbered else ", ".join(given))))
    return problems


def _load_kinds() -> None:
    if not KINDS:
        from . import kinds  # noqa: F401  (registers every kind)


__all__ = ["Computed", "Control", "KINDS", "Rendered", "VisualKind", "VisualParams", "check_visual", "get_kind",
           "register"]
