"""Hot reload: an edited bank is served on the next request; a broken edit keeps the last good
version serving students while its errors are recorded with file:line:col."""

from __future__ import annotations

import os
import shutil

import pytest

from app import create_app


@pytest.fixture
def bank_dir(tmp_path, quiz_dir):
    folder = tmp_path / "banks"
    folder.mkdir()
    shutil.copy(quiz_dir / "attention-transformers.yaml", folder)
    return folder


def _app(bank_dir, tmp_path, reload):
    return create_app({"TESTING": True, "SECRET_KEY": "s", "QUIZ_DIR": str(bank_dir), "QUIZ_HOT_RELOAD": reload,
                       "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}"})


def _touch_later(path):
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 2_000_000_000))


def test_an_edit_is_served_on_the_next_request(bank_dir, tmp_path):
    client = _app(bank_dir, tmp_path, True).test_client()
    bank = bank_dir / "attention-transformers.yaml"
    bank.write_text(bank.read_text().replace('title: "Deep learning: Attention and Transformers"',
                                              'title: "Attention, edited live"'))
    _touch_later(bank)
    assert "Attention, edited live" in client.get("/").get_data(as_text=True)
    (bank_dir / "new.yaml").write_text(
        "id: fresh\ntitle: Fresh bank\nquestions:\n  - id: q\n    type: true_false\n    prompt: p\n"
        "    answer: true\n    explanation: e\n")
    assert "Fresh bank" in client.get("/").get_data(as_text=True)


def test_a_broken_edit_keeps_the_last_good_version(bank_dir, tmp_path):
    app = _app(bank_dir, tmp_path, True)
    client = app.test_client()
    bank = bank_dir / "attention-transformers.yaml"
    bank.write_text(bank.read_text().replace("    answer: true\n", "    answer: yes\n", 1))
    _touch_later(bank)
    page = client.get("/quiz/attention-transformers/soft-dictionary-lookup")
    assert page.status_code == 200  # students still get the last good version
    registry = app.extensions["banks"]
    assert registry.stale == {"attention-transformers": next(iter(registry.errors))}
    [errors] = registry.errors.values()
    assert any("questions[0].answer" in str(e) and ":" in str(e).split(" ")[0] for e in errors)


def test_without_hot_reload_edits_wait_for_a_restart(bank_dir, tmp_path):
    client = _app(bank_dir, tmp_path, False).test_client()
    bank = bank_dir / "attention-transformers.yaml"
    bank.write_text(bank.read_text().replace("Deep learning: Attention and Transformers", "Changed"))
    _touch_later(bank)
    assert "Changed" not in client.get("/").get_data(as_text=True)
