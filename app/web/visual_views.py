"""Everything a page needs to show one visual: validated params, the alt text and caption of its one
computation, its image URLs, and a sentence when the student's control values could not be used.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlencode

from flask import url_for
from pydantic import ValidationError

from ..visuals import Computed, VisualKind, VisualParams, get_kind
from ..visuals.service import (
    RenderGateFull,
    VisualInputError,
    parse_query,
    query_values,
)
from .limits import RendersBusy, TooManyRenders, charge_plot_render, render_client
from .plots import visual_cache


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

    @property
    def values(self) -> dict[str, str]:
        return query_values(self.params)


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
    """A student's answer as a visual's choice param: option ids, comma-separated."""
    if isinstance(answer, bool):
        return "true" if answer else "false"
    if isinstance(answer, (list, tuple)):
        return ",".join(answer)
    return str(answer)


def visual_view(kind_name: str, base: Mapping | None, args: Mapping[str, list[str]],
                learn: str | None = None, answer=None) -> VisualView | None:
    """Build the view; `args` (the page's query string) override controls only when `v` names this kind.

    `answer`, the student's answer on an answer page, goes to the kind's choice param, so the visual
    marks it; an answer the kind cannot take (another question's options) leaves the question's params.
    """
    kind = get_kind(kind_name)
    if kind is None:
        return None
    base_params = kind.parse(dict(base or {}))  # banks are validated at load, so this holds
    if answer is not None and kind.choice_param is not None:
        try:
            base_params = kind.parse({**base_params.model_dump(), kind.choice_param: answer_text(answer)})
        except ValidationError:
            pass
    params, error, status, retry_after = base_params, None, 200, None
    if args.get("v") == [kind.name]:
        try:
            params = parse_query(kind, args, base_params.model_dump(), only_controls=True)
        except VisualInputError as problem:
            error, status = f"{problem} The plot shows the question's own values instead.", 400
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
            error = f"{refusal.message} The plot shows the question's own values instead."
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
    )
