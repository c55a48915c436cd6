"""Per-link assessment settings against the real platform (tests/lti_platform.py): the instructor sets them while
deep linking, the platform signs them into every launch as custom parameters, and each course's attempts follow
its own link's; `attempts:` counts per LMS user and link, from any browser.
"""

from __future__ import annotations

import hashlib
import re
import threading
from dataclasses import replace
from datetime import timedelta

import pytest
import requests
from sqlalchemy import inspect, text, update
from sqlalchemy.exc import IntegrityError

from app import create_app, db
from app.lti import store
from lti_platform import INSTRUCTOR, LEARNER, PendingLaunch, Platform, PlatformServer
from test_lti_flow import Forms, _b64, _payload, _segments, launch, only_form, serve_tool

QUESTIONS = 6
BANK = "id: quiz\ntitle: Settings quiz\nattempts: 3\nquestions:\n" + "".join(
    f"  - {{id: q{n}, type: numeric, prompt: 'Write {n}.', explanation: '{n}.', answer: {n}}}\n"
    for n in range(1, QUESTIONS + 1))


@pytest.fixture(scope="module")
def lms():
    platform = Platform()
    with PlatformServer(platform):
        yield platform


@pytest.fixture(scope="module")
def tool(lms, tmp_path_factory):
    with serve_tool(lms, tmp_path_factory.mktemp("lti-settings"), "quiz.yaml", BANK) as server:
        yield server


def settings_page(teacher: requests.Session, lms: Platform, tool, context: str) -> requests.Response:
    """The instructor's deep-linking launch, the quiz picked: the page of its settings in this course."""
    picker = launch(teacher, lms, PendingLaunch(user="teacher", roles=[INSTRUCTOR], context=context,
                                                resource_link=None, deep_link=True))
    first = only_form(picker.text)
    page = teacher.post(tool.url + first["action"], data=first["fields"])
    assert page.status_code == 200 and "Settings quiz in this course" in page.text, page.text[:500]
    return page


def place(lms: Platform, tool, context: str, **chosen: str) -> dict:
    """Deep link the quiz into `context` with these settings; the custom parameters the platform stored."""
    teacher = requests.Session()
    form = only_form(settings_page(teacher, lms, tool, context).text)
    ready = teacher.post(tool.url + form["action"], data={**form["fields"], **chosen})
    assert ready.status_code == 200 and "Settings quiz is ready" in ready.text, ready.text[-1500:]
    back = only_form(ready.text)
    accepted = teacher.post(back["action"], data=back["fields"])
    assert accepted.text == "added 1 item(s)", accepted.text
    return lms.deep_link_items[-1][0]["custom"]


def student(user: str, context: str, custom: dict, link: str = "placed") -> PendingLaunch:
    return PendingLaunch(user=user, roles=[LEARNER], context=context, resource_link=link, name=f"Student {user}",
                         custom=custom)


def answer(person: requests.Session, tool, number: int, value: int | None = None) -> requests.Response:
    return send(person, tool, number, form_token(person, tool, number), value)


def form_token(person: requests.Session, tool, number: int) -> str:
    page = person.get(f"{tool.url}/quiz/quiz/q{number}")
    return re.search(r'name="csrf_token" value="([^"]+)"', page.text).group(1)


def send(person: requests.Session, tool, number: int, token: str, value: int | None = None) -> requests.Response:
    return person.post(f"{tool.url}/quiz/quiz/q{number}",
                       data={"csrf_token": token, "answer": str(number if value is None else value)})


def latest_attempt(tool, context: str, user: str, link: str = "placed"):
    with tool.app.app_context():
        platform = store.list_platforms()[0]
        found = store.find_link(platform.id, "deployment-1", context, link)
        return store.user_attempts(found.id, user)[0]


def test_the_settings_page_shows_the_quizs_own_values(tool, lms):
    page = settings_page(requests.Session(), lms, tool, "course-view").text
    assert "Blank: the quiz's own, 3." in page  # attempts: 3 in the bank file
    assert "Blank: the quiz's own, none." in page and "Blank: the quiz's own, never closes." in page
    assert "The quiz's own: not shuffled." in page


@pytest.mark.parametrize("field, value, words", [
    ("attempts", "0", "must be at least 1, got 0"),
    ("attempts", "many", "expected a whole number, got &#39;many&#39;"),
    ("time_limit", "20 minutes", "expected a duration like 20m, 90s or 1h30m, got &#39;20 minutes&#39;"),
    ("time_limit", "10s", "a time limit is from 30s to 24h, got 10s"),
    ("opens", "2026-03-02T09:00", "has no time zone"),
    ("closes", "next week", "is not an ISO 8601 date and time"),
], ids=["attempts-0", "attempts-text", "time-words", "time-short", "opens-no-zone", "closes-text"])
def test_a_refused_setting_is_shown_next_to_its_field(tool, lms, field, value, words):
    teacher = requests.Session()
    form = only_form(settings_page(teacher, lms, tool, "course-bad").text)
    refused = teacher.post(tool.url + form["action"], data={**form["fields"], field: value})
    assert refused.status_code == 400, refused.text[:300]
    assert re.search(rf'id="{field}"[^>]*value="[^"]*"[^>]*aria-describedby="{field}-own {field}-error"\s*'
                     r'aria-invalid="true"', refused.text), refused.text
    error = re.search(rf'<p class="form-error field-error" id="{field}-error">([^<]*)</p>', refused.text).group(1)
    assert words in error
    assert refused.text.count('aria-invalid="true"') == 1  # only the refused field
    assert only_form(refused.text)["fields"][field] == value  # what was typed stays, to be corrected


def test_closes_before_the_links_own_opens_is_refused(tool, lms):
    teacher = requests.Session()
    form = only_form(settings_page(teacher, lms, tool, "course-bad").text)
    refused = teacher.post(tool.url + form["action"], data={**form["fields"], "opens": "2026-03-09T09:00Z",
                                                            "closes": "2026-03-02T09:00Z"})
    assert refused.status_code == 400 and "the quiz must close after it opens" in refused.text


def test_one_attempt_per_lms_user_holds_across_browsers(tool, lms):
    custom = place(lms, tool, "course-one", attempts="1")
    assert custom == {"bank": "quiz", "score_policy": "best", "attempts": "1"}
    laptop = requests.Session()
    opened = launch(laptop, lms, student("ana", "course-one", custom))
    assert opened.status_code == 200 and opened.url == f"{tool.url}/quiz/quiz/", opened.text[:300]
    for number in range(1, QUESTIONS + 1):
        answer(laptop, tool, number, value=0 if number == 2 else None)  # one wrong: 5 of 6
    assert latest_attempt(tool, "course-one", "ana").finished_at is not None

    phone = requests.Session()  # another browser: no cookie of the first
    refused = launch(phone, lms, student("ana", "course-one", custom))
    assert refused.status_code == 403 and "No attempts left" in refused.text
    assert "allows 1 attempt, and you have used it, so no new attempt was started" in refused.text
    assert "Your best score, 5 / 6, is the one that goes to the course&#39;s grade book." in refused.text
    assert lms.score_of("course-one", "Quiz link placed", "ana", 5.0)
    assert '<a class="button primary" href="/quiz/quiz/summary">See your results</a>' in refused.text
    results = phone.get(f"{tool.url}/quiz/quiz/summary")  # their results stay on the quiz's page
    assert "You scored <strong>5</strong> out of 6" in results.text
    with tool.app.app_context():
        platform = store.list_platforms()[0]
        found = store.find_link(platform.id, "deployment-1", "course-one", "placed")
        assert len(store.user_attempts(found.id, "ana")) == 1  # no new attempt was started
    other = launch(requests.Session(), lms, student("ben", "course-one", custom))  # another learner: their own
    assert other.status_code == 200 and other.url == f"{tool.url}/quiz/quiz/"


def summary_form(person: requests.Session, tool, action: str):
    """The results page, and the fields of its form that posts to `action` (None when the page has no such form)."""
    page = person.get(f"{tool.url}/quiz/quiz/summary")
    forms = [form for form in Forms(page.text).forms if form["action"] == f"/quiz/quiz/{action}"]
    return " ".join(page.text.split()), forms[0]["fields"] if forms else None


def user_attempts(tool, context: str, user: str) -> list:
    with tool.app.app_context():
        platform = store.list_platforms()[0]
        return store.user_attempts(store.find_link(platform.id, "deployment-1", context, "placed").id, user)


def test_retake_in_an_lms_session_starts_the_learners_next_graded_attempt(tool, lms):
    custom = place(lms, tool, "course-retake", attempts="2", time_limit="10m")
    person = requests.Session()
    launch(person, lms, student("ivy", "course-retake", custom))
    for number in range(1, QUESTIONS + 1):
        answer(person, tool, number, value=0 if number <= 3 else None)  # 3 of 6
    assert lms.score_of("course-retake", "Quiz link placed", "ivy", 3.0)
    page, fields = summary_form(person, tool, "retake")
    assert "A retake is your next attempt in the course, and its score goes to the course's grade book." in page
    retaken = person.post(f"{tool.url}/quiz/quiz/retake", data=fields)
    assert retaken.status_code == 200 and retaken.url == f"{tool.url}/quiz/quiz/", retaken.text[:300]
    assert "You may start 2 attempts at this quiz; 2 used." in retaken.text  # the link's limit, not the bank's 3
    assert ("You opened this quiz from your course as Student ivy: your instructor sees your results there, and "
            "your score goes to the course's grade book.") in " ".join(retaken.text.split())
    assert 'name="display_name"' not in retaken.text  # the course knows the learner: no "stay anonymous" form
    attempts = user_attempts(tool, "course-retake", "ivy")
    assert [a.attempt_number for a in attempts] == [2, 1] and attempts[0].finished_at is None  # the learner's own
    assert "Time limit: answer by" in person.get(f"{tool.url}/quiz/quiz/q1").text  # under the link's settings
    for number in range(1, QUESTIONS + 1):
        answer(person, tool, number)
    assert lms.score_of("course-retake", "Quiz link placed", "ivy", 6.0)  # the best, sent
    _, fields = summary_form(person, tool, "retake")
    refused = person.post(f"{tool.url}/quiz/quiz/retake", data=fields)  # the link's 2 attempts are used
    assert refused.status_code == 403 and "allows 2 attempts, and you have used all of them" in refused.text
    assert "Your best score, 6 / 6, is the one that goes to the course&#39;s grade book." in refused.text
    assert len(user_attempts(tool, "course-retake", "ivy")) == 2


def test_retake_in_an_lms_session_waits_for_the_attempt_to_finish(tool, lms):
    custom = place(lms, tool, "course-unfinished")
    person = requests.Session()
    launch(person, lms, student("jo", "course-unfinished", custom))
    answer(person, tool, 1)
    page, fields = summary_form(person, tool, "retake")
    assert fields is None and "answer the remaining questions before you retake the quiz" in page
    token = form_token(person, tool, 2)  # the session's token, as a tab with an older results page holds it
    refused = person.post(f"{tool.url}/quiz/quiz/retake", data={"csrf_token": token})
    assert refused.status_code == 400 and "This attempt is not finished yet" in refused.text
    assert len(user_attempts(tool, "course-unfinished", "jo")) == 1


def test_retake_in_an_lms_session_after_the_time_limit_closes_the_attempt_and_starts_the_next(tool, lms):
    custom = place(lms, tool, "course-overtime", time_limit="1m")
    person = requests.Session()
    launch(person, lms, student("ka", "course-overtime", custom))
    answer(person, tool, 1)
    token = form_token(person, tool, 2)
    first = latest_attempt(tool, "course-overtime", "ka")
    with tool.app.app_context(), db.engine().begin() as connection:  # as if the minute had passed
        connection.execute(update(db.attempts).where(db.attempts.c.id == first.id).values(
            started_at=db.now() - timedelta(minutes=2)))
    retaken = person.post(f"{tool.url}/quiz/quiz/retake", data={"csrf_token": token})  # from a page shown in time
    assert retaken.status_code == 200 and retaken.url == f"{tool.url}/quiz/quiz/", retaken.text[:300]
    attempts = user_attempts(tool, "course-overtime", "ka")
    assert [a.attempt_number for a in attempts] == [2, 1] and attempts[1].finished_at is not None
    assert lms.score_of("course-overtime", "Quiz link placed", "ka", 1.0)  # the closed one's


def test_the_cron_job_closes_an_attempt_whose_links_time_limit_ended_and_sends_its_grade(tool, lms):
    custom = place(lms, tool, "course-left", time_limit="1m")
    person = requests.Session()
    launch(person, lms, student("lu", "course-left", custom))
    answer(person, tool, 1)  # 1 point of 6, then the learner closes the tab
    first = latest_attempt(tool, "course-left", "lu")
    with tool.app.app_context(), db.engine().begin() as connection:  # as if the minute had passed
        connection.execute(update(db.attempts).where(db.attempts.c.id == first.id).values(
            started_at=db.now() - timedelta(minutes=2)))
    assert "Quiz link placed" not in lms.gradebook("course-left")  # nothing sent while the attempt was open
    result = tool.app.test_cli_runner().invoke(args=["lti", "send-grades"])
    assert result.exit_code == 0 and "closed 1 attempt(s) whose time limit had ended" in result.output, result.output
    assert latest_attempt(tool, "course-left", "lu").finished_at is not None
    assert lms.score_of("course-left", "Quiz link placed", "lu", 1.0)
    again = tool.app.test_cli_runner().invoke(args=["lti", "send-grades"])
    assert "closed" not in again.output  # closed once
    from app.instructor.export import COLUMNS, csv_row, response_rows

    with tool.app.app_context():  # the instructor's CSV says whose attempt it was
        rows = [dict(zip(COLUMNS, csv_row(r))) for r in response_rows(db.engine(), "quiz") if r.attempt_id == first.id]
    assert [(r["lms_user_id"], r["lms_user_name"], r["total_score"], r["max_score"]) for r in rows] == \
        [("lu", "Student lu", "1.0", str(QUESTIONS))]


def test_the_missed_questions_in_an_lms_session_are_ungraded_practice(tool, lms):
    custom = place(lms, tool, "course-practice", attempts="1")
    person = requests.Session()
    launch(person, lms, student("kai", "course-practice", custom))
    for number in range(1, QUESTIONS + 1):
        answer(person, tool, number, value=0 if number == 1 else None)  # 5 of 6
    page, fields = summary_form(person, tool, "retake-missed")
    assert "Try the 1 I missed (practice)" in page and "it is not graded" in page
    practice = person.post(f"{tool.url}/quiz/quiz/retake-missed", data=fields)  # the link's 1 attempt is used
    assert practice.status_code == 200 and practice.url == f"{tool.url}/quiz/quiz/q1", practice.text[:300]
    start = " ".join(person.get(f"{tool.url}/quiz/quiz/").text.split())
    assert "This attempt is practice on the questions you missed: it is not graded" in start
    answer(person, tool, 1)
    assert "You scored <strong>1</strong> out of 1" in person.get(f"{tool.url}/quiz/quiz/summary").text
    assert len(user_attempts(tool, "course-practice", "kai")) == 1  # not the course's attempt
    assert lms.score_of("course-practice", "Quiz link placed", "kai", 5.0)  # not sent
    _, fields = summary_form(person, tool, "retake")  # from the practice: still the course's retake
    refused = person.post(f"{tool.url}/quiz/quiz/retake", data=fields)
    assert refused.status_code == 403 and "allows 1 attempt, and you have used it" in refused.text


def test_a_link_without_the_grade_service_claims_no_grade_book(tool, lms):
    custom = place(lms, tool, "course-ungraded")
    person = requests.Session()
    opened = launch(person, lms, replace(student("lu", "course-ungraded", custom), ags=False))
    page = " ".join(opened.text.split())
    assert "You opened this quiz from your course as Student lu: your instructor sees your results there." in page
    for number in range(1, QUESTIONS + 1):
        answer(person, tool, number)
    results, _ = summary_form(person, tool, "retake")
    assert "A retake is your next attempt in the course." in results and "grade book" not in results


def test_two_courses_linking_the_quiz_keep_their_own_settings(tool, lms):
    strict = place(lms, tool, "course-strict", attempts="1", time_limit="30s")
    loose = place(lms, tool, "course-loose")
    assert loose == {"bank": "quiz", "score_policy": "best"}
    for context, custom in (("course-strict", strict), ("course-loose", loose)):
        person = requests.Session()
        launch(person, lms, student("cy", context, custom))
        for number in range(1, QUESTIONS + 1):
            answer(person, tool, number)
    again_strict = launch(requests.Session(), lms, student("cy", "course-strict", strict))
    assert again_strict.status_code == 403 and "allows 1 attempt" in again_strict.text
    again_loose = requests.Session()
    opened = launch(again_loose, lms, student("cy", "course-loose", loose))
    assert opened.status_code == 200 and "You may start 3 attempts at this quiz; 2 used." in opened.text
    assert "Each attempt has" not in opened.text  # the bank has no time limit; only course-strict's link does
    assert "Time limit" not in again_loose.get(f"{tool.url}/quiz/quiz/q1").text


def test_the_links_time_limit_shows_and_is_enforced(tool, lms):
    custom = place(lms, tool, "course-timed", time_limit="1m")
    person = requests.Session()
    launch(person, lms, student("dee", "course-timed", custom))
    assert "Time limit: answer by" in person.get(f"{tool.url}/quiz/quiz/q1").text
    assert answer(person, tool, 1).status_code == 200
    token = form_token(person, tool, 2)  # the next question is open on the screen while the time runs out
    attempt = latest_attempt(tool, "course-timed", "dee")
    with tool.app.app_context(), db.engine().begin() as connection:  # as if the minute had passed
        connection.execute(update(db.attempts).where(db.attempts.c.id == attempt.id).values(
            started_at=db.now() - timedelta(minutes=2)))
    late = send(person, tool, 2, token)
    assert late.status_code == 409 and "The time limit of 1 minute ended" in late.text
    api = requests.get(f"{tool.url}/api/banks/quiz/attempts/{attempt.id}").json()  # the JSON API alike
    assert api["finished"] is True and api["deadline"] is not None and api["score"] == 1.0
    assert lms.score_of("course-timed", "Quiz link placed", "dee", 1.0)


def test_the_start_page_notes_show_the_links_settings(tool, lms):
    custom = place(lms, tool, "course-notes", attempts="1", time_limit="1m", closes="2099-03-02T09:00Z")
    opened = launch(requests.Session(), lms, student("hu", "course-notes", custom))
    assert "You may start 1 attempt at this quiz; 1 used." in opened.text  # the bank's own: 3
    assert "Each attempt has 1 minute, counted on the server" in opened.text  # the bank has none
    assert "Answers are accepted until 2099-03-02 09:00 UTC." in opened.text


def test_the_links_shuffle_and_window_apply(tool, lms):
    custom = place(lms, tool, "course-shuffled", shuffle_questions="true")
    person = requests.Session()
    launch(person, lms, student("eve", "course-shuffled", custom))
    attempt = latest_attempt(tool, "course-shuffled", "eve")
    order = [q["id"] for q in requests.get(f"{tool.url}/api/banks/quiz/attempts/{attempt.id}").json()["questions"]]
    expected = sorted((f"q{n}" for n in range(1, QUESTIONS + 1)),
                      key=lambda q: hashlib.sha256(f"{attempt.seed}:questions:{q}".encode()).digest())
    assert order == expected
    page = person.get(f"{tool.url}/quiz/quiz/").text
    assert re.findall(r"/quiz/quiz/(q\d)\"", page)[-QUESTIONS:] == expected  # the start page's list

    later = place(lms, tool, "course-later", opens="2099-01-01T09:00+01:00")
    refused = launch(requests.Session(), lms, student("eve", "course-later", later))
    assert refused.status_code == 403 and "opens at 2099-01-01 09:00 UTC+01:00" in refused.text


@pytest.mark.parametrize("custom, words", [
    ({"attempts": "many"}, "custom parameter attempts is refused: expected a whole number, got &#39;many&#39;"),
    ({"time_limit": "2 days"}, "custom parameter time_limit is refused: expected a duration like 20m"),
    ({"shuffle_options": "yes"}, "custom parameter shuffle_options is refused: expected a boolean"),
    ({"closes": "2026-03-02"}, "custom parameter closes is refused: &#39;2026-03-02&#39; has no time zone"),
], ids=["attempts", "time_limit", "shuffle", "closes"])
def test_a_bad_hand_made_custom_parameter_is_a_400_that_names_it(tool, lms, custom, words):
    refused = launch(requests.Session(), lms, student("fay", "course-hand", {"bank": "quiz", **custom}, link="hand"))
    assert refused.status_code == 400 and words in refused.text, refused.text[-1500:]


def test_a_learner_cannot_change_or_set_the_settings(tool, lms):
    custom = place(lms, tool, "course-signed", attempts="1")

    def with_more_attempts(token):
        header, _, signature = _segments(token)
        claims = _payload(token)
        claims["https://purl.imsglobal.org/spec/lti/claim/custom"]["attempts"] = "100"
        return ".".join([header, _b64(claims), signature])

    refused = launch(requests.Session(), lms, student("gus", "course-signed", custom), tamper=with_more_attempts)
    assert refused.status_code == 400 and "Signature verification failed" in refused.text
    person = requests.Session()  # a learner posting the settings form: no deep-linking launch of theirs
    launch(person, lms, student("gus", "course-signed", custom))
    token = re.search(r'name="csrf_token" value="([^"]+)"', person.get(f"{tool.url}/quiz/quiz/q1").text).group(1)
    forged = person.post(f"{tool.url}/lti/deep-link", data={"csrf_token": token, "launch_id": "x", "bank": "quiz",
                                                            "step": "settings", "attempts": "100"})
    assert forged.status_code == 403 and "not started in this browser" in forged.text


def test_two_launches_of_one_learner_at_the_same_moment_start_one_attempt(tool, lms, monkeypatch):
    """Both launches count the learner's attempts before either starts one (a barrier holds each after its count),
    so both try to start attempt 1: the database lets one, and the other resumes it. Before, each started its
    own, and a one-attempt quiz gave two."""
    custom = place(lms, tool, "course-race", attempts="1")
    counted, barrier, calls, lock = store.user_attempts, threading.Barrier(2, timeout=20), [], threading.Lock()

    def count_then_wait(link_id, user_sub):
        attempts = counted(link_id, user_sub)
        with lock:
            calls.append(len(attempts))
            first_two = len(calls) <= 2
        if first_two:
            barrier.wait()  # both launches have counted before either writes
        return attempts

    monkeypatch.setattr(store, "user_attempts", count_then_wait)
    browsers = [requests.Session(), requests.Session()]
    opened = [None, None]

    def open_quiz(index):
        opened[index] = launch(browsers[index], lms, student("dan", "course-race", custom))

    threads = [threading.Thread(target=open_quiz, args=(index,)) for index in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    monkeypatch.undo()
    assert calls[:2] == [0, 0] and len(calls) == 3  # both counted none; the one refused counted again
    for page in opened:
        assert page.status_code == 200 and page.url == f"{tool.url}/quiz/quiz/", page.text[:300]
    with tool.app.app_context():
        platform = store.list_platforms()[0]
        found = store.find_link(platform.id, "deployment-1", "course-race", "placed")
        (attempt,) = store.user_attempts(found.id, "dan")
    assert answer(browsers[0], tool, 1).status_code == 200  # answered in one browser (the answer page) ...
    second = browsers[1].get(f"{tool.url}/quiz/quiz/q1", allow_redirects=False)  # ... is answered in the other
    assert second.status_code == 303 and second.headers["Location"].endswith("/quiz/quiz/q1/answer")
    with tool.app.app_context(), db.engine().connect() as connection:
        answered = connection.execute(text("SELECT attempt_id FROM tries")).scalars().all()
    assert attempt.id in answered


def test_a_new_attempt_is_numbered_past_the_highest_even_after_a_gap(tool, lms):
    """Numbers count from the highest, not the count: with attempt 1 gone (deleted by hand, say) and attempt 2
    finished, the next is 3; counting would pick 2 again and never get past the clash."""
    custom = place(lms, tool, "course-gap")
    assert launch(requests.Session(), lms, student("fay", "course-gap", custom)).status_code == 200
    first = latest_attempt(tool, "course-gap", "fay")
    with tool.app.app_context(), db.engine().begin() as connection:
        connection.execute(text("UPDATE lti_attempts SET attempt_number = 2 WHERE attempt_id = :id"), {"id": first.id})
        connection.execute(text("UPDATE attempts SET finished_at = started_at WHERE id = :id"), {"id": first.id})
    again = launch(requests.Session(), lms, student("fay", "course-gap", custom))
    assert again.status_code == 200 and again.url == f"{tool.url}/quiz/quiz/", again.text[:300]
    newest = latest_attempt(tool, "course-gap", "fay")
    assert newest.id != first.id and newest.attempt_number == 3


def _insert_a_link(connection) -> None:
    """Platform 1 and its link 1 (deployment d, course c, resource link r, bank quiz), in plain SQL."""
    connection.execute(text("INSERT INTO lti_platforms (issuer, client_id, auth_login_url, auth_token_url, "
                            "key_set_url, created_at) VALUES ('i', 'c', 'a', 't', 'k', '2026-01-01')"))
    connection.execute(text("INSERT INTO lti_links (platform_id, deployment_id, context_id, resource_link_id, "
                            "bank_id, score_policy) VALUES (1, 'd', 'c', 'r', 'quiz', 'best')"))


def test_a_database_from_before_attempt_numbers_gets_the_column_and_keeps_its_attempts(tmp_path):
    url = f"sqlite:///{tmp_path / 'old.sqlite3'}"
    config = {"TESTING": True, "SECRET_KEY": "x", "QUIZ_DIR": str(tmp_path), "DATABASE_URL": url}
    app = create_app(config)
    with app.app_context(), db.engine().begin() as connection:  # as the previous release made it
        connection.execute(text("DROP INDEX uq_lti_attempts_number"))
        connection.execute(text("ALTER TABLE lti_attempts DROP COLUMN attempt_number"))
        _insert_a_link(connection)
        for attempt_id in ("a" * 32, "b" * 32):  # two attempts of one learner, as a race could leave them
            connection.execute(text(f"INSERT INTO attempts (id, bank_id, seed, started_at) "
                                    f"VALUES ('{attempt_id}', 'quiz', 1, '2026-01-01')"))
            connection.execute(text(f"INSERT INTO lti_attempts (attempt_id, link_id, user_sub) "
                                    f"VALUES ('{attempt_id}', 1, 'u')"))
    app = create_app(config)  # starting migrates
    with app.app_context():
        assert "attempt_number" in {c["name"] for c in inspect(db.engine()).get_columns("lti_attempts")}
        assert len(store.user_attempts(1, "u")) == 2
        with db.engine().begin() as connection:
            connection.execute(text("INSERT INTO attempts (id, bank_id, seed, started_at) "
                                    "VALUES ('" + "c" * 32 + "', 'quiz', 1, '2026-01-02')"))
            store.owner(1, "u", None, 3)(connection, "c" * 32)
        with pytest.raises(IntegrityError), db.engine().begin() as connection:  # the number is unique now
            connection.execute(text("INSERT INTO attempts (id, bank_id, seed, started_at) "
                                    "VALUES ('" + "d" * 32 + "', 'quiz', 1, '2026-01-02')"))
            store.owner(1, "u", None, 3)(connection, "d" * 32)
        assert len(store.user_attempts(1, "u")) == 3


def test_a_database_from_before_link_settings_gets_the_column(tmp_path):
    url = f"sqlite:///{tmp_path / 'old.sqlite3'}"
    config = {"TESTING": True, "SECRET_KEY": "x", "QUIZ_DIR": str(tmp_path), "DATABASE_URL": url}
    app = create_app(config)
    with app.app_context(), db.engine().begin() as connection:
        connection.execute(text("ALTER TABLE lti_links DROP COLUMN settings"))  # as the previous release made it
        _insert_a_link(connection)
    app = create_app(config)  # starting migrates
    with app.app_context():
        assert "settings" in {c["name"] for c in inspect(db.engine()).get_columns("lti_links")}
        assert store.find_link(1, "d", "c", "r").settings == {}


def test_the_course_page_shows_each_links_settings(tool, lms):
    custom = place(lms, tool, "course-listed", attempts="1", time_limit="30s")
    launch(requests.Session(), lms, student("eli", "course-listed", custom))  # the link exists once launched
    teacher = requests.Session()
    page = launch(teacher, lms, PendingLaunch(user="teacher", roles=[INSTRUCTOR], context="course-listed",
                                              resource_link="placed", name="Teacher", custom=custom))
    assert page.status_code == 200 and "Quizzes in this course" in page.text, page.text[:500]
    row = " ".join(re.search(r"<tr><th scope=\"row\">Quiz link placed</th>(.*?)</tr>", page.text, re.S)
                   .group(1).split())
    assert "<td>1 <span class=\"meta\">(this link)</span></td>" in row
    assert "<td>30 s <span class=\"meta\">(this link)</span></td>" in row
    assert "<td>from the start</td>" in row and "<td>never</td>" in row and "<td>the best attempt</td>" in row
