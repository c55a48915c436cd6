"""Two last answers submitted at the same moment (two tabs, two servers) still finish the attempt (issue 15, item 3).

The race is real: two threads, each with its own database connection, wait at a barrier and then store the
attempt's last two answers at once, 60 times, on SQLite and on a private PostgreSQL server.
"""

from __future__ import annotations

import threading
import uuid

from sqlalchemy import func, select

from app import create_app, db

ATTEMPTS = 60
QUESTIONS = ("q1", "q2", "q3")


def record_answer(attempt_id: str, question_id: str):
    """A question's first and final answer, right; None if the question already had one."""
    return db.record_try(attempt_id, "race", question_id, 1, True, 1.0, final=True, final_score=1.0, seed=0,
                         question_ids=list(QUESTIONS))


def race_last_answers(app) -> int:
    """Start ATTEMPTS attempts, answer q1, then race q2 and q3; the number of attempts left unfinished."""
    ids = [uuid.uuid4().hex for _ in range(ATTEMPTS)]
    with app.app_context():
        for attempt_id in ids:
            db.start_attempt(attempt_id, "race", seed=0)
            record_answer(attempt_id, "q1")
    barrier = threading.Barrier(2, timeout=30)
    errors: list[BaseException] = []

    def tab(question_id: str) -> None:
        try:
            with app.app_context():
                for attempt_id in ids:
                    barrier.wait()
                    assert record_answer(attempt_id, question_id)
        except BaseException as error:  # noqa: BLE001 - reported by the test below
            errors.append(error)
            barrier.abort()

    tabs = [threading.Thread(target=tab, args=(q,)) for q in QUESTIONS[1:]]
    for thread in tabs:
        thread.start()
    for thread in tabs:
        thread.join(120)
    assert not errors, errors
    engine = app.extensions["db_engine"]
    with engine.connect() as connection:
        answered = connection.execute(select(func.count()).select_from(db.responses)).scalar()
        rows = connection.execute(select(db.attempts.c.finished_at, db.attempts.c.total_score,
                                         db.attempts.c.max_score)).all()
    engine.dispose()
    assert answered == ATTEMPTS * len(QUESTIONS)  # every answer was stored, whoever won the race
    finished = [(total, top) for at, total, top in rows if at is not None]
    assert set(finished) <= {(3.0, 3)}  # a finished attempt counts all three answers
    return len(rows) - len(finished)


def build(url: str, tmp_path):
    return create_app({"TESTING": True, "SECRET_KEY": "race-secret", "QUIZ_DIR": str(tmp_path),
                       "DATABASE_URL": url})


def test_two_last_answers_at_once_finish_the_attempt_on_sqlite(tmp_path):
    assert race_last_answers(build(f"sqlite:///{tmp_path / 'race.sqlite3'}", tmp_path)) == 0


def test_two_last_answers_at_once_finish_the_attempt_on_postgresql(postgres, tmp_path):
    url = postgres.create_database("race_" + uuid.uuid4().hex[:8])
    assert race_last_answers(build(url, tmp_path)) == 0
