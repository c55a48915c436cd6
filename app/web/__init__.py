"""The web layer: thin blueprints for the quiz pages and the JSON API, plus security defaults.

Views parse input, call the domain (bank, grading) and render; no maths and no HTML live here.
"""

from __future__ import annotations

from flask import Flask
from flask_wtf.csrf import CSRFProtect

from .. import db
from ..markup import render_inline, render_markdown
from . import formats
from .limits import TooManyRenders, check_limit_settings, limiter

csrf = CSRFProtect()

# No inline scripts or styles anywhere: everything comes from /static.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)


def _security_headers(response):
    response.headers.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)
    response.headers.setdefault("X-Content-Type-Options", "nosniff")
    response.headers.setdefault("Referrer-Policy", "same-origin")
    response.headers.setdefault("X-Frame-Options", "DENY")
    return response


def _refuse_unusable_fields():
    """Refuse, with a sentence, what no page can use and what would otherwise fail deep inside (a 500):
    - a multipart part without `name=` in its Content-Disposition: it parses to the form key None, which
      Flask-WTF's CSRF check cannot handle (AttributeError);
    - a NUL character in the path or a form field, or in the query of an LTI request (the LMS's login may come
      as a GET): no id, answer or name holds one, and PostgreSQL refuses it in any text it is asked to compare or
      store (DataError). Other queries are left to their pages: a visual's controls are never stored, and a bad
      value there gets the page with its own figure and a sentence. Cookies are left alone: the app reads only
      its own signed ones, and refusing every request for a stray cookie would lock its browser out."""
    from flask import request

    from ..errors import BadInput

    if request.mimetype == "multipart/form-data" and any(not isinstance(key, str) for key in request.form):
        raise BadInput("A part of this form has no field name. Reload the page and submit the form again.")
    fields = (*request.form.items(multi=True), *(request.args.items(multi=True) if request.blueprint == "lti" else ()))
    if "\x00" in request.path or any("\x00" in key or "\x00" in value for key, value in fields):
        raise BadInput("This request holds a NUL character (U+0000), which no answer, name or id can contain. "
                       "Remove it, or reload the page, and try again.")


def _drop_malformed_session_values():
    """Drop session values of the wrong shape that Flask and Flask-WTF would fail on: the session is signed, but a
    leaked key signs anything (as progress.session_map says), and a 500 page would extend the template that reads
    the flashed messages, failing again. Flashes are (category, message) pairs; the CSRF token is text."""
    from flask import session

    flashes = session.get("_flashes")
    if flashes is not None and not (isinstance(flashes, list) and all(
            isinstance(item, (list, tuple)) and len(item) == 2 and all(isinstance(part, str) for part in item)
            for item in flashes)):
        session.pop("_flashes")
    if "csrf_token" in session and not isinstance(session["csrf_token"], str):
        session.pop("csrf_token")


def _healthz():
    """For load balancers and Docker's HEALTHCHECK: 200 when the database answers, 503 otherwise."""
    from flask import current_app, jsonify

    ok = db.healthy()
    banks = len(current_app.extensions["banks"].banks)
    return jsonify({"status": "ok" if ok else "unavailable", "database": ok, "banks": banks}), 200 if ok else 503


def _too_many_renders(error: TooManyRenders):
    from flask import make_response

    from ..errors import render_error

    response = make_response(render_error(error.status, error.title, error.message))
    response.headers["Retry-After"] = str(error.retry_after)
    return response


def init_app(app: Flask) -> None:
    from ..visuals.service import VisualCache
    from . import api, learn, plots, progress, quiz, visual_views

    app.before_request(_refuse_unusable_fields)  # before CSRFProtect's own before_request
    app.before_request(_drop_malformed_session_values)
    csrf.init_app(app)
    check_limit_settings(app.config)
    limiter.init_app(app)
    app.extensions["visual_cache"] = VisualCache(app.config["PLOT_CACHE_ENTRIES"], app.config["PLOT_CACHE_MB"] * 2**20)
    app.register_blueprint(quiz.bp)
    app.register_blueprint(api.bp)
    app.register_blueprint(plots.bp)
    app.register_blueprint(learn.bp)
    csrf.exempt(api.bp)  # JSON only: browsers cannot send application/json cross-site without CORS
    app.register_error_handler(TooManyRenders, _too_many_renders)
    app.after_request(_security_headers)
    app.add_url_rule("/healthz", "healthz", _healthz)
    csrf.exempt(_healthz)
    app.jinja_env.filters["markdown"] = render_markdown
    app.jinja_env.filters["markdown_inline"] = render_inline
    app.jinja_env.filters.update(score=formats.score, percent=formats.percent, number=formats.number,
                                 moment=progress.when, duration=progress.duration,
                                 template_prompt=lambda question: progress.preview(question).prompt)
    app.jinja_env.globals["narrow_media"] = visual_views.NARROW_MEDIA
    app.jinja_env.globals["max_earlier"] = progress.MAX_EARLIER
