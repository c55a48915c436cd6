"""The student's pages: the list of banks, one question per page (with the hints of earlier tries), its answer
page, and the review of the attempt.

Every page works without JavaScript; answers are POSTed and then redirected (POST/redirect/GET).
"""

from __future__ import annotations

from flask import Blueprint, current_app, flash, redirect, render_template, request, url_for

from ..bank import banks
from ..errors import BadInput, NotFound
from ..grading import parse_form_answer
from . import progress
from .limits import limiter
from .visual_views import visual_view

bp = Blueprint("quiz", __name__)


@bp.get("/")
def home():
    registry = banks()
    listed = sorted(registry.banks.values(), key=lambda b: b.title.lower())
    progress_of = {}  # bank id -> (answered, questions, a retry of the missed ones) of the current attempt
    for bank in listed:
        attempt = progress.current(bank)
        if attempt is not None:
            progress_of[bank.id] = (len(attempt.closed_ids()), len(attempt.questions),
                                    attempt.row.question_ids is not None)
    return render_template("home.html", banks=listed, progress_of=progress_of)


@bp.get("/quiz/<bank_id>/")
def start(bank_id: str):
    bank = banks().get(bank_id)
    attempt = progress.current(bank)  # none yet: the first question page starts one (no row for a visit)
    if attempt is not None and not attempt.finished and progress.close_if_over(attempt):
        attempt = progress.current(bank)  # as closed now
    bank = attempt.bank if attempt else bank  # an LMS link's attempt: the notes show the link's settings
    answered = attempt.closed_ids() if attempt else set()
    listed = attempt.questions if attempt else bank.questions
    next_question = next((q for q in listed if q.id not in answered), None)
    questions = [attempt.variant(q) if attempt else progress.preview(q) for q in listed]
    name = attempt.row.display_name if attempt else progress.chosen_name(bank)  # saved before any attempt
    return render_template("quiz/start.html", bank=bank, questions=questions, answered=answered,
                           next_question=next_question, display_name=name,
                           retry=attempt is not None and attempt.row.question_ids is not None,
                           max_name=progress.MAX_DISPLAY_NAME, window_note=progress.window_note(bank),
                           is_open=_is_open(bank), attempts_note=progress.attempts_note(bank),
                           time_over=attempt is not None and attempt.time_over(),
                           time_limit=progress.duration(bank.time_limit) if bank.time_limit else None,
                           course_attempt=progress.course_attempt(bank), attempt=attempt,
                           earlier=progress.earlier(bank))


def _is_open(bank) -> bool:
    try:
        progress.check_open(bank)
    except (progress.NotOpenYet, progress.QuizClosed):
        return False
    return True


@bp.post("/quiz/<bank_id>/name")
@limiter.limit(lambda: current_app.config["RATE_LIMIT_SUBMIT"])
def set_name(bank_id: str):
    bank = banks().get(bank_id)
    name = progress.clean_display_name(request.form.get("display_name", ""))
    progress.set_name(bank, name)
    flash(f"Name saved ({name}): your instructor sees it beside your results." if name
          else "No name saved: your results stay anonymous.")
    return redirect(url_for(".start", bank_id=bank.id), 303)


def _context(attempt, question):
    listed = attempt.questions
    index = next(i for i, q in enumerate(listed) if q.id == question.id)
    return {"bank": attempt.bank, "attempt": attempt, "question": attempt.variant(question), "number": index + 1,
            "total": len(listed), "answered_count": len(attempt.closed_ids()),
            "next_question": listed[index + 1] if index + 1 < len(listed) else None}


def _attempt_with(bank, item, *, start: bool):
    attempt = progress.ensure(bank) if start else progress.current(bank)
    if attempt is not None and not attempt.includes(item):
        raise progress.not_in_attempt(attempt, item)
    return attempt


def _question_page(attempt, item, error=None, status=200):
    number = attempt.tries_used(item) + 1
    deadline = attempt.deadline
    page = render_template("quiz/question.html", **_context(attempt, item), error=error, tries=attempt.tries(item),
                           try_number=number, tries_allowed=progress.tries_allowed(attempt.bank),
                           factor=progress.factor(attempt.bank, number),
                           deadline=progress.when(deadline) if deadline else None,
                           deadline_iso=deadline.isoformat() if deadline else None,
                           closes=progress.when(attempt.bank.closes) if attempt.bank.closes else None)
    return page, status


@bp.get("/quiz/<bank_id>/<question_id>")
def question(bank_id: str, question_id: str):
    bank, item = banks().question(bank_id, question_id)
    bank = progress.settings(bank)  # an LMS link's attempt: the link's window
    progress.check_open(bank)
    if progress.current(bank) is None:  # the first question page starts the attempt (rate-limited)
        attempt = progress.ensure(bank)
        shuffled = bank.shuffle is not None and bank.shuffle.questions
        # Shuffled, or without this question (its pools drew others): a new attempt begins at its own first one.
        if attempt.questions[0].id != item.id and (shuffled or not attempt.includes(item)):
            return redirect(url_for(".question", bank_id=bank.id, question_id=attempt.questions[0].id), 303)
    attempt = _attempt_with(bank, item, start=True)
    if attempt.closed(item):
        return redirect(url_for(".answer", bank_id=bank.id, question_id=item.id), 303)
    progress.check_time(attempt)
    progress.check_not_finished(attempt)  # a question the bank gained after the attempt finished
    return _question_page(attempt, item)


def _try_number(raw: str | None) -> int | None:
    if raw is None:
        return None  # an older form: the next try
    if not (raw.isascii() and raw.isdigit() and len(raw) <= 3 and int(raw) >= 1):
        raise BadInput("The form's try number is not a whole number from 1. Reload the question and answer again.")
    return int(raw)


@bp.post("/quiz/<bank_id>/<question_id>")
@limiter.limit(lambda: current_app.config["RATE_LIMIT_SUBMIT"])
def submit(bank_id: str, question_id: str):
    bank, item = banks().question(bank_id, question_id)
    bank = progress.settings(bank)  # an LMS link's attempt: the link's window
    progress.check_open(bank)
    if progress.current(bank) is None and not progress.ensure(bank).includes(item):
        # A form left open in another tab after a retake: the new attempt's pools drew other questions.
        flash("That answer was not recorded: your new attempt draws its own questions, and this one is not among "
              "them. Here are your attempt's questions.")
        return redirect(url_for(".start", bank_id=bank.id), 303)
    attempt = _attempt_with(bank, item, start=True)
    try_number = _try_number(request.form.get("try"))
    to_answer = redirect(url_for(".answer", bank_id=bank.id, question_id=item.id), 303)
    allowed = progress.tries_allowed(bank)
    if try_number is not None and try_number > allowed:
        raise BadInput(f"This question allows {allowed} {'tries' if allowed > 1 else 'try'}; try {try_number} "
                       "was not stored.")
    if attempt.closed(item):  # a double submit or a resubmit after "back" keeps the first answer
        flash("This question was already answered, so the answer just sent was not stored: the first one stands.")
        return to_answer
    progress.check_time(attempt)  # before the answer is read: a late answer is refused whatever it says
    progress.check_not_finished(attempt)
    try:
        answer = parse_form_answer(attempt.variant(item), request.form.getlist("answer"))
    except BadInput as error:
        return _question_page(attempt, item, error=error.message, status=400)
    try:
        final = progress.submit(attempt, item, answer, try_number).final
    except (progress.AlreadyTried, progress.NoTriesLeft):  # another tab stored this try first
        flash(f"Try {try_number or attempt.tries_used(item) + 1} at this question was already stored from another "
              "page, so the answer just sent was not recorded. This is where the question stands now.")
        final = progress.current(bank).closed(item)
    return to_answer if final else redirect(url_for(".question", bank_id=bank.id, question_id=item.id), 303)


@bp.get("/quiz/<bank_id>/<question_id>/answer")
def answer(bank_id: str, question_id: str):
    bank, item = banks().question(bank_id, question_id)
    attempt = _attempt_with(bank, item, start=False)
    if attempt is None or not attempt.closed(item):
        return redirect(url_for(".question", bank_id=bank.id, question_id=item.id), 303)
    context = _context(attempt, item)
    if not attempt.reveals(item):  # deferred: the answer is stored, and everything waits for the review
        return render_template("quiz/answer.html", **context, grade=None, visual=None, tries_used=None)
    result = attempt.result(item)
    if result is None:  # the question was changed since: the answer no longer fits it, and its score stands
        return render_template("quiz/answer.html", **context, grade=None, visual=None, tries_used=None,
                               changed_score=attempt.recorded(item))
    visual = None
    concrete = context["question"]
    if concrete.visual is not None:
        visual = visual_view(concrete.visual.kind, concrete.visual.params, request.args.to_dict(flat=False),
                             concrete.learn, concrete.type, answer=result.answer, key=result.correct_answer)
    page = render_template("quiz/answer.html", **context, grade=result, visual=visual,
                           tries_used=attempt.tries_used(item), best_try=attempt.best_try(item),
                           earlier_tries=attempt.tries(item)[:-1])  # the last is the answer the page shows
    if visual is None:
        return page
    return page, visual.status, {"Retry-After": str(visual.retry_after)} if visual.retry_after else {}


@bp.get("/quiz/<bank_id>/summary")
def summary(bank_id: str):
    bank = banks().get(bank_id)
    attempt = progress.current(bank)
    if attempt is None:  # no attempt begun in this browser: no score to show ("0 out of 9" would be a claim)
        flash("Your new attempt at this quiz begins at its first question, so it has no results yet; your earlier "
              "attempts are listed here." if progress.earlier_ids(bank) else
              "You have not started this quiz in this browser yet, so it has no results. Start it here.")
        return redirect(url_for(".start", bank_id=bank.id), 303)
    if not attempt.finished and progress.close_if_over(attempt):
        attempt = progress.current(bank)  # as closed now: its results may be shown
    return _review(bank, attempt, earlier=progress.earlier(bank))


@bp.get("/quiz/<bank_id>/attempts/<attempt_id>")
def earlier_attempt(bank_id: str, attempt_id: str):
    """The review of one of the session's earlier attempts at the bank: read only, since answers go to the current
    one."""
    bank = banks().get(bank_id)
    if attempt_id == progress.attempt_id(bank):
        return redirect(url_for(".summary", bank_id=bank.id), 303)
    attempt = next((a for a in progress.earlier(bank) if a.id == attempt_id), None)
    if attempt is None:
        raise NotFound("This is not one of the attempts this browser made at this quiz (the list keeps the "
                       f"{progress.MAX_EARLIER} newest). The quiz's page lists those it has.")
    return _review(bank, attempt, past=True)


def _review(bank, attempt, *, past: bool = False, earlier=()):
    """The results page of `attempt`; `past`: an earlier attempt's, without the links and buttons that act on the
    current one."""
    listed = attempt.questions
    scores = attempt.scores()
    revealed = attempt.bank.feedback != "deferred" or attempt.finished
    return render_template(
        "quiz/summary.html", bank=bank, attempt=attempt, revealed=revealed, closed=attempt.closed_ids(), past=past,
        questions=[attempt.variant(q) for q in listed],
        grades=attempt.results() if revealed else {}, scores=scores if revealed else {}, total=sum(scores.values()),
        max_score=len(listed), tags=progress.tag_scores(listed, scores) if revealed else [],
        tries_used={q.id: attempt.tries_used(q) for q in listed},
        best_tries={q.id: attempt.best_try(q) for q in listed},
        missed=attempt.missed() if revealed and not past else [],
        course_attempt=None if past else progress.course_attempt(bank), earlier=earlier)


@bp.post("/quiz/<bank_id>/retake")
def retake(bank_id: str):
    bank = banks().get(bank_id)
    course_attempt = progress.course_attempt(bank)
    if course_attempt is not None:  # a session an LMS opened: the learner's next, graded, attempt in that course
        from ..lti.views import retake_in_course  # the LTI libraries load with the first LMS request

        return retake_in_course(bank, course_attempt.id)  # which waits for the attempt to be finished
    current = progress.current(bank)
    if (current is not None and not current.finished and not current.time_over()
            and request.form.get("attempt") != current.id):
        # A results page of an earlier attempt, in a tab left open: retaking would drop the unfinished one.
        raise BadInput("You have an unfinished attempt at this quiz that these results are not from (another tab "
                       "may have started it). Go on with it from the quiz's page, or open its results page to "
                       "retake from there.")
    progress.check_open(bank)
    progress.check_can_start(bank)  # refused before the current attempt is let go
    progress.reset(bank)
    return redirect(url_for(".question", bank_id=bank.id, question_id=bank.questions[0].id), 303)


@bp.post("/quiz/<bank_id>/retake-missed")
def retake_missed(bank_id: str):
    """A new attempt with only the questions the reviewed attempt got wrong or partly right (and, once it is
    finished, those it left unanswered)."""
    bank = banks().get(bank_id)
    attempt = progress.current(bank)
    if attempt is None or request.form.get("attempt") != attempt.id:
        raise BadInput("These results are not those of your current attempt at this quiz (another tab may have "
                       "started a new one). Open the results page again, then choose the questions to retry.")
    if bank.feedback == "deferred" and not attempt.finished:
        raise BadInput("Which questions you missed is shown once you have answered every question; "
                       "finish the quiz first.")
    missed = attempt.missed()
    if not missed:
        if not attempt.closed_ids():
            raise BadInput("There is nothing to retry yet: no question of this attempt is answered. Answer some "
                           "first, or open a question from the quiz's page.")
        raise BadInput("There is nothing to retry: every answered question of this attempt was right.")
    fresh = progress.start(bank, display_name=attempt.row.display_name, questions=missed,
                           practice=progress.course_attempt(bank) is not None)
    return redirect(url_for(".question", bank_id=bank.id, question_id=fresh.questions[0].id), 303)
