"""The JSON API: list banks and questions (never the answer key), grade an answer (practice banks), and answer
within an attempt (any bank; the only way for a graded one).

POST bodies must be `application/json`; every error is JSON `{"error": {status, title, message}}`.
"""

from __future__ import annotations

import re

from flask import Blueprint, abort, jsonify, request, url_for

from ..bank import banks
from ..bank.schema import Bank, Question
from ..bank.variants import has_params, instantiate, parse_seed
from ..errors import AppError, BadInput, NotFound
from ..grading import Grade, grade, parse_answer
from ..markup import render_inline, render_markdown
from . import progress

bp = Blueprint("api", __name__, url_prefix="/api")


class CrossSite(AppError):
    status = 403
    title = "Forbidden"


@bp.before_request
def _refuse_other_sites() -> None:
    """The API takes no CSRF token (scripts and apps call it, with JSON), so a write a browser sends from another
    site's page is refused by its Fetch Metadata: a page elsewhere could otherwise make its visitors' browsers
    start attempts here, spending their school's shared budget. Clients that are no browser send no
    Sec-Fetch-Site. An empty body with a form's or text's content type (an old browser's cross-site form) is
    refused by _json_body."""
    if request.method == "POST" and request.headers.get("Sec-Fetch-Site") in ("cross-site", "same-site"):
        raise CrossSite("The API does not take writes from another site's page. Call it from a script or an "
                        "app, or from this site's own pages.")


def bank_summary(bank: Bank) -> dict:
    return {"id": bank.id, "title": bank.title, "description": bank.description, "source": bank.source,
            "question_count": len(bank.questions), "questions_per_attempt": bank.per_attempt, "mode": bank.mode}


def public_question(question: Question, seed: int = 0) -> dict:
    """A question as a student may see it before answering: no `correct` flags, no feedback."""
    parameterised = has_params(question)
    question = instantiate(question, seed)
    return {
        "id": question.id,
        "seed": seed if parameterised else None,
        "type": question.type,
        "prompt": question.prompt,
        "prompt_html": str(render_markdown(question.prompt)),
        "options": [{"id": o.id, "text": o.text, "text_html": str(render_inline(o.text))} for o in question.options],
        "tags": list(question.tags),
        "scoring": question.scoring,
        "unit": question.unit,
        **({"shape": list(question.shape)} if question.type == "matrix" else {}),  # the rows and columns to send
        **({"grid": {"rows": question.grid.rows, "cols": question.grid.cols}} if question.type == "cells" else {}),
    }


def grade_json(result: Grade, question: Question) -> dict:
    """A grade as the API sends it, its Markdown rendered to HTML, with the question's visual (kind and params for
    /plots/<kind>.png), which like the key is shown only once the answer is: a prediction's figure is its answer.
    `key_changed`: the score is the one recorded, and the key has been changed since (`correct` follows the key
    as it is now)."""
    return {
        "correct": result.correct, "score": result.score, "key_changed": result.key_changed, "answer": result.answer,
        "correct_answer": result.correct_answer,
        "feedback": [{"option": o.option_id, "selected": o.selected, "correct": o.correct,
                      "feedback_html": (str(render_inline(o.feedback)) or None) if o.feedback else None}
                     for o in result.options],
        "explanation_html": str(render_markdown(result.explanation)),
        "misconception": _misconception_json(result),
        "visual": question.visual.model_dump() if question.visual else None,
    }


def _misconception_json(result: Grade) -> dict | None:
    if result.misconception is None:
        return None
    return {"id": result.misconception.id, "feedback_html": str(render_markdown(result.misconception.feedback))}


@bp.get("/banks")
def list_banks():
    registry = banks()
    return jsonify({"banks": [bank_summary(b) for b in registry.banks.values()]})


@bp.get("/banks/<bank_id>")
def show_bank(bank_id: str):
    bank = banks().get(bank_id)
    return jsonify({**bank_summary(bank), "questions": [public_question(q) for q in bank.questions]})


@bp.get("/banks/<bank_id>/questions/<question_id>")
def show_question(bank_id: str, question_id: str):
    _, question = banks().question(bank_id, question_id)
    return jsonify(public_question(question, parse_seed(request.args.get("seed"))))


def _json_body(fields: dict[str, bool], shape: str, *, optional: bool = False) -> dict:
    """The request's JSON object, with only `fields` (name -> required); `shape` shows it in error messages.
    `optional`: an empty body is an empty object."""
    if optional and not request.get_data(cache=True):
        if request.content_type and not request.is_json:  # what a cross-site form or text POST sends
            abort(415)
        return {}
    if not request.is_json:
        abort(415)
    try:
        body = request.get_json(silent=True)
    except RecursionError:  # json.loads recurses per nesting level; [[[[... within the size limit overflows
        raise BadInput(f"The JSON body is nested too deeply; send {shape}.") from None
    if body is None:
        raise BadInput(f"The body is not valid JSON; send {shape}.")
    if not isinstance(body, dict):
        raise BadInput(f"The body must be a JSON object like {shape}.")
    unknown = sorted(set(body) - set(fields))
    if unknown:
        raise BadInput(f"Unknown field(s) {', '.join(map(repr, unknown))}; send {shape}.")
    if "answer" in fields and fields["answer"] and "answer" not in body:
        raise BadInput("The answer is missing: send {\"answer\": ...}.")
    return body


class GradedBank(AppError):
    status = 403
    title = "Graded quiz"


@bp.post("/banks/<bank_id>/questions/<question_id>/grade")
def grade_answer(bank_id: str, question_id: str):
    bank, question = banks().question(bank_id, question_id)
    if bank.mode == "graded":
        raise GradedBank(f"The quiz {bank.id!r} is graded, so answers are graded only within an attempt, once per "
                         f"question: start one with POST /api/banks/{bank.id}/attempts, then POST each answer to "
                         f"/api/banks/{bank.id}/attempts/<attempt>/questions/<question>/answer.")
    body = _json_body({"answer": True, "seed": False}, '{"answer": ...} and an optional "seed"')
    question = instantiate(question, parse_seed(body.get("seed")))
    return jsonify(grade_json(grade(question, parse_answer(question, body["answer"])), question))


# --- attempts: how a graded bank is answered (any bank may be) ----------------------------------------------

ATTEMPT_ID = re.compile(r"[0-9a-f]{32}")


def _attempt(bank: Bank, attempt_id: str) -> progress.Attempt:
    attempt = progress.load(bank, attempt_id) if ATTEMPT_ID.fullmatch(attempt_id) else None
    if attempt is None:
        raise NotFound(f"There is no attempt {attempt_id[:40]!r} at the quiz {bank.id!r}. Start one with "
                       f"POST /api/banks/{bank.id}/attempts and use the \"attempt\" it returns.")
    return attempt


def hint_json(result: Grade, question: Question) -> dict:
    """What a wrong try shows under try_again: the feedback of the wrong options chosen (or the misconception
    matched), else the question's hint; never the key, the explanation, or which of the chosen options are right."""
    feedback = [{"option": o.option_id, "feedback_html": str(render_inline(o.feedback))}
                for o in result.options if o.selected and not o.correct and o.feedback]
    general = question.hint if question.hint and not feedback and result.misconception is None else None
    return {"feedback": feedback, "misconception": _misconception_json(result),
            "hint_html": str(render_inline(general)) if general else None}


def attempt_json(attempt: progress.Attempt) -> dict:
    bank = attempt.bank
    revealed_all = bank.feedback != "deferred" or attempt.finished
    results = attempt.results()
    scores = attempt.scores()
    questions = []
    for template in attempt.questions:
        shown = public_question(template, attempt.seed)
        shown.pop("seed")  # the variant's seed stays on the server: only the attempt knows it
        concrete = attempt.variant(template)
        order = [o.id for o in concrete.options]  # shuffle.options: this attempt's order
        shown["options"].sort(key=lambda option: order.index(option["id"]))
        result = results.get(template.id)
        questions.append({**shown, "tries_used": attempt.tries_used(template), "closed": attempt.closed(template),
                          "result": grade_json(result, concrete) if result and attempt.reveals(template) else None})
    return {"attempt": attempt.id, "bank": bank.id, "mode": bank.mode, "feedback": bank.feedback,
            "tries": progress.tries_allowed(bank), "missed_only": attempt.missed_only, "finished": attempt.finished,
            "score": sum(scores.values()) if revealed_all else None,
            "max_score": len(attempt.questions),
            "deadline": attempt.deadline.isoformat() if attempt.deadline else None,
            "opens": bank.opens.isoformat() if bank.opens else None,
            "closes": bank.closes.isoformat() if bank.closes else None,
            "questions": questions}


@bp.post("/banks/<bank_id>/attempts")
def start_attempt(bank_id: str):
    """A new attempt (rate-limited like the pages' own): its id is the token every answer is sent with."""
    bank = banks().get(bank_id)
    body = _json_body({"display_name": False}, 'an empty body, or {"display_name": "..."}', optional=True)
    name = body.get("display_name", "")
    if not isinstance(name, str):
        raise BadInput("display_name must be text (or left out, to stay anonymous).")
    attempt = progress.create(bank, display_name=progress.clean_display_name(name))
    location = url_for(".show_attempt", bank_id=bank.id, attempt_id=attempt.id)
    return jsonify(attempt_json(attempt)), 201, {"Location": location}


@bp.get("/banks/<bank_id>/attempts/<attempt_id>")
def show_attempt(bank_id: str, attempt_id: str):
    bank = banks().get(bank_id)
    attempt = _attempt(bank, attempt_id)
    if not attempt.finished and progress.close_if_over(attempt):
        attempt = _attempt(bank, attempt_id)  # as closed now
    return jsonify(attempt_json(attempt))


@bp.post("/banks/<bank_id>/attempts/<attempt_id>/questions/<question_id>/answer")
def answer_in_attempt(bank_id: str, attempt_id: str, question_id: str):
    """Grade and record the next try at a question of the attempt; what comes back follows the bank's feedback
    mode (a verdict and hints, the key only once the question is closed, nothing before the end if deferred)."""
    bank, question = banks().question(bank_id, question_id)
    attempt = _attempt(bank, attempt_id)
    if not attempt.includes(question):
        raise BadInput(f"Question {question.id!r} is not part of this attempt, which has only "
                       f"{', '.join(repr(q.id) for q in attempt.questions)}.")
    body = _json_body({"answer": True, "try": False}, '{"answer": ...} and an optional "try" (its number)')
    allowed, try_number = progress.tries_allowed(bank), body.get("try")
    if try_number is not None and (isinstance(try_number, bool) or not isinstance(try_number, int)
                                   or not 1 <= try_number <= allowed):
        raise BadInput(f"try must be a whole number from 1 to {allowed} (this quiz allows {allowed} "
                       f"{'tries' if allowed > 1 else 'try'} per question); nothing was stored.")
    progress.check_open(attempt.bank)  # an LMS link's attempt: the link's window
    progress.check_time(attempt)  # before the answer is read: a late answer is refused whatever it says
    answer = parse_answer(attempt.variant(question), body["answer"])
    outcome = progress.submit(attempt, question, answer, try_number)
    attempt = progress.load(bank, attempt.id)  # as stored now: this answer may have finished the attempt
    hidden = outcome.final and not attempt.reveals(question)  # deferred, until the attempt is finished
    result = attempt.result(question) if attempt.reveals(question) else None
    return jsonify({
        "question": question.id, "try": outcome.number, "tries": allowed, "recorded": True, "final": outcome.final,
        "tries_left": 0 if outcome.final else allowed - outcome.number,
        "verdict": None if hidden else outcome.grade.verdict,
        "hint": None if outcome.final else hint_json(outcome.grade, attempt.variant(question)),
        "grade": grade_json(result, attempt.variant(question)) if result is not None else None,
    })
