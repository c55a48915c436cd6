"""Misconceptions on numeric and matrix questions: a wrong answer within tolerance of one gets its feedback,
on the answer page and in the API; the loader checks them with file:line:col, per variant too."""

from __future__ import annotations

import pytest

from app import create_app
from app.bank.loader import load_bank_bytes
from app.bank.variants import draw, instantiate
from app.grading import grade, parse_answer
from conftest import answer_via_form

HEAD = "id: slips\ntitle: Slips\nquestions:\n"  # questions start on line 4

BANK = HEAD + """\
  - id: scaled
    type: numeric
    prompt: q·k = 24 and d_k = 64. The scaled score?
    explanation: 24 / 8 = 3.
    answer: 3
    tolerance: {abs: 0.01}
    misconceptions:
      - id: no-sqrt-scaling
        answer: 24
        feedback: You forgot to divide by **√d_k**.
      - id: d-model-for-d-k
        answer: 24 / sqrt(512)
        feedback: You used d_model where d_k belongs.
  - id: weights
    type: matrix
    prompt: softmax of [2, 1, 0]?
    explanation: Exponentiate, then normalise.
    answer: softmax([2, 1, 0])
    tolerance: {abs: 0.01}
    misconceptions:
      - id: divide-by-sum
        answer: [0.6667, 0.3333, 0]
        feedback: Those are the scores over their sum.
  - id: heads
    type: numeric
    params: {h: [4, 8], d: [16, 32]}
    prompt: "{{ h }} heads of {{ d }}: concatenated width?"
    explanation: "{{ h * d }}."
    answer: h * d
    misconceptions:
      - id: added-heads
        answer: d
        feedback: "{{ d }} is what adding the heads gives; they are concatenated."
"""


def questions(text: str = BANK):
    result = load_bank_bytes(text.encode("utf-8"), "bank.yaml")
    assert result.errors == (), result.errors
    return result.bank.questions


def errors_of(text: str) -> list[str]:
    result = load_bank_bytes(text.encode("utf-8"), "bank.yaml")
    assert result.bank is None
    return [str(error) for error in result.errors]


@pytest.fixture
def slips_app(tmp_path):
    folder = tmp_path / "banks"
    folder.mkdir()
    (folder / "slips.yaml").write_text(BANK, encoding="utf-8")
    return create_app({"TESTING": True, "SECRET_KEY": "k", "QUIZ_DIR": str(folder),
                       "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}"})


def test_a_wrong_answer_within_tolerance_of_a_misconception_gets_it():
    scaled, weights, _ = questions()
    assert [m.answer for m in scaled.misconceptions] == [24.0, pytest.approx(24 / 512 ** 0.5)]
    result = grade(scaled, parse_answer(scaled, 24.005))
    assert not result.correct and result.misconception.id == "no-sqrt-scaling"
    assert result.misconception.feedback == "You forgot to divide by **√d_k**."
    assert grade(scaled, parse_answer(scaled, 1.06)).misconception.id == "d-model-for-d-k"
    assert grade(scaled, parse_answer(scaled, 24.02)).misconception is None  # beyond the tolerance
    assert grade(scaled, parse_answer(scaled, 3)).misconception is None
    result = grade(weights, parse_answer(weights, [[0.67, 0.33, 0.0]]))
    assert not result.correct and result.misconception.id == "divide-by-sum"
    assert grade(weights, parse_answer(weights, [[0.67, 0.33, 0.02]])).misconception is None  # one entry off


def test_misconceptions_follow_each_variant():
    template = questions()[2]
    for seed in range(6):
        values = draw(template, seed)
        concrete = instantiate(template, seed)
        (slip,) = concrete.misconceptions
        assert slip.answer == values["d"]
        assert slip.feedback == f"{values['d']} is what adding the heads gives; they are concatenated."
        assert grade(concrete, float(values["d"])).misconception == slip


@pytest.mark.parametrize("change, expected", [
    (("        answer: 24\n", "        answer: 3.005\n"),
     "bank.yaml:12:17: questions[0].misconceptions[0].answer: this answer is graded correct (it matches the key "
     "within the tolerance); a misconception is a wrong answer"),
    (("id: d-model-for-d-k", "id: no-sqrt-scaling"),
     "bank.yaml:14:13: questions[0].misconceptions[1].id: duplicate misconception id 'no-sqrt-scaling'"),
    (("answer: [0.6667, 0.3333, 0]", "answer: [0.6667, 0.3333]"),
     "bank.yaml:25:17: questions[1].misconceptions[0].answer: this answer is 1×2, but the key is 1×3"),
    (("answer: 24 / sqrt(512)", "answer: 24 / sqrt(d_model)"),
     "bank.yaml:15:17: questions[0].misconceptions[1].answer: unknown name 'd_model'"),
    (("        answer: 24\n", "        answer: [24]\n"),
     "bank.yaml:12:17: questions[0].misconceptions[0].answer: a numeric question's answer is a finite number; "
     "got a list"),
    (("        answer: d\n", "        answer: h * d\n"),
     "bank.yaml:35:17: questions[2].misconceptions[0].answer: with h = 4, d = 16: this answer is graded correct"),
    (("        feedback: Those are the scores over their sum.\n", ""),
     "bank.yaml:24:9: questions[1].misconceptions[0].feedback: this required field is missing"),
])
def test_broken_misconceptions_are_reported_at_their_line_and_column(change, expected):
    errors = errors_of(BANK.replace(*change))
    assert any(error.startswith(expected) for error in errors), errors


def test_misconceptions_on_a_choice_question_are_refused():
    text = HEAD + """\
  - id: pick
    type: single_choice
    prompt: P
    explanation: E
    options: [{id: a, text: A, correct: true}, {id: b, text: B}]
    misconceptions: [{id: slip, answer: 1, feedback: F}]
"""
    assert errors_of(text) == ["bank.yaml:9:21: questions[0].misconceptions: 'misconceptions' applies only to "
                               "numeric and matrix questions; remove it"]


def test_the_answer_page_shows_the_misconception_prominently(slips_app):
    client = slips_app.test_client()
    response = answer_via_form(client, "slips", "scaled", "24")
    html = client.get(response.location).get_data(as_text=True)
    start = html.index('<section class="misconception">')
    box = html[start:html.index("</section>", start)]
    assert "<h2>A common slip</h2>" in box and "You forgot to divide by <strong>√d_k</strong>." in box
    assert start < html.index('id="explanation-heading"')  # before the explanation
    response = answer_via_form(client, "slips", "weights", ["0.5", "0.3", "0.2"])
    assert 'class="misconception"' not in client.get(response.location).get_data(as_text=True)


def test_the_api_reports_the_misconception_or_null(slips_app):
    client = slips_app.test_client()
    body = client.post("/api/banks/slips/questions/scaled/grade", json={"answer": 24}).get_json()
    assert body["correct"] is False
    assert body["misconception"] == {"id": "no-sqrt-scaling",
                                     "feedback_html": "<p>You forgot to divide by <strong>√d_k</strong>.</p>\n"}
    body = client.post("/api/banks/slips/questions/scaled/grade", json={"answer": 5}).get_json()
    assert body["misconception"] is None
    body = client.post("/api/banks/slips/questions/weights/grade", json={"answer": [[0.67, 0.33, 0]]}).get_json()
    assert body["misconception"]["id"] == "divide-by-sum"
    shown = client.get("/api/banks/slips/questions/scaled").get_json()
    assert "misconception" not in str(shown) and "24" not in str(shown["prompt_html"]).replace("= 24", "")
