"""Load and validate one question-bank file, collecting every error with its file:line:col.

Parsing (`yamlsource`), structure (pydantic models in `schema`) and cross-field rules (`rules`) each
add errors; a file with any error yields no bank, and the caller decides what to do with the rest.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path as FsPath
from typing import Any, Callable

from pydantic import BaseModel, ValidationError

from . import rules
from .messages import closest, describe_pydantic_error, describe_value
from .schema import Bank, BankHeader, Question
from .yamlsource import MAX_FILE_BYTES, Document, Path, Position, SourceError, parse, too_large

# A hook for validating a visual's params by kind; installed by app.visuals (kind, params) -> [(path, msg)].
VisualChecker = Callable[..., list[tuple[Path, str]]]  # (kind, params, question type, key, grid) -> problems


@dataclass(frozen=True, order=True)
class BankError:
    file: str
    line: int
    column: int
    field: str
    message: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}:{self.column}"
        return f"{where}: {self.field}: {self.message}" if self.field else f"{where}: {self.message}"

    def as_dict(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "column": self.column, "field": self.field,
                "message": self.message}


@dataclass(frozen=True)
class LoadResult:
    file: str
    bank: Bank | None
    errors: tuple[BankError, ...]
    id_at: tuple[int, int] = (1, 1)  # (line, column) of the bank's id value, for an error about the id


def format_path(path: Path) -> str:
    """('questions', 4, 'options', 1, 'correct') -> 'questions[4].options[1].correct'."""
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text


def _fields_of(model: type[BaseModel], loc: tuple) -> list[str]:
    """The allowed field names of the model that `loc` points into (for 'did you mean' hints)."""
    current: Any = model
    for part in loc[:-1]:
        if isinstance(part, int) or current is None:
            continue
        info = current.model_fields.get(part)
        if info is None:
            return []
        current = _model_in(info.annotation)
    return list(current.model_fields) if current is not None else []


def _model_in(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()) or ():
        found = _model_in(arg)
        if found is not None:
            return found
    return None


class _Collector:
    def __init__(self, file: str, document: Document):
        self.file = file
        self.document = document
        self.errors: list[BankError] = []

    def add(self, path: Path, message: str, *, of_key: bool = False) -> None:
        position = self.document.position(path, of_key=of_key)
        self.errors.append(BankError(self.file, position.line, position.column, format_path(path), message))

    def add_validation(self, error: ValidationError, prefix: Path, model: type[BaseModel]) -> None:
        items = error.errors(include_url=False)
        # A misspelt field (explaination:) is one mistake: its did-you-mean says it all, so the field it stands for
        # is not also reported missing.
        misspelt = {tuple(item["loc"][:-1]) + (close,) for item in items if item["type"] == "extra_forbidden"
                    if (close := closest(str(item["loc"][-1]), _fields_of(model, item["loc"])))}
        for item in items:
            loc = tuple(item["loc"])
            if item["type"] == "missing" and loc in misspelt:
                continue
            allowed = _fields_of(model, loc) if item["type"] == "extra_forbidden" else ()
            self.add(prefix + loc, describe_pydantic_error(item, allowed=allowed),
                     of_key=item["type"] == "extra_forbidden")


def _validate(model: type[BaseModel], data: Any, prefix: Path, collector: _Collector,
              fields_of: type[BaseModel] | None = None) -> Any:
    """Validate `data`; `fields_of` is the model whose field names 'did you mean' hints draw on."""
    try:
        return model.model_validate(data)
    except ValidationError as error:
        collector.add_validation(error, prefix, fields_of or model)
        return None


def _with_stand_ins(raw: Any) -> Question | None:
    """A question that fails only for a missing prompt or explanation, with a stand-in for each, so that the rules
    (its key, its options, its visual) are checked too: one run of the checker reports every error of the question,
    not the missing text first and the rest on the next run. None when it fails for anything else."""
    missing = [name for name in TEXTS_CHECKED_WITHOUT if isinstance(raw, dict) and name not in raw]
    if not missing:
        return None
    try:
        return Question.model_validate({**raw, **{name: "(missing)" for name in missing}})
    except ValidationError:
        return None


TEXTS_CHECKED_WITHOUT = ("prompt", "explanation")  # required texts whose absence hides no other error
MAX_TRIES = 10


def check_feedback(header: BankHeader) -> list[tuple[Path, str]]:
    """The rules of `feedback`, `tries` and `penalty` that one field's type cannot say."""
    if header.feedback != "try_again":
        return [((name,), "applies only to feedback: try_again; remove it, or set feedback: try_again")
                for name in ("tries", "penalty") if getattr(header, name) is not None]
    problems: list[tuple[Path, str]] = []
    tries, penalty = header.tries, header.penalty
    if tries is None:
        problems.append((("feedback",), f"try_again needs tries: (from 2 to {MAX_TRIES}), like tries: 3"))
    elif not 2 <= tries <= MAX_TRIES:
        problems.append((("tries",), f"expected from 2 to {MAX_TRIES} tries, got {tries}"))
    if penalty is None:
        problems.append((("feedback",), "try_again needs penalty: the factor of each try's score, one per try, "
                                        "like penalty: [1, 0.5, 0.25]"))
        return problems
    for index, factor in enumerate(penalty):
        if not 0 <= factor <= 1:
            problems.append((("penalty", index), f"each factor must be from 0 to 1, got {factor:g}"))
        elif index and 0 <= penalty[index - 1] <= 1 and factor > penalty[index - 1]:
            problems.append((("penalty", index), f"the factors must not increase from one try to the next: try "
                                                 f"{index + 1} has {factor:g}, more than try {index}'s "
                                                 f"{penalty[index - 1]:g}"))
    if tries is not None and 2 <= tries <= MAX_TRIES and len(penalty) != tries:
        problems.append((("penalty",), f"expected one factor per try ({tries}), got {len(penalty)}"))
    return problems


def check_window(header: BankHeader) -> list[tuple[Path, str]]:
    """`closes` after `opens`, when a bank sets both."""
    if header.opens is None or header.closes is None or header.closes > header.opens:
        return []
    return [(("closes",), f"the quiz must close after it opens ({header.opens.isoformat()}); "
                          f"got {header.closes.isoformat()}")]


def check_pools(header: BankHeader, question_ids: list) -> list[tuple[Path, str]]:
    """Each pool names questions of the bank, each in one pool at most, and draws fewer than it has."""
    problems: list[tuple[Path, str]] = []
    owner: dict[str, str] = {}
    pool_ids: set[str] = set()
    known = [i for i in question_ids if isinstance(i, str)]
    for index, pool in enumerate(header.pools or ()):
        if pool.id in pool_ids:
            problems.append((("pools", index, "id"), f"pool id {pool.id!r} is used twice; give each pool its own id"))
        pool_ids.add(pool.id)
        for position, question_id in enumerate(pool.questions):
            path = ("pools", index, "questions", position)
            if question_id not in known:
                close = closest(question_id, known)
                problems.append((path, f"no question has the id {question_id!r}"
                                       + (f"; did you mean {close!r}?" if close else "")))
            elif question_id in pool.questions[:position]:
                problems.append((path, f"{question_id!r} is listed twice in this pool; list it once"))
            elif question_id in owner:
                problems.append((path, f"question {question_id!r} is already in pool {owner[question_id]!r}; a "
                                       "question is in one pool at most"))
            else:
                owner[question_id] = pool.id
        if pool.draw >= len(pool.questions):
            problems.append((("pools", index, "draw"), f"draw {pool.draw} of the pool's {len(pool.questions)} "
                                                       "questions would ask every one; draw fewer"))
    return problems


def validate_document(file: str, document: Document, visual_checker: VisualChecker | None = None) -> LoadResult:
    collector = _Collector(file, document)
    for problem in document.problems:  # at their own position: a duplicate key's, not the first one's
        collector.errors.append(BankError(file, problem.position.line, problem.position.column,
                                          format_path(problem.path), problem.message))
    data = document.data
    if not isinstance(data, dict):
        collector.add((), f"a bank must be a mapping with id, title and questions; got {describe_value(data)}")
        return LoadResult(file, None, tuple(sorted(collector.errors)))

    header = _validate(BankHeader, {k: v for k, v in data.items() if k != "questions"}, (), collector, Bank)
    if header is not None:
        for path, message in check_feedback(header):
            collector.add(path, message, of_key=path in (("tries",), ("penalty",)) and header.feedback != "try_again")
        for path, message in check_window(header):
            collector.add(path, message)
    raw_questions = data.get("questions")
    questions: list[Question] = []
    if raw_questions is None:
        collector.add(("questions",), "this required field is missing; add a list of questions")
    elif not isinstance(raw_questions, list):
        collector.add(("questions",), f"expected a list of questions (lines starting with '- '), "
                      f"got {describe_value(raw_questions)}")
    elif not raw_questions:
        collector.add(("questions",), "the list of questions is empty; add at least one question")
    else:
        for index, raw in enumerate(raw_questions):
            question = _validate(Question, raw, ("questions", index), collector)
            checked = question or _with_stand_ins(raw)  # reported missing; its other errors are reported too
            if checked is None:
                continue
            normalized, problems = rules.check_question(checked, raw, visual_checker)
            for path, message in problems:
                collector.add(("questions", index) + path, message)
            if question is not None:
                questions.append(normalized)
        for path, message in rules.check_unique_ids(raw_questions):
            collector.add(("questions",) + path, message)
        if header is not None:
            ids = [raw.get("id") for raw in raw_questions if isinstance(raw, dict)]
            for path, message in check_pools(header, ids):
                collector.add(path, message)

    if collector.errors or header is None:
        return LoadResult(file, None, tuple(sorted(collector.errors)))
    bank = Bank.model_construct(**dict(header), questions=questions)
    at = document.position(("id",))
    return LoadResult(file, bank, (), (at.line, at.column))


def load_bank_bytes(raw: bytes, file: str, visual_checker: VisualChecker | None = None) -> LoadResult:
    try:
        document = parse(raw)
    except SourceError as error:
        position: Position = error.position
        return LoadResult(file, None, (BankError(file, position.line, position.column, "", error.message),))
    return validate_document(file, document, visual_checker)


def load_bank_file(path: FsPath, display: str | None = None,
                   visual_checker: VisualChecker | None = None) -> LoadResult:
    file = display or str(path)
    try:
        with open(path, "rb") as handle:
            # The size before reading, so a huge file costs no memory; the bounded read stops one that grows.
            size = os.fstat(handle.fileno()).st_size
            raw = handle.read(MAX_FILE_BYTES + 1) if size <= MAX_FILE_BYTES else None
    except OSError as error:
        return LoadResult(file, None, (BankError(file, 1, 1, "", f"cannot read the file: {error.strerror}"),))
    if raw is None:
        return LoadResult(file, None, (BankError(file, 1, 1, "", too_large(size)),))
    return load_bank_bytes(raw, file, visual_checker)
