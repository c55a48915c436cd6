"""Cells questions: grids from labels, counts or params, keys as pairs or a mask expression, the loader's
file:line:col errors, the three scoring schemes, and the checkbox table through the form and the API."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from app import create_app
from app.bank.loader import load_bank_bytes
from app.bank.variants import draw, instantiate
from app.errors import BadInput
from app.grading import grade, parse_answer, parse_form_answer
from conftest import answer_via_form

HEAD = "id: cells\ntitle: Cells\nquestions:\n"  # questions start on line 4

CELLS_BANK = HEAD + """\
  - id: query-on
    type: cells
    prompt: Which keys may query 4 attend to?
    explanation: Itself and every earlier key.
    grid: {rows: [on], cols: "the cat sat on the mat"}
    answer: causal_mask(6)[3]
  - id: pairs
    type: cells
    prompt: Pick the two cells.
    explanation: The diagonal.
    grid: {rows: 2, cols: [k1, k2, k3]}
    answer: [[1, 1], [0, 0]]
    scoring: net_correct
  - id: per-cell
    type: cells
    prompt: Every allowed pair?
    explanation: The lower triangle.
    grid: {rows: 2, cols: 2}
    answer: causal_mask(2)
    scoring: per_option
"""


def load(text: str):
    return load_bank_bytes(text.encode("utf-8"), "bank.yaml")


def questions(text: str = CELLS_BANK):
    result = load(text)
    assert result.errors == (), result.errors
    return result.bank.questions


def errors_of(text: str) -> list[str]:
    result = load(text)
    assert result.bank is None
    return [str(error) for error in result.errors]


@pytest.fixture
def cells_app(tmp_path):
    folder = tmp_path / "banks"
    folder.mkdir()
    (folder / "cells.yaml").write_text(CELLS_BANK, encoding="utf-8")
    return create_app({"TESTING": True, "SECRET_KEY": "k", "QUIZ_DIR": str(folder),
                       "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}"})


# --- grids and keys ----------------------------------------------------------------------------------


def test_grids_come_from_labels_counts_or_text_and_keys_are_sorted_pairs():
    query_on, pairs, per_cell = questions()
    assert query_on.grid.rows == ["on"] and query_on.grid.cols == ["the", "cat", "sat", "on", "the", "mat"]
    assert query_on.answer == [[0, 0], [0, 1], [0, 2], [0, 3]]  # the mask's row 4: keys 1..4
    assert pairs.grid.rows == ["1", "2"] and pairs.answer == [[0, 0], [1, 1]]
    assert per_cell.answer == [[0, 0], [1, 0], [1, 1]]
    assert (query_on.scoring, pairs.scoring) == ("all_or_nothing", "net_correct")


def test_a_grid_can_be_computed_from_params_per_variant():
    text = HEAD + """\
  - id: mask
    type: cells
    params:
      sentence: ["the cat sat", "a dog ran", "one more time"]
    prompt: "Allowed pairs in '{{ sentence }}'?"
    explanation: Lower triangle.
    grid: {rows: "{{ sentence }}", cols: "{{ sentence }}"}
    answer: causal_mask(3)
"""
    (template,) = questions(text)
    for seed in range(6):
        words = draw(template, seed)["sentence"].split()
        concrete = instantiate(template, seed)
        assert concrete.grid.rows == words == concrete.grid.cols
        assert concrete.answer == [[i, j] for i in range(len(words)) for j in range(i + 1)]


def test_a_count_from_params_is_a_count():
    text = HEAD + """\
  - id: mask
    type: cells
    params: {n: [2, 3]}
    prompt: "Allowed pairs for {{ n }} tokens?"
    explanation: Lower triangle.
    grid: {rows: "{{ n }}", cols: "{{ n }}"}
    answer: causal_mask(n)
"""
    (template,) = questions(text)
    for seed in range(4):
        n = draw(template, seed)["n"]
        assert instantiate(template, seed).grid.rows == [str(i) for i in range(1, n + 1)]


@pytest.mark.parametrize("change, expected", [
    (("answer: [[1, 1], [0, 0]]", "answer: [[1, 1], [2, 0]]"),
     "bank.yaml:15:22: questions[1].answer[1]: the cell [2, 0] is outside the grid: rows are 0..1 and columns 0..2"),
    (("answer: [[1, 1], [0, 0]]", "answer: [[1, 1], [1, 1]]"),
     "bank.yaml:15:22: questions[1].answer[1]: the cell [1, 1] is listed twice (also answer[0])"),
    (("answer: [[1, 1], [0, 0]]", "answer: [[1, 1], [0]]"),
     "bank.yaml:15:22: questions[1].answer[1]: each cell is a [row, col] pair of whole numbers counted from 0; "
     "got [0]"),
    (("answer: [[1, 1], [0, 0]]", "answer: []"),
     "bank.yaml:15:13: questions[1].answer: a cells answer is a list of [row, col] pairs"),
    (("grid: {rows: 2, cols: [k1, k2, k3]}", "grid: {rows: 17, cols: [k1, k2, k3]}"),
     "bank.yaml:14:18: questions[1].grid.rows: a grid has 1 to 16 rows and columns; got 17"),
    (("grid: {rows: 2, cols: [k1, k2, k3]}", "grid: {rows: 2}"),
     "bank.yaml:14:11: questions[1].grid.cols: this required field is missing"),
    (("    grid: {rows: 2, cols: [k1, k2, k3]}\n", ""),
     "bank.yaml:10:5: questions[1].grid: a cells question needs 'grid: {rows: [...], cols: [...]}'"),
    (("answer: causal_mask(2)", "answer: causal_mask(3)"),
     "bank.yaml:22:13: questions[2].answer: the expression gives a 3×3 matrix, but the grid is 2×2"),
    (("answer: causal_mask(2)", "answer: causal_mask(2) * 0"),
     "bank.yaml:22:13: questions[2].answer: the expression selects no cell"),
    (("cols: \"the cat sat on the mat\"", "cols: \"" + " ".join(["w"] * 17) + "\""),
     "bank.yaml:8:30: questions[0].grid.cols: a grid has 1 to 16 rows and columns"),
    (("scoring: net_correct", "scoring: net_correct\n    tolerance: {abs: 1}"),
     "bank.yaml:17:16: questions[1].tolerance: 'tolerance' applies only to numeric and matrix questions"),
])
def test_broken_cells_questions_are_reported_at_their_line_and_column(change, expected):
    errors = errors_of(CELLS_BANK.replace(*change))
    assert any(error.startswith(expected) for error in errors), errors


def test_grid_on_another_type_is_refused():
    text = HEAD + """\
  - id: n
    type: numeric
    prompt: P
    explanation: E
    answer: 1
    grid: {rows: 2, cols: 2}
"""
    assert errors_of(text) == ["bank.yaml:9:11: questions[0].grid: 'grid' applies only to cells questions; remove it"]


# --- scoring -----------------------------------------------------------------------------------------


def test_all_or_nothing_net_correct_and_per_option_score_like_multiple_choice():
    query_on, pairs, per_cell = questions()
    assert grade(query_on, parse_answer(query_on, [[0, 3], [0, 2], [0, 1], [0, 0]])).score == 1.0
    assert grade(query_on, parse_answer(query_on, [[0, 0], [0, 1], [0, 2]])).score == 0.0
    # net_correct: (right picks - wrong picks) / right cells, floored at 0
    assert grade(pairs, parse_answer(pairs, [[0, 0]])).score == 0.5
    assert grade(pairs, parse_answer(pairs, [[0, 0], [1, 1], [0, 2]])).score == 0.5
    assert grade(pairs, parse_answer(pairs, [[0, 1], [0, 2]])).score == 0.0
    # per_option: the fraction of the 4 cells judged right
    result = grade(per_cell, parse_answer(per_cell, [[1, 0], [0, 0]]))  # [1, 1] missed
    assert (result.score, result.verdict, result.correct) == (0.75, "partial", False)
    assert grade(per_cell, parse_answer(per_cell, [[0, 1]])).score == 0.0
    assert result.answer == [[0, 0], [1, 0]] and result.correct_answer == [[0, 0], [1, 0], [1, 1]]


@pytest.mark.parametrize("answer, message", [
    ([[0, 6]], "The cell [0, 6] is outside the grid: rows are 0 to 0 and columns 0 to 5."),
    ([[-1, 0]], "The cell [-1, 0] is outside the grid"),
    ([[0, 1], [0, 1]], "The cell [0, 1] is selected twice"),
    ([[0]], "Each cell is a [row, col] pair of whole numbers counted from 0"),
    ([[0, 1.0]], "Each cell is a [row, col] pair"),
    ([[True, 1]], "Each cell is a [row, col] pair"),
    (["0,1"], "Each cell is a [row, col] pair"),
    ([], "Select at least one cell"),
    ([[0, 0]] * 7, "Too many cells: the grid has only 6."),
    ("0,1", "This question needs the selected cells"),
])
def test_bad_cells_answers_are_refused_with_a_sentence(answer, message):
    with pytest.raises(BadInput, match=re.escape(message)):
        parse_answer(questions()[0], answer)


@pytest.mark.parametrize("values, message", [
    ([], "Select at least one cell, then submit."),
    (["0;1"], "'0;1' is not a cell"),
    (["a,b"], "'a,b' is not a cell"),
    (["0,9"], "The cell [0, 9] is outside the grid"),
    (["0,1", "0,1"], "selected twice"),
])
def test_bad_form_cells_are_refused_with_a_sentence(values, message):
    with pytest.raises(BadInput, match=re.escape(message)):
        parse_form_answer(questions()[0], values)


# --- the web page and the API ------------------------------------------------------------------------


def test_the_question_page_is_a_table_of_checkboxes_with_headers(cells_app):
    html = cells_app.test_client().get("/quiz/cells/query-on").get_data(as_text=True)
    assert re.findall(r'<th scope="col">([^<]*)</th>', html) == ["the", "cat", "sat", "on", "the", "mat"]
    assert re.findall(r'<th scope="row">([^<]*)</th>', html) == ["on"]
    values = re.findall(r'<input type="checkbox" name="answer" value="([^"]*)"', html)
    assert values == [f"0,{j}" for j in range(6)]
    assert "query on, key\n                  mat" in html  # each checkbox names its query and key
    assert '<script src="/static/answer.js" defer></script>' in html and "<script>" not in html


def test_a_form_answer_round_trips_to_a_marked_grid(cells_app):
    client = cells_app.test_client()
    response = answer_via_form(client, "cells", "query-on", ["0,0", "0,1", "0,4"])
    assert response.status_code == 303
    html = client.get(response.location).get_data(as_text=True)
    assert "Not quite" in html
    marks = re.findall(r'<td class="(is-[a-z]+)">', html)
    assert marks == ["is-hit", "is-hit", "is-missed", "is-missed", "is-wrong"]
    assert html.count("not picked, rightly") == 1


def test_a_refused_grid_keeps_the_ticks(cells_app):
    client = cells_app.test_client()
    response = answer_via_form(client, "cells", "query-on", ["0,1", "0,1"])
    assert response.status_code == 400
    html = response.get_data(as_text=True)
    assert "The cell [0, 1] is selected twice" in html
    assert re.findall(r'value="(\d,\d)"\s+checked', html) == ["0,1"]


def test_the_api_shows_the_grid_and_grades_pairs(cells_app):
    client = cells_app.test_client()
    shown = client.get("/api/banks/cells/questions/pairs").get_json()
    assert shown["grid"] == {"rows": ["1", "2"], "cols": ["k1", "k2", "k3"]} and shown["scoring"] == "net_correct"
    body = client.post("/api/banks/cells/questions/pairs/grade", json={"answer": [[0, 0], [1, 1]]}).get_json()
    assert body["correct"] is True and body["correct_answer"] == [[0, 0], [1, 1]] and body["feedback"] == []
    body = client.post("/api/banks/cells/questions/pairs/grade", json={"answer": [[0, 0]]}).get_json()
    assert body["score"] == 0.5 and body["correct"] is False


@pytest.mark.parametrize("answer, message", [
    ([[2, 0]], "The cell [2, 0] is outside the grid"),
    ([[0, 0], [0, 0]], "selected twice"),
    ([[0, "1"]], "Each cell is a [row, col] pair"),
    ([0, 1], "Each cell is a [row, col] pair"),
    ({"row": 0}, "This question needs the selected cells"),
])
def test_the_api_refuses_bad_cells_with_400(cells_app, answer, message):
    response = cells_app.test_client().post("/api/banks/cells/questions/pairs/grade", json={"answer": answer})
    assert response.status_code == 400
    assert message in response.get_json()["error"]["message"]


def test_the_script_enhances_without_inline_code():
    script = (Path(__file__).resolve().parent.parent / "static" / "answer.js").read_text(encoding="utf-8")
    assert 'querySelectorAll("table[data-cells]")' in script and 'classList.add("heatmap")' in script


# --- in the browser, with and without JavaScript -------------------------------------------------------


@pytest.mark.browser
@pytest.mark.parametrize("javascript", [True, False])
def test_a_student_picks_cells_and_fills_a_matrix_in_chromium(browser, live_server, javascript):
    context = browser.new_context(viewport={"width": 375, "height": 800}, java_script_enabled=javascript)
    page = context.new_page()
    page.goto(f"{live_server.url}/quiz/attention-practice/causal-mask-query-4")
    table = page.locator("table[data-cells]")
    assert ("heatmap" in (table.get_attribute("class") or "")) is javascript
    page.click("table[data-cells] td:nth-of-type(1) label")  # a click anywhere in the cell ticks it
    if javascript:
        page.keyboard.press("ArrowRight")  # the arrow keys move between cells, Space ticks
        page.keyboard.press("Space")
    else:
        page.click("table[data-cells] td:nth-of-type(2) label")
    for column in (3, 4):
        page.click(f"table[data-cells] td:nth-of-type({column}) label")
    assert page.locator("table[data-cells] input:checked").evaluate_all("els => els.map(e => e.value)") == \
        ["0,0", "0,1", "0,2", "0,3"]
    # The grid scrolls inside its own box at 375 px: the page itself never scrolls sideways.
    assert page.evaluate("document.documentElement.scrollWidth") <= 375
    page.click("button:has-text('Submit answer')")
    page.wait_for_url("**/causal-mask-query-4/answer")
    assert page.locator("#verdict").inner_text() == "Correct"
    assert page.locator(".cells-result td.is-hit").count() == 4

    page.goto(f"{live_server.url}/quiz/attention-practice/attention-output-2x2")
    page.fill("input[aria-label='Row 1, column 1']", "2 3 2.76 3.76")  # a pasted row fills the grid
    page.click("button:has-text('Submit answer')")
    page.wait_for_url("**/attention-output-2x2/answer")
    assert page.locator("#verdict").inner_text() == "Not quite"
    assert "without the" in page.locator(".misconception").inner_text()  # the no-√d_k slip
    context.close()
