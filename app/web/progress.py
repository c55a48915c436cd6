"""A student's progress through a bank, kept in the signed session cookie.

Only validated answers are stored (compactly); grades are recomputed from them, so a page shows the
same result on reload, after the back button, or after a double submit.
"""

from __future__ import annotations

import secrets

from flask import session

from ..bank.schema import Bank
from ..errors import BadInput
from ..grading import Answer, Grade, grade, parse_answer


def _attempts() -> dict:
    return session.setdefault("attempts", {})


def attempt(bank: Bank) -> dict:
    attempts = _attempts()
    if bank.id not in attempts:
        attempts[bank.id] = {"id": secrets.token_hex(8), "answers": {}}
        session.modified = True
    return attempts[bank.id]


def answers(bank: Bank) -> dict[str, Answer]:
    """The stored answers that still fit the bank as it is now (an edited bank drops stale ones)."""
    stored = _attempts().get(bank.id, {}).get("answers", {})
    valid: dict[str, Answer] = {}
    for question in bank.questions:
        if question.id in stored:
            try:
                valid[question.id] = parse_answer(question, stored[question.id])
            except BadInput:
                continue
    return valid


def record(bank: Bank, question_id: str, answer: Answer) -> bool:
    """Store a first answer; returns False (and keeps the first) if the question was already answered."""
    current = attempt(bank)
    if question_id in current["answers"]:
        return False
    current["answers"][question_id] = answer
    session.modified = True
    return True


def reset(bank: Bank) -> None:
    _attempts().pop(bank.id, None)
    session.modified = True


def grades(bank: Bank) -> dict[str, Grade]:
    given = answers(bank)
    return {q.id: grade(q, given[q.id]) for q in bank.questions if q.id in given}
