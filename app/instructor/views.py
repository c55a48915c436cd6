"""The instructor blueprint: sign-in, the dashboard, a report per bank, its charts and the CSV export.

Every route except the sign-in page is closed by one `before_request` guard, so none can be forgotten:
HTML pages redirect to the sign-in page, everything else (images, CSV, POSTs) answers 401.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timezone

from flask import (Blueprint, Response, current_app, redirect, render_template, request, stream_with_context,
                   url_for)

from ..bank import banks
from ..errors import AppError, NotFound
from ..web import progress
from ..web.limits import client_address, limiter
from . import auth, export, regrade, report
from .charts import CountChart, render_png

bp = Blueprint("instructor", __name__, url_prefix="/instructor")

OPEN_ENDPOINTS = {"instructor.login"}
# GET pages that send a signed-out visitor to the sign-in page; every other route answers 401.
HTML_PAGES = {"instructor.dashboard", "instructor.bank", "instructor.preview_index", "instructor.preview_bank",
              "instructor.preview_question"}


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
    # them), and answers that no longer fit the question. About 0.1 ms an answer (measured on 2,700).
    pending = regrade.regrade(bank_, dry_run=True, allow_lower=True)
    differs = Counter(change.question_id for change in pending.changed)
    unusable = Counter(answer.question_id for answer in pending.unusable)
    return render_template("instructor/bank.html", report=report.bank_report(_engine(), bank_),
                           min_attempts=report.stats.MIN_ATTEMPTS, differs=differs, unusable=unusable)


def _png(chart: CountChart | None) -> Response:
    if chart is None:
        raise NotFound("There are no answers to chart yet.")
    return current_app.response_class(render_png(chart), mimetype="image/png")


@bp.get("/banks/<bank_id>/charts/histogram.png")
def histogram_png(bank_id: str):
    return _png(report.score_histogram(_engine(), banks().get(bank_id)))


@bp.get("/banks/<bank_id>/charts/questions/<question_id>.png")
def question_png(bank_id: str, question_id: str):
    bank_, question = banks().question(bank_id, question_id)
    return _png(report.question_chart(_engine(), bank_, question))


@bp.get("/banks/<bank_id>/responses.csv")
def responses_csv(bank_id: str):
    bank_ = banks().get(bank_id)
    progress.close_overdue(bank_)
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    chunks = export.csv_chunks(export.response_rows(_engine(), bank_.id))
    response = Response(stream_with_context(chunks), mimetype="text/csv")
    response.headers["Content-Disposition"] = f'attachment; filename="{bank_.id}-responses-{stamp}.csv"'
    return response
