"""The instructor's list of attempts and the review of one attempt: who, when, the score, each question's variant,
every try with its own score and misconception, the final answer against the key, in any feedback mode."""

from __future__ import annotations

import html as html_module
import re

import pytest

from app import db
from app.instructor import report
from test_feedback_modes import TRY_AGAIN, make_app, send
from test_instructor import app, classroom, quiz_dir  # noqa: F401 (the fixtures: the mini bank, its class)
from test_instructor import BANK, FINISHERS, PASSWORD_HASH, attempt_id, cells, sign_in


def text(response) -> str:
    """The page's main element as text: tags dropped, whitespace runs collapsed."""
    html = response.get_data(as_text=True).split("<main", 1)[1].split(">", 1)[1].split("</main>", 1)[0]
    return html_module.unescape(" ".join(re.sub(r"<[^>]+>", " ", html).split()))


@pytest.fixture
def instructor(app):
    client = app.test_client()
    sign_in(client)
    return client


def test_the_list_has_every_attempt_newest_first_with_its_name_status_score_and_review_link(classroom, app,
                                                                                         instructor):
    ids = [attempt_id(student) for student in classroom]
    page = instructor.get(f"/instructor/banks/{BANK}/attempts")
    assert page.status_code == 200
    html = page.get_data(as_text=True)
    listed = re.findall(r'<tr id="attempt-([0-9a-f]+)">', html)
    assert len(listed) == 7 == len(set(listed)) and set(ids) < set(listed)
    first = cells(html, f"attempt-{ids[0]}")
    assert first[0].startswith("=cmd()")  # the typed name, escaped by Jinja: text, not markup
    assert first[2:4] == ["finished", "4 / 4"]
    assert f'href="/instructor/banks/{BANK}/attempts/{ids[0]}"' in html
    unfinished = next(i for i in listed if i not in ids)
    row = cells(html, f"attempt-{unfinished}")
    assert row[0].startswith("Anonymous") and row[2:5] == ["in progress", "–", "–"]
    # The bank's report links to the list.
    assert f'href="/instructor/banks/{BANK}/attempts"' in instructor.get(f"/instructor/banks/{BANK}").get_data(
        as_text=True)


def test_the_list_pages_through_attempts_and_refuses_a_bad_page_number(classroom, app, instructor):
    with app.app_context():
        engine = app.extensions["db_engine"]
        pages = [report.attempt_page(engine, BANK, number, per_page=3) for number in (1, 2, 3)]
        assert [p.pages for p in pages] == [3, 3, 3] and [p.total for p in pages] == [7, 7, 7]
        ids = [row.id for p in pages for row in p.rows]
        assert len(ids) == 7 == len(set(ids))  # every attempt once, newest first
        starts = [row.started for p in pages for row in p.rows]
        assert starts == sorted(starts, reverse=True)
        assert report.attempt_page(engine, BANK, 99, per_page=3).page == 3  # past the end: the last page
    assert instructor.get(f"/instructor/banks/{BANK}/attempts?page=99").status_code == 200
    for bad in ("0", "abc", "-1", "1e3", "９"):
        response = instructor.get(f"/instructor/banks/{BANK}/attempts?page={bad}")
        assert response.status_code == 400, bad
        assert "page number must be a whole number" in response.get_data(as_text=True)


def test_an_attempts_review_shows_each_answer_against_the_key_in_the_instructors_words(classroom, app,
                                                                                       instructor):
    # The third finisher: true (right), b (wrong), x and z (net 0), 8 (right).
    answers, scores = FINISHERS[2]
    page = instructor.get(f"/instructor/banks/{BANK}/attempts/{attempt_id(classroom[2])}")
    assert page.status_code == 200
    html, words = page.get_data(as_text=True), text(page)
    assert words.startswith("Instructor dashboard › Mini attention quiz › Attempts An anonymous student's attempt")
    assert "Score 2 / 4 (50%)" in words
    for number, (question_id, score) in enumerate(zip(("tf", "sc", "mc", "num"), scores), start=1):
        item = re.search(rf'<li class="review-item [^"]*" id="review-{question_id}">(.*?)</li>\s*(<li|</ol>)',
                         html, re.S)
        assert item, question_id
        assert re.search(rf'review-score">{score:g} / 1<', item.group(1)), (question_id, score)
        assert f"Question {number}" in item.group(1)
    # Their own words: never "your" (the partials the student's pages share say "your" there).
    assert "Their choice" in words and "Their answer" in words and "Your" not in words
    assert not re.search(r"\byou\b", words, re.I)
    assert "out of the 2 right options: 1 − 1 = 0" in words  # the net_correct sum of x and z
    assert re.search(r"Their answer 8 Correct answer 8", words)


def test_a_try_again_review_lists_every_try_with_its_own_score_and_misconception(tmp_path, request):
    app = make_app(tmp_path, TRY_AGAIN, INSTRUCTOR_PASSWORD_HASH=PASSWORD_HASH)
    request.addfinalizer(app.extensions["db_engine"].dispose)
    student = app.test_client()
    for value in ("64", "9", "8"):  # the no-sqrt slip, a plain miss, then right on the third try
        send(student, "scale", value)
    for value in ("b", "c", "b"):  # three wrong tries: closed with 0, and no try is the one that "stands"
        send(student, "heads", value)
    with student.session_transaction() as session:
        attempt = session["attempts"]["modes"]
    instructor = app.test_client()
    sign_in(instructor)
    page = instructor.get(f"/instructor/banks/modes/attempts/{attempt}")
    html = page.get_data(as_text=True)
    rows = re.findall(r"<tr><th scope=\"row\">(.*?)</tr>", html.split('id="tries-scale-caption"', 1)[1], re.S)
    flat = [" ".join(re.sub(r"<[^>]+>", " ", row).split()) for row in rows[:3]]
    assert flat == ["1 64 0 no-sqrt", "2 9 0", "3 (stands) 8 1"]
    # The score recorded is the third try's times its penalty factor; the other questions are not answered.
    assert re.search(r'id="review-scale">\s*<div class="review-head">\s*<span class="review-score">0.25 / 1<', html)
    heads = html.split('id="review-heads"', 1)[1].split("</li>", 1)[0]
    assert 'review-score">0 / 1<' in heads and "(stands)" not in heads
    assert "Misconception" not in heads  # a question without misconceptions has no such column
    assert re.search(r'id="review-projections">\s*<div class="review-head">\s*<span class="review-score">not '
                     r'answered<', html)
    assert "Score 0.25 so far, of 3" in text(page)


def test_an_open_question_of_a_try_again_attempt_shows_its_tries_and_no_key_yet(tmp_path, request):
    app = make_app(tmp_path, TRY_AGAIN, INSTRUCTOR_PASSWORD_HASH=PASSWORD_HASH)
    request.addfinalizer(app.extensions["db_engine"].dispose)
    student = app.test_client()
    send(student, "heads", "b")  # one wrong try of three: the question is still open
    with student.session_transaction() as session:
        attempt = session["attempts"]["modes"]
    instructor = app.test_client()
    sign_in(instructor)
    html = instructor.get(f"/instructor/banks/modes/attempts/{attempt}").get_data(as_text=True)
    item = html.split('id="review-heads"', 1)[1].split("</li>", 1)[0]
    assert 'review-score">open<' in item
    assert "Tries at question 1" in item and "64" in item
    assert "Correct answer" not in item  # no final answer yet, so nothing to set against the key


def test_a_deferred_attempt_shows_the_instructor_the_key_before_the_student_finishes(tmp_path, request):
    app = make_app(tmp_path, "feedback: deferred", INSTRUCTOR_PASSWORD_HASH=PASSWORD_HASH)
    request.addfinalizer(app.extensions["db_engine"].dispose)
    student = app.test_client()
    send(student, "heads", "b", try_number=None)
    with student.session_transaction() as session:
        attempt = session["attempts"]["modes"]
    assert "Correct answer" not in student.get("/quiz/modes/summary").get_data(as_text=True)
    instructor = app.test_client()
    sign_in(instructor)
    words = text(instructor.get(f"/instructor/banks/modes/attempts/{attempt}"))
    assert "Their choice" in words and "Correct answer" in words and "Status in progress" in words


def test_an_unknown_attempt_or_another_banks_is_a_404_and_students_get_no_review(classroom, app, instructor,
                                                                                 tmp_path):
    assert instructor.get(f"/instructor/banks/{BANK}/attempts/{'0' * 32}").status_code == 404
    assert instructor.get(f"/instructor/banks/{BANK}/attempts/{'x' * 5000}").status_code == 404
    assert instructor.get(f"/instructor/banks/nope/attempts/{attempt_id(classroom[0])}").status_code == 404
    with app.app_context():  # an attempt at another bank, under this bank's URL
        db.start_attempt("a" * 32, "other-bank", 0)
    assert instructor.get(f"/instructor/banks/{BANK}/attempts/{'a' * 32}").status_code == 404
    student = classroom[0]
    assert student.get(f"/instructor/banks/{BANK}/attempts/{attempt_id(student)}").status_code == 303
    assert student.get(f"/instructor/banks/{BANK}/attempts").status_code == 303


def test_an_lms_attempt_is_listed_under_the_name_the_lms_sent_and_its_user_id(classroom, app, instructor):
    from sqlalchemy import insert

    from app.lti import store

    attempt = attempt_id(classroom[0])  # whose typed name is "=cmd()": the LMS's name wins
    with app.app_context(), app.extensions["db_engine"].begin() as connection:
        platform = connection.execute(insert(store.platforms).values(
            issuer="https://lms.example", client_id="tool", auth_login_url="https://lms.example/login",
            auth_token_url="https://lms.example/token", key_set_url="https://lms.example/keys",
            created_at=db.now())).inserted_primary_key[0]
        link = connection.execute(insert(store.links).values(
            platform_id=platform, deployment_id="1", context_id="course", resource_link_id="quiz",
            bank_id=BANK)).inserted_primary_key[0]
        connection.execute(insert(store.attempt_users).values(attempt_id=attempt, link_id=link, user_sub="moodle-7",
                                                              user_name="Ada <Lovelace>", attempt_number=1))
    html = instructor.get(f"/instructor/banks/{BANK}/attempts").get_data(as_text=True)
    assert cells(html, f"attempt-{attempt}")[0].startswith("Ada &lt;Lovelace&gt;")  # escaped: text, not markup
    words = text(instructor.get(f"/instructor/banks/{BANK}/attempts/{attempt}"))
    assert "Ada <Lovelace>'s attempt" in words and "LMS user moodle-7" in words
