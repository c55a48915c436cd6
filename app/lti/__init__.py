"""LTI 1.3 (LTI Advantage), the tool side: an LMS launches a quiz for a learner or opens a course page for an
instructor, picks a bank by deep linking, and receives grades. Built on pylti1p3; see docs/lti.md.

`init_app` registers the /lti blueprint (login and launch exempt from CSRF) and the `flask lti` commands.
"""

from __future__ import annotations

from flask import Flask

from . import store  # noqa: F401  (defines the lti_* tables on app.db.metadata before migrate runs)
from .grades import on_attempt_finished
from .settings import with_settings

__all__ = ["init_app", "on_attempt_finished", "with_settings"]


def init_app(app: Flask) -> None:
    from ..web import csrf
    from . import cli, views

    app.register_blueprint(views.bp)
    # The platform's page posts these cross-site (OIDC form_post): no page of ours issued a CSRF token for them.
    # Their forgery protection is the launch itself: a platform-signed id_token, a single-use nonce, and the
    # state cookie set by our login redirect. The deep-linking form and the course page keep CSRF protection.
    csrf.exempt(views.login)
    csrf.exempt(views.launch)
    app.cli.add_command(cli.lti_group)
