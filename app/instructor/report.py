"""What the instructor pages show: attempts and responses read from the database and turned into
per-bank and per-question reports with `stats`. No Flask here: callers pass the SQLAlchemy engine.
"""

from __future__ import annotations

import functools
import json
import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from sqlalchemy import Engine, case, func, select

from ..bank.schema import Bank, Question
from ..bank.variants import VariantError, apply, draw, sample_seeds
from ..db import as_utc, attempts, metadata, responses, tries
from ..web.formats import number
from . import stats
from .charts import CountChart

NUMERIC_TOP = 8  # distinct numeric answers charted; the rest are summed into one bar
HISTOGRAM_BINS = 10
ATTEMPTS_PER_PAGE = 50  # rows of the attempts list; the CSV has every response


@dataclass(frozen=True)
class BankSummary:
    bank: Bank
    started: int
    finished: int
    mean_fraction: float | None  # mean of total/max over finished attempts


class Response(NamedTuple):  # a bank's report reads every one of them: a tuple is the cheapest record
    attempt_id: str
    question_id: str
    answer: Any  # decoded JSON, as stored
    score: float
    seed: int = 0  # the attempt's variant seed
    right: float | None = None  # the final try's own score, before any try_again penalty (None: not stored)

    @property
    def full_credit(self) -> bool:
        """The answer earns the whole point under its own variant's key: a right answer on a later try too (the
        penalty is the try's, not the answer's)."""
        return (self.score if self.right is None else self.right) >= 1.0 - stats.FULL_CREDIT_TOLERANCE


@dataclass(frozen=True)
class AnswerRow:
    """One bar of a question's chart: an option (or a numeric value) and how often it was given."""

    label: str
    text: str | None  # the option's text (Markdown source); None for numeric values
    correct: bool | None  # None: a cell of a key that varies by variant
    count: int
    # A numeric or matrix value: how many of its `count` responses earned full credit. A parameterised question's
    # key varies by variant, so one value can be right for some students and wrong for others; `correct` is then
    # True only when every response with it earned full credit.
    credited: int | None = None

    @property
    def mixed(self) -> bool:
        """Some, not all, of this value's responses earned full credit."""
        return self.credited is not None and 0 < self.credited < self.count


@dataclass(frozen=True)
class MisconceptionRow:
    """How often the tries at a question matched one of its misconceptions."""

    id: str
    feedback: str | None  # Markdown; None for an id the question no longer lists
    count: int


@dataclass(frozen=True)
class QuestionReport:
    number: int
    question: Question
    responses: int
    facility: float | None  # mean score, 0..1
    full_credit: float | None  # fraction of responses scoring 1
    sample: int  # finished attempts that answered it: the discrimination sample
    discrimination: stats.Estimate  # item-rest (point-biserial) correlation
    upper_lower: stats.Estimate  # Kelley's D, upper minus lower 27%
    flags: list[stats.Flag]
    answers: list[AnswerRow]
    other_answers: int  # picks of ids that are no longer options, or numeric values beyond the top ones
    chart: CountChart | None
    tries: int = 0  # every try stored, the final ones included
    mean_tries: float | None = None  # tries a final answer took, on average
    misconceptions: list[MisconceptionRow] = field(default_factory=list)
    by_value: list[stats.ValueFacility] = field(default_factory=list)  # parameterised questions only


@dataclass(frozen=True)
class BankReport:
    bank: Bank
    started: int
    finished: int
    mean_fraction: float | None
    missed_only: int  # attempts at only the questions a student missed before
    bins: list[stats.Bin]
    histogram: CountChart | None
    questions: list[QuestionReport] = field(default_factory=list)


@dataclass(frozen=True)
class AttemptRow:
    """One attempt as the attempts list and an attempt's review name it."""

    id: str
    name: str | None  # the LMS's name for the learner, else the name the student typed; None: anonymous
    lms_user: str | None  # the LMS's user id, for an attempt an LMS launch started
    started: Any  # datetime, UTC
    finished: Any  # datetime or None: in progress
    total: float | None  # the stored total of a finished attempt
    max_score: int | None
    missed_only: bool  # a retake of only the questions the student missed before

    @property
    def seconds(self) -> int | None:
        """How long a finished attempt took, start to finish, in whole seconds."""
        return None if self.finished is None else int((self.finished - self.started).total_seconds())


@dataclass(frozen=True)
class AttemptPage:
    rows: list[AttemptRow]
    total: int  # attempts at the bank, every page's
    page: int  # from 1
    pages: int


# --- reading -----------------------------------------------------------------------------------

def bank_summaries(engine: Engine, banks: Iterable[Bank]) -> list[BankSummary]:
    # Scores are those of whole-bank attempts: a missed-only retake is a different, shorter test.
    whole = attempts.c.question_ids.is_(None)
    finished = attempts.c.finished_at.is_not(None) & whole
    fraction = case((finished & (attempts.c.max_score > 0), attempts.c.total_score / attempts.c.max_score))
    statement = (select(attempts.c.bank_id, func.count(case((whole, 1))), func.count(case((finished, 1))),
                        func.avg(fraction)).group_by(attempts.c.bank_id))
    with engine.connect() as connection:
        rows = {r[0]: r for r in connection.execute(statement)}
    summaries = []
    for bank in banks:
        row = rows.get(bank.id)
        summaries.append(BankSummary(bank, row[1], row[2], None if row[3] is None else float(row[3]))
                         if row else BankSummary(bank, 0, 0, None))
    return summaries


def load_attempts(engine: Engine, bank_id: str) -> list[Any]:
    statement = (select(attempts.c.id, attempts.c.started_at, attempts.c.finished_at, attempts.c.total_score,
                        attempts.c.max_score, attempts.c.question_ids).where(attempts.c.bank_id == bank_id))
    with engine.connect() as connection:
        return list(connection.execute(statement))


def _attempt_rows(connection, where, *, offset: int = 0, limit: int | None = None) -> list[AttemptRow]:
    lms_users = metadata.tables["lti_attempts"]  # an LMS launch's attempt: whose it is (app.lti.store)
    statement = (select(attempts.c.id, attempts.c.display_name, attempts.c.started_at, attempts.c.finished_at,
                        attempts.c.total_score, attempts.c.max_score, attempts.c.question_ids,
                        lms_users.c.user_sub, lms_users.c.user_name)
                 .select_from(attempts.outerjoin(lms_users, lms_users.c.attempt_id == attempts.c.id))
                 .where(where).order_by(attempts.c.started_at.desc(), attempts.c.id).offset(offset).limit(limit))
    return [AttemptRow(id=r.id, name=r.user_name or r.display_name, lms_user=r.user_sub,
                       started=as_utc(r.started_at), finished=as_utc(r.finished_at),
                       total=None if r.total_score is None else float(r.total_score), max_score=r.max_score,
                       missed_only=r.question_ids is not None)
            for r in connection.execute(statement)]


def attempt_page(engine: Engine, bank_id: str, page: int, per_page: int = ATTEMPTS_PER_PAGE) -> AttemptPage:
    """Page `page` of the bank's attempts, newest first (a page past the last is the last)."""
    with engine.connect() as connection:
        total = connection.execute(select(func.count()).select_from(attempts)
                                   .where(attempts.c.bank_id == bank_id)).scalar_one()
        pages = max(1, math.ceil(total / per_page))
        page = min(max(page, 1), pages)
        rows = _attempt_rows(connection, attempts.c.bank_id == bank_id, offset=(page - 1) * per_page,
                             limit=per_page)
    return AttemptPage(rows=rows, total=total, page=page, pages=pages)


def attempt_row(engine: Engine, bank_id: str, attempt_id: str) -> AttemptRow | None:
    with engine.connect() as connection:
        found = _attempt_rows(connection, (attempts.c.bank_id == bank_id) & (attempts.c.id == attempt_id))
    return found[0] if found else None


def _decode(raw: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return None


def load_responses(engine: Engine, bank_id: str, question_id: str | None = None) -> list[Response]:
    final = (select(tries.c.score).where(tries.c.attempt_id == responses.c.attempt_id,
                                         tries.c.question_id == responses.c.question_id, tries.c.final)
             .limit(1).scalar_subquery())
    statement = (select(responses.c.attempt_id, responses.c.question_id, responses.c.answer, responses.c.score,
                        responses.c.seed, final.label("right"))
                 .where(responses.c.bank_id == bank_id).order_by(responses.c.id))
    if question_id is not None:
        statement = statement.where(responses.c.question_id == question_id)
    decode = functools.cache(_decode)  # a class gives the same few answers: each is decoded once (read, not changed)
    with engine.connect() as connection:
        return [Response(r.attempt_id, r.question_id, decode(r.answer), float(r.score), r.seed,
                         None if r.right is None else float(r.right)) for r in connection.execute(statement)]


@dataclass
class TryCounts:
    tries: int = 0
    mean_tries: float | None = None  # the tries each final answer took, on average
    misconceptions: dict[str, int] = field(default_factory=dict)  # id -> tries that matched it


def load_try_counts(engine: Engine, bank_id: str) -> dict[str, TryCounts]:
    """Per question: tries stored, the tries a final answer took on average, and how often each misconception was
    hit (counted by the database: a bank's tries are many, their counts few)."""
    of_bank = tries.c.bank_id == bank_id
    per_question = (select(tries.c.question_id, func.count(), func.avg(case((tries.c.final, tries.c.try_number))))
                    .where(of_bank).group_by(tries.c.question_id))
    hits = (select(tries.c.question_id, tries.c.misconception, func.count())
            .where(of_bank, tries.c.misconception.is_not(None)).group_by(tries.c.question_id, tries.c.misconception))
    counts: dict[str, TryCounts] = defaultdict(TryCounts)
    with engine.connect() as connection:
        for question_id, stored, mean in connection.execute(per_question):
            counts[question_id].tries, counts[question_id].mean_tries = stored, None if mean is None else float(mean)
        for question_id, misconception, count in connection.execute(hits):
            counts[question_id].misconceptions[misconception] = count
    return counts


def misconception_rows(question: Question, hits: dict[str, int]) -> list[MisconceptionRow]:
    """Each misconception the question lists, with its hits, then any id hit that it no longer lists."""
    listed = question.misconceptions or []
    rows = [MisconceptionRow(m.id, m.feedback, hits.get(m.id, 0)) for m in listed]
    known = {m.id for m in listed}
    return rows + [MisconceptionRow(key, None, count) for key, count in sorted(hits.items()) if key not in known]


def variant_values(question: Question, seed: int) -> dict[str, Any] | None:
    """The parameter values a student with this seed was shown: the seed's draw, or, when that variant cannot be
    built, the draw of the fallback seed that variants.instantiate uses. None if no variant can be built."""
    for candidate in (seed, *sample_seeds()):
        try:
            values = draw(question, candidate)
            apply(question, values)  # measured: 0.1-0.3 ms per answer; skipping it would misfile a fallback
            return values
        except VariantError:
            continue
    return None


def facility_by_value(question: Question, given: Sequence[Response]) -> list[stats.ValueFacility]:
    """Facility split by each parameter's value, for a parameterised question (none for others)."""
    if not question.params:
        return []
    drawn = ((variant_values(question, r.seed), r.score) for r in given)
    return stats.facility_by_value([(values, score) for values, score in drawn if values is not None])


# --- answers and charts ------------------------------------------------------------------------

def selected_ids(answer: Any) -> list[str]:
    """The option ids in a stored choice answer: true/false, an id, or a list of ids."""
    if isinstance(answer, bool):
        return ["true" if answer else "false"]
    if isinstance(answer, str):
        return [answer]
    if isinstance(answer, list):
        return [str(item) for item in answer]
    return [json.dumps(answer)]  # not a choice answer: counted as "other"


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def value_label(value: Any) -> str:
    """A stored numeric or matrix answer as a chart label: 0.5, or [0.67, 0.24; 0.1, 0.9] row by row."""
    if _is_number(value):
        return number(value)
    if isinstance(value, list) and value and all(isinstance(row, list) and all(map(_is_number, row)) for row in value):
        return "[" + "; ".join(", ".join(number(x) for x in row) for row in value) + "]"
    return json.dumps(value)


def cell_label(question: Question, cell: Any) -> str:
    """A picked cell of a cells question, "query → key" by the grid's labels (see Grid.names)."""
    if isinstance(cell, list) and len(cell) == 2 and all(isinstance(i, int) for i in cell):
        return " → ".join(question.grid.names(*cell))
    return json.dumps(cell)


def answer_breakdown(question: Question, given: Sequence[Response]) -> tuple[list[AnswerRow], int]:
    """How often each option (a numeric or matrix value, a cell) was given, and how many answers fell outside."""
    if question.type in ("numeric", "matrix"):
        labels: list[str] = []
        credited: dict[str, int] = defaultdict(int)
        for response in given:
            label = value_label(response.answer)
            labels.append(label)
            credited[label] += response.full_credit
        shown, other = stats.most_common(labels, NUMERIC_TOP)
        return [AnswerRow(str(label), None, credited[label] == count, count, credited[label])
                for label, count in shown], other
    if question.type == "cells":  # every picked cell counts, like the options of a multi-select
        picks = [cell_label(question, cell) for r in given if isinstance(r.answer, list) for cell in r.answer]
        shown, other = stats.most_common(picks, NUMERIC_TOP)
        if not isinstance(question.answer, list):  # a parameterised key varies with the variant: not one answer
            return [AnswerRow(str(label), None, None, count) for label, count in shown], other
        correct = {cell_label(question, cell) for cell in question.answer}
        return [AnswerRow(str(label), None, label in correct, count) for label, count in shown], other
    counts, other = stats.pick_counts([selected_ids(r.answer) for r in given], [o.id for o in question.options])
    rows = [AnswerRow(o.id, o.text, bool(o.correct), counts[o.id]) for o in question.options]
    return rows, other


def answer_chart(number: int, question: Question, rows: Sequence[AnswerRow], other: int,
                 responses_count: int) -> CountChart | None:
    if responses_count == 0:
        return None
    labels = [f"{row.label} ({row.credited} of {row.count} full credit)" if row.mixed else row.label for row in rows]
    counts = [row.count for row in rows]
    highlighted = [row.correct for row in rows]
    valued = question.type in ("numeric", "matrix", "cells")
    if other:
        labels.append({"numeric": "other values", "matrix": "other values", "cells": "other cells"}.get(
            question.type, "not an option now"))
        counts.append(other)
        highlighted.append(False)
    plural = "s" if responses_count != 1 else ""
    if question.type == "multiple_choice":
        title, subject = f"Question {number}: how often each option was picked", "picks"
        intro = f"{responses_count} response{plural}; each could pick several options."
    elif question.type == "cells":
        title, subject = f"Question {number}: the cells picked most often", "picks"
        intro = f"{responses_count} response{plural}; each could pick several cells."
    elif question.type in ("numeric", "matrix"):
        title, subject = f"Question {number}: the most common answers", "answers"
        intro = f"{responses_count} response{plural}."
    else:
        title, subject = f"Question {number}: how often each option was chosen", "answers"
        intro = f"{responses_count} response{plural}."
    return CountChart(title=title, subject=subject,
                      category_title=("cell" if question.type == "cells" else "answer given") if valued else "option",
                      labels=tuple(labels), counts=tuple(counts), highlighted=tuple(highlighted),
                      highlight_label="full credit" if question.type in ("numeric", "matrix") else "correct",
                      intro=intro)


def question_chart(engine: Engine, bank: Bank, question: Question) -> CountChart | None:
    """The chart of one question, read on its own (for the image route)."""
    given = load_responses(engine, bank.id, question.id)
    rows, other = answer_breakdown(question, given)
    return answer_chart(bank.index_of(question.id) + 1, question, rows, other, len(given))


def band_label(band: stats.Bin) -> str:
    return f"{band.lower:.0%}\u2013{band.upper:.0%}"


def finished_fractions(rows: Iterable[Any]) -> list[float]:
    return [r.total_score / r.max_score for r in rows
            if r.finished_at is not None and r.total_score is not None and r.max_score and r.question_ids is None]


def histogram_chart(fractions: Sequence[float], bins: Sequence[stats.Bin]) -> CountChart | None:
    if not fractions:
        return None
    n = len(fractions)
    intro = f"{n} finished attempt{'s' if n != 1 else ''}, mean score {stats.mean(fractions):.0%}."
    return CountChart(title="Final scores, as a percentage of the maximum", subject="finished attempts",
                      category_title="score band", labels=tuple(band_label(b) for b in bins),
                      counts=tuple(b.count for b in bins), highlighted=(False,) * len(bins), intro=intro,
                      skip_zero_in_alt=True)


def score_histogram(engine: Engine, bank: Bank) -> CountChart | None:
    """The histogram of one bank, read on its own (for the image route)."""
    fractions = finished_fractions(load_attempts(engine, bank.id))
    return histogram_chart(fractions, stats.histogram(fractions, HISTOGRAM_BINS))


# --- the bank report ---------------------------------------------------------------------------

def bank_report(engine: Engine, bank: Bank) -> BankReport:
    attempt_rows = load_attempts(engine, bank.id)
    fractions = finished_fractions(attempt_rows)
    bins = stats.histogram(fractions, HISTOGRAM_BINS)
    # Counts, scores and discrimination are of whole-bank attempts: a missed-only retake is a different, shorter
    # test (its answers count in each question's own numbers).
    whole = [r for r in attempt_rows if r.question_ids is None]
    # Each finished attempt's total as stored (what the grade book holds: its questions when it finished).
    totals = {r.id: float(r.total_score or 0.0) for r in whole if r.finished_at is not None}
    whole_finished = set(totals)
    try_counts = load_try_counts(engine, bank.id)

    by_question: dict[str, list[Response]] = defaultdict(list)
    for response in load_responses(engine, bank.id):
        by_question[response.question_id].append(response)

    reports = []
    for number, question in enumerate(bank.questions, start=1):
        given = by_question.get(question.id, [])
        scores = [r.score for r in given]
        sample = [r for r in given if r.attempt_id in whole_finished]
        item_scores = [r.score for r in sample]
        sample_totals = [totals[r.attempt_id] for r in sample]
        discrimination = stats.point_biserial(item_scores, sample_totals)
        facility = stats.mean(scores)
        rows, other = answer_breakdown(question, given)
        counted = try_counts.get(question.id, TryCounts())
        reports.append(QuestionReport(
            number=number, question=question, responses=len(given), facility=facility,
            full_credit=stats.full_credit_rate(scores), sample=len(sample), discrimination=discrimination,
            upper_lower=stats.upper_lower_difference(item_scores, sample_totals),
            flags=stats.item_flags(facility, discrimination.value, len(given), len(sample)),
            answers=rows, other_answers=other, chart=answer_chart(number, question, rows, other, len(given)),
            tries=counted.tries, mean_tries=counted.mean_tries,
            misconceptions=misconception_rows(question, counted.misconceptions),
            by_value=facility_by_value(question, given)))

    return BankReport(bank=bank, started=len(whole), finished=len(whole_finished),
                      mean_fraction=stats.mean(fractions),
                      missed_only=sum(1 for r in attempt_rows if r.question_ids is not None), bins=bins,
                      histogram=histogram_chart(fractions, bins), questions=reports)
