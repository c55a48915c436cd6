"""Issue 15, item 4: the answer key is no longer one request away. A graded bank grades only within an attempt, once
per question, records every answer and shows the key only as its feedback mode allows; attempts are rate-limited
(a classroom behind one address still works); the session cookie holds no variant seed."""

from __future__ import annotations

import json
import re

import pytest
from sqlalchemy import func, select

from app import db
from test_feedback_modes import BANK, MODES_BANK, TRY_AGAIN, make_app, stored_responses, stored_tries

KEY_WORDS = ('"correct_answer"', '"correct"', "explanation", "Right: 128 / 4 = 32.")


def start(client, bank: str = BANK, **body):
    response = client.post(f"/api/banks/{bank}/attempts", **({"json": body} if body else {}))
    assert response.status_code == 201, response.get_json()
    return response


def answer(client, attempt: str, question: str, value, **extra):
    return client.post(f"/api/banks/{BANK}/attempts/{attempt}/questions/{question}/answer",
                       json={"answer": value, **extra})


def count_attempts(app) -> int:
    with app.extensions["db_engine"].connect() as connection:
        return connection.execute(select(func.count()).select_from(db.attempts)).scalar()


def test_a_graded_bank_refuses_the_open_grading_endpoint(tmp_path):
    app = make_app(tmp_path, "mode: graded")
    client = app.test_client()
    response = client.post(f"/api/banks/{BANK}/questions/heads/grade", json={"answer": "a"})
    assert response.status_code == 403
    message = response.get_json()["error"]["message"]
    assert "is graded" in message and f"POST /api/banks/{BANK}/attempts" in message
    assert not any(word in response.get_data(as_text=True) for word in KEY_WORDS)
    listed = client.get("/api/banks").get_json()["banks"][0]
    assert listed["mode"] == "graded"


def test_a_practice_bank_keeps_its_open_grading_endpoint(tmp_path):
    app = make_app(tmp_path)
    body = app.test_client().post(f"/api/banks/{BANK}/questions/heads/grade", json={"answer": "a"}).get_json()
    assert body["correct"] is True and body["correct_answer"] == "a"
    assert stored_tries(app) == []  # open practice grading records nothing


def test_an_attempt_gives_a_token_and_the_questions_without_the_key_or_the_seed(tmp_path):
    app = make_app(tmp_path, "mode: graded")
    client = app.test_client()
    response = start(client, display_name="Ada")
    body = response.get_json()
    assert re.fullmatch(r"[0-9a-f]{32}", body["attempt"])
    assert response.headers["Location"].endswith(f"/api/banks/{BANK}/attempts/{body['attempt']}")
    assert (body["mode"], body["feedback"], body["finished"], body["score"], body["max_score"]) == (
        "graded", "immediate", False, 0, 3)
    assert [q["id"] for q in body["questions"]] == ["heads", "projections", "scale"]
    assert all("seed" not in q and q["result"] is None and q["tries_used"] == 0 for q in body["questions"])
    assert not any(word in json.dumps(body) for word in KEY_WORDS)
    with app.extensions["db_engine"].connect() as connection:
        assert connection.execute(select(db.attempts.c.display_name)).scalar() == "Ada"


def test_graded_immediate_grades_once_per_question_records_it_and_then_shows_the_key(tmp_path):
    app = make_app(tmp_path, "mode: graded")
    client = app.test_client()
    token = start(client).get_json()["attempt"]
    body = answer(client, token, "heads", "b").get_json()
    assert (body["final"], body["recorded"], body["verdict"], body["tries_left"]) == (True, True, "incorrect", 0)
    assert body["grade"]["correct_answer"] == "a" and body["grade"]["score"] == 0.0  # immediate: the key, now
    again = answer(client, token, "heads", "a")
    assert again.status_code == 400
    message = again.get_json()["error"]["message"]
    assert message == "This question is finished: it was already answered. Nothing was stored."
    assert [json.loads(r.answer) for r in stored_tries(app)] == ["b"]
    assert [(r.question_id, r.score) for r in stored_responses(app)] == [("heads", 0.0)]
    answer(client, token, "projections", ["q", "k"])
    last = answer(client, token, "scale", 8).get_json()
    assert last["grade"]["correct"] is True
    state = client.get(f"/api/banks/{BANK}/attempts/{token}").get_json()
    assert state["finished"] is True and state["score"] == 2.0
    assert [q["result"]["score"] for q in state["questions"]] == [0.0, 1.0, 1.0]


def test_graded_deferred_says_nothing_until_the_last_answer(tmp_path):
    app = make_app(tmp_path, "mode: graded\nfeedback: deferred")
    client = app.test_client()
    token = start(client).get_json()["attempt"]
    for question, value in (("heads", "a"), ("projections", ["q"])):
        response = answer(client, token, question, value)
        body = response.get_json()
        assert (body["recorded"], body["final"], body["verdict"], body["grade"], body["hint"]) == (
            True, True, None, None, None)
        assert not any(word in response.get_data(as_text=True) for word in KEY_WORDS)
    again = answer(client, token, "heads", "a")  # a second answer: refused, without saying the first was right
    assert again.status_code == 400
    assert again.get_json()["error"]["message"] == ("This question is finished: it was already answered. "
                                                    "Nothing was stored.")
    state = client.get(f"/api/banks/{BANK}/attempts/{token}")
    assert state.get_json()["score"] is None and not any(w in state.get_data(as_text=True) for w in KEY_WORDS)
    assert [q["closed"] for q in state.get_json()["questions"]] == [True, True, False]
    last = answer(client, token, "scale", 8).get_json()
    assert last["verdict"] == "correct" and last["grade"]["correct_answer"] == 8
    state = client.get(f"/api/banks/{BANK}/attempts/{token}").get_json()
    assert state["finished"] is True and state["score"] == 2.5
    assert state["questions"][0]["result"]["correct_answer"] == "a"


def test_graded_try_again_gives_hints_not_the_key_and_refuses_a_try_beyond_the_limit(tmp_path):
    app = make_app(tmp_path, "mode: graded\n" + TRY_AGAIN)
    client = app.test_client()
    token = start(client).get_json()["attempt"]
    first = answer(client, token, "heads", "b")
    body = first.get_json()
    progress = (body["try"], body["tries"], body["tries_left"], body["final"], body["verdict"])
    assert progress == (1, 3, 2, False, "incorrect")
    assert body["grade"] is None
    assert body["hint"]["feedback"] == [{"option": "b", "feedback_html": "Four heads of 64 make 256, not 128."}]
    assert not any(word in first.get_data(as_text=True) for word in KEY_WORDS)
    numeric = answer(client, token, "scale", 64).get_json()
    assert numeric["hint"]["misconception"]["id"] == "no-sqrt"
    assert "divided by its square root" in numeric["hint"]["misconception"]["feedback_html"]
    beyond = answer(client, token, "heads", "a", **{"try": 4})
    assert beyond.status_code == 400
    assert "try must be a whole number from 1 to 3" in beyond.get_json()["error"]["message"]
    replay = answer(client, token, "heads", "c", **{"try": 1})
    assert replay.status_code == 400
    assert "Try 1 at this question was already stored" in replay.get_json()["error"]["message"]
    right = answer(client, token, "heads", "a", **{"try": 2}).get_json()
    assert right["final"] is True and right["grade"]["score"] == 0.5 and right["grade"]["correct_answer"] == "a"
    closed = answer(client, token, "heads", "a")
    assert closed.status_code == 400 and "it was answered right" in closed.get_json()["error"]["message"]
    assert [r.try_number for r in stored_tries(app, "heads")] == [1, 2]


@pytest.mark.parametrize("make_url, status", [
    (lambda token: f"/api/banks/{BANK}/attempts/{'0' * 32}/questions/heads/answer", 404),  # nobody's attempt
    (lambda token: f"/api/banks/{BANK}/attempts/not-a-token/questions/heads/answer", 404),
    (lambda token: f"/api/banks/{BANK}/attempts/{token}/questions/no-such/answer", 404),
    (lambda token: f"/api/banks/other/attempts/{token}/questions/heads/answer", 404),
])
def test_a_tampered_attempt_is_a_clear_404(tmp_path, make_url, status):
    app = make_app(tmp_path, "mode: graded")
    client = app.test_client()
    token = start(client).get_json()["attempt"]
    response = client.post(make_url(token), json={"answer": "a"})
    assert response.status_code == status
    assert response.get_json()["error"]["message"].endswith(".")
    assert stored_tries(app) == []


def test_another_banks_attempt_and_a_question_outside_the_subset_are_refused(tmp_path):
    app = make_app(tmp_path, "mode: graded")
    second = MODES_BANK.format(header="").replace("id: modes", "id: second", 1)
    (tmp_path / "quizzes" / "second.yaml").write_text(second)
    app = make_app(tmp_path, "mode: graded")
    client = app.test_client()
    theirs = start(client, "second").get_json()["attempt"]
    response = client.post(f"/api/banks/{BANK}/attempts/{theirs}/questions/heads/answer", json={"answer": "a"})
    assert response.status_code == 404 and "There is no attempt" in response.get_json()["error"]["message"]
    # A missed-only attempt from the pages, answered through the API outside its subset.
    with app.app_context():
        db.start_attempt("b" * 32, BANK, seed=0, question_ids=["scale"])
    outside = answer(client, "b" * 32, "heads", "a")
    assert outside.status_code == 400 and "is not part of this attempt, which has only 'scale'" in (
        outside.get_json()["error"]["message"])
    assert stored_tries(app) == []


# --- attempt creation is rate-limited, per address and per session ------------------------------------------


def test_attempt_creation_is_limited_per_address_whatever_the_cookies(tmp_path):
    app = make_app(tmp_path, RATE_LIMIT_ATTEMPTS_PER_ADDRESS="3 per minute")
    statuses = []
    for index in range(5):
        client = app.test_client()  # a new browser each time, half of them with a junk cookie
        if index % 2:
            client.set_cookie("junk", str(index))
        statuses.append(client.get(f"/quiz/{BANK}/heads"))
    assert [r.status_code for r in statuses] == [200, 200, 200, 429, 429]
    refused = statuses[-1]
    assert int(refused.headers["Retry-After"]) >= 1
    assert "This address (a school, a household) has started more quiz attempts" in refused.get_data(as_text=True)
    api = app.test_client().post(f"/api/banks/{BANK}/attempts")
    assert api.status_code == 429 and "3 per minute" in api.get_json()["error"]["message"]
    assert count_attempts(app) == 3


def test_attempt_creation_is_limited_per_session(tmp_path):
    app = make_app(tmp_path, RATE_LIMIT_ATTEMPTS="2 per minute")
    client = app.test_client()
    client.get(f"/quiz/{BANK}/")  # the start page gives the browser its session cookie, and starts nothing
    assert count_attempts(app) == 0
    statuses = []
    for _ in range(3):
        statuses.append(client.get(f"/quiz/{BANK}/heads").status_code)
        with client.session_transaction() as session:
            session.pop("attempts", None)  # as a retake does
    assert statuses == [200, 200, 429]
    assert count_attempts(app) == 2
    assert app.test_client().get(f"/quiz/{BANK}/heads").status_code == 200  # another student is not refused


def test_a_classroom_of_sixty_behind_one_address_starts_with_the_default_limits(tmp_path):
    app = make_app(tmp_path)
    for _ in range(60):
        client = app.test_client()
        assert client.get(f"/quiz/{BANK}/").status_code == 200
        assert client.get(f"/quiz/{BANK}/heads").status_code == 200
    assert count_attempts(app) == 60


# --- nothing that decides a grade is in the cookie ---------------------------------------------------------


def test_the_session_cookie_holds_the_attempt_id_and_no_seed(app):
    from test_variants import PRACTICE

    client = app.test_client()
    page = client.get(f"/quiz/{PRACTICE}/head-dimension-variant")
    assert page.status_code == 200
    cookie = client.get_cookie("session")
    session = app.session_interface.get_signing_serializer(app).loads(cookie.value)
    with app.extensions["db_engine"].connect() as connection:
        attempt_id, seed = connection.execute(select(db.attempts.c.id, db.attempts.c.seed)).one()
    assert session["attempts"] == {PRACTICE: attempt_id}
    assert "seeds" not in session
    assert set(session) <= {"attempts", "csrf_token", "client"}
    assert str(seed) not in json.dumps(session)
