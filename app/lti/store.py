"""LTI 1.3 state in the app's database: registered platforms and deployments, the tool's RSA keys, single-use
nonces and launch data, course links, the attempt ↔ LMS user map, and the grade-passback queue.

The tables live on `app.db.metadata`, so `flask init-db` (app.db.migrate) creates them with the others.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import (
    Column,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Table,
    Text,
    UniqueConstraint,
    delete,
    event,
    insert,
    inspect,
    select,
    text,
    update,
)
from sqlalchemy.exc import IntegrityError

from .. import db

metadata = db.metadata

platforms = Table(
    "lti_platforms", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("issuer", String(255), nullable=False),
    Column("client_id", String(255), nullable=False),
    Column("auth_login_url", Text, nullable=False),
    Column("auth_token_url", Text, nullable=False),
    Column("key_set_url", Text, nullable=False),
    Column("auth_audience", Text),  # the token endpoint's audience when it is not its URL (Moodle: none)
    Column("created_at", DateTime(timezone=True), nullable=False),
    UniqueConstraint("issuer", "client_id", name="uq_lti_platform"),
)

deployments = Table(
    "lti_deployments", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("platform_id", Integer, ForeignKey("lti_platforms.id", ondelete="CASCADE"), nullable=False),
    Column("deployment_id", String(255), nullable=False),
    UniqueConstraint("platform_id", "deployment_id", name="uq_lti_deployment"),
)

# The tool's signing keys; the newest is current, older ones stay in the JWKS until retired (rotation).
keys = Table(
    "lti_keys", metadata,
    Column("kid", String(64), primary_key=True),
    Column("private_pem", Text, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
)

# pylti1p3's launch data storage (nonces, launches kept for deep linking), shared by every worker.
launch_data = Table(
    "lti_launch_data", metadata,
    Column("key", String(255), primary_key=True),
    Column("value", Text, nullable=False),
    Column("expires_at", DateTime(timezone=True), nullable=False, index=True),  # the sweep's range
)
EXPIRED_SWEEP_SECONDS = 60  # how often a process deletes expired launch data (not on every login: see put_value)
_last_sweep = 0.0

# One placement of the tool in a course: (platform, deployment, context, resource link), with its bank and
# the grade service endpoints the platform last sent for it.
links = Table(
    "lti_links", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("platform_id", Integer, ForeignKey("lti_platforms.id", ondelete="CASCADE"), nullable=False),
    Column("deployment_id", String(255), nullable=False),
    Column("context_id", String(255), nullable=False),
    Column("resource_link_id", String(255), nullable=False),
    Column("context_title", String(255)),
    Column("resource_title", String(255)),
    Column("bank_id", String(64), nullable=False),
    Column("score_policy", String(8), nullable=False, default="best"),
    Column("ags_scopes", Text),  # JSON list; NULL: the platform offers no grade service for this link
    Column("lineitems_url", Text),
    Column("lineitem_url", Text),  # the line item scores go to: the platform's, or the one created once
    Column("lineitem_claimed_at", DateTime(timezone=True)),  # a worker is creating the line item
    # JSON: the assessment settings the link's last launch carried as custom parameters (app.lti.settings)
    Column("settings", Text),
    UniqueConstraint("platform_id", "deployment_id", "context_id", "resource_link_id", name="uq_lti_link"),
)


@event.listens_for(metadata, "after_create")
def _add_new_columns(target, connection, **kw) -> None:
    """create_all (app.db.migrate, at every start) adds no column to a table it finds: a database that predates
    per-link settings or attempt numbers gets them here (older attempts keep no number; NULLs never clash). A
    worker that loses the race to add one fails, and migrate's retry finds it added."""
    if "settings" not in {c["name"] for c in inspect(connection).get_columns("lti_links")}:
        connection.execute(text("ALTER TABLE lti_links ADD COLUMN settings TEXT"))
    if "attempt_number" not in {c["name"] for c in inspect(connection).get_columns("lti_attempts")}:
        connection.execute(text("ALTER TABLE lti_attempts ADD COLUMN attempt_number INTEGER"))
        connection.execute(text("CREATE UNIQUE INDEX uq_lti_attempts_number "
                                "ON lti_attempts (link_id, user_sub, attempt_number)"))
    for index in launch_data.indexes:  # a table made before the index had it
        index.create(connection, checkfirst=True)


attempt_users = Table(
    "lti_attempts", metadata,
    Column("attempt_id", String(32), ForeignKey("attempts.id", ondelete="CASCADE"), primary_key=True),
    Column("link_id", Integer, ForeignKey("lti_links.id", ondelete="CASCADE"), nullable=False),
    Column("user_sub", String(255), nullable=False),
    Column("user_name", String(255)),
    # The user's 1st, 2nd, ... attempt in this link, unique: two launches of one learner at the same moment both
    # see n as the highest and both try to start number n + 1; the database lets one of them (app.lti.views).
    Column("attempt_number", Integer),
    Index("ix_lti_attempts_user", "link_id", "user_sub"),
    Index("uq_lti_attempts_number", "link_id", "user_sub", "attempt_number", unique=True),
)

# One row per (link, user) whose grade must reach the LMS; the score is computed when it is sent, so a retry
# always sends the current best (or latest) one.
grade_sync = Table(
    "lti_grade_sync", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("link_id", Integer, ForeignKey("lti_links.id", ondelete="CASCADE"), nullable=False),
    Column("user_sub", String(255), nullable=False),
    Column("status", String(16), nullable=False),  # pending, sent or failed (failed rows are retried)
    Column("tries", Integer, nullable=False, default=0),
    Column("next_try_at", DateTime(timezone=True), nullable=False),
    Column("last_error", Text),
    Column("score_sent", Float),
    Column("updated_at", DateTime(timezone=True), nullable=False),
    UniqueConstraint("link_id", "user_sub", name="uq_lti_grade_user"),
)


@dataclass(frozen=True)
class Platform:
    id: int
    issuer: str
    client_id: str
    auth_login_url: str
    auth_token_url: str
    key_set_url: str
    auth_audience: str | None
    deployment_ids: tuple[str, ...]


def _connect():
    return db.engine().begin()


# --- platforms ------------------------------------------------------------------------------------

def add_platform(issuer: str, client_id: str, auth_login_url: str, auth_token_url: str, key_set_url: str,
                 deployment_ids: list[str], auth_audience: str | None = None) -> tuple[Platform, list[str]]:
    """Register a platform, or add deployments to one already registered. Returns it and the new ids."""
    with _connect() as connection:
        row = connection.execute(select(platforms).where(
            platforms.c.issuer == issuer, platforms.c.client_id == client_id)).first()
        if row is None:
            platform_id = connection.execute(insert(platforms).values(
                issuer=issuer, client_id=client_id, auth_login_url=auth_login_url, auth_token_url=auth_token_url,
                key_set_url=key_set_url, auth_audience=auth_audience, created_at=db.now())).inserted_primary_key[0]
        else:
            platform_id = row.id
            connection.execute(update(platforms).where(platforms.c.id == platform_id).values(
                auth_login_url=auth_login_url, auth_token_url=auth_token_url, key_set_url=key_set_url,
                auth_audience=auth_audience))
        known = set(connection.execute(select(deployments.c.deployment_id).where(
            deployments.c.platform_id == platform_id)).scalars())
        added = [d for d in dict.fromkeys(deployment_ids) if d not in known]
        for deployment_id in added:
            connection.execute(insert(deployments).values(platform_id=platform_id, deployment_id=deployment_id))
    return find_platform(issuer, client_id), added


def _platform(connection, row) -> Platform:
    ids = tuple(connection.execute(select(deployments.c.deployment_id).where(
        deployments.c.platform_id == row.id).order_by(deployments.c.id)).scalars())
    return Platform(row.id, row.issuer, row.client_id, row.auth_login_url, row.auth_token_url, row.key_set_url,
                    row.auth_audience, ids)


def find_platform(issuer: str, client_id: str | None) -> Platform | None:
    """The registration for (issuer, client id); without a client id, the issuer's only registration."""
    with db.engine().connect() as connection:
        query = select(platforms).where(platforms.c.issuer == issuer)
        if client_id is not None:
            query = query.where(platforms.c.client_id == client_id)
        rows = connection.execute(query.limit(2)).all()
        return _platform(connection, rows[0]) if len(rows) == 1 else None


def platform_by_id(platform_id: int) -> Platform | None:
    with db.engine().connect() as connection:
        row = connection.execute(select(platforms).where(platforms.c.id == platform_id)).first()
        return _platform(connection, row) if row else None


def list_platforms() -> list[Platform]:
    with db.engine().connect() as connection:
        rows = connection.execute(select(platforms).order_by(platforms.c.issuer, platforms.c.client_id)).all()
        return [_platform(connection, row) for row in rows]


def remove_platform(issuer: str, client_id: str, deployment_ids: list[str]) -> str | None:
    """Remove the given deployments, or the whole registration when none are given. None if nothing matched,
    else a sentence saying what was removed."""
    with _connect() as connection:
        row = connection.execute(select(platforms).where(
            platforms.c.issuer == issuer, platforms.c.client_id == client_id)).first()
        if row is None:
            return None
        if not deployment_ids:
            connection.execute(delete(platforms).where(platforms.c.id == row.id))
            return f"removed {issuer} (client id {client_id}) and its deployments"
        gone = connection.execute(delete(deployments).where(
            deployments.c.platform_id == row.id, deployments.c.deployment_id.in_(deployment_ids))).rowcount
        return f"removed {gone} deployment(s) of {issuer} (client id {client_id})" if gone else None


# --- the tool's keys --------------------------------------------------------------------------------

def _new_key() -> tuple[str, str]:
    from jwcrypto.jwk import JWK  # cryptography, on first use (see app.lti)

    key = JWK.generate(kty="RSA", size=2048)
    return key.thumbprint(), key.export_to_pem(private_key=True, password=None).decode()


def current_key() -> tuple[str, str]:
    """(kid, private PEM) of the newest key, generated on first use."""
    with db.engine().connect() as connection:
        row = connection.execute(select(keys).order_by(keys.c.created_at.desc()).limit(1)).first()
    if row is not None:
        return row.kid, row.private_pem
    kid, pem = _new_key()
    try:
        with _connect() as connection:
            # Two workers' first launches at once: the first insert wins and both use the oldest key.
            if connection.execute(select(keys.c.kid).limit(1)).first() is None:
                connection.execute(insert(keys).values(kid=kid, private_pem=pem, created_at=db.now()))
    except IntegrityError:  # another worker stored its key first: the query below returns that one
        pass
    with db.engine().connect() as connection:
        row = connection.execute(select(keys).order_by(keys.c.created_at.asc()).limit(1)).first()
    return row.kid, row.private_pem


def rotate_key() -> str:
    """Make a new current key; older keys stay published until retire_keys(). Returns the new kid."""
    current_key()  # so that a rotation on a new database still leaves the first key published
    kid, pem = _new_key()
    with _connect() as connection:
        connection.execute(insert(keys).values(kid=kid, private_pem=pem, created_at=db.now()))
    return kid


def retire_keys() -> int:
    """Delete every key but the current one; returns how many were deleted."""
    kid, _ = current_key()
    with _connect() as connection:
        return connection.execute(delete(keys).where(keys.c.kid != kid)).rowcount


def public_jwks() -> dict:
    current_key()
    with db.engine().connect() as connection:
        rows = connection.execute(select(keys).order_by(keys.c.created_at.desc())).all()
    from jwcrypto.jwk import JWK

    published = []
    for row in rows:
        public = json.loads(JWK.from_pem(row.private_pem.encode()).export_public())
        published.append({**public, "kid": row.kid, "alg": "RS256", "use": "sig"})
    return {"keys": published}


# --- launch data (nonces, launches) -----------------------------------------------------------------

def put_value(key: str, value: Any, lifetime_seconds: float) -> None:
    """Store launch data until it expires. Expired rows are swept at most once a minute per process, through the
    index on expires_at: a sweep on every login held SQLite's write lock for a scan of the whole table."""
    global _last_sweep
    expires = db.now() + timedelta(seconds=lifetime_seconds)
    with _connect() as connection:
        if time.monotonic() - _last_sweep > EXPIRED_SWEEP_SECONDS:
            _last_sweep = time.monotonic()
            connection.execute(delete(launch_data).where(launch_data.c.expires_at < db.now()))
        connection.execute(delete(launch_data).where(launch_data.c.key == key))
        connection.execute(insert(launch_data).values(key=key, value=json.dumps(value), expires_at=expires))


def get_value(key: str) -> Any:
    with db.engine().connect() as connection:
        row = connection.execute(select(launch_data.c.value).where(
            launch_data.c.key == key, launch_data.c.expires_at >= db.now())).first()
    return json.loads(row.value) if row else None


USED = json.dumps("used")


def take_value(key: str) -> bool:
    """Mark a live key used; True only for the one caller that marked it (a nonce is used once, on any worker).
    The used key stays until it expires, so a replay is told it is a replay rather than an unknown nonce."""
    with _connect() as connection:
        return connection.execute(update(launch_data).where(
            launch_data.c.key == key, launch_data.c.value != USED, launch_data.c.expires_at >= db.now(),
        ).values(value=USED)).rowcount == 1


# --- links and attempts -----------------------------------------------------------------------------

@dataclass(frozen=True)
class Link:
    id: int
    platform_id: int
    deployment_id: str
    context_id: str
    resource_link_id: str
    context_title: str | None
    resource_title: str | None
    bank_id: str
    score_policy: str
    ags_scopes: list[str] | None
    lineitems_url: str | None
    lineitem_url: str | None
    settings: dict[str, str]  # custom parameter -> value, as the platform signed them


def _link(row) -> Link:
    return Link(row.id, row.platform_id, row.deployment_id, row.context_id, row.resource_link_id,
                row.context_title, row.resource_title, row.bank_id, row.score_policy,
                json.loads(row.ags_scopes) if row.ags_scopes else None, row.lineitems_url, row.lineitem_url,
                json.loads(row.settings) if row.settings else {})


def save_link(platform_id: int, deployment_id: str, context_id: str, resource_link_id: str, **values) -> Link:
    """Create or update the link for this placement; values the launch did not carry (None) are kept,
    except the line item the platform names, which replaces one the tool made. `settings` (a dict) are
    those of this launch: every launch of a link carries all its custom parameters."""
    key = (links.c.platform_id == platform_id, links.c.deployment_id == deployment_id,
           links.c.context_id == context_id, links.c.resource_link_id == resource_link_id)
    fresh = {name: value for name, value in values.items() if value is not None}
    for name in ("ags_scopes", "settings"):
        if name in fresh:
            fresh[name] = json.dumps(fresh[name])
    for _ in range(2):
        with _connect() as connection:
            row = connection.execute(select(links).where(*key)).first()
            if row is not None:
                if fresh:
                    connection.execute(update(links).where(links.c.id == row.id).values(**fresh))
                return _link(connection.execute(select(links).where(links.c.id == row.id)).one())
            try:
                connection.execute(insert(links).values(
                    platform_id=platform_id, deployment_id=deployment_id, context_id=context_id,
                    resource_link_id=resource_link_id, **{"score_policy": "best", **fresh}))
            except IntegrityError:
                continue  # another worker's first launch of this link at the same moment: read theirs
            return _link(connection.execute(select(links).where(*key)).one())
    raise RuntimeError("the LTI link could be neither created nor read")


def find_link(platform_id: int, deployment_id: str, context_id: str, resource_link_id: str) -> Link | None:
    with db.engine().connect() as connection:
        row = connection.execute(select(links).where(
            links.c.platform_id == platform_id, links.c.deployment_id == deployment_id,
            links.c.context_id == context_id, links.c.resource_link_id == resource_link_id)).first()
    return _link(row) if row else None


def link_by_id(link_id: int) -> Link | None:
    with db.engine().connect() as connection:
        row = connection.execute(select(links).where(links.c.id == link_id)).first()
    return _link(row) if row else None


def claim_lineitem_creation(link_id: int, stale_after_seconds: float = 120) -> bool:
    """True for the one worker that may create this link's line item now (others retry later)."""
    with _connect() as connection:
        return connection.execute(update(links).where(
            links.c.id == link_id, links.c.lineitem_url.is_(None),
            (links.c.lineitem_claimed_at.is_(None))
            | (links.c.lineitem_claimed_at < db.now() - timedelta(seconds=stale_after_seconds)),
        ).values(lineitem_claimed_at=db.now())).rowcount == 1


def set_lineitem(link_id: int, url: str | None) -> None:
    with _connect() as connection:
        connection.execute(update(links).where(links.c.id == link_id).values(
            lineitem_url=url, lineitem_claimed_at=None))


def owner(link_id: int, user_sub: str, user_name: str | None, attempt_number: int):
    """What makes a new attempt this user's `attempt_number`-th in this link, written in the attempt's own
    transaction (db.start_attempt's `owner`): when another attempt has that number, IntegrityError, and neither
    is stored."""
    def write(connection, attempt_id: str) -> None:
        connection.execute(insert(attempt_users).values(attempt_id=attempt_id, link_id=link_id, user_sub=user_sub,
                                                        user_name=user_name, attempt_number=attempt_number))
    return write


def attempt_owner(attempt_id: str):
    """(link_id, user_sub, user_name) of an LTI attempt, or None for an anonymous one."""
    with db.engine().connect() as connection:
        return connection.execute(select(attempt_users.c.link_id, attempt_users.c.user_sub,
                                         attempt_users.c.user_name).where(
            attempt_users.c.attempt_id == attempt_id)).first()


def user_attempts(link_id: int, user_sub: str) -> list:
    """The user's attempts in this link, newest first, each with its attempt_number (None before numbers)."""
    with db.engine().connect() as connection:
        return connection.execute(
            select(db.attempts, attempt_users.c.attempt_number).join(attempt_users, attempt_users.c.attempt_id == db.attempts.c.id)
            .where(attempt_users.c.link_id == link_id, attempt_users.c.user_sub == user_sub)
            .order_by(db.attempts.c.started_at.desc())).all()


def course_links(platform_id: int, deployment_id: str, context_id: str) -> list[Link]:
    """The links of one course, in the order they were first launched."""
    with db.engine().connect() as connection:
        rows = connection.execute(select(links).where(
            links.c.platform_id == platform_id, links.c.deployment_id == deployment_id,
            links.c.context_id == context_id).order_by(links.c.id)).all()
    return [_link(row) for row in rows]


def course_attempts(platform_id: int, deployment_id: str, context_id: str) -> list:
    """Every LTI attempt in one course (all its links), with its link and user, newest first."""
    with db.engine().connect() as connection:
        return connection.execute(
            select(db.attempts, attempt_users.c.user_sub, attempt_users.c.user_name, links.c.resource_title,
                   links.c.id.label("link_id"))
            .join(attempt_users, attempt_users.c.attempt_id == db.attempts.c.id)
            .join(links, links.c.id == attempt_users.c.link_id)
            .where(links.c.platform_id == platform_id, links.c.deployment_id == deployment_id,
                   links.c.context_id == context_id)
            .order_by(db.attempts.c.started_at.desc())).all()


# --- the grade queue ---------------------------------------------------------------------------------

def queue_grade(link_id: int, user_sub: str) -> None:
    """Mark this user's grade in this link as needing a send now (one row per user and link)."""
    now = db.now()
    with _connect() as connection:
        changed = connection.execute(update(grade_sync).where(
            grade_sync.c.link_id == link_id, grade_sync.c.user_sub == user_sub).values(
            status="pending", tries=0, next_try_at=now, updated_at=now)).rowcount
        if not changed:
            try:
                with connection.begin_nested():
                    connection.execute(insert(grade_sync).values(
                        link_id=link_id, user_sub=user_sub, status="pending", tries=0, next_try_at=now,
                        updated_at=now))
            except IntegrityError:  # queued by another worker a moment ago: it is pending either way
                pass


def due_grades(limit: int, link_id: int | None = None, user_sub: str | None = None) -> list:
    query = select(grade_sync).where(grade_sync.c.status != "sent", grade_sync.c.next_try_at <= db.now())
    if link_id is not None:
        query = query.where(grade_sync.c.link_id == link_id)
    if user_sub is not None:
        query = query.where(grade_sync.c.user_sub == user_sub)
    with db.engine().connect() as connection:
        return connection.execute(query.order_by(grade_sync.c.next_try_at).limit(limit)).all()


def grade_sent(row_id: int, score: float, read_at: datetime) -> None:
    """Mark a send done, unless a newer grade was queued while it was on its way (then it stays pending)."""
    with _connect() as connection:
        connection.execute(update(grade_sync).where(
            grade_sync.c.id == row_id, grade_sync.c.updated_at == read_at).values(
            status="sent", score_sent=score, last_error=None, updated_at=db.now()))


def grade_failed(row_id: int, tries: int, retry_at: datetime, error: str) -> None:
    with _connect() as connection:
        connection.execute(update(grade_sync).where(grade_sync.c.id == row_id).values(
            status="failed", tries=tries, next_try_at=retry_at, last_error=error[:2000], updated_at=db.now()))


def course_grade_rows(platform_id: int, deployment_id: str, context_id: str) -> list:
    with db.engine().connect() as connection:
        return connection.execute(
            select(grade_sync, links.c.resource_title).join(links, links.c.id == grade_sync.c.link_id)
            .where(links.c.platform_id == platform_id, links.c.deployment_id == deployment_id,
                   links.c.context_id == context_id)
            .order_by(grade_sync.c.updated_at.desc())).all()
