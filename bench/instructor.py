"""The instructor's bank page on a big class, beside its baseline from the same run, written to the "Instructor
bank page" section of docs/benchmarks.md:

- the seed bank with ATTEMPTS finished attempts of its 9 questions, in a new SQLite database (one attempt answered
  through the JSON API, then copied row by row with new attempt ids);
- the page as an instructor loads it (`GET /instructor/banks/<seed bank>`, signed in, in-process through Flask's
  test client) once its answers are checked against the current key, the median of ROUNDS loads;
- the baseline: what the page did before tries stored the key version that scored them (schema 4), the regrade
  dry run over every answer plus the report, in the same process, the median of ROUNDS;
- the first look after an upgrade from a release without `graded_as` (every try's set to NULL): it grades and
  marks every answer once.

`python -m bench.instructor [--attempts N] [--out docs/benchmarks.md]`. It starts no server.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import secrets
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from . import machine
from .hostile import publish
from .timing import ROOT

SEED_BANK = "attention-transformers"
ATTEMPTS, ROUNDS = 10_000, 5
PASSWORD = "bench-instructor-password"


def _app(folder: Path):
    from werkzeug.security import generate_password_hash

    from app import create_app

    (folder / "quizzes").mkdir()
    shutil.copy(ROOT / "quizzes" / f"{SEED_BANK}.yaml", folder / "quizzes")
    return create_app({"SECRET_KEY": secrets.token_hex(32), "QUIZ_DIR": str(folder / "quizzes"),
                       "DATABASE_URL": f"sqlite:///{folder / 'bench.sqlite3'}", "RATELIMIT_ENABLED": False,
                       "INSTRUCTOR_PASSWORD_HASH": generate_password_hash(PASSWORD, method="pbkdf2:sha256:1000")})


def _fill(app, attempts: int) -> int:
    """One attempt answered through the API (every answer its question's first option), then copies of its rows."""
    from sqlalchemy import insert, select

    from app import db

    bank = app.extensions["banks"].banks[SEED_BANK]
    student = app.test_client()
    attempt = student.post(f"/api/banks/{SEED_BANK}/attempts").get_json()["attempt"]
    for question in bank.questions:
        first = question.options[0].id
        answer = (first == "true") if question.type == "true_false" else [first] if question.type == \
            "multiple_choice" else first
        reply = student.post(f"/api/banks/{SEED_BANK}/attempts/{attempt}/questions/{question.id}/answer",
                             json={"answer": answer})
        assert reply.status_code == 200, reply.get_data(as_text=True)
    with app.extensions["db_engine"].begin() as connection:
        rows = {table: [dict(r) for r in connection.execute(select(table).where(table.c.attempt_id == attempt))
                        .mappings()] for table in (db.responses, db.tries)}
        first = dict(connection.execute(select(db.attempts).where(db.attempts.c.id == attempt)).mappings().one())
        copies = [secrets.token_hex(16) for _ in range(attempts - 1)]
        connection.execute(insert(db.attempts), [{**first, "id": copy} for copy in copies])
        for table, stored in rows.items():
            connection.execute(insert(table), [{**{k: v for k, v in row.items() if k != "id"}, "attempt_id": copy}
                                               for copy in copies for row in stored])
    return len(bank.questions)


def _signed_in(app):
    instructor = app.test_client()
    page = instructor.get("/instructor/login").get_data(as_text=True)
    token = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)
    assert instructor.post("/instructor/login", data={"csrf_token": token, "password": PASSWORD}).status_code in (302, 303)
    return instructor


def _seconds(run) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def run(attempts: int = ATTEMPTS, rounds: int = ROUNDS) -> dict:
    from sqlalchemy import update

    from app import db
    from app.instructor import regrade, report

    logging.disable(logging.WARNING)
    with tempfile.TemporaryDirectory(prefix="bench-instructor-") as folder:
        app = _app(Path(folder))
        questions = _fill(app, attempts)
        instructor, engine = _signed_in(app), app.extensions["db_engine"]
        bank = app.extensions["banks"].banks[SEED_BANK]
        path = f"/instructor/banks/{SEED_BANK}"

        def page():
            assert instructor.get(path).status_code == 200

        def old_page():  # the view's work before schema 4: every answer graded again, then the report
            with app.test_request_context():
                regrade.regrade(bank, dry_run=True, allow_lower=True)
                report.bank_report(engine, bank)

        with engine.begin() as connection:
            connection.execute(update(db.tries).values(graded_as=None))  # as an upgraded database has them
        first_look = _seconds(page)
        with app.app_context():
            after = regrade.regrade(bank, dry_run=True, allow_lower=True, stale_only=True).checked
        pages, old_pages = [], []
        for _ in range(rounds):  # alternating, so both see the same machine
            pages.append(_seconds(page))
            old_pages.append(_seconds(old_page))
        engine.dispose()
    return {"attempts": attempts, "answers": attempts * questions, "rounds": rounds, "first_look_s": first_look,
            "checked_after_first_look": after, "page_s": pages, "old_page_s": old_pages}


def section(results: dict) -> list[str]:
    measured = results["instructor"]
    page, old = statistics.median(measured["page_s"]), statistics.median(measured["old_page_s"])
    return [
        "## Instructor bank page",
        "",
        f"Written by `python -m bench.instructor` on {results['started']} from one run of "
        f"{results['elapsed_s'] / 60:.1f} minutes (load average {', '.join(f'{x:.2f}' for x in results['load'])} "
        f"at the start), in one process through Flask's test client, on SQLite. The seed bank with "
        f"{measured['attempts']:,} finished attempts of its 9 questions ({measured['answers']:,} answers, one "
        "attempt answered through the API, then copied). The raw numbers are in `bench/instructor-last-run.json`.",
        "",
        "| | measured | baseline (same run) | |",
        "|---|---|---|---|",
        f"| `GET /instructor/banks/{SEED_BANK}`, answers checked against the current key, median of "
        f"{measured['rounds']} | **{page:.2f} s** | {old:.2f} s: every answer graded again (this release's "
        f"regrade, the command's full pass), then the report: the page's work before schema 4 ({page / old:.2f}×) "
        "| no goal |",
        f"| the first look after an upgrade (every try without `graded_as`) | **{measured['first_look_s']:.2f} s**, "
        f"once; the next check grades {measured['checked_after_first_look']} answers | | no goal |",
        "",
        "The page grades again only the answers with a try scored under another version of its question "
        "(docs/instructors.md). What is left is the report itself: every answer read from the database, counted "
        "by option, and the discrimination computed per question.",
        "",
    ]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.instructor", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--attempts", type=int, default=ATTEMPTS)
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--out", default=str(ROOT / "docs" / "benchmarks.md"))
    args = parser.parse_args(argv)
    began = time.perf_counter()
    results: dict = {"machine": machine.describe(), "started": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
                     "load": list(os.getloadavg())}
    results["instructor"] = run(args.attempts, args.rounds)
    results["elapsed_s"] = time.perf_counter() - began
    publish(results, section(results), Path(args.out), "instructor", "Instructor bank page")
    return 0


if __name__ == "__main__":
    sys.exit(main())
