"""Turn a student's raw answer into a validated answer, and a validated answer into a grade.

Parsing is strict (a tampered form or API call is a BadInput with a sentence); scoring follows the
question type and, for multi-select, its partial-credit scheme (formulas in docs/authoring.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from .bank.schema import Question
from .errors import BadInput

Answer = bool | str | list[str] | float

MAX_NUMERIC_TEXT = 64


@dataclass(frozen=True)
class GradedOption:
    """One option of a graded question: its Markdown text and feedback, and whether it was chosen and right."""

    option_id: str
    text: str
    selected: bool
    correct: bool
    feedback: str | None


@dataclass(frozen=True)
class Grade:
    """A graded answer as data; views render the Markdown (`explanation`, each option's text and feedback)."""

    correct: bool
    score: float  # 0..1
    answer: Answer
    correct_answer: Answer
    options: list[GradedOption] = field(default_factory=list)  # none for a numeric question
    explanation: str = ""

    @property
    def verdict(self) -> str:
        if self.correct:
            return "correct"
        return "partial" if self.score > 0 else "incorrect"


def correct_answer(question: Question) -> Answer:
    if question.type == "true_false":
        return bool(question.option("true").correct)
    if question.type == "single_choice":
        return question.correct_option_ids[0]
    if question.type == "multiple_choice":
        return list(question.correct_option_ids)
    return question.answer


def _option_ids(question: Question) -> str:
    return ", ".join(repr(o.id) for o in question.options)


def _check_option(question: Question, value: Any) -> str:
    if not isinstance(value, str):
        raise BadInput(f"An option id must be a string; got {type(value).__name__}. Options are {_option_ids(question)}.")
    if question.option(value) is None:
        raise BadInput(f"There is no option {value[:40]!r} in this question. Options are {_option_ids(question)}.")
    return value


def parse_answer(question: Question, value: Any) -> Answer:
    """Validate a JSON-shaped answer: true|false, an option id, a list of option ids, or a number."""
    if value is None:
        raise BadInput("The answer is missing: send {\"answer\": ...}.")
    if question.type == "true_false":
        if not isinstance(value, bool):
            raise BadInput("This is a true/false question: answer with true or false.")
        return value
    if question.type == "single_choice":
        return _check_option(question, value)
    if question.type == "multiple_choice":
        if not isinstance(value, list):
            raise BadInput("This question accepts several options: answer with a list of option ids.")
        if not value:
            raise BadInput("Select at least one option: an empty list is not an answer.")
        chosen = [_check_option(question, item) for item in value]
        if len(set(chosen)) != len(chosen):
            raise BadInput("Each option may be chosen only once.")
        return sorted(chosen, key=question.index_of_option)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BadInput("This question needs a finite number as its answer.")
    try:
        number = float(value)  # a JSON integer may be too large for a float
    except OverflowError:
        raise BadInput("That number is too large; this question needs a finite number as its answer.") from None
    if not math.isfinite(number):
        raise BadInput("This question needs a finite number as its answer.")
    return number


def parse_form_answer(question: Question, values: list[str]) -> Answer:
    """Validate the `answer` field(s) of a submitted HTML form."""
    if question.type == "multiple_choice":
        if not values:
            raise BadInput("Select at least one option, then submit.")
        return parse_answer(question, values)
    if len(values) != 1 or not values[0].strip():
        raise BadInput("Choose an answer, then submit." if question.type != "numeric" else "Type a number, then submit.")
    raw = values[0].strip()
    if question.type == "true_false":
        if raw not in ("true", "false"):
            raise BadInput("This is a true/false question: choose True or False.")
        return raw == "true"
    if question.type == "single_choice":
        return parse_answer(question, raw)
    if len(raw) > MAX_NUMERIC_TEXT:
        raise BadInput("That number is too long; type it with fewer digits.")
    try:
        number = float(raw.replace("\u2212", "-"))
    except ValueError:
        raise BadInput(f"{raw!r} is not a number; type digits like 32 or 0.5.") from None
    return parse_answer(question, number)


def _selected_ids(question: Question, answer: Answer) -> set[str]:
    if question.type == "true_false":
        return {"true" if answer else "false"}
    if question.type == "single_choice":
        return {answer}
    return set(answer)


def score_choice(question: Question, selected: set[str]) -> float:
    correct = set(question.correct_option_ids)
    if question.type != "multiple_choice" or question.scoring == "all_or_nothing":
        return 1.0 if selected == correct else 0.0
    if question.scoring == "net_correct":
        # (right picks - wrong picks) / number of right options, floored at 0
        return max(0.0, (len(selected & correct) - len(selected - correct)) / len(correct))
    # per_option: the fraction of options judged right (picked iff correct)
    judged_right = sum((o.id in selected) == bool(o.correct) for o in question.options)
    return judged_right / len(question.options)


def grade(question: Question, answer: Answer) -> Grade:
    """Grade an answer already validated by parse_answer / parse_form_answer."""
    if question.type == "numeric":
        right = question.tolerance.accepts(answer, question.answer)
        return Grade(right, 1.0 if right else 0.0, answer, question.answer, [], question.explanation)
    selected = _selected_ids(question, answer)
    score = round(score_choice(question, selected), 6)
    options = [GradedOption(o.id, o.text, o.id in selected, bool(o.correct), o.feedback) for o in question.options]
    return Grade(score == 1.0, score, answer, correct_answer(question), options, question.explanation)
