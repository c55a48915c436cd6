"""No answer lost: many students submit at once through several gunicorn workers sharing one SQLite
database (WAL). Afterwards the stored count equals the submissions, and every stored score matches
the grade of its answer."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from sqlalchemy import create_engine, select

from app import db
from app.bank.loader import load_bank_file
from app.grading import grade, parse_answer
from app.paths import resource_dir
from httpclient import Browser
from pgserver import _free_port, wait_for_http
from test_seed import EXPECTED

pytestmark = pytest.mark.slow  # gunicorn with several workers

SEED_BANK = "attention-transformers"
STUDENTS = 24


def _answers_for(student: int) -> dict[str, object]:
    """Each student answers every question; some wrongly, so scores differ and must match answers."""
    answers = {}
    for index, (question_id, (key, _)) in enumerate(EXPECTED.items()):
        wrong = (student + index) % 3 == 0
        if isinstance(key, bool):
            answers[question_id] = "false" if (key ^ wrong) is False else "true"
        elif isinstance(key, list):
            answers[question_id] = key[:1] if wrong else key
        else:
            answers[question_id] = key
    answers["head-dimension"] = "64" if student % 2 else "32"
    return answers


def test_concurrent_submissions_through_several_workers_lose_nothing(tmp_path):
    database = tmp_path / "load.sqlite3"
    env = {**os.environ, "FLASK_SECRET_KEY": "load-test-secret-" + "y" * 24, "FLASK_DATABASE_URL": f"sqlite:///{database}",
           "FLASK_RATE_LIMIT_SUBMIT": "100000 per minute", "OPENBLAS_NUM_THREADS": "1",
           "MPLCONFIGDIR": str(tmp_path / "mpl")}
    bin_dir = Path(sys.executable).parent
    subprocess.run([str(bin_dir / "flask"), "--app", "app", "init-db"], env=env, check=True, capture_output=True, cwd=tmp_path)
    port = _free_port()
    with open(tmp_path / "gunicorn.log", "w") as log:
        server = subprocess.Popen([str(bin_dir / "gunicorn"), "--workers", "3", "--threads", "4",
                                   "--bind", f"127.0.0.1:{port}", "app:create_app()"],
                                  env=env, stdout=log, stderr=subprocess.STDOUT, cwd=tmp_path)
        try:
            base = f"http://127.0.0.1:{port}"
            wait_for_http(base + "/healthz", timeout=60)

            def student(index: int) -> list[int]:
                browser = Browser(base)
                return [browser.answer(SEED_BANK, qid, value) for qid, value in _answers_for(index).items()]

            with ThreadPoolExecutor(max_workers=16) as pool:
                statuses = [code for codes in pool.map(student, range(STUDENTS)) for code in codes]
        finally:
            server.terminate()
            server.wait(15)
    assert statuses == [303] * (STUDENTS * len(EXPECTED))

    bank = load_bank_file(resource_dir("quizzes") / "attention-transformers.yaml").bank
    engine = create_engine(f"sqlite:///{database}")
    with engine.connect() as connection:
        rows = connection.execute(select(db.responses)).all()
        attempts = connection.execute(select(db.attempts)).all()
    engine.dispose()
    assert len(rows) == STUDENTS * len(EXPECTED)
    for row in rows:
        question = bank.question(row.question_id)
        expected = grade(question, parse_answer(question, json.loads(row.answer))).score
        assert row.score == expected, (row.question_id, row.answer)
    assert len(attempts) == STUDENTS and all(a.finished_at is not None for a in attempts)
    for attempt in attempts:
        assert attempt.total_score == pytest.approx(sum(r.score for r in rows if r.attempt_id == attempt.id))
