"""Rendered visuals over HTTP: `/plots/<kind>.png|svg?<params>` for the image and
`/plots/<kind>.json?<params>` for its URL, size and alt text (used by the live controls).
"""

from __future__ import annotations

from flask import Blueprint, current_app, jsonify, request, url_for

from ..errors import BadInput, NotFound
from ..visuals.service import MAX_QUERY_BYTES, RenderCache, VisualInputError, parse_query, query_values
from ..visuals import get_kind
from .limits import charge_plot_render, check_plot_render

# Not limited as a whole (a cached figure costs no more than a static file): renders and refused
# parameters count against RATE_LIMIT_PLOTS through charge_plot_render.
bp = Blueprint("plots", __name__, url_prefix="/plots")

ONE_DAY = 86400


def render_cache() -> RenderCache:
    return current_app.extensions["render_cache"]


def _kind_and_params(kind_name: str):
    kind = get_kind(kind_name)
    if kind is None:
        charge_plot_render()  # refused requests count, so probing for names or limits stays bounded
        raise NotFound(f"There is no visual called {kind_name[:60]!r}.")
    if len(request.query_string) > MAX_QUERY_BYTES:
        charge_plot_render()
        raise BadInput(f"The plot parameters are too long (over {MAX_QUERY_BYTES} bytes).")
    try:
        params = parse_query(kind, request.args.to_dict(flat=False))
    except VisualInputError as error:
        charge_plot_render()
        raise BadInput(str(error)) from None
    return kind, params


@bp.get("/<kind_name>.json")
def describe(kind_name: str):
    kind, params = _kind_and_params(kind_name)
    # The text only: the image URL draws the figure (and is charged) when the browser loads it. Past
    # the limit its image would be refused, so the live controls get the 429 and its sentence now.
    description = render_cache().describe(kind, params, before_render=charge_plot_render, on_miss=check_plot_render)
    width, height = kind.size(params)
    return jsonify({
        "kind": kind.name,
        "src": url_for("plots.image", kind_name=kind.name, ext=kind.format, **query_values(params)),
        "width": width,
        "height": height,
        "alt": description.alt,
        "caption": description.caption,
        "params": params.model_dump(mode="json"),
    })


@bp.get("/<kind_name>.<ext>")
def image(kind_name: str, ext: str):
    kind, params = _kind_and_params(kind_name)
    if ext != kind.format:
        charge_plot_render()
        raise NotFound(f"The visual {kind.name!r} is served as .{kind.format}, not .{ext[:10]}.")
    entry = render_cache().get_or_render(kind, params, before_render=charge_plot_render)
    response = current_app.response_class(entry.rendered.image, mimetype=entry.rendered.mimetype)
    response.set_etag(entry.etag.strip('"'))
    response.cache_control.public = True
    response.cache_control.max_age = ONE_DAY
    return response.make_conditional(request)
