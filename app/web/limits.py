"""Rate limits (Flask-Limiter): keyed first on the client's address, which it cannot reset (through ProxyFix
behind a proxy), with sizes that leave a classroom behind one NAT address unthrottled; then, tighter, on the
browser session for sessions the server issued. Logins are limited per address.

Starting an attempt writes a row, so it is limited too (RATE_LIMIT_ATTEMPTS per session, and per address).
Plots are limited by what they cost: drawing a figure that no cache holds, or refusing bad parameters,
counts against RATE_LIMIT_PLOTS; a figure served from a cache is as cheap as a static file and free.
The counters live in the app's database by default (limit_store), so they hold across workers and servers.
"""

from __future__ import annotations

import ipaddress
import logging
import math
import secrets
import time
from collections.abc import Callable

from flask import current_app, request, session
from flask_limiter import ApplicationLimit, Limiter
from flask_limiter.util import get_remote_address
from limits import parse_many

from ..errors import AppError
from ..visuals.service import RenderClient
from . import limit_store  # noqa: F401 (registers the database:// storage scheme)

log = logging.getLogger(__name__)


IPV6_PREFIX = 64  # one host, or one home, holds a whole /64: its addresses share one budget


def client_address() -> str:
    """The client's address (the proxy's X-Forwarded-For when FLASK_PROXY_FIX is set), an IPv6 one as its /64: a
    client cannot reset it by picking another address of its own network."""
    address = get_remote_address() or "unknown"
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        return address
    if parsed.version == 4:
        return address
    if parsed.ipv4_mapped is not None:  # ::ffff:192.0.2.7, an IPv4 client of a dual-stack socket
        return str(parsed.ipv4_mapped)
    return str(ipaddress.ip_network(f"{parsed}/{IPV6_PREFIX}", strict=False))


def address_key() -> str:
    return "addr:" + client_address()


LIMIT_SETTINGS = ("RATE_LIMIT_SUBMIT", "RATE_LIMIT_SUBMIT_PER_ADDRESS", "RATE_LIMIT_PLOTS",
                  "RATE_LIMIT_PLOTS_PER_ADDRESS", "RATE_LIMIT_LOGIN", "RATE_LIMIT_ATTEMPTS",
                  "RATE_LIMIT_ATTEMPTS_PER_ADDRESS")


def check_limit_settings(config) -> None:
    """Stop the app at start-up on a limit that is not like "60 per minute": Flask-Limiter would skip it with a
    log line on each request (a sign-in limit off), or fail every POST."""
    for name in LIMIT_SETTINGS:
        value = config.get(name)
        try:
            if not isinstance(value, str) or not parse_many(value):
                raise ValueError
        except ValueError:
            raise RuntimeError(f"FLASK_{name} must be a rate limit like \"60 per minute\" or \"10 per minute; 100 "
                               f"per hour\", not {value!r}") from None


def session_map(key: str, value_type: type) -> dict:
    """The session's map `key` (bank id -> `value_type`): empty when it has none, or one of another shape (a
    cookie of another version of the app, or one signed with a leaked key), which is dropped so the pages start
    afresh instead of failing."""
    value = session.get(key)
    if isinstance(value, dict) and all(isinstance(k, str) and type(v) is value_type for k, v in value.items()):
        return value
    if value is not None:
        session.pop(key)
    return {}


def client_key() -> str:
    """A random id kept in the session cookie; the address for cookie-less clients.

    A client can drop its cookie and get a new id, so every limit keyed on this one has a per-address
    limit beside it.
    """
    client = session.get("client")
    if not isinstance(client, str):
        if request.cookies:
            client = session["client"] = secrets.token_hex(8)
        else:
            return address_key()
    return "client:" + client


def render_client() -> RenderClient:
    """Whom the render gate counts a new plot for: a student with an attempt (which the server issued, in the
    signed session) on their own, so a classroom behind one NAT address is not one client; anyone else by
    address, so no cookie, junk or fresh, earns another share of the server's drawing. Either way the address
    too, which caps all of its sessions together."""
    attempts = session_map("attempts", str)
    address = address_key()
    return RenderClient("attempt:" + min(attempts.values()) if attempts else address, address)


# Every form and API post of one address, whatever its cookies say (the decorated limits are per session).
limiter = Limiter(key_func=client_key, default_limits=[], application_limits=[
    ApplicationLimit(lambda: current_app.config["RATE_LIMIT_SUBMIT_PER_ADDRESS"], key_function=address_key,
                     scope="posts-per-address")])


class TooManyRenders(AppError):
    status = 429
    title = "Too many new plots"

    def __init__(self, message: str, retry_after: int):
        super().__init__(message)
        self.retry_after = retry_after


class RendersBusy(AppError):
    """Every render slot of this server process is taken (VisualCache's gate): refused at once, not queued."""

    status = 503
    title = "Busy drawing plots"
    retry_after = 2  # a render takes well under a second (docs/deploy.md), so a slot frees soon
    MESSAGE = ("The server is drawing as many new plots as it can right now. Try again in a few seconds; "
               "pages and plots already drawn still load.")

    def __init__(self):
        super().__init__(self.MESSAGE)


class TooManyAttempts(AppError):
    status = 429
    title = "Too many new attempts"

    def __init__(self, message: str, retry_after: int):
        super().__init__(message)
        self.retry_after = retry_after


def charge_attempt_start() -> None:
    """Count one new attempt for this address and, when the browser has a session, for that session;
    TooManyAttempts past either limit. A client without cookies is counted by address only, so 60 students
    who open a quiz link at the same moment behind one address are not one session."""
    config = current_app.config
    if not config.get("RATELIMIT_ENABLED", True):
        return
    _charge_address_attempts("attempt-starts", "has started more quiz attempts than the server allows ({limit}). "
                             "Wait {wait} seconds and try again; attempts already started go on as before.")
    if request.cookies:
        limit = config["RATE_LIMIT_ATTEMPTS"]
        _charge("attempt-starts", client_key(), limit, lambda wait: TooManyAttempts(
            f"This browser has started more quiz attempts than the server allows ({limit}). Wait {wait} seconds "
            "and try again; attempts already started go on as before.", wait))


def charge_lti_login() -> None:
    """Count one LMS login for this address, against the budget of attempt starts (a launch opens one): each
    login stores a nonce row until it expires, and the platform's issuer and client id are no secret."""
    if current_app.config.get("RATELIMIT_ENABLED", True):
        _charge_address_attempts("lti-logins", "has opened the quiz from the LMS more often than the server allows "
                                 "({limit}). Wait {wait} seconds and open it again.")


def _charge_address_attempts(scope: str, refusal: str) -> None:
    """Charge `scope` for this address against RATE_LIMIT_ATTEMPTS_PER_ADDRESS; `refusal` ({limit}, {wait}) says
    what this address did, past the limit."""
    limit = current_app.config["RATE_LIMIT_ATTEMPTS_PER_ADDRESS"]
    _charge(scope, address_key(), limit, lambda wait: TooManyAttempts(
        "This address (a school, a household) " + refusal.format(limit=limit, wait=wait), wait))


def charge_plot_render() -> None:
    """Count one new visual (or one refused plot request) for this address and for this browser session
    (the address, for cookie-less clients); TooManyRenders past either limit.

    Called only when a visual is about to be computed, so visuals already cached are never limited.
    """
    config = current_app.config
    if not config.get("RATELIMIT_ENABLED", True):
        return
    # The address first: a refusal there writes nothing, however many sessions the client makes up.
    _check_plot_renders(address_key(), config["RATE_LIMIT_PLOTS_PER_ADDRESS"], "This address (a school, a household)")
    _check_plot_renders(client_key(), config["RATE_LIMIT_PLOTS"], "This browser")


def _check_plot_renders(key: str, limit_text: str, who: str) -> None:
    _charge("plot-renders", key, limit_text, lambda wait: TooManyRenders(
        f"{who} has asked for more new plots than the server draws "
        f"({limit_text}). Wait {wait} seconds and try again; plots already drawn still load.", wait))


def _charge(scope: str, key: str, limit_text: str, refusal: Callable[[int], AppError]) -> None:
    """Count one hit of `scope` for `key` against each limit of `limit_text`; raise refusal(seconds) past one."""
    try:
        strategy = limiter.limiter
        for item in parse_many(limit_text):
            # test() first: past the limit, each refusal only reads the counter (no write to the database).
            allowed = strategy.test(item, scope, key) and strategy.hit(item, scope, key)
            if not allowed:
                reset_at = strategy.get_window_stats(item, scope, key).reset_time
                raise refusal(max(1, math.ceil(reset_at - time.time())))
    except AppError:
        raise
    except Exception:  # the limit store is down: allow it (the render gate still bounds plots; a write fails alone)
        log.warning("the %s rate limit could not be checked; allowing this one", scope, exc_info=True)


@limiter.request_filter
def _reads_are_not_limited() -> bool:
    """Every Flask-Limiter limit of the app is on a POST (answers, display names, logins); plots are
    limited by charge_plot_render. Skipping Flask-Limiter's check on reads saves its cost on every page."""
    return request.method in ("GET", "HEAD", "OPTIONS")
