"""Typed errors that carry an HTTP status and a sentence for the user, and the one handler that renders them.

HTML pages render `errors/<code>.html`; anything under `/api/` gets JSON. No traceback ever reaches a user.
"""

from __future__ import annotations

import logging

from flask import Flask, jsonify, render_template, request
from flask_wtf.csrf import CSRFError
from werkzeug.exceptions import HTTPException, SecurityError

log = logging.getLogger(__name__)


class AppError(Exception):
    """An error whose message is safe and useful to show to the user."""

    status = 400
    title = "Bad request"
    retry_after: int | None = None  # seconds, sent as Retry-After when trying again later may work

    def __init__(self, message: str, link: tuple[str, str] | None = None, fields: dict[str, str] | None = None):
        super().__init__(message)
        self.message = message
        self.link = link  # (words, URL): where to go instead, shown on the page before "Back to the quizzes"
        self.fields = fields or {}  # JSON: each parameter the message is about, and its sentence (to mark it)


class BadInput(AppError):
    status = 400
    title = "Bad request"


class NotFound(AppError):
    status = 404
    title = "Not found"


# Sentences for the HTTP errors Werkzeug raises itself; they say what to do, not just what happened.
_HTTP_MESSAGES = {
    400: "The request could not be understood. Check the form or JSON body and try again.",
    404: "There is nothing at this address. Check the link, or start again from the home page.",
    405: "This address does not accept that kind of request.",
    413: "The request body is too large. Answers are small; send only the answer.",
    415: "This endpoint accepts only JSON: send the body with 'Content-Type: application/json'.",
    429: "Too many requests. Wait a moment and try again.",
    500: "Something went wrong on our side, so this request may not have been saved. Answers you saw confirmed "
         "are kept; try again in a moment.",
}

_TEMPLATED = {400, 404, 413, 429, 500}


def _wants_json() -> bool:
    return request.path.startswith("/api/") or (request.path.startswith("/plots/") and request.path.endswith(".json"))


def render_error(status: int, title: str, message: str, link: tuple[str, str] | None = None,
                 fields: dict[str, str] | None = None):
    if _wants_json():
        body = {"status": status, "title": title, "message": message, **({"fields": fields} if fields else {})}
        return jsonify({"error": body}), status
    template = f"errors/{status}.html" if status in _TEMPLATED else "errors/400.html"
    return render_template(template, status=status, title=title, message=message, link=link), status


def render_app_error(error: AppError):
    body, status = render_error(error.status, error.title, error.message, error.link, error.fields)
    headers = {"Retry-After": str(error.retry_after)} if error.retry_after is not None else {}
    return body, status, headers


def init_app(app: Flask) -> None:
    app.register_error_handler(AppError, render_app_error)

    @app.errorhandler(CSRFError)
    def handle_csrf_error(error: CSRFError):
        return render_error(
            400,
            "Form expired",
            "This form's security token is missing or expired (" + str(error.description).rstrip(".")
            + "). Nothing was recorded: go back, reload the page and answer again.",
        )

    @app.errorhandler(SecurityError)
    def handle_untrusted_host(error: SecurityError):
        # A Host outside TRUSTED_HOSTS: Flask builds no URLs for it, so the page templates cannot render.
        message = "This server does not answer to that host name. Check the address and try again."
        if _wants_json():
            return render_error(400, "Unknown host", message)
        return message, 400, {"Content-Type": "text/plain; charset=utf-8"}

    @app.errorhandler(HTTPException)
    def handle_http_error(error: HTTPException):
        status = error.code or 500
        message = _HTTP_MESSAGES.get(status, error.description or "")
        return render_error(status, error.name, message)

    @app.errorhandler(Exception)
    def handle_unexpected(error: Exception):
        log.exception("unhandled error on %s %s", request.method, request.path)
        return render_error(500, "Internal error", _HTTP_MESSAGES[500])
