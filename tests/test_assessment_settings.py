"""Issue 16's assessment settings in the bank, through the pages (forms, no JavaScript) and the JSON API:
shuffle (questions and options, per attempt from its stored seed), opens/closes, time_limit (enforced on the
server from started_at) and attempts (per browser session); and the loader's file:line:col checks of each."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

import pytest
from sqlalchemy import select, update

from app import create_app, db
from app.bank.loader import load_bank_bytes
from conftest import csrf_token, retake_fields

BANK = "settings"
BANK_YAML = """\
id: settings
title: Settings quiz
{header}
questions:
  - id: heads
    type: single_choice
    prompt: With d_model = 128 and 4 heads, how wide is each head?
    options:
      - {{id: a, text: "32", correct: true}}
      - {{id: b, text: "64"}}
      - {{id: c, text: "128"}}
      - {{id: d, text: "16"}}
      - {{id: e, text: "8"}}
    explanation: Each head gets d_model over h columns.
  - id: projections
    type: multiple_choice
    prompt: Which are projections of the input?
    options:
      - {{id: q, text: Queries, correct: true}}
      - {{id: k, text: Keys, correct: true}}
      - {{id: v, text: Values, correct: true}}
      - {{id: x, text: Embeddings}}
    explanation: Queries, keys and values are projections.
  - id: order
    type: true_false
    prompt: Attention without positions is blind to word order.
    answer: true
    explanation: It is permutation-equivariant.
  - id: scale
    type: numeric
    prompt: For d_k = 64, by what are the scores divided?
    answer: 8
    explanation: By the square root of 64.
  - id: softmax
    type: true_false
    prompt: Each row of attention weights sums to 1.
    answer: true
    explanation: Softmax normalises each row.
  - id: causal
    type: true_false
    prompt: A causal mask hides the future keys.
    answer: true
    explanation: Rows are queries, columns are keys; the upper triangle is masked.
"""
BANK_ORDER = ["heads", "projections", "order", "scale", "softmax", "causal"]
RIGHT = {"heads": "a", "projections": ["q", "k", "v"], "order": "true", "scale": "8", "softmax": "true",
         "causal": "true"}


def make_app(tmp_path, header: str = ""):
    folder = tmp_path / "quizzes"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{BANK}.yaml").write_text(BANK_YAML.format(header=header))
    return create_app({"TESTING": True, "SECRET_KEY": "test-secret-key", "QUIZ_DIR": str(folder),
                       "DATABASE_URL": f"sqlite:///{tmp_path / 'settings.sqlite3'}"})


def main(response) -> str:
    return " ".join(response.get_data(as_text=True).split("<main", 1)[1].split())


def attempt_rows(app):
    with app.extensions["db_engine"].connect() as connection:
        return connection.execute(select(db.attempts).order_by(db.attempts.c.started_at)).all()


def set_attempt(app, attempt_id: str, **values) -> None:
    with app.extensions["db_engine"].begin() as connection:
        connection.execute(update(db.attempts).where(db.attempts.c.id == attempt_id).values(**values))


def start_page_order(client) -> list[str]:
    html = client.get(f"/quiz/{BANK}/").get_data(as_text=True)
    return re.findall(rf'href="/quiz/{BANK}/([a-z]+)">', html.split('class="question-index"', 1)[1])


def option_order(html: str) -> list[str]:
    return re.findall(r'id="option-\d+" value="([a-z]+)"', html)


def answer(client, question_id: str, values):
    page = client.get(f"/quiz/{BANK}/{question_id}")
    assert page.status_code == 200, page.status_code
    html = page.get_data(as_text=True)
    try_number = re.search(r'name="try" value="(\d+)"', html).group(1)
    return client.post(f"/quiz/{BANK}/{question_id}", data={
        "csrf_token": csrf_token(html), "answer": values if isinstance(values, list) else [values], "try": try_number})


def api_start(client):
    return client.post(f"/api/banks/{BANK}/attempts", json={})


def api_answer(client, attempt_id: str, question_id: str, value):
    return client.post(f"/api/banks/{BANK}/attempts/{attempt_id}/questions/{question_id}/answer",
                       json={"answer": value})


def at(moment: datetime):
    return lambda: moment


# --- shuffle ----------------------------------------------------------------------------------------------


def test_shuffled_questions_follow_the_attempts_stored_seed_and_stay_put_on_reload(tmp_path):
    app = make_app(tmp_path, "shuffle: {questions: true}")
    client = app.test_client()
    first = client.get(f"/quiz/{BANK}/heads")  # the start link of a new attempt: its own first question
    [row] = attempt_rows(app)
    orders = {}
    for seed in range(12):
        set_attempt(app, row.id, seed=seed)  # the order comes from the database's seed, not from the cookie
        orders[seed] = start_page_order(client)
        assert sorted(orders[seed]) == sorted(BANK_ORDER)
        assert start_page_order(client) == orders[seed]  # the same after a reload
    assert len({tuple(order) for order in orders.values()}) > 3 and any(o != BANK_ORDER for o in orders.values())
    # The question pages number the questions in the attempt's order.
    set_attempt(app, row.id, seed=row.seed)
    order = start_page_order(client)
    if order[0] == "heads":
        assert first.status_code == 200
    else:  # the start link names the bank's first question; a new attempt begins at its own first
        assert first.status_code == 303 and first.location.endswith(f"/quiz/{BANK}/{order[0]}")
    assert "Question 1</h1>" in client.get(f"/quiz/{BANK}/{order[0]}").get_data(as_text=True)
    assert "Question 3</h1>" in client.get(f"/quiz/{BANK}/{order[2]}").get_data(as_text=True)
    # The API lists the attempt's questions in the same order.
    api = client.get(f"/api/banks/{BANK}/attempts/{row.id}").get_json()
    assert [q["id"] for q in api["questions"]] == order


def test_without_shuffle_every_attempt_keeps_the_banks_order(tmp_path):
    app = make_app(tmp_path)
    client = app.test_client()
    client.get(f"/quiz/{BANK}/scale")
    [row] = attempt_rows(app)
    for seed in range(5):
        set_attempt(app, row.id, seed=seed)
        assert start_page_order(client) == BANK_ORDER
        assert option_order(client.get(f"/quiz/{BANK}/heads").get_data(as_text=True)) == list("abcde")


def test_shuffled_options_keep_their_ids_and_scoring_and_true_false_keeps_its_order(tmp_path):
    app = make_app(tmp_path, "shuffle: {options: true}")
    client = app.test_client()
    client.get(f"/quiz/{BANK}/heads")
    [row] = attempt_rows(app)
    seen, true_false = set(), set()
    for seed in range(12):
        set_attempt(app, row.id, seed=seed)
        html = client.get(f"/quiz/{BANK}/heads").get_data(as_text=True)
        order = option_order(html)
        assert sorted(order) == list("abcde") and option_order(client.get(f"/quiz/{BANK}/heads").data.decode()) == order
        seen.add(tuple(order))
        true_false.add(tuple(option_order(client.get(f"/quiz/{BANK}/order").get_data(as_text=True))))
        api = client.get(f"/api/banks/{BANK}/attempts/{row.id}").get_json()
        assert [o["id"] for o in api["questions"][0]["options"]] == order
    assert len(seen) > 3 and len(true_false) == 1
    assert start_page_order(client) == BANK_ORDER  # questions are not shuffled unless asked
    # The right ids still score 1, whatever the order they were shown in (the form and the API).
    assert answer(client, "heads", "a").status_code == 303
    assert "Correct</h1>" in client.get(f"/quiz/{BANK}/heads/answer").get_data(as_text=True)
    assert answer(client, "projections", ["v", "q", "k"]).status_code == 303
    assert "Score: 1 / 1" in main(client.get(f"/quiz/{BANK}/projections/answer"))
    attempt_id = api_start(client).get_json()["attempt"]
    assert api_answer(client, attempt_id, "projections", ["k", "q", "v"]).get_json()["grade"]["score"] == 1.0


# --- opens / closes ---------------------------------------------------------------------------------------


def test_before_the_window_opens_the_pages_say_when_and_refuse_answers(tmp_path):
    opens = (datetime.now(timezone.utc) + timedelta(days=2)).replace(second=0, microsecond=0)
    app = make_app(tmp_path, f"opens: {opens.isoformat()}")
    client = app.test_client()
    shown = f"{opens:%Y-%m-%d %H:%M} UTC"
    start = main(client.get(f"/quiz/{BANK}/"))
    assert f"This quiz opens at {shown}" in start and "Start the quiz" not in start
    page = client.get(f"/quiz/{BANK}/heads")
    assert page.status_code == 403 and f"opens at {shown}" in main(page) and "Not open yet" in main(page)
    token = csrf_token(client.get(f"/quiz/{BANK}/").get_data(as_text=True))
    posted = client.post(f"/quiz/{BANK}/heads", data={"csrf_token": token, "answer": ["a"], "try": "1"})
    assert posted.status_code == 403 and "nothing can be started or answered" in main(posted)
    refused = api_start(client)
    assert refused.status_code == 403 and refused.get_json()["error"]["title"] == "Not open yet"
    assert attempt_rows(app) == []


def test_after_the_window_closes_answers_are_refused_on_the_pages_and_the_api(tmp_path, monkeypatch):
    closes = (datetime.now(timezone.utc) + timedelta(hours=1)).replace(second=0, microsecond=0)
    app = make_app(tmp_path, f"opens: 2020-01-01T00:00+01:00\ncloses: {closes.isoformat()}")
    client = app.test_client()
    assert "Answers are accepted until" in main(client.get(f"/quiz/{BANK}/"))
    assert f"The quiz closes at {closes:%Y-%m-%d %H:%M} UTC." in main(client.get(f"/quiz/{BANK}/heads"))
    assert answer(client, "heads", "a").status_code == 303  # within the window
    attempt_id = api_start(client).get_json()["attempt"]
    monkeypatch.setattr(db, "now", at(closes + timedelta(seconds=1)))
    start = main(client.get(f"/quiz/{BANK}/"))
    assert f"This quiz closed at {closes:%Y-%m-%d %H:%M} UTC" in start and "Continue" not in start
    assert client.get(f"/quiz/{BANK}/projections").status_code == 403
    token = csrf_token(client.get(f"/quiz/{BANK}/").get_data(as_text=True))
    posted = client.post(f"/quiz/{BANK}/projections", data={"csrf_token": token, "answer": ["q"], "try": "1"})
    assert posted.status_code == 403 and "Quiz closed" in main(posted) and "nothing was stored" in main(posted)
    refused = api_answer(client, attempt_id, "heads", "a")
    assert refused.status_code == 403 and "closed at" in refused.get_json()["error"]["message"]
    assert client.get(f"/quiz/{BANK}/heads/answer").status_code == 200  # an answered question can be reviewed
    assert api_start(client).status_code == 403


# --- time_limit -------------------------------------------------------------------------------------------


def test_the_time_limit_is_enforced_from_started_at_and_closes_the_attempt_with_what_it_has(tmp_path):
    app = make_app(tmp_path, "time_limit: 20m")
    client = app.test_client()
    page = client.get(f"/quiz/{BANK}/heads")
    [row] = attempt_rows(app)
    deadline = row.started_at.replace(tzinfo=timezone.utc) + timedelta(minutes=20)
    shown = f"{deadline:%Y-%m-%d %H:%M}" + (f":{deadline:%S}" if deadline.second else "")  # never a minute off
    assert f'answer by <time datetime="{deadline.isoformat()}">{shown} UTC</time>' in page.get_data(as_text=True)
    assert "Each attempt has 20 minutes" in main(client.get(f"/quiz/{BANK}/"))
    assert answer(client, "heads", "a").status_code == 303
    assert answer(client, "projections", ["q"]).status_code == 303  # wrong (all or nothing): 0
    page = client.get(f"/quiz/{BANK}/order")
    set_attempt(app, row.id, started_at=row.started_at - timedelta(minutes=20, seconds=1))
    html = page.get_data(as_text=True)
    late = client.post(f"/quiz/{BANK}/order", data={"csrf_token": csrf_token(html), "answer": ["true"], "try": "1"})
    assert late.status_code == 409 and "Time is up" in main(late) and "no answer after it is stored" in main(late)
    garbled = client.post(f"/quiz/{BANK}/scale", data={"csrf_token": csrf_token(html), "answer": ["eight"]})
    assert garbled.status_code == 409  # late whatever it says: not a 400 asking to fix the answer
    [row] = attempt_rows(app)
    assert row.finished_at is not None and row.max_score == len(BANK_ORDER)
    assert row.total_score == pytest.approx(1.0 + 0.0)  # what was answered; the rest count 0
    assert client.get(f"/quiz/{BANK}/order").status_code == 409
    start = main(client.get(f"/quiz/{BANK}/"))
    assert "The time of this attempt is up" in start and "Continue" not in start
    assert client.get(f"/quiz/{BANK}/summary").status_code == 200


def test_the_api_refuses_an_answer_after_the_time_limit_and_shows_the_attempt_closed(tmp_path):
    app = make_app(tmp_path, "time_limit: 90s")
    client = app.test_client()
    started = api_start(client).get_json()
    attempt_id = started["attempt"]
    [row] = attempt_rows(app)
    assert started["deadline"] == (row.started_at.replace(tzinfo=timezone.utc) + timedelta(seconds=90)).isoformat()
    assert api_answer(client, attempt_id, "scale", 8).status_code == 200
    set_attempt(app, attempt_id, started_at=row.started_at - timedelta(seconds=91))
    late = api_answer(client, attempt_id, "heads", "a")
    assert late.status_code == 409 and late.get_json()["error"]["title"] == "Time is up"
    assert api_answer(client, attempt_id, "order", "not a boolean").status_code == 409
    shown = client.get(f"/api/banks/{BANK}/attempts/{attempt_id}").get_json()
    assert shown["finished"] is True and shown["score"] == 1.0 and shown["max_score"] == len(BANK_ORDER)
    # Closed on a read too: an attempt whose time ran out with no further answer is finished when next seen.
    other = api_start(client).get_json()["attempt"]
    set_attempt(app, other, started_at=row.started_at - timedelta(hours=1))
    assert client.get(f"/api/banks/{BANK}/attempts/{other}").get_json()["finished"] is True


def test_an_attempt_whose_time_ran_out_while_its_student_was_away_counts_as_finished_for_the_instructor(tmp_path):
    from werkzeug.security import generate_password_hash

    from app.instructor.report import bank_report

    app = make_app(tmp_path, "time_limit: 20m")
    app.config["INSTRUCTOR_PASSWORD_HASH"] = generate_password_hash("pw", method="pbkdf2:sha256:1000")
    left, recent = app.test_client(), app.test_client()
    assert answer(left, "heads", "a").status_code == 303  # 1 point, then the student leaves
    assert answer(recent, "heads", "a").status_code == 303  # still within the time
    gone, _ = attempt_rows(app)
    set_attempt(app, gone.id, started_at=gone.started_at - timedelta(minutes=21))
    instructor = app.test_client()
    token = csrf_token(instructor.get("/instructor/login").get_data(as_text=True))
    assert instructor.post("/instructor/login", data={"csrf_token": token, "password": "pw"}).status_code == 303
    assert instructor.get(f"/instructor/banks/{BANK}").status_code == 200  # closes what is over, then reads
    closed, still_open = sorted(attempt_rows(app), key=lambda r: r.id != gone.id)
    assert (closed.total_score, closed.max_score) == (1.0, len(BANK_ORDER)) and closed.finished_at is not None
    assert still_open.finished_at is None
    with app.app_context():
        summary = bank_report(app.extensions["db_engine"], app.extensions["banks"].get(BANK))
    assert (summary.started, summary.finished) == (2, 1)
    assert summary.mean_fraction == pytest.approx(1 / len(BANK_ORDER))


# --- attempts ---------------------------------------------------------------------------------------------


def test_a_session_may_start_only_the_banks_attempts_retakes_included(tmp_path):
    app = make_app(tmp_path, "attempts: 2")
    client = app.test_client()
    assert "You may start 2 attempts at this quiz; 0 used." in main(client.get(f"/quiz/{BANK}/"))
    assert answer(client, "heads", "b").status_code == 303  # attempt 1, one wrong answer
    summary = client.get(f"/quiz/{BANK}/summary").get_data(as_text=True)
    first = attempt_rows(app)[0].id
    missed = client.post(f"/quiz/{BANK}/retake-missed", data={"csrf_token": csrf_token(summary), "attempt": first})
    assert missed.status_code == 303  # attempt 2: the missed-only retake counts
    assert "2 used." in main(client.get(f"/quiz/{BANK}/"))
    fields = retake_fields(client.get(f"/quiz/{BANK}/summary").get_data(as_text=True))
    refused = client.post(f"/quiz/{BANK}/retake", data=fields)
    assert refused.status_code == 403 and "allows 2 attempts" in main(refused)
    assert len(attempt_rows(app)) == 2
    assert client.get(f"/quiz/{BANK}/heads").status_code == 200  # the current attempt is kept
    assert api_start(client).status_code == 403  # the API counts in the same session
    # Another browser (a new session) starts its own count: anonymous students are counted per session.
    assert api_start(app.test_client()).status_code == 201


def test_the_api_counts_attempts_per_session(tmp_path):
    app = make_app(tmp_path, "attempts: 1")
    client = app.test_client()
    assert api_start(client).status_code == 201
    refused = api_start(client)
    assert refused.status_code == 403 and "allows 1 attempt," in refused.get_json()["error"]["message"]


# --- the loader's checks ----------------------------------------------------------------------------------


@pytest.mark.parametrize("header, expected", [
    ("shuffle: {question: true}", "b.yaml:3:11: shuffle.question: unknown field 'question'; did you mean 'questions'?"),
    ("shuffle: {options: yes}", "b.yaml:3:20: shuffle.options: expected a boolean"),
    ("opens: 2026-03-02T09:00", "b.yaml:3:8: opens: '2026-03-02T09:00' has no time zone"),
    ("closes: next monday", "b.yaml:3:9: closes: 'next monday' is not an ISO 8601 date and time"),
    ("opens: 2026-03-02T09:00+01:00\ncloses: 2026-03-02T08:00Z",
     "b.yaml:4:9: closes: the quiz must close after it opens (2026-03-02T09:00:00+01:00)"),
    ("time_limit: 20", "b.yaml:3:13: time_limit: expected a duration like 20m, 90s or 1h30m, got 20"),
    ("time_limit: 10s", "b.yaml:3:13: time_limit: a time limit is from 30s to 24h, got 10s"),
    ("time_limit: 25h", "b.yaml:3:13: time_limit: a time limit is from 30s to 24h, got 25h"),
    ("attempts: 0", "b.yaml:3:11: attempts: must be at least 1"),
])
def test_each_setting_is_checked_with_its_position(header, expected):
    result = load_bank_bytes(BANK_YAML.format(header=header).encode(), "b.yaml")
    assert result.bank is None and any(str(error).startswith(expected) for error in result.errors), result.errors


def test_valid_settings_load(tmp_path):
    header = ("shuffle: {questions: true, options: true}\nattempts: 3\nopens: 2026-03-02T09:00+01:00\n"
              "closes: 2026-03-09T17:00Z\ntime_limit: 1h30m")
    bank = load_bank_bytes(BANK_YAML.format(header=header).encode(), "b.yaml").bank
    assert (bank.shuffle.questions, bank.shuffle.options, bank.attempts, bank.time_limit) == (True, True, 3, 5400)
    assert bank.opens == datetime(2026, 3, 2, 8, tzinfo=timezone.utc) and bank.closes.tzinfo is not None
