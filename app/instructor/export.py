"""The CSV export of a bank's responses: rows streamed from the database, one response per line.

Cells that a spreadsheet would run as a formula are defused with a leading quote (OWASP "CSV injection").
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable, Iterator
from datetime import datetime, timezone
from typing import Any

from sqlalchemy import Engine, select

from ..db import as_utc, attempts, metadata, responses

# New columns go at the end, so that a spreadsheet reading the old ones by position keeps working.
COLUMNS = ("attempt_id", "display_name", "bank_id", "question_id", "seed", "answer", "score", "answered_at",
           "finished_at", "total_score", "max_score", "attempt_kind", "lms_user_id", "lms_user_name")

# Spreadsheets evaluate a cell starting with one of these (tab and CR too: some strip them first).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
# A plain number such as -3 is shown as a number, not run, and must stay a number for analysis.
PLAIN_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")

ROWS_PER_CHUNK = 500


def guard_cell(value: str | None) -> str:
    if not value:
        return ""
    if value.startswith(FORMULA_STARTS) and not PLAIN_NUMBER.fullmatch(value):
        return "'" + value
    return value


def iso_utc(moment: datetime | None) -> str:
    """ISO 8601 in UTC; SQLite hands back naive datetimes, which the app always writes in UTC."""
    if moment is None:
        return ""
    return as_utc(moment).astimezone(timezone.utc).isoformat()


def _number(value: float | None) -> str:
    return "" if value is None else repr(float(value))


def csv_row(row: Any) -> list[str]:
    return [row.attempt_id, guard_cell(row.display_name), row.bank_id, row.question_id, str(row.seed),
            guard_cell(row.answer), _number(row.score), iso_utc(row.answered_at), iso_utc(row.finished_at),
            _number(row.total_score), "" if row.max_score is None else str(row.max_score),
            "whole" if row.question_ids is None else "missed-only",  # a retake of the questions it missed
            guard_cell(row.user_sub), guard_cell(row.user_name)]


def csv_chunks(rows: Iterable[Any]) -> Iterator[str]:
    """The header, then the rows, in chunks of text ready to stream."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")  # RFC 4180 line ends
    writer.writerow(COLUMNS)
    for count, row in enumerate(rows, start=1):
        writer.writerow(csv_row(row))
        if count % ROWS_PER_CHUNK == 0:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue()


def response_rows(engine: Engine, bank_id: str) -> Iterator[Any]:
    """Every stored response to the bank with its attempt, oldest attempt first, read in batches."""
    lms_users = metadata.tables["lti_attempts"]  # an LMS launch's attempt: whose it is (app.lti.store)
    statement = (
        select(responses.c.attempt_id, attempts.c.display_name, responses.c.bank_id, responses.c.question_id,
               responses.c.seed, responses.c.answer, responses.c.score, responses.c.answered_at,
               attempts.c.finished_at, attempts.c.total_score, attempts.c.max_score, attempts.c.question_ids,
               lms_users.c.user_sub, lms_users.c.user_name)
        .select_from(responses.join(attempts, responses.c.attempt_id == attempts.c.id)
                     .outerjoin(lms_users, lms_users.c.attempt_id == attempts.c.id))
        .where(responses.c.bank_id == bank_id)
        .order_by(attempts.c.started_at, responses.c.attempt_id, responses.c.id)
    )
    with engine.connect() as connection:
        yield from connection.execution_options(yield_per=ROWS_PER_CHUNK).execute(statement)
