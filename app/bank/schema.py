"""The question-bank format as pydantic v2 models: what a `quizzes/*.yaml` file may contain.

Models are strict (`extra="forbid"`, no silent type coercion); cross-field rules that need a precise
location (duplicate ids, answer keys) are checked in `app.bank.rules`, which reports a path per error.
"""

from __future__ import annotations

import math
import re
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, StringConstraints

SLUG_PATTERN = r"^[a-z0-9][a-z0-9_-]{0,63}$"
Slug = Annotated[str, StringConstraints(pattern=SLUG_PATTERN)]

QuestionType = Literal["true_false", "single_choice", "multiple_choice", "numeric", "matrix", "cells"]
Scoring = Literal["all_or_nothing", "net_correct", "per_option"]


def _number_to_text(value: Any) -> Any:
    """Let authors write `text: 32` for an option that reads "32"; YAML makes that an int."""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return value


Text = Annotated[str, BeforeValidator(_number_to_text), StringConstraints(min_length=1)]

# A link to a tutorial: a site path ("/learn/attention#soft-lookup") or an http(s) URL, never javascript:.
LinkTarget = Annotated[str, StringConstraints(pattern=r"^(/|/[^/\s][^\s]*|https?://[^\s]+)$", max_length=500)]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class Option(Strict):
    id: Slug
    text: Text
    correct: bool | None = None
    feedback: Text | None = None


class Tolerance(Strict):
    """A numeric answer x is right when |x - answer| <= max(abs, rel * |answer|)."""

    abs: float = Field(default=0.0, ge=0, allow_inf_nan=False)
    rel: float = Field(default=0.0, ge=0, allow_inf_nan=False)

    def accepts(self, given: float, expected: float) -> bool:
        error, allowed = abs(given - expected), max(self.abs, self.rel * abs(expected))
        # isclose: 0.4 against 0.3 +/- 0.1 differs by 0.10000000000000003 in binary floating point
        return error <= allowed or math.isclose(error, allowed, rel_tol=1e-9)


class IntRange(Strict):
    """An integer parameter drawn uniformly from min..max (inclusive) in steps of `step`."""

    min: int
    max: int
    step: int = Field(default=1, ge=1)


ParamValue = int | float | str
# A parameter is a list of choices, or an integer range.
ParamSpec = Annotated[list[ParamValue], Field(min_length=1, max_length=1000)] | IntRange
ParamName = Annotated[str, StringConstraints(pattern=r"^[a-z_][a-z0-9_]{0,31}$")]


class Visual(Strict):
    """An open spec for the question's live plot: a kind and its parameters."""

    kind: Slug
    params: dict[str, Any] = Field(default_factory=dict)


MAX_GRID_SIDE = 16  # rows or columns of a cells grid or a matrix answer
MAX_OPTIONS = 50  # a choice question's options: bounds what grading one answer costs
MAX_LABEL = 40


def _grid_axis(value: Any) -> Any:
    """Labels, a count (labels 1..n), or text: split at spaces into labels after its {{ }} are filled in,
    unless it is one {{ expression }} that gives a whole number, which is a count ("{{ sentence }}", "{{ n }}")."""
    if isinstance(value, int) and not isinstance(value, bool):
        if not 1 <= value <= MAX_GRID_SIDE:
            raise ValueError(f"a grid has 1 to {MAX_GRID_SIDE} rows and columns; got {value}")
        return value
    if isinstance(value, str) and 0 < len(value.strip()) <= 500:
        return value
    if isinstance(value, list) and 1 <= len(value) <= MAX_GRID_SIDE:
        labels = [str(v) if isinstance(v, int) and not isinstance(v, bool) else v for v in value]
        if all(isinstance(label, str) and 0 < len(label.strip()) <= MAX_LABEL for label in labels):
            return labels
        raise ValueError(f"each label is text of 1 to {MAX_LABEL} characters")
    if isinstance(value, list):
        raise ValueError(f"a grid has 1 to {MAX_GRID_SIDE} rows and columns; this list has {len(value)} labels")
    raise ValueError('rows and cols are each a list of labels, a count, or text like "{{ sentence }}"')


GridAxis = Annotated[Any, AfterValidator(_grid_axis)]


class Grid(Strict):
    """The labelled grid of a cells question: rows are queries, columns are keys."""

    rows: GridAxis
    cols: GridAxis

    def names(self, row: int, col: int) -> tuple[str, str]:
        """A cell's query and key as the pages and exports name them: their labels, with the position (from 1) of
        a word the axis holds twice ("the (5)"); "row 2" and "column 3" where an axis has no labels to use."""
        def name(labels, i: int, axis: str) -> str:
            if not isinstance(labels, list) or not 0 <= i < len(labels):
                return f"{axis} {i + 1}"
            return f"{labels[i]} ({i + 1})" if labels.count(labels[i]) > 1 else str(labels[i])
        return name(self.rows, row, "row"), name(self.cols, col, "column")


class Misconception(Strict):
    """A wrong answer a common slip produces (a number, a nested list, or an expression), and what to say."""

    id: Slug
    answer: Any
    feedback: Text


class Question(Strict):
    id: Slug
    type: QuestionType
    prompt: Text
    options: Annotated[list[Option], Field(max_length=MAX_OPTIONS)] = Field(default_factory=list)
    # The key may be given here instead of `correct:` flags: an option id (single_choice), a list of
    # ids (multiple_choice), true/false (true_false) or a number (numeric). matrix: a nested list (a
    # vector is one row), cells: a list of [row, col] pairs; either may be an expression.
    answer: Annotated[Any, Field(default=None)] = None
    explanation: Text
    tags: list[Slug] = Field(default_factory=list)
    scoring: Scoring | None = None
    tolerance: Tolerance | None = None
    unit: Text | None = None
    visual: Visual | None = None
    grid: Grid | None = None
    misconceptions: Annotated[list[Misconception], Field(min_length=1, max_length=20)] | None = None
    # try_again: what a wrong try that matched no misconception and chose no wrong option with feedback is told
    hint: Text | None = None
    learn: LinkTarget | None = None
    # Seeded variants: values drawn per attempt and substituted as {{ expression }} in the prompt,
    # options, feedback, explanation and visual params; `where` rejects unwanted combinations.
    params: dict[ParamName, ParamSpec] | None = None
    where: Text | None = None

    @property
    def shape(self) -> tuple[int, int]:
        """(rows, columns) of a matrix question's key or a cells question's grid."""
        if self.type == "cells":
            return len(self.grid.rows), len(self.grid.cols)
        return len(self.answer), len(self.answer[0])

    @property
    def correct_option_ids(self) -> tuple[str, ...]:
        return tuple(option.id for option in self.options if option.correct)

    def option(self, option_id: str) -> Option | None:
        return next((o for o in self.options if o.id == option_id), None)

    def index_of_option(self, option_id: str) -> int:
        return next(i for i, o in enumerate(self.options) if o.id == option_id)


def _instant(value: Any) -> Any:
    """`opens:` and `closes:`: an ISO 8601 date and time with its time zone (a moment, wherever the server is)."""
    example = "like 2026-03-02T09:00+01:00, or 2026-03-02T08:00Z for UTC"
    if not isinstance(value, str):
        raise ValueError(f"expected an ISO 8601 date and time with a time zone, {example}")
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(f"{value!r} is not an ISO 8601 date and time; write it {example}") from None
    if moment.tzinfo is None:
        raise ValueError(f"{value!r} has no time zone, so it would depend on the server's; add one, {example}")
    return moment


MIN_TIME_LIMIT, MAX_TIME_LIMIT = 30, 24 * 3600  # seconds
DURATION = re.compile(r"(?:(\d{1,5})h)?(?:(\d{1,5})m)?(?:(\d{1,5})s)?")


def _duration(value: Any) -> Any:
    """`time_limit: 20m` (also 90s, 1h30m) as whole seconds, from 30 seconds to 24 hours."""
    match = DURATION.fullmatch(value) if isinstance(value, str) and value else None
    if match is None:
        raise ValueError(f"expected a duration like 20m, 90s or 1h30m, got {value!r}")
    hours, minutes, seconds = (int(part or 0) for part in match.groups())
    total = hours * 3600 + minutes * 60 + seconds
    if not MIN_TIME_LIMIT <= total <= MAX_TIME_LIMIT:
        raise ValueError(f"a time limit is from 30s to 24h, got {value}")
    return total


class Shuffle(Strict):
    """Per attempt, from its seed: the questions' order, and the options' order of choice questions."""

    questions: bool = False
    options: bool = False


class Pool(Strict):
    """Questions of which each attempt draws `draw`, by its seed (app.web.progress.drawn); the bank's other
    questions are in every attempt. app.bank.loader checks the ids, and that `draw` is below the pool's size."""

    id: Slug
    draw: Annotated[int, Field(ge=1)]
    questions: list[Slug] = Field(min_length=2)


class BankHeader(Strict):
    """Everything in a bank file except its questions (validated on their own so errors collect)."""

    id: Slug
    title: Text
    description: Text | None = None
    source: Text | None = None
    # practice: the JSON API grades any answer openly; graded: only within an attempt, once per question.
    mode: Literal["practice", "graded"] = "practice"
    # immediate: each answer shows its verdict and key; try_again: hints and more tries, the key after a right
    # answer or the last try; deferred: nothing until every question is answered (app.bank.loader checks tries).
    feedback: Literal["immediate", "try_again", "deferred"] = "immediate"
    tries: int | None = None
    penalty: list[float] | None = None  # the factor each try's score is multiplied by, one per try
    # Assessment settings (app.web.progress applies them; app.bank.loader checks closes after opens).
    shuffle: Shuffle | None = None
    attempts: Annotated[int, Field(ge=1, le=100)] | None = None  # attempts a student may start
    opens: Annotated[datetime, BeforeValidator(_instant)] | None = None
    closes: Annotated[datetime, BeforeValidator(_instant)] | None = None
    time_limit: Annotated[int, BeforeValidator(_duration)] | None = None  # seconds, written 20m, 90s or 1h30m
    pools: list[Pool] | None = None  # each attempt draws `draw` of each pool's questions


class Bank(BankHeader):
    questions: list[Question] = Field(min_length=1)

    def question(self, question_id: str) -> Question | None:
        return next((q for q in self.questions if q.id == question_id), None)

    def index_of(self, question_id: str) -> int:
        return next(i for i, q in enumerate(self.questions) if q.id == question_id)

    @property
    def per_attempt(self) -> int:
        """How many questions an attempt at the whole bank has: every one outside a pool, and `draw` of each pool."""
        return len(self.questions) - sum(len(pool.questions) - pool.draw for pool in self.pools or ())

    def pool_of(self, question_id: str) -> Pool | None:
        return next((pool for pool in self.pools or () if question_id in pool.questions), None)
