"""What a student is told at an attempt's edges: a bank edited while the attempt is under way (a question removed,
added, changed, or its key fixed), a time limit that ran out, a second tab, the best of several tries, and the
numbers and hints the pages write. Each case once made the pages contradict the stored score or give a hint away."""

from __future__ import annotations

import re

import pytest

from app import create_app
from app.paths import resource_dir
from conftest import answer_via_form, csrf_token, retake_fields
from app.web.formats import number, percent, score
from test_feedback_modes import (BANK, MODES_BANK, TRY_AGAIN, main, make_app, post_again, send, stored_responses,
                                 stored_tries)


def reopen(tmp_path, client, bank_text: str):
    """The bank file rewritten and the app started again on it (as a deploy would), the student's cookie kept."""
    folder = tmp_path / "quizzes"
    (folder / f"{BANK}.yaml").write_text(bank_text)
    app = create_app({"TESTING": True, "SECRET_KEY": "test-secret-key", "QUIZ_DIR": str(folder),
                      "DATABASE_URL": f"sqlite:///{tmp_path / 'modes.sqlite3'}"})  # as make_app, the file kept
    again = app.test_client()
    again.set_cookie("session", client.get_cookie("session").value)
    return app, again


def attempt_id(client, bank_id: str) -> str:
    with client.session_transaction() as session:
        return session["attempts"][bank_id]


def attempt_row(app, client):
    from sqlalchemy import select

    from app import db

    with app.extensions["db_engine"].connect() as connection:
        return connection.execute(select(db.attempts).where(db.attempts.c.id == attempt_id(client, BANK))).one()


def without(question_id: str, text: str) -> str:
    """The bank text without one question (each starts with '  - id:')."""
    head, *questions = text.split("  - id: ")
    return head + "".join("  - id: " + q for q in questions if not q.startswith(question_id + "\n"))


BANK_TEXT = MODES_BANK.format(header="")


def test_a_question_removed_mid_attempt_neither_finishes_it_early_nor_counts_in_its_total(tmp_path):
    app = make_app(tmp_path)
    student = app.test_client()
    assert send(student, "heads", "a").status_code == 303  # 1 point, then the question is taken out
    app, student = reopen(tmp_path, student, without("heads", BANK_TEXT))
    assert send(student, "projections", ["q", "k"]).status_code == 303
    assert attempt_row(app, student).finished_at is None  # 1 of its 2 questions answered, not 2 of 2
    assert send(student, "scale", "8").status_code == 303
    row = attempt_row(app, student)
    assert row.finished_at is not None and (row.total_score, row.max_score) == (2.0, 2)
    assert "You scored <strong>2</strong> out of 2 (100%)" in main(student.get(f"/quiz/{BANK}/summary"))


def test_a_question_added_after_an_attempt_started_is_not_in_it_and_a_retake_has_it(tmp_path):
    app = make_app(tmp_path)
    student, latecomer = app.test_client(), app.test_client()
    for question_id, value in (("heads", "a"), ("projections", ["q", "k"]), ("scale", "8")):
        assert send(student, question_id, value).status_code == 303
    assert send(latecomer, "heads", "a").status_code == 303  # started, not finished
    added = BANK_TEXT + """\
  - id: extra
    type: numeric
    prompt: How many heads?
    answer: 4
    explanation: Four.
"""
    app, student = reopen(tmp_path, student, added)
    page = student.get(f"/quiz/{BANK}/extra")
    assert page.status_code == 404
    assert "it is not among the questions the attempt began with (the quiz gained it" in main(page)
    late = post_again(student, "extra", "4", 1)
    assert late.status_code == 404 and len(stored_responses(app)) == 4
    assert (attempt_row(app, student).total_score, attempt_row(app, student).max_score) == (3.0, 3)
    # The finished attempt's results are those it was scored on (3 of 3), not 3 of the bank's 4 now.
    review = main(student.get(f"/quiz/{BANK}/summary"))
    assert "You scored <strong>3</strong> out of 3 (100%)" in review and "not answered" not in review
    assert "How many heads?" not in review
    # An attempt in progress keeps its three questions too: answering them finishes it.
    again = app.test_client()  # the latecomer, on the app as it is now
    again.set_cookie("session", latecomer.get_cookie("session").value)
    assert "Question 2 of 3 · 1 answered" in main(again.get(f"/quiz/{BANK}/projections"))
    assert send(again, "projections", ["q", "k"]).status_code == 303 and send(again, "scale", "8").status_code == 303
    assert attempt_row(app, again).finished_at is not None
    # A retake starts an attempt with every question the bank has now.
    retake = student.post(f"/quiz/{BANK}/retake", data={"csrf_token": csrf_token(student.get(f"/quiz/{BANK}/summary")
                                                                                      .get_data(as_text=True))})
    assert retake.status_code == 303
    assert "Question 4 of 4" in main(student.get(f"/quiz/{BANK}/extra"))


def test_a_key_fixed_after_an_answer_keeps_its_score_says_so_and_offers_no_retry(tmp_path):
    app = make_app(tmp_path)
    student = app.test_client()
    assert send(student, "heads", "a").status_code == 303  # right under the key as it was
    app, student = reopen(tmp_path, student, BANK_TEXT.replace('text: "32", correct: true', 'text: "32"')
                          .replace('text: "64", feedback', 'text: "64", correct: true, feedback'))
    review = main(student.get(f"/quiz/{BANK}/summary"))
    assert '<span class="review-score">1 / 1</span>' in review
    assert "The question's key has been changed since" in review
    assert "I missed" not in review  # a full score is nothing to retry
    shown = student.get(f"/api/banks/{BANK}/attempts/{attempt_id(student, BANK)}").get_json()
    result = shown["questions"][0]["result"]
    assert (result["score"], result["correct"], result["key_changed"], shown["score"]) == (1.0, False, True, 1.0)


def test_a_question_changed_so_that_the_answer_no_longer_fits_keeps_its_score_and_the_way_on(tmp_path):
    app = make_app(tmp_path)
    student = app.test_client()
    assert send(student, "heads", "b").status_code == 303  # 0 points, then option b is renamed
    app, student = reopen(tmp_path, student, BANK_TEXT.replace("{id: b,", "{id: b2,"))
    page = student.get(f"/quiz/{BANK}/heads/answer")
    assert page.status_code == 200
    text = main(page)
    assert "Question changed" in text and "its score (0 / 1) are kept for your instructor" in text
    assert f'href="/quiz/{BANK}/projections">Next question</a>' in text
    review = main(student.get(f"/quiz/{BANK}/summary"))
    assert "2 questions not answered yet; they count as 0." in review  # not 3: the changed one was answered
    assert "changed after you answered it" in review


def test_a_closed_attempt_says_what_was_left_unanswered_and_offers_it_with_the_missed(tmp_path):
    app = make_app(tmp_path, "time_limit: 20m")
    student = app.test_client()
    assert send(student, "heads", "b").status_code == 303  # wrong; then the time runs out
    from datetime import timedelta

    from sqlalchemy import update

    from app import db

    row = attempt_row(app, student)
    with app.extensions["db_engine"].begin() as connection:
        connection.execute(update(db.attempts).where(db.attempts.c.id == row.id)
                           .values(started_at=row.started_at - timedelta(minutes=21)))
    review = main(student.get(f"/quiz/{BANK}/summary"))
    assert "2 questions were not answered before the attempt closed; they count as 0." in review
    assert "Try the 3 I missed" in review


def test_another_tabs_stored_try_and_a_resubmit_each_say_the_answer_was_not_stored(tmp_path):
    app = make_app(tmp_path, TRY_AGAIN)
    first, second = app.test_client(), app.test_client()
    assert send(first, "heads", "b").status_code == 303
    second.set_cookie("session", first.get_cookie("session").value)
    stale = post_again(second, "heads", "a", 1)  # a tab still showing try 1
    assert stale.status_code == 303
    page = main(second.get(stale.location))
    assert "Try 1 at this question was already stored from another page" in page and "Try 2 of 3" in page
    assert [t.try_number for t in stored_tries(app)] == [1]
    immediate = make_app(tmp_path / "immediate")
    student = immediate.test_client()
    assert send(student, "heads", "b").status_code == 303
    again = post_again(student, "heads", "a", 1)
    assert "This question was already answered, so the answer just sent was not stored" in main(
        student.get(again.location))


def test_the_best_try_is_named_when_the_page_shows_a_later_one(tmp_path):
    app = make_app(tmp_path, TRY_AGAIN)
    student = app.test_client()
    for values in (["q"], ["e"], ["k", "e"]):  # 0.5 on try 1; 0 and 0 after the penalty
        send(student, "projections", values)
    page = main(student.get(f"/quiz/{BANK}/projections/answer"))
    assert "Score: 0.5 / 1" in page and "the best one stands: try 1's. Below is your last try" in page
    review = main(student.get(f"/quiz/{BANK}/summary"))
    assert "3 tries; the score is try 1's, the answer below your last" in review


def test_tries_that_all_scored_0_are_not_called_the_best(tmp_path):
    app = make_app(tmp_path, TRY_AGAIN)
    student = app.test_client()
    for values in (["e"], ["e", "q"], ["e", "k"]):  # wrong, net 0, net 0: the question closes at 0
        send(student, "projections", values)
    page = " ".join(main(student.get(f"/quiz/{BANK}/projections/answer")).split())
    assert "Score: 0 / 1 <span class=\"meta\">(3 tries, none of them right)" in page and "best one stands" not in page
    review = " ".join(main(student.get(f"/quiz/{BANK}/summary")).split())
    assert "3 tries, none of them right" in review and "the score is try" not in review


def test_a_hint_names_the_wrong_picks_never_which_picks_are_right(tmp_path):
    app = make_app(tmp_path, TRY_AGAIN)
    student = app.test_client()
    send(student, "projections", ["q", "e"])  # one right pick, one wrong (net 0): the question stays open
    page = main(student.get(f"/quiz/{BANK}/projections"))
    assert "Try 1: not quite.</strong> You chose:" in page and "The embeddings are the input itself." in page
    assert "Q is X times W_Q." not in page  # the right pick's feedback would say it is right
    hint = student.post(f"/api/banks/{BANK}/attempts/{attempt_id(student, BANK)}/questions/scale/answer",
                        json={"answer": 64}).get_json()["hint"]
    assert hint["misconception"]["id"] == "no-sqrt"
    api = student.post(f"/api/banks/{BANK}/attempts/{attempt_id(student, BANK)}/questions/projections/answer",
                       json={"answer": ["k", "e"]}).get_json()["hint"]
    assert [f["option"] for f in api["feedback"]] == ["e"]


def test_earlier_tries_at_a_cells_question_are_named_by_their_labels(tmp_path):
    from test_cells import CELLS_BANK

    folder = tmp_path / "banks"
    folder.mkdir()
    (folder / "cells.yaml").write_text(CELLS_BANK.replace("questions:\n", f"{TRY_AGAIN}\nquestions:\n", 1))
    app = create_app({"TESTING": True, "SECRET_KEY": "k", "QUIZ_DIR": str(folder),
                      "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}"})
    student = app.test_client()
    assert answer_via_form(student, "cells", "query-on", ["0,0", "0,4"]).status_code == 303
    page = main(student.get("/quiz/cells/query-on"))
    # The grid's columns are "the cat sat on the mat": the second "the" is named by its position.
    assert "You answered on → the (1); on → the (5)." in page and "[[0, 0]" not in page


def bundled_app(tmp_path):
    """The app on the bundled banks, with a database of its own."""
    return create_app({"TESTING": True, "SECRET_KEY": "k", "QUIZ_DIR": str(resource_dir("quizzes")),
                       "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}"})


@pytest.mark.parametrize("value, text", [(8388608.0, "8388608"), (3.0100001, "3.0100001"), (-2.5, "-2.5"),
                                         (1e-7, "1e-07"), (0.30000000000000004, "0.30000000000000004")])
def test_a_typed_number_is_shown_as_typed(value, text):
    assert number(value, exact=True) == text


def test_keys_show_six_figures_and_whole_numbers_in_full():
    assert [number(v) for v in (8388608.0, 0.30000000000000004, 2 / 3, 1e20)] == \
        ["8388608", "0.3", "0.666667", "1e+20"]


def test_scores_and_percentages_round_half_up():
    assert [score(v) for v in (0.125, 2.0, 0.5, 1 / 3, 0.675)] == ["0.13", "2", "0.5", "0.33", "0.68"]
    assert [percent(1, 8), percent(5, 8), percent(1, 3), percent(0, 0)] == ["13", "63", "33", "0"]
    assert percent(2.5, 4) == "63"


def test_the_report_labels_numbers_as_the_answer_pages_show_them():
    from app.instructor.report import value_label

    assert value_label(8388608.0) == "8388608"  # was 8.38861e+06
    assert value_label(2 / 3) == "0.666667"  # close answers still share one bar
    assert value_label([[1.0, 0.5], [2 / 3, 8388608]]) == "[1, 0.5; 0.666667, 8388608]"
    assert value_label("tampered") == '"tampered"'


def test_a_multiple_answer_question_says_how_it_is_scored_before_and_after(tmp_path):
    """One right and one wrong tick under net_correct scored 0 with nothing to say why."""
    app = bundled_app(tmp_path)
    student = app.test_client()
    question = main(student.get("/quiz/attention-transformers/transformer-advantages"))
    assert "Select all that apply. A wrong pick takes away as much as a right pick earns (never below 0)." in question
    assert answer_via_form(student, "attention-transformers", "transformer-advantages",
                           ["long-range", "fewer-parameters"]).status_code == 303
    page = " ".join(main(student.get("/quiz/attention-transformers/transformer-advantages/answer")).split())
    assert "Scored as right picks minus wrong picks, out of the 2 right options: 1 − 1 = 0." in page
    grid = main(student.get("/quiz/attention-practice/causal-mask-query-4"))
    assert "The point goes only to exactly the right cells." in grid
    assert answer_via_form(student, "attention-practice", "causal-mask-query-4", ["0,0", "0,1", "0,5"]).status_code == 303
    page = " ".join(main(student.get("/quiz/attention-practice/causal-mask-query-4/answer")).split())
    assert "Scored all or nothing: the point needs exactly the 4 right cells; you picked 2 of them and 1 other." in page


def test_a_numeric_tolerance_note_has_no_space_before_its_bracket(tmp_path):
    app = bundled_app(tmp_path)
    student = app.test_client()
    assert answer_via_form(student, "attention-practice", "scaled-score", ["5"]).status_code == 303
    page = main(student.get("/quiz/attention-practice/scaled-score/answer"))
    assert re.search(r"\(accepted within\s+±0\.01\)", page), page  # was "±0.01 )"


def test_a_numeric_answer_is_labelled_by_its_unit_and_shown_with_it_in_brackets(tmp_path):
    """The legend and the label both said "Your answer", and the answer page wrote "3 head number"."""
    app = bundled_app(tmp_path)
    student = app.test_client()
    page = main(student.get("/quiz/attention-practice/head-dimension-variant"))
    assert '<label class="numeric" for="answer-input">Features per head</label>' in page
    assert page.count("Your answer") == 1  # the legend
    assert answer_via_form(student, "attention-practice", "head-dimension-variant", ["7"]).status_code == 303
    result = main(student.get("/quiz/attention-practice/head-dimension-variant/answer"))
    assert "<dt>Your answer</dt><dd>7 (features per head)</dd>" in result
    unitless = main(student.get("/quiz/attention-practice/scaled-score"))
    assert '<label class="numeric visually-hidden" for="answer-input">Your answer</label>' in unitless


def test_a_wrong_try_that_matches_no_slip_gets_the_questions_hint(tmp_path):
    """A drill answer that was none of the listed slips got only "not quite", though the bank promises a hint."""
    app = bundled_app(tmp_path)
    student = app.test_client()
    assert answer_via_form(student, "attention-drill", "scaled-score-by-hand", ["5"]).status_code == 303
    page = " ".join(main(student.get("/quiz/attention-drill/scaled-score-by-hand")).split())
    assert "<strong>Hint:</strong> Work out" in page and "the width of one head, first" in page
    assert answer_via_form(student, "attention-drill", "scaled-score-by-hand", ["12"]).status_code == 303
    page = " ".join(main(student.get("/quiz/attention-drill/scaled-score-by-hand")).split())
    assert page.count("<strong>Hint:</strong>") == 1  # try 2 matched a slip: its own feedback, not the hint
    assert "That is the raw dot product." in page
    api = app.test_client()
    attempt = api.post("/api/banks/attention-drill/attempts", json={}).get_json()["attempt"]
    reply = api.post(f"/api/banks/attention-drill/attempts/{attempt}/questions/scaled-score-by-hand/answer",
                     json={"answer": 5}).get_json()
    assert reply["hint"]["misconception"] is None and "the width of one head" in reply["hint"]["hint_html"]
    slip = api.post(f"/api/banks/attention-drill/attempts/{attempt}/questions/scaled-score-by-hand/answer",
                    json={"answer": 12}).get_json()
    assert slip["hint"]["misconception"] is not None and slip["hint"]["hint_html"] is None


def test_retake_from_a_stale_results_tab_keeps_the_attempt_another_tab_started(tmp_path):
    app = make_app(tmp_path)
    student = app.test_client()
    assert send(student, "heads", "a").status_code == 303
    stale = retake_fields(student.get(f"/quiz/{BANK}/summary").get_data(as_text=True))  # tab A's results page
    assert student.post(f"/quiz/{BANK}/retake", data=stale).status_code == 303  # tab B retakes ...
    assert send(student, "heads", "a").status_code == 303  # ... and answers in the new attempt
    newer = attempt_id(student, BANK)
    refused = student.post(f"/quiz/{BANK}/retake", data=stale)  # tab A's Retake button, later
    assert refused.status_code == 400
    assert "You have an unfinished attempt at this quiz that these results are not from" in main(refused)
    assert attempt_id(student, BANK) == newer and "1 answered" in main(student.get(f"/quiz/{BANK}/projections"))
    # From that attempt's own results page, the retake is the student's choice.
    fresh = retake_fields(student.get(f"/quiz/{BANK}/summary").get_data(as_text=True))
    assert student.post(f"/quiz/{BANK}/retake", data=fresh).status_code == 303
    with student.session_transaction() as session:
        assert BANK not in session["attempts"]  # the next answer starts the new attempt
