"""Why a server goal was missed: small in-process measurements, each in a fresh process.

The app is served as bench.http serves it: every bundled bank but the real model's (bench.model's goals).
`python -m bench.why memory` - a worker's memory step by step: the app loaded, matplotlib imported,
then the default figure of every kind the banks show drawn at 1x and 2x, wide and narrow, in one thread
(smaps_rollup).
`python -m bench.why create_app` - what the app's start-up costs: imports and create_app, with
cProfile's costliest calls.
`python -m bench.why answer_page` - one answer page through Flask's test client against the static
file, interleaved, and cProfile's costliest calls of the answer page (`model_answer_page`: of the real-model
bank's pages).
Each prints one JSON object. bench.http runs them when the goal they explain is not met (or --profile).
"""

from __future__ import annotations

import cProfile
import gc
import json
import os
import pstats
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .timing import ROOT


def run(what: str, env: dict | None = None, timeout: float = 300) -> dict:
    """`python -m bench.why WHAT` in a fresh process; its JSON, or {"error": ...}."""
    out = subprocess.run([sys.executable, "-m", "bench.why", what], cwd=ROOT, capture_output=True, text=True,
                         env={**os.environ, **(env or {})}, timeout=timeout)
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    if out.returncode or not lines:
        return {"error": (out.stderr or out.stdout)[-1500:]}
    return json.loads(lines[-1])


def _rollup() -> dict:
    values = {}
    for line in open("/proc/self/smaps_rollup"):
        parts = line.split()
        if parts[0] in ("Rss:", "Anonymous:"):
            values[parts[0][:-1].lower() + "_mb"] = int(parts[1]) / 1024
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            values["peak_mb"] = int(line.split()[1]) / 1024
    return values


def _config(instance: Path, model: bool = False) -> dict:
    """The app as bench.http serves it (every bundled bank but the real model's), or with `model` as
    bench.model does (every bundled bank); SQLite in `instance`."""
    from .http import engine_banks

    banks = {} if model else {"QUIZ_DIR": str(engine_banks(instance))}
    return {"SECRET_KEY": "bench-" + os.urandom(16).hex(), "DATABASE_URL": f"sqlite:///{instance / 'w.sqlite3'}",
            **banks}


def memory() -> dict:
    steps = []
    from app import create_app
    from app.bank import banks

    instance = Path(tempfile.mkdtemp(prefix="aq-bench-why-"))
    try:
        flask_app = create_app(_config(instance))
        with flask_app.app_context():
            shown = sorted({question.visual.kind for bank in banks().banks.values() for question in bank.questions
                            if question.visual})
        steps.append({"step": "create_app (no matplotlib yet)", **_rollup()})
        import matplotlib.backends.backend_agg  # noqa: F401
        import matplotlib.figure  # noqa: F401

        steps.append({"step": "matplotlib imported", **_rollup()})
        from app.visuals import get_kind

        failed = []
        for index, name in enumerate(shown):
            kind = get_kind(name)
            try:
                params = kind.parse({})
                computed = kind.describe(params)
                for scale in (1, 2):
                    for layout in ("wide", "narrow"):
                        kind.picture(params, computed, scale, layout)
            except Exception as error:  # a kind being rewritten: measured without it
                failed.append(f"{name}: {type(error).__name__}")
            gc.collect()
            if index == 0:
                steps.append({"step": f"first kind drawn ({name}, 4 variants)", **_rollup()})
        steps.append({"step": f"every kind the banks show drawn ({len(shown)} kinds x 4 variants, one thread)",
                      **_rollup()})
        return {"steps": steps, "failed": failed}
    finally:
        shutil.rmtree(instance, ignore_errors=True)


def create_app_cost() -> dict:
    start = time.perf_counter()
    import app  # noqa: F401  (Flask, pydantic, SQLAlchemy, NumPy, ...)

    imported = time.perf_counter() - start
    instance = Path(tempfile.mkdtemp(prefix="aq-bench-why-"))
    try:
        profiler = cProfile.Profile()
        start = time.perf_counter()
        profiler.enable()
        app.create_app(_config(instance))
        profiler.disable()
        created = time.perf_counter() - start
    finally:
        shutil.rmtree(instance, ignore_errors=True)
    return {"import_app_s": imported, "create_app_s": created, "top": _top(profiler, 1, own=False)}


def answer_page(bank: str = "attention-transformers") -> dict:
    from app import create_app
    from bench.http import MODEL_BANK, seed_questions

    instance = Path(tempfile.mkdtemp(prefix="aq-bench-why-"))
    try:
        flask_app = create_app({**_config(instance, model=bank == MODEL_BANK), "RATE_LIMIT_SUBMIT": "1000000 per minute",
                                "WTF_CSRF_ENABLED": False})
        client = flask_app.test_client()
        pages = []
        for question_id, value in seed_questions(bank):
            client.get(f"/quiz/{bank}/{question_id}")
            client.post(f"/quiz/{bank}/{question_id}", data={"answer": value})
            pages.append(f"/quiz/{bank}/{question_id}/answer")
        for page in pages:
            assert client.get(page).status_code == 200, page
        times: dict[str, list[float]] = {"answer page": [], "static file": []}
        for index in range(10):
            for name in ("answer page", "static file") if index % 2 == 0 else ("static file", "answer page"):
                start = time.perf_counter()
                for call in range(45):
                    client.get(pages[call % len(pages)] if name == "answer page" else "/static/style.css")
                times[name].append((time.perf_counter() - start) / 45)
        profiler = cProfile.Profile()
        profiler.enable()
        for call in range(90):
            client.get(pages[call % len(pages)])
        profiler.disable()
        return {"answer_page_ms": statistics.median(times["answer page"]) * 1e3,
                "static_file_ms": statistics.median(times["static file"]) * 1e3,
                "ratio": statistics.median(a / s for a, s in zip(times["answer page"], times["static file"])),
                "top": _top(profiler, 90, own=False), "top_own": _top(profiler, 90, own=True)}
    finally:
        shutil.rmtree(instance, ignore_errors=True)


def _top(profiler: cProfile.Profile, calls: int, own: bool, count: int = 14) -> list[dict]:
    stats = pstats.Stats(profiler)
    total = stats.total_tt or 1e-12
    rows = []
    for (path, line, function), (_, ncalls, tottime, cumtime, _) in stats.stats.items():
        if path.startswith("<frozen") or function in ("<built-in method builtins.__import__>",
                                                      "<built-in method builtins.exec>"):
            continue  # the import machinery wraps every import: it says nothing about which
        where = path
        for marker in ("/site-packages/", str(ROOT) + "/", "/lib/python3"):
            if marker in path:
                where = path.split(marker, 1)[1]
                break
        rows.append({"function": f"{where}:{line}({function})", "ms_per_call": (tottime if own else cumtime) / calls * 1e3,
                     "share": (tottime if own else cumtime) / total})
    rows.sort(key=lambda row: row["share"], reverse=True)
    # Cumulative lists start with the wrappers that hold everything; skip the ones at 100 %.
    return [row for row in rows if own or row["share"] < 0.995][:count]


if __name__ == "__main__":
    import logging

    logging.disable(logging.WARNING)  # the app's start-up logs are not this tool's output
    what = sys.argv[1]
    result = {"memory": memory, "create_app": create_app_cost, "answer_page": answer_page,
              "model_answer_page": lambda: answer_page("real-attention-heads")}[what]()
    print(json.dumps(result))
