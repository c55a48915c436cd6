"""Issue 14's feedback modes through the pages, without JavaScript (forms and redirects): immediate (today's),
try_again (hints, tries left, a penalty schedule, the key only after a right answer or the last try) and
deferred (nothing until every question is answered); every try stored; the bank-level checks of the loader."""

from __future__ import annotations

import json
import re

import pytest
from sqlalchemy import func, select, text

from app import create_app, db
from app.bank.loader import load_bank_bytes
from conftest import csrf_token

BANK = "modes"
QUESTIONS = ("heads", "projections", "scale")
MODES_BANK = """\
id: modes
title: Modes quiz
{header}
questions:
  - id: heads
    type: single_choice
    tags: [shapes]
    prompt: With d_model = 128 and 4 heads, how wide is each head?
    visual: {{kind: head-split, params: {{d_model: 128, num_heads: 4}}}}
    options:
      - {{id: a, text: "32", correct: true, feedback: "Right: 128 / 4 = 32."}}
      - {{id: b, text: "64", feedback: "Four heads of 64 make 256, not 128."}}
      - {{id: c, text: "128", feedback: "That is the whole model width."}}
    explanation: Each head gets d_model over h columns.
  - id: projections
    type: multiple_choice
    scoring: net_correct
    tags: [attention]
    prompt: Which are projections of the input?
    options:
      - {{id: q, text: Queries, correct: true, feedback: "Q is X times W_Q."}}
      - {{id: k, text: Keys, correct: true, feedback: "K is X times W_K."}}
      - {{id: e, text: Embeddings, feedback: "The embeddings are the input itself."}}
    explanation: Queries, keys and values are projections.
  - id: scale
    type: numeric
    tags: [attention, shapes]
    prompt: For d_k = 64, by what are the scores divided?
    answer: 8
    tolerance: {{abs: 0.01}}
    misconceptions:
      - {{id: no-sqrt, answer: 64, feedback: "That is d_k itself; the scores are divided by its square root."}}
    explanation: By the square root of 64, which is 8.
"""
TRY_AGAIN = "feedback: try_again\ntries: 3\npenalty: [1, 0.5, 0.25]"
KEY_FEEDBACK = "Right: 128 / 4 = 32."  # the correct option's feedback gives the key away
EXPLANATION = "Each head gets d_model over h columns."


def make_app(tmp_path, header: str = "", **config):
    folder = tmp_path / "quizzes"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{BANK}.yaml").write_text(MODES_BANK.format(header=header))
    return create_app({"TESTING": True, "SECRET_KEY": "test-secret-key", "QUIZ_DIR": str(folder),
                       "DATABASE_URL": f"sqlite:///{tmp_path / 'modes.sqlite3'}", **config})


def send(client, question_id: str, values, *, try_number: int | str | None = "from-page"):
    """Open the question page like a browser and post its form (with the page's own try number by default)."""
    page = client.get(f"/quiz/{BANK}/{question_id}")
    assert page.status_code == 200, page.status_code
    html = page.get_data(as_text=True)
    data = {"csrf_token": csrf_token(html), "answer": [values] if isinstance(values, str) else values}
    if try_number == "from-page":
        data["try"] = re.search(r'name="try" value="(\d+)"', html).group(1)
    elif try_number is not None:
        data["try"] = str(try_number)
    return client.post(f"/quiz/{BANK}/{question_id}", data=data)


def post_again(client, question_id: str, values, try_number: int):
    """A POST without opening the page first: a double submit, a replay, or a tampered form."""
    token = csrf_token(client.get(f"/quiz/{BANK}/summary").get_data(as_text=True))
    return client.post(f"/quiz/{BANK}/{question_id}",
                       data={"csrf_token": token, "answer": [values], "try": str(try_number)})


def main(response) -> str:
    """The page's main element, its whitespace runs collapsed to one space (as a browser shows the text)."""
    return " ".join(response.get_data(as_text=True).split("<main", 1)[1].split())


def stored_tries(app, question_id: str | None = None):
    statement = select(db.tries).order_by(db.tries.c.id)
    if question_id:
        statement = statement.where(db.tries.c.question_id == question_id)
    with app.extensions["db_engine"].connect() as connection:
        return connection.execute(statement).all()


def stored_responses(app):
    with app.extensions["db_engine"].connect() as connection:
        return connection.execute(select(db.responses).order_by(db.responses.c.id)).all()


# --- immediate: today's behaviour, and its one try stored -----------------------------------------------


def test_immediate_is_the_default_and_stores_each_answer_as_its_one_final_try(tmp_path):
    app = make_app(tmp_path)
    bank = app.extensions["banks"].get(BANK)
    assert (bank.mode, bank.feedback, bank.tries, bank.penalty) == ("practice", "immediate", None, None)
    client = app.test_client()
    response = send(client, "heads", "b")
    assert response.status_code == 303 and response.location.endswith(f"/quiz/{BANK}/heads/answer")
    page = main(client.get(response.location))
    assert '<h1 id="verdict">Not quite</h1>' in page and KEY_FEEDBACK in page and EXPLANATION in page
    assert "Try 1 of" not in page
    [row] = stored_tries(app)
    stored = (row.question_id, row.try_number, json.loads(row.answer), row.score, row.final)
    assert stored == ("heads", 1, "b", 0.0, True)
    # A second answer (another tab) is no second try: the first stands, and the page shows it.
    again = post_again(client, "heads", "a", 1)
    assert again.status_code == 303 and again.location.endswith("/heads/answer")
    assert len(stored_tries(app)) == 1 and len(stored_responses(app)) == 1


# --- try_again ---------------------------------------------------------------------------------------------


def test_a_wrong_try_shows_the_hint_of_what_was_chosen_and_keeps_the_key(tmp_path):
    app = make_app(tmp_path, TRY_AGAIN)
    client = app.test_client()
    response = send(client, "heads", "b")
    assert response.status_code == 303 and response.location.endswith(f"/quiz/{BANK}/heads")  # back to the question
    page = main(client.get(response.location))
    assert "Try 1: not quite." in page
    assert "Four heads of 64 make 256, not 128." in page  # the chosen option's feedback, as a hint
    assert KEY_FEEDBACK not in page and "That is the whole model width." not in page  # nothing of the others
    assert EXPLANATION not in page and "Correct answer" not in page and 'class="visual' not in page
    assert "Try 2 of 3: 2 tries left, this one included." in page
    assert "A right answer now earns 0.5 of the point." in page
    assert 'name="try" value="2"' in page
    # The answer page is not open yet: it sends the student back to the question.
    answer = client.get(f"/quiz/{BANK}/heads/answer")
    assert answer.status_code == 303 and answer.location.endswith(f"/quiz/{BANK}/heads")
    assert stored_responses(app) == []  # the question is still open


def test_a_right_second_try_reveals_everything_and_scores_by_the_penalty(tmp_path):
    app = make_app(tmp_path, TRY_AGAIN)
    client = app.test_client()
    send(client, "heads", "c")
    response = send(client, "heads", "a")
    assert response.status_code == 303 and response.location.endswith("/heads/answer")
    page = main(client.get(response.location))
    assert '<h1 id="verdict">Correct</h1>' in page
    assert "Score: 0.5 / 1" in page and "2 tries; their scores count" in page
    assert KEY_FEEDBACK in page and EXPLANATION in page and 'class="badge right">Correct answer' in page
    assert 'class="visual-image"' in page  # the visual comes with the key
    # The earlier try stays listed with its hint, as on the question page: the answer above is the last one.
    earlier = page.split('<h2 id="tries-heading">Your earlier try</h2>', 1)[1].split("</section>", 1)[0]
    assert "Try 1: not quite." in earlier and "Try 2" not in earlier
    rows = stored_tries(app, "heads")
    assert [(r.try_number, json.loads(r.answer), r.score, r.final) for r in rows] == [
        (1, "c", 0.0, False), (2, "a", 1.0, True)]
    [response_row] = stored_responses(app)
    assert (response_row.question_id, json.loads(response_row.answer), response_row.score) == ("heads", "a", 0.5)


def test_the_score_is_the_best_of_each_tries_score_times_its_factor(tmp_path):
    app = make_app(tmp_path, TRY_AGAIN)
    client = app.test_client()
    # net_correct: [q] = 1/2 x 1 = 0.5; [q, e] = (1 - 1)/2 = 0; [q, k] = 1 x 0.25. The best is the first.
    first = send(client, "projections", ["q"])
    assert first.location.endswith("/projections")
    hint = main(client.get(first.location))
    # A hint: nothing on which picks are right (Q's feedback would say so), nor on the ones not picked.
    assert "Try 1: partly correct." in hint and "Q is X times W_Q." not in hint and "K is X times W_K." not in hint
    send(client, "projections", ["q", "e"])
    last = send(client, "projections", ["q", "k"])
    page = main(client.get(last.location))
    assert '<h1 id="verdict">Correct</h1>' in page and "Score: 0.5 / 1" in page
    assert [r.score for r in stored_tries(app, "projections")] == [0.5, 0.0, 1.0]
    assert stored_responses(app)[0].score == 0.5


def test_the_last_wrong_try_closes_the_question_and_a_try_beyond_it_is_a_400(tmp_path):
    app = make_app(tmp_path, TRY_AGAIN)
    client = app.test_client()
    for value in ("b", "c"):
        assert send(client, "heads", value).location.endswith("/heads")
    page = main(client.get(f"/quiz/{BANK}/heads"))
    assert "Try 3 of 3: 1 try left, this one included." in page and "earns 0.25 of the point" in page
    last = send(client, "heads", "b")
    assert last.location.endswith("/heads/answer")
    page = main(client.get(last.location))
    assert '<h1 id="verdict">Not quite</h1>' in page and "Score: 0 / 1" in page
    assert KEY_FEEDBACK in page and EXPLANATION in page  # the last try reveals the key
    beyond = post_again(client, "heads", "a", 4)
    assert beyond.status_code == 400
    assert "This question allows 3 tries; try 4 was not stored." in beyond.get_data(as_text=True)
    replay = post_again(client, "heads", "a", 3)  # a double submit of the last try changes nothing
    assert replay.status_code == 303 and replay.location.endswith("/heads/answer")
    assert [r.try_number for r in stored_tries(app, "heads")] == [1, 2, 3]
    assert stored_responses(app)[0].score == 0.0


def test_a_double_submit_of_an_open_try_uses_no_second_try(tmp_path):
    app = make_app(tmp_path, TRY_AGAIN)
    client = app.test_client()
    send(client, "heads", "b")
    replay = post_again(client, "heads", "c", 1)  # the same form sent twice
    assert replay.status_code == 303 and replay.location.endswith("/heads")
    assert [r.try_number for r in stored_tries(app, "heads")] == [1]
    skipped = post_again(client, "heads", "a", 3)  # a form that says it is try 3 while try 2 is next
    assert skipped.status_code == 400
    assert "The next try at this question is try 2 of 3" in skipped.get_data(as_text=True)
    assert len(stored_tries(app, "heads")) == 1


def test_a_numeric_try_that_matches_a_misconception_gets_its_feedback_and_stores_its_id(tmp_path):
    app = make_app(tmp_path, TRY_AGAIN)
    client = app.test_client()
    response = send(client, "scale", "64")
    page = main(client.get(response.location))
    assert "Try 1: not quite." in page and "You answered 64." in page
    assert "the scores are divided by its square root." in page
    assert "By the square root of 64" not in page and "Correct answer" not in page
    send(client, "scale", "7")
    [first, second] = stored_tries(app, "scale")
    assert (first.misconception, second.misconception) == ("no-sqrt", None)


# --- deferred ----------------------------------------------------------------------------------------------


def test_deferred_records_each_answer_and_reveals_nothing_until_the_end(tmp_path):
    app = make_app(tmp_path, "feedback: deferred")
    client = app.test_client()
    assert "Answers are checked at the end" in main(client.get(f"/quiz/{BANK}/heads"))
    response = send(client, "heads", "b")
    assert response.location.endswith("/heads/answer")
    page = main(client.get(response.location))
    assert '<h1 id="verdict">Answer recorded</h1>' in page
    assert "Not quite" not in page and "Score:" not in page and KEY_FEEDBACK not in page
    assert EXPLANATION not in page and 'class="visual' not in page
    assert 'href="/quiz/modes/projections">Next question' in page
    summary = main(client.get(f"/quiz/{BANK}/summary"))
    assert "1 of 3 answered so far" in summary and "You scored" not in summary and KEY_FEEDBACK not in summary
    assert "retake-missed" not in summary
    send(client, "projections", ["q"])
    last = send(client, "scale", "8")
    page = main(client.get(last.location))  # the answer that finishes the attempt opens everything
    assert '<h1 id="verdict">Correct</h1>' in page
    heads = main(client.get(f"/quiz/{BANK}/heads/answer"))
    assert '<h1 id="verdict">Not quite</h1>' in heads and KEY_FEEDBACK in heads and 'class="visual-image"' in heads
    summary = main(client.get(f"/quiz/{BANK}/summary"))
    assert "You scored <strong>1.5</strong> out of 3" in summary and KEY_FEEDBACK in summary


# --- the loader's checks of feedback, tries, penalty and mode ---------------------------------------------


def _errors(header: str) -> list[str]:
    result = load_bank_bytes(MODES_BANK.format(header=header).encode(), "modes.yaml")
    assert result.bank is None
    return [str(error) for error in result.errors]


@pytest.mark.parametrize("header, expected", [
    ("feedback: try_again\ntries: 3\npenalty: [1, 0.5]",
     ["modes.yaml:5:10: penalty: expected one factor per try (3), got 2"]),
    ("feedback: try_again\ntries: 3\npenalty: [1, 0.25, 0.5]",
     ["modes.yaml:5:20: penalty[2]: the factors must not increase from one try to the next: try 3 has 0.5, "
      "more than try 2's 0.25"]),
    ("feedback: try_again\ntries: 2\npenalty: [1.5, -1]",
     ["modes.yaml:5:11: penalty[0]: each factor must be from 0 to 1, got 1.5",
      "modes.yaml:5:16: penalty[1]: each factor must be from 0 to 1, got -1"]),
    ("feedback: try_again\ntries: 11\npenalty: [1]", ["modes.yaml:4:8: tries: expected from 2 to 10 tries, got 11"]),
    ("feedback: try_again\ntries: 1\npenalty: [1]", ["modes.yaml:4:8: tries: expected from 2 to 10 tries, got 1"]),
    ("feedback: try_again",
     ["modes.yaml:3:11: feedback: try_again needs penalty: the factor of each try's score, one per try, like "
      "penalty: [1, 0.5, 0.25]", "modes.yaml:3:11: feedback: try_again needs tries: (from 2 to 10), like tries: 3"]),
    ("tries: 3\npenalty: [1, 1, 1]",
     ["modes.yaml:3:1: tries: applies only to feedback: try_again; remove it, or set feedback: try_again",
      "modes.yaml:4:1: penalty: applies only to feedback: try_again; remove it, or set feedback: try_again"]),
    ("feedback: later", ["modes.yaml:3:11: feedback: expected one of 'immediate', 'try_again' or 'deferred', "
                         "got 'later'"]),
    ("mode: exam", ["modes.yaml:3:7: mode: expected one of 'practice' or 'graded', got 'exam'"]),
    ("feedback: try_again\ntries: yes\npenalty: [1, x]",
     ["modes.yaml:4:8: tries: expected a whole number, got 'yes'", "modes.yaml:5:14: penalty[1]: expected a number, "
      "got 'x'"]),
])
def test_bad_feedback_settings_are_errors_at_their_line_and_column(header, expected):
    assert _errors(header) == expected


def test_good_feedback_settings_load():
    bank = load_bank_bytes(MODES_BANK.format(header="mode: graded\n" + TRY_AGAIN).encode(), "modes.yaml").bank
    assert (bank.mode, bank.feedback, bank.tries, bank.penalty) == ("graded", "try_again", 3, [1.0, 0.5, 0.25])


# --- storage: one row per try, migrated from version 1 -----------------------------------------------------


def test_each_try_number_is_stored_once(tmp_path):
    app = make_app(tmp_path)
    with app.app_context():
        db.start_attempt("a" * 32, BANK, seed=0)
        kwargs = {"final": False, "question_ids": ["heads", "b", "c"]}
        assert db.record_try("a" * 32, BANK, "heads", 1, "b", 0.0, **kwargs)
        assert not db.record_try("a" * 32, BANK, "heads", 1, "c", 0.0, **kwargs)  # another tab, the same try
        assert db.record_try("a" * 32, BANK, "heads", 2, "a", 1.0, final=True, final_score=0.5,
                            question_ids=["heads", "b", "c"])
    assert [(r.try_number, json.loads(r.answer)) for r in stored_tries(app)] == [(1, "b"), (2, "a")]
    assert [r.score for r in stored_responses(app)] == [0.5]


def _downgrade_to_version_1(engine) -> None:
    """The schema as version 1 left it: no tries table, no attempts.question_ids nor attempts.questions, version 1."""
    with engine.begin() as connection:
        connection.execute(text("DROP TABLE tries"))
        connection.execute(text("ALTER TABLE attempts DROP COLUMN question_ids"))
        connection.execute(text("ALTER TABLE attempts DROP COLUMN questions"))
        connection.execute(text("UPDATE schema_info SET version = 1"))
        connection.execute(text("INSERT INTO attempts (id, bank_id, seed, started_at) VALUES ('old', 'modes', 0, "
                                "CURRENT_TIMESTAMP)"))
        connection.execute(text("INSERT INTO responses (attempt_id, bank_id, question_id, seed, answer, score, "
                                "answered_at) VALUES ('old', 'modes', 'heads', 0, '\"a\"', 1.0, CURRENT_TIMESTAMP)"))


def _check_migrated(engine) -> None:
    for _ in range(2):  # twice: migrating is idempotent
        assert db.migrate(engine) == db.SCHEMA_VERSION == 4
    with engine.connect() as connection:
        assert connection.execute(select(db.schema_info.c.version)).scalar() == 4
        rows = connection.execute(select(db.tries)).all()
        # graded_as None: scored by an older release, so the bank page checks it once against the current key
        assert [(r.attempt_id, r.question_id, r.try_number, r.final, r.score, r.graded_as) for r in rows] == [
            ("old", "heads", 1, True, 1.0, None)]
        assert connection.execute(select(db.attempts.c.question_ids, db.attempts.c.questions)).one() == (None, None)
        assert connection.execute(select(func.count()).select_from(db.responses)).scalar() == 1


def test_a_version_1_database_is_migrated_with_a_try_for_every_stored_answer(tmp_path):
    engine = db.make_engine(f"sqlite:///{tmp_path / 'old.sqlite3'}")
    db.migrate(engine)
    _downgrade_to_version_1(engine)
    _check_migrated(engine)
    engine.dispose()


def _downgrade_to_version_3(engine) -> None:
    """The schema as version 3 left it: tries without graded_as, and a try stored without it."""
    _downgrade_to_version_1(engine)
    db.migrate(engine)  # through version 4, then back to 3
    with engine.begin() as connection:
        connection.execute(text("ALTER TABLE tries DROP COLUMN graded_as"))
        connection.execute(text("UPDATE schema_info SET version = 3"))


def test_a_version_3_database_gets_graded_as(tmp_path):
    engine = db.make_engine(f"sqlite:///{tmp_path / 'old.sqlite3'}")
    db.migrate(engine)
    _downgrade_to_version_3(engine)
    _check_migrated(engine)
    engine.dispose()


def test_a_version_1_database_is_migrated_on_postgresql(postgres):
    import uuid

    engine = db.make_engine(postgres.create_database("migrate_" + uuid.uuid4().hex[:8]))
    db.migrate(engine)
    _downgrade_to_version_1(engine)
    _check_migrated(engine)
    engine.dispose()


def test_a_version_3_database_gets_graded_as_on_postgresql(postgres):
    import uuid

    engine = db.make_engine(postgres.create_database("migrate_" + uuid.uuid4().hex[:8]))
    db.migrate(engine)
    _downgrade_to_version_3(engine)
    _check_migrated(engine)
    engine.dispose()
