"""`python -m bench`: measure the goals and write docs/benchmarks.md, docs/benchmarks.png and bench/last-run.json.

Options: --quick (few rounds, 3 s load runs: a smoke test, not for the doc's numbers), --only
engine,plots,http,model (skip the other sections; the doc says so), --seconds N (each wrk run, default 10),
--keep (with --only: carry the other sections over from bench/last-run.json), --profile (profile
every goal, not only the missed ones), --kinds a,b (the plots section for these kinds only).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from . import machine
from .timing import ROOT

SECTION_KEYS = {"engine": ("engine",), "plots": ("plots",), "http": ("load", "cold_start", "why"), "model": ("model",)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", default="engine,plots,http,model")
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--kinds", default=None,
                        help="with the plots section: only these visual kinds, comma-separated (a quick check "
                             "while working on a kind; use it with --quick or --out, not for the doc)")
    parser.add_argument("--out", default=None,
                        help="where the doc goes: docs/benchmarks.md, or with --quick a temporary folder "
                             "(a smoke test never overwrites the doc or bench/last-run.json)")
    parser.add_argument("--keep", action="store_true",
                        help="with --only: carry the other sections over from bench/last-run.json (the doc "
                             "says which sections come from which run)")
    args = parser.parse_args(argv)
    sections = set(args.only.split(","))
    unknown = sections - set(SECTION_KEYS)
    if unknown:
        parser.error(f"unknown section(s) {', '.join(sorted(unknown))}; the sections are {', '.join(SECTION_KEYS)}")
    seconds = 3 if args.quick else args.seconds
    results: dict = {"machine": machine.describe(), "started": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
                     "quick": args.quick, "argv": sys.argv[1:] if argv is None else argv, "timings": {}}
    began = time.perf_counter()

    def section(name: str, run):
        start, load = time.perf_counter(), os.getloadavg()
        value = run()
        results["timings"][name] = {"seconds": time.perf_counter() - start, "load_before": load,
                                    "load_after": os.getloadavg()}
        return value

    if "engine" in sections:
        from . import engine

        print("engine: MultiHeadAttention against torch.nn.MultiheadAttention ...", flush=True)
        results["engine"] = section("engine", lambda: engine.run(rounds=9 if args.quick else 41, profile=args.profile))
    if "plots" in sections:
        from . import plots

        print("plots: cold renders against naive pyplot ...", flush=True)
        results["plots"] = section("plots", lambda: plots.run(rounds=3 if args.quick else 7,
                                                              batch_seconds=0.3 if args.quick else 0.6,
                                                              profile=args.profile,
                                                              kinds=args.kinds.split(",") if args.kinds else None))
    if "http" in sections:
        if shutil.which("wrk") is None:
            print("wrk is not installed (apt-get install wrk); skipping the HTTP section", file=sys.stderr)
        else:
            from . import http

            print("http: cold starts against a bare gunicorn ...", flush=True)
            results["cold_start"] = section("cold start", lambda: http.cold_start(rounds=1 if args.quick else 3))
            print(f"http: answer pages under load, {seconds} s per wrk run, then worker memory ...", flush=True)
            results["load"] = section("load", lambda: http.load(seconds, rounds=2 if args.quick else 3))
            print("http: explaining the server goals not met ...", flush=True)
            results["why"] = section("why", lambda: http.explain(results["load"], results["cold_start"], args.profile))
    if "model" in sections:
        if shutil.which("wrk") is None:
            print("wrk is not installed (apt-get install wrk); skipping the model section", file=sys.stderr)
        else:
            from . import model

            print("model: forward pass against transformers, answer pages, memory, first figure ...", flush=True)
            results["model"] = section("model", lambda: model.run(rounds=9 if args.quick else 21, seconds=seconds,
                                                                  load_rounds=2 if args.quick else 3,
                                                                  launches=1 if args.quick else 3))
    results["machine"]["load_average_end"] = os.getloadavg()
    raw = ROOT / "bench" / "last-run.json"
    if args.quick:  # a smoke test never overwrites bench/last-run.json: its raw numbers go beside its doc
        if args.out is None:
            quick_dir = Path(tempfile.gettempdir()) / "attention-quiz-bench-quick"
            quick_dir.mkdir(exist_ok=True)
            args.out = str(quick_dir / "benchmarks.md")
        written = Path(args.out).parent / "last-run.json"
    else:
        written = raw
    args.out = args.out or str(ROOT / "docs" / "benchmarks.md")
    if args.keep and raw.exists() and "goals" in (previous := json.loads(raw.read_text())):
        carried = {}
        for name, keys in SECTION_KEYS.items():
            if name not in sections and all(k in previous for k in keys):
                for k in keys:
                    results[k] = previous[k]
                carried[name] = previous.get("carried_over", {}).get(name, previous["started"])
        results["carried_over"] = carried
    results["elapsed_s"] = time.perf_counter() - began
    from . import report

    results["goals"] = [dict(zip(("goal", "target", "measured", "met"), row)) for row in report.goals(results)]
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    written.write_text(json.dumps(results, indent=1, default=str) + "\n")
    report.write(results, args.out)
    print(f"wrote {args.out} (raw numbers in {written}) in {results['elapsed_s'] / 60:.1f} minutes", flush=True)
    for row in results["goals"]:
        met = {True: "met", False: "NOT MET", None: "not measured"}[row["met"]]
        print(f"  {met:>12}  {row['goal']}: {row['measured']} (target {row['target']})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
