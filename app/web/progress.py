"""A student's progress through a bank: an anonymous attempt id in the signed session cookie, and
every answer stored in the database, so nothing lives only in the browser and nothing is lost.

Grades are recomputed from stored answers, so a page shows the same result on reload, after the
back button, or after a double submit (the first answer stands, even across app servers).
"""

from __future__ import annotations

import secrets

from flask import g, session

from .. import db
from ..bank.schema import Bank, Question
from ..bank.variants import MAX_SEED, instantiate
from ..errors import BadInput
from ..grading import Answer, Grade, grade, parse_answer

MAX_DISPLAY_NAME = 80


def clean_display_name(raw: str) -> str | None:
    """An optional name for the instructor's results: trimmed, single-line, bounded. Empty means anonymous."""
    name = " ".join(raw.split())
    if len(name) > MAX_DISPLAY_NAME:
        raise BadInput(f"A display name may be at most {MAX_DISPLAY_NAME} characters.")
    return name or None


def _attempt_ids() -> dict:
    return session.setdefault("attempts", {})


def attempt_id(bank: Bank) -> str | None:
    return session.get("attempts", {}).get(bank.id)


def _state(current: str) -> db.AttemptState:
    """The attempt and its answers, read once per request (a page asks for both several times);
    every write below forgets it."""
    memo = g.setdefault("attempt_states", {})
    state = memo.get(current)
    if state is None:
        state = memo[current] = db.attempt_state(current)
    return state


def _forget() -> None:
    g.pop("attempt_states", None)
    g.pop("valid_answers", None)


def attempt(bank: Bank):
    current = attempt_id(bank)
    return _state(current).row if current else None


def seed(bank: Bank) -> int:
    """The variant seed of this student's attempt: from the stored attempt, else kept in the session
    until the first answer starts the attempt (so the variant seen is the variant graded)."""
    row = attempt(bank)
    if row is not None:
        return row.seed
    seeds = session.setdefault("seeds", {})
    if bank.id not in seeds:
        seeds[bank.id] = secrets.randbelow(MAX_SEED)
        session.modified = True
    return seeds[bank.id]


def variant(bank: Bank, question: Question) -> Question:
    """The concrete question this student sees (parameterised questions get their own numbers)."""
    return instantiate(question, seed(bank))


def ensure_attempt(bank: Bank, display_name: str | None = None) -> str:
    """The session's attempt at `bank`, started in the database if there is none (or it was lost)."""
    current = attempt_id(bank)
    if current and attempt(bank) is not None:
        if display_name is not None:
            _forget()
            db.set_display_name(current, display_name or None)
        return current
    current = secrets.token_hex(16)
    chosen_seed = seed(bank)
    _forget()
    db.start_attempt(current, bank.id, chosen_seed, display_name or None)
    _attempt_ids()[bank.id] = current
    session.modified = True
    return current


def answers(bank: Bank) -> dict[str, Answer]:
    """The stored answers that still fit the bank as it is now (an edited bank drops stale ones)."""
    current = attempt_id(bank)
    if not current:
        return {}
    memo = g.setdefault("valid_answers", {})
    if (current, bank.id) in memo:
        return dict(memo[(current, bank.id)])
    stored = _state(current).responses
    valid: dict[str, Answer] = {}
    for question in bank.questions:
        if question.id in stored:
            response = stored[question.id]
            try:
                valid[question.id] = parse_answer(instantiate(question, response.seed), response.answer)
            except BadInput:
                continue
    memo[(current, bank.id)] = valid
    return dict(valid)


def record(bank: Bank, question: Question, answer: Answer) -> bool:
    """Store a first answer to the concrete `question` (from variant()); False if already answered."""
    ensure_attempt(bank)
    current, row = attempt_id(bank), attempt(bank)
    score = grade(question, answer).score
    _forget()
    return db.record_response(current, bank.id, question.id, row.seed, answer, score, len(bank.questions))


def reset(bank: Bank) -> None:
    """Forget the session's attempt; the next answer starts a new one (with new variants).
    Stored answers are kept."""
    _forget()
    _attempt_ids().pop(bank.id, None)
    session.get("seeds", {}).pop(bank.id, None)
    session.modified = True


def grades(bank: Bank) -> dict[str, Grade]:
    given = answers(bank)
    return {q.id: grade(variant(bank, q), given[q.id]) for q in bank.questions if q.id in given}
