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

from flask import Blueprint, Flask
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
    """Queue the grade of the LMS user who owns this attempt and try to send it now (and a few other due ones).
    False for an attempt that no LTI launch owns. Never raises for a platform problem: it stays queued."""
    owner = store.attempt_owner(attempt_id)
    if owner is None:
        return False
    from .grades import send_due  # an LMS's attempt: the grade service is needed now

    store.queue_grade(owner.link_id, owner.user_sub)
    send_due(limit=1, link_id=owner.link_id, user_sub=owner.user_sub)
    send_due(limit=5)
    return True


def init_app(app: Flask) -> None:
    from ..web import csrf
    from . import cli

    bp = Blueprint("lti", __name__, url_prefix="/lti")
    for rule, name, methods in ROUTES:
        bp.add_url_rule(rule, name, LazyView(f"{__name__}.views.{name}"), methods=methods)
    app.register_blueprint(bp)
    # The platform's page posts these cross-site (OIDC form_post): no page of ours issued a CSRF token for them.
    # Their forgery protection is the launch itself: a platform-signed id_token, a single-use nonce, and the
    # state cookie set by our login redirect. The deep-linking form and the course page keep CSRF protection.
    csrf.exempt(f"{__name__}.views.login")
    csrf.exempt(f"{__name__}.views.launch")
    app.cli.add_command(cli.lti_group)
