"""Rendered visuals over HTTP: `/plots/<kind>.png|svg?<params>[&scale=2][&layout=narrow]` for the image and
`/plots/<kind>.json?<params>` for its URLs, size, alt text and caption (used by the live controls).
"""

from __future__ import annotations

from flask import Blueprint, current_app, jsonify, request

from ..errors import BadInput, NotFound, render_app_error
from ..visuals import get_kind
from ..visuals.service import (
    MAX_QUERY_BYTES,
    RenderGateFull,
    VisualCache,
    VisualInputError,
    parse_query,
    parse_variant,
)
from .limits import RendersBusy, charge_plot_render, render_client

# Not limited as a whole (a cached figure costs no more than a static file): computing a new visual
# and refused parameters count against RATE_LIMIT_PLOTS through charge_plot_render, and new work waits
# for a slot of the cache's render gate or is refused at once (503).
bp = Blueprint("plots", __name__, url_prefix="/plots")


@bp.errorhandler(RenderGateFull)
def _busy(_error: RenderGateFull):
    return render_app_error(RendersBusy())

ONE_DAY = 86400


def visual_cache() -> VisualCache:
    return current_app.extensions["visual_cache"]


def _kind_and_params(kind_name: str):
    kind = get_kind(kind_name)
    if kind is None:
        charge_plot_render()  # refused requests count, so probing for names or limits stays bounded
        raise NotFound(f"There is no visual called {kind_name[:60]!r}.")
    if len(request.query_string) > MAX_QUERY_BYTES:
        charge_plot_render()
        raise BadInput(f"The plot parameters are too long (over {MAX_QUERY_BYTES} bytes).")
    args = request.args.to_dict(flat=False)
    try:
        variant = parse_variant(args)
        params = parse_query(kind, args)
    except VisualInputError as error:
        charge_plot_render()
        raise BadInput(str(error), fields={**error.across, **error.fields}) from None
    return kind, params, variant


@bp.get("/<kind_name>.json")
def describe(kind_name: str):
    from .visual_views import image_urls

    kind, params, _ = _kind_and_params(kind_name)
    computed = visual_cache().visual(kind, params, before_compute=charge_plot_render, client=render_client())
    return jsonify({
        "kind": kind.name,
        **image_urls(kind, params, computed).as_dict(),
        "alt": computed.alt,
        "caption": computed.caption,
        "params": params.model_dump(mode="json"),
    })


@bp.get("/<kind_name>.<ext>")
def image(kind_name: str, ext: str):
    kind, params, (scale, layout) = _kind_and_params(kind_name)
    if ext != kind.format:
        charge_plot_render()
        raise NotFound(f"The visual {kind.name!r} is served as .{kind.format}, not .{ext[:10]}.")
    picture = visual_cache().image(kind, params, scale, layout, before_compute=charge_plot_render,
                                   client=render_client())
    response = current_app.response_class(picture.data, mimetype=picture.mimetype)
    response.set_etag(picture.etag)
    response.cache_control.public = True
    response.cache_control.max_age = ONE_DAY
    return response.make_conditional(request)
