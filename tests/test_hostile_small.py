"""The smaller holes of issue 15 (item 10): a backslash site path, the Host header in redirects, weak secret keys
and an author's maths label that duplicated a page's id."""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import sys

import pytest

from app import DEFAULTS, create_app
from app.bank.loader import load_bank_bytes
from app.secret_key import secret_key_problem
from conftest import answer_via_form

BANK = """\
id: small
title: Small
questions:
  - id: q
    type: true_false
    prompt: "$$y$$ (verdict)"
    answer: true
    explanation: "$$z$$ (verdict)"
"""


@pytest.mark.parametrize("learn", ["/\\evil.example/path", "/\\\\evil.example", "/learn\\..\\..\\\\evil.example"])
def test_a_site_path_with_a_backslash_is_refused(learn):
    result = load_bank_bytes(BANK.replace("    answer: true\n", f"    answer: true\n    learn: '{learn}'\n").encode(),
                             "bank.yaml")
    assert result.bank is None
    assert [str(e) for e in result.errors] == [
        f"bank.yaml:8:12: questions[0].learn: '{learn}' has a backslash, which browsers read as '/', so this site "
        "path could lead to another site; use '/' only"]


@pytest.mark.parametrize("learn", ["/learn/attention#soft-lookup", "/", "https://example.org/a\\b"])
def test_site_paths_and_web_links_without_that_problem_still_load(learn):
    result = load_bank_bytes(BANK.replace("    answer: true\n", f"    answer: true\n    learn: '{learn}'\n").encode(),
                             "bank.yaml")
    assert result.errors == () and result.bank.questions[0].learn == learn


@pytest.fixture
def small_bank(tmp_path):
    folder = tmp_path / "quizzes"
    folder.mkdir()
    (folder / "small.yaml").write_text(BANK)
    return folder


def trusted_app(small_bank, tmp_path, hosts):
    return create_app({"TESTING": True, "SECRET_KEY": "hosts-secret", "QUIZ_DIR": str(small_bank),
                       "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}", "TRUSTED_HOSTS": hosts})


def test_trusted_hosts_keep_an_untrusted_host_out_of_the_merge_slashes_redirect(small_bank, tmp_path):
    client = trusted_app(small_bank, tmp_path, ["quiz.example.org"]).test_client()
    refused = client.get("/quiz//small/", headers={"Host": "evil.example"})
    assert refused.status_code == 400 and "Location" not in refused.headers
    assert refused.get_data(as_text=True) == ("This server does not answer to that host name. "
                                              "Check the address and try again.")
    api = client.get("/api//banks", headers={"Host": "evil.example"})
    assert api.status_code == 400 and api.get_json()["error"]["title"] == "Unknown host"
    allowed = client.get("/quiz//small/", headers={"Host": "quiz.example.org"})
    assert allowed.status_code == 308 and allowed.location == "http://quiz.example.org/quiz/small/"


def test_trusted_hosts_are_off_by_default_and_set_from_the_environment(small_bank, tmp_path, monkeypatch):
    assert DEFAULTS["TRUSTED_HOSTS"] is None  # a new install answers whatever name it is reached by
    monkeypatch.setenv("FLASK_TRUSTED_HOSTS", '["quiz.example.org", "127.0.0.1"]')
    app = create_app({"TESTING": True, "SECRET_KEY": "hosts-secret", "QUIZ_DIR": str(small_bank),
                      "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}"})
    assert app.config["TRUSTED_HOSTS"] == ["quiz.example.org", "127.0.0.1"]
    client = app.test_client()
    assert client.get("/healthz", headers={"Host": "127.0.0.1:8000"}).status_code == 200  # the image's probe
    assert client.get("/healthz", headers={"Host": "evil.example"}).status_code == 400


@pytest.mark.parametrize("key, problem", [
    ("a" * 32, "FLASK_SECRET_KEY is one character repeated 32 times, not a random string"),
    ("ab" * 20, "FLASK_SECRET_KEY repeats a few characters (2 different ones in 40), about 40 bits of randomness; "
                "it needs at least 80"),
    ("abcd" * 8, "FLASK_SECRET_KEY repeats a few characters (4 different ones in 32), about 64 bits of randomness; "
                 "it needs at least 80"),
    ("browser-test-secret", "FLASK_SECRET_KEY is only 19 characters long; it needs at least 32"),
])
def test_a_weak_secret_key_stops_the_app_outside_tests_and_the_entrypoint_says_the_same(tmp_path, key, problem):
    settings = {"SECRET_KEY": key, "DATABASE_URL": f"sqlite:///{tmp_path / 'x.db'}", "QUIZ_DIR": str(tmp_path)}
    with pytest.raises(RuntimeError, match="^" + re.escape(f"Refusing to start: {problem}.")):
        create_app(settings)
    create_app({**settings, "TESTING": True})  # tests and debug mode may use any key
    environment = {**os.environ, "FLASK_SECRET_KEY": key}
    printed = subprocess.run([sys.executable, "-m", "app.secret_key"], env=environment, capture_output=True,
                             text=True, check=True, timeout=60).stdout.strip()
    assert printed == problem  # docker/entrypoint.sh asks this same check


@pytest.mark.parametrize("make_key", [lambda: secrets.token_hex(16), lambda: secrets.token_hex(32),
                                      lambda: secrets.token_urlsafe(32)])
def test_random_keys_are_accepted(tmp_path, make_key):
    key = make_key()
    app = create_app({"SECRET_KEY": key, "DATABASE_URL": f"sqlite:///{tmp_path / 'x.db'}", "QUIZ_DIR": str(tmp_path)})
    assert app.config["SECRET_KEY"] == key
    for _ in range(10_000):  # many draws: a random key must not be refused by bad luck
        key = make_key()
        assert secret_key_problem(key) is None, key


def test_a_maths_label_does_not_duplicate_the_pages_verdict_id(small_bank, tmp_path):
    app = create_app({"TESTING": True, "SECRET_KEY": "labels-secret", "QUIZ_DIR": str(small_bank),
                      "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}"})
    client = app.test_client()
    question = client.get("/quiz/small/q").get_data(as_text=True)
    assert 'id="verdict"' not in question and "(verdict)" in question
    assert answer_via_form(client, "small", "q", "true").status_code == 303
    page = client.get("/quiz/small/q/answer").get_data(as_text=True)
    assert page.count('id="verdict"') == 1 and page.count("(verdict)") == 2  # the author's text is kept


def test_a_random_key_of_digits_is_used_as_written(tmp_path, monkeypatch):
    """FLASK_* values are parsed as JSON, which made a key of digits a number (and start-up an AttributeError)."""
    key = "".join(secrets.choice("123456789") for _ in range(48))
    monkeypatch.setenv("FLASK_SECRET_KEY", key)
    app = create_app({"DATABASE_URL": f"sqlite:///{tmp_path / 'x.db'}", "QUIZ_DIR": str(tmp_path)})
    assert app.config["SECRET_KEY"] == key


@pytest.mark.parametrize("name, value", [("RATE_LIMIT_LOGIN", 2), ("RATE_LIMIT_LOGIN", "two per minute"),
                                         ("RATE_LIMIT_SUBMIT_PER_ADDRESS", 5), ("RATE_LIMIT_PLOTS", "")])
def test_a_rate_limit_that_is_not_a_limit_string_stops_the_app_with_a_sentence(tmp_path, name, value):
    """A bare number turned the sign-in limit off (Flask-Limiter skips what it cannot parse) or failed every POST."""
    with pytest.raises(RuntimeError, match=re.escape(f"FLASK_{name} must be a rate limit like \"60 per minute\"")):
        create_app({"TESTING": True, "SECRET_KEY": "limits-secret", "DATABASE_URL": f"sqlite:///{tmp_path / 'x.db'}",
                    "QUIZ_DIR": str(tmp_path), name: value})


def test_ipv6_clients_share_their_64_s_budget_and_ipv4_ones_their_address(tmp_path):
    """15 addresses of one /64 were 15 fresh sign-in budgets."""
    from werkzeug.security import generate_password_hash

    app = create_app({"TESTING": True, "SECRET_KEY": "ipv6-secret", "DATABASE_URL": f"sqlite:///{tmp_path / 'x.db'}",
                      "QUIZ_DIR": str(tmp_path), "RATE_LIMIT_LOGIN": "3 per minute", "WTF_CSRF_ENABLED": False,
                      "INSTRUCTOR_PASSWORD_HASH": generate_password_hash("right", method="pbkdf2:sha256:1000")})
    codes = [app.test_client().post("/instructor/login", data={"password": "wrong"},
                                    environ_base={"REMOTE_ADDR": f"2001:db8:1:2::{index + 1:x}"}).status_code
             for index in range(5)]
    assert codes == [401, 401, 401, 429, 429]
    other_network = app.test_client().post("/instructor/login", data={"password": "wrong"},
                                           environ_base={"REMOTE_ADDR": "2001:db8:1:3::1"})
    assert other_network.status_code == 401
    from app.web.limits import client_address

    for address, key in [("2001:db8:1:2:aaaa::1", "2001:db8:1:2::/64"), ("192.0.2.7", "192.0.2.7"),
                         ("::ffff:192.0.2.7", "192.0.2.7"), ("not an address", "not an address")]:
        with app.test_request_context(environ_base={"REMOTE_ADDR": address}):
            assert client_address() == key


def test_a_lone_surrogate_in_a_display_name_is_read_as_a_space_not_a_500(tmp_path):
    app = create_app({"TESTING": True, "SECRET_KEY": "names-secret", "DATABASE_URL": f"sqlite:///{tmp_path / 'x.db'}",
                      "QUIZ_DIR": str(resource_quizzes())})
    response = app.test_client().post("/api/banks/attention-practice/attempts",
                                      data='{"display_name": "a\\ud800b"}', content_type="application/json")
    assert response.status_code == 201, response.get_data(as_text=True)


def resource_quizzes():
    from app.paths import resource_dir

    return resource_dir("quizzes")


def test_a_hosting_services_postgres_url_names_the_postgresql_driver(tmp_path):
    from app import db

    app = create_app({"TESTING": True, "SECRET_KEY": "url-secret", "QUIZ_DIR": str(tmp_path),
                      "DATABASE_URL": "postgres://quiz@127.0.0.1:1/quiz", "DATABASE_AUTO_MIGRATE": False})
    with app.app_context():
        assert db.engine().url.drivername == "postgresql+psycopg"


def _read_generated_key(folder: str, barrier) -> str:
    from flask import Flask

    from app import _ensure_secret_key

    app = Flask("worker", instance_path=folder)
    barrier.wait()  # every worker starts at once, as gunicorn's workers without --preload do
    _ensure_secret_key(app)
    return app.config["SECRET_KEY"]


def test_workers_that_start_together_without_a_key_all_read_the_same_whole_one(tmp_path):
    """The key file was created, then written: a worker in between read an empty key (every session page a 500),
    and one that lost the create raised FileExistsError. Now it is linked into place whole."""
    import multiprocessing

    context = multiprocessing.get_context("fork")
    for round_ in range(15):
        folder = tmp_path / f"instance-{round_}"
        with context.Manager() as manager:
            barrier = manager.Barrier(4)
            with context.Pool(4) as pool:
                keys = pool.starmap(_read_generated_key, [(str(folder), barrier)] * 4)
        assert len(set(keys)) == 1 and secret_key_problem(keys[0]) is None, keys
        assert [p.name for p in folder.iterdir()] == ["secret_key"]  # no draft left behind


def test_an_emptied_key_file_stops_the_app_with_what_to_do(tmp_path, monkeypatch):
    monkeypatch.delenv("FLASK_SECRET_KEY", raising=False)
    (tmp_path / "instance").mkdir()
    (tmp_path / "instance" / "secret_key").write_text("")
    monkeypatch.setenv("FLASK_INSTANCE_PATH", str(tmp_path / "instance"))
    with pytest.raises(RuntimeError, match="secret_key is empty. Delete the file to have a new one generated"):
        create_app({"DATABASE_URL": f"sqlite:///{tmp_path / 'x.db'}", "QUIZ_DIR": str(tmp_path)})
