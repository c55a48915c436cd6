"""The JSON API: listing without the key, grading, and a clear 4xx for every bad call."""

from __future__ import annotations

import json

import pytest

from conftest import SEED_BANK
from test_seed import EXPECTED

GRADE = "/api/banks/{bank}/questions/{question}/grade"


def test_list_banks(client):
    data = client.get("/api/banks").get_json()
    seed = next(b for b in data["banks"] if b["id"] == SEED_BANK)
    assert seed["question_count"] == 9
    assert {b["id"] for b in data["banks"]} == {SEED_BANK, "attention-practice", "real-attention-heads",
                                                "attention-drill"}


def test_bank_and_question_never_reveal_the_key(client):
    bank = client.get(f"/api/banks/{SEED_BANK}").get_json()
    assert [q["id"] for q in bank["questions"]] == list(EXPECTED)
    text = json.dumps(bank)
    assert '"correct"' not in text and "feedback" not in text and "explanation" not in text
    question = client.get(f"/api/banks/{SEED_BANK}/questions/head-dimension").get_json()
    assert question["type"] == "single_choice"
    assert [o["id"] for o in question["options"]] == ["32", "64", "128", "512"]
    assert "correct" not in json.dumps(question)


@pytest.mark.parametrize("question_id", list(EXPECTED))
def test_grading_the_key_scores_one(client, question_id):
    key = EXPECTED[question_id][0]
    response = client.post(GRADE.format(bank=SEED_BANK, question=question_id), json={"answer": key})
    assert response.status_code == 200
    body = response.get_json()
    assert body["correct"] is True and body["score"] == 1.0
    assert body["correct_answer"] == key
    assert body["explanation_html"].startswith("<p>")
    assert set(body) >= {"correct", "score", "correct_answer", "feedback", "explanation_html"}


def test_grading_a_wrong_answer(client):
    body = client.post(GRADE.format(bank=SEED_BANK, question="soft-dictionary-lookup"), json={"answer": False}).get_json()
    assert body == {**body, "correct": False, "score": 0.0, "correct_answer": True}
    chosen = [f for f in body["feedback"] if f["selected"]]
    assert [f["option"] for f in chosen] == ["false"]


@pytest.mark.parametrize("question_id, payload, message", [
    ("head-dimension", {"answer": "33"}, "There is no option '33' in this question."),
    ("head-dimension", {"answer": 32}, "An option id must be a string"),
    ("head-dimension", {}, "The answer is missing"),
    ("head-dimension", {"answer": None}, "The answer is missing"),
    ("head-dimension", {"answer": "32", "extra": 1}, "Unknown field(s) 'extra'"),
    ("head-dimension", [1, 2], "The body must be a JSON object"),
    ("soft-dictionary-lookup", {"answer": "true"}, "answer with true or false"),
    ("transformer-advantages", {"answer": "long-range"}, "answer with a list of option ids"),
    ("transformer-advantages", {"answer": ["hardware", "hardware"]}, "Each option may be chosen only once."),
])
def test_bad_answers_get_400_with_a_sentence(client, question_id, payload, message):
    response = client.post(GRADE.format(bank=SEED_BANK, question=question_id), json=payload)
    assert response.status_code == 400
    assert message in response.get_json()["error"]["message"]


def test_non_json_body_is_415_and_broken_json_is_400(client):
    url = GRADE.format(bank=SEED_BANK, question="head-dimension")
    form = client.post(url, data={"answer": "32"})
    assert form.status_code == 415
    assert "application/json" in form.get_json()["error"]["message"]
    broken = client.post(url, data="{not json", content_type="application/json")
    assert broken.status_code == 400
    assert "not valid JSON" in broken.get_json()["error"]["message"]


@pytest.mark.parametrize("headers, content_type", [
    ({}, "text/plain"),  # what a cross-site form, or fetch in no-cors mode with a text body, sends
    ({}, "application/x-www-form-urlencoded"),
    ({"Sec-Fetch-Site": "cross-site"}, None),  # a modern browser on another site's page, with no body at all
    ({"Sec-Fetch-Site": "same-site"}, "application/json"),
])
def test_another_sites_page_cannot_start_attempts_in_its_visitors_browsers(client, headers, content_type):
    """The API takes no CSRF token; an empty body of any content type once started an attempt (201), which any
    web page could make its visitors' browsers do, spending their school's address budget."""
    url = f"/api/banks/{SEED_BANK}/attempts"
    refused = client.post(url, headers=headers, **({"content_type": content_type} if content_type else {}))
    assert refused.status_code in (403, 415), refused.status_code
    assert refused.get_json()["error"]["message"]
    answer = client.post(GRADE.format(bank=SEED_BANK, question="head-dimension"), json={"answer": "32"},
                         headers=headers)
    assert answer.status_code == (403 if headers else 200)


@pytest.mark.parametrize("headers", [{}, {"Sec-Fetch-Site": "same-origin"}, {"Sec-Fetch-Site": "none"}])
def test_scripts_and_this_sites_pages_still_start_attempts(client, headers):
    url = f"/api/banks/{SEED_BANK}/attempts"
    assert client.post(url, headers=headers).status_code == 201  # no body, no content type
    assert client.post(url, json={}, headers=headers).status_code == 201
    assert client.post(url, data=b"", content_type="application/json", headers=headers).status_code == 201


def test_oversized_body_is_refused_with_json(client):
    url = GRADE.format(bank=SEED_BANK, question="head-dimension")
    response = client.post(url, data=json.dumps({"answer": "x" * 200_000}), content_type="application/json")
    assert response.status_code == 413
    assert "too large" in response.get_json()["error"]["message"]


@pytest.mark.parametrize("url", [
    "/api/banks/nope", f"/api/banks/{SEED_BANK}/questions/nope", "/api/nothing-here",
])
def test_unknown_things_are_json_404s(client, url):
    response = client.get(url)
    assert response.status_code == 404
    assert response.get_json()["error"]["status"] == 404


def test_unknown_question_grade_is_json_404(client):
    response = client.post(GRADE.format(bank=SEED_BANK, question="nope"), json={"answer": "x"})
    assert response.status_code == 404 and response.is_json


def test_api_is_exempt_from_csrf_but_requires_json(client):
    response = client.post(GRADE.format(bank=SEED_BANK, question="head-dimension"), json={"answer": "32"})
    assert response.status_code == 200


def test_a_grade_is_sent_with_its_fields_in_order_and_its_markdown_rendered():
    from app.grading import grade
    from app.web.api import grade_json
    from test_grading import SINGLE

    body = grade_json(grade(SINGLE, "128"), SINGLE)
    assert list(body) == ["correct", "score", "key_changed", "answer", "correct_answer", "feedback",
                          "explanation_html", "misconception", "visual"]
    assert body["misconception"] is None and body["visual"] is None  # a choice question without a figure
    assert body["key_changed"] is False  # graded now, so nothing was recorded under another key
    assert body["feedback"] == [
        {"option": "32", "selected": False, "correct": True, "feedback_html": "Right."},
        {"option": "64", "selected": False, "correct": False, "feedback_html": None},
        {"option": "128", "selected": True, "correct": False, "feedback_html": None},
    ]
    assert body["explanation_html"].startswith("<p>") and "<math" in body["explanation_html"]  # $...$ as MathML


def test_a_questions_visual_comes_with_its_grade_never_before(client):
    """A prediction's figure is its answer, so no question listing names the visual; the grade does."""
    listed = client.get("/api/banks/attention-practice").get_json()["questions"]
    assert all("visual" not in question for question in listed)
    predict = next(q for q in listed if q["id"] == "predict-soft-lookup")
    attempt = client.post("/api/banks/attention-practice/attempts").get_json()
    assert all("visual" not in q and q["result"] is None for q in attempt["questions"])
    assert predict["type"] == "cells"
    answered = client.post(f"/api/banks/attention-practice/attempts/{attempt['attempt']}/questions/"
                           "predict-soft-lookup/answer", json={"answer": [[0, 0]]}).get_json()
    assert answered["grade"]["visual"]["kind"] == "soft-lookup"


@pytest.mark.parametrize("seed", ["-1", "abc", "", "²", "1" * 5000, "2147483648"])
def test_a_bad_seed_in_the_query_is_a_400_that_gives_the_range(client, seed):
    response = client.get("/api/banks/attention-practice/questions/head-dimension-variant", query_string={"seed": seed})
    assert response.status_code == 400
    assert response.get_json()["error"]["message"].startswith("seed must be a whole number from 0 to 2147483647; got ")
