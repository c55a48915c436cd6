"""Seeded variants of parameterised questions: draw the params for a seed, substitute them into the
question's text and visual, and compute the answer with the safe expression language.

The draw depends only on (seed, question id), so a student sees the same variant on every reload.
"""

from __future__ import annotations

import functools
import random
import re
from typing import Any

from ..errors import BadInput
from .expressions import ExpressionError, compile_expression, format_number
from .messages import describe_value
from .schema import IntRange, Question

PLACEHOLDER = re.compile(r"\{\{\s*(.+?)\s*\}\}")
MAX_DRAWS = 200  # attempts at satisfying `where` before a variant is declared impossible
MAX_RANGE_VALUES = 100_000
MAX_SEED = 2**31 - 1  # a signed 32-bit integer, as the attempts table stores it


class VariantError(ValueError):
    """A parameterised question cannot be instantiated; carries the path of the faulty field."""

    def __init__(self, message: str, path: tuple = ()):
        super().__init__(message)
        self.path = path


def parse_seed(value: Any) -> int:
    """A seed from a query string or a JSON body: 0 when absent, else a whole number from 0 to MAX_SEED."""
    if value is None:
        return 0
    # ASCII digits only, and few enough for int(): "²".isdigit() is true but int("²") raises, and so
    # does a string past Python's 4300-digit limit.
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) <= len(str(MAX_SEED)):
        return parse_seed(int(value))
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_SEED:
        raise BadInput(f"seed must be a whole number from 0 to {MAX_SEED}; got {describe_value(value)}.")
    return value


def has_params(question: Question) -> bool:
    return bool(question.params)


def _choices(spec) -> list:
    if isinstance(spec, IntRange):
        return list(range(spec.min, spec.max + 1, spec.step))
    return list(spec)


def draw(question: Question, seed: int) -> dict[str, Any]:
    """The param values of `question` for `seed` (stable across processes and reloads)."""
    names = list(question.params or {})
    rng = random.Random(f"{seed}:{question.id}")
    condition = compile_expression(question.where, set(names)) if question.where else None
    for _ in range(MAX_DRAWS):
        values = {name: rng.choice(_choices(question.params[name])) for name in names}
        if condition is None or condition.evaluate(values):
            return values
    raise VariantError(f"no values satisfying where: {question.where!r} were found in {MAX_DRAWS} draws",
                       ("where",))


@functools.lru_cache(maxsize=4096)
def _compiled(text: str, names: frozenset[str]):
    return compile_expression(text, names)


def substitute(text: str, values: dict[str, Any], path: tuple) -> str:
    def replace(match: re.Match) -> str:
        try:
            return format_number(_compiled(match.group(1), frozenset(values)).evaluate(values))
        except ExpressionError as error:
            raise VariantError(f"{{{{ {match.group(1)} }}}}: {error}", path) from None
    return PLACEHOLDER.sub(replace, text)


def _substitute_value(value: Any, values: dict[str, Any], path: tuple) -> Any:
    """A visual param: a lone {{ expr }} keeps the computed number's type; other text is substituted."""
    if not isinstance(value, str):
        return value
    whole = PLACEHOLDER.fullmatch(value.strip())
    if whole:
        try:
            result = _compiled(whole.group(1), frozenset(values)).evaluate(values)
        except ExpressionError as error:
            raise VariantError(f"{value!r}: {error}", path) from None
        return int(result) if isinstance(result, float) and result.is_integer() else result
    return substitute(value, values, path)


def instantiate(question: Question, seed: int) -> Question:
    """The concrete question a student with this seed sees; unchanged when it has no params.

    If this seed's draw cannot satisfy `where` (the loader only proves seeds 0-7), the first of the
    loader's checked seeds is used instead, so a student never meets an error page.
    """
    if not question.params:
        return question
    try:
        return apply(question, draw(question, seed))
    except VariantError:
        for checked in sample_seeds():
            try:
                return apply(question, draw(question, checked))
            except VariantError:
                continue
        raise


def apply(question: Question, values: dict[str, Any]) -> Question:
    update: dict[str, Any] = {
        "prompt": substitute(question.prompt, values, ("prompt",)),
        "explanation": substitute(question.explanation, values, ("explanation",)),
        "options": [
            option.model_copy(update={
                "text": substitute(option.text, values, ("options", i, "text")),
                "feedback": substitute(option.feedback, values, ("options", i, "feedback")) if option.feedback else None,
            })
            for i, option in enumerate(question.options)
        ],
    }
    if question.type == "numeric" and isinstance(question.answer, str):
        try:
            answer = _compiled(question.answer, frozenset(values)).evaluate(values)
        except ExpressionError as error:
            raise VariantError(str(error), ("answer",)) from None
        if isinstance(answer, bool) or not isinstance(answer, (int, float)):
            raise VariantError(f"the answer expression gives {answer!r}, not a number", ("answer",))
        update["answer"] = float(answer)
    if question.type == "true_false" and isinstance(question.answer, str):
        try:
            answer = _compiled(question.answer, frozenset(values)).evaluate(values)
        except ExpressionError as error:
            raise VariantError(str(error), ("answer",)) from None
        if not isinstance(answer, bool):
            raise VariantError(f"the answer condition gives {answer!r}, not true or false", ("answer",))
        update["options"] = [option.model_copy(update={"correct": (option.id == "true") == answer})
                             for option in update["options"]]
        update["answer"] = None
    if question.visual is not None:
        params = {name: _substitute_value(value, values, ("visual", "params", name))
                  for name, value in question.visual.params.items()}
        update["visual"] = question.visual.model_copy(update={"params": params})
    return question.model_copy(update=update)


def sample_seeds(count: int = 8) -> range:
    """The seeds the loader and the self-test try (the loader checks a few; selftest checks more)."""
    return range(count)


def check(question: Question, visual_checker=None, seeds: int = 8) -> list[tuple[tuple, str]]:
    """Problems with a parameterised question, found by compiling every expression and trying seeds."""
    problems: list[tuple[tuple, str]] = []
    names = set(question.params or {})
    for name, spec in (question.params or {}).items():
        if isinstance(spec, IntRange):
            if spec.max < spec.min:
                problems.append((("params", name), f"max ({spec.max}) is below min ({spec.min})"))
            elif (spec.max - spec.min) // spec.step + 1 > MAX_RANGE_VALUES:
                problems.append((("params", name), f"the range has more than {MAX_RANGE_VALUES} values; narrow it"))
    texts = [(("prompt",), question.prompt), (("explanation",), question.explanation)]
    texts += [(("options", i, "text"), o.text) for i, o in enumerate(question.options)]
    texts += [(("options", i, "feedback"), o.feedback) for i, o in enumerate(question.options) if o.feedback]
    if question.visual is not None:
        texts += [(("visual", "params", k), v) for k, v in question.visual.params.items() if isinstance(v, str)]
    if question.type in ("numeric", "true_false") and isinstance(question.answer, str):
        texts.append((("answer",), "{{ " + question.answer + " }}"))
    if question.where:
        texts.append((("where",), "{{ " + question.where + " }}"))
    for path, text in texts:
        for match in PLACEHOLDER.finditer(text):
            try:
                compile_expression(match.group(1), names)
            except ExpressionError as error:
                problems.append((path, str(error)))
    if problems:
        return problems
    for seed in sample_seeds(seeds):
        try:
            concrete = apply(question, draw(question, seed))
        except VariantError as error:
            return [(error.path, f"seed {seed}: {error}")]
        except Exception as error:  # never let one bank's mistake stop the loader
            return [((), f"seed {seed}: this question cannot be instantiated: {error}")]
        if concrete.visual is not None and visual_checker is not None:
            for path, message in visual_checker(concrete.visual.kind, dict(concrete.visual.params)):
                return [(("visual",) + tuple(path), f"seed {seed}: {message}")]
    return problems
