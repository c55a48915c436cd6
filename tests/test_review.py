"""Issue 14's review page: every question with the student's answer, each option's feedback and the explanation,
"Missed" on the right options not picked, a link to each visual, scores per tag; and "Try the ones I missed", a new
attempt with only the wrong and partial questions that keeps the old one, while the whole retake still exists."""

from __future__ import annotations

import json
import re

from sqlalchemy import select

from app import db
from app.instructor import report
from conftest import csrf_token
from test_feedback_modes import BANK, EXPLANATION, make_app, send

FORM_ATTEMPT = re.compile(r'name="attempt" value="([0-9a-f]{32})"')


def review(client) -> str:
    return " ".join(client.get(f"/quiz/{BANK}/summary").get_data(as_text=True).split("<main", 1)[1].split())


def item(html: str, question_id: str) -> str:
    match = re.search(rf'<li class="review-item [^"]*" id="review-{question_id}">(.*?)</li> '
                      r'(?:<li class="review-item|</ol>)', html)
    assert match, f"no review item for {question_id}"
    return match.group(1)


def attempts(app):
    with app.extensions["db_engine"].connect() as connection:
        return connection.execute(select(db.attempts).order_by(db.attempts.c.started_at)).all()


def take(client, answers: dict):
    for question_id, value in answers.items():
        assert send(client, question_id, value).status_code == 303


MIXED = {"heads": "a", "projections": ["q"], "scale": "64"}  # right, partial (net_correct 1/2), wrong


def test_the_review_shows_answers_feedback_explanations_missed_badges_visual_links_and_tag_scores(tmp_path):
    app = make_app(tmp_path)
    client = app.test_client()
    take(client, MIXED)
    html = review(client)
    assert "You scored <strong>1.5</strong> out of 3 (50%)" in html
    projections = item(html, "projections")
    assert "0.5 / 1" in projections and "Your answer: Queries" in projections
    # Every option with its feedback; the right option not picked says so.
    for feedback in ("Q is X times W_Q.", "K is X times W_K.", "The embeddings are the input itself."):
        assert feedback in projections
    assert re.search(r'<span class="badge wrong">Missed</span><span class="badge right">Correct answer</span>'
                     r'</span> <span class="option-text">Keys</span>', projections)
    assert projections.count("Missed") == 1  # not on the picked right option, nor on the wrong one
    assert "Queries, keys and values are projections." in projections  # the explanation
    heads = item(html, "heads")
    assert "Missed" not in heads and EXPLANATION in heads and "Right: 128 / 4 = 32." in heads
    assert f'<a href="/quiz/{BANK}/heads/answer#visual">See the visual of question 1</a>' in heads
    assert "See the visual" not in projections  # it has none
    scale = item(html, "scale")
    assert "0 / 1" in scale and "By the square root of 64, which is 8." in scale
    assert "<dt>Your answer</dt><dd>64</dd> <dt>Correct answer</dt><dd>8" in scale
    # Scores per tag: shapes = heads 1 + scale 0 over 2; attention = projections 0.5 + scale 0 over 2.
    assert '<li id="tag-shapes"><span class="tag">shapes</span> 1 / 2 (50%)</li>' in html
    assert '<li id="tag-attention"><span class="tag">attention</span> 0.5 / 2 (25%)</li>' in html
    assert "Try the 2 I missed" in html and "Retake the quiz" in html


def test_trying_the_missed_ones_makes_a_new_attempt_of_only_those_and_keeps_the_old_one(tmp_path):
    app = make_app(tmp_path)
    client = app.test_client()
    take(client, MIXED)
    html = review(client)
    old_id = FORM_ATTEMPT.search(html).group(1)
    response = client.post(f"/quiz/{BANK}/retake-missed", data={"csrf_token": csrf_token(html), "attempt": old_id})
    assert response.status_code == 303 and response.location.endswith(f"/quiz/{BANK}/projections")
    old, new = attempts(app)
    assert old.id == old_id and old.finished_at is not None and old.total_score == 1.5 and old.max_score == 3
    assert json.loads(new.question_ids) == ["projections", "scale"] and new.finished_at is None
    assert new.display_name == old.display_name
    # The new attempt knows its subset: two questions, counted from 1, and nothing else may be opened.
    page = client.get(response.location).get_data(as_text=True)
    assert "Question 1 of 2 · 0 answered" in page
    outside = client.get(f"/quiz/{BANK}/heads")
    assert outside.status_code == 404 and "is not part of this attempt" in outside.get_data(as_text=True)
    # The old results page's "See the visual of question 1", left open: the page links to the answer's review.
    old_link = client.get(f"/quiz/{BANK}/heads/answer")
    assert old_link.status_code == 404
    assert (f'<a class="button primary" href="/quiz/{BANK}/attempts/{old_id}">Review your answer in your earlier '
            'attempt</a>' in old_link.get_data(as_text=True))
    assert send(client, "projections", ["q", "k"]).location.endswith("/projections/answer")
    assert send(client, "scale", "8").status_code == 303
    old, new = attempts(app)
    assert new.finished_at is not None and (new.total_score, new.max_score) == (2.0, 2)
    html = review(client)
    assert "You scored <strong>2</strong> out of 2 (100%)" in html and "only the 2 questions you missed" in html
    assert "Try the" not in html  # nothing left to miss
    # The home and start pages count the retry's questions, and say what it is (the home page said "3 questions ·
    # 2 answered" for a finished retry of 2).
    home = " ".join(client.get("/").get_data(as_text=True).split())
    assert "3 questions · retrying the 2 you missed: 2 answered" in home
    start = " ".join(client.get(f"/quiz/{BANK}/").get_data(as_text=True).split())
    assert ("2 questions · 2 answered (this attempt has only the ones you missed before; your earlier attempts are "
            "listed below)") in start
    # The instructor still sees both attempts: the retake on its own line, while the attempt counts, scores and
    # discrimination stay those of whole attempts.
    with app.app_context():
        bank = app.extensions["banks"].get(BANK)
        summary = report.bank_report(app.extensions["db_engine"], bank)
    assert (summary.started, summary.finished, summary.missed_only) == (1, 1, 1)
    assert summary.mean_fraction == 0.5
    assert [q.responses for q in summary.questions] == [1, 2, 2]


def test_the_whole_retake_still_starts_over_with_every_question(tmp_path):
    app = make_app(tmp_path)
    client = app.test_client()
    take(client, MIXED)
    html = review(client)
    response = client.post(f"/quiz/{BANK}/retake", data={"csrf_token": csrf_token(html)})
    assert response.location.endswith(f"/quiz/{BANK}/heads")
    assert "Question 1 of 3 · 0 answered" in client.get(response.location).get_data(as_text=True)
    assert [a.question_ids for a in attempts(app)] == [None, None]


def test_a_tampered_or_stale_attempt_id_is_a_400_and_starts_nothing(tmp_path):
    app = make_app(tmp_path)
    client, other = app.test_client(), app.test_client()
    take(client, MIXED)
    take(other, MIXED)
    others_id = FORM_ATTEMPT.search(review(other)).group(1)
    html = review(client)
    for forged in (others_id, "0" * 32, ""):
        response = client.post(f"/quiz/{BANK}/retake-missed", data={"csrf_token": csrf_token(html), "attempt": forged})
        assert response.status_code == 400
        assert "These results are not those of your current attempt" in response.get_data(as_text=True)
    assert len(attempts(app)) == 2


def test_nothing_to_retry_and_a_deferred_attempt_not_finished_are_400s(tmp_path):
    app = make_app(tmp_path)
    client = app.test_client()
    take(client, {"heads": "a", "projections": ["q", "k"], "scale": "8"})
    html = review(client)
    assert "Try the" not in html
    response = client.post(f"/quiz/{BANK}/retake-missed",
                           data={"csrf_token": csrf_token(html), "attempt": attempts(app)[0].id})
    assert response.status_code == 400 and "There is nothing to retry" in response.get_data(as_text=True)

    deferred = make_app(tmp_path / "deferred", "feedback: deferred")
    student = deferred.test_client()
    take(student, {"heads": "b"})
    page = review(student)
    assert "retake-missed" not in page
    attempt_id = attempts(deferred)[0].id
    response = student.post(f"/quiz/{BANK}/retake-missed", data={"csrf_token": csrf_token(page), "attempt": attempt_id})
    assert response.status_code == 400 and "finish the quiz first" in response.get_data(as_text=True)
