"""The `validate-quizzes` command: check bank files and print every error as file:line:col.

Available as `flask --app app validate-quizzes [PATH...]` and as the console script
`attention-quiz-validate [PATH...]`; exits 0 when all is well and 1 otherwise.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from ..paths import resource_dir
from .registry import load_paths


def run_validation(paths: tuple[str, ...], output_format: str, default_dir: Path) -> int:
    targets = [Path(p) for p in paths] or [default_dir]
    missing = [str(p) for p in targets if not p.exists()]
    if missing:
        click.echo(f"error: no such file or folder: {', '.join(missing)}", err=True)
        return 2
    from ..visuals import check_visual  # late: keeps `import app.bank` light

    results = load_paths(targets, check_visual)
    errors = [e for r in results for e in r.errors]
    if output_format == "json":
        click.echo(json.dumps({
            "files": [{"file": r.file, "ok": r.bank is not None,
                       "bank": r.bank.id if r.bank else None,
                       "questions": len(r.bank.questions) if r.bank else 0} for r in results],
            "errors": [e.as_dict() for e in errors],
        }, indent=2))
    else:
        for error in errors:
            click.echo(str(error))
        for result in results:
            if result.bank is not None:
                count = len(result.bank.questions)
                click.echo(f"ok  {result.file}: {result.bank.id} ({count} question{'' if count == 1 else 's'})",
                           err=True)
        bad = sum(1 for r in results if r.bank is None)
        click.echo(f"{len(results)} file(s) checked, {bad} with errors, {len(errors)} error(s) in all", err=True)
    if not results:
        click.echo("error: no bank files (*.yaml, *.yml) found", err=True)
        return 1
    return 1 if errors else 0


def _default_dir() -> Path:
    """The app's QUIZ_DIR under `flask`, else the bundled banks (the console script has no app)."""
    from flask import current_app, has_app_context
    from flask.cli import ScriptInfo

    if has_app_context():
        return Path(current_app.config["QUIZ_DIR"])
    # Added with add_command, this command gets no pushed context from an AppGroup (e.g. app.test_cli_runner).
    info = click.get_current_context().find_object(ScriptInfo)
    if info is not None:
        return Path(info.load_app().config["QUIZ_DIR"])
    return resource_dir("quizzes")


def _command() -> click.Command:
    @click.command("validate-quizzes")
    @click.argument("paths", nargs=-1, type=click.Path())
    @click.option("--format", "output_format", type=click.Choice(["text", "json"]), default="text",
                  show_default=True, help="text: one 'file:line:col: field: message' per line; json: for editors and CI.")
    def validate_quizzes(paths: tuple[str, ...], output_format: str) -> None:
        """Check question banks (files or folders; default: the served QUIZ_DIR)."""
        raise SystemExit(run_validation(paths, output_format, _default_dir()))

    return validate_quizzes


validate_command = _command()


def validate_main() -> None:
    """Console-script entry point (no Flask app needed)."""
    validate_command(prog_name="attention-quiz-validate")
