"""Everything a page needs to show one visual: validated params, the figure's alt text and caption,
its URL, and a sentence when the student's control values could not be used.

A page draws no figure (and imports no matplotlib): its text comes from the cached figure or from the
kind's describe step, and the image is drawn when the browser asks /plots for it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from flask import url_for

from ..visuals import Description, VisualKind, VisualParams, get_kind
from ..visuals.service import VisualInputError, parse_query, query_values
from .limits import TooManyRenders, charge_plot_render, check_plot_render
from .plots import render_cache


@dataclass(frozen=True)
class VisualView:
    kind: VisualKind
    params: VisualParams
    description: Description  # alt text and caption, the same the drawn figure carries
    src: str
    width: int  # the image's size in CSS pixels, known before it is drawn: the <img> reserves its space
    height: int
    json_url: str
    error: str | None
    learn: str
    status: int = 200  # 400 when the student's values could not be used, 429 when they asked for too many plots

    @property
    def values(self) -> dict[str, str]:
        return query_values(self.params)


def visual_view(kind_name: str, base: Mapping | None, args: Mapping[str, list[str]],
                learn: str | None = None) -> VisualView | None:
    """Build the view; `args` (the page's query string) override controls only when `v` names this kind."""
    kind = get_kind(kind_name)
    if kind is None:
        return None
    base_params = kind.parse(dict(base or {}))  # banks are validated at load, so this holds
    params, error, status = base_params, None, 200
    if args.get("v") == [kind.name]:
        try:
            params = parse_query(kind, args, base_params.model_dump(), only_controls=True)
        except VisualInputError as problem:
            error, status = f"{problem} The plot shows the question's own values instead.", 400
    cache = render_cache()
    description = None
    if params is not base_params:
        # The student's own values: the image request to /plots draws the figure and is charged for it.
        # Without room for one more render, the page shows the question's figure instead of a broken image.
        try:
            # A kind that must draw to describe itself draws here, charged like a render from /plots.
            description = cache.describe(kind, params, before_render=charge_plot_render,
                                         on_miss=check_plot_render)
        except TooManyRenders as problem:
            params, error, status = base_params, f"{problem.message} The plot shows the question's own values instead.", 429
    if description is None:
        description = cache.describe(kind, params)  # the page's own figure: the same for everyone
    width, height = kind.size(params)
    return VisualView(
        kind=kind,
        params=params,
        description=description,
        src=url_for("plots.image", kind_name=kind.name, ext=kind.format, **query_values(params)),
        width=width,
        height=height,
        json_url=url_for("plots.describe", kind_name=kind.name),
        error=error,
        learn=learn or kind.learn,
        status=status,
    )
