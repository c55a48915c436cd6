"""LTI 1.3 (LTI Advantage), the tool side: an LMS launches a quiz for a learner or opens a course page for an
instructor, picks a bank by deep linking, and receives grades. Built on pylti1p3; see docs/lti.md.

`init_app` registers the /lti blueprint (login and launch exempt from CSRF) and the `flask lti` commands.

pylti1p3, requests and cryptography are imported by the first LMS request, not at start-up: they are a fifth
of the app's modules, 0.18 s of every start and 8 MB of every worker (measured), which a server no LMS talks to
would carry for nothing. So the views (app.lti.views, app.lti.tool) and the grade service (app.lti.grades) load
on first use, with Flask's lazy view pattern; this module and app.lti.store import none of them.
"""

from __future__ import annotations

from functools import cached_property

from flask import (Blueprint, Flask, after_this_request, copy_current_request_context, g, has_request_context,
                   request)
from werkzeug.utils import import_string

from . import store  # noqa: F401  (defines the lti_* tables on app.db.metadata before migrate runs)
from .settings import with_settings

__all__ = ["init_app", "on_attempt_finished", "with_settings"]

# (rule, view in app.lti.views, methods)
ROUTES = [
    ("/login", "login", ["GET", "POST"]),
    ("/launch", "launch", ["POST"]),
    ("/course", "course", ["GET"]),
    ("/course/grades", "send_grades", ["POST"]),
    ("/course/attempts/<attempt_id>", "course_attempt", ["GET"]),
    ("/deep-link", "deep_link", ["POST"]),
    ("/jwks", "jwks", ["GET"]),
]


class LazyView:
    """A view imported on its first call (https://flask.palletsprojects.com/en/stable/patterns/lazyloading/)."""

    def __init__(self, import_name: str):
        # The view's own names: CSRF exemption and the rate limiter read them.
        self.__module__, self.__name__ = import_name.rsplit(".", 1)
        self.__qualname__ = self.__name__
        self.import_name = import_name

    @cached_property
    def view(self):
        return import_string(self.import_name)

    def __call__(self, *args, **kwargs):
        return self.view(*args, **kwargs)


def on_attempt_finished(attempt_id: str) -> bool:
    """Queue the grade of the LMS user who owns this attempt, and send it: after the response in a request, so a
    slow platform never holds the student's page; at once outside one (a command). False for an attempt that no
    LTI launch owns. Never raises for a platform problem: the grade stays queued for `flask lti send-grades`."""
    owner = store.attempt_owner(attempt_id)
    if owner is None:
        return False
    store.queue_grade(owner.link_id, owner.user_sub)
    if not has_request_context():
        _send([(owner.link_id, owner.user_sub)])
        return True
    owners = g.setdefault("lti_grades_to_send", [])
    if not owners:  # the first in this request: one sender for all of them (a regrade finishes many)
        @after_this_request
        def send_once_sent(response):
            response.call_on_close(copy_current_request_context(lambda: _send(owners)))
            return response
    owners.append((owner.link_id, owner.user_sub))
    return True


def _send(owners: list[tuple[int, str]]) -> None:
    """Send these users' queued grades, then up to 5 other due ones, stopping at the first that fails: its
    platform is likely down, and each failure waits for the platform's timeout (docs/lti.md)."""
    from .grades import send_due  # an LMS's attempt: the grade service is needed now

    for link_id, user_sub in owners:
        if send_due(limit=1, link_id=link_id, user_sub=user_sub)[1]:
            return
    send_due(limit=5, stop_at_failure=True)


def init_app(app: Flask) -> None:
    from ..web import csrf
    from . import cli

    bp = Blueprint("lti", __name__, url_prefix="/lti")
    for rule, name, methods in ROUTES:
        bp.add_url_rule(rule, name, LazyView(f"{__name__}.views.{name}"), methods=methods)

    @bp.after_request
    def no_store(response):
        """The course pages, deep linking and launches show learners' names, scores and keys: like the instructor
        area's, no browser or shared cache keeps them. The public key set (jwks) may be cached."""
        if request.endpoint != "lti.jwks":
            response.headers["Cache-Control"] = "no-store"
        return response

    app.register_blueprint(bp)
    # The platform's page posts these cross-site (OIDC form_post): no page of ours issued a CSRF token for them.
    # Their forgery protection is the launch itself: a platform-signed id_token, a single-use nonce, and the
    # state cookie set by our login redirect. The deep-linking form and the course page keep CSRF protection.
    csrf.exempt(f"{__name__}.views.login")
    csrf.exempt(f"{__name__}.views.launch")
    app.cli.add_command(cli.lti_group)
