"""Self-test question banks: for every question and seed, the key scores 1, each wrong answer scores
below 1, each misconception's answer scores 0 and gets its feedback, malformed answers are refused with
BadInput, and the visual renders.

Each check is independent of the loader's: the key is rebuilt from the concrete question, and answers
go through the same parse_answer and grade as a student's.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..bank.registry import load_paths
from ..bank.schema import Bank, Question
from ..bank.variants import VariantError, apply, draw, has_params, instantiate
from ..errors import BadInput
from ..grading import grade, parse_answer
from ..visuals import check_visual, get_kind
from ..visuals.base import Rendered, VisualKind, VisualParams
from ..visuals.service import canonical
from ..web.formats import number

Renderer = Callable[[VisualKind, VisualParams], Rendered]

UNKNOWN_OPTION = "__no-such-option__"  # never a valid option id: ids start with a letter or digit
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
NOT_LOADED = "(does not load)"  # the question column of a bank file that failed to load


@dataclass(frozen=True)
class Failure:
    bank: str
    question: str
    seed: int | None
    check: str
    detail: str

    def __str__(self) -> str:
        seed = "-" if self.seed is None else self.seed
        return f"{self.bank} / {self.question} / seed {seed} / {self.check}: {self.detail}"


@dataclass
class QuestionResult:
    bank: str
    question: str
    seeds: int = 0
    passed: int = 0
    failures: list[Failure] = field(default_factory=list)


@dataclass
class Report:
    results: list[QuestionResult] = field(default_factory=list)

    @property
    def failures(self) -> list[Failure]:
        return [f for r in self.results for f in r.failures]

    @property
    def passed(self) -> int:
        return sum(r.passed for r in self.results)


class _Problem(Exception):
    """A check found something wrong; the message says what."""


def answer_key(question: Question) -> Any:
    """The answer that must score 1, rebuilt from the concrete question."""
    if question.type == "true_false":
        option = question.option("true")
        if option is None or question.option("false") is None:
            raise _Problem("a true_false question needs the options 'true' and 'false'")
        return bool(option.correct)
    if question.type == "numeric":
        if isinstance(question.answer, bool) or not isinstance(question.answer, (int, float)) \
                or not math.isfinite(question.answer):
            raise _Problem(f"the answer is {question.answer!r}, not a finite number")
        return float(question.answer)
    if question.type == "matrix":
        key = question.answer
        if not (isinstance(key, list) and key and all(isinstance(row, list) and len(row) == len(key[0]) and row
                                                      for row in key)
                and all(isinstance(v, float) and math.isfinite(v) for row in key for v in row)):
            raise _Problem(f"the key is {key!r}, not rows of finite numbers")
        return [list(row) for row in key]
    if question.type == "cells":
        if not question.answer:
            raise _Problem("a cells question needs at least one right cell")
        return [list(cell) for cell in question.answer]
    right = list(question.correct_option_ids)
    if question.type == "single_choice":
        if len(right) != 1:
            raise _Problem(f"a single_choice question needs exactly one right option; it has {len(right)}")
        return right[0]
    if not right:
        raise _Problem("a multiple_choice question needs at least one right option")
    return right


def wrong_answers(question: Question, key: Any) -> list[Any]:
    """Answers that must score below 1: every other choice; for multi-select the key plus one wrong
    option and the key minus one right option; for numbers 2·answer + 1 and −answer − 1."""
    if question.type == "true_false":
        return [not key]
    if question.type == "single_choice":
        return [o.id for o in question.options if o.id != key]
    if question.type == "multiple_choice":
        with_wrong = [key + [o.id] for o in question.options if o.id not in key]
        without_right = [[i for i in key if i != dropped] for dropped in key] if len(key) > 1 else []
        return with_wrong + without_right  # an empty pick is not an answer (the form needs a tick)
    if question.type == "matrix":  # the key with its first entry moved beyond the tolerance, up and down
        first = key[0][0]
        beyond = 2 * max(question.tolerance.abs, question.tolerance.rel * abs(first)) + 1
        return [[[first + sign * beyond] + key[0][1:]] + key[1:] for sign in (1, -1)]
    if question.type == "cells":  # the key plus one wrong cell, and the key less one right cell
        rows, cols = question.shape
        spare = next(([r, c] for r in range(rows) for c in range(cols) if [r, c] not in key), None)
        return ([key + [spare]] if spare else []) + ([key[1:]] if len(key) > 1 else [])
    # Each probe equals the answer at one point (-1 and -0.5), where the other one still differs.
    return [p for p in (2 * key + 1, -key - 1) if math.isfinite(p) and p != key]


def malformed_answers(question: Question) -> list[Any]:
    """JSON-shaped answers that parse_answer must refuse with BadInput: wrong type, unknown id, None, NaN."""
    some_id = question.options[0].id if question.options else "a"
    common = [None, math.nan]
    if question.type == "true_false":
        return common + ["true", 1, [True]]
    if question.type == "single_choice":
        return common + [UNKNOWN_OPTION, 1, [some_id], True]
    if question.type == "multiple_choice":
        return common + [some_id, [UNKNOWN_OPTION], [some_id, some_id], [1], {"id": some_id}]
    if question.type == "matrix":
        rows, cols = question.shape
        row = [0.5] * cols
        return common + [0.5, [row] * (rows + 1), [row + [0.5]] * rows, [[math.nan] + row[1:]] + [row] * (rows - 1),
                         [["0.5"] + row[1:]] + [row] * (rows - 1)]
    if question.type == "cells":
        rows, cols = question.shape
        return common + [[], [[rows, 0]], [[0, cols]], [[0, 0], [0, 0]], [[0]], [[True, 0]], ["0,0"]]
    return common + [math.inf, "32", True, [1.0]]


class SelfTest:
    """Runs every check; renders each distinct visual (kind + canonical params) once."""

    def __init__(self, seeds: int = 20, render: Renderer | None = None):
        self.seeds = seeds
        self.render = render or (lambda kind, params: kind.render(params))
        self._visual_outcomes: dict[tuple[str, str], str | None] = {}

    def run_paths(self, paths: Iterable[Path]) -> Report:
        report = Report()
        for result in load_paths(list(paths), check_visual):
            if result.bank is None:
                failures = [Failure(result.file, "-", None, "load", str(error)) for error in result.errors]
                report.results.append(QuestionResult(result.file, NOT_LOADED, failures=failures))
            else:
                report.results.extend(self.run_bank(result.bank))
        return report

    def run_bank(self, bank: Bank) -> list[QuestionResult]:
        tries = bank.tries if bank.feedback == "try_again" else 1
        return [self.run_question(bank.id, question, tries) for question in bank.questions]

    def run_question(self, bank_id: str, question: Question, tries: int = 1) -> QuestionResult:
        """`tries` > 1: the bank is try_again, so a wrong try's hint is the feedback of the wrong options chosen."""
        result = QuestionResult(bank_id, question.id)
        parameterised = has_params(question)
        # Without params instantiate() returns the question itself, so one seed says it all.
        for seed in range(self.seeds if parameterised else 1):
            result.seeds += 1
            self._run_seed(result, question, seed, parameterised, tries)
        return result

    def _run_seed(self, result: QuestionResult, question: Question, seed: int, parameterised: bool,
                  tries: int = 1) -> None:
        def check(name: str, run: Callable[[], None]) -> bool:
            try:
                run()
            except _Problem as problem:
                result.failures.append(Failure(result.bank, result.question, seed, name, str(problem)))
                return False
            except Exception as error:  # any other exception is itself the finding
                result.failures.append(Failure(result.bank, result.question, seed, name,
                                               f"raised {type(error).__name__}: {error}"))
                return False
            result.passed += 1
            return True

        concrete: list[Question] = []
        if not check("instantiate", lambda: concrete.append(_own_variant(question, seed) if parameterised
                                                            else question)):
            return
        original, question = question, concrete[0]
        if parameterised:  # a student must see the same variant on every reload
            check("deterministic", lambda: _same_variant(question, instantiate(original, seed)))
        if question.options:
            check("distinct-options", lambda: _distinct_options(question))
        keys: list[Any] = []
        if check("key", lambda: keys.append(answer_key(question))):
            key = keys[0]
            check("key-scores-1", lambda: _scores_one(question, key))
            if question.type in ("numeric", "matrix"):
                check("shown-key-scores-1", lambda: _shown_key_scores_one(question, key))
            for wrong in wrong_answers(question, key):
                check("wrong-scores-below-1", lambda wrong=wrong: _scores_below_one(question, wrong))
        for item in question.misconceptions or ():
            check("misconception-matches", lambda item=item: _matches_misconception(question, item))
        for value in malformed_answers(question):
            check("malformed-rejected", lambda value=value: _refused(question, value))
        if question.visual is not None:
            check("visual-renders", lambda: self._visual(question))
        if tries > 1 and question.type != "cells":  # a cells question has no per-answer feedback to hint with
            check("try-again-hints", lambda: _hints(question, tries))

    def _visual(self, question: Question) -> None:
        kind = get_kind(question.visual.kind)
        if kind is None:
            raise _Problem(f"unknown visual kind {question.visual.kind!r}")
        problems = check_visual(kind.name, dict(question.visual.params))  # in the loader's words, not pydantic's
        if problems:
            raise _Problem("; ".join(message for _, message in problems))
        params = kind.parse(dict(question.visual.params))
        key = (kind.name, canonical(params))
        if key not in self._visual_outcomes:
            try:
                self._visual_outcomes[key] = _rendered_problem(self.render(kind, params))
            except Exception as error:
                self._visual_outcomes[key] = f"raised {type(error).__name__}: {error}"
        problem = self._visual_outcomes[key]
        if problem:
            raise _Problem(f"{kind.name} {key[1]}: {problem}")


def _hints(question: Question, tries: int) -> None:
    """A try_again bank shows a wrong try the feedback of the wrong options it chose, without the key: with none,
    the student learns only "not quite" and guesses again. With no more options than tries, the last try of a
    one-answer question is a given."""
    if question.type in ("numeric", "matrix"):
        if not question.misconceptions:
            raise _Problem("a wrong try gets no hint: add misconceptions: (the common slips, each with feedback)")
        if not question.hint:
            raise _Problem("a wrong try that is none of the misconceptions gets no hint: add hint: (what to work "
                           "out first, without the answer)")
        return
    if question.type in ("true_false", "single_choice") and len(question.options) <= tries:
        raise _Problem(f"with {len(question.options)} options and {tries} tries, a student who has ruled out the "
                       f"wrong ones by trying gets the last try's credit without knowing the answer: give it more "
                       f"than {tries} options, or put it in a bank with fewer tries")
    bare = [option.id for option in question.options if not option.correct and not option.feedback]
    if bare and not question.hint:
        raise _Problem(f"a wrong try that picks {', '.join(map(repr, bare))} gets no hint: give "
                       f"{'that option' if len(bare) == 1 else 'those options'} feedback, or the question a hint:")


def _own_variant(question: Question, seed: int) -> Question:
    """The seed's own variant. instantiate() swaps in a sampled seed's variant when this one fails, so that a student
    never meets an error page; checked through it, a failing seed would pass."""
    try:
        return apply(question, draw(question, seed))
    except VariantError as error:
        raise _Problem(f"{error} (a student whose attempt has this seed gets another seed's variant)") from None


def _same_variant(question: Question, again: Question) -> None:
    if question.model_dump() != again.model_dump():
        raise _Problem("instantiate gave a different question for the same seed")


def _distinct_options(question: Question) -> None:
    seen: dict[str, str] = {}
    for option in question.options:
        text = " ".join(option.text.split())
        if text in seen:
            raise _Problem(f"options {seen[text]!r} and {option.id!r} both read {text!r}")
        seen[text] = option.id


def _graded(question: Question, answer: Any):
    try:
        parsed = parse_answer(question, answer)
    except BadInput as error:
        raise _Problem(f"{answer!r} was refused: {error.message}") from None
    return grade(question, parsed)


def _scores_one(question: Question, key: Any) -> None:
    result = _graded(question, key)
    if result.score != 1 or not result.correct:
        raise _Problem(f"the key {key!r} scored {result.score:g}, not 1")


def _shown_key_scores_one(question: Question, key: Any) -> None:
    """The key as the answer page and the explanation write it (six significant figures; a matrix entry four)
    must score 1: without a tolerance, 100 / 3 shows as 33.3333 and only 33.333333333333336 is accepted."""
    if question.type == "numeric":
        shown = number(key)
        typed: Any = float(shown)
    else:
        shown = "[" + "; ".join(", ".join(f"{value:.4g}" for value in row) for row in key) + "]"
        typed = [[float(f"{value:.4g}") for value in row] for row in key]
    result = _graded(question, typed)
    if result.score != 1 or not result.correct:
        raise _Problem(f"the key shows as {shown}, which scores {result.score:g}: a student who types what the page "
                       "shows is marked wrong; give the answer a tolerance, e.g. tolerance: {rel: 0.001}")


def _scores_below_one(question: Question, answer: Any) -> None:
    result = _graded(question, answer)
    if result.score >= 1 or result.correct:
        raise _Problem(f"the wrong answer {answer!r} scored {result.score:g}")


def _matches_misconception(question: Question, item) -> None:
    result = _graded(question, item.answer)
    if result.correct:
        raise _Problem(f"the misconception {item.id!r} answer {item.answer!r} is graded correct")
    found = result.misconception.id if result.misconception else None
    if found != item.id:
        raise _Problem(f"the misconception {item.id!r} answer {item.answer!r} gets "
                       f"{'no misconception' if found is None else repr(found)}'s feedback")


def _refused(question: Question, value: Any) -> None:
    try:
        parsed = parse_answer(question, value)
    except BadInput:
        return
    raise _Problem(f"the malformed answer {value!r} was accepted as {parsed!r}")


def _rendered_problem(rendered: Rendered) -> str | None:
    if not isinstance(rendered.image, bytes) or not rendered.image:
        return "the image is empty"
    if not rendered.alt or not rendered.alt.strip():
        return "the alt text is empty"
    if rendered.mimetype == "image/png" and not rendered.image.startswith(PNG_SIGNATURE):
        return "the image/png bytes are not a PNG"
    if rendered.mimetype == "image/svg+xml" and b"<svg" not in rendered.image[:2048]:
        return "the image/svg+xml bytes are not an SVG"
    if rendered.mimetype not in ("image/png", "image/svg+xml"):
        return f"unexpected media type {rendered.mimetype!r}"
    return None


def format_report(report: Report) -> list[str]:
    """The table (bank, question, seeds, checks passed, failures) and, after it, one line per failure."""
    header = ("bank", "question", "seeds", "checks passed", "failures")
    rows = [(r.bank, r.question, str(r.seeds), str(r.passed), str(len(r.failures))) for r in report.results]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]

    def line(row: tuple[str, ...]) -> str:
        cells = (cell.ljust(widths[i]) if i < 2 else cell.rjust(widths[i]) for i, cell in enumerate(row))
        return "  ".join(cells).rstrip()

    lines = [line(header), line(tuple("-" * w for w in widths)), *(line(row) for row in rows)]
    if report.failures:
        lines += ["", "Failures (bank / question / seed / check: what):"]
        lines += [f"FAIL {failure}" for failure in report.failures]
    return lines
