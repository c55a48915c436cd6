"""`flask lti ...`: registering several platforms and deployments, listing and removing them, the tool's key
(generated on first use, rotated, retired) as published at /lti/jwks, and the grade retry schedule."""

from __future__ import annotations

import pytest
from conftest import run_python

from app.lti import grades, on_attempt_finished, store

ADD = ["lti", "add-platform", "--auth-url", "https://lms.example.org/auth", "--token-url",
       "https://lms.example.org/token", "--jwks-url", "https://lms.example.org/jwks"]


def add(runner, issuer="https://lms.example.org", client_id="client-1", *deployments):
    args = ADD + ["--issuer", issuer, "--client-id", client_id]
    for deployment in deployments or ("d1",):
        args += ["--deployment-id", deployment]
    return runner.invoke(args=args)


def test_several_platforms_and_deployments_are_listed_and_removed(runner):
    assert "no platform is registered" in runner.invoke(args=["lti", "list-platforms"]).output
    first = add(runner, "https://lms.example.org", "client-1", "d1", "d2")
    assert first.exit_code == 0 and "deployments: d1, d2 (new: d1, d2)" in first.output
    again = add(runner, "https://lms.example.org", "client-1", "d2", "d3")  # repeatable: adds only what is new
    assert "deployments: d1, d2, d3 (new: d3)" in again.output
    assert add(runner, "https://lms.example.org", "client-2", "x").exit_code == 0  # one issuer, two clients
    assert add(runner, "https://moodle.example.org", "abc", "1").exit_code == 0
    listed = runner.invoke(args=["lti", "list-platforms"]).output
    assert listed.count("client id") == 3 and "deployments d1, d2, d3" in listed and "deployments 1" in listed

    removed = runner.invoke(args=["lti", "remove-platform", "--issuer", "https://lms.example.org",
                                  "--client-id", "client-1", "--deployment-id", "d2"])
    assert removed.exit_code == 0 and "removed 1 deployment(s)" in removed.output
    assert "deployments d1, d3" in runner.invoke(args=["lti", "list-platforms"]).output
    whole = runner.invoke(args=["lti", "remove-platform", "--issuer", "https://moodle.example.org",
                                "--client-id", "abc"])
    assert whole.exit_code == 0 and "moodle" not in runner.invoke(args=["lti", "list-platforms"]).output
    missing = runner.invoke(args=["lti", "remove-platform", "--issuer", "https://nowhere.example.org",
                                  "--client-id", "abc"])
    assert missing.exit_code == 1 and "nothing registered matches" in missing.output


@pytest.mark.parametrize("option, value", [("--auth-url", "lms.example.org/auth"), ("--jwks-url", "ftp://x/jwks")])
def test_a_url_that_is_not_http_is_refused(runner, option, value):
    args = ADD + ["--issuer", "https://lms.example.org", "--client-id", "c", "--deployment-id", "d"]
    args[args.index(option) + 1] = value
    result = runner.invoke(args=args)
    assert result.exit_code == 2 and f"{value!r} is not an http(s) URL" in result.output


def test_a_deployment_id_is_required(runner):
    result = runner.invoke(args=ADD + ["--issuer", "https://lms.example.org", "--client-id", "c"])
    assert result.exit_code == 2 and "--deployment-id" in result.output


def test_the_key_is_made_on_first_use_rotated_and_retired(app, client, runner):
    first = client.get("/lti/jwks").get_json()["keys"]
    assert len(first) == 1 and first[0]["kty"] == "RSA" and "d" not in first[0]
    assert client.get("/lti/jwks").get_json()["keys"] == first  # kept, not made again
    rotated = runner.invoke(args=["lti", "rotate-key"])
    assert rotated.exit_code == 0 and "retire-keys" in rotated.output
    both = client.get("/lti/jwks").get_json()["keys"]
    assert [k["kid"] for k in both][1:] == [first[0]["kid"]]  # the new key first, the old one still published
    with app.app_context():
        assert store.current_key()[0] == both[0]["kid"]
    assert "retired 1 old key(s)" in runner.invoke(args=["lti", "retire-keys"]).output
    assert [k["kid"] for k in client.get("/lti/jwks").get_json()["keys"]] == [both[0]["kid"]]


def test_tool_info_prints_the_urls_to_enter_in_the_lms(runner):
    result = runner.invoke(args=["lti", "tool-info", "--base-url", "https://quiz.example.org/"])
    assert result.exit_code == 0
    assert "OIDC login (initiate login) URL: https://quiz.example.org/lti/login" in result.output
    assert "Launch / redirect URL: https://quiz.example.org/lti/launch" in result.output
    assert "Public keyset (JWKS) URL: https://quiz.example.org/lti/jwks" in result.output


def test_a_nonce_is_used_once(app):
    with app.app_context():
        store.put_value("lti1p3-nonce-abc", True, 60)
        assert store.take_value("lti1p3-nonce-abc") is True
        assert store.take_value("lti1p3-nonce-abc") is False
        assert store.take_value("lti1p3-nonce-never-issued") is False
        store.put_value("lti1p3-nonce-old", True, -1)  # expired
        assert store.take_value("lti1p3-nonce-old") is False


@pytest.mark.parametrize("tries, seconds", [(1, 30), (2, 60), (3, 120), (7, 1920), (8, 3600), (50, 3600)])
def test_retries_back_off_to_at_most_an_hour(tries, seconds):
    assert grades.retry_delay(tries).total_seconds() == seconds


def test_an_anonymous_attempt_sends_no_grade(app):
    with app.app_context():
        assert on_attempt_finished("0" * 32) is False


@pytest.mark.slow
def test_the_lti_libraries_load_with_the_first_lms_request_not_at_start_up(tmp_path):
    """A server no LMS talks to never imports pylti1p3, requests or cryptography (app.lti's lazy views); the
    first /lti request loads them, and a finished attempt that no launch owns needs none of them."""
    out = run_python(f"""
        import sys
        from app import create_app

        app = create_app({{"SECRET_KEY": "k" + "0123456789abcdef" * 4, "TESTING": True,
                          "DATABASE_URL": "sqlite:///{tmp_path / 'lazy.sqlite3'}"}})
        libraries = ("pylti1p3", "requests", "cryptography", "jwcrypto")
        loaded = lambda: [name for name in libraries if name in sys.modules]
        from app.lti import on_attempt_finished
        with app.app_context():
            on_attempt_finished("0" * 32)
        print(loaded())
        keys = app.test_client().get("/lti/jwks")
        print(keys.status_code, keys.get_json()["keys"][0]["kty"], loaded())
    """)
    assert out.splitlines() == ["[]", "200 RSA ['pylti1p3', 'requests', 'cryptography', 'jwcrypto']"]
