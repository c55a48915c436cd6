"""The authoring commands: `flask --app app export-quiz` (GIFT or Moodle XML), `flask --app app import-moodle`
(Moodle XML) and `flask --app app selftest-quizzes`. `init_app(app)` registers them.
"""

from __future__ import annotations

import re
from pathlib import Path

import click
from flask import Flask, current_app
from flask.cli import with_appcontext

from ..bank.loader import load_bank_bytes, load_bank_file
from ..bank.registry import BANK_SUFFIXES, display_name
from ..bank.schema import SLUG_PATTERN, Bank
from ..visuals import Rendered
from .moodle_import import MAX_INPUT_BYTES, ImportFailed, import_moodle_xml, slug
from .export import FORMATS, MATH_MODES, VISUAL_PLACEMENTS, Renderer, export_bank
from .selftest import NOT_LOADED, SelfTest, format_report

# Exit statuses, as for validate-quizzes: 1 a problem in a bank (or a warning under --strict), 2 an
# argument that names nothing (no such file, folder or bank id).
EXIT_PROBLEM = 1
EXIT_USAGE = 2


def app_renderer() -> Renderer | None:
    """Render through the app's bounded figure cache when it has one, so a figure is drawn once."""
    cache = current_app.extensions.get("visual_cache")
    if cache is None:
        return None

    def render(kind, params) -> Rendered:
        computed = cache.visual(kind, params)
        return Rendered(cache.image(kind, params).data, kind.mimetype, computed.alt, computed.caption)

    return render


def _fail(message: str, status: int) -> None:
    click.echo(f"error: {message}", err=True)
    raise SystemExit(status)


def _load_bank(spec: str) -> Bank:
    """BANK is a path to a bank file, or the id of a bank served from QUIZ_DIR."""
    path = Path(spec)
    if path.is_file() or path.suffix in BANK_SUFFIXES or "/" in spec:
        if not path.is_file():
            _fail(f"no such bank file: {spec}", EXIT_USAGE)
        from ..visuals import check_visual

        result = load_bank_file(path, display_name(path), check_visual)
        if result.bank is None:
            for error in result.errors:
                click.echo(str(error), err=True)
            _fail(f"{result.file} has {len(result.errors)} error(s); nothing was exported", EXIT_PROBLEM)
        return result.bank
    registry = current_app.extensions["banks"]
    bank = registry.banks.get(spec)
    if bank is None:
        served = ", ".join(sorted(registry.banks)) or "none"
        hint = (f" ({len(registry.errors)} file(s) there did not load; run validate-quizzes)"
                if registry.errors else "")
        _fail(f"no bank {spec!r} is served from {registry.directory}{hint}; the banks are: {served}. "
              "Give a bank id or the path of a .yaml file.", EXIT_USAGE)
    return bank


def _deliver(text: str, output: str | None, warnings, new_file: bool = False) -> str:
    """Write `text` to `output` (a `new_file` must not exist yet) or standard output, then each warning to
    standard error; ' to OUTPUT' for the summary line."""
    if output:
        try:
            with open(output, "x" if new_file else "w", encoding="utf-8") as handle:
                handle.write(text)
        except FileExistsError:
            _fail(f"{output} exists; choose another file, or remove it first", EXIT_USAGE)
        except OSError as error:
            _fail(f"cannot write {output}: {error.strerror}", EXIT_PROBLEM)
    else:
        click.echo(text, nl=False)
    for warning in warnings:
        click.echo(f"warning: {warning}", err=True)
    return f" to {output}" if output else ""


@click.command("export-quiz")
@click.argument("bank")
@click.option("--format", "output_format", type=click.Choice(FORMATS), required=True,
              help="gift: Moodle's GIFT text; moodle-xml: Moodle XML with HTML, feedback and images.")
@click.option("--output", "-o", type=click.Path(dir_okay=False), default=None,
              help="Write the export to this file (default: standard output).")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True,
              help="Which variant of each parameterised question to export.")
@click.option("--variants", type=click.IntRange(1, 100), default=1, show_default=True,
              help="Export K variants of each parameterised question (seeds SEED..SEED+K-1) as separate "
                   "questions named <id>-seed<N>.")
@click.option("--math", type=click.Choice(MATH_MODES), default="tex", show_default=True,
              help="moodle-xml: maths as TeX in \\( \\) for Moodle's MathJax filter, or as the app's MathML.")
@click.option("--visual", type=click.Choice(VISUAL_PLACEMENTS), default="feedback", show_default=True,
              help="moodle-xml: put each figure in the general feedback (seen after answering, as in the "
                   "app), in the question text, or nowhere.")
@click.option("--strict", is_flag=True, help="Exit 1 if anything was left out or approximated.")
@with_appcontext
def export_quiz_command(bank: str, output_format: str, output: str | None, seed: int, variants: int,
                        math: str, visual: str, strict: bool) -> None:
    """Export a bank (an id served from QUIZ_DIR, or a .yaml file) for Moodle.

    Whatever the format cannot carry is reported on standard error, one warning per line.
    """
    source = _load_bank(bank)
    result = export_bank(source, output_format, seed=seed, variants=variants, math_mode=math, visual=visual,
                         render=app_renderer())
    where = _deliver(result.text, output, result.warnings)
    click.echo(f"exported {result.questions} question(s) of {source.id!r} as {output_format}{where}; "
               f"{len(result.warnings)} warning(s)", err=True)
    if strict and result.warnings:
        raise SystemExit(EXIT_PROBLEM)


@click.command("selftest-quizzes")
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--seeds", type=click.IntRange(1, 10_000), default=20, show_default=True,
              help="Check parameterised questions with seeds 0..N-1 (others need one).")
@with_appcontext
def selftest_quizzes_command(paths: tuple[str, ...], seeds: int) -> None:
    """Check that every question grades its own key as right and wrong answers as wrong.

    PATHS are bank files or folders (default: the served QUIZ_DIR). Exits 1 on any failure.
    """
    targets = [Path(p) for p in paths] or [Path(current_app.config["QUIZ_DIR"])]
    missing = [str(p) for p in targets if not p.exists()]
    if missing:
        _fail(f"no such file or folder: {', '.join(missing)}", EXIT_USAGE)
    report = SelfTest(seeds, app_renderer()).run_paths(targets)
    if not report.results:
        _fail("no bank files (*.yaml, *.yml) found", EXIT_PROBLEM)
    for line in format_report(report):
        click.echo(line)
    banks = len({r.bank for r in report.results})
    questions = sum(1 for r in report.results if r.question != NOT_LOADED)
    click.echo(f"{banks} bank(s), {questions} question(s), {report.passed} check(s) passed, "
               f"{len(report.failures)} failure(s)")
    if report.failures:
        raise SystemExit(EXIT_PROBLEM)


@click.command("import-moodle")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--id", "bank_id", default=None, help="The bank's id (default: from the file's name).")
@click.option("--title", default=None, help="The bank's title (default: the file's last Moodle category).")
@click.option("--output", "-o", type=click.Path(dir_okay=False), default=None,
              help="Write the bank to this file (default: standard output); an existing file is kept.")
def import_moodle_command(file: str, bank_id: str | None, title: str | None, output: str | None) -> None:
    """Import a Moodle XML file as a bank: true/false, multiple choice and numerical questions.

    What the bank cannot carry is reported on standard error, one warning per line; the bank is then checked
    as validate-quizzes checks it, and its errors are listed with their line and column. Exits 1 if it has any.
    """
    source = Path(file)
    try:
        raw = source.read_bytes() if source.stat().st_size <= MAX_INPUT_BYTES else b" " * (MAX_INPUT_BYTES + 1)
    except OSError as error:
        _fail(f"cannot read {file}: {error.strerror}", EXIT_USAGE)
    name = bank_id or slug(source.stem, set(), "imported")
    if not re.fullmatch(SLUG_PATTERN, name):
        _fail(f"--id {name!r} is not a bank id: lower-case letters, digits, - and _, at most 64", EXIT_USAGE)
    try:
        result = import_moodle_xml(raw, name, title)
    except ImportFailed as error:
        _fail(f"{file}: {error}", EXIT_PROBLEM)
    where = _deliver(result.text, output, result.warnings, new_file=True)  # never over a bank already there
    click.echo(f"imported {result.questions} question(s) as bank {name!r}{where}; {result.skipped} left out, "
               f"{len(result.warnings)} warning(s)", err=True)
    checked = load_bank_bytes(result.text.encode(), output or f"{name}.yaml")
    for error in checked.errors:
        click.echo(str(error), err=True)
    if checked.errors:
        click.echo(f"the bank has {len(checked.errors)} error(s) to fix before it can be served", err=True)
        raise SystemExit(EXIT_PROBLEM)


def init_app(app: Flask) -> None:
    app.cli.add_command(export_quiz_command)
    app.cli.add_command(selftest_quizzes_command)
    app.cli.add_command(import_moodle_command)
