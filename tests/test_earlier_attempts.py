"""A student's earlier attempts: once a retake (whole, or of the missed questions) starts a new attempt, the quiz's
page and the results page list the session's earlier ones with their scores, and each has a read-only review, as
Moodle's "summary of your previous attempts" does. Only this browser's own attempts open; a tampered list is
ignored."""

from __future__ import annotations

import re

from app import db
from app.web import progress
from conftest import csrf_token, retake_fields
from test_feedback_modes import BANK, make_app, send
from test_review import FORM_ATTEMPT, MIXED, attempts, review, take

REVIEW_LINK = re.compile(rf'href="/quiz/{BANK}/attempts/([0-9a-f]{{32}})"')


def flat(response) -> str:
    return " ".join(response.get_data(as_text=True).split("<main", 1)[1].split())


def retake(client) -> None:
    html = review(client)
    assert client.post(f"/quiz/{BANK}/retake", data=retake_fields(html)).status_code == 303


def listed(client, page: str = "/") -> list[str]:
    return REVIEW_LINK.findall(client.get(f"/quiz/{BANK}{page}").get_data(as_text=True))


def test_a_retry_of_the_missed_ones_lists_the_earlier_attempt_with_its_score_and_a_read_only_review(tmp_path):
    app = make_app(tmp_path)
    client = app.test_client()
    assert listed(client) == []  # nothing earlier yet: no list at all
    assert "Your earlier attempts" not in client.get(f"/quiz/{BANK}/").get_data(as_text=True)
    take(client, MIXED)
    html = review(client)
    first_id = FORM_ATTEMPT.search(html).group(1)
    assert "Your earlier attempts" not in html
    client.post(f"/quiz/{BANK}/retake-missed", data={"csrf_token": csrf_token(html), "attempt": first_id})
    start = flat(client.get(f"/quiz/{BANK}/"))
    row = re.search(rf'<tr id="earlier-{first_id}">(.*?)</tr>', start).group(1)
    first = attempts(app)[0]
    assert re.search(r'<td><span class="nowrap">\d{4}-\d\d-\d\d</span> <span class="nowrap">\d\d:\d\d UTC</span></td>', row)
    assert "<td>1.5 / 3 (50%)</td>" in row
    assert listed(client) == [first_id] and listed(client, "/summary") == [first_id]
    # The review: the first attempt's own answers and scores, and nothing that would act on the current attempt.
    page = flat(client.get(f"/quiz/{BANK}/attempts/{first_id}"))
    started = progress.when(db.as_utc(first.started_at))
    assert f"<h1>Your earlier attempt</h1> <p class=\"meta\" id=\"past-note\">Started {started}, finished." in page
    assert "You scored <strong>1.5</strong> out of 3 (50%)" in page
    assert "<span>Question 1</span>" in page and "Your answer: Queries" in page and "By the square root of 64" in page
    assert f'href="/quiz/{BANK}/heads"' not in page and "See the visual" not in page
    assert "Try the" not in page and "Retake the quiz" not in page and 'method="post"' not in page
    assert f'<a class="button primary" href="/quiz/{BANK}/">Back to the quiz</a>' in page
    # The current attempt, the retry, is the one the results page shows and acts on.
    assert "only the 2 questions you missed before; your earlier attempts are listed below" in review(client)
    assert client.get(f"/quiz/{BANK}/attempts/{attempts(app)[1].id}").location.endswith(f"/quiz/{BANK}/summary")
    take(client, {"projections": ["q", "k"]})
    retake(client)
    assert listed(client) == [attempts(app)[1].id, first_id]
    assert ('<td>1 / 2 (50%), unfinished<br><span class="meta">a retry of the ones you had missed</span></td>'
            in flat(client.get(f"/quiz/{BANK}/")))


def test_whole_retakes_are_listed_newest_first_and_the_browser_keeps_the_newest_five(tmp_path):
    app = make_app(tmp_path)
    client = app.test_client()
    take(client, {"heads": "a"})  # an unfinished attempt: its score so far, and that it is unfinished
    retake(client)  # the next question page starts the new attempt
    take(client, MIXED)
    retake(client)
    first, second = attempts(app)
    assert listed(client) == [second.id, first.id]
    start = flat(client.get(f"/quiz/{BANK}/"))
    assert "<td>1 / 3 (33%), unfinished</td>" in start and "<td>1.5 / 3 (50%)</td>" in start
    unfinished = flat(client.get(f"/quiz/{BANK}/attempts/{first.id}"))
    assert ", left unfinished." in unfinished and "2 questions were left unanswered; they count as 0." in unfinished
    for _ in range(progress.MAX_EARLIER):
        assert client.get(f"/quiz/{BANK}/heads").status_code == 200  # starts an attempt
        retake(client)
    everything = [a.id for a in attempts(app)]
    assert len(everything) == progress.MAX_EARLIER + 2
    assert listed(client) == everything[::-1][:progress.MAX_EARLIER]  # the newest five
    gone = flat(client.get(f"/quiz/{BANK}/attempts/{first.id}"))
    assert "This is not one of the attempts this browser made at this quiz" in gone


def test_only_this_browsers_attempts_open_and_a_tampered_list_is_ignored(tmp_path):
    app = make_app(tmp_path)
    client, other = app.test_client(), app.test_client()
    take(other, MIXED)
    retake(other)
    others_first = attempts(app)[0].id
    response = client.get(f"/quiz/{BANK}/attempts/{others_first}")
    assert response.status_code == 404 and "not one of the attempts this browser made" in response.get_data(True)
    for garbage in ("x" * 32, "../summary", "0" * 32):
        assert client.get(f"/quiz/{BANK}/attempts/{garbage}").status_code == 404
    # A cookie can only name attempts by their unguessable ids; a list that is not ids, or not text, is dropped.
    with client.session_transaction() as session:
        session["earlier"] = {BANK: f"<script> {others_first.upper()} nonsense"}
    assert listed(client) == [] and client.get(f"/quiz/{BANK}/").status_code == 200
    with client.session_transaction() as session:
        session["earlier"] = {BANK: ["not", "text"]}
    summary = client.get(f"/quiz/{BANK}/summary", follow_redirects=True)  # no attempt here: to the quiz's page
    assert listed(client) == [] and summary.status_code == 200 and "has no results" in summary.get_data(True)
    # Another bank's attempt id in this bank's list opens nothing either.
    with client.session_transaction() as session:
        session["earlier"] = {"another-bank": others_first}
    assert listed(client) == []


def test_a_deferred_banks_unfinished_earlier_attempt_keeps_its_results_hidden(tmp_path):
    app = make_app(tmp_path, "feedback: deferred")
    client = app.test_client()
    take(client, {"heads": "a"})
    retake(client)
    (first_id,) = listed(client)
    assert "<td>shown once finished</td>" in flat(client.get(f"/quiz/{BANK}/"))
    page = flat(client.get(f"/quiz/{BANK}/attempts/{first_id}"))
    assert "answer recorded" in page and "You scored" not in page and "Right: 128 / 4 = 32." not in page
    assert f'href="/quiz/{BANK}/heads"' not in page


def test_an_earlier_timed_attempt_whose_time_ran_out_is_listed_as_closed(tmp_path, monkeypatch):
    app = make_app(tmp_path, "time_limit: 1m")
    client = app.test_client()
    assert send(client, "heads", "a").status_code == 303
    retake(client)
    first = attempts(app)[0]
    assert first.finished_at is None
    later = progress.db.now() + progress.timedelta(seconds=120)
    monkeypatch.setattr(progress.db, "now", lambda: later)
    assert "<td>1 / 3 (33%)</td>" in flat(client.get(f"/quiz/{BANK}/"))  # closed now, so not "unfinished"
    assert attempts(app)[0].finished_at is not None


def test_the_cookie_keeps_at_most_twenty_earlier_ids_dropping_the_banks_left_longest_ago(tmp_path):
    from types import SimpleNamespace

    app = make_app(tmp_path)
    banks = [SimpleNamespace(id=f"bank-{number}") for number in range(6)]
    with app.test_request_context():
        for bank in banks:  # five retakes at each bank, one after the other
            for _ in range(progress.MAX_EARLIER + 1):
                progress._remember(bank, progress.secrets.token_hex(16), in_course=False)
        kept = progress.session["earlier"]
        assert list(kept) == [bank.id for bank in banks[-4:]]  # 4 banks' 5 ids: 20
        assert all(len(progress.earlier_ids(bank)) == progress.MAX_EARLIER for bank in banks[-4:])
        assert progress.earlier_ids(banks[0]) == []
        # A retake at a bank whose list was kept makes its list the newest.
        progress._remember(banks[2], progress.secrets.token_hex(16), in_course=False)
        assert list(progress.session["earlier"]) == ["bank-3", "bank-4", "bank-5", "bank-2"]
