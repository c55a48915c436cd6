"""Instructor sign-in: one shared password whose werkzeug hash is set in INSTRUCTOR_PASSWORD_HASH.

A signed-in instructor's cookie holds the id of a session row in the database (db.instructor_sessions),
so logging out or idling past INSTRUCTOR_IDLE_TIMEOUT ends it on every server, and a fingerprint of the
configured hash, so changing or removing the hash signs every instructor out. Also the guard for `next=`
targets (no open redirects).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from functools import lru_cache
from urllib.parse import urlsplit

from flask import current_app, session
from werkzeug.security import check_password_hash, generate_password_hash

from .. import db

CONFIG_KEY = "INSTRUCTOR_PASSWORD_HASH"
ENV_VAR = "FLASK_INSTRUCTOR_PASSWORD_HASH"
SESSION_FLAG = "instructor"
SESSION_FINGERPRINT = "instructor_key"
SESSION_ID = "instructor_session"
IDLE_TIMEOUT_KEY = "INSTRUCTOR_IDLE_TIMEOUT"
MAX_PASSWORD_LENGTH = 1024
GENERATE_ONE_LINER = ('python -c "from werkzeug.security import generate_password_hash as g; '
                      "print(g('your password'))\"")


def configured_hash() -> str | None:
    value = current_app.config.get(CONFIG_KEY)
    return value.strip() if isinstance(value, str) and value.strip() else None


@lru_cache(maxsize=8)
def hash_problem(pwhash: str | None) -> str | None:
    """None when `pwhash` is a usable werkzeug hash, otherwise a sentence for the administrator."""
    if pwhash is None:
        return f"No instructor password is set. The administrator must set {ENV_VAR}."
    if pwhash.count("$") != 2:
        return (f"{ENV_VAR} does not look like a werkzeug password hash (method$salt$hash); set it to the "
                "output of the command below, not to the password itself.")
    try:
        check_password_hash(pwhash, "")  # runs the hash once: unknown methods or bad parameters raise
    except (ValueError, TypeError, OverflowError) as error:
        return f"{ENV_VAR} is not a usable password hash ({error}). Generate a new one with the command below."
    return None


@lru_cache(maxsize=1)
def _decoy_hash() -> str:
    return generate_password_hash(secrets.token_hex(16))


def password_matches(password: str) -> bool:
    """Check `password` against the configured hash; without a usable hash, spend the same kind of
    effort on a decoy and refuse, so the answer time does not reveal the configuration."""
    pwhash = configured_hash()
    usable = hash_problem(pwhash) is None
    candidate = password if len(password) <= MAX_PASSWORD_LENGTH else ""
    matched = check_password_hash(pwhash if usable else _decoy_hash(), candidate)
    return usable and len(password) <= MAX_PASSWORD_LENGTH and matched


def _fingerprint(pwhash: str) -> str:
    # A digest of the salted hash, so the cookie (readable, though signed) never carries the hash itself.
    return hashlib.sha256(b"attention-quiz instructor\0" + pwhash.encode()).hexdigest()[:32]


def idle_seconds(config) -> float:
    """INSTRUCTOR_IDLE_TIMEOUT in seconds; a value that is not a positive number stops the app at start-up."""
    value = config.get(IDLE_TIMEOUT_KEY)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 10**9:
        raise RuntimeError(f"FLASK_{IDLE_TIMEOUT_KEY} must be a positive number of seconds "
                           f"(28800 is 8 hours), not {value!r}")
    return float(value)


def sign_in() -> None:
    pwhash = configured_hash()
    assert pwhash is not None, "sign_in is only called after password_matches"
    session[SESSION_FLAG] = True
    session[SESSION_FINGERPRINT] = _fingerprint(pwhash)
    session[SESSION_ID] = db.open_instructor_session(idle_seconds(current_app.config))


def sign_out() -> None:
    session_id = session.get(SESSION_ID)
    if isinstance(session_id, str):
        # First, so that when the database is down the cookie stays signed in and the button can be pressed again.
        db.close_instructor_session(session_id)  # every copy of the cookie stops working, on every server
    for key in (SESSION_ID, SESSION_FLAG, SESSION_FINGERPRINT):
        session.pop(key, None)


def is_instructor() -> bool:
    if session.get(SESSION_FLAG) is not True:
        return False
    pwhash = configured_hash()
    if pwhash is None:
        return False
    if not hmac.compare_digest(str(session.get(SESSION_FINGERPRINT, "")), _fingerprint(pwhash)):
        return False
    session_id = session.get(SESSION_ID)
    return isinstance(session_id, str) and db.touch_instructor_session(session_id, idle_seconds(current_app.config))


def safe_next(target: str | None) -> str | None:
    """`target` when it is a path on this site, else None. Refuses //host, /\\host, schemes and
    control characters (browsers drop tabs and newlines, turning /\\t/host into //host)."""
    if not target or len(target) > 2000 or not target.startswith("/") or target.startswith("//"):
        return None
    if "\\" in target or any(ord(ch) < 32 or ord(ch) == 127 for ch in target):
        return None
    parts = urlsplit(target)
    if parts.scheme or parts.netloc:
        return None
    return target
