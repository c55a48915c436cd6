"""Matrix questions: the expression language's vectors and matrices, the loader's key checks with
file:line:col, grading entry by entry, and the answer grid through the web form and the JSON API."""

from __future__ import annotations

import re

import numpy as np
import pytest

from app import create_app
from app.bank.expressions import ExpressionError, compile_expression, format_number
from app.bank.loader import load_bank_bytes
from app.engine import softmax
from app.errors import BadInput
from app.grading import grade, parse_answer, parse_form_answer
from conftest import answer_via_form

HEAD = "id: grids\ntitle: Grids\nquestions:\n"  # questions start on line 4

MATRIX_BANK = HEAD + """\
  - id: weights
    type: matrix
    prompt: The softmax of [2, 1, 0]?
    explanation: Exponentiate, then normalise.
    answer: softmax([2, 1, 0])
    tolerance: {abs: 0.01}
  - id: output
    type: matrix
    prompt: A 2x2 output?
    explanation: Weights times values.
    answer: [[1, 2], [3.5, 4]]
    tolerance: {rel: 0.1}
"""


def load(text: str):
    return load_bank_bytes(text.encode("utf-8"), "bank.yaml")


def question(text: str = MATRIX_BANK, index: int = 0):
    result = load(text)
    assert result.errors == ()
    return result.bank.questions[index]


def errors_of(text: str) -> list[str]:
    result = load(text)
    assert result.bank is None
    return [str(error) for error in result.errors]


@pytest.fixture
def matrix_app(tmp_path):
    folder = tmp_path / "banks"
    folder.mkdir()
    (folder / "grids.yaml").write_text(MATRIX_BANK, encoding="utf-8")
    return create_app({"TESTING": True, "SECRET_KEY": "k", "QUIZ_DIR": str(folder),
                       "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}"})


# --- the expression language -------------------------------------------------------------------------


def evaluate(text: str, values: dict | None = None):
    values = values or {}
    return compile_expression(text, set(values)).evaluate(values)


def test_list_literals_and_engine_functions_compute_vectors_and_matrices():
    np.testing.assert_array_equal(evaluate("softmax([2, 1, 0])"), softmax(np.array([2.0, 1.0, 0.0])))
    q, k, v = [[1, 1], [0, 2]], [[1, 0], [0, 1]], [[1, 2], [3, 4]]
    got = evaluate(f"matmul(softmax(matmul({q}, transpose({k})) / sqrt(2)), {v})")
    expected = softmax(np.array(q) @ np.array(k).T / np.sqrt(2)) @ np.array(v)
    np.testing.assert_allclose(got, expected)
    np.testing.assert_array_equal(evaluate("[[1, 2], [3, 4]] * 2 - 1"), [[1, 3], [5, 7]])
    np.testing.assert_array_equal(evaluate("transpose([1, 2])"), [[1], [2]])  # a vector is a row
    np.testing.assert_allclose(evaluate("exp([0, 1])"), [1, np.e])
    np.testing.assert_array_equal(evaluate("sqrt(x)", {"x": 16}), 4.0)
    np.testing.assert_array_equal(evaluate("causal_mask(3)[1]"), [1, 1, 0])
    assert format_number(evaluate("round(softmax([2, 1, 0]), 3)")) == "[0.665, 0.245, 0.09]"


@pytest.mark.parametrize("text, message", [
    ("[1, 2] + [1, 2, 3]", "needs equal shapes, got (2,) and (3,); use matmul"),
    ("matmul([[1, 2]], [[1, 2]])", "as many columns in the first (2) as rows in the second (1)"),
    ("[1, 2] / [1, 0]", "division by zero"),
    ("exp([1000])", "not a finite number"),
    ("[" + ", ".join(["1"] * 17) + "]", "at most 16 rows and 16 columns"),
    ("[[1], [1, 2]]", "every row of a matrix needs the same number of entries"),
    ("[[[1]]]", "a list holds numbers (a vector) or equally long lists"),
    ("softmax(2)", "softmax(...) needs a vector or matrix"),
    ("max([1, 2])", "max(...) takes numbers, not a vector or matrix"),
    ("[1, 2] < [2, 3]", "cannot be compared"),
    ("sqrt([1, -1])", "sqrt(...) failed"),
    ("[1, 2][5]", "index 5 is outside 0..1"),
    ("[1, 2][0:1]", "Slice is not allowed"),
])
def test_vector_arithmetic_is_checked_and_bounded(text, message):
    with pytest.raises(ExpressionError, match=re.escape(message)):
        evaluate(text)


# --- the loader --------------------------------------------------------------------------------------


def test_the_key_is_normalised_to_rows_of_floats():
    weights, output = load(MATRIX_BANK).bank.questions
    assert weights.shape == (1, 3) and weights.answer == [softmax(np.array([2.0, 1.0, 0.0])).tolist()]
    assert output.shape == (2, 2) and output.answer == [[1.0, 2.0], [3.5, 4.0]]
    assert weights.tolerance.abs == 0.01


@pytest.mark.parametrize("answer, expected", [
    ("[[1, 2], [3]]", "bank.yaml:8:22: questions[0].answer[1]: every row needs the same number of entries: "
                      "row 1 has 2, row 2 has 1"),
    ("[[1, two]]", "bank.yaml:8:18: questions[0].answer[0][1]: each entry must be a finite number; got 'two'"),
    ("[[1, .nan]]", "bank.yaml:8:18: questions[0].answer[0][1]: each entry must be a finite number; got nan"),
    ("[]", "bank.yaml:8:13: questions[0].answer: a matrix is a list of rows like [[0.5, 0.5]]"),
    ("[" + ", ".join(["[1]"] * 17) + "]", "bank.yaml:8:13: questions[0].answer: a matrix may have at most 16 rows; "
                                         "this one has 17"),
    ("softmax(3)", "bank.yaml:8:13: questions[0].answer: softmax(...) needs a vector or matrix"),
    ("matmul([[1, 2]], [[1, 2]])", "bank.yaml:8:13: questions[0].answer: matmul needs as many columns"),
])
def test_broken_matrix_keys_are_reported_at_their_line_and_column(answer, expected):
    text = HEAD + f"""\
  - id: m
    type: matrix
    prompt: P
    explanation: E
    answer: {answer}
"""
    errors = errors_of(text)
    assert any(error.startswith(expected) for error in errors), errors


def test_matrix_fields_are_checked_where_they_are_written():
    text = HEAD + """\
  - id: m
    type: matrix
    prompt: P
    explanation: E
    options: [{id: a, text: A}]
  - id: c
    type: single_choice
    prompt: P
    explanation: E
    tolerance: {abs: 1}
    options: [{id: a, text: A, correct: true}, {id: b, text: B}]
"""
    assert errors_of(text) == [
        "bank.yaml:4:5: questions[0].answer: a matrix question needs 'answer:', [[0.5, 0.5]] or an expression",
        "bank.yaml:8:14: questions[0].options: a matrix question has no options; the student fills in a grid",
        "bank.yaml:13:16: questions[1].tolerance: 'tolerance' applies only to numeric and matrix questions; "
        "remove it",
    ]


def test_a_parameterised_matrix_key_is_computed_per_variant():
    text = HEAD + """\
  - id: m
    type: matrix
    params: {s: [1, 2, 3]}
    prompt: "The softmax of [{{ s }}, 0]?"
    explanation: "It is {{ round(softmax([s, 0]), 3) }}."
    answer: softmax([s, 0])
"""
    from app.bank.variants import draw, instantiate
    template = question(text)
    for seed in range(5):
        s = draw(template, seed)["s"]
        concrete = instantiate(template, seed)
        assert concrete.answer == [softmax(np.array([s, 0.0])).tolist()]
        assert concrete.explanation == f"It is {format_number(np.round(softmax(np.array([s, 0.0])), 3))}."


# --- grading -----------------------------------------------------------------------------------------


def test_each_entry_must_lie_within_the_tolerance():
    weights, output = load(MATRIX_BANK).bank.questions
    assert grade(weights, parse_answer(weights, [[0.67, 0.24, 0.09]])).correct
    result = grade(weights, parse_answer(weights, [[0.67, 0.22, 0.09]]))  # one entry 0.025 off
    assert (result.correct, result.score, result.verdict) == (False, 0.0, "incorrect")
    assert result.correct_answer == weights.answer and result.options == []
    assert grade(output, parse_answer(output, [[1.09, 1.81], [3.85, 4.39]])).correct  # rel 10% per entry
    assert not grade(output, parse_answer(output, [[1.11, 2], [3.5, 4]])).correct


@pytest.mark.parametrize("answer, message", [
    ([[0.5, 0.5]], "The answer must be 1×3 (1 row of 3 numbers); got 1 row(s) with 2 number(s)."),
    ([[0.5, 0.5, 0.5], [0.5, 0.5, 0.5]], "The answer must be 1×3"),
    ([0.5, 0.5, 0.5], "This question needs a matrix: a list of rows, like [[0.5, 0.5, 0.5]]."),
    ([[0.5, float("nan"), 0.5]], "Row 1, column 2 must be a finite number; got nan."),
    ([[0.5, "0.2", 0.5]], "Row 1, column 2 must be a finite number; got '0.2'."),
    ([[True, 0.5, 0.5]], "Row 1, column 1 must be a finite number; got true."),
    ([[0.1] * 257], "Too many entries: a matrix answer has at most 256 numbers"),
    (0.5, "This question needs a matrix"),
])
def test_bad_matrix_answers_are_refused_with_a_sentence(answer, message):
    with pytest.raises(BadInput, match=re.escape(message)):
        parse_answer(question(), answer)


@pytest.mark.parametrize("values, expected", [
    (["0.67", "0.24", "0.09"], [[0.67, 0.24, 0.09]]),
    (["0.67 0.24 0.09", "", ""], [[0.67, 0.24, 0.09]]),  # a pasted row fills the grid
    (["0.67, 0.24; 0.09", "", ""], [[0.67, 0.24, 0.09]]),
    (["\u22120.5", "1", "2"], [[-0.5, 1.0, 2.0]]),
    (["[0.67, 0.24, 0.09]", "", ""], [[0.67, 0.24, 0.09]]),  # as the pages show a matrix answer
    (["1,000", "2", "3"], [[1000.0, 2.0, 3.0]]),  # as the pages write counts
])
def test_form_values_fill_the_grid_row_by_row(values, expected):
    assert parse_form_answer(question(), values) == expected


def test_a_pasted_2x2_fills_row_by_row():
    assert parse_form_answer(question(index=1), ["1 2 3 4", "", "", ""]) == [[1, 2], [3, 4]]


@pytest.mark.parametrize("values, message", [
    (["0.67", "abc", "0.09"], "'abc' in row 1, column 2 is not a number"),
    (["0.67", "", "0.09"], "The cell in row 1, column 2 is empty"),
    (["", "", ""], "Type a number in each cell, then submit."),
    (["0.67", "nan", "0.09"], "The cell in row 1, column 2 must be a finite number; got 'nan'."),
    (["1", "inf", "0"], "must be a finite number; got 'inf'"),
    (["0.67", "0.24"], "The answer must be 1×3: send 3 numbers, one per cell."),
    (["1 2", "", ""], "The pasted row has 2 numbers; this answer needs 3"),
    (["0,67; 0,24; 0,09", "", ""], "The pasted row has 6 numbers; this answer needs 3 (1 row of 3 numbers); a comma "
                                   "separates numbers here, so write decimals with a point (0.67, not 0,67)."),
    (["0,5", "1", "2"], "'0,5' in row 1, column 1 is not a number; write decimals with a point (0.5, not 0,5)."),
    (["1"] * 300, "Too many entries"),
])
def test_bad_form_grids_are_refused_with_a_sentence(values, message):
    with pytest.raises(BadInput, match=re.escape(message)):
        parse_form_answer(question(), values)


# --- the web page and the API ------------------------------------------------------------------------


def test_the_question_page_shows_a_labelled_grid_of_the_keys_shape(matrix_app):
    html = matrix_app.test_client().get("/quiz/grids/output").get_data(as_text=True)
    inputs = re.findall(r'<input name="answer"[^>]*aria-label="(Row \d, column \d)"', html)
    assert inputs == ["Row 1, column 1", "Row 1, column 2", "Row 2, column 1", "Row 2, column 2"]
    assert "paste all\n        4 numbers, row by row, into the first cell" in html
    assert "/static/answer.css" in html


def test_a_form_answer_round_trips_to_the_answer_page(matrix_app):
    client = matrix_app.test_client()
    response = answer_via_form(client, "grids", "output", ["1 2 3.5 5", "", "", ""])
    assert response.status_code == 303
    html = client.get(response.location).get_data(as_text=True)
    assert "Not quite" in html
    assert html.count('class="is-right"') == 3 and html.count('class="is-off"') == 1  # 5 is not 4 ± 10%
    assert "(each entry accepted within 10%)" in " ".join(html.split())


def test_a_refused_grid_keeps_what_was_typed_and_marks_it(matrix_app):
    client = matrix_app.test_client()
    response = answer_via_form(client, "grids", "output", ["1", "x2", "3", ""])
    assert response.status_code == 400
    html = response.get_data(as_text=True)
    assert "&#39;x2&#39; in row 1, column 2 is not a number" in html
    assert re.findall(r'value="([^"]*)"\s+aria-describedby="grid-hint answer-error"', html) == ["1", "x2", "3", ""]
    assert html.count('aria-invalid="true"') == 4


def test_the_api_shows_the_shape_and_grades_a_nested_list(matrix_app):
    client = matrix_app.test_client()
    shown = client.get("/api/banks/grids/questions/weights").get_json()
    assert shown["type"] == "matrix" and shown["shape"] == [1, 3] and "answer" not in shown
    body = client.post("/api/banks/grids/questions/weights/grade", json={"answer": [[0.67, 0.24, 0.09]]}).get_json()
    assert body["correct"] is True and body["answer"] == [[0.67, 0.24, 0.09]]
    assert body["correct_answer"] == [softmax(np.array([2.0, 1.0, 0.0])).tolist()]
    assert body["misconception"] is None


@pytest.mark.parametrize("raw, message", [
    ('{"answer": [[0.6, 0.4]]}', "The answer must be 1×3"),
    ('{"answer": [[0.6, NaN, 0.1]]}', "Row 1, column 2 must be a finite number; got nan."),
    ('{"answer": [[0.6, "a lot", 0.1]]}', "Row 1, column 2 must be a finite number; got 'a lot'."),
    ('{"answer": [[' + ", ".join(["0.1"] * 300) + "]]}", "Too many entries"),
    ('{"answer": "0.6 0.3 0.1"}', "This question needs a matrix"),
])
def test_the_api_refuses_bad_matrices_with_400(matrix_app, raw, message):
    response = matrix_app.test_client().post("/api/banks/grids/questions/weights/grade", data=raw,
                                             content_type="application/json")
    assert response.status_code == 400
    assert message in response.get_json()["error"]["message"]
