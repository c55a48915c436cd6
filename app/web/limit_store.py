"""Rate-limit counters in the app's own database (`FLASK_RATELIMIT_STORAGE_URI=database://`), so a limit holds
across every worker and every server that shares the database, with no extra service.

A `limits` storage backend (the public `limits.storage.Storage` interface that Flask-Limiter uses): one row per
key, a fixed window counter updated atomically by one UPSERT ... RETURNING (SQLite 3.35+, PostgreSQL).
"""

from __future__ import annotations

import threading
import time
import weakref
from typing import ClassVar

from flask import current_app
from limits.storage import Storage
from sqlalchemy import (
    Column,
    Engine,
    Float,
    Integer,
    MetaData,
    Table,
    Text,
    case,
    delete,
    select,
    text,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import SQLAlchemyError

metadata = MetaData()
rate_limits = Table(
    "rate_limits", metadata,
    Column("key", Text, primary_key=True),  # Flask-Limiter's key: limit, scope and client
    Column("hits", Integer, nullable=False),
    Column("expires_at", Float, nullable=False),  # Unix time at which this window ends
)

SWEEP_SECONDS = 60  # how often a process deletes windows that ended (keys of clients gone away)


class DatabaseStorage(Storage):
    """Fixed-window counters in the `rate_limits` table of the current app's database."""

    STORAGE_SCHEME: ClassVar[list[str]] = ["database"]

    def __init__(self, uri: str | None = None, wrap_exceptions: bool = False, **options):
        super().__init__(uri, wrap_exceptions, **options)
        self._ready: weakref.WeakSet[Engine] = weakref.WeakSet()  # the engines whose table exists
        self._lock = threading.Lock()
        self._swept = 0.0

    @property
    def base_exceptions(self):
        return SQLAlchemyError

    def _engine(self) -> Engine:
        # The app's engine, looked up per call: Flask-Limiter builds its storage without the app, and the
        # module-level limiter serves every app a process creates (the tests create many).
        engine = current_app.extensions["db_engine"]
        if engine not in self._ready:
            with self._lock:
                _create_table(engine)
                self._ready.add(engine)
        return engine

    def incr(self, key: str, expiry: int, amount: int = 1) -> int:
        now, engine, table = time.time(), self._engine(), rate_limits
        dialect = sqlite if engine.dialect.name == "sqlite" else postgresql
        statement = dialect.insert(table).values(key=key, hits=amount, expires_at=now + expiry)
        ended = table.c.expires_at <= now  # the old window is over: this hit opens a new one
        statement = statement.on_conflict_do_update(index_elements=[table.c.key], set_={
            "hits": case((ended, amount), else_=table.c.hits + amount),
            "expires_at": case((ended, now + expiry), else_=table.c.expires_at),
        }).returning(table.c.hits)
        with engine.begin() as connection:
            hits = connection.execute(statement).scalar_one()
            if now - self._swept > SWEEP_SECONDS:
                self._swept = now
                connection.execute(delete(table).where(table.c.expires_at < now))
        return hits

    def _row(self, key: str):
        with self._engine().connect() as connection:
            return connection.execute(select(rate_limits.c.hits, rate_limits.c.expires_at)
                                      .where(rate_limits.c.key == key)).first()

    def get(self, key: str) -> int:
        row = self._row(key)
        return row.hits if row is not None and row.expires_at > time.time() else 0

    def get_expiry(self, key: str) -> float:
        row = self._row(key)
        return row.expires_at if row is not None and row.expires_at > time.time() else time.time()

    def check(self) -> bool:
        try:
            with self._engine().connect() as connection:
                connection.execute(text("SELECT 1"))
            return True
        except SQLAlchemyError:
            return False

    def reset(self) -> int | None:
        with self._engine().begin() as connection:
            return connection.execute(delete(rate_limits)).rowcount

    def clear(self, key: str) -> None:
        with self._engine().begin() as connection:
            connection.execute(delete(rate_limits).where(rate_limits.c.key == key))


def _create_table(engine: Engine) -> None:
    # Workers starting at once race between "does it exist" and CREATE; the loser finds it made.
    for attempt in range(5):
        try:
            metadata.create_all(engine, checkfirst=True)
            return
        except SQLAlchemyError:
            if attempt == 4:
                raise
            time.sleep(0.02 * (attempt + 1))
