"""Regrade after a bank fix: `flask --app app regrade BANK [--question Q] [--allow-lower] [--dry-run]`.

Every stored answer is graded again against the bank as it is now, each against its own variant (the attempt's
seed), with the same grading and penalty schedule as a live try. By default a score only goes up: a key fixed in
the students' favour lifts them, and one fixed against them leaves what they were told they earned. What changed
is recorded in the `regrades` table, attempts' totals follow, and LMS attempts have their grade sent again.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

import click
from flask import current_app
from flask.cli import with_appcontext
from sqlalchemy import (
    Column,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Table,
    bindparam,
    case,
    insert,
    select,
    update,
)
from sqlalchemy.exc import SQLAlchemyError

from .. import db
from ..bank.schema import Bank
from ..bank.variants import VariantError, instantiate
from ..errors import BadInput
from ..grading import grade, key_version, parse_answer
from ..lti import on_attempt_finished
from ..lti import store as lti_store
from ..web.progress import penalised

SCORE_TOLERANCE = 1e-9  # scores are rounded to 6 decimals; a smaller difference is no change
CHUNK = 5000  # answers graded per transaction (about 0.5 s): what a look cut short has done is kept
EXIT_USAGE = 2  # as validate-quizzes and export-quiz: an argument that names nothing

# One row per answer whose score a regrade changed (created by `migrate` with the other tables).
regrades = Table(
    "regrades", db.metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("regraded_at", DateTime(timezone=True), nullable=False),
    Column("bank_id", String(64), nullable=False),
    Column("question_id", String(64), nullable=False),
    Column("attempt_id", String(32), ForeignKey("attempts.id", ondelete="CASCADE"), nullable=False),
    Column("old_score", Float, nullable=False),
    Column("new_score", Float, nullable=False),
    Index("ix_regrades_bank", "bank_id"),
)


@dataclass(frozen=True)
class Change:
    """One answer's score under the current key: `old` as stored, `new` as graded now."""

    attempt_id: str
    student: str
    question_id: str
    old: float
    new: float
    finished: bool  # the attempt is finished: its total, and an LMS grade, follow the change


@dataclass(frozen=True)
class Unusable:
    """An answer that cannot be graded against the question as it is now, and why; its score is left alone."""

    attempt_id: str
    student: str
    question_id: str
    reason: str


@dataclass
class Regrade:
    checked: int = 0  # answers (final responses) graded again
    changed: list[Change] = field(default_factory=list)  # stored (or, in a dry run, would be)
    kept: list[Change] = field(default_factory=list)  # would go down: kept without --allow-lower
    unusable: list[Unusable] = field(default_factory=list)
    sent: list[str] = field(default_factory=list)  # finished LMS attempts whose grade was queued again

    @property
    def attempts(self) -> list[str]:
        return sorted({change.attempt_id for change in self.changed})

    @property
    def finished_attempts(self) -> list[str]:
        return sorted({change.attempt_id for change in self.changed if change.finished})

    @property
    def raised(self) -> int:
        return sum(1 for change in self.changed if change.new > change.old)

    @property
    def lowered(self) -> int:
        return len(self.changed) - self.raised


def reviewed_keys(bank: Bank, question_id: str | None = None) -> str:
    """16 hex digits naming the keys a regrade applies (every question's key_version, or one question's): the
    regrade page sends it with its form, so a key edited after the review is not applied unseen."""
    questions = [q for q in bank.questions if question_id is None or q.id == question_id]
    return hashlib.sha256(" ".join(key_version(bank, q) for q in questions).encode()).hexdigest()[:16]


def _student(row) -> str:
    return row.user_name or row.display_name or "(anonymous)"


def _regraded(bank: Bank, question, seed: int, stored_tries: list) -> tuple[float, dict[int, tuple]] | str:
    """The question's score from its tries graded now, and each try's (score, misconception); or why not."""
    try:
        concrete = instantiate(question, seed)
    except VariantError as error:
        return f"its variant cannot be built any more: {error}"
    if not stored_tries:  # the schema-2 upgrade gave every older answer its try 1
        return "no try is stored for it"
    graded: dict[int, tuple] = {}
    for stored in stored_tries:
        try:
            result = grade(concrete, parse_answer(concrete, json.loads(stored.answer)))
        except (BadInput, ValueError) as error:
            return f"try {stored.try_number}'s answer {stored.answer[:60]} no longer fits: {error}"
        graded[stored.try_number] = (result.score, result.misconception.id if result.misconception else None)
    return penalised(bank, {number: score for number, (score, _) in graded.items()}), graded


def _stale_pairs(connection, bank: Bank, versions: dict[str, str], question_id: str | None) -> set[tuple[str, str]]:
    """(attempt, question) of each answer with a try not scored under its question's current key_version
    (`versions`, by question id): stored before graded_as existed, or before an edit of the question or of the
    bank's tries. An answer to a question the bank no longer has is never stale: there is no key to check it by."""
    stale = (select(db.tries.c.attempt_id, db.tries.c.question_id).distinct()
             .where(db.tries.c.bank_id == bank.id, db.tries.c.question_id.in_(list(versions)),
                    db.tries.c.graded_as.is_distinct_from(case(versions, value=db.tries.c.question_id))))
    if question_id is not None:
        stale = stale.where(db.tries.c.question_id == question_id)
    return {(row.attempt_id, row.question_id) for row in connection.execute(stale)}


def regrade(bank: Bank, question_id: str | None = None, *, allow_lower: bool = False,
            dry_run: bool = False, stale_only: bool = False) -> Regrade:
    """Grade every stored answer to `bank` (or to one of its questions) again; store the changes unless dry_run.

    Each answer the current key scores as stored, or whose change is stored, has its tries marked as scored
    under the question's current key_version (with each try's own score and misconception as graded now). stale_only
    (the bank page's check, and its Apply): grade again only the answers not yet marked so, and mark those that
    keep their score even in a dry run (no answer's score is stored), so that each answer is graded once per
    version of its question, not on every look at the page. The answers are taken CHUNK at a time, each chunk in
    its own transaction: a look cut short (a worker's timeout) keeps the marks it made, and the next goes on."""
    versions = {question.id: key_version(bank, question) for question in bank.questions}
    of_bank = [db.responses.c.bank_id == bank.id] + (
        [db.responses.c.question_id == question_id] if question_id is not None else [])
    with db.engine().connect() as connection:
        stale = _stale_pairs(connection, bank, versions, question_id) if stale_only else None
        ids = [] if stale == set() else [  # an unchanged bank's page reads no answer at all
            row.id for row in connection.execute(select(db.responses.c.id, db.responses.c.attempt_id,
                                                        db.responses.c.question_id).where(*of_bank)
                                                 .order_by(db.responses.c.id))
            if stale is None or (row.attempt_id, row.question_id) in stale]
    answers = (select(db.responses.c.id, db.responses.c.attempt_id, db.responses.c.question_id, db.responses.c.seed,
                      db.responses.c.score, db.attempts.c.display_name, db.attempts.c.finished_at,
                      lti_store.attempt_users.c.user_name)
               .join(db.attempts, db.attempts.c.id == db.responses.c.attempt_id)
               .outerjoin(lti_store.attempt_users, lti_store.attempt_users.c.attempt_id == db.responses.c.attempt_id)
               .order_by(db.responses.c.id))
    result = Regrade()
    for start in range(0, len(ids), CHUNK):  # at most CHUNK values in an IN list (SQLite takes 32,766)
        with db.engine().begin() as connection:
            rows = connection.execute(answers.where(db.responses.c.id.in_(ids[start:start + CHUNK]))).all()
            tries_of: dict[tuple[str, str], list] = {(row.attempt_id, row.question_id): [] for row in rows}
            of_chunk = (select(db.tries).where(db.tries.c.bank_id == bank.id,
                                               db.tries.c.attempt_id.in_({row.attempt_id for row in rows}))
                        .order_by(db.tries.c.try_number))
            for row in connection.execute(of_chunk):
                if (row.attempt_id, row.question_id) in tries_of:
                    tries_of[row.attempt_id, row.question_id].append(row)
            updates, checked = [], []
            for row in rows:
                result.checked += 1
                stored_tries = tries_of[row.attempt_id, row.question_id]
                question = bank.question(row.question_id)
                found = (_regraded(bank, question, row.seed, stored_tries)
                         if question is not None else "the question is no longer in the bank")
                if isinstance(found, str):
                    result.unusable.append(Unusable(row.attempt_id, _student(row), row.question_id, found))
                    continue
                new, graded = found
                if abs(new - row.score) <= SCORE_TOLERANCE:
                    checked.append((row.attempt_id, row.question_id, stored_tries, graded))
                    continue
                change = Change(row.attempt_id, _student(row), row.question_id, float(row.score), new,
                                row.finished_at is not None)
                if new < row.score and not allow_lower:
                    result.kept.append(change)
                    continue
                updates.append((row.id, change, graded))
            if checked and (stale_only or not dry_run):
                _mark(connection, checked, versions)
            result.changed += ([change for _, change, _ in updates] if dry_run
                               else _store(connection, bank, updates, versions))
    if not dry_run:
        for attempt_id in result.finished_attempts:  # after the commit, so the grade sent is the new one
            if on_attempt_finished(attempt_id):
                result.sent.append(attempt_id)
    return result


def _same(stored, graded: tuple) -> bool:
    score, misconception = graded
    return abs(stored.score - score) <= SCORE_TOLERANCE and stored.misconception == misconception


def _mark(connection, checked: list[tuple], versions: dict[str, str]) -> None:
    """Mark the tries of each answer whose score stands ((attempt, question, its stored tries, each try graded
    now)) as scored under the question's current version; a try the current key grades otherwise (its own score
    under try_again, the misconception it matches) gets what it grades now, as a regrade of a changed answer does."""
    marks, rewritten = [], []
    for attempt_id, question_id, stored_tries, graded in checked:
        version = versions[question_id]
        if all(_same(stored, graded[stored.try_number]) for stored in stored_tries):
            marks.append({"a": attempt_id, "q": question_id, "v": version})
        else:
            rewritten.append((attempt_id, question_id, graded, version))
    if marks:
        connection.execute(update(db.tries).where(db.tries.c.attempt_id == bindparam("a"),
                                                  db.tries.c.question_id == bindparam("q"))
                           .values(graded_as=bindparam("v")), marks)
    for attempt_id, question_id, graded, version in rewritten:
        _write_tries(connection, attempt_id, question_id, graded, version)


def _write_tries(connection, attempt_id: str, question_id: str, graded: dict[int, tuple], version: str) -> None:
    for number, (score, misconception) in graded.items():
        connection.execute(update(db.tries).where(
            db.tries.c.attempt_id == attempt_id, db.tries.c.question_id == question_id,
            db.tries.c.try_number == number).values(score=score, misconception=misconception, graded_as=version))


def _store(connection, bank: Bank, updates: list, versions: dict[str, str]) -> list[Change]:
    """Store each change whose answer still has the score it was read with, and return those: a regrade running at
    the same moment (a second click, another instructor, the command) has stored the others, and applying one
    twice would add its difference to the attempt's total twice."""
    moment, stored = db.now(), []
    for response_id, change, graded in updates:
        if connection.execute(update(db.responses).where(db.responses.c.id == response_id,
                                                         db.responses.c.score == change.old)
                              .values(score=change.new)).rowcount != 1:
            continue
        stored.append(change)
        _write_tries(connection, change.attempt_id, change.question_id, graded, versions[change.question_id])
        connection.execute(insert(regrades).values(
            regraded_at=moment, bank_id=bank.id, question_id=change.question_id, attempt_id=change.attempt_id,
            old_score=change.old, new_score=change.new))
    deltas: dict[str, float] = {}
    for change in stored:
        deltas[change.attempt_id] = deltas.get(change.attempt_id, 0.0) + change.new - change.old
    for attempt_id, delta in deltas.items():
        # Each answer's change, not a new sum: the total holds only the answers to the questions the attempt had
        # when it finished. An unfinished attempt has no total yet: it is summed when it finishes.
        connection.execute(update(db.attempts).where(db.attempts.c.id == attempt_id,
                                                     db.attempts.c.finished_at.is_not(None))
                           .values(total_score=db.attempts.c.total_score + delta))
    return stored


def _count(number: int, one: str, many: str) -> str:
    return f"{number} {one if number == 1 else many}"


def summary(result: Regrade) -> str:
    """What an applied regrade did, for the bank page."""
    parts = [f"The current key was applied: {_count(len(result.changed), 'score', 'scores')} changed"
             + (f" in {_count(len(result.attempts), 'attempt', 'attempts')} ({result.raised} raised, "
                f"{result.lowered} lowered)."
                if result.changed else ".")]
    if result.kept:
        parts.append(f"{_count(len(result.kept), 'score it marks lower was', 'scores it marks lower were')} kept.")
    if result.unusable:
        parts.append(_count(len(result.unusable), "answer no longer fits its question and keeps its score.",
                            "answers no longer fit their questions and keep their scores."))
    if result.sent:
        parts.append(f"{_count(len(result.sent), 'LMS grade was', 'LMS grades were')} queued and sent to the grade "
                     "book; one the platform does not take stays queued for `flask --app app lti send-grades`.")
    return " ".join(parts)


def format_score(value: float) -> str:
    return f"{value:.6g}"


def format_table(changes: list[Change]) -> list[str]:
    """The changes as aligned text columns: attempt, student, question, old → new."""
    rows = [("attempt", "student", "question", "old → new")] + [
        (c.attempt_id, c.student, c.question_id, f"{format_score(c.old)} → {format_score(c.new)}") for c in changes]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    return ["  ".join(cell.ljust(width) for cell, width in zip(row[:3], widths)) + "  " + row[3] for row in rows]


@click.command("regrade")
@click.argument("bank_id", metavar="BANK")
@click.option("--question", "question_id", default=None, help="Regrade only this question (its id).")
@click.option("--allow-lower", is_flag=True, help="Also lower scores the current key marks down (default: a "
              "score never goes down).")
@click.option("--dry-run", is_flag=True, help="Show what would change; store and send nothing.")
@click.option("--check", is_flag=True, help="As the bank page does: grade only the answers not yet checked against "
              "the current key, show what would change, store no score, and mark the others as checked (a warm-up "
              "after an upgrade).")
@with_appcontext
def regrade_command(bank_id: str, question_id: str | None, allow_lower: bool, dry_run: bool, check: bool) -> None:
    """Grade every stored answer to BANK (a served bank's id) again with its current key."""
    from .. import db

    db.schema_ready()
    registry = current_app.extensions["banks"]
    bank = registry.banks.get(bank_id)
    if bank is None:
        served = ", ".join(sorted(registry.banks)) or "none"
        click.echo(f"error: no bank {bank_id!r} is served from {registry.directory}; the banks are: {served}. "
                   "Fix a bank's file so that it loads (validate-quizzes) before regrading it.", err=True)
        raise SystemExit(EXIT_USAGE)
    if question_id is not None and bank.question(question_id) is None:
        ids = ", ".join(q.id for q in bank.questions)
        click.echo(f"error: bank {bank_id!r} has no question {question_id!r}; its questions are: {ids}.", err=True)
        raise SystemExit(EXIT_USAGE)
    try:
        dry_run = dry_run or check
        result = regrade(bank, question_id, allow_lower=allow_lower, dry_run=dry_run, stale_only=check)
    except SQLAlchemyError as error:
        reason = str(getattr(error, "orig", error)).strip().splitlines()[0]
        raise click.ClickException(f"the database did not answer, so nothing was regraded: {reason}") from None
    if result.changed:
        click.echo("\n".join(format_table(result.changed)))
    plural = "s" if result.checked != 1 else ""
    verb = "would change" if dry_run else "changed"
    where = f", in {len(result.attempts)} attempt(s)" if result.changed else ""
    click.echo(f"{result.checked} answer{plural} checked; {len(result.changed)} {verb}{where}.")
    if result.kept:
        click.echo(f"{len(result.kept)} score(s) the current key marks lower were kept (use --allow-lower to "
                   "lower them):")
        click.echo("\n".join(format_table(result.kept)))
    for item in result.unusable:
        click.echo(f"not regraded: attempt {item.attempt_id} ({item.student}), question {item.question_id}: "
                   f"{item.reason}", err=True)
    if check:
        click.echo("Check: no score was stored or sent; the answers whose score stands are marked as checked.")
    elif dry_run:
        click.echo("Dry run: nothing was stored or sent.")
    elif result.sent:
        click.echo(f"{len(result.sent)} LMS attempt(s): the new grade was queued and sent; one the platform did not "
                   "take stays queued for `flask --app app lti send-grades`.")
