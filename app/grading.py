"""Turn a student's raw answer into a validated answer, and a validated answer into a grade.

Parsing is strict (a tampered form or API call is a BadInput with a sentence); scoring follows the
question type and, for multi-select and cells, its partial-credit scheme (formulas in docs/authoring.md).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

from .bank.messages import describe_value
from .bank.schema import MAX_GRID_SIDE, Bank, Misconception, Question
from .errors import BadInput

# true/false, an option id, option ids, a number, a matrix (rows of numbers), or cells ([row, col] pairs)
Answer = bool | str | list[str] | float | list[list[float]] | list[list[int]]

MAX_NUMERIC_TEXT = 64
MAX_ENTRIES = MAX_GRID_SIDE * MAX_GRID_SIDE  # numbers in a matrix answer, cells in a cells answer
PASTE_SEPARATORS = re.compile(r"[\s,;\[\]]+")  # a row pasted in the first cell: "0.67 0.24 0.09", "[1, 2; 3, 4]"
THOUSANDS = re.compile(r"-?\d{1,3}(,\d{3})+(\.\d*)?")  # 4,194,304 and 33,554,432.5

# Raise it when a release scores a stored answer differently (grade(), parse_answer, the try_again penalty, or a
# key's value: the variant and expression code in app/bank, a NumPy upgrade that moves a computed key): every
# stored answer's key_version then differs, and the bank pages check each answer once more.
GRADING_RULES = 1


def key_version(bank: Bank, question: Question) -> str:
    """16 hex digits naming everything a try's stored scores come from: the question as written (a question
    template, its params included), the bank's feedback, tries and penalty, and GRADING_RULES. A wording edit
    changes it too: then the bank page grades those answers again once, finds their scores unchanged, and
    records that they were checked against this version."""
    written = {"rules": GRADING_RULES, "question": question.model_dump(mode="json"),
               "tries": [bank.feedback, bank.tries, bank.penalty]}
    return hashlib.sha256(json.dumps(written, sort_keys=True).encode()).hexdigest()[:16]


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
    options: list[GradedOption] = field(default_factory=list)  # none for numeric, matrix and cells questions
    explanation: str = ""
    misconception: Misconception | None = None  # the common slip a wrong answer matches (its .id, .feedback)
    graded: float | None = None  # when `score` is a stored one: the score against the key as it is now

    @property
    def verdict(self) -> str:
        if self.correct:
            return "correct"
        return "partial" if (self.score if self.graded is None else self.graded) > 0 else "incorrect"

    @property
    def key_changed(self) -> bool:
        """The stored score differs from a grading now: the key was edited since, and no regrade followed it."""
        return self.graded is not None and abs(self.graded - self.score) > 1e-6


def correct_answer(question: Question) -> Answer:
    if question.type == "true_false":
        return bool(question.option("true").correct)
    if question.type == "single_choice":
        return question.correct_option_ids[0]
    if question.type == "multiple_choice":
        return list(question.correct_option_ids)
    return question.answer  # a number, a matrix's rows, or the key's [row, col] pairs


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
        if len(value) > len(question.options):  # checked first: each id is looked up among the options
            raise BadInput(f"This question has {len(question.options)} options, and each may be chosen only once.")
        chosen = [_check_option(question, item) for item in value]
        if len(set(chosen)) != len(chosen):
            raise BadInput("Each option may be chosen only once.")
        return sorted(chosen, key=question.index_of_option)
    if question.type == "matrix":
        return _parse_matrix(question, value)
    if question.type == "cells":
        return _parse_cells(question, value)
    return _finite_number(value, "This question needs a finite number as its answer.")


def _finite_number(value: Any, message: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BadInput(message)
    try:
        number = float(value)  # a JSON integer may be too large for a float
    except OverflowError:
        raise BadInput(f"That number is too large. {message}") from None
    if not math.isfinite(number):
        raise BadInput(message)
    return number


def _shape_text(rows: int, cols: int) -> str:
    return f"{rows} row{'s' if rows != 1 else ''} of {cols} number{'s' if cols != 1 else ''}"


def _parse_matrix(question: Question, value: Any) -> list[list[float]]:
    rows, cols = question.shape
    example = "[[" + ", ".join(["0.5"] * cols) + "]" + (", ..." if rows > 1 else "") + "]"
    if not isinstance(value, list) or not all(isinstance(row, list) for row in value):
        raise BadInput(f"This question needs a matrix: a list of rows, like {example}.")
    if sum(len(row) for row in value) > MAX_ENTRIES:
        raise BadInput(f"Too many entries: a matrix answer has at most {MAX_ENTRIES} numbers; this one needs "
                       f"{_shape_text(rows, cols)}.")
    if len(value) != rows or any(len(row) != cols for row in value):
        given = ", ".join(str(len(row)) for row in value) or "none"
        raise BadInput(f"The answer must be {rows}×{cols} ({_shape_text(rows, cols)}); got {len(value)} row(s) "
                       f"with {given} number(s).")
    return [[_finite_number(entry, f"Row {i + 1}, column {j + 1} must be a finite number; got {describe_value(entry)}.")
             for j, entry in enumerate(row)] for i, row in enumerate(value)]


def _parse_cells(question: Question, value: Any) -> list[list[int]]:
    rows, cols = question.shape
    if not isinstance(value, list):
        raise BadInput("This question needs the selected cells: a list of [row, col] pairs, like [[0, 1], [1, 1]].")
    if not value:
        raise BadInput("Select at least one cell: an empty list is not an answer.")
    if len(value) > rows * cols:
        raise BadInput(f"Too many cells: the grid has only {rows * cols}.")
    seen: set[tuple[int, int]] = set()
    for pair in value:
        if not (isinstance(pair, list) and len(pair) == 2
                and all(isinstance(x, int) and not isinstance(x, bool) for x in pair)):
            raise BadInput("Each cell is a [row, col] pair of whole numbers counted from 0, like [0, 1].")
        row, col = pair
        if not (0 <= row < rows and 0 <= col < cols):
            raise BadInput(f"The cell [{row}, {col}] is outside the grid: rows are 0 to {rows - 1} and columns "
                           f"0 to {cols - 1}.")
        if (row, col) in seen:
            raise BadInput(f"The cell [{row}, {col}] is selected twice; select each cell once.")
        seen.add((row, col))
    return [list(cell) for cell in sorted(seen)]


def _number_text(raw: str) -> float:
    """A number a student typed (a minus sign may be U+2212), with commas between groups of three digits as the
    pages write counts (4,194,304); ValueError if it is not one."""
    if len(raw) > MAX_NUMERIC_TEXT:
        raise BadInput("That number is too long; type it with fewer digits.")
    text = raw.replace("\u2212", "-")
    if THOUSANDS.fullmatch(text):
        text = text.replace(",", "")
    if "_" in text:  # float() reads 4_194_304, which is Python's, not a way anyone writes a number
        raise ValueError(raw)
    return float(text)


def _not_a_number(text: str, examples: str, where: str = "") -> str:
    """Why `text` (in `where`) is not a number, for the student: with a comma, that decimals take a point."""
    hint = "write decimals with a point (0.5, not 0,5)" if "," in text else f"type digits like {examples}"
    return f"{text[:40]!r}{f' in {where}' if where else ''} is not a number; {hint}."


def _parse_form_matrix(question: Question, values: list[str]) -> list[list[float]]:
    rows, cols = question.shape
    if len(values) > MAX_ENTRIES:
        raise BadInput(f"Too many entries: this answer has {rows * cols} cells.")
    texts = [value.strip() for value in values]
    if len(texts) > 1 and texts[0] and not any(texts[1:]) and PASTE_SEPARATORS.search(texts[0]):
        texts = [text for text in PASTE_SEPARATORS.split(texts[0]) if text]  # a pasted row fills the grid
        if len(texts) != rows * cols:
            comma = ("; a comma separates numbers here, so write decimals with a point (0.67, not 0,67)"
                     if len(texts) == 2 * rows * cols and "," in values[0] else "")
            raise BadInput(f"The pasted row has {len(texts)} numbers; this answer needs {rows * cols} "
                           f"({_shape_text(rows, cols)}){comma}.")
    if len(texts) != rows * cols:
        raise BadInput(f"The answer must be {rows}×{cols}: send {rows * cols} numbers, one per cell.")
    if not any(texts):
        raise BadInput("Type a number in each cell, then submit.")
    numbers = []
    for index, text in enumerate(texts):
        where = f"row {index // cols + 1}, column {index % cols + 1}"
        if not text:
            raise BadInput(f"The cell in {where} is empty; type a number in each cell.")
        try:
            number = _number_text(text)
        except ValueError:
            raise BadInput(_not_a_number(text, "0.5", where)) from None
        if not math.isfinite(number):
            raise BadInput(f"The cell in {where} must be a finite number; got {text[:40]!r}.")
        numbers.append(number)
    return parse_answer(question, [numbers[i * cols:(i + 1) * cols] for i in range(rows)])


def _parse_form_cells(question: Question, values: list[str]) -> list[list[int]]:
    if not values:
        raise BadInput("Select at least one cell, then submit.")
    if len(values) > MAX_ENTRIES:
        raise BadInput(f"Too many cells: a grid has at most {MAX_ENTRIES}.")
    pairs = []
    for value in values:
        parts = value.split(",")
        if len(parts) != 2 or not all(p.strip().isascii() and p.strip().isdigit() and len(p.strip()) <= 3
                                      for p in parts):
            raise BadInput(f"{value[:40]!r} is not a cell; a cell is sent as \"row,col\", like \"0,1\".")
        pairs.append([int(part) for part in parts])
    return parse_answer(question, pairs)


def parse_form_answer(question: Question, values: list[str]) -> Answer:
    """Validate the `answer` field(s) of a submitted HTML form."""
    if question.type == "multiple_choice":
        if not values:
            raise BadInput("Select at least one option, then submit.")
        return parse_answer(question, values)
    if question.type == "matrix":
        return _parse_form_matrix(question, values)
    if question.type == "cells":
        return _parse_form_cells(question, values)
    if len(values) != 1 or not values[0].strip():
        raise BadInput("Choose an answer, then submit." if question.type != "numeric" else "Type a number, then submit.")
    raw = values[0].strip()
    if question.type == "true_false":
        if raw not in ("true", "false"):
            raise BadInput("This is a true/false question: choose True or False.")
        return raw == "true"
    if question.type == "single_choice":
        return parse_answer(question, raw)
    unit = (question.unit or "").strip()
    if unit and raw.casefold().endswith(unit.casefold()) and raw[:-len(unit)].strip():
        raw = raw[:-len(unit)].strip()  # "1280000 multiply-adds": the unit the page prints beside the field
    try:
        number = _number_text(raw)
    except ValueError:
        raise BadInput(_not_a_number(raw, "32 or 0.5")) from None
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


def score_cells(question: Question, selected: set[tuple[int, int]]) -> float:
    """As score_choice, with every cell of the grid an option and the key's cells the right ones."""
    correct = {tuple(cell) for cell in question.answer}
    if question.scoring == "net_correct":
        return max(0.0, (len(selected & correct) - len(selected - correct)) / len(correct))
    if question.scoring == "per_option":
        rows, cols = question.shape
        return (rows * cols - len(selected ^ correct)) / (rows * cols)  # cells judged right
    return 1.0 if selected == correct else 0.0


def _matches(question: Question, given: Any, expected: Any) -> bool:
    """A number or matrix within the question's tolerance of `expected` (entry by entry)."""
    if question.type == "numeric":
        return question.tolerance.accepts(given, expected)
    return all(question.tolerance.accepts(g, e) for g_row, e_row in zip(given, expected) for g, e in zip(g_row, e_row))


def grade(question: Question, answer: Answer) -> Grade:
    """Grade an answer already validated by parse_answer / parse_form_answer."""
    if question.type in ("numeric", "matrix"):
        right = _matches(question, answer, question.answer)
        slip = None if right else next(
            (m for m in question.misconceptions or () if _matches(question, answer, m.answer)), None)
        return Grade(right, 1.0 if right else 0.0, answer, question.answer, [], question.explanation, slip)
    if question.type == "cells":
        score = round(score_cells(question, {tuple(cell) for cell in answer}), 6)
        return Grade(score == 1.0, score, answer, question.answer, [], question.explanation)
    selected = _selected_ids(question, answer)
    score = round(score_choice(question, selected), 6)
    options = [GradedOption(o.id, o.text, o.id in selected, bool(o.correct), o.feedback) for o in question.options]
    return Grade(score == 1.0, score, answer, correct_answer(question), options, question.explanation)
