"""Persistence: every answer is stored, the first answer stands, concurrent writes lose nothing,
a failed write is an error the student sees, and the same code runs on SQLite and PostgreSQL."""

from __future__ import annotations

import json
import threading
import uuid

from sqlalchemy import func, select

from app import create_app, db
from conftest import SEED_BANK, answer_via_form, csrf_token, retake_fields
from test_seed import EXPECTED


def _rows(app):
    with app.extensions["db_engine"].connect() as connection:
        return connection.execute(select(db.responses).order_by(db.responses.c.id)).all()


def _attempts(app):
    with app.extensions["db_engine"].connect() as connection:
        return connection.execute(select(db.attempts)).all()


def test_each_answer_is_stored_with_attempt_seed_answer_score_and_time(app, client):
    answer_via_form(client, SEED_BANK, "head-dimension", "64")
    answer_via_form(client, SEED_BANK, "transformer-advantages", ["long-range", "hardware"])
    rows = _rows(app)
    assert [(r.question_id, json.loads(r.answer), r.score) for r in rows] == [
        ("head-dimension", "64", 0.0), ("transformer-advantages", ["long-range", "hardware"], 1.0)]
    attempt = _attempts(app)[0]
    assert {r.attempt_id for r in rows} == {attempt.id}
    assert all(r.bank_id == SEED_BANK and r.seed == attempt.seed and r.answered_at is not None for r in rows)
    assert attempt.finished_at is None


def test_a_finished_attempt_stores_its_total(app, client):
    for question_id, (key, _) in EXPECTED.items():
        value = ("true" if key else "false") if isinstance(key, bool) else key
        answer_via_form(client, SEED_BANK, question_id, value)
    attempt = _attempts(app)[0]
    assert attempt.finished_at is not None
    assert attempt.total_score == 9.0 and attempt.max_score == 9


def test_retake_starts_a_new_attempt_and_keeps_the_old_answers(app, client):
    answer_via_form(client, SEED_BANK, "head-dimension", "64")
    summary = client.get(f"/quiz/{SEED_BANK}/summary").get_data(as_text=True)
    client.post(f"/quiz/{SEED_BANK}/retake", data=retake_fields(summary))
    answer_via_form(client, SEED_BANK, "head-dimension", "32")
    rows = _rows(app)
    assert len(rows) == 2 and len({r.attempt_id for r in rows}) == 2


def test_double_submit_stores_one_row(app, client):
    page = client.get(f"/quiz/{SEED_BANK}/head-dimension").get_data(as_text=True)
    token = csrf_token(page)
    for answer in ("32", "64", "32"):
        assert client.post(f"/quiz/{SEED_BANK}/head-dimension", data={"csrf_token": token, "answer": answer}).status_code == 303
    assert [json.loads(r.answer) for r in _rows(app)] == ["32"]


def test_concurrent_students_lose_no_answer_on_sqlite(app):
    students = 12
    questions = list(EXPECTED)[:4]
    errors: list[BaseException] = []

    def student(index: int) -> None:
        try:
            client = app.test_client()
            for question_id in questions:
                key = EXPECTED[question_id][0]
                value = ("true" if key else "false") if isinstance(key, bool) else key
                response = answer_via_form(client, SEED_BANK, question_id, value)
                assert response.status_code == 303, response.status_code
        except BaseException as error:  # reported below, with the thread's failure
            errors.append(error)

    threads = [threading.Thread(target=student, args=(i,)) for i in range(students)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    rows = _rows(app)
    assert len(rows) == students * len(questions)
    assert all(r.score == 1.0 for r in rows)
    assert len({r.attempt_id for r in rows}) == students


def test_sqlite_runs_in_wal_mode_with_a_busy_timeout(app):
    with app.extensions["db_engine"].connect() as connection:
        assert connection.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert connection.exec_driver_sql("PRAGMA busy_timeout").scalar() == 30000


def test_a_failed_write_is_an_error_the_student_sees(app, client, monkeypatch):
    from sqlalchemy.exc import OperationalError

    def broken(*args, **kwargs):
        raise OperationalError("INSERT", {}, Exception("disk I/O error"))

    page = client.get(f"/quiz/{SEED_BANK}/head-dimension").get_data(as_text=True)
    monkeypatch.setattr(db, "record_try", lambda *a, **k: db._write(lambda c: broken()))
    response = client.post(f"/quiz/{SEED_BANK}/head-dimension", data={"csrf_token": csrf_token(page), "answer": "32"})
    assert response.status_code == 503
    html = response.get_data(as_text=True)
    assert "could not be saved" in html and "submit again" in html
    assert "Traceback" not in html
    monkeypatch.undo()
    # Once the database is back, the same submission goes through.
    retry = client.post(f"/quiz/{SEED_BANK}/head-dimension", data={"csrf_token": csrf_token(page), "answer": "32"})
    assert retry.status_code == 303 and len(_rows(app)) == 1


def test_init_db_is_idempotent(runner, app):
    for _ in range(2):
        result = runner.invoke(args=["init-db"])
        assert result.exit_code == 0, result.output
        assert f"schema version {db.SCHEMA_VERSION}" in result.output


def test_healthz_reports_the_database(client, app, monkeypatch):
    assert client.get("/healthz").get_json()["database"] is True
    monkeypatch.setattr(db, "healthy", lambda: False)
    response = client.get("/healthz")
    assert response.status_code == 503 and response.get_json()["status"] == "unavailable"


def test_same_flow_on_postgresql(postgres, quiz_dir):
    url = postgres.create_database("flow_" + uuid.uuid4().hex[:8])
    app = create_app({"TESTING": True, "SECRET_KEY": "pg-secret", "QUIZ_DIR": str(quiz_dir), "DATABASE_URL": url})
    client = app.test_client()
    answer_via_form(client, SEED_BANK, "head-dimension", "32")
    token = csrf_token(client.get(f"/quiz/{SEED_BANK}/summary").get_data(as_text=True))
    client.post(f"/quiz/{SEED_BANK}/head-dimension", data={"csrf_token": token, "answer": "64"})  # ignored
    page = client.get(f"/quiz/{SEED_BANK}/head-dimension/answer").get_data(as_text=True)
    assert '<h1 id="verdict">Correct</h1>' in page
    with app.extensions["db_engine"].connect() as connection:
        assert connection.execute(select(func.count()).select_from(db.responses)).scalar() == 1
    assert db.migrate(app.extensions["db_engine"]) == db.SCHEMA_VERSION  # idempotent on PostgreSQL too
    # PostgreSQL stores no NUL in text: a display name's control characters read as spaces (the JSON API's is not
    # a form field, which the app refuses whole when it holds a NUL), and an LTI login's NUL is a 400, not a 500.
    started = client.post(f"/api/banks/{SEED_BANK}/attempts", json={"display_name": "Ann\u0000Lee\u0007"})
    assert started.status_code == 201, started.get_data(as_text=True)
    with app.extensions["db_engine"].connect() as connection:
        assert "Ann Lee" in connection.execute(select(db.attempts.c.display_name)).scalars().all()
    login = client.post("/lti/login", data={"iss": "a\x00b", "client_id": "c", "login_hint": "x",
                                            "target_link_uri": "http://localhost/lti/launch"})
    assert login.status_code == 400 and "NUL character" in login.get_data(as_text=True)
    app.extensions["db_engine"].dispose()


def test_an_optional_display_name_is_stored_with_the_attempt(app, client):
    page = client.get(f"/quiz/{SEED_BANK}/").get_data(as_text=True)
    assert 'id="display-name"' in page
    response = client.post(f"/quiz/{SEED_BANK}/name", data={"csrf_token": csrf_token(page), "display_name": "  Ada   L. "})
    assert response.status_code == 303
    assert _attempts(app) == []  # saving a name starts no attempt (nor its time limit): the first question does
    start = client.get(f"/quiz/{SEED_BANK}/").get_data(as_text=True)
    assert 'value="Ada L."' in start and "Name saved (Ada L.): your instructor sees it beside your results." in start
    assert client.get(f"/quiz/{SEED_BANK}/head-dimension").status_code == 200
    assert _attempts(app)[0].display_name == "Ada L."
    too_long = client.post(f"/quiz/{SEED_BANK}/name", data={"csrf_token": csrf_token(page), "display_name": "x" * 81})
    assert too_long.status_code == 400 and "at most 80 characters" in too_long.get_data(as_text=True)
    client.post(f"/quiz/{SEED_BANK}/name", data={"csrf_token": csrf_token(page), "display_name": ""})
    assert _attempts(app)[0].display_name is None  # back to anonymous
    client.post(f"/quiz/{SEED_BANK}/name", data={"csrf_token": csrf_token(page), "display_name": "Ada\tL.\x1b[31m"})
    assert _attempts(app)[0].display_name == "Ada L. [31m"  # control characters read as spaces
    summary = client.get(f"/quiz/{SEED_BANK}/summary").get_data(as_text=True)
    retake = client.post(f"/quiz/{SEED_BANK}/retake", data=retake_fields(summary))
    assert retake.status_code == 303 and client.get(retake.headers["Location"]).status_code == 200
    assert [a.display_name for a in _attempts(app)] == ["Ada L. [31m"] * 2  # a retake keeps the name


def _migrate_in_new_process(url: str) -> int:
    from app.db import make_engine, migrate

    return migrate(make_engine(url))


def test_workers_migrating_a_new_sqlite_database_at_once_all_start(tmp_path):
    """gunicorn's workers each run the auto-migration on start-up; on a new database they race
    between "does the table exist" and CREATE, table by table. Every one of them must come up.
    (One round of six racers lost about one time in twenty five before the retry loop.)"""
    import multiprocessing

    from app.db import SCHEMA_VERSION, make_engine, schema_info

    racers = 6
    with multiprocessing.get_context("spawn").Pool(racers) as pool:
        pool.map(abs, range(racers), chunksize=1)  # start every process before the races
        for round_ in range(12):
            url = f"sqlite:///{tmp_path / f'new-{round_}.sqlite3'}"
            versions = pool.map(_migrate_in_new_process, [url] * racers, chunksize=1)
            assert versions == [SCHEMA_VERSION] * racers
            with make_engine(url).connect() as connection:
                assert connection.execute(select(schema_info.c.version)).all() == [(SCHEMA_VERSION,)]
