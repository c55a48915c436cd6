"""The JSON API: list banks and questions (never the answer key) and grade an answer.

POST bodies must be `application/json`; every error is JSON `{"error": {status, title, message}}`.
"""

from __future__ import annotations

from flask import Blueprint, abort, jsonify, request

from ..bank import banks
from ..bank.schema import Bank, Question
from ..bank.variants import has_params, instantiate, parse_seed
from ..errors import BadInput
from ..grading import Grade, grade, parse_answer
from ..markup import render_inline, render_markdown

bp = Blueprint("api", __name__, url_prefix="/api")


def bank_summary(bank: Bank) -> dict:
    return {"id": bank.id, "title": bank.title, "description": bank.description, "source": bank.source,
            "question_count": len(bank.questions)}


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
        "visual": question.visual.model_dump() if question.visual else None,
    }


def grade_json(result: Grade) -> dict:
    """A grade as the API sends it, its Markdown rendered to HTML."""
    return {
        "correct": result.correct, "score": result.score, "answer": result.answer,
        "correct_answer": result.correct_answer,
        "feedback": [{"option": o.option_id, "selected": o.selected, "correct": o.correct,
                      "feedback_html": (str(render_inline(o.feedback)) or None) if o.feedback else None}
                     for o in result.options],
        "explanation_html": str(render_markdown(result.explanation)),
    }


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


@bp.post("/banks/<bank_id>/questions/<question_id>/grade")
def grade_answer(bank_id: str, question_id: str):
    _, question = banks().question(bank_id, question_id)
    if not request.is_json:
        abort(415)
    try:
        body = request.get_json(silent=True)
    except RecursionError:  # json.loads recurses per nesting level; [[[[... within the size limit overflows
        raise BadInput("The JSON body is nested too deeply; send {\"answer\": ...}.") from None
    if body is None:
        raise BadInput("The body is not valid JSON; send {\"answer\": ...}.")
    if not isinstance(body, dict):
        raise BadInput("The body must be a JSON object like {\"answer\": ...}.")
    unknown = sorted(set(body) - {"answer", "seed"})
    if unknown:
        raise BadInput(f"Unknown field(s) {', '.join(map(repr, unknown))}; the body has \"answer\" and an optional \"seed\".")
    if "answer" not in body:
        raise BadInput("The answer is missing: send {\"answer\": ...}.")
    question = instantiate(question, parse_seed(body.get("seed")))
    return jsonify(grade_json(grade(question, parse_answer(question, body["answer"]))))
