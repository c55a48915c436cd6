"""The quiz folder does not trust its files (issue 15, item 7): a link out of the folder is refused unread, with a
clear error, and nothing of its target reaches the instructor preview or the log; a file's size is checked before
it is read, so a huge file costs no memory."""

from __future__ import annotations

import logging
import os
import tracemalloc

import pytest

from app import create_app
from app.bank.registry import BankRegistry, display_name
from app.bank.yamlsource import MAX_FILE_BYTES
from test_instructor import PASSWORD, PASSWORD_HASH, sign_in

SECRET = "TOP-SECRET-7f3a9c"
GOOD = """\
id: good
title: Good bank
questions:
  - id: q
    type: true_false
    prompt: Is it?
    answer: true
    explanation: Yes.
"""
REFUSED = "this is a symbolic link to a file outside the quiz folder, which is refused"


@pytest.fixture
def folder(tmp_path):
    quizzes = tmp_path / "quizzes"
    quizzes.mkdir()
    (quizzes / "good.yaml").write_text(GOOD)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    # A valid bank someone else controls, and a key file whose first line a parse error would quote.
    (outside / "bank.yaml").write_text(GOOD.replace("good", "leaked").replace("Good bank", SECRET))
    (outside / "id_rsa").write_text(f"-----BEGIN {SECRET} PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n")
    (quizzes / "linked-bank.yaml").symlink_to(outside / "bank.yaml")
    (quizzes / "linked-key.yaml").symlink_to(outside / "id_rsa")
    (quizzes / "dangling.yaml").symlink_to(outside / "no-such-file")
    return quizzes


def test_links_out_of_the_folder_are_refused_unread_and_named_in_the_errors(folder, caplog):
    caplog.set_level(logging.DEBUG)
    registry = BankRegistry(folder)
    registry.load()
    assert set(registry.banks) == {"good"}  # the good bank is still served
    refused = {name.rsplit("/", 1)[-1]: errors for name, errors in registry.errors.items()}
    assert set(refused) == {"linked-bank.yaml", "linked-key.yaml", "dangling.yaml"}
    for errors in refused.values():
        assert [e.message for e in errors] == [REFUSED + "; copy the bank into the folder instead"]
    assert SECRET not in caplog.text and "MIIE" not in caplog.text
    assert "linked-key.yaml" in caplog.text and REFUSED in caplog.text


def test_a_link_inside_the_folder_is_served(folder):
    sources = folder / "sources"
    sources.mkdir()
    (sources / "other.yaml").write_text(GOOD.replace("good", "other"))
    (folder / "other.yaml").symlink_to(sources / "other.yaml")
    (folder / "relative.yml").symlink_to("sources/other.yaml")  # the same file twice: one bank id, one error
    registry = BankRegistry(folder)
    registry.load()
    assert set(registry.banks) == {"good", "other"}
    errors = {name.rsplit("/", 1)[-1]: [e.message for e in errors] for name, errors in registry.errors.items()}
    assert "other.yaml" not in errors
    assert errors["relative.yml"] == ["bank id 'other' is already used by " + display_name(folder / "other.yaml")
                                      + "; give this bank another id"]


def test_nothing_of_a_refused_file_reaches_the_instructor_preview(folder, tmp_path):
    app = create_app({"TESTING": True, "SECRET_KEY": "files-secret", "QUIZ_DIR": str(folder),
                      "INSTRUCTOR_PASSWORD_HASH": PASSWORD_HASH,
                      "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}"})
    client = app.test_client()
    sign_in(client, PASSWORD)
    page = client.get("/instructor/preview/").get_data(as_text=True)
    assert "linked-key.yaml" in page and REFUSED in page
    assert SECRET not in page and "MIIE" not in page


def test_a_huge_bank_file_is_refused_before_it_is_read(folder):
    huge = folder / "huge.yaml"
    with open(huge, "wb") as handle:
        handle.truncate(64 * 1024 * 1024)  # sparse: 64 MiB that take no disk
    tracemalloc.start()
    try:
        registry = BankRegistry(folder)
        registry.load()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    [error] = registry.errors[next(name for name in registry.errors if name.endswith("huge.yaml"))]
    assert error.message == (f"the file is {64 * 1024 * 1024:,} bytes; the limit for a bank is "
                             f"{MAX_FILE_BYTES:,} bytes, so split it")
    assert peak < 8 * 1024 * 1024, f"loading the folder allocated {peak:,} bytes at its peak"
    assert set(registry.banks) == {"good"}


def test_a_bank_at_the_size_limit_is_still_read(folder):
    padding = MAX_FILE_BYTES - len(GOOD.replace("good", "big"))
    (folder / "big.yaml").write_text(GOOD.replace("good", "big") + "#" * (padding - 1) + "\n")
    assert os.path.getsize(folder / "big.yaml") == MAX_FILE_BYTES
    registry = BankRegistry(folder)
    registry.load()
    assert "big" in registry.banks
