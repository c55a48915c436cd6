"""A database outage (issue 15, item 8): every request that needs the database answers 503 with Retry-After and a
sentence that says what happened, never a 500, and a submission that stored nothing never says it was kept."""

from __future__ import annotations

import uuid

import pytest
from flask import jsonify
from sqlalchemy import func, select

from app import create_app, db
from conftest import SEED_BANK, answer_via_form, csrf_token
from pgserver import PostgresServer, _free_port
from test_instructor import MINI_BANK, PASSWORD, PASSWORD_HASH, sign_in

QUESTION = f"/quiz/{SEED_BANK}/head-dimension"


def assert_unavailable(response, *sentences: str) -> None:
    assert response.status_code == 503, response.status_code
    # Seconds: ours, or later where a rate limit's window (flask-limiter) ends later.
    assert int(response.headers["Retry-After"]) >= 1
    body = response.get_data(as_text=True)
    assert "The database is not answering" in body and "Traceback" not in body
    assert "progress is kept" not in body and "Internal error" not in body
    for sentence in sentences:
        assert sentence in body, body


def with_attempt(client, attempt_id: str = "0" * 32):
    """A returning student: the session names an attempt, so every quiz page reads it from the database."""
    with client.session_transaction() as session:
        session["attempts"] = {SEED_BANK: attempt_id}
    return client


@pytest.fixture
def unreachable_app(quiz_dir, tmp_path):
    # Nothing listens on this port of 127.0.0.1: every connection is refused at once.
    url = f"postgresql+psycopg://postgres@127.0.0.1:{_free_port()}/gone?connect_timeout=2"
    app = create_app({"TESTING": True, "SECRET_KEY": "outage-secret", "QUIZ_DIR": str(quiz_dir),
                      "DATABASE_URL": url, "DATABASE_AUTO_MIGRATE": False,
                      "INSTRUCTOR_PASSWORD_HASH": PASSWORD_HASH})

    @app.get("/api/outage-probe")
    def probe():  # an API route that reads the database, as graded banks' routes do
        return jsonify({"state": db.attempt_state("0" * 32).row is None})
    return app


def test_pages_that_need_the_database_answer_503_while_it_is_down(unreachable_app):
    student = with_attempt(unreachable_app.test_client())
    for path in ("/", f"/quiz/{SEED_BANK}/", QUESTION, f"{QUESTION}/answer", f"/quiz/{SEED_BANK}/summary"):
        assert_unavailable(student.get(path), "this page cannot be shown right now. Try again in a moment.")


def test_a_submission_while_the_database_is_down_says_nothing_was_stored(unreachable_app):
    # A new student (the answer would start an attempt) and a returning one (the attempt is read first).
    for client in (unreachable_app.test_client(), with_attempt(unreachable_app.test_client())):
        token = csrf_token(client.get("/instructor/login").get_data(as_text=True))  # a form that needs no database
        assert_unavailable(client.post(QUESTION, data={"csrf_token": token, "answer": "32"}),
                           "could not be saved: nothing was stored", "submit again in a moment")


def test_the_json_api_answers_503_in_json(unreachable_app):
    response = unreachable_app.test_client().get("/api/outage-probe")
    assert response.status_code == 503 and response.headers["Retry-After"] == str(db.RETRY_AFTER_SECONDS)
    error = response.get_json()["error"]
    assert error["status"] == 503 and error["message"].startswith("The database is not answering")


def test_signing_in_while_the_database_is_down_is_a_503(unreachable_app):
    response = sign_in(unreachable_app.test_client(), PASSWORD)
    assert_unavailable(response, "could not be saved")


@pytest.fixture
def own_postgres():
    """A PostgreSQL server of this test's own, to stop and start again without disturbing other tests."""
    server = PostgresServer().start()
    yield server
    server.stop()


def pg_ctl(server: PostgresServer, *args: str) -> None:
    server._run(str(server.bin / "pg_ctl"), "-D", str(server.data), "-w", "-t", "60", *args)


@pytest.mark.slow
def test_postgresql_stopped_and_started_again(own_postgres, quiz_dir, tmp_path):
    url = own_postgres.create_database("outage_" + uuid.uuid4().hex[:8])
    folder = tmp_path / "quizzes"
    folder.mkdir()
    (folder / "mini.yaml").write_text(MINI_BANK)
    app = create_app({"TESTING": True, "SECRET_KEY": "outage-secret", "QUIZ_DIR": str(folder), "DATABASE_URL": url,
                      "INSTRUCTOR_PASSWORD_HASH": PASSWORD_HASH})
    student, instructor = app.test_client(), app.test_client()
    assert answer_via_form(student, "mini", "tf", "true").status_code == 303
    sign_in(instructor, PASSWORD)
    token = csrf_token(student.get("/quiz/mini/sc").get_data(as_text=True))
    logout_token = csrf_token(instructor.get("/instructor/").get_data(as_text=True))
    pg_ctl(own_postgres, "-m", "fast", "stop")
    assert_unavailable(student.get("/quiz/mini/sc"), "cannot be shown right now")
    assert_unavailable(student.post("/quiz/mini/sc", data={"csrf_token": token, "answer": "b"}), "nothing was stored")
    assert_unavailable(instructor.get("/instructor/"))
    # Signing out stored nothing either, so the cookie stays signed in and the button can be pressed again.
    assert_unavailable(instructor.post("/instructor/logout", data={"csrf_token": logout_token}), "nothing was stored")
    pg_ctl(own_postgres, "-l", str(own_postgres.root / "log"), "-o",
           f"-p {own_postgres.port} -k {own_postgres.root} -c listen_addresses=127.0.0.1 -c fsync=off", "start")
    assert student.post("/quiz/mini/sc", data={"csrf_token": token, "answer": "b"}).status_code == 303
    assert instructor.get("/instructor/").status_code == 200  # the instructor's session outlived the outage
    with app.extensions["db_engine"].connect() as connection:
        assert connection.execute(select(func.count()).select_from(db.responses)).scalar() == 2
    app.extensions["db_engine"].dispose()
