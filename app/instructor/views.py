"""The instructor blueprint: sign-in, the dashboard, a report per bank, its charts and the CSV export.

Every route except the sign-in page is closed by one `before_request` guard, so none can be forgotten:
HTML pages redirect to the sign-in page, everything else (images, CSV, POSTs) answers 401.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timezone
from typing import NamedTuple

from flask import (Blueprint, Response, current_app, flash, redirect, render_template, request,
                   stream_with_context, url_for)

from ..authoring.cli import app_renderer
from ..authoring.export import FORMATS, MATH_MODES, VISUAL_PLACEMENTS, export_bank
from ..bank import banks
from ..bank.schema import Question
from ..bank.variants import MAX_SEED
from ..errors import AppError, BadInput, NotFound
from ..grading import Grade
from ..web import progress
from ..web.limits import client_address, limiter
from . import auth, export, regrade, report
from .charts import LAYOUTS, CountChart, render_png

bp = Blueprint("instructor", __name__, url_prefix="/instructor")

OPEN_ENDPOINTS = {"instructor.login"}
# GET pages that send a signed-out visitor to the sign-in page; every other route answers 401.
HTML_PAGES = {"instructor.dashboard", "instructor.bank", "instructor.preview_index", "instructor.preview_bank",
              "instructor.preview_question", "instructor.export_page", "instructor.regrade_page",
              "instructor.attempts", "instructor.attempt"}
REGRADE_ROWS = 200  # changes listed on the regrade page; the rest are counted (the command lists them all)


class SignInRequired(AppError):
    status = 401
    title = "Instructor sign-in required"


def _engine():
    return current_app.extensions["db_engine"]


@bp.record_once
def check_settings(state) -> None:
    auth.idle_seconds(state.app.config)  # a bad INSTRUCTOR_IDLE_TIMEOUT stops the start, not each request


@bp.before_request
def require_instructor():
    if request.endpoint in OPEN_ENDPOINTS or auth.is_instructor():
        return None
    if request.method in ("GET", "HEAD") and request.endpoint in HTML_PAGES:
        path = request.full_path.rstrip("?")
        return redirect(url_for(".login", next=path), 303)
    raise SignInRequired("This is for instructors only. Sign in at /instructor/login, then try again.")


@bp.after_request
def no_store(response):
    # Student data and sign-in pages must not be kept by browsers or shared caches.
    response.headers["Cache-Control"] = "no-store"
    return response


@bp.route("/login", methods=["GET", "POST"])
@limiter.limit(lambda: current_app.config.get("RATE_LIMIT_LOGIN", "10 per minute"),
               key_func=client_address, methods=["POST"])
def login():
    target = auth.safe_next(request.values.get("next"))
    problem = auth.hash_problem(auth.configured_hash())
    error, status = None, 200
    if request.method == "POST":
        if auth.password_matches(request.form.get("password", "")):
            auth.sign_in()
            return redirect(target or url_for(".dashboard"), 303)
        error, status = ("Signing in is switched off until the administrator sets a password hash."
                         if problem else "That password is not right. Try again."), 401
    elif auth.is_instructor():
        return redirect(target or url_for(".dashboard"), 303)
    return render_template("instructor/login.html", problem=problem, error=error, next=target,
                           env_var=auth.ENV_VAR, one_liner=auth.GENERATE_ONE_LINER), status


@bp.post("/logout")
def logout():
    auth.sign_out()
    return redirect(url_for(".login"), 303)


@bp.get("/")
def dashboard():
    registry = banks()
    listed = sorted(registry.banks.values(), key=lambda b: b.title.lower())
    for each in listed:
        progress.close_overdue(each)  # a timed attempt its student left counts as finished once its time is up
    return render_template("instructor/dashboard.html", summaries=report.bank_summaries(_engine(), listed))


@bp.get("/banks/<bank_id>")
def bank(bank_id: str):
    bank_ = banks().get(bank_id)
    progress.close_overdue(bank_)
    # What `flask regrade` would change: answers scored under an earlier key (a regrade that never lowers keeps
    # them), and answers that no longer fit the question. Only answers not yet checked against the bank as it is
    # now are graded (about 0.1 ms each): each once per version of its question.
    pending = regrade.regrade(bank_, dry_run=True, allow_lower=True, stale_only=True)
    differs = Counter(change.question_id for change in pending.changed)
    unusable = Counter(answer.question_id for answer in pending.unusable)
    return render_template("instructor/bank.html", report=report.bank_report(_engine(), bank_),
                           min_attempts=report.stats.MIN_ATTEMPTS,
                           min_flag_sample=report.stats.MIN_FLAG_SAMPLE, differs=differs, unusable=unusable)


def _regraded_question(bank_, values) -> str | None:
    """The question a regrade is limited to (`question`: one of the bank's ids), or None for the whole bank."""
    question_id = values.get("question") or None
    if question_id is not None and bank_.question(question_id) is None:
        raise BadInput(f"This bank has no question {question_id[:64]!r}; regrade the whole bank or one of its "
                       f"questions: {', '.join(q.id for q in bank_.questions)}.")
    return question_id


@bp.get("/banks/<bank_id>/regrade")
def regrade_page(bank_id: str):
    """What applying the current key would change (no score is stored), and the form that applies it."""
    bank_ = banks().get(bank_id)
    question_id = _regraded_question(bank_, request.args)
    pending = regrade.regrade(bank_, question_id, dry_run=True, allow_lower=True, stale_only=True)
    return render_template("instructor/regrade.html", bank=bank_, question_id=question_id, pending=pending,
                           rows=REGRADE_ROWS, format_score=regrade.format_score,
                           keys=regrade.reviewed_keys(bank_, question_id))


@bp.post("/banks/<bank_id>/regrade")
def regrade_apply(bank_id: str):
    """Apply the current key to the stored answers, as `flask regrade` does; back to the bank's report."""
    bank_ = banks().get(bank_id)
    question_id = _regraded_question(bank_, request.form)
    if request.form.get("lower", "keep") not in ("keep", "lower"):
        raise BadInput("Choose whether scores the current key marks lower are kept or lowered.")
    if request.form.get("keys") != regrade.reviewed_keys(bank_, question_id):  # edited (or reloaded) since the review
        flash("The bank's questions changed after you reviewed the changes (a key, a question's wording, or the list "
              "of questions), so nothing was applied. These are the changes the bank as it is now would make: review "
              "them and apply again.")
        return redirect(url_for(".regrade_page", bank_id=bank_.id, question=question_id), 303)
    done = regrade.regrade(bank_, question_id, allow_lower=request.form.get("lower") == "lower", stale_only=True)
    flash(regrade.summary(done))
    return redirect(url_for(".bank", bank_id=bank_.id), 303)


def _png(chart: CountChart | None) -> Response:
    layout = request.args.get("layout", "wide")
    if layout not in LAYOUTS:
        raise BadInput(f"layout must be {' or '.join(LAYOUTS)}, e.g. ?layout=narrow for a phone.")
    if chart is None:
        raise NotFound("There are no answers to chart yet.")
    return current_app.response_class(render_png(chart, layout), mimetype="image/png")


@bp.get("/banks/<bank_id>/charts/histogram.png")
def histogram_png(bank_id: str):
    return _png(report.score_histogram(_engine(), banks().get(bank_id)))


@bp.get("/banks/<bank_id>/charts/questions/<question_id>.png")
def question_png(bank_id: str, question_id: str):
    bank_, question = banks().question(bank_id, question_id)
    return _png(report.question_chart(_engine(), bank_, question))


def _page_number(raw: str | None) -> int:
    """?page=N, a whole number from 1 (the list clamps one past its end to its last page)."""
    if raw is None:
        return 1
    if not (raw.isascii() and raw.isdigit() and len(raw) <= 6 and int(raw) >= 1):
        raise BadInput("The page number must be a whole number from 1, e.g. ?page=2.")
    return int(raw)


@bp.get("/banks/<bank_id>/attempts")
def attempts(bank_id: str):
    """Every attempt at the bank, newest first, a page at a time, each linked to its review."""
    bank_ = banks().get(bank_id)
    progress.close_overdue(bank_)
    return render_template("instructor/attempts.html", bank=bank_,
                           listing=report.attempt_page(_engine(), bank_.id, _page_number(request.args.get("page"))))


@bp.get("/banks/<bank_id>/attempts/<attempt_id>")
def attempt(bank_id: str, attempt_id: str):
    """One attempt as its student answered it: each question's variant, every try with its own score, the final
    answer against the key and the score recorded. The key is shown whatever the bank's feedback mode."""
    return attempt_review(banks().get(bank_id), attempt_id)


def attempt_review(bank_, attempt_id: str, course: dict | None = None):
    """The review page of one attempt at `bank_`; `course`: an LMS course page's scope, whose pages link back to it
    (the caller has checked that the attempt is that course's)."""
    found = progress.load(bank_, attempt_id)
    if found is not None and not found.finished and progress.close_if_over(found):
        found = progress.load(bank_, attempt_id)  # a timed attempt its student left: finished once its time is up
    row = report.attempt_row(_engine(), bank_.id, attempt_id) if found is not None else None
    if row is None:
        raise NotFound(f"{bank_.title} has no attempt {attempt_id[:40]!r}. Its attempts list links each one.")
    items = [ReviewItem(found.variant(q), found.tries(q), found.result(q), found.recorded(q), found.best_try(q))
             for q in found.questions]
    return render_template("instructor/attempt.html", bank=bank_, row=row, attempt=found, items=items, course=course)


class ReviewItem(NamedTuple):
    """One question of an attempt's review."""

    question: Question  # the attempt's variant
    tries: list  # progress.Try, oldest first: those that still fit the question
    result: Grade | None  # the final answer against the key as it is now; None: open, or changed since
    recorded: float | None  # the score stored (what the report and an LMS hold); None: not answered
    best_try: int  # the try whose score stands


@bp.get("/banks/<bank_id>/responses.csv")
def responses_csv(bank_id: str):
    bank_ = banks().get(bank_id)
    progress.close_overdue(bank_)
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    chunks = export.csv_chunks(export.response_rows(_engine(), bank_.id))
    response = Response(stream_with_context(chunks), mimetype="text/csv")
    response.headers["Content-Disposition"] = f'attachment; filename="{bank_.id}-responses-{stamp}.csv"'
    return response


# --- the bank for Moodle: `flask export-quiz` from the browser ----------------------------------------------

WEB_MAX_VARIANTS = 10  # each variant of a question with a visual is a figure drawn in the request; more: the CLI
# The figures one browser export draws, within the request: gunicorn ends a request after 60 s, and the slowest kind's
# cold figure takes 0.65 s (head-split, docs/benchmarks.md), so 60 of them about 40 s. More: fewer variants, or the CLI.
WEB_MAX_FIGURES = 60
CLI_DEFAULTS = {"seed": 0, "variants": 1, "math": "tex", "visual": "feedback"}  # export-quiz's own
EXPORT_DEFAULTS = {"format": "moodle-xml", **CLI_DEFAULTS}
CHOICES = {"format": FORMATS, "math": MATH_MODES, "visual": VISUAL_PLACEMENTS}
NUMBERS = {"seed": (0, MAX_SEED), "variants": (1, WEB_MAX_VARIANTS)}


def _export_options(args) -> tuple[dict, dict[str, str]]:
    """The export's settings from the query string (the defaults where absent), and a sentence per refused one."""
    options, problems = dict(EXPORT_DEFAULTS), {}
    for name, allowed in CHOICES.items():
        value = args.get(name, options[name])
        if value in allowed:
            options[name] = value
        else:
            problems[name] = f"{name} must be one of {', '.join(allowed)}."
    for name, (low, high) in NUMBERS.items():
        value = args.get(name, str(options[name])).strip()
        if value.isascii() and value.isdigit() and low <= int(value) <= high:
            options[name] = int(value)
        else:
            problems[name] = f"{name} must be a whole number from {low} to {high}."
    return options, problems


def _export(bank_, options: dict, *, figures: bool):
    """The export with `options`; without `figures`, none is drawn (the page needs only the warnings)."""
    return export_bank(bank_, options["format"], seed=options["seed"], variants=options["variants"],
                       math_mode=options["math"], visual=options["visual"] if figures else "none",
                       render=app_renderer() if figures else None)


def _too_many_figures(options: dict, result) -> str | None:
    """Why the file cannot be made in the browser (result: the export without figures), or None."""
    figures = result.visuals if options["format"] == "moodle-xml" and options["visual"] != "none" else 0
    if figures <= WEB_MAX_FIGURES:
        return None
    return (f"These settings make {figures} figures, and an export from the browser draws at most {WEB_MAX_FIGURES}. "
            "Choose fewer variants or Figures: none, or make the same file on the server with this command:")


def export_command(bank_id: str, options: dict) -> str:
    """The export-quiz command that writes the file these settings make (its defaults left out)."""
    settings = "".join(f" --{name} {options[name]}" for name in ("seed", "variants", "math", "visual")
                       if options[name] != CLI_DEFAULTS[name])
    return (f"flask --app app export-quiz {bank_id} --format {options['format']}{settings} "
            f"-o {export_file_name(bank_id, options['format'])}")


def export_file_name(bank_id: str, output_format: str) -> str:
    return f"{bank_id}.xml" if output_format == "moodle-xml" else f"{bank_id}.gift.txt"


@bp.get("/banks/<bank_id>/export")
def export_page(bank_id: str):
    """The export's settings, what the file cannot carry (the CLI's warnings) and the download link. The warnings
    are found without drawing the figures, which only the file needs."""
    bank_ = banks().get(bank_id)
    options, problems = _export_options(request.args)
    result = None if problems else _export(bank_, options, figures=False)
    if result and (too_many := _too_many_figures(options, result)):
        problems["figures"] = too_many
    status = 400 if problems else 200
    return render_template("instructor/export.html", bank=bank_, options=options, problems=problems, result=result,
                           choices=CHOICES, numbers=NUMBERS, file_name=export_file_name(bank_.id, options["format"]),
                           command=export_command(bank_.id, options), query=request.args), status


@bp.get("/banks/<bank_id>/export/file")
def export_file(bank_id: str):
    bank_ = banks().get(bank_id)
    options, problems = _export_options(request.args)
    if problems:
        raise BadInput(" ".join(problems.values()))
    too_many = _too_many_figures(options, _export(bank_, options, figures=False))
    if too_many:
        raise BadInput(f"{too_many} {export_command(bank_.id, options)}")
    result = _export(bank_, options, figures=True)
    response = current_app.response_class(
        result.text, mimetype="application/xml" if options["format"] == "moodle-xml" else "text/plain")
    response.headers["Content-Disposition"] = (
        f'attachment; filename="{export_file_name(bank_.id, options["format"])}"')
    return response
