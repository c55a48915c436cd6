"""`python -m bench`: run every benchmark and write docs/benchmarks.md and docs/benchmarks.png.

Options: --quick (fewer rounds, 5 s load runs: a smoke test, not for the doc), --only engine,plots,http
(skip the other sections; their part of the doc says so), --seconds N (each load scenario, default 15).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time

from . import machine
from .timing import ROOT

NO_PRERENDER = {"FLASK_PLOT_PRERENDER": "false"}
SECTION_KEYS = {"engine": ("engine",), "plots": ("plots",), "http": ("test_client", "cold_start", "load")}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", default="engine,plots,http")
    parser.add_argument("--seconds", type=int, default=15)
    parser.add_argument("--out", default=str(ROOT / "docs" / "benchmarks.md"))
    parser.add_argument("--keep", action="store_true",
                        help="with --only: carry the other sections over from bench/last-run.json (the doc "
                             "says which sections come from which run)")
    args = parser.parse_args(argv)
    sections = set(args.only.split(","))
    seconds = 5 if args.quick else args.seconds
    results: dict = {"machine": machine.describe(), "started": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
                     "quick": args.quick}
    began = time.perf_counter()
    if "engine" in sections:
        from . import engine

        print("engine: ours against torch, and sgemm ...", flush=True)
        results["engine"] = engine.run(rounds=7 if args.quick else 15, quick=args.quick)
    if "plots" in sections:
        from . import plots

        print("plots: cold renders against naive pyplot ...", flush=True)
        results["plots"] = plots.run(rounds=3 if args.quick else 7)
    if "http" in sections:
        if shutil.which("wrk") is None:
            print("wrk is not installed (apt-get install wrk); skipping the HTTP section", file=sys.stderr)
        else:
            from . import http

            print("http: cached plot against a static file (test client) ...", flush=True)
            results["test_client"] = http.test_client_cached_vs_static(rounds=6 if args.quick else 15)
            print("http: cold starts ...", flush=True)
            # "as shipped" is create_app's defaults: pre-render on, disk cache in the instance folder,
            # which each run starts empty. A restart finds the figures its predecessor left on disk.
            results["cold_start"] = {
                "as shipped (empty disk cache)": http.cold_start("bench.wsgi:app"),
                "restart (warm disk cache)": http.cold_start("bench.wsgi:app", warm_disk_cache=True),
                "no pre-render (empty disk cache)": http.cold_start("bench.wsgi:app", NO_PRERENDER),
            }
            for label, env in (("as shipped", {}), ("no pre-render", NO_PRERENDER)):
                print(f"http: gunicorn under load ({label}), {seconds} s per scenario ...", flush=True)
                results.setdefault("load", {})[label] = http.load_scenarios("bench.wsgi:app", seconds, env)
    results["machine"]["load_average_end"] = __import__("os").getloadavg()
    raw = ROOT / "bench" / "last-run.json"
    if args.keep and raw.exists():
        previous = json.loads(raw.read_text())
        carried = {}
        for section, keys in SECTION_KEYS.items():
            if section not in sections and all(k in previous for k in keys):
                for k in keys:
                    results[k] = previous[k]
                carried[section] = previous.get("carried_over", {}).get(section, previous["started"])
        results["carried_over"] = carried
    results["elapsed_s"] = time.perf_counter() - began
    from . import report

    (ROOT / "docs").mkdir(exist_ok=True)
    raw.write_text(json.dumps(results, indent=1, default=str))
    report.write(results, args.out)
    print(f"wrote {args.out} (raw numbers in {raw.relative_to(ROOT)})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
