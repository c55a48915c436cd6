"""Plots: each visual kind's cold render against the naive pyplot render of the same figure
(bench.naive_plots), each in its own worker process, interleaved ABAB.

A kind that fails to render (e.g. while it is being rewritten) is reported with its error, and the
others still run.
"""

from __future__ import annotations

from .timing import Worker, WorkerFailed, interleave

GOAL_RATIO = 0.75


def kind_names() -> list[str]:
    from app.visuals import KINDS, get_kind

    get_kind("soft-lookup")  # registers every kind
    return sorted(KINDS)


def run(rounds: int = 7, batch_seconds: float = 0.6, profile: bool = False, kinds: list[str] | None = None) -> dict:
    rows = []
    for name in kinds or kind_names():
        workers = {}
        try:
            workers["ours"] = Worker("render", name)
            workers["naive"] = Worker("naive", name)
            timed = interleave(workers, rounds, batch_seconds=batch_seconds)
            row = {"kind": name, "ours_ms": timed.median("ours") * 1e3, "naive_ms": timed.median("naive") * 1e3,
                   "ratio": timed.ratio("ours", "naive"), "ratio_iqr": timed.ratio_spread("ours", "naive"),
                   "ratios": timed.ratios("ours", "naive"), "calls_per_batch": timed.calls}
            if profile or row["ratio"] > GOAL_RATIO:
                # Why: where the app's render and the naive one spend their time (cProfile, 5 renders each).
                row["profile"] = {"ours": workers["ours"].profile(5), "naive": workers["naive"].profile(5)}
        except WorkerFailed as error:
            row = {"kind": name, "error": str(error)}
            print(f"  {name}: FAILED to render ({row['error'][:300]})", flush=True)
        finally:
            for worker in workers.values():
                worker.close()
        if "ratio" in row:
            print(f"  {name}: {row['ratio']:.2f}x naive ({row['ours_ms']:.0f} ms vs {row['naive_ms']:.0f} ms)",
                  flush=True)
        rows.append(row)
    return {"goal_ratio": GOAL_RATIO, "rounds": rounds, "kinds": rows}
