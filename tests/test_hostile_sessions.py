"""Instructor sessions end on the server (issue 15, item 6): logging out revokes every copy of the cookie, on
every server that shares the database, and a session left idle past INSTRUCTOR_IDLE_TIMEOUT (8 hours) ends."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import update

from app import create_app, db
from conftest import csrf_token
from test_instructor import BANK, MINI_BANK, PASSWORD, PASSWORD_HASH, sign_in

CSV = f"/instructor/banks/{BANK}/responses.csv"


@pytest.fixture
def settings(tmp_path):
    folder = tmp_path / "quizzes"
    folder.mkdir()
    (folder / "mini.yaml").write_text(MINI_BANK)
    # Two app servers: the same database and secret key, as behind a load balancer.
    return {"TESTING": True, "SECRET_KEY": "sessions-secret", "QUIZ_DIR": str(folder),
            "DATABASE_URL": f"sqlite:///{tmp_path / 'shared.sqlite3'}", "INSTRUCTOR_PASSWORD_HASH": PASSWORD_HASH}


def copy_of(client, other):
    """`other` with a copy of `client`'s session cookie, as an attacker who read it would have."""
    other.set_cookie("session", client.get_cookie("session").value)
    return other


def csv_status(client) -> int:
    response = client.get(CSV)
    response.get_data()  # the CSV streams: read it whole, inside this request
    return response.status_code


def log_out(client):
    token = csrf_token(client.get("/instructor/").get_data(as_text=True))
    assert client.post("/instructor/logout", data={"csrf_token": token}).status_code == 303


def test_a_cookie_copied_before_logout_stops_working_on_every_server(settings):
    first, second = create_app(settings), create_app(settings)
    instructor = first.test_client()
    assert sign_in(instructor, PASSWORD).status_code == 303
    on_first, on_second = copy_of(instructor, first.test_client()), copy_of(instructor, second.test_client())
    assert csv_status(on_first) == 200 and csv_status(on_second) == 200
    log_out(instructor)
    for copy in (on_first, on_second):
        response = copy.get(CSV)
        assert response.status_code == 401 and "instructors only" in response.get_data(as_text=True)
        assert copy.get("/instructor/").status_code == 303  # sent to the sign-in page
    assert sign_in(instructor, PASSWORD).status_code == 303 and csv_status(instructor) == 200


def age_sessions(app, by: timedelta) -> None:
    with app.extensions["db_engine"].begin() as connection:
        connection.execute(update(db.instructor_sessions).values(last_seen_at=db.now() - by))


def test_an_instructor_session_ends_after_eight_idle_hours_and_each_request_restarts_the_clock(settings):
    app = create_app(settings)
    instructor = app.test_client()
    sign_in(instructor, PASSWORD)
    age_sessions(app, timedelta(hours=7, minutes=59))
    assert csv_status(instructor) == 200  # still in time, and the clock starts again
    age_sessions(app, timedelta(hours=7, minutes=59))
    assert csv_status(instructor) == 200
    age_sessions(app, timedelta(hours=8, minutes=1))
    assert csv_status(instructor) == 401
    assert instructor.get("/instructor/").status_code == 303


def test_the_idle_timeout_is_a_setting(settings):
    app = create_app({**settings, "INSTRUCTOR_IDLE_TIMEOUT": 60})
    instructor = app.test_client()
    sign_in(instructor, PASSWORD)
    age_sessions(app, timedelta(seconds=50))
    assert csv_status(instructor) == 200
    age_sessions(app, timedelta(seconds=70))
    assert csv_status(instructor) == 401


@pytest.mark.parametrize("value", [0, -5, "8h", True, None])
def test_a_bad_idle_timeout_stops_the_start_with_a_sentence(settings, value):
    with pytest.raises(RuntimeError, match="FLASK_INSTRUCTOR_IDLE_TIMEOUT must be a positive number of seconds"):
        create_app({**settings, "INSTRUCTOR_IDLE_TIMEOUT": value})
