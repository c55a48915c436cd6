"""Shared fixtures (flaskr style): `app`, `client`, `runner`, and a live server for browser tests."""

from __future__ import annotations

import os
import re
import secrets
import struct
import subprocess
import sys
import textwrap
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

from app import create_app
from app.paths import resource_dir

SEED_BANK = "attention-transformers"
# For apps that serve in production mode (TESTING off): create_app refuses a weak key there, as on a real server.
STRONG_SECRET_KEY = secrets.token_hex(32)
CSRF_INPUT = re.compile(r'name="csrf_token" value="([^"]+)"')


@pytest.fixture
def quiz_dir() -> Path:
    return resource_dir("quizzes")


@pytest.fixture
def app(quiz_dir, tmp_path):
    return create_app({"TESTING": True, "SECRET_KEY": "test-secret-key", "QUIZ_DIR": str(quiz_dir),
                       "DATABASE_URL": f"sqlite:///{tmp_path / 'test.sqlite3'}"})


def app_on_bank(tmp_path, bank_id: str, bank_yaml: str, **config):
    """An app serving one bank written into a quiz folder of its own, on a database of its own."""
    folder = tmp_path / "quizzes"
    folder.mkdir()
    (folder / f"{bank_id}.yaml").write_text(bank_yaml)
    return create_app({"TESTING": True, "SECRET_KEY": "test-secret-key", "QUIZ_DIR": str(folder),
                       "DATABASE_URL": f"sqlite:///{tmp_path / (bank_id + '.sqlite3')}", **config})


@pytest.fixture
def client(app):
    return app.test_client()


@pytest.fixture
def runner(app):
    return app.test_cli_runner()


def csrf_token(html: str) -> str:
    match = CSRF_INPUT.search(html)
    assert match, "page has no CSRF token"
    return match.group(1)


def retake_fields(html: str) -> dict[str, str]:
    """The fields the results page's "Retake the quiz" form posts: the CSRF token and the attempt it shows."""
    form = re.search(r'action="/quiz/[^"/]+/retake">(.*?)</form>', html, re.S)
    assert form, "page has no retake form"
    return dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">', form.group(1)))


PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
SVG_SIZE = re.compile(rb'<svg [^>]*\bwidth="([0-9.]+)pt" height="([0-9.]+)pt"')


def image_size(image: bytes) -> tuple[int, int]:
    """The (width, height) a browser lays an image out at, in whole CSS pixels: a PNG's own pixels (read
    from its IHDR chunk), or an SVG's width and height in points at 96 CSS pixels per inch."""
    if image.startswith(PNG_SIGNATURE):
        assert image[12:16] == b"IHDR", "the PNG does not start with its header chunk"
        return struct.unpack(">II", image[16:24])
    match = SVG_SIZE.search(image[:1000])
    assert match, "neither a PNG nor an SVG sized in points"
    return round(float(match.group(1)) * 96 / 72), round(float(match.group(2)) * 96 / 72)


def answer_via_form(client, bank_id: str, question_id: str, values: list[str] | str):
    """Open the question page like a browser, then post the form with its CSRF token."""
    page = client.get(f"/quiz/{bank_id}/{question_id}")
    assert page.status_code == 200, page.status_code
    values = [values] if isinstance(values, str) else values
    data = {"csrf_token": csrf_token(page.get_data(as_text=True)), "answer": values}
    return client.post(f"/quiz/{bank_id}/{question_id}", data=data)


def close_after_the_last_write(app):
    """The app, with its response closed once the body is written, as PEP 3333 asks of a server "whether the
    request was completed normally, or terminated early". Werkzeug's development server skips close() when the
    browser resets the connection while the server drains it after the response, and close() is what sends an
    LMS grade (`response.call_on_close`); gunicorn, which the image runs, closes in a `finally`."""
    def wsgi(environ, start_response):
        body = app(environ, start_response)

        def each():
            try:
                yield from body
            finally:
                if hasattr(body, "close"):
                    body.close()
        return each()
    return wsgi


def is_a_busy_figure(message) -> bool:
    """A browser console message for a figure the render gate refused (503, Retry-After), which static/visual.js
    asks for again: by design on a loaded machine, where a quick walk through the quiz leaves earlier pages'
    figures still being drawn for the same address (test_browser's
    test_a_figure_the_server_was_too_busy_to_draw_is_asked_for_again shows it is drawn in the end)."""
    return "/plots/" in message.location.get("url", "") and "status of 503" in message.text


class LiveServer:
    def __init__(self, app):
        from werkzeug.serving import make_server

        self.server = make_server("127.0.0.1", 0, close_after_the_last_write(app), threaded=True)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.thread.join(5)


@pytest.fixture(scope="module")
def live_server(tmp_path_factory):
    database = tmp_path_factory.mktemp("db") / "browser.sqlite3"
    app = create_app({"TESTING": False, "SECRET_KEY": STRONG_SECRET_KEY,
                      "QUIZ_DIR": str(resource_dir("quizzes")), "DATABASE_URL": f"sqlite:///{database}"})
    with LiveServer(app) as server:
        yield server


CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run"]


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS, headless=True)
        yield chromium
        chromium.close()


ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"


@pytest.fixture
def artifacts() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS


def pytest_collection_modifyitems(items):
    # A test that uses the PostgreSQL server is slow, whichever module it is in.
    for item in items:
        if "postgres" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def postgres():
    """A private PostgreSQL server for the whole test session (Debian's postgresql package)."""
    from pgserver import PostgresServer

    server = PostgresServer().start()
    yield server
    server.stop()


def run_python(code: str, env: dict | None = None) -> str:
    """Run `code` (dedented) in a fresh interpreter at the repository root; its stdout, stripped.

    For what one process cannot show, such as which modules an import or a request loads."""
    root = Path(__file__).resolve().parent.parent
    completed = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=root, capture_output=True,
                               text=True, timeout=120, check=False, env={**os.environ, **(env or {})})
    assert completed.returncode == 0, completed.stderr
    return completed.stdout.strip()


# --- visuals -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DefaultRender:
    kind: object  # the registered VisualKind
    params: object  # kind.parse({})
    rendered: object  # kind.render(params): scale 1, the wide layout


class DefaultRenders(dict):
    """name -> DefaultRender; a kind whose default render failed raises its error for its own tests only."""

    def __getitem__(self, name: str) -> DefaultRender:
        value = super().__getitem__(name)
        if isinstance(value, Exception):
            raise RuntimeError(f"rendering the default {name!r} figure failed: {value!r}") from value
        return value


@pytest.fixture(scope="session")
def default_renders() -> DefaultRenders:
    """Every registered kind's default figure, rendered once per test session."""
    from app.visuals import KINDS, get_kind

    get_kind("soft-lookup")  # registers every kind
    renders = DefaultRenders()
    for name, kind in sorted(KINDS.items()):
        try:
            params = kind.parse({})
            renders[name] = DefaultRender(kind, params, kind.render(params))
        except Exception as error:  # noqa: BLE001 - reported by each test that uses this kind
            renders[name] = error
    return renders
