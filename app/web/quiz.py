"""The student's pages: the list of banks, one question per page, its answer page, and the summary.

Every page works without JavaScript; answers are POSTed and then redirected (POST/redirect/GET).
"""

from __future__ import annotations

from flask import Blueprint, current_app, redirect, render_template, request, url_for

from ..bank import banks
from ..errors import BadInput
from ..grading import grade, parse_form_answer
from . import progress
from .limits import limiter
from .visual_views import visual_view

bp = Blueprint("quiz", __name__)


@bp.get("/")
def home():
    registry = banks()
    listed = sorted(registry.banks.values(), key=lambda b: b.title.lower())
    return render_template("home.html", banks=listed,
                           answered={b.id: len(progress.answers(b)) for b in listed})


@bp.get("/quiz/<bank_id>/")
def start(bank_id: str):
    bank = banks().get(bank_id)
    answered = progress.answers(bank)
    next_question = next((q for q in bank.questions if q.id not in answered), None)
    questions = [progress.variant(bank, q) for q in bank.questions]
    row = progress.attempt(bank)
    return render_template("quiz/start.html", bank=bank, questions=questions, answered=answered,
                           next_question=next_question, display_name=row.display_name if row else None,
                           max_name=progress.MAX_DISPLAY_NAME)


@bp.post("/quiz/<bank_id>/name")
@limiter.limit(lambda: current_app.config["RATE_LIMIT_SUBMIT"])
def set_name(bank_id: str):
    bank = banks().get(bank_id)
    name = progress.clean_display_name(request.form.get("display_name", ""))
    progress.ensure_attempt(bank, display_name=name or "")
    return redirect(url_for(".start", bank_id=bank.id), 303)


def _context(bank, question, answered):
    index = bank.index_of(question.id)
    following = bank.questions[index + 1] if index + 1 < len(bank.questions) else None
    return {"bank": bank, "question": question, "number": index + 1, "total": len(bank.questions),
            "answered_count": len(answered), "next_question": following}


@bp.get("/quiz/<bank_id>/<question_id>")
def question(bank_id: str, question_id: str):
    bank, item = banks().question(bank_id, question_id)
    answered = progress.answers(bank)
    if item.id in answered:
        return redirect(url_for(".answer", bank_id=bank.id, question_id=item.id), 303)
    item = progress.variant(bank, item)
    return render_template("quiz/question.html", **_context(bank, item, answered), error=None)


@bp.post("/quiz/<bank_id>/<question_id>")
@limiter.limit(lambda: current_app.config["RATE_LIMIT_SUBMIT"])
def submit(bank_id: str, question_id: str):
    bank, item = banks().question(bank_id, question_id)
    answered = progress.answers(bank)
    item = progress.variant(bank, item)
    if item.id not in answered:  # a double submit or a resubmit after "back" keeps the first answer
        try:
            answer = parse_form_answer(item, request.form.getlist("answer"))
        except BadInput as error:
            page = render_template("quiz/question.html", **_context(bank, item, answered), error=error.message)
            return page, 400
        progress.record(bank, item, answer)
    return redirect(url_for(".answer", bank_id=bank.id, question_id=item.id), 303)


@bp.get("/quiz/<bank_id>/<question_id>/answer")
def answer(bank_id: str, question_id: str):
    bank, item = banks().question(bank_id, question_id)
    answered = progress.answers(bank)
    if item.id not in answered:
        return redirect(url_for(".question", bank_id=bank.id, question_id=item.id), 303)
    item = progress.variant(bank, item)
    result = grade(item, answered[item.id])
    visual = None
    if item.visual is not None:
        visual = visual_view(item.visual.kind, item.visual.params, request.args.to_dict(flat=False), item.learn,
                             answer=answered[item.id])
    page = render_template("quiz/answer.html", **_context(bank, item, answered), grade=result, visual=visual)
    if visual is None:
        return page
    return page, visual.status, {"Retry-After": str(visual.retry_after)} if visual.retry_after else {}


@bp.get("/quiz/<bank_id>/summary")
def summary(bank_id: str):
    bank = banks().get(bank_id)
    results = progress.grades(bank)
    total = sum(g.score for g in results.values())
    questions = [progress.variant(bank, q) for q in bank.questions]
    return render_template("quiz/summary.html", bank=bank, questions=questions, grades=results, total=total,
                           max_score=len(bank.questions))


@bp.post("/quiz/<bank_id>/retake")
def retake(bank_id: str):
    bank = banks().get(bank_id)
    progress.reset(bank)
    return redirect(url_for(".question", bank_id=bank.id, question_id=bank.questions[0].id), 303)
