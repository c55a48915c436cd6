"""Security defaults: hostile bank content renders inert, forms need CSRF tokens, headers are set."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from app import create_app
from conftest import answer_via_form, csrf_token

HOSTILE_BANK = """
id: hostile
title: "<script>alert('title')</script> Bank"
description: "[click](javascript:alert('desc')) <img src=x onerror=alert(1)>"
questions:
  - id: q1
    type: single_choice
    prompt: |
      <script>alert('prompt')</script> and [a link](javascript:alert('prompt-link'))
      and <iframe src="https://example.org"></iframe> and $\\text{<script>}$
    options:
      - {id: a, text: "<b onmouseover=alert(1)>A</b>", correct: true, feedback: "<script>alert('fb')</script>"}
      - {id: b, text: "[B](javascript:alert('opt'))"}
    explanation: "<svg onload=alert(1)> [x](JaVaScRiPt:alert('expl')) [data](data:text/html,<script>alert(1)</script>)"
    learn: "/learn/attention#soft-lookup"
"""


@pytest.fixture
def hostile_client(tmp_path, quiz_dir):
    folder = tmp_path / "banks"
    folder.mkdir()
    (folder / "hostile.yaml").write_text(HOSTILE_BANK)
    shutil.copy(quiz_dir / "attention-transformers.yaml", folder)
    app = create_app({"TESTING": True, "SECRET_KEY": "s", "QUIZ_DIR": str(folder),
                      "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}"})
    assert "hostile" in app.extensions["banks"].banks, app.extensions["banks"].errors
    return app.test_client()


def _assert_inert(html: str) -> None:
    body = html.split("<main", 1)[1].split("</main>", 1)[0]
    # The page's own scripts are files under /static/ (the CSP allows no other); anything else came from the bank.
    body = re.sub(r'<script src="/static/[a-z-]+\.js" defer></script>', "", body)
    assert "<script" not in body.lower()
    assert not re.search(r"<(iframe|svg|img|b)\b[^>]*\bon\w+=", body, re.I)
    assert not re.search(r'href="\s*(javascript|data):', body, re.I)
    assert "<iframe" not in body


def test_hostile_bank_renders_inert_on_every_page(hostile_client):
    pages = ["/", "/quiz/hostile/", "/quiz/hostile/q1"]
    for path in pages:
        response = hostile_client.get(path)
        assert response.status_code == 200
        _assert_inert(response.get_data(as_text=True))
    response = answer_via_form(hostile_client, "hostile", "q1", "a")
    answer_page = hostile_client.get(response.location).get_data(as_text=True)
    _assert_inert(answer_page)
    assert "&lt;script&gt;alert(&#39;fb&#39;)&lt;/script&gt;" in answer_page or "&lt;script&gt;" in answer_page
    _assert_inert(hostile_client.get("/quiz/hostile/summary").get_data(as_text=True))
    api = hostile_client.get("/api/banks/hostile").get_json()
    assert "<script" not in api["questions"][0]["prompt_html"]


def test_learn_links_must_be_site_paths_or_http(tmp_path):
    from app.bank.loader import load_bank_bytes

    bad = HOSTILE_BANK.replace('learn: "/learn/attention#soft-lookup"', 'learn: "javascript:alert(1)"')
    result = load_bank_bytes(bad.encode(), "hostile.yaml")
    assert result.bank is None
    assert any("learn" in e.field and "not a link" in e.message for e in result.errors)


@pytest.mark.parametrize("path", ["/quiz/attention-transformers/head-dimension", "/quiz/attention-transformers/retake"])
def test_form_posts_require_a_csrf_token(client, path):
    for data in ({"answer": "32"}, {"answer": "32", "csrf_token": "forged"}):
        response = client.post(path, data=data)
        assert response.status_code == 400
        assert "security token" in response.get_data(as_text=True)


def test_every_post_form_in_the_pages_carries_a_token(client):
    answer_via_form(client, "attention-transformers", "head-dimension", "32")
    for path in ["/quiz/attention-transformers/soft-dictionary-lookup", "/quiz/attention-transformers/summary"]:
        html = client.get(path).get_data(as_text=True)
        for form in re.findall(r"<form[^>]*method=\"post\".*?</form>", html, re.S):
            assert 'name="csrf_token"' in form


def test_submissions_are_rate_limited(app, client):
    app.config["RATE_LIMIT_SUBMIT"] = "2 per minute"
    page = client.get("/quiz/attention-transformers/head-dimension").get_data(as_text=True)
    token = csrf_token(page)
    codes = [client.post("/quiz/attention-transformers/head-dimension", data={"csrf_token": token, "answer": "32"}).status_code
             for _ in range(3)]
    assert codes == [303, 303, 429]
    assert "Too many requests" in client.post("/quiz/attention-transformers/head-dimension",
                                              data={"csrf_token": token, "answer": "32"}).get_data(as_text=True)


def test_security_headers_on_every_kind_of_response(client):
    for path in ["/", "/api/banks", "/plots/head-split.svg", "/learn/", "/nowhere"]:
        headers = client.get(path).headers
        assert "unsafe-inline" not in headers["Content-Security-Policy"]
        assert "frame-ancestors 'none'" in headers["Content-Security-Policy"]
        assert headers["X-Content-Type-Options"] == "nosniff"
        assert headers["Referrer-Policy"] == "same-origin"


@pytest.mark.parametrize("key, problem", [
    ("dev", "FLASK_SECRET_KEY is the well-known development value 'dev'"),
    ("Password", "FLASK_SECRET_KEY is the well-known development value 'Password'"),
    ("please-change-me-to-a-long-random-string", "FLASK_SECRET_KEY is a placeholder from an example"),
])
def test_refuses_a_well_known_secret_key_in_production(tmp_path, key, problem):
    with pytest.raises(RuntimeError, match=f"^Refusing to start: {problem}"):
        create_app({"SECRET_KEY": key, "DATABASE_URL": f"sqlite:///{tmp_path / 'x.db'}"})
    # In tests and in debug mode a well-known key is fine.
    create_app({"SECRET_KEY": key, "TESTING": True, "DATABASE_URL": f"sqlite:///{tmp_path / 'x.db'}"})


@pytest.mark.parametrize("env, printed", [
    ({}, "FLASK_SECRET_KEY is not set"),
    ({"FLASK_SECRET_KEY": ""}, "FLASK_SECRET_KEY is empty"),
    ({"FLASK_SECRET_KEY": "CHANGE-ME"}, "FLASK_SECRET_KEY is the well-known development value 'CHANGE-ME'"),
    ({"FLASK_SECRET_KEY": "my-replace-me-key-for-the-docker-compose-file"},
     "FLASK_SECRET_KEY is a placeholder from an example, not a secret"),
    ({"FLASK_SECRET_KEY": "k" * 31}, "FLASK_SECRET_KEY is only 31 characters long; it needs at least 32"),
    ({"FLASK_SECRET_KEY": "a" * 64}, "FLASK_SECRET_KEY is one character repeated 64 times, not a random string"),
    ({"FLASK_SECRET_KEY": "0123456789abcdef" * 2}, ""),
])
def test_the_entrypoint_asks_the_apps_own_secret_key_check(env, printed):
    # docker/entrypoint.sh runs exactly this command; it prints the problem and nothing else.
    environment = {k: v for k, v in os.environ.items() if k != "FLASK_SECRET_KEY"} | env
    result = subprocess.run([sys.executable, "-m", "app.secret_key"], env=environment, capture_output=True,
                            text=True, timeout=60, cwd=Path(__file__).resolve().parent.parent)
    assert (result.returncode, result.stdout.strip(), result.stderr) == (0, printed, "")


def test_proxy_fix_makes_rate_limits_see_the_client_address(tmp_path, quiz_dir):
    app = create_app({"TESTING": True, "SECRET_KEY": "s", "QUIZ_DIR": str(quiz_dir), "PROXY_FIX": 1,
                      "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}"})
    seen = []

    @app.get("/_whoami")
    def whoami():
        from flask import request

        seen.append(request.remote_addr)
        return "ok"

    app.test_client().get("/_whoami", headers={"X-Forwarded-For": "203.0.113.7"})
    assert seen == ["203.0.113.7"]
