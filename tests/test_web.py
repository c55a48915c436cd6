"""The quiz pages through Flask's test client: the flow, progress in the session, and bad input."""

from __future__ import annotations

import re

import pytest

from conftest import SEED_BANK, answer_via_form, csrf_token
from test_seed import EXPECTED


def _form_values(key):
    if key is True or key is False:
        return ["true" if key else "false"]
    return key if isinstance(key, list) else [key]


def test_home_lists_the_bank_with_title_description_and_count(client):
    html = client.get("/").get_data(as_text=True)
    assert "Deep learning: Attention and Transformers" in html
    assert "9 questions" in html
    assert "Nine questions on dot-product attention" in html
    assert f'href="/quiz/{SEED_BANK}/"' in html


def test_whole_quiz_with_full_marks_then_retake(client):
    for question_id, (key, _) in EXPECTED.items():
        response = answer_via_form(client, SEED_BANK, question_id, _form_values(key))
        assert response.status_code == 303
        assert response.location.endswith(f"/quiz/{SEED_BANK}/{question_id}/answer")
        page = client.get(response.location).get_data(as_text=True)
        assert '<h1 id="verdict">Correct</h1>' in page
        assert "Explanation" in page
    summary = client.get(f"/quiz/{SEED_BANK}/summary").get_data(as_text=True)
    assert "You scored <strong>9</strong> out of 9" in summary
    assert "(100%)" in summary
    retake = client.post(f"/quiz/{SEED_BANK}/retake", data={"csrf_token": csrf_token(summary)})
    assert retake.status_code == 303
    not_begun = client.get(f"/quiz/{SEED_BANK}/summary")  # the new attempt begins at its first question
    assert not_begun.status_code == 303 and not_begun.headers["Location"].endswith(f"/quiz/{SEED_BANK}/")
    start = client.get(not_begun.headers["Location"]).get_data(as_text=True)
    assert "Your new attempt at this quiz begins at its first question, so it has no results yet" in start


def test_wrong_answer_shows_right_answer_feedback_and_explanation(client):
    response = answer_via_form(client, SEED_BANK, "head-dimension", "64")
    page = client.get(response.location).get_data(as_text=True)
    assert '<h1 id="verdict">Not quite</h1>' in page
    assert "Score: 0 / 1" in page
    # The chosen wrong option and the right one are both marked, with their feedback.
    assert 'class="badge you">Your choice</span><span class="badge wrong">Incorrect' in page
    assert 'class="badge right">Correct answer</span>' in page
    assert "Four heads of 64 would concatenate to 256" in page
    assert "128 / 4 = 32 per head" in page
    assert "concatenating the" in page  # the explanation


def test_partial_credit_is_shown_as_partly_correct(client):
    response = answer_via_form(client, SEED_BANK, "transformer-advantages", ["long-range", "fewer-parameters"])
    page = client.get(response.location).get_data(as_text=True)
    # net_correct: (1 right - 1 wrong) / 2 correct = 0
    assert "Score: 0 / 1" in page
    response = answer_via_form(client, SEED_BANK, "qkv-projections", ["values", "keys"])
    page = client.get(response.location).get_data(as_text=True)
    assert '<h1 id="verdict">Partly correct</h1>' in page
    assert "Score: 0.67 / 1" in page


def test_double_submit_and_back_button_keep_the_first_answer(client):
    first = answer_via_form(client, SEED_BANK, "head-dimension", "32")
    assert first.status_code == 303
    # Back button: the question page now redirects to its answer.
    back = client.get(f"/quiz/{SEED_BANK}/head-dimension")
    assert back.status_code == 303 and back.location.endswith("/head-dimension/answer")
    # Replaying the POST (double submit) with a different answer changes nothing.
    token = csrf_token(client.get(f"/quiz/{SEED_BANK}/summary").get_data(as_text=True))
    again = client.post(f"/quiz/{SEED_BANK}/head-dimension", data={"csrf_token": token, "answer": "64"})
    assert again.status_code == 303
    page = client.get(again.location).get_data(as_text=True)
    assert '<h1 id="verdict">Correct</h1>' in page
    assert "1 answered" in page


def test_progress_bar_counts_answers(client):
    answer_via_form(client, SEED_BANK, "soft-dictionary-lookup", "true")
    page = client.get(f"/quiz/{SEED_BANK}/transformer-advantages").get_data(as_text=True)
    assert "Question 2 of 9 · 1 answered" in page
    assert '<progress id="quiz-progress" max="9" value="1">' in page


def test_answer_page_before_answering_redirects_to_the_question(client):
    response = client.get(f"/quiz/{SEED_BANK}/head-dimension/answer")
    assert response.status_code == 303 and response.location.endswith("/head-dimension")


@pytest.mark.parametrize("data, message", [
    ({}, "Choose an answer, then submit."),
    ({"answer": "999"}, "There is no option &#39;999&#39; in this question."),
    ({"answer": ["32", "64"]}, "Choose an answer, then submit."),
])
def test_tampered_form_is_a_400_that_says_what_to_fix(client, data, message):
    page = client.get(f"/quiz/{SEED_BANK}/head-dimension").get_data(as_text=True)
    response = client.post(f"/quiz/{SEED_BANK}/head-dimension", data={"csrf_token": csrf_token(page), **data})
    assert response.status_code == 400
    html = response.get_data(as_text=True)
    assert message in html
    assert 'role="alert"' in html and "Traceback" not in html
    # Nothing was recorded: the question can still be answered.
    assert client.get(f"/quiz/{SEED_BANK}/head-dimension").status_code == 200


def test_multiple_choice_with_nothing_selected_asks_for_a_selection(client):
    page = client.get(f"/quiz/{SEED_BANK}/qkv-projections").get_data(as_text=True)
    response = client.post(f"/quiz/{SEED_BANK}/qkv-projections", data={"csrf_token": csrf_token(page)})
    assert response.status_code == 400
    assert "Select at least one option" in response.get_data(as_text=True)


def test_form_post_without_csrf_token_is_refused_and_records_nothing(client):
    response = client.post(f"/quiz/{SEED_BANK}/head-dimension", data={"answer": "32"})
    assert response.status_code == 400
    assert "security token is missing" in response.get_data(as_text=True)
    assert client.get(f"/quiz/{SEED_BANK}/head-dimension").status_code == 200
    retake = client.post(f"/quiz/{SEED_BANK}/retake", data={})
    assert retake.status_code == 400


def test_oversized_form_is_refused_with_a_sentence(client):
    response = client.post(f"/quiz/{SEED_BANK}/head-dimension", data={"answer": "x" * 100_000})
    assert response.status_code == 413
    assert "too large" in response.get_data(as_text=True)


@pytest.mark.parametrize("url", [
    "/quiz/no-such-bank/", f"/quiz/{SEED_BANK}/no-such-question", f"/quiz/{SEED_BANK}/no-such-question/answer",
    "/quiz/no-such-bank/summary", "/nowhere",
])
def test_unknown_bank_or_question_is_an_html_404(client, url):
    response = client.get(url)
    assert response.status_code == 404
    assert response.mimetype == "text/html"
    assert "Back to the quizzes" in response.get_data(as_text=True)


def test_pages_send_security_headers(client):
    response = client.get("/")
    csp = response.headers["Content-Security-Policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp
    assert "frame-ancestors 'none'" in csp
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert response.headers["Referrer-Policy"] == "same-origin"


def test_every_control_has_a_label(client):
    for question_id in EXPECTED:
        html = client.get(f"/quiz/{SEED_BANK}/{question_id}").get_data(as_text=True)
        ids = re.findall(r'<input type="(?:radio|checkbox)"[^>]*id="([^"]+)"', html)
        assert ids
        for control in ids:
            assert f'<label for="{control}">' in html


def test_maths_is_rendered_server_side_as_mathml(client):
    html = client.get(f"/quiz/{SEED_BANK}/attention-complexity").get_data(as_text=True)
    assert "<math" in html and "$" not in html.split("<main", 1)[1]


def test_answer_and_summary_pages_render_the_options_feedback_and_explanation_as_markdown(client):
    response = answer_via_form(client, SEED_BANK, "attention-complexity", "nm-d-plus-l")
    main = client.get(response.location).get_data(as_text=True).split("<main", 1)[1]
    options = re.findall(r'<span class="option-text">(.*?)</span>\s*</div>', main, re.S)
    feedback = re.findall(r'<p class="option-feedback">(.*?)</p>', main, re.S)
    explanation = main.split('id="explanation-heading"', 1)[1]
    assert len(options) == 4 and len(feedback) == 4
    assert all("<math" in html for html in options + feedback + [explanation])
    assert "$" not in main
    summary = client.get(f"/quiz/{SEED_BANK}/summary").get_data(as_text=True).split("<main", 1)[1]
    assert "Your answer: <span class=\"math inline\"><math" in summary


def test_the_results_page_of_a_quiz_never_started_here_claims_no_score(client):
    """A fresh browser once read "You scored 0 out of 9 (0%)" with a retake button for a quiz it never began."""
    response = client.get(f"/quiz/{SEED_BANK}/summary")
    assert response.status_code == 303 and response.headers["Location"].endswith(f"/quiz/{SEED_BANK}/")
    page = client.get(response.headers["Location"]).get_data(as_text=True)
    assert "You have not started this quiz in this browser yet, so it has no results." in page
    assert "You scored" not in page
