"""Rate limits (Flask-Limiter): answer submissions and plot renders per browser session, logins per
address. Keyed by session rather than IP so a classroom behind one NAT address is not throttled.
"""

from __future__ import annotations

import secrets

from flask import request, session
from flask_limiter import Limiter
from flask_limiter.util import get_remote_address


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
