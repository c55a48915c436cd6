"""Cross-field rules of the bank format, each reported at the exact field that breaks it.

Also normalises a question so the rest of the app sees one shape: the answer key always lives in the
options' `correct` flags (true_false gets its two options), numeric answers are floats, a matrix key is a
list of rows of floats, a cells key is sorted [row, col] pairs and its grid is labels.
"""

from __future__ import annotations

import math
from typing import Any, Callable

from . import variants
from .schema import Option, Question, Tolerance
from .yamlsource import Path

Problems = list[tuple[Path, str]]

TRUE_FALSE_OPTIONS = [Option(id="true", text="True"), Option(id="false", text="False")]


def _ids(options) -> str:
    return ", ".join(repr(o.id) for o in options)


def _finite(number: int | float) -> bool:
    """math.isfinite that also takes an int too large for a float (it raises OverflowError)."""
    try:
        return math.isfinite(number)
    except OverflowError:
        return False


def _show(value: Any) -> str:
    """A value as the author wrote it in YAML (true, not Python's True)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return "null" if value is None else repr(value)


# YAML reads `answer: 32` as a number, but option ids are text: the author must write "32".
_QUOTE_ONE_ID = '; an id that looks like a number must be quoted, like answer: "32"'
_QUOTE_IDS = '; ids that look like numbers must be quoted, like answer: ["32", "64"]'


# Question ids appear in URLs next to these words (/quiz/<bank>/summary), so they cannot be ids.
RESERVED_QUESTION_IDS = frozenset({"summary", "retake", "answer", "start"})


def check_unique_ids(raw_questions: list[Any]) -> Problems:
    problems: Problems = []
    first_index: dict[str, int] = {}
    for index, raw in enumerate(raw_questions):
        if not isinstance(raw, dict):
            continue
        qid = raw.get("id")
        if isinstance(qid, str):
            if qid in RESERVED_QUESTION_IDS:
                problems.append(((index, "id"), f"{qid!r} is reserved for the quiz's own pages; choose another id"))
            elif qid in first_index:
                problems.append(((index, "id"), f"duplicate question id {qid!r} (also questions[{first_index[qid]}]); "
                                 "give each question its own id"))
            else:
                first_index[qid] = index
        options = raw.get("options")
        if isinstance(options, list):
            seen: dict[str, int] = {}
            for o_index, option in enumerate(options):
                oid = option.get("id") if isinstance(option, dict) else None
                if not isinstance(oid, str):
                    continue
                if oid in seen:
                    problems.append(((index, "options", o_index, "id"),
                                     f"duplicate option id {oid!r} (also options[{seen[oid]}]); give each option its own id"))
                else:
                    seen[oid] = o_index
    return problems


def _forbid(question: Question, problems: Problems, allowed_for: dict[str, tuple[str, ...]]) -> None:
    for name, owners in allowed_for.items():
        if getattr(question, name) is not None and question.type not in owners:
            problems.append(((name,), f"'{name}' applies only to {' and '.join(owners)} questions; remove it"))


def _key_from_answer(question: Question, problems: Problems) -> set[str] | None:
    """The option ids named by `answer:` for a choice question, or None when it uses `correct:` flags."""
    answer = question.answer
    if answer is None:
        return None
    if any(o.correct is not None for o in question.options):
        problems.append((("answer",), "the key is given twice: use either 'answer:' or 'correct:' on the "
                         "options, not both"))
        return None
    if question.type == "single_choice":
        if not isinstance(answer, str):
            hint = _QUOTE_ONE_ID if isinstance(answer, (int, float)) and not isinstance(answer, bool) else ""
            problems.append((("answer",), f"a single_choice answer is one option id; got {_show(answer)}{hint}"))
            return None
        named = [answer]
    else:
        if isinstance(answer, str):
            answer = [answer]
        if not isinstance(answer, list) or not all(isinstance(a, str) for a in answer):
            numeric = isinstance(answer, list) and any(isinstance(a, (int, float)) for a in answer)
            hint = _QUOTE_IDS if numeric else ""
            problems.append((("answer",), f"a multiple_choice answer is a list of option ids; got {_show(answer)}{hint}"))
            return None
        named = answer
    known = {o.id for o in question.options}
    for position, option_id in enumerate(named):
        if option_id not in known:
            where = ("answer",) if question.type == "single_choice" else ("answer", position)
            problems.append((where, f"the answer key names option {option_id!r}, but there is no such option "
                             f"(options are {_ids(question.options)})"))
    return set(named) & known


def _check_choice(question: Question, problems: Problems) -> Question:
    if len(question.options) < 2:
        problems.append((("options",), f"a {question.type} question needs at least 2 options"))
        return question
    keyed = _key_from_answer(question, problems)
    if keyed is None:
        keyed = {o.id for o in question.options if o.correct}
    options = [o.model_copy(update={"correct": o.id in keyed}) for o in question.options]
    count = len(keyed)
    if question.type == "single_choice" and count != 1 and not problems:
        if count == 0:
            problems.append((("options",), "a single_choice question needs exactly one correct option; none is "
                             "marked (add 'correct: true' to one option, or 'answer: <option id>')"))
        else:
            problems.append((("options",), f"a single_choice question needs exactly one correct option; {count} "
                             f"are marked ({', '.join(sorted(keyed))}); use multiple_choice for several"))
    if question.type == "multiple_choice" and count == 0 and not problems:
        problems.append((("options",), "a multiple_choice question needs at least one correct option (mark it "
                         "with 'correct: true', or list ids in 'answer:')"))
    update: dict[str, Any] = {"options": options, "answer": None}
    if question.type == "multiple_choice" and question.scoring is None:
        update["scoring"] = "all_or_nothing"
    return question.model_copy(update=update)


def _check_true_false(question: Question, problems: Problems) -> Question:
    options = question.options or TRUE_FALSE_OPTIONS
    if {o.id for o in options} != {"true", "false"} or len(options) != 2:
        problems.append((("options",), "a true_false question's options, if given, are exactly two with ids "
                         "'true' and 'false' (to attach feedback); otherwise leave options out"))
        return question
    answer = question.answer
    if answer is None:
        flagged = [o.id for o in options if o.correct]
        if len(flagged) != 1:
            problems.append((("answer",), "a true_false question needs 'answer: true' or 'answer: false'"))
            return question
        answer = flagged[0] == "true"
    elif any(o.correct is not None for o in options):
        problems.append((("answer",), "the key is given twice: use 'answer:' and leave 'correct:' off the options"))
        return question
    elif isinstance(answer, str) and question.params:
        # A condition over the params, e.g. "focused(sentence, 1, 3)": variants.apply keys each variant.
        return question.model_copy(update={"options": sorted(options, key=lambda o: o.id != "true")})
    elif not isinstance(answer, bool):
        hint = (" (a condition like \"focused(sentence, 1, 3)\" needs params: declared on the question)"
                if isinstance(answer, str) and "(" in answer else "")
        problems.append((("answer",), f"a true_false answer is true or false (no quotes); got {_show(answer)}{hint}"))
        return question
    ordered = sorted(options, key=lambda o: o.id != "true")  # True first, as people expect
    keyed = [o.model_copy(update={"correct": (o.id == "true") == answer}) for o in ordered]
    return question.model_copy(update={"options": keyed, "answer": None})


def _check_numeric(question: Question, problems: Problems) -> Question:
    if question.options:
        problems.append((("options",), "a numeric question has no options; the student types a number"))
    answer = question.answer
    if answer is None:
        problems.append((("answer",), "a numeric question needs 'answer: <number>'"))
        return question
    if isinstance(answer, str) and question.params:
        # An expression over the params, e.g. "d_model / num_heads", checked by variants.check.
        return question.model_copy(update={"tolerance": question.tolerance or Tolerance()})
    if isinstance(answer, bool) or not isinstance(answer, (int, float)) or not _finite(answer):
        hint = " (an expression like \"d_model / num_heads\" needs params: declared on the question)" if isinstance(answer, str) else ""
        problems.append((("answer",), f"a numeric answer must be a finite number; got {_show(answer)}{hint}"))
        return question
    return question.model_copy(update={"answer": float(answer), "tolerance": question.tolerance or Tolerance()})


def _check_matrix_or_cells(question: Question, problems: Problems) -> Question:
    """A matrix key (nested list or expression) or a cells grid and key; concrete now unless it has params."""
    if question.options:
        problems.append((("options",), f"a {question.type} question has no options; the student fills in a grid"))
    if question.type == "cells" and question.grid is None:
        problems.append((("grid",), "a cells question needs 'grid: {rows: [...], cols: [...]}' (labels or counts)"))
    if question.answer is None:
        example = "[[0.5, 0.5]] or an expression" if question.type == "matrix" else "[[row, col], ...] pairs"
        problems.append((("answer",), f"a {question.type} question needs 'answer:', {example}"))
    if problems:
        return question
    update: dict[str, Any] = {}
    if question.type == "matrix":
        update["tolerance"] = question.tolerance or Tolerance()
    elif question.scoring is None:
        update["scoring"] = "all_or_nothing"
    question = question.model_copy(update=update)
    if question.params:
        return question  # each variant's key is made and checked by variants.check
    resolved, found = variants.resolve(question, {})
    problems.extend(found)
    return question.model_copy(update=resolved)


def _check_misconceptions(question: Question, problems: Problems) -> Question:
    """A numeric question's misconceptions, once its key is known (with params, variants.check does it)."""
    if not question.misconceptions or question.params or problems:
        return question
    resolved, found = variants.resolve(question, {})
    problems.extend(found)
    return question.model_copy(update=resolved)


def check_question(question: Question, raw: dict, visual_checker: Callable | None = None) -> tuple[Question, Problems]:
    problems: Problems = []
    _forbid(question, problems, {"scoring": ("multiple_choice", "cells"), "tolerance": ("numeric", "matrix"),
                                 "unit": ("numeric",), "grid": ("cells",),
                                 "misconceptions": ("numeric", "matrix")})
    if question.type == "true_false":
        question = _check_true_false(question, problems)
    elif question.type == "numeric":
        question = _check_misconceptions(_check_numeric(question, problems), problems)
    elif question.type in ("matrix", "cells"):
        question = _check_matrix_or_cells(question, problems)
    else:
        question = _check_choice(question, problems)
    if question.learn and question.learn.startswith("/") and "\\" in question.learn:
        # Browsers read a backslash in a URL as '/', so /\evil.example/path would open //evil.example/path.
        problems.append((("learn",), f"'{question.learn}' has a backslash, which browsers read as '/', so this site "
                                     "path could lead to another site; use '/' only"))
    if question.params:
        if not problems:
            problems.extend(variants.check(question, visual_checker))
    else:
        if question.where:
            problems.append((("where",), "'where' constrains params, but this question declares no params"))
        for path, text in _texts(question):
            if variants.PLACEHOLDER.search(text):
                problems.append((path, "uses {{ ... }} but the question declares no params; add params: or remove the braces"))
                break
        if question.visual is not None and visual_checker is not None:
            # A cells or numeric question's visual draws the student's prediction, so it must take the key.
            key = question.answer if question.type in ("cells", "numeric") and not problems else None
            for path, message in visual_checker(question.visual.kind, dict(question.visual.params), question.type,
                                                key, question.grid):
                problems.append((variants.from_visual(path), message))
    return question, problems


def _texts(question: Question):
    yield ("prompt",), question.prompt
    yield ("explanation",), question.explanation
    for i, option in enumerate(question.options):
        yield ("options", i, "text"), option.text
        if option.feedback:
            yield ("options", i, "feedback"), option.feedback
    for i, item in enumerate(question.misconceptions or ()):
        yield ("misconceptions", i, "feedback"), item.feedback
