"""The question-bank format as pydantic v2 models: what a `quizzes/*.yaml` file may contain.

Models are strict (`extra="forbid"`, no silent type coercion); cross-field rules that need a precise
location (duplicate ids, answer keys) are checked in `app.bank.rules`, which reports a path per error.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StringConstraints

SLUG_PATTERN = r"^[a-z0-9][a-z0-9_-]{0,63}$"
Slug = Annotated[str, StringConstraints(pattern=SLUG_PATTERN)]

QuestionType = Literal["true_false", "single_choice", "multiple_choice", "numeric"]
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


class Question(Strict):
    id: Slug
    type: QuestionType
    prompt: Text
    options: list[Option] = Field(default_factory=list)
    # The key may be given here instead of `correct:` flags: an option id (single_choice), a list of
    # ids (multiple_choice), true/false (true_false) or a number (numeric).
    answer: Annotated[Any, Field(default=None)] = None
    explanation: Text
    tags: list[Slug] = Field(default_factory=list)
    scoring: Scoring | None = None
    tolerance: Tolerance | None = None
    unit: Text | None = None
    visual: Visual | None = None
    learn: LinkTarget | None = None
    # Seeded variants: values drawn per attempt and substituted as {{ expression }} in the prompt,
    # options, feedback, explanation and visual params; `where` rejects unwanted combinations.
    params: dict[ParamName, ParamSpec] | None = None
    where: Text | None = None

    @property
    def correct_option_ids(self) -> tuple[str, ...]:
        return tuple(option.id for option in self.options if option.correct)

    def option(self, option_id: str) -> Option | None:
        return next((o for o in self.options if o.id == option_id), None)

    def index_of_option(self, option_id: str) -> int:
        return next(i for i, o in enumerate(self.options) if o.id == option_id)


class BankHeader(Strict):
    """Everything in a bank file except its questions (validated on their own so errors collect)."""

    id: Slug
    title: Text
    description: Text | None = None
    source: Text | None = None


class Bank(BankHeader):
    questions: list[Question] = Field(min_length=1)

    def question(self, question_id: str) -> Question | None:
        return next((q for q in self.questions if q.id == question_id), None)

    def index_of(self, question_id: str) -> int:
        return next(i for i, q in enumerate(self.questions) if q.id == question_id)
