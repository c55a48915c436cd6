"""attention-quiz: a self-hosted Flask app for quizzes on attention and Transformers.

`create_app` builds the app: defaults, then FLASK_* environment variables, then `test_config`.
"""

from __future__ import annotations

import logging
import os
import secrets
from pathlib import Path

from flask import Flask

from .paths import resource_dir

# Values that must never protect a real deployment's sessions.
INSECURE_SECRET_KEYS = {"dev", "development", "secret", "change-me", "changeme", "please-change-me"}

DEFAULTS = {
    "QUIZ_DIR": str(resource_dir("quizzes")),
    "QUIZ_HOT_RELOAD": None,  # re-read changed bank files on each request; None: on in debug mode
    "INSTRUCTOR_PASSWORD_HASH": None,  # werkzeug hash of the instructor password (flask hash-password); None: sign-in off
    "SECRET_KEY": None,  # None: a random key kept in the instance folder (see _ensure_secret_key)
    "MAX_CONTENT_LENGTH": 64 * 1024,  # answers are tiny; anything bigger is refused with 413
    "MAX_FORM_MEMORY_SIZE": 64 * 1024,
    "WTF_CSRF_TIME_LIMIT": None,  # the token lives as long as the session: a slow student loses nothing
    "DATABASE_URL": None,  # None: SQLite in the instance folder; or postgresql+psycopg://user:pw@host/db
    "DATABASE_AUTO_MIGRATE": True,  # create/upgrade the schema at start-up (same as `flask init-db`)
    "PLOT_CACHE_ENTRIES": 256,  # rendered figures kept in memory per process (LRU)
    "PLOT_PRERENDER": True,  # render every bank's default visuals in a background thread at start-up
    "PLOT_CACHE_DIR": None,  # rendered plots on disk, shared by workers; None: <instance>/plot-cache; false: off
    "PLOT_CACHE_DISK_MB": 256,  # the disk cache's size bound; the least recently used files go first
    "ANSWER_PAGE_CACHE_ENTRIES": 256,  # rendered answer pages kept in memory per process (LRU); 0: off
    "RATE_LIMIT_SUBMIT": "60 per minute",  # answer submissions per browser session
    "RATE_LIMIT_PLOTS": "300 per minute",  # plot renders per browser session
    "RATE_LIMIT_LOGIN": "10 per minute",  # instructor login attempts per address
    "RATELIMIT_STORAGE_URI": "memory://",  # e.g. redis://host:6379 to share limits between servers
    "RATELIMIT_HEADERS_ENABLED": True,
    "PROXY_FIX": 0,  # the number of reverse proxies in front of the app that set X-Forwarded-* headers
    "SESSION_COOKIE_SAMESITE": "Lax",
    "SESSION_COOKIE_HTTPONLY": True,
    "SESSION_COOKIE_SECURE": False,  # set FLASK_SESSION_COOKIE_SECURE=true behind HTTPS
}


def _ensure_secret_key(app: Flask) -> None:
    key = app.config.get("SECRET_KEY")
    if key in INSECURE_SECRET_KEYS and not (app.testing or app.debug):
        raise RuntimeError(
            f"Refusing to start: SECRET_KEY is the well-known value {key!r}. Set FLASK_SECRET_KEY to a long "
            "random string (python -c 'import secrets; print(secrets.token_hex(32))'), or unset it to use a "
            "key generated in the instance folder."
        )
    if key:
        return
    # No key configured: keep a random one in the instance folder so sessions survive restarts.
    path = Path(app.instance_path) / "secret_key"
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(secrets.token_hex(32))
    app.config["SECRET_KEY"] = path.read_text().strip()


def _prerender_on_first_request(app: Flask) -> None:
    """Pre-render the banks' default visuals once the app serves, never in a CLI command (a render
    thread still running when `flask init-db` exits would abort the interpreter). It starts once the
    first response has been sent, so it does not compete with that request."""
    import threading

    from flask import after_this_request

    from .visuals.service import start_prerender

    started = threading.Event()

    @app.before_request
    def _start_prerender() -> None:
        if started.is_set():
            return
        started.set()

        @after_this_request
        def _after_sent(response):
            response.call_on_close(lambda: start_prerender(app))
            return response


def create_app(test_config: dict | None = None) -> Flask:
    app = Flask(
        __name__,
        instance_path=os.environ.get("FLASK_INSTANCE_PATH") or None,
        template_folder=str(resource_dir("templates")),
        static_folder=str(resource_dir("static")),
    )
    app.config.from_mapping(DEFAULTS)
    app.config.from_prefixed_env()
    if test_config:
        app.config.update(test_config)
    app.json.sort_keys = False  # keep documented field order in API responses
    if not app.debug:
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    _ensure_secret_key(app)
    if app.config["PROXY_FIX"]:
        # Trust X-Forwarded-For/Proto/Host from exactly that many proxies, so rate limits see the client's
        # address and url_for builds https links; without a proxy these headers are ignored (spoofable).
        from werkzeug.middleware.proxy_fix import ProxyFix

        hops = int(app.config["PROXY_FIX"])
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=hops, x_proto=hops, x_host=hops)

    from . import bank, db, errors, instructor, web
    from .authoring import cli as authoring_cli

    errors.init_app(app)
    db.init_app(app)
    bank.init_app(app)
    web.init_app(app)
    instructor.init_app(app)
    if app.config["PLOT_PRERENDER"] and not app.testing:
        _prerender_on_first_request(app)
    authoring_cli.init_app(app)
    return app
