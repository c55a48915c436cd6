"""Question pools: each attempt draws `draw` of a pool's questions by its seed; the bank's other questions are in
every attempt. The loader checks the pools with file:line:col errors; the pages, the API, the LMS line item and the
Moodle export follow the attempt's own questions."""

from __future__ import annotations

import re
from collections import Counter

import pytest
from conftest import app_on_bank, csrf_token

from app.bank.loader import load_bank_bytes
from app.web.progress import drawn

BANK = "pooled"
QUESTION = """\
  - id: {id}
    type: true_false
    prompt: "Statement {id}."
    answer: true
    explanation: "Because."
"""
BANK_YAML = f"""\
id: {BANK}
title: Pooled quiz
pools:
  - id: shapes
    draw: 1
    questions: [shape-a, shape-b, shape-c]
  - id: costs
    draw: 2
    questions: [cost-a, cost-b, cost-c, cost-d]
questions:
""" + "".join(QUESTION.format(id=i) for i in ("intro", "shape-a", "shape-b", "shape-c", "cost-a", "cost-b",
                                                "cost-c", "cost-d", "outro"))


def load(text: str):
    return load_bank_bytes(text.encode(), "pooled.yaml")


def test_a_bank_with_pools_loads_and_counts_the_questions_of_an_attempt():
    bank = load(BANK_YAML).bank
    assert bank is not None and len(bank.questions) == 9 and bank.per_attempt == 2 + 1 + 2
    assert bank.pool_of("cost-b").id == "costs" and bank.pool_of("intro") is None


def test_each_attempt_draws_its_own_from_each_pool_the_same_on_every_reload():
    bank = load(BANK_YAML).bank
    picks = Counter()
    for seed in range(600):
        ids = [q.id for q in drawn(bank, seed)]
        assert ids == [q.id for q in drawn(bank, seed)]  # one seed, one draw
        assert len(ids) == bank.per_attempt and ids[0] == "intro" and ids[-1] == "outro"
        assert sum(i.startswith("shape") for i in ids) == 1 and sum(i.startswith("cost") for i in ids) == 2
        assert ids == [q.id for q in bank.questions if q.id in ids]  # in the bank's order
        picks.update(ids)
    # Every pooled question is drawn about as often as its pool's others: 1/3 and 2/4 of the attempts.
    assert all(150 < picks[f"shape-{x}"] < 250 for x in "abc"), picks
    assert all(240 < picks[f"cost-{x}"] < 360 for x in "abcd"), picks


@pytest.mark.parametrize("pools, where, message", [
    ("  - {id: shapes, draw: 1, questions: [shape-a, shape-x]}\n", "4:48",
     "pools[0].questions[1]: no question has the id 'shape-x'; did you mean 'shape-c'?"),
    ("  - {id: shapes, draw: 1, questions: [shape-a, shape-b]}\n"
     "  - {id: more, draw: 1, questions: [shape-b, intro]}\n",
     "5:37",
     "pools[1].questions[0]: question 'shape-b' is already in pool 'shapes'; a question is in one pool at most"),
    ("  - {id: shapes, draw: 1, questions: [shape-a, shape-a, shape-b]}\n", "4:48",
     "pools[0].questions[1]: 'shape-a' is listed twice in this pool"),
    ("  - {id: shapes, draw: 2, questions: [shape-a, shape-b]}\n", "4:24",
     "pools[0].draw: draw 2 of the pool's 2 questions would ask every one; draw fewer"),
    ("  - {id: shapes, draw: 1, questions: [shape-a, shape-b]}\n"
     "  - {id: shapes, draw: 1, questions: [cost-a, cost-b]}\n",
     "5:10", "pools[1].id: pool id 'shapes' is used twice; give each pool its own id"),
    ("  - {id: shapes, draw: 0, questions: [shape-a, shape-b]}\n", "4:24", "pools[0].draw: must be at least 1"),
    ("  - {id: shapes, draw: 1, questions: [shape-a]}\n", "4:38", "pools[0].questions: must have at least 2"),
])
def test_a_pool_that_cannot_be_drawn_is_an_error_at_its_place(pools, where, message):
    text = BANK_YAML.split("pools:\n")[0] + "pools:\n" + pools + "questions:\n" + BANK_YAML.split("questions:\n", 1)[1]
    result = load(text)
    assert result.bank is None
    errors = [str(error) for error in result.errors]
    assert any(error.startswith(f"pooled.yaml:{where}: {message}") for error in errors), errors


@pytest.fixture
def app(tmp_path):
    return app_on_bank(tmp_path, BANK, BANK_YAML)


def listed(html: str) -> list[str]:
    return re.findall(rf'<li><a href="/quiz/{BANK}/([a-z-]+)">', html)  # the start page's list of questions


def test_a_student_answers_the_attempts_own_questions_and_is_scored_out_of_them(app):
    student = app.test_client()
    start = " ".join(student.get(f"/quiz/{BANK}/").get_data(as_text=True).split())
    assert "5 questions per attempt, of the 9 below" in start
    assert "1 of the 3 questions marked “shapes”" in start and "2 of the 4 questions marked “costs”" in start
    # Whichever question the student opens first, the attempt begins at its own first question.
    opened = student.get(f"/quiz/{BANK}/shape-c")
    attempt_page = " ".join(student.get(f"/quiz/{BANK}/").get_data(as_text=True).split())
    ids = listed(attempt_page)
    assert len(ids) == 5 and ids[0] == "intro" and "5 questions · 0 answered" in attempt_page
    if "shape-c" in ids:
        assert opened.status_code == 200
    else:
        assert opened.status_code == 303 and opened.headers["Location"].endswith(f"/quiz/{BANK}/intro")
        refused = student.get(f"/quiz/{BANK}/shape-c")
        assert refused.status_code == 404
        assert "each attempt draws 1 of 3 questions like it, and it was not drawn for yours" in (
            refused.get_data(as_text=True))
    for question_id in ids:
        page = student.get(f"/quiz/{BANK}/{question_id}").get_data(as_text=True)
        posted = student.post(f"/quiz/{BANK}/{question_id}", data={"csrf_token": csrf_token(page), "answer": "true"})
        assert posted.status_code == 303
    summary = " ".join(student.get(f"/quiz/{BANK}/summary").get_data(as_text=True).split())
    assert "You scored <strong>5</strong> out of 5 (100%)" in summary
    assert re.findall(r'<li class="review-item [a-z-]+" id="review-([a-z-]+)"', summary) == ids


def test_the_api_says_how_many_questions_an_attempt_has_and_lists_the_drawn_ones(app):
    client = app.test_client()
    summary = client.get(f"/api/banks/{BANK}").get_json()
    assert summary["question_count"] == 9 and summary["questions_per_attempt"] == 5
    seen = set()
    for _ in range(12):
        attempt = app.test_client().post(f"/api/banks/{BANK}/attempts").get_json()
        ids = [q["id"] for q in attempt["questions"]]
        assert len(ids) == 5 and attempt["max_score"] == 5
        seen.update(ids)
    assert len(seen) > 5  # different attempts drew different questions


@pytest.mark.parametrize("output_format", ["gift", "moodle-xml"])
def test_the_moodle_export_carries_every_question_and_says_the_pools_are_not_carried(app, output_format):
    from app.authoring.export import export_bank

    exported = export_bank(app.extensions["banks"].get(BANK), output_format)
    assert any("pools cannot be carried by a question file: every question is exported" in warning.message
               for warning in exported.warnings), exported.warnings
    assert exported.questions == 9
    assert all(f"Statement {i}." in exported.text for i in ("shape-a", "shape-b", "shape-c", "cost-d", "outro"))


def test_a_retake_draws_again_and_the_preview_lists_the_pools(app, tmp_path):
    from werkzeug.security import generate_password_hash

    student = app.test_client()
    draws = set()
    for _ in range(8):  # each retake is a new attempt with a seed of its own
        student.get(f"/quiz/{BANK}/intro")
        ids = tuple(listed(student.get(f"/quiz/{BANK}/").get_data(as_text=True)))
        assert len(ids) == 5
        draws.add(ids)
        page = student.get(f"/quiz/{BANK}/intro").get_data(as_text=True)
        student.post(f"/quiz/{BANK}/intro", data={"csrf_token": csrf_token(page), "answer": "true"})
        summary = student.get(f"/quiz/{BANK}/summary").get_data(as_text=True)
        form = re.search(r'action="/quiz/[^"/]+/retake">(.*?)</form>', summary, re.S).group(1)
        fields = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">', form))
        assert student.post(f"/quiz/{BANK}/retake", data=fields).status_code == 303
    assert len(draws) > 1

    app.config["INSTRUCTOR_PASSWORD_HASH"] = generate_password_hash("pw", method="pbkdf2:sha256:1000")
    instructor = app.test_client()
    token = csrf_token(instructor.get("/instructor/login").get_data(as_text=True))
    instructor.post("/instructor/login", data={"csrf_token": token, "password": "pw"})
    preview = " ".join(instructor.get(f"/instructor/preview/{BANK}/intro").get_data(as_text=True).split())
    assert "pool shapes: each attempt draws 1 of shape-a, shape-b, shape-c" in preview
    assert "pool costs: each attempt draws 2 of cost-a, cost-b, cost-c, cost-d" in preview


def test_the_home_page_counts_the_questions_an_attempt_has(app):
    student = app.test_client()
    home = " ".join(student.get("/").get_data(as_text=True).split())
    assert "5 questions per attempt, of 9" in home
    student.get(f"/quiz/{BANK}/intro")  # the attempt begins
    page = student.get(f"/quiz/{BANK}/intro").get_data(as_text=True)
    student.post(f"/quiz/{BANK}/intro", data={"csrf_token": csrf_token(page), "answer": "true"})
    home = " ".join(student.get("/").get_data(as_text=True).split())
    assert "5 questions per attempt, of 9 · 1 answered" in home


def test_an_answer_from_a_tab_left_open_after_a_retake_is_not_a_dead_end(app):
    """The retake's new attempt draws again: an answer to a question it did not draw, sent from the old attempt's
    tab, goes to the quiz's page with a sentence (it was a 404 after the new attempt had begun)."""
    for _ in range(20):
        student = app.test_client()
        student.get(f"/quiz/{BANK}/intro")
        ids = listed(student.get(f"/quiz/{BANK}/").get_data(as_text=True))
        shape = next(i for i in ids if i.startswith("shape"))
        form = student.get(f"/quiz/{BANK}/{shape}").get_data(as_text=True)  # left open in a tab
        summary = student.get(f"/quiz/{BANK}/summary").get_data(as_text=True)
        fields = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">',
                                 re.search(r'action="/quiz/[^"/]+/retake">(.*?)</form>', summary, re.S).group(1)))
        student.post(f"/quiz/{BANK}/retake", data=fields)
        sent = student.post(f"/quiz/{BANK}/{shape}", data={"csrf_token": csrf_token(form), "answer": "true"})
        page = " ".join(student.get(f"/quiz/{BANK}/").get_data(as_text=True).split())
        if shape in listed(page):  # drawn again: the answer counts in the new attempt
            assert sent.status_code == 303 and sent.headers["Location"].endswith(f"/{shape}/answer")
            continue
        assert sent.status_code == 303 and sent.headers["Location"].endswith(f"/quiz/{BANK}/")
        assert "That answer was not recorded: your new attempt draws its own questions" in page
        return
    pytest.fail("no retake left the tab's question out in 20 tries (each does with probability 2/3)")


def test_a_question_moved_into_a_pool_during_an_attempt_says_the_attempt_kept_its_questions(app, tmp_path):
    student = app.test_client()
    student.get(f"/quiz/{BANK}/intro")
    ids = listed(student.get(f"/quiz/{BANK}/").get_data(as_text=True))
    left_out = next(f"shape-{x}" for x in "abc" if f"shape-{x}" not in ids)
    assert "it was not drawn for yours" in student.get(f"/quiz/{BANK}/{left_out}").get_data(as_text=True)
    # The bank loses its pools while the attempt goes on: the question was never drawn, not added.
    registry = app.extensions["banks"]
    (tmp_path / "quizzes" / f"{BANK}.yaml").write_text(BANK_YAML.split("pools:")[0] + "questions:"
                                                       + BANK_YAML.split("questions:\n", 1)[1].join(["\n", ""]))
    registry.load()
    assert not registry.get(BANK).pools
    text = " ".join(student.get(f"/quiz/{BANK}/{left_out}").get_data(as_text=True).split())
    assert "it is not among the questions the attempt began with (the quiz gained it, or changed its pools" in text
