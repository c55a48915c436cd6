"""Grading: strict parsing of a student's answer (JSON and form) and scoring by type and scheme.

Questions are built through the bank loader, so they have the normalised shape the app really grades.
"""

from __future__ import annotations

import itertools
from textwrap import dedent, indent

import pytest

from app.bank.loader import load_bank_bytes
from app.errors import BadInput
from app.grading import MAX_NUMERIC_TEXT, correct_answer, grade, parse_answer, parse_form_answer, score_choice


def make_question(body: str):
    """One question from its YAML (a `- id: ...` list item)."""
    text = "id: demo\ntitle: Demo\nquestions:\n" + indent(dedent(body), "  ")
    result = load_bank_bytes(text.encode(), "bank.yaml")
    assert result.errors == (), [str(e) for e in result.errors]
    (question,) = result.bank.questions
    return question


TRUE_FALSE = make_question("""\
    - id: fact
      type: true_false
      prompt: Attention weights in a row sum to 1.
      explanation: Softmax normalises each row.
      answer: true
""")

SINGLE = make_question("""\
    - id: pick
      type: single_choice
      prompt: Head size for d_model 128 and 4 heads?
      explanation: $128 / 4 = 32$.
      answer: "32"
      options:
        - {id: "32", text: 32, feedback: Right.}
        - {id: "64", text: 64}
        - {id: "128", text: "**128**"}
""")


def multi(scoring: str):
    """Five options, a, b and c correct, graded by `scoring`."""
    return make_question(f"""\
        - id: many
          type: multiple_choice
          scoring: {scoring}
          prompt: Which are projections of the input?
          explanation: Q, K and V are.
          answer: [a, b, c]
          options:
            - {{id: a, text: Queries}}
            - {{id: b, text: Keys}}
            - {{id: c, text: Values}}
            - {{id: d, text: Embeddings}}
            - {{id: e, text: Positions}}
    """)


MULTI = {scheme: multi(scheme) for scheme in ("all_or_nothing", "net_correct", "per_option")}


def numeric(answer, tolerance: str = ""):
    return make_question(f"""\
        - id: value
          type: numeric
          prompt: P
          explanation: E
          answer: {answer}
    """ + (f"      tolerance: {tolerance}\n" if tolerance else ""))


NUMERIC = numeric(8)
WITH_UNIT = make_question("""\
    - id: cost
      type: numeric
      prompt: P
      explanation: E
      answer: 1280000
      unit: multiply-adds
""")


# --------------------------------------------------------------------------------------------------
# parse_answer: JSON-shaped answers from the API

@pytest.mark.parametrize("question, value, parsed", [
    (TRUE_FALSE, True, True),
    (TRUE_FALSE, False, False),
    (SINGLE, "64", "64"),
    (MULTI["net_correct"], ["c", "a"], ["a", "c"]),  # returned in the options' order
    (NUMERIC, 8, 8.0),
    (NUMERIC, -0.5, -0.5),
])
def test_parse_answer_accepts(question, value, parsed):
    result = parse_answer(question, value)
    assert result == parsed and type(result) is type(parsed)


def test_an_empty_selection_is_refused_by_the_api_as_by_the_form():
    # Under per_option scoring an empty list would otherwise earn credit for the untouched wrong options.
    with pytest.raises(BadInput, match="Select at least one option: an empty list is not an answer."):
        parse_answer(MULTI["per_option"], [])


OPTION_IDS = "Options are '32', '64', '128'."


@pytest.mark.parametrize("question, value, message", [
    (TRUE_FALSE, None, 'The answer is missing: send {"answer": ...}.'),
    (SINGLE, None, 'The answer is missing: send {"answer": ...}.'),
    (TRUE_FALSE, "true", "This is a true/false question: answer with true or false."),
    (TRUE_FALSE, 1, "This is a true/false question: answer with true or false."),
    (SINGLE, "256", f"There is no option '256' in this question. {OPTION_IDS}"),
    (SINGLE, 32, f"An option id must be a string; got int. {OPTION_IDS}"),
    (SINGLE, ["32"], f"An option id must be a string; got list. {OPTION_IDS}"),
    (MULTI["net_correct"], "a", "This question accepts several options: answer with a list of option ids."),
    (MULTI["net_correct"], ["a", "z"],
     "There is no option 'z' in this question. Options are 'a', 'b', 'c', 'd', 'e'."),
    (MULTI["net_correct"], ["a", 1],
     "An option id must be a string; got int. Options are 'a', 'b', 'c', 'd', 'e'."),
    (MULTI["net_correct"], ["a", "b", "a"], "Each option may be chosen only once."),
    (NUMERIC, True, "This question needs a finite number as its answer."),
    (NUMERIC, "8", "This question needs a finite number as its answer."),
    (NUMERIC, float("nan"), "This question needs a finite number as its answer."),
    (NUMERIC, float("inf"), "This question needs a finite number as its answer."),
    (NUMERIC, float("-inf"), "This question needs a finite number as its answer."),
    (NUMERIC, [8], "This question needs a finite number as its answer."),
])
def test_parse_answer_refuses(question, value, message):
    with pytest.raises(BadInput) as caught:
        parse_answer(question, value)
    assert caught.value.message == message
    assert caught.value.status == 400


def test_unknown_option_id_is_truncated_in_the_message():
    with pytest.raises(BadInput) as caught:
        parse_answer(SINGLE, "x" * 500)
    assert caught.value.message == f"There is no option {'x' * 40!r} in this question. {OPTION_IDS}"


# --------------------------------------------------------------------------------------------------
# parse_form_answer: the `answer` fields of a submitted HTML form (always strings)

@pytest.mark.parametrize("question, values, parsed", [
    (TRUE_FALSE, ["true"], True),
    (TRUE_FALSE, [" false "], False),
    (SINGLE, ["128"], "128"),
    (MULTI["per_option"], ["e", "a"], ["a", "e"]),
    (NUMERIC, ["8"], 8.0),
    (NUMERIC, [" 0.5 "], 0.5),
    (NUMERIC, ["\u22123"], -3.0),  # a typographic minus sign, as pasted from a document
    (NUMERIC, ["1e3"], 1000.0),
    # The unit the page prints beside the field, typed after the number, as Moodle allows
    (WITH_UNIT, ["1,280,000 multiply-adds"], 1280000.0),
    (WITH_UNIT, ["1280000 Multiply-Adds"], 1280000.0),
    (WITH_UNIT, ["1280000multiply-adds"], 1280000.0),
])
def test_parse_form_answer_accepts(question, values, parsed):
    assert parse_form_answer(question, values) == parsed


@pytest.mark.parametrize("question, values, message", [
    (MULTI["per_option"], [], "Select at least one option, then submit."),
    (MULTI["per_option"], ["a", "a"], "Each option may be chosen only once."),
    (MULTI["per_option"], ["a", "zz"], "There is no option 'zz' in this question. Options are 'a', 'b', 'c', "
                                       "'d', 'e'."),
    (TRUE_FALSE, [], "Choose an answer, then submit."),
    (TRUE_FALSE, ["true", "false"], "Choose an answer, then submit."),
    (TRUE_FALSE, ["yes"], "This is a true/false question: choose True or False."),
    (SINGLE, ["  "], "Choose an answer, then submit."),
    (SINGLE, ["32", "64"], "Choose an answer, then submit."),
    (SINGLE, ["256"], f"There is no option '256' in this question. {OPTION_IDS}"),
    (NUMERIC, [], "Type a number, then submit."),
    (NUMERIC, [""], "Type a number, then submit."),
    (NUMERIC, ["eight"], "'eight' is not a number; type digits like 32 or 0.5."),
    (NUMERIC, ["0,5"], "'0,5' is not a number; write decimals with a point (0.5, not 0,5)."),
    (NUMERIC, ["4_194_304"], "'4_194_304' is not a number; type digits like 32 or 0.5."),
    (NUMERIC, ["4,19,304"], "'4,19,304' is not a number; write decimals with a point (0.5, not 0,5)."),
    (NUMERIC, ["nan"], "This question needs a finite number as its answer."),
    (NUMERIC, ["inf"], "This question needs a finite number as its answer."),
    (NUMERIC, ["1e999"], "This question needs a finite number as its answer."),
    (NUMERIC, ["1" * (MAX_NUMERIC_TEXT + 1)], "That number is too long; type it with fewer digits."),
    (NUMERIC, ["8 multiply-adds"], "'8 multiply-adds' is not a number; type digits like 32 or 0.5."),  # no unit
    (WITH_UNIT, ["multiply-adds"], "'multiply-adds' is not a number; type digits like 32 or 0.5."),
    (WITH_UNIT, ["1280000 flops"], "'1280000 flops' is not a number; type digits like 32 or 0.5."),
])
def test_parse_form_answer_refuses(question, values, message):
    with pytest.raises(BadInput) as caught:
        parse_form_answer(question, values)
    assert caught.value.message == message


@pytest.mark.parametrize("typed, number", [("4,194,304", 4194304.0), ("-1,234.5", -1234.5), ("\u22122", -2.0)])
def test_a_number_may_be_typed_as_the_pages_write_it(typed, number):
    assert parse_form_answer(NUMERIC, [typed]) == number


def test_numeric_text_at_the_length_limit_is_accepted():
    assert parse_form_answer(NUMERIC, ["1" * MAX_NUMERIC_TEXT]) == float("1" * MAX_NUMERIC_TEXT)


# --------------------------------------------------------------------------------------------------
# grade: single-answer types

def test_true_false_grading():
    right, wrong = grade(TRUE_FALSE, True), grade(TRUE_FALSE, False)
    assert (right.correct, right.score, right.verdict) == (True, 1.0, "correct")
    assert (wrong.correct, wrong.score, wrong.verdict) == (False, 0.0, "incorrect")
    assert wrong.correct_answer is True and wrong.answer is False
    assert [(f.option_id, f.selected, f.correct) for f in wrong.options] == [("true", False, True),
                                                                            ("false", True, False)]


def test_single_choice_grading_and_feedback():
    right = grade(SINGLE, "32")
    assert (right.correct, right.score, right.correct_answer) == (True, 1.0, "32")
    wrong = grade(SINGLE, "128")
    assert (wrong.correct, wrong.score, wrong.verdict) == (False, 0.0, "incorrect")
    assert [(f.option_id, f.selected, f.correct) for f in wrong.options] == [
        ("32", False, True), ("64", False, False), ("128", True, False)]
    assert wrong.options[0].feedback == "Right."
    assert wrong.options[1].feedback is None


def test_a_grade_is_data_with_the_markdown_left_to_the_views():
    result = grade(SINGLE, "128")
    assert result.options[2].text == "**128**"
    assert result.explanation == "$128 / 4 = 32$."
    assert not any("<" in str(value) for value in vars(result).values() if isinstance(value, str))


def test_correct_answer_for_every_type():
    assert correct_answer(TRUE_FALSE) is True
    assert correct_answer(SINGLE) == "32"
    assert correct_answer(MULTI["net_correct"]) == ["a", "b", "c"]
    assert correct_answer(NUMERIC) == 8.0


def test_false_is_the_key_of_a_false_statement():
    question = make_question("""\
        - id: fact
          type: true_false
          prompt: P
          explanation: E
          answer: false
    """)
    assert correct_answer(question) is False
    assert grade(question, False).correct and not grade(question, True).correct


# --------------------------------------------------------------------------------------------------
# grade: multiple_choice and its three schemes (options a-e; a, b, c correct)

# (picked, all_or_nothing, net_correct, per_option), worked by hand from the formulas:
#   net_correct = max(0, (right picks - wrong picks) / #correct)
#   per_option  = (#options judged right: picked if correct, left if not) / #options
SCHEME_CASES = [
    ("abc", 1.0, 1.0, 1.0),
    ("ab", 0.0, 2 / 3, 4 / 5),
    ("a", 0.0, 1 / 3, 3 / 5),
    ("abd", 0.0, 1 / 3, 3 / 5),
    ("abcd", 0.0, 2 / 3, 4 / 5),
    ("abcde", 0.0, 1 / 3, 3 / 5),
    ("ad", 0.0, 0.0, 2 / 5),
    ("de", 0.0, 0.0, 0 / 5),
    ("ade", 0.0, 0.0, 1 / 5),   # 1 right - 2 wrong < 0, floored at 0
]


@pytest.mark.parametrize("picked, all_or_nothing, net_correct, per_option", SCHEME_CASES)
def test_multiple_choice_schemes_on_worked_cases(picked, all_or_nothing, net_correct, per_option):
    expected = {"all_or_nothing": all_or_nothing, "net_correct": net_correct, "per_option": per_option}
    for scheme, score in expected.items():
        result = grade(MULTI[scheme], parse_answer(MULTI[scheme], list(picked)))
        assert result.score == round(score, 6), scheme
        assert result.correct is (score == 1.0)
        assert result.verdict == ("correct" if score == 1.0 else "partial" if score > 0 else "incorrect")


def test_multiple_choice_schemes_match_their_formulas_on_every_selection():
    ids = "abcde"
    correct = set("abc")
    for size in range(len(ids) + 1):
        for picked in map(set, itertools.combinations(ids, size)):
            right, wrong = len(picked & correct), len(picked - correct)
            judged_right = sum((i in picked) == (i in correct) for i in ids)
            assert score_choice(MULTI["all_or_nothing"], picked) == (1.0 if picked == correct else 0.0)
            assert score_choice(MULTI["net_correct"], picked) == pytest.approx(max(0, (right - wrong) / 3))
            assert score_choice(MULTI["per_option"], picked) == pytest.approx(judged_right / 5)


def test_multiple_choice_feedback_marks_picks_and_key():
    result = grade(MULTI["net_correct"], ["a", "d"])
    assert [(f.option_id, f.selected, f.correct) for f in result.options] == [
        ("a", True, True), ("b", False, True), ("c", False, True), ("d", True, False), ("e", False, False)]
    assert result.correct_answer == ["a", "b", "c"]


def test_partial_scores_are_rounded_for_display():
    assert grade(MULTI["net_correct"], ["a"]).score == 0.333333


def test_scoring_applies_only_to_multiple_choice():
    # A single_choice question is all-or-nothing whatever else it picks.
    assert score_choice(SINGLE, {"32"}) == 1.0
    assert score_choice(SINGLE, {"64"}) == 0.0


# --------------------------------------------------------------------------------------------------
# grade: numeric tolerance, |x - answer| <= max(abs, rel * |answer|)

@pytest.mark.parametrize("answer, tolerance, given, right", [
    (8, "", 8.0, True),                        # no tolerance: exact
    (8, "", 8.000001, False),
    (32, "{abs: 0.5}", 32.5, True),            # the boundary itself is accepted
    (32, "{abs: 0.5}", 31.5, True),
    (32, "{abs: 0.5}", 32.5000001, False),
    (32, "{abs: 0.5}", 31.4999999, False),
    (200, "{rel: 0.01}", 202.0, True),         # 1 % of 200 = 2
    (200, "{rel: 0.01}", 198.0, True),
    (200, "{rel: 0.01}", 202.0001, False),
    (-200, "{rel: 0.01}", -202.0, True),       # rel is taken of |answer|
    (-200, "{rel: 0.01}", -197.9, False),
    (200, "{abs: 1, rel: 0.01}", 201.5, True),  # the larger of the two wins: 2
    (10, "{abs: 1, rel: 0.01}", 11.0, True),    # here abs is larger: 1
    (10, "{abs: 1, rel: 0.01}", 11.01, False),
    (0, "{rel: 0.5}", 0.001, False),           # rel of a zero answer is zero
    (0.3, "{abs: 0.1}", 0.4, True),            # 0.4 - 0.3 is 0.10000000000000003 in binary floats
    (0.3, "{abs: 0.1}", 0.2, True),
    (0.3, "{abs: 0.1}", 0.4000001, False),
])
def test_numeric_tolerance(answer, tolerance, given, right):
    question = numeric(answer, tolerance)
    result = grade(question, parse_answer(question, given))
    assert result.correct is right
    assert result.score == (1.0 if right else 0.0)
    assert result.correct_answer == float(answer)
    assert result.options == []


def test_numeric_form_answer_is_graded_end_to_end():
    question = numeric(32, "{abs: 0.5}")
    assert grade(question, parse_form_answer(question, [" 32.4 "])).verdict == "correct"
    assert grade(question, parse_form_answer(question, ["33"])).verdict == "incorrect"
