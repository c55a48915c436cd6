"""Persistence with SQLAlchemy Core: attempts, every try at a question and each question's final answer, on
SQLite or PostgreSQL.

SQLite in the instance folder is the zero-set-up default (WAL mode, busy timeout); set
DATABASE_URL=postgresql+psycopg://... when several app servers share one database.
"""

from __future__ import annotations

import functools
import json
import logging
import secrets
import time
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import click
from flask import Flask, current_app, request
from sqlalchemy import (
    Boolean,
    Column,
    DateTime,
    Engine,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    bindparam,
    create_engine,
    event,
    exists,
    func,
    insert,
    inspect,
    literal,
    select,
    text,
    update,
)
from sqlalchemy.exc import IntegrityError, InterfaceError, OperationalError, SQLAlchemyError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from .errors import AppError, render_app_error

log = logging.getLogger(__name__)

SCHEMA_VERSION = 4  # 2: tries, and attempts.question_ids; 3: attempts.questions; 4: tries.graded_as

metadata = MetaData()

schema_info = Table(
    "schema_info", metadata,
    Column("id", Integer, primary_key=True),
    Column("version", Integer, nullable=False),
)

attempts = Table(
    "attempts", metadata,
    Column("id", String(32), primary_key=True),
    Column("bank_id", String(64), nullable=False),
    Column("seed", Integer, nullable=False, default=0),  # the variant seed of parameterised questions
    Column("display_name", String(80)),
    Column("started_at", DateTime(timezone=True), nullable=False),
    Column("finished_at", DateTime(timezone=True)),
    Column("total_score", Float),
    Column("max_score", Integer),
    # A JSON list of question ids for a "try the ones I missed" attempt; NULL: every question of the bank.
    Column("question_ids", Text),
    # A JSON list of the ids of every question the attempt has, fixed when it starts, so a question the bank gains
    # later is not in it; NULL: an attempt stored before version 3, which has the bank's questions as they are.
    Column("questions", Text),
    Index("ix_attempts_bank", "bank_id"),
)

responses = Table(
    "responses", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("attempt_id", String(32), ForeignKey("attempts.id", ondelete="CASCADE"), nullable=False),
    Column("bank_id", String(64), nullable=False),
    Column("question_id", String(64), nullable=False),
    Column("seed", Integer, nullable=False, default=0),
    Column("answer", Text, nullable=False),  # JSON: true/false, an option id, a list of ids, or a number
    Column("score", Float, nullable=False),  # after the try_again penalty: what the question adds to the total
    Column("answered_at", DateTime(timezone=True), nullable=False),
    UniqueConstraint("attempt_id", "question_id", name="uq_response_once"),
    Index("ix_responses_bank_question", "bank_id", "question_id"),
)

# Every try at a question, the one that closed it included (final: a right answer, the last try allowed, or the
# only try of a bank without try_again); the final try's answer is also the question's row in `responses`.
tries = Table(
    "tries", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("attempt_id", String(32), ForeignKey("attempts.id", ondelete="CASCADE"), nullable=False),
    Column("bank_id", String(64), nullable=False),
    Column("question_id", String(64), nullable=False),
    Column("try_number", Integer, nullable=False),  # 1, 2, ...
    Column("answer", Text, nullable=False),  # JSON, as in responses
    Column("score", Float, nullable=False),  # this try's own score, before any penalty
    Column("misconception", String(64)),  # the id of the misconception the answer matched, if any
    Column("final", Boolean, nullable=False),
    Column("tried_at", DateTime(timezone=True), nullable=False),
    # grading.key_version of the question and bank it was scored under (NULL: stored before version 4), so the
    # instructor's bank page grades again only the answers an edit of the bank may have changed
    Column("graded_as", String(16)),
    UniqueConstraint("attempt_id", "question_id", "try_number", name="uq_try_once"),
    Index("ix_tries_bank_question", "bank_id", "question_id"),
)

# One row per signed-in instructor: the cookie carries only the id, so logging out (deleting the row) or
# idling past INSTRUCTOR_IDLE_TIMEOUT ends the session on every server, whatever copies of the cookie exist.
instructor_sessions = Table(
    "instructor_sessions", metadata,
    Column("id", String(64), primary_key=True),
    Column("last_seen_at", DateTime(timezone=True), nullable=False),
)


RETRY_AFTER_SECONDS = 5  # a database restart or fail-over usually takes a few seconds
NOT_SAVED = ("The database is not answering, so this could not be saved: nothing was stored. "
             "Go back and submit again in a moment.")
NOT_SHOWN = "The database is not answering, so this page cannot be shown right now. Try again in a moment."


class StorageError(AppError):
    status = 503
    title = "Not saved"
    retry_after = RETRY_AFTER_SECONDS


class DatabaseUnavailable(AppError):
    status = 503
    title = "Database unavailable"
    retry_after = RETRY_AFTER_SECONDS


@dataclass(frozen=True)
class StoredTry:
    question_id: str
    number: int
    answer: Any
    final: bool
    score: float  # as graded when it was given, or as a regrade set it


def now() -> datetime:
    return datetime.now(timezone.utc)


def as_utc(moment: datetime | None) -> datetime | None:
    """A stored moment with its zone: SQLite hands back the app's UTC without one, PostgreSQL with it."""
    return moment if moment is None or moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def _sqlite_pragmas(dbapi_connection, _record) -> None:
    # WAL lets readers and one writer work at once; the busy timeout makes writers wait their
    # turn instead of failing; foreign keys are off by default in SQLite.
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def make_engine(url: str) -> Engine:
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"timeout": 30})
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    return create_engine(url, pool_pre_ping=True, pool_size=5, max_overflow=10)


def default_url(app: Flask) -> str:
    path = Path(app.instance_path) / "attention-quiz.sqlite3"
    path.parent.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{path}"


_MIGRATE_ATTEMPTS = 8


def migrate(engine: Engine) -> int:
    """Create or upgrade the schema; safe to run any number of times. Returns the schema version."""
    # Several workers starting at once on a new database race between "does it exist" and CREATE,
    # table by table, so a loser may lose again on the next table (or on an upgrade step another worker
    # just made); each retry finds more of the schema made, and it converges within a few looks.
    for attempt in range(_MIGRATE_ATTEMPTS):
        try:
            metadata.create_all(engine, checkfirst=True)
            _upgrade(engine)
            break
        except SQLAlchemyError:
            if attempt == _MIGRATE_ATTEMPTS - 1:
                raise
            time.sleep(0.02 * (attempt + 1))
    return SCHEMA_VERSION


def _upgrade(engine: Engine) -> None:
    """Bring a database made by an older version up to SCHEMA_VERSION, one guarded step per version."""
    with engine.begin() as connection:
        # FOR UPDATE (PostgreSQL): a second worker waits here, then finds the upgrade done.
        row = connection.execute(select(schema_info.c.version).where(schema_info.c.id == 1).with_for_update()).first()
        if row is None:  # another process inserting at the same moment makes this fail, and migrate retries
            connection.execute(insert(schema_info).values(id=1, version=1))
        version = row.version if row is not None else 1  # no row: an empty database, or one from version 1
        if version < 2:
            # create_all made `tries` (and question_ids on a new table); an existing attempts table lacks the
            # column, and every answer stored before gets its try 1.
            if "question_ids" not in {c["name"] for c in inspect(connection).get_columns("attempts")}:
                connection.execute(text("ALTER TABLE attempts ADD COLUMN question_ids TEXT"))
            tried = exists().where(tries.c.attempt_id == responses.c.attempt_id,
                                   tries.c.question_id == responses.c.question_id)
            connection.execute(insert(tries).from_select(
                ["attempt_id", "bank_id", "question_id", "try_number", "answer", "score", "final", "tried_at"],
                select(responses.c.attempt_id, responses.c.bank_id, responses.c.question_id, literal(1),
                       responses.c.answer, responses.c.score, literal(True), responses.c.answered_at)
                .where(~tried)))
        if version < 3:  # create_all made `questions` on a new table; an existing one lacks it
            if "questions" not in {c["name"] for c in inspect(connection).get_columns("attempts")}:
                connection.execute(text("ALTER TABLE attempts ADD COLUMN questions TEXT"))
        if version < 4:  # create_all made `graded_as` on a new table; an existing one lacks it
            if "graded_as" not in {c["name"] for c in inspect(connection).get_columns("tries")}:
                connection.execute(text("ALTER TABLE tries ADD COLUMN graded_as VARCHAR(16)"))
        if version < SCHEMA_VERSION:
            connection.execute(update(schema_info).where(schema_info.c.id == 1).values(version=SCHEMA_VERSION))


def schema_ready(app: Flask | None = None) -> None:
    """Create or upgrade the schema when DATABASE_AUTO_MIGRATE is on (the default): as a server starts, and as a
    `flask` command that uses the database (regrade, lti) begins. Commands that only read bank files never open
    the database, so checking a bank beside a production DATABASE_URL cannot upgrade its schema."""
    app = app or current_app
    if app.config.get("DATABASE_AUTO_MIGRATE", True):
        migrate(app.extensions["db_engine"])


def engine() -> Engine:
    return current_app.extensions["db_engine"]


def _write(statement_fn):
    try:
        with engine().begin() as connection:
            return statement_fn(connection)
    except IntegrityError:
        raise
    except SQLAlchemyError as error:
        log.exception("database write failed")
        raise StorageError(NOT_SAVED) from error


def start_attempt(attempt_id: str, bank_id: str, seed: int, display_name: str | None = None,
                  question_ids: list[str] | None = None, owner=None, questions: list[str] | None = None) -> None:
    """A new attempt at the whole bank, or (question_ids) at only those of its questions; `questions`: the ids of
    every question it has (the bank's at this moment, or question_ids). `owner(connection,
    attempt_id)` records who owns it in the same transaction (an LMS user: app.lti.store.owner); if that fails,
    with IntegrityError, the attempt is not stored either."""
    def run(connection):
        connection.execute(insert(attempts).values(
            id=attempt_id, bank_id=bank_id, seed=seed, display_name=display_name, started_at=now(),
            question_ids=None if question_ids is None else json.dumps(question_ids),
            questions=None if questions is None else json.dumps(questions)))
        if owner is not None:
            owner(connection, attempt_id)
    _write(run)


@dataclass(frozen=True)
class TryStored:
    """A try was stored; `finished` when it finished the attempt (exactly one try does, whatever the race)."""

    finished: bool


def record_try(attempt_id: str, bank_id: str, question_id: str, try_number: int, answer: Any, score: float, *,
               final: bool, final_score: float = 0.0, seed: int = 0, misconception: str | None = None,
               question_ids: list[str] | None = None, graded_as: str | None = None) -> TryStored | None:
    """Store a try; a final one also stores the question's answer (with `final_score`, the score after any
    penalty) and finishes the attempt when it closes its last question: when every one of `question_ids` (the
    attempt's questions as the bank has them now; default: this one) has an answer. An answer to a question the
    bank has dropped since is kept, and counts toward neither. `graded_as`: grading.key_version of what scored
    it. None if that try was already stored."""
    question_ids = question_ids or [question_id]
    def run(connection):
        moment = now()
        connection.execute(insert(tries).values(
            attempt_id=attempt_id, bank_id=bank_id, question_id=question_id, try_number=try_number,
            answer=json.dumps(answer), score=score, misconception=misconception, final=final, tried_at=moment,
            graded_as=graded_as))
        if not final:
            return TryStored(finished=False)
        connection.execute(insert(responses).values(
            attempt_id=attempt_id, bank_id=bank_id, question_id=question_id, seed=seed,
            answer=json.dumps(answer), score=final_score, answered_at=moment))
        # Two last answers at once (two tabs, two servers): under READ COMMITTED each transaction would
        # count only its own new row, and neither would finish the attempt. Locking the attempt's row
        # makes them take turns, and the second one's count sees the first one's committed answer.
        # FOR NO KEY UPDATE (key_share), not FOR UPDATE: each INSERT's foreign-key check holds a KEY SHARE
        # lock on this row, which FOR UPDATE waits for, so two of them deadlock (measured: PostgreSQL aborts
        # one). SQLite has no row locks, and lets one writer in at a time anyway.
        connection.execute(select(attempts.c.id).where(attempts.c.id == attempt_id).with_for_update(key_share=True))
        answered, total = connection.execute(_answers_of(attempt_id, question_ids)).one()
        finished = False
        if answered >= len(question_ids):
            finished = connection.execute(
                update(attempts).where(attempts.c.id == attempt_id, attempts.c.finished_at.is_(None))
                .values(finished_at=now(), total_score=float(total), max_score=len(question_ids))).rowcount == 1
        return TryStored(finished)
    try:
        return _write(run)
    except IntegrityError:
        return None  # a double submit, maybe from another server: the first one stands


def _answers_of(attempt_id: str, question_ids: list[str]):
    """How many of `question_ids` the attempt has answered, and the sum of those answers' scores."""
    return (select(func.count(), func.coalesce(func.sum(responses.c.score), 0.0))
            .where(responses.c.attempt_id == attempt_id, responses.c.question_id.in_(question_ids)))


def finish_attempt(attempt_id: str, question_ids: list[str]) -> bool:
    """Close an attempt with the answers it has (its time limit passed): finished_at, and the total of its
    answers' scores out of its questions, `question_ids` (an unanswered question counts 0). True if this call
    closed it."""
    def run(connection):
        # The attempt's row first, as in record_try: a last answer stored at the same moment takes its turn.
        connection.execute(select(attempts.c.id).where(attempts.c.id == attempt_id).with_for_update(key_share=True))
        _, total = connection.execute(_answers_of(attempt_id, question_ids)).one()
        return connection.execute(
            update(attempts).where(attempts.c.id == attempt_id, attempts.c.finished_at.is_(None))
            .values(finished_at=now(), total_score=float(total), max_score=len(question_ids))).rowcount == 1
    return _write(run)


@dataclass(frozen=True)
class AttemptState:
    """An attempt's row (None if there is none), its stored tries per question, and the assessment settings of the
    LMS link it was started from ({} for an attempt outside an LMS), read in one query."""

    row: Any
    tries: dict[str, list[StoredTry]]
    link_settings: dict[str, str]
    in_course: bool = False  # an LMS launch started it: it is an LMS user's attempt in a course link
    graded: bool = False  # ... and that link has the platform's grade service, so its score is sent


_ATTEMPT_COLUMNS = [column.name for column in attempts.c]
# Built once: constructing a statement costs more than SQLite takes to run it.
@functools.cache
def _attempt_state_query():
    """The attempt, its tries and its LMS link's settings (app.lti.store defines lti_attempts and lti_links on this
    metadata; app.lti is always part of the app, and its tables exist before the first query)."""
    lti_attempts, lti_links = metadata.tables["lti_attempts"], metadata.tables["lti_links"]
    return (
        select(attempts, tries.c.question_id.label("t_question_id"), tries.c.try_number.label("t_number"),
               tries.c.answer.label("t_answer"), tries.c.final.label("t_final"), tries.c.score.label("t_score"),
               lti_links.c.settings.label("link_settings"), lti_attempts.c.link_id.label("link_id"),
               lti_links.c.ags_scopes.label("link_grades"))
        .select_from(attempts.outerjoin(tries, tries.c.attempt_id == attempts.c.id)
                     .outerjoin(lti_attempts, lti_attempts.c.attempt_id == attempts.c.id)
                     .outerjoin(lti_links, lti_links.c.id == lti_attempts.c.link_id))
        .where(attempts.c.id == bindparam("attempt_id"))
        .order_by(tries.c.try_number)
    )


def attempt_state(attempt_id: str) -> AttemptState:
    """The attempt and every try stored in it, oldest first, with one query (a page needs both)."""
    with engine().connect() as connection:
        rows = connection.execute(_attempt_state_query(), {"attempt_id": attempt_id}).all()
    if not rows:
        return AttemptState(None, {}, {})
    first = rows[0]
    row = SimpleNamespace(**{name: getattr(first, name) for name in _ATTEMPT_COLUMNS})
    stored: dict[str, list[StoredTry]] = {}
    for r in rows:
        if r.t_question_id is not None:
            stored.setdefault(r.t_question_id, []).append(
                StoredTry(r.t_question_id, r.t_number, json.loads(r.t_answer), bool(r.t_final), float(r.t_score)))
    return AttemptState(row, stored, json.loads(first.link_settings) if first.link_settings else {},
                        in_course=first.link_id is not None,
                        graded=bool(first.link_grades and json.loads(first.link_grades)))


def timed_open_attempts(bank_id: str, started_before: datetime | None, limit: int) -> list[str]:
    """Ids of the unfinished attempts at `bank_id` that a time limit may have ended, oldest first: those started
    before `started_before` (the bank's own limit ago; None if it has none), and those of LMS links whose settings
    set a time_limit."""
    lti_attempts, lti_links = metadata.tables["lti_attempts"], metadata.tables["lti_links"]
    linked = (select(lti_attempts.c.attempt_id).join(lti_links, lti_links.c.id == lti_attempts.c.link_id)
              .where(lti_links.c.settings.contains('"time_limit"')))
    may_be_over = attempts.c.id.in_(linked)
    if started_before is not None:
        may_be_over = may_be_over | (attempts.c.started_at < started_before)
    statement = (select(attempts.c.id).where(attempts.c.bank_id == bank_id, attempts.c.finished_at.is_(None),
                                             may_be_over).order_by(attempts.c.started_at).limit(limit))
    with engine().connect() as connection:
        return list(connection.execute(statement).scalars())


def set_display_name(attempt_id: str, name: str | None) -> None:
    _write(lambda c: c.execute(update(attempts).where(attempts.c.id == attempt_id).values(display_name=name)))


def open_instructor_session(idle_seconds: float) -> str:
    """A new instructor session's id; sessions idle longer than `idle_seconds` are deleted meanwhile."""
    session_id = secrets.token_urlsafe(32)
    def run(connection):
        connection.execute(instructor_sessions.delete().where(
            instructor_sessions.c.last_seen_at < now() - timedelta(seconds=idle_seconds)))
        connection.execute(insert(instructor_sessions).values(id=session_id, last_seen_at=now()))
    _write(run)
    return session_id


def touch_instructor_session(session_id: str, idle_seconds: float) -> bool:
    """True, and the idle clock restarted, if the session exists and was used within `idle_seconds`."""
    with engine().begin() as connection:
        touched = connection.execute(update(instructor_sessions).where(
            instructor_sessions.c.id == session_id,
            instructor_sessions.c.last_seen_at >= now() - timedelta(seconds=idle_seconds),
        ).values(last_seen_at=now()))
    return touched.rowcount == 1


def close_instructor_session(session_id: str) -> None:
    _write(lambda c: c.execute(instructor_sessions.delete().where(instructor_sessions.c.id == session_id)))


def healthy() -> bool:
    try:
        with engine().connect() as connection:
            connection.execute(text("SELECT 1"))
        return True
    except SQLAlchemyError:
        return False


def _unreachable(error: SQLAlchemyError):
    """A read that needs the database while it is down (a write raises StorageError in _write): 503."""
    log.warning("database unavailable on %s %s: %r", request.method, request.path, getattr(error, "orig", error))
    if request.method in ("GET", "HEAD"):
        return render_app_error(DatabaseUnavailable(NOT_SHOWN))
    return render_app_error(StorageError(NOT_SAVED))  # a submission read first, and stored nothing


def init_app(app: Flask, migrate_now: bool = True) -> None:
    """The app's engine, its error handlers and `flask init-db`. With `migrate_now` (a server starting; not a CLI
    command, most of which only read bank files), the schema is created or upgraded at once (schema_ready)."""
    url = app.config.get("DATABASE_URL") or default_url(app)
    if url.startswith("postgres://"):  # the scheme Heroku and Render give out, which SQLAlchemy does not know
        url = "postgresql+psycopg://" + url.removeprefix("postgres://")
    db_engine = make_engine(url)
    app.extensions["db_engine"] = db_engine
    # Lost or refused connections and an exhausted pool; a programming error stays a logged 500.
    for kind in (OperationalError, InterfaceError, PoolTimeout):
        app.register_error_handler(kind, _unreachable)
    if migrate_now:
        schema_ready(app)

    @app.cli.command("init-db")
    def init_db_command() -> None:
        """Create or upgrade the database schema (idempotent)."""
        try:
            version = migrate(db_engine)
        except SQLAlchemyError as error:
            where = db_engine.url.render_as_string(hide_password=True)
            reason = str(getattr(error, "orig", error)).strip().splitlines()[0]
            raise click.ClickException(f"cannot reach the database at {where}: {reason}") from None
        click.echo(f"database ready at schema version {version}: {db_engine.url.render_as_string(hide_password=True)}")
