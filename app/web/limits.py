"""Rate limits (Flask-Limiter): answer submissions and plot renders per browser session, logins per
address. Keyed by session rather than IP so a classroom behind one NAT address is not throttled.

Plots are limited by what they cost: drawing a figure that no cache holds, or refusing bad parameters,
counts against RATE_LIMIT_PLOTS; a figure served from a cache is as cheap as a static file and free.
"""

from __future__ import annotations

import logging
import math
import secrets
import time

from flask import current_app, request, session
from flask_limiter import Limiter
from flask_limiter.util import get_remote_address
from limits import parse_many

from ..errors import AppError

log = logging.getLogger(__name__)


def client_key() -> str:
    """A random id kept in the session cookie; falls back to the address for cookie-less clients."""
    client = session.get("client")
    if client is None:
        if request.cookies:
            client = session["client"] = secrets.token_hex(8)
        else:
            return "addr:" + (get_remote_address() or "unknown")
    return "client:" + client


limiter = Limiter(key_func=client_key, default_limits=[])


class TooManyRenders(AppError):
    status = 429
    title = "Too many new plots"

    def __init__(self, message: str, retry_after: int):
        super().__init__(message)
        self.retry_after = retry_after


def charge_plot_render() -> None:
    """Count one new visual (or one refused plot request) for this session; TooManyRenders past the limit.

    Called only when a visual is about to be computed, so visuals already cached are never limited.
    """
    config = current_app.config
    if not config.get("RATELIMIT_ENABLED", True):
        return
    limit_text = config["RATE_LIMIT_PLOTS"]
    _check_plot_renders(limit_text, parse_many(limit_text))


def _check_plot_renders(limit_text: str, items) -> None:
    key = client_key()
    try:
        strategy = limiter.limiter
        for item in items:
            allowed = strategy.hit(item, "plot-renders", key)
            if not allowed:
                reset_at = strategy.get_window_stats(item, "plot-renders", key).reset_time
                retry_after = max(1, math.ceil(reset_at - time.time()))
                raise TooManyRenders(
                    f"This browser has asked for more new plots than the server draws for one visitor "
                    f"({limit_text}). Wait {retry_after} seconds and try again; plots already drawn still load.",
                    retry_after)
    except TooManyRenders:
        raise
    except Exception:  # the limit store (e.g. redis) is down: serve the plot rather than fail the page
        log.warning("the plot rate limit could not be checked; allowing this render", exc_info=True)


@limiter.request_filter
def _reads_are_not_limited() -> bool:
    """Every Flask-Limiter limit of the app is on a POST (answers, display names, logins); plots are
    limited by charge_plot_render. Skipping Flask-Limiter's check on reads saves its cost on every page."""
    return request.method in ("GET", "HEAD", "OPTIONS")
