"""Hot reload: a background thread re-reads only the bank file that changed while the old version keeps
serving; a broken edit keeps the last good version serving while its errors are logged and shown."""

from __future__ import annotations

import logging
import os
import shutil
import threading
import time

import pytest

import app.bank.registry as registry_module
from app import create_app
from test_instructor import sign_in

OLD_TITLE = "Deep learning: Attention and Transformers"
NEW_TITLE = "Attention, edited live"


@pytest.fixture
def bank_dir(tmp_path, quiz_dir):
    folder = tmp_path / "banks"
    folder.mkdir()
    for name in ("attention-transformers.yaml", "attention-practice.yaml"):
        shutil.copy(quiz_dir / name, folder)
    return folder


@pytest.fixture
def make_app(bank_dir, tmp_path):
    made = []

    def make(reload, **config):
        app = create_app({"TESTING": True, "SECRET_KEY": "s", "QUIZ_DIR": str(bank_dir), "QUIZ_HOT_RELOAD": reload,
                          "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}", **config})
        made.append(app)
        return app

    yield make
    for app in made:
        app.extensions["banks"].stop_watching()


def _edit(path, old, new):
    """Rewrite `path` with `old` replaced, and move its modification time on (coarse clocks)."""
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 2_000_000_000))


def _eventually(check, timeout=15.0):
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "the hot-reload thread did not pick the change up"
        time.sleep(0.05)


def _watchers(bank_dir):
    """This test's hot-reload threads (other tests' apps may still be watching their own folders)."""
    return [t for t in threading.enumerate() if t.name == f"bank-hot-reload {bank_dir}"]


def test_an_edit_and_a_new_file_are_served_without_a_restart(make_app, bank_dir):
    client = make_app(True).test_client()
    assert OLD_TITLE in client.get("/").get_data(as_text=True)
    _edit(bank_dir / "attention-transformers.yaml", f'title: "{OLD_TITLE}"', f'title: "{NEW_TITLE}"')
    _eventually(lambda: NEW_TITLE in client.get("/").get_data(as_text=True))
    (bank_dir / "new.yaml").write_text(
        "id: fresh\ntitle: Fresh bank\nquestions:\n  - id: q\n    type: true_false\n    prompt: p\n"
        "    answer: true\n    explanation: e\n")
    _eventually(lambda: "Fresh bank" in client.get("/").get_data(as_text=True))
    (bank_dir / "new.yaml").unlink()
    _eventually(lambda: client.get("/quiz/fresh/q").status_code == 404)


def test_a_request_during_a_reload_is_served_the_old_version_without_waiting(make_app, bank_dir, monkeypatch):
    """The reload of the edited bank is held open: requests meanwhile must not wait for it."""
    app = make_app(True)
    client = app.test_client()
    started, release = threading.Event(), threading.Event()
    real_load_file = registry_module.load_bank_file

    def held_load_file(file, *args):  # reads one bank file
        if file.name == "attention-transformers.yaml":
            started.set()
            release.wait(20)
        return real_load_file(file, *args)

    monkeypatch.setattr(registry_module, "load_bank_file", held_load_file)
    client.get("/")  # starts the watcher
    _edit(bank_dir / "attention-transformers.yaml", f'title: "{OLD_TITLE}"', f'title: "{NEW_TITLE}"')
    try:
        assert started.wait(15), "no reload started in the background"
        home = client.get("/")  # while the reload is held: answered at once, with the old version
        assert home.status_code == 200 and OLD_TITLE in home.get_data(as_text=True)
        assert client.get("/quiz/attention-transformers/soft-dictionary-lookup").status_code == 200
    finally:
        release.set()
    _eventually(lambda: NEW_TITLE in client.get("/").get_data(as_text=True))


def test_only_the_changed_file_is_read_again(make_app, bank_dir, monkeypatch):
    registry = make_app(True).extensions["banks"]
    unchanged = registry.get("attention-practice")
    read = []
    real_load_file = registry_module.load_bank_file
    monkeypatch.setattr(registry_module, "load_bank_file", lambda file, *args: read.append(file.name) or
                        real_load_file(file, *args))
    assert registry.refresh_if_changed() is False and read == []  # nothing changed: nothing is read
    _edit(bank_dir / "attention-transformers.yaml", f'title: "{OLD_TITLE}"', f'title: "{NEW_TITLE}"')
    assert registry.refresh_if_changed() is True
    assert read == ["attention-transformers.yaml"]
    assert registry.get("attention-transformers").title == NEW_TITLE
    assert registry.get("attention-practice") is unchanged  # the other bank's objects are the same ones


def test_a_broken_edit_keeps_the_last_good_version_and_reports_it(make_app, bank_dir, caplog):
    from test_instructor import PASSWORD_HASH

    app = make_app(True, INSTRUCTOR_PASSWORD_HASH=PASSWORD_HASH)
    client = app.test_client()
    assert sign_in(client).status_code in (302, 303)
    registry = app.extensions["banks"]
    before = registry.get("attention-transformers")
    with caplog.at_level(logging.ERROR, logger="app.bank.registry"):
        _edit(bank_dir / "attention-transformers.yaml", "    answer: true\n", "    answer: yes\n")
        _eventually(lambda: registry.errors)
    page = client.get("/quiz/attention-transformers/soft-dictionary-lookup")
    assert page.status_code == 200  # students still get the last good version
    assert registry.get("attention-transformers") is before
    [(file, errors)] = registry.errors.items()
    assert registry.stale == {"attention-transformers": file}
    assert any(str(e).startswith(f"{file}:") and "questions[0].answer" in str(e) for e in errors)
    assert f"keeping the last good version of bank {file}" in caplog.text and "questions[0].answer" in caplog.text
    index = client.get("/instructor/preview/").get_data(as_text=True)
    assert "questions[0].answer" in index and "Students still get the last good" in index


def test_the_thread_starts_in_the_serving_process_not_in_create_app(make_app, bank_dir):
    """gunicorn builds the app in its master and forks the workers: a thread started by create_app would
    live in the master only. It starts on a request, once, and stops when asked."""
    assert _watchers(bank_dir) == []
    app = make_app(True)
    assert _watchers(bank_dir) == []
    client = app.test_client()
    client.get("/")
    client.get("/")
    [watcher] = _watchers(bank_dir)
    assert watcher.daemon
    app.extensions["banks"].stop_watching()
    assert _watchers(bank_dir) == []


def test_without_hot_reload_edits_wait_for_a_restart(make_app, bank_dir):
    app = make_app(False)
    client = app.test_client()
    _edit(bank_dir / "attention-transformers.yaml", OLD_TITLE, "Changed")
    assert "Changed" not in client.get("/").get_data(as_text=True)
    assert _watchers(bank_dir) == []
    assert "Changed" in make_app(False).test_client().get("/").get_data(as_text=True)  # a restart reads it
