"""Seeded variants of parameterised questions: draw the params for a seed, substitute them into the
question's text and visual, and compute the answer with the safe expression language.

The draw depends only on (seed, question id), so a student sees the same variant on every reload.
"""

from __future__ import annotations

import functools
import itertools
import math
import random
import re
from typing import Any

import numpy as np

from ..errors import BadInput
from .expressions import ExpressionError, as_nested_list, compile_expression, format_number
from .messages import describe_value
from .schema import MAX_GRID_SIDE, Grid, IntRange, Question, Tolerance

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


# --- matrix and cells keys, grids and misconceptions (shared by the loader and every variant) -------------

Problems = list[tuple[tuple, str]]


def _evaluated(value: Any, values: dict[str, Any], path: tuple) -> Any:
    """A key as written (a number or nested list), or the value of its expression."""
    if not isinstance(value, str):
        return value
    try:
        result = _compiled(value, frozenset(values)).evaluate(values)
    except ExpressionError as error:
        raise VariantError(str(error), path) from None
    return as_nested_list(result) if isinstance(result, np.ndarray) else result


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def matrix_value(value: Any, path: tuple) -> list[list[float]]:
    """A nested list of finite numbers as a matrix (a flat list is one row), or a VariantError at the culprit."""
    if not isinstance(value, list) or not value:
        raise VariantError(f"a matrix is a list of rows like [[0.5, 0.5]] (or one row like [0.5, 0.5]); "
                           f"got {describe_value(value)}", path)
    rows = value if all(isinstance(row, list) for row in value) else [value]
    if len(rows) > MAX_GRID_SIDE:
        raise VariantError(f"a matrix may have at most {MAX_GRID_SIDE} rows; this one has {len(rows)}", path)
    nested = rows is value
    for i, row in enumerate(rows):
        where = path + (i,) if nested else path
        if not row or len(row) > MAX_GRID_SIDE:
            raise VariantError(f"a row needs 1 to {MAX_GRID_SIDE} numbers; this one has {len(row)}", where)
        if len(row) != len(rows[0]):
            raise VariantError(f"every row needs the same number of entries: row 1 has {len(rows[0])}, "
                               f"row {i + 1} has {len(row)}", where)
        for j, entry in enumerate(row):
            if not _is_number(entry) or abs(entry) > 1e15 or not np.isfinite(entry):
                raise VariantError(f"each entry must be a finite number; got {describe_value(entry)}", where + (j,))
    return [[float(entry) for entry in row] for row in rows]


def grid_labels(spec: Any, values: dict[str, Any], path: tuple) -> list[str]:
    """A grid axis as its labels: given, counted (1..n), or text split at spaces after {{ }} substitution."""
    if isinstance(spec, list):
        return list(spec)
    if isinstance(spec, str):
        spec = _substitute_value(spec, values, path)
    if isinstance(spec, int):
        if not 1 <= spec <= MAX_GRID_SIDE:
            raise VariantError(f"a grid has 1 to {MAX_GRID_SIDE} rows and columns; got {spec}", path)
        return [str(n) for n in range(1, spec + 1)]
    labels = str(spec).split()
    if not 1 <= len(labels) <= MAX_GRID_SIDE:
        raise VariantError(f"a grid has 1 to {MAX_GRID_SIDE} rows and columns; {spec!r} gives {len(labels)}", path)
    if any(len(label) > 40 for label in labels):
        raise VariantError("a grid label may be at most 40 characters", path)
    return labels


def cell_pairs(value: Any, shape: tuple[int, int], path: tuple) -> list[list[int]]:
    """A cells key: [row, col] pairs (0-based) in the grid, each once, sorted row by row.

    A matrix (from an expression like causal_mask(n)) of the grid's shape selects its non-zero entries.
    """
    rows, cols = shape
    if not isinstance(value, list) or not value:
        raise VariantError(f"a cells answer is a list of [row, col] pairs like [[0, 1], [1, 1]]; got "
                           f"{describe_value(value)}", path)
    seen: dict[tuple[int, int], int] = {}
    for k, pair in enumerate(value):
        if not (isinstance(pair, list) and len(pair) == 2 and all(isinstance(x, int) and not isinstance(x, bool)
                                                                  for x in pair)):
            raise VariantError(f"each cell is a [row, col] pair of whole numbers counted from 0; got "
                               f"{describe_value(pair) if not isinstance(pair, list) else pair!r}", path + (k,))
        row, col = pair
        if not (0 <= row < rows and 0 <= col < cols):
            raise VariantError(f"the cell [{row}, {col}] is outside the grid: rows are 0..{rows - 1} and "
                               f"columns 0..{cols - 1}", path + (k,))
        if (row, col) in seen:
            raise VariantError(f"the cell [{row}, {col}] is listed twice (also answer[{seen[(row, col)]}])", path + (k,))
        seen[(row, col)] = k
    return [list(cell) for cell in sorted(seen)]


def mask_cells(mask: list[list[float]], shape: tuple[int, int], path: tuple) -> list[list[int]]:
    """The selected cells of a 0/1 matrix of the grid's shape (an expression's value)."""
    if (len(mask), len(mask[0])) != shape:
        raise VariantError(f"the expression gives a {len(mask)}×{len(mask[0])} matrix, but the grid is "
                           f"{shape[0]}×{shape[1]}", path)
    return [[i, j] for i, row in enumerate(mask) for j, entry in enumerate(row) if entry]


def resolve(question: Question, values: dict[str, Any]) -> tuple[dict[str, Any], Problems]:
    """The concrete grid, key and misconceptions of a matrix, cells or numeric question for these values.

    Returns the model update and the problems found (each at its field's path); the loader reports them
    for a question without params, and every variant is checked the same way.
    """
    update: dict[str, Any] = {}
    problems: Problems = []

    def attempt(run):
        try:
            return run()
        except VariantError as error:
            problems.append((error.path, str(error)))
            return None

    key = question.answer
    if question.type == "matrix":
        key = attempt(lambda: matrix_value(_evaluated(question.answer, values, ("answer",)), ("answer",)))
    elif question.type == "cells":
        grid = question.grid
        rows = attempt(lambda: grid_labels(grid.rows, values, ("grid", "rows")))
        cols = attempt(lambda: grid_labels(grid.cols, values, ("grid", "cols")))
        if rows is None or cols is None:
            return update, problems
        update["grid"] = Grid(rows=rows, cols=cols)
        shape = (len(rows), len(cols))

        def cells():
            given = _evaluated(question.answer, values, ("answer",))
            if isinstance(question.answer, str):  # an expression gives a 0/1 matrix of the grid's shape
                return mask_cells(matrix_value(given, ("answer",)), shape, ("answer",)) or \
                    _no_cells(("answer",))
            return cell_pairs(given, shape, ("answer",))
        key = attempt(cells)
    elif question.type == "numeric" and isinstance(question.answer, str):
        key = attempt(lambda: _number(_evaluated(question.answer, values, ("answer",)), ("answer",),
                                      question.answer))
    if key is None:
        return update, problems
    update["answer"] = key
    if question.misconceptions:
        update["misconceptions"] = _misconceptions(question, key, values, problems)
    return update, problems


def _no_cells(path: tuple):
    raise VariantError("the expression selects no cell; a cells key needs at least one", path)


def _number(value: Any, path: tuple, written: Any = None) -> float:
    if not _is_number(value):
        if isinstance(written, str):
            raise VariantError(f"the expression gives {describe_value(value)}, not a number", path)
        raise VariantError(f"a numeric question's answer is a finite number; got {describe_value(value)}", path)
    return float(value)


def _misconceptions(question: Question, key: Any, values: dict[str, Any], problems: Problems) -> list:
    tolerance = question.tolerance or Tolerance()
    concrete, seen = [], {}
    for i, item in enumerate(question.misconceptions):
        path = ("misconceptions", i)
        if item.id in seen:
            problems.append((path + ("id",), f"duplicate misconception id {item.id!r} (also misconceptions"
                                             f"[{seen[item.id]}]); give each its own id"))
        seen.setdefault(item.id, i)
        try:
            given = _evaluated(item.answer, values, path + ("answer",))
            if question.type == "matrix":
                value = matrix_value(given, path + ("answer",))
                if len(value) != len(key) or len(value[0]) != len(key[0]):
                    raise VariantError(f"this answer is {len(value)}×{len(value[0])}, but the key is "
                                       f"{len(key)}×{len(key[0])}", path + ("answer",))
                same = all(tolerance.accepts(v, k) for v_row, k_row in zip(value, key) for v, k in zip(v_row, k_row))
            else:
                value = _number(given, path + ("answer",), item.answer)
                if not np.isfinite(value):
                    raise VariantError("a misconception's answer must be a finite number", path + ("answer",))
                same = tolerance.accepts(value, key)
            if same:
                raise VariantError("this answer is graded correct (it matches the key within the tolerance); a "
                                   "misconception is a wrong answer", path + ("answer",))
        except VariantError as error:
            problems.append((error.path, str(error)))
            continue
        feedback = substitute(item.feedback, values, path + ("feedback",)) if values else item.feedback
        concrete.append(item.model_copy(update={"answer": value, "feedback": feedback}))
    return concrete


def apply(question: Question, values: dict[str, Any]) -> Question:
    update: dict[str, Any] = {
        "prompt": substitute(question.prompt, values, ("prompt",)),
        "explanation": substitute(question.explanation, values, ("explanation",)),
        "hint": substitute(question.hint, values, ("hint",)) if question.hint else None,
        "options": [
            option.model_copy(update={
                "text": substitute(option.text, values, ("options", i, "text")),
                "feedback": substitute(option.feedback, values, ("options", i, "feedback")) if option.feedback else None,
            })
            for i, option in enumerate(question.options)
        ],
    }
    if question.type in ("matrix", "cells") or question.misconceptions or \
            (question.type == "numeric" and isinstance(question.answer, str)):
        resolved, problems = resolve(question, values)
        if problems:
            path, message = problems[0]
            raise VariantError(message, path)
        update.update(resolved)
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
    texts += [(("hint",), question.hint)] if question.hint else []
    texts += [(("options", i, "text"), o.text) for i, o in enumerate(question.options)]
    texts += [(("options", i, "feedback"), o.feedback) for i, o in enumerate(question.options) if o.feedback]
    if question.visual is not None:
        texts += [(("visual", "params", k), v) for k, v in question.visual.params.items() if isinstance(v, str)]
    if isinstance(question.answer, str):
        texts.append((("answer",), "{{ " + question.answer + " }}"))
    for i, item in enumerate(question.misconceptions or ()):
        texts.append((("misconceptions", i, "feedback"), item.feedback))
        if isinstance(item.answer, str):
            texts.append((("misconceptions", i, "answer"), "{{ " + item.answer + " }}"))
    if question.grid is not None:
        texts += [(("grid", axis), spec) for axis in ("rows", "cols")
                  if isinstance(spec := getattr(question.grid, axis), str)]
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
    space = value_space(question)
    if space is None:  # too many combinations: a sample of seeds
        for seed in sample_seeds(seeds):
            try:
                values = draw(question, seed)
            except VariantError as error:
                return [(error.path, f"seed {seed}: {error}")]
            if problem := _variant_problem(question, values, visual_checker, f"seed {seed}"):
                return [problem]
        return problems
    # Few enough to try them all: every combination that meets `where`, so no student's seed can fail.
    condition = compile_expression(question.where, names) if question.where else None
    accepted = [values for values in space if condition is None or condition.evaluate(values)]
    if not accepted:
        return [(("where",), f"no values satisfy where: {question.where!r}, in any of the {len(space)} combinations "
                             "of the params")]
    missed = (1 - len(accepted) / len(space)) ** MAX_DRAWS  # the share of seeds whose draws never meet `where`
    if missed > WHERE_MISSES:
        return [(("where",), f"{question.where!r} holds for only {len(accepted)} of the {len(space)} "
                             f"combinations of the params, so about 1 seed in {round(1 / missed):,} finds none in "
                             f"{MAX_DRAWS} draws and gets another seed's variant; narrow the params to the values it "
                             "allows")]
    for values in accepted:
        if problem := _variant_problem(question, values, visual_checker, "with " + values_text(values)):
            return [problem]
    return problems


EXHAUSTIVE_LIMIT = 5000  # a question with at most this many combinations of param values is checked for all of them
WHERE_MISSES = 1e-6  # the share of seeds allowed to find no values meeting `where` (and fall back to another's)


def value_space(question: Question) -> list[dict[str, Any]] | None:
    """Every combination of the question's param values, or None when there are more than EXHAUSTIVE_LIMIT."""
    specs = question.params or {}
    sizes = [(spec.max - spec.min) // spec.step + 1 if isinstance(spec, IntRange) else len(spec)
             for spec in specs.values()]
    if math.prod(sizes) > EXHAUSTIVE_LIMIT:
        return None
    return [dict(zip(specs, combination)) for combination in itertools.product(*map(_choices, specs.values()))]


def values_text(values: dict[str, Any]) -> str:
    """"d_model = 1032, word = 'cat'": the values of one variant, as an error names them."""
    return ", ".join(f"{name} = {value!r}" if isinstance(value, str) else f"{name} = {format_number(value)}"
                     for name, value in values.items())


def from_visual(path) -> tuple:
    """A visual checker's path, from the question: its own `grid` (a cells grid the figure must match), or a
    place within `visual`."""
    return tuple(path) if tuple(path[:1]) == ("grid",) else ("visual", *path)


def _variant_problem(question: Question, values: dict[str, Any], visual_checker, label: str):
    """(path, message) of the first problem of the variant with these values, or None."""
    try:
        concrete = apply(question, values)
    except VariantError as error:
        return error.path, f"{label}: {error}"
    except Exception as error:  # never let one bank's mistake stop the loader
        return (), f"{label}: this question cannot be instantiated: {error}"
    if concrete.visual is not None and visual_checker is not None:
        key = concrete.answer if concrete.type in ("cells", "numeric") else None
        for path, message in visual_checker(concrete.visual.kind, dict(concrete.visual.params), concrete.type, key,
                                            concrete.grid):
            return from_visual(path), f"{label}: {message}"
    return None
