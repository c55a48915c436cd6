"""attention-quiz: a self-hosted Flask app for quizzes on attention and Transformers.

`create_app` builds the app: defaults, then FLASK_* environment variables, then `test_config`.
"""

from __future__ import annotations

import logging
import os
import secrets
import tempfile
from pathlib import Path

from flask import Flask

from .paths import resource_dir

DEFAULTS = {
    "QUIZ_DIR": str(resource_dir("quizzes")),
    "QUIZ_HOT_RELOAD": None,  # re-read changed bank files in a background thread; None: on in debug mode
    "INSTRUCTOR_PASSWORD_HASH": None,  # werkzeug hash of the instructor password (flask hash-password); None: sign-in off
    "INSTRUCTOR_IDLE_TIMEOUT": 8 * 3600,  # seconds without a request after which an instructor must sign in again
    "SECRET_KEY": None,  # None: a random key kept in the instance folder (see _ensure_secret_key)
    "MAX_CONTENT_LENGTH": 64 * 1024,  # answers are tiny; anything bigger is refused with 413
    "MAX_FORM_MEMORY_SIZE": 64 * 1024,
    "WTF_CSRF_TIME_LIMIT": None,  # the token lives as long as the session: a slow student loses nothing
    "DATABASE_URL": None,  # None: SQLite in the instance folder; or postgresql+psycopg://user:pw@host/db
    "DATABASE_AUTO_MIGRATE": True,  # create/upgrade the schema at start-up (same as `flask init-db`)
    "PLOT_CACHE_ENTRIES": 256,  # computed visuals, with their images, kept in memory per process (LRU)
    "PLOT_CACHE_MB": 32,  # and at most this many MB of their images per process
    "RATE_LIMIT_SUBMIT": "60 per minute",  # answer submissions per browser session
    "RATE_LIMIT_SUBMIT_PER_ADDRESS": "600 per minute",  # all form and API posts of one address (a classroom's NAT)
    "RATE_LIMIT_PLOTS": "60 per minute",  # new visuals computed per browser session
    "RATE_LIMIT_PLOTS_PER_ADDRESS": "600 per minute",  # new visuals computed per address (a classroom's NAT)
    "RATE_LIMIT_LOGIN": "10 per minute",  # instructor login attempts per address
    # A class of 60 behind one NAT address each starting two quizzes in the same minute stays under the per-address
    # limit, while one client can add at most 2000 attempt rows an hour.
    "RATE_LIMIT_ATTEMPTS": "10 per minute; 100 per hour",  # quiz attempts started per browser session
    "RATE_LIMIT_ATTEMPTS_PER_ADDRESS": "200 per minute; 2000 per hour",  # attempts started per address (a NAT)
    "RATELIMIT_STORAGE_URI": "database://",  # the app's database, shared by all workers; or redis://host:6379
    "RATELIMIT_HEADERS_ENABLED": True,
    "TRUSTED_HOSTS": None,  # e.g. ["quiz.example.org"]: other Host headers get 400; None: any host is answered
    "PROXY_FIX": 0,  # the number of reverse proxies in front of the app that set X-Forwarded-* headers
    "SESSION_COOKIE_SAMESITE": "Lax",
    "SESSION_COOKIE_HTTPONLY": True,
    "SESSION_COOKIE_SECURE": False,  # set FLASK_SESSION_COOKIE_SECURE=true behind HTTPS
}


def _ensure_secret_key(app: Flask) -> None:
    from .secret_key import secret_key_problem  # here, so `python -m app.secret_key` imports it once

    key = app.config.get("SECRET_KEY")
    problem = secret_key_problem(key) if key else None
    if problem and not (app.testing or app.debug):
        raise RuntimeError(
            f"Refusing to start: {problem}. Set FLASK_SECRET_KEY to a long random string "
            "(python -c 'import secrets; print(secrets.token_hex(32))'), or unset it to use a "
            "key generated in the instance folder."
        )
    if key:
        return
    # No key configured: keep a random one in the instance folder so sessions survive restarts. It is written
    # to a file of its own and linked into place whole, so workers that start together all read the first one.
    path = Path(app.instance_path) / "secret_key"
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        fd, draft = tempfile.mkstemp(dir=path.parent, prefix=".secret_key.")  # mode 0600
        try:
            with os.fdopen(fd, "w") as handle:
                handle.write(secrets.token_hex(32))
            os.link(draft, path)
        except FileExistsError:
            pass  # another worker linked its key first: use that one
        finally:
            os.unlink(draft)
    key = path.read_text().strip()
    problem = secret_key_problem(key)
    if problem:  # e.g. emptied by hand, or a copy cut short
        raise RuntimeError(f"Refusing to start: the key in {path} {problem.removeprefix('FLASK_SECRET_KEY ')}. "
                           "Delete the file to have a new one generated (which signs every student out), or set "
                           "FLASK_SECRET_KEY.")
    app.config["SECRET_KEY"] = key


def _in_a_cli_command() -> bool:
    """True while the `flask` command loads the app for a command other than `flask run`."""
    import click

    context = click.get_current_context(silent=True)
    return context is not None and context.info_name != "run"


def create_app(test_config: dict | None = None) -> Flask:
    app = Flask(
        __name__,
        instance_path=os.environ.get("FLASK_INSTANCE_PATH") or None,
        template_folder=str(resource_dir("templates")),
        static_folder=str(resource_dir("static")),
    )
    app.config.from_mapping(DEFAULTS)
    app.config.from_prefixed_env()
    if "FLASK_SECRET_KEY" in os.environ:  # as written: from_prefixed_env reads a key of digits as a number
        app.config["SECRET_KEY"] = os.environ["FLASK_SECRET_KEY"]
    if test_config:
        app.config.update(test_config)
    app.json.sort_keys = False  # keep documented field order in API responses
    if not app.debug:
        # A server logs what it serves; a CLI command (`flask validate-quizzes`, ...) prints its own output,
        # and reports the banks' errors itself: the app's start-up messages would only repeat them.
        level = logging.CRITICAL if _in_a_cli_command() else logging.INFO
        logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    _ensure_secret_key(app)
    if app.config["PROXY_FIX"]:
        # Trust X-Forwarded-For/Proto/Host from exactly that many proxies, so rate limits see the client's
        # address and url_for builds https links; without a proxy these headers are ignored (spoofable).
        from werkzeug.middleware.proxy_fix import ProxyFix

        hops = int(app.config["PROXY_FIX"])
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=hops, x_proto=hops, x_host=hops)

    from . import bank, db, errors, instructor, lti, web
    from .authoring import cli as authoring_cli

    errors.init_app(app)
    db.init_app(app, migrate_now=not _in_a_cli_command())  # a command that needs the database readies it itself
    bank.init_app(app)
    web.init_app(app)
    instructor.init_app(app)
    lti.init_app(app)
    authoring_cli.init_app(app)
    return app
