"""The `validate-quizzes` command, as `flask --app app validate-quizzes` and as `attention-quiz-validate`.

Exit codes: 0 all banks valid, 1 any error (or no bank files), 2 a path that does not exist.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest
from click.testing import CliRunner

from app import create_app
from app.bank.cli import validate_command
from app.paths import resource_dir

GOOD = """\
id: demo
title: Demo bank
questions:
  - id: heads
    type: numeric
    prompt: How many heads?
    explanation: Eight.
    answer: 8
"""

# Three problems on lines 9, 10 and 11; the CLI must print all three, in line order.
BROKEN = """\
id: broken
title: Broken bank
questions:
  - id: pick
    type: single_choice
    prompt: Pick one.
    explanation: E
    options:
      - {id: a, text: A, correct: yes}
      - {id: b, text: B, colour: red}
  - id: Two
    type: numeric
    prompt: One plus one?
    explanation: Two.
    answer: 2
"""

BROKEN_LINES = [
    "broken.yaml:9:35: questions[0].options[0].correct: expected a boolean (true or false), got 'yes'; "
    "banks are read as YAML 1.2, where this word is text, so write true or false",
    "broken.yaml:10:26: questions[0].options[1].colour: unknown field 'colour' (allowed: id, text, correct, "
    "feedback)",
    "broken.yaml:11:9: questions[1].id: 'Two' is not a valid id: use lowercase letters, digits, '-' and '_' "
    "(at most 64 characters), starting with a letter or digit",
]


@pytest.fixture
def bank_dir(tmp_path, monkeypatch):
    """A working directory holding good.yaml and broken.yaml, so files print as relative names."""
    (tmp_path / "good.yaml").write_text(GOOD)
    (tmp_path / "broken.yaml").write_text(BROKEN)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def flask_runner(quiz_dir: Path):
    app = create_app({"TESTING": True, "SECRET_KEY": "test", "QUIZ_DIR": str(quiz_dir), "DATABASE_URL": "sqlite://"})
    return app.test_cli_runner()


def stdout_lines(result) -> list[str]:
    return result.stdout.splitlines()


# --------------------------------------------------------------------------------------------------
# flask --app app validate-quizzes

def test_bundled_quizzes_are_valid():
    result = flask_runner(resource_dir("quizzes")).invoke(args=["validate-quizzes"])
    assert result.exit_code == 0, result.output
    assert result.stdout == ""  # stdout carries only errors
    assert "attention-transformers (9 questions)" in result.stderr
    count = len(list(resource_dir("quizzes").glob("*.yaml")))
    assert f"{count} file(s) checked, 0 with errors, 0 error(s) in all" in result.stderr


def test_broken_file_exits_1_and_prints_every_error_in_line_order(bank_dir):
    result = flask_runner(bank_dir).invoke(args=["validate-quizzes", "broken.yaml"])
    assert result.exit_code == 1
    assert stdout_lines(result) == BROKEN_LINES
    assert "1 file(s) checked, 1 with errors, 3 error(s) in all" in result.stderr


def test_default_path_is_the_served_quiz_dir(bank_dir):
    result = flask_runner(bank_dir).invoke(args=["validate-quizzes"])
    assert result.exit_code == 1
    assert len(stdout_lines(result)) == 3
    assert "good.yaml: demo (1 question)" in result.stderr


def test_folder_argument_checks_every_bank_in_it(bank_dir):
    (bank_dir / "sub").mkdir()
    (bank_dir / "sub" / "one.yaml").write_text(GOOD)
    (bank_dir / "sub" / "two.yml").write_text(GOOD.replace("demo", "demo-two"))
    (bank_dir / "sub" / "readme.txt").write_text("not a bank")
    result = flask_runner(bank_dir).invoke(args=["validate-quizzes", "sub"])
    assert result.exit_code == 0, result.output
    assert "2 file(s) checked, 0 with errors, 0 error(s) in all" in result.stderr


def test_several_paths_and_a_bank_id_clash_across_them(bank_dir):
    (bank_dir / "copy").mkdir()
    (bank_dir / "copy" / "again.yaml").write_text(GOOD)
    result = flask_runner(bank_dir).invoke(args=["validate-quizzes", "good.yaml", "copy"])
    assert result.exit_code == 1
    assert stdout_lines(result) == [
        "copy/again.yaml:1:5: id: bank id 'demo' is already used by good.yaml; give this bank another id"
    ]


def test_json_format_lists_files_and_errors(bank_dir):
    result = flask_runner(bank_dir).invoke(args=["validate-quizzes", ".", "--format", "json"])
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert report["files"] == [
        {"file": "broken.yaml", "ok": False, "bank": None, "questions": 0},
        {"file": "good.yaml", "ok": True, "bank": "demo", "questions": 1},
    ]
    assert [set(e) for e in report["errors"]] == [{"file", "line", "column", "field", "message"}] * 3
    assert report["errors"][0] == {
        "file": "broken.yaml", "line": 9, "column": 35, "field": "questions[0].options[0].correct",
        "message": "expected a boolean (true or false), got 'yes'; banks are read as YAML 1.2, where this word "
                   "is text, so write true or false",
    }
    assert [f"{e['file']}:{e['line']}:{e['column']}: {e['field']}: {e['message']}"
            for e in report["errors"]] == BROKEN_LINES


def test_json_format_for_a_valid_bank_exits_0(bank_dir):
    result = flask_runner(bank_dir).invoke(args=["validate-quizzes", "--format", "json", "good.yaml"])
    assert result.exit_code == 0
    assert json.loads(result.stdout)["errors"] == []


def test_missing_path_exits_2(bank_dir):
    result = flask_runner(bank_dir).invoke(args=["validate-quizzes", "good.yaml", "nope.yaml"])
    assert result.exit_code == 2
    assert result.stdout == ""
    assert "error: no such file or folder: nope.yaml" in result.stderr


def test_folder_without_banks_exits_1(bank_dir):
    (bank_dir / "empty").mkdir()
    result = flask_runner(bank_dir).invoke(args=["validate-quizzes", "empty"])
    assert result.exit_code == 1
    assert "error: no bank files (*.yaml, *.yml) found" in result.stderr


def test_unknown_format_is_a_usage_error(bank_dir):
    result = flask_runner(bank_dir).invoke(args=["validate-quizzes", "--format", "xml"])
    assert result.exit_code == 2
    assert "'xml' is not one of 'text', 'json'" in result.stderr


# --------------------------------------------------------------------------------------------------
# The real `flask` command in its own process: each command prints its own output, no start-up logs

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("args, output, opens_the_database", [
    (["validate-quizzes"], "ok  ", False),
    (["selftest-quizzes"], "demo", False),
    (["export-quiz", "demo", "--format", "gift"], "::heads::", False),
    (["import-moodle", "{tmp}/moodle.xml"], "imported 1 question(s)", False),
    (["regrade", "demo", "--dry-run"], "0 answers checked", True),
    (["lti", "list-platforms"], "no platform is registered", True),
])
def test_flask_commands_print_their_own_output_without_info_logs(tmp_path, args, output, opens_the_database):
    """And only a command that uses the database creates or migrates it: checking a bank beside a production
    DATABASE_URL must not upgrade its schema."""
    (tmp_path / "quizzes").mkdir()
    (tmp_path / "quizzes" / "good.yaml").write_text(GOOD)
    (tmp_path / "moodle.xml").write_text(
        '<quiz><question type="truefalse"><name><text>tf</text></name><questiontext><text>Soft?</text></questiontext>'
        '<generalfeedback><text>Yes.</text></generalfeedback><answer fraction="100"><text>true</text></answer>'
        '<answer fraction="0"><text>false</text></answer></question></quiz>')
    args = [arg.replace("{tmp}", str(tmp_path)) for arg in args]
    env = {**os.environ, "FLASK_QUIZ_DIR": str(tmp_path / "quizzes"), "FLASK_INSTANCE_PATH": str(tmp_path / "instance"),
           "FLASK_DATABASE_URL": f"sqlite:///{tmp_path / 'quiz.sqlite3'}"}
    for name in ("FLASK_DEBUG", "FLASK_TESTING"):
        env.pop(name, None)
    result = subprocess.run([str(Path(sys.executable).parent / "flask"), "--app", "app", *args], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert output in result.stdout + result.stderr
    logged = [line for line in (result.stdout + result.stderr).splitlines() if re.search(r"\bINFO\b", line)]
    assert logged == [], "start-up logs in a command's output"
    assert (tmp_path / "quiz.sqlite3").exists() == opens_the_database


# --------------------------------------------------------------------------------------------------
# attention-quiz-validate (no Flask app)

def test_console_command_defaults_to_the_bundled_quizzes():
    result = CliRunner().invoke(validate_command, [])
    assert result.exit_code == 0, result.output
    assert "attention-transformers (9 questions)" in result.stderr


def test_console_command_reports_errors(bank_dir):
    result = CliRunner().invoke(validate_command, ["broken.yaml", "good.yaml"])
    assert result.exit_code == 1
    assert stdout_lines(result) == BROKEN_LINES


def test_console_command_missing_path_exits_2(bank_dir):
    result = CliRunner().invoke(validate_command, ["nope"])
    assert result.exit_code == 2
    assert "no such file or folder: nope" in result.stderr


def test_console_script_entry_point(bank_dir, monkeypatch, capsys):
    # The installed script runs validate_main; call it as the script would, without a subprocess.
    (entry,) = entry_points(group="console_scripts", name="attention-quiz-validate")
    assert entry.value == "app.bank.cli:validate_main"
    monkeypatch.setattr(sys, "argv", ["attention-quiz-validate", "broken.yaml", "good.yaml"])
    with pytest.raises(SystemExit) as exited:
        entry.load()()
    assert exited.value.code == 1
    captured = capsys.readouterr()
    assert captured.out.splitlines() == BROKEN_LINES
    assert "ok  good.yaml: demo (1 question)" in captured.err
