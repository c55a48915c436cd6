"""Scale-out: two app server processes (gunicorn) share one PostgreSQL database. Students' answers
go to both, the first answer stands across servers, and every answer is counted."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from sqlalchemy import create_engine, func, select

from app import db
from httpclient import CSRF, Browser
from pgserver import _free_port, wait_for_http
from test_seed import EXPECTED

pytestmark = pytest.mark.slow  # two gunicorn servers and PostgreSQL

ROOT = Path(__file__).resolve().parent.parent
SEED_BANK = "attention-transformers"


@pytest.fixture
def two_servers(postgres, tmp_path):
    url = postgres.create_database("scale_" + uuid.uuid4().hex[:8])
    env = {**os.environ, "FLASK_SECRET_KEY": "scale-out-shared-secret-" + "x" * 16, "FLASK_DATABASE_URL": url,
           "FLASK_DATABASE_AUTO_MIGRATE": "false", "OPENBLAS_NUM_THREADS": "1", "MPLCONFIGDIR": str(tmp_path / "mpl")}
    bin_dir = Path(sys.executable).parent
    subprocess.run([str(bin_dir / "flask"), "--app", "app", "init-db"], env=env, check=True, capture_output=True, cwd=tmp_path)
    servers, urls, logs = [], [], []
    for index in range(2):
        port = _free_port()
        log = open(tmp_path / f"server{index}.log", "w")
        logs.append(log)
        servers.append(subprocess.Popen(
            [str(bin_dir / "gunicorn"), "--workers", "1", "--threads", "4", "--bind", f"127.0.0.1:{port}",
             "app:create_app()"], env=env, stdout=log, stderr=subprocess.STDOUT, cwd=tmp_path))
        urls.append(f"http://127.0.0.1:{port}")
    try:
        for base in urls:
            wait_for_http(base + "/healthz", timeout=60)
        yield urls, url
    finally:
        for server in servers:
            server.terminate()
        for server in servers:
            server.wait(10)
        for log in logs:
            log.close()


def _value(key):
    return ("true" if key else "false") if isinstance(key, bool) else key


def test_answers_through_two_servers_all_land_in_one_database(two_servers):
    (first, second), url = two_servers
    students = 4
    questions = list(EXPECTED)
    for student in range(students):
        browser = Browser(first)
        for index, question_id in enumerate(questions):
            # Alternate servers question by question: the signed session works on both.
            browser.base_url = (first, second)[(index + student) % 2]
            assert browser.answer(SEED_BANK, question_id, _value(EXPECTED[question_id][0])) == 303
        # A resubmission with a wrong answer, sent to the *other* server, keeps the first answer.
        browser.base_url = second
        _, _, page = browser.get(f"/quiz/{SEED_BANK}/summary")
        token = CSRF.search(page).group(1)
        status, _ = browser.post_form(f"/quiz/{SEED_BANK}/head-dimension", {"csrf_token": token, "answer": "64"})
        assert status == 303
        browser.base_url = first
        _, _, page = browser.get(f"/quiz/{SEED_BANK}/summary")
        assert "You scored <strong>9</strong> out of 9" in page
    engine = create_engine(url)
    with engine.connect() as connection:
        assert connection.execute(select(func.count()).select_from(db.responses)).scalar() == students * len(questions)
        finished = connection.execute(select(func.count()).select_from(db.attempts)
                                      .where(db.attempts.c.total_score == 9.0)).scalar()
        assert finished == students
    engine.dispose()
