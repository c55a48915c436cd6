"""Everything a page needs to show one visual: validated params, the alt text and caption of its one
computation, its image URLs, and a sentence when the student's control values could not be used.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlencode

from flask import url_for
from pydantic import ValidationError

from ..visuals import Computed, VisualKind, VisualParams, get_kind
from ..visuals.predictions import cells_text, number_text
from ..visuals.service import (
    RenderGateFull,
    VisualInputError,
    parse_query,
    query_values,
)
from .limits import RendersBusy, TooManyRenders, charge_plot_render, render_client
from .plots import visual_cache

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Source:
    srcset: str  # the figure at 1x and 2x, for sharp screens
    width: int  # its size in CSS pixels, known before it is drawn: the page reserves its space
    height: int


@dataclass(frozen=True)
class Images:
    """The URLs of a visual's image: the wide layout, and the phone layout where the kind has one."""

    src: str
    srcset: str
    width: int
    height: int
    narrow: Source | None

    def as_dict(self) -> dict:
        return {"src": self.src, "srcset": self.srcset, "width": self.width, "height": self.height,
                "narrow": None if self.narrow is None else vars(self.narrow)}


NARROW_MEDIA = "(max-width: 640px)"  # where the page shows the narrow layout (static/style.css agrees)


@dataclass(frozen=True)
class VisualView:
    kind: VisualKind
    params: VisualParams
    computed: Computed  # the result the image is drawn from, with its alt text and caption
    images: Images
    json_url: str
    error: str | None
    learn: str
    status: int = 200  # 400: the student's values could not be used; 429: too many plots; 503: too busy drawing
    retry_after: int | None = None  # with 429 and 503: the seconds after which asking again may work
    typed: Mapping[str, str] = field(default_factory=dict)  # with 400, 429, 503: what the student typed, by control
    invalid: Mapping[str, str] = field(default_factory=dict)  # with 400: what to fix, by control
    across: frozenset[str] = frozenset()  # with 400: controls a rule across fields is about (its sentence: error)
    note: str | None = None  # why the student's prediction is not drawn on their own values
    # The note's words whenever the figure carries a prediction: the page hides them until its grid controls change
    # (static/visual.js shows them then, as the page without JavaScript shows `note`).
    drop_note: str | None = None

    @property
    def values(self) -> dict[str, str]:
        return query_values(self.params)

    def shown(self, name: str) -> str:
        """A control's value on the page: what the student typed when it was refused, else the figure's."""
        return self.typed.get(name, self.values.get(name, ""))

    @property
    def kept(self) -> dict[str, str]:
        """The params the figure carries that no control shows (the student's prediction and choice), for the
        live controls to send with the controls' values."""
        names = (*self.kind.prediction_params, *filter(None, [self.kind.choice_param]))
        controls = {control.name for control in self.kind.controls}  # head-split's choice is also a control
        return {name: self.values[name] for name in names if name in self.values and name not in controls}


def image_urls(kind: VisualKind, params: VisualParams, computed: Computed) -> Images:
    # One url_for for the path, then the query string: building a dozen URLs per page through the router
    # was half of an answer page's time. urlencode escapes the comma, which separates a srcset's candidates.
    path = url_for("plots.image", kind_name=kind.name, ext=kind.format)
    values = query_values(params)

    def url(**variant) -> str:
        query = urlencode({**values, **variant})
        return f"{path}?{query}" if query else path

    def srcset(**layout) -> str:
        if kind.format == "svg":
            return f"{url(**layout)} 1x"  # an SVG is sharp at any scale
        return f"{url(**layout)} 1x, {url(scale=2, **layout)} 2x"

    narrow = None
    if "narrow" in computed.sizes:
        narrow = Source(srcset(layout="narrow"), *computed.sizes["narrow"])
    return Images(url(), srcset(), *computed.sizes["wide"], narrow)


def answer_text(answer) -> str:
    """A student's answer (or a key) as a visual param's value: option ids comma-separated, true/false, cells
    as "row,col;row,col", or a number."""
    if isinstance(answer, bool):
        return "true" if answer else "false"
    if isinstance(answer, (int, float)):
        return number_text(answer)
    if isinstance(answer, (list, tuple)) and all(isinstance(item, (list, tuple)) for item in answer):
        return cells_text(answer)  # an empty list is no cells, and no options: "" either way
    if isinstance(answer, (list, tuple)):
        return ",".join(answer)
    return str(answer)


CHOICE_TYPES = ("true_false", "single_choice", "multiple_choice")


def with_answer(kind: VisualKind, params: VisualParams, question_type: str, answer, key=None) -> VisualParams:
    """`params` with the student's answer to a `question_type` question in the param the kind takes it in: a cells
    or numeric prediction (and the key, where the kind draws it), or a choice. An answer the kind cannot take
    (a matrix, say) leaves `params`."""
    values = {}
    if question_type in kind.predictions:
        prediction, key_param = kind.predictions[question_type]
        values[prediction] = answer_text(answer)
        if key_param is not None and key is not None:
            values[key_param] = answer_text(key)
    elif question_type in CHOICE_TYPES and kind.choice_param is not None:
        values[kind.choice_param] = answer_text(answer)
    if not values:
        return params
    try:
        return kind.parse({**params.model_dump(), **values})
    except ValidationError:  # banks are checked at load; another question's answer, say, is not drawn
        return params


def typed_values(kind: VisualKind, args: Mapping[str, list[str]]) -> dict[str, str]:
    """What the student typed in the controls, for the page to show in them when the figure shows other values."""
    controls = {control.name for control in kind.controls}
    return {name: values[0] for name, values in args.items() if name in controls and len(values) == 1}


def dropped_note(kind: VisualKind, question_type: str | None) -> str:
    """Why the student's prediction is not drawn once the controls of its grid (its words, its head) change."""
    names = [control.label.split(" (")[0].lower() for control in kind.controls if control.name in kind.prediction_grid]
    grid = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    what = "prediction" if question_type == "cells" else "answer"
    return f"Your {what} is drawn on the question's own {grid}, not on these; Reset brings it back."


def visual_view(kind_name: str, base: Mapping | None, args: Mapping[str, list[str]],
                learn: str | None = None, question_type: str | None = None, answer=None,
                key=None, own: str = "the question's own values") -> VisualView | None:
    """Build the view; `args` (the page's query string) override controls only when `v` names this kind.
    `own` names the `base` values a refused change falls back to ("the default values" on a tutorial page).

    `answer`, the student's answer to a `question_type` question on an answer page, goes to the kind's choice param, so the visual marks
    it, or, for a cells or numeric question, is drawn as their prediction beside `key`, the question's answer
    (VisualKind.predictions). An answer the kind cannot take leaves the question's params.
    """
    kind = get_kind(kind_name)
    if kind is None:
        return None
    try:
        base_params = kind.parse(dict(base or {}))
    except ValidationError:  # a variant the loader's sample of seeds did not reach (docs/authoring.md): no figure
        log.error("a question's %s visual cannot take %s; the page is shown without it", kind.name, dict(base or {}),
                  exc_info=True)
        return None
    if answer is not None and question_type is not None:
        base_params = with_answer(kind, base_params, question_type, answer, key)
    params, error, status, retry_after, typed, invalid, note = base_params, None, 200, None, {}, {}, None
    across: frozenset[str] = frozenset()
    if args.get("v") == [kind.name]:
        # The prediction is about the question's grid (its words, its head): on other words it is not drawn.
        prediction = {name: getattr(base_params, name) for name in kind.prediction_params}
        cleared = {**base_params.model_dump(), **{name: "" for name in prediction}}
        try:
            params = parse_query(kind, args, cleared, only_controls=True)
            if all(getattr(params, name) == getattr(base_params, name) for name in kind.prediction_grid):
                params = kind.parse({**params.model_dump(), **prediction})
            elif any(prediction.values()):
                note = dropped_note(kind, question_type)
        except VisualInputError as problem:
            controls = {control.name for control in kind.controls}
            typed = typed_values(kind, args)
            invalid = {name: message for name, message in problem.fields.items() if name in controls}
            across = frozenset(name for name in problem.across if name in controls and name not in invalid)
            # A sentence about one control is shown beside it (and names the control's field): only the others
            # here, so that no sentence shows twice.
            elsewhere = [message for name, message in problem.fields.items() if name not in controls]
            marking = len(invalid) + len(across)
            marked = f": change the marked value{'s' if marking > 1 else ''} to draw yours" if marking else ""
            error = " ".join([*problem.unplaced, *elsewhere,
                              f"The plot shows {own} instead{marked}."])
            status = 400
    cache = visual_cache()
    computed = None
    if params is not base_params:
        # The student's own values are charged; past the limit, or with every render slot taken, the page
        # shows the question's figure.
        try:
            computed = cache.visual(kind, params, before_compute=charge_plot_render, client=render_client())
        except (TooManyRenders, RenderGateFull) as problem:
            refusal = problem if isinstance(problem, TooManyRenders) else RendersBusy()
            params, status, retry_after = base_params, refusal.status, refusal.retry_after
            typed = typed_values(kind, args)  # kept in their fields, to send again in a moment
            error = f"{refusal.message} The plot shows {own} instead."
    if computed is None:
        computed = cache.visual(kind, params)  # the page's own figure: the same for everyone
    return VisualView(
        kind=kind,
        params=params,
        computed=computed,
        images=image_urls(kind, params, computed),
        json_url=url_for("plots.describe", kind_name=kind.name),
        error=error,
        learn=learn or kind.learn,
        status=status,
        retry_after=retry_after,
        typed=typed,
        invalid=invalid,
        across=across,
        note=note,
        drop_note=(dropped_note(kind, question_type) if kind.prediction_grid
                   and any(getattr(base_params, name) for name in kind.prediction_params) else None),
    )
