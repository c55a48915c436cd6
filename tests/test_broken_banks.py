"""The broken-bank corpus (tests/broken_banks/): every file is refused with `file:line:col` errors
and a non-zero exit from `validate-quizzes`, within bounded memory, and the good bank next to them
is still served.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest

from app import create_app
from app.bank.loader import load_bank_file
from app.bank.registry import display_name
from app.paths import resource_dir
from conftest import SEED_BANK, answer_via_form

CORPUS = Path(__file__).resolve().parent / "broken_banks"
GOOD_BANK = resource_dir("quizzes") / "attention-transformers.yaml"
GOOD_TITLE = "Deep learning: Attention and Transformers"
MEMORY_BOUND = 50 * 1024 * 1024  # generous: refusing a bank should cost a few MB at most

# file -> errors it must produce, each (line, column, text in the message). Other errors may follow.
EXPECTED: dict[str, list[tuple[int, int, str]]] = {
    "syntax-error.yaml": [(9, 12, "a '[' or '{' is never closed")],
    "tabs.yaml": [(9, 1, "YAML indents with spaces, never tabs")],
    "question-mark-in-braces.yaml": [(9, 30, "ends unquoted text at a '?'; put the text in quotes")],
    "tab-in-value.yaml": [(7, 15, "a tab inside a value (pasted text?) stops this YAML reader")],
    "unclosed-quote.yaml": [(7, 13, "a quoted value is never closed")],
    "non-utf8.yaml": [(7, 16, "not valid UTF-8 (byte 0xe9)")],
    "control-character.yaml": [(3, 12, "control character U+0007")],
    "empty.yaml": [(1, 1, "a bank must be a mapping with id, title and questions; got nothing")],
    "two-documents.yaml": [(4, 1, "a bank is one YAML document")],
    "deep-nesting.yaml": [(7, 60, "nested more than 50 levels deep")],
    "recursive-alias.yaml": [(8, 11, "nested more than 50 levels deep")],
    "alias-bomb.yaml": [(9, 36, "expands to more than 100000 values")],
    "python-tag.yaml": [(3, 8, "the YAML tag !!python/object/apply:os.system is not supported")],
    "duplicate-keys.yaml": [(9, 5, "questions[0].answer: duplicate key 'answer' (first defined at line 8)")],
    "wrong-types.yaml": [
        (3, 8, "title: expected text, got a list"),
        (7, 13, "questions[0].prompt: expected text, got a mapping"),
        (9, 35, "questions[0].options[0].correct: expected a boolean (true or false), got 'yes'"),
        (10, 23, "questions[0].options[1].text: expected text, got 2.5"),
        (10, 37, "questions[0].options[1].correct: expected a boolean (true or false), got 'false'"),
        (11, 18, "questions[0].explanation: expected text, got a list"),
        (16, 22, "questions[1].tolerance.abs: expected a number, got 'lots'"),
        (18, 5, "questions[2]: expected a mapping of fields"),
    ],
    "unknown-keys.yaml": [
        (4, 1, "colour: unknown field 'colour'"),
        (8, 5, "questions[0].promtp: unknown field 'promtp'; did you mean 'prompt'?"),
        (10, 41, "questions[0].options[0].weight: unknown field 'weight'"),
        (11, 17, "questions[0].options[1].txt: unknown field 'txt'; did you mean 'text'?"),
        (13, 5, "questions[0].notes: unknown field 'notes'"),
    ],
    "huge-integer.yaml": [(8, 13, "this number has 5,000 digits")],
    "overflowing-answer.yaml": [(8, 13, "questions[0].answer: a numeric answer must be a finite number")],
    "huge-params.yaml": [(12, 18, "too large for a float")],
    "too-many-options.yaml": [(10, 7, "questions[0].options: must have at most 50 item(s), got 51")],
}


def _error_line(file: str) -> re.Pattern:
    return re.compile(rf"^{re.escape(file)}:\d+:\d+: \S")


def _peak_memory_of_loading(path: Path) -> tuple[object, int]:
    tracemalloc.start()
    try:
        result = load_bank_file(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return result, peak


def _ten_megabyte_bank(folder: Path) -> Path:
    """A well-formed bank whose description alone makes it 10 MB."""
    path = folder / "ten-megabytes.yaml"
    filler = ("    Attention lets every token look at every other token. " * 20 + "\n") * 9100
    path.write_text("id: ten-megabytes\ntitle: Ten megabytes\ndescription: |\n" + filler
                    + "questions:\n  - {id: q1, type: true_false, prompt: P, answer: true, explanation: E}\n")
    assert path.stat().st_size >= 10 * 1024 * 1024
    return path


@pytest.fixture(scope="module")
def corpus_runner(tmp_path_factory):
    database = tmp_path_factory.mktemp("broken") / "broken.sqlite3"
    app = create_app({"TESTING": True, "SECRET_KEY": "broken-banks-secret", "QUIZ_DIR": str(CORPUS),
                      "DATABASE_URL": f"sqlite:///{database}"})
    return app.test_cli_runner()


def test_every_corpus_file_has_its_expected_errors_listed():
    on_disk = {p.name for p in CORPUS.iterdir() if p.suffix in (".yaml", ".yml")}
    assert on_disk == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_broken_bank_is_refused_with_file_line_col_errors(corpus_runner, name):
    path = CORPUS / name
    result = corpus_runner.invoke(args=["validate-quizzes", str(path)])
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    file = display_name(path)
    lines = result.stdout.splitlines()
    assert lines, result.output
    pattern = _error_line(file)
    for line in lines:
        assert pattern.match(line), f"not a file:line:col error: {line!r}"
    for line_no, column, text in EXPECTED[name]:
        prefix = f"{file}:{line_no}:{column}: "
        assert any(l.startswith(prefix) and text in l for l in lines), f"missing {prefix}...{text}\n{result.stdout}"
    assert "1 file(s) checked, 1 with errors" in result.stderr


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_broken_bank_is_refused_within_bounded_memory(name):
    result, peak = _peak_memory_of_loading(CORPUS / name)
    assert result.bank is None and result.errors
    assert peak < MEMORY_BOUND, f"{name}: loading peaked at {peak / 2**20:.1f} MB"


def test_alias_bomb_stops_long_before_expanding():
    """9^9 strings would need gigabytes; the loader stops after 100,000 values."""
    result, peak = _peak_memory_of_loading(CORPUS / "alias-bomb.yaml")
    assert [e.line for e in result.errors] == [9]
    assert peak < MEMORY_BOUND


def test_ten_megabyte_bank_is_refused_before_parsing(tmp_path, corpus_runner):
    path = _ten_megabyte_bank(tmp_path)
    result, peak = _peak_memory_of_loading(path)
    (error,) = result.errors
    assert (error.line, error.column) == (1, 1)
    assert "the limit for a bank is 1,000,000 bytes" in error.message
    # Reading the file costs its size once; nothing is parsed, so the peak stays near 10 MB.
    assert peak < MEMORY_BOUND, f"peaked at {peak / 2**20:.1f} MB"
    cli = corpus_runner.invoke(args=["validate-quizzes", str(path)])
    assert cli.exit_code == 1
    assert _error_line(display_name(path)).match(cli.stdout)
    assert f"{path.stat().st_size:,} bytes" in cli.stdout


def _validate_script() -> list[str]:
    script = Path(sys.executable).with_name("attention-quiz-validate")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "from app.bank.cli import validate_main; validate_main()"]


def test_console_script_on_the_whole_corpus_reports_every_file(tmp_path):
    result = subprocess.run([*_validate_script(), str(CORPUS)], capture_output=True, text=True, timeout=120,
                            cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    # Run from elsewhere, so the paths are absolute, as given.
    pattern = re.compile(rf"^{re.escape(str(CORPUS))}/[\w.-]+\.yaml:\d+:\d+: \S")
    assert lines and all(pattern.match(line) for line in lines), result.stdout
    reported = {line.split(":", 1)[0].rsplit("/", 1)[1] for line in lines}
    assert reported == set(EXPECTED)
    assert f"{len(EXPECTED)} file(s) checked, {len(EXPECTED)} with errors" in result.stderr
    assert "Traceback" not in result.stderr


def test_console_script_json_output_lists_every_file_as_failed(tmp_path):
    result = subprocess.run([*_validate_script(), "--format", "json", str(CORPUS)], capture_output=True,
                            text=True, timeout=120, cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    report = json.loads(result.stdout)
    assert {Path(f["file"]).name for f in report["files"]} == set(EXPECTED)
    assert not any(f["ok"] for f in report["files"])
    assert all(e["line"] >= 1 and e["column"] >= 1 and e["message"] for e in report["errors"])


def test_good_bank_is_still_served_next_to_the_whole_corpus(tmp_path, caplog):
    quiz_dir = tmp_path / "quizzes"
    shutil.copytree(CORPUS, quiz_dir, ignore=shutil.ignore_patterns("*.md"))
    shutil.copy(GOOD_BANK, quiz_dir)
    _ten_megabyte_bank(quiz_dir)
    app = create_app({"TESTING": True, "SECRET_KEY": "broken-banks-secret", "QUIZ_DIR": str(quiz_dir),
                      "DATABASE_URL": f"sqlite:///{tmp_path / 'served.sqlite3'}"})
    registry = app.extensions["banks"]
    assert list(registry.banks) == [SEED_BANK]
    assert len(registry.errors) == len(EXPECTED) + 1  # the corpus and the 10 MB file, each logged
    assert sum("skipping bank" in r.getMessage() for r in caplog.records) == len(EXPECTED) + 1

    client = app.test_client()
    home = client.get("/")
    assert home.status_code == 200
    page = home.get_data(as_text=True)
    assert GOOD_TITLE in page
    for broken_title in ("Syntax error", "Wrong types", "Unknown keys", "Alias bomb", "Ten megabytes"):
        assert broken_title not in page
    assert client.get(f"/quiz/{SEED_BANK}/head-dimension").status_code == 200
    response = answer_via_form(client, SEED_BANK, "head-dimension", "32")
    assert response.status_code == 303
    answer = client.get(response.headers["Location"])
    assert answer.status_code == 200 and 'id="verdict">Correct<' in answer.get_data(as_text=True)
    assert client.get("/quiz/unknown-keys/").status_code == 404
    assert [b["id"] for b in client.get("/api/banks").get_json()["banks"]] == [SEED_BANK]

    # validate-quizzes with no path checks the served folder: the good bank passes, the rest fail.
    result = app.test_cli_runner().invoke(args=["validate-quizzes"])
    assert result.exit_code == 1
    assert f"ok  {display_name(quiz_dir / GOOD_BANK.name)}: {SEED_BANK} (9 questions)" in result.stderr
    assert all(re.match(r"^.+\.yaml:\d+:\d+: \S", line) for line in result.stdout.splitlines())
