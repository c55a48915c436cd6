"""Plots: each visual kind's cold render against the naive pyplot render of the same figure
(bench.naive_plots), each in its own worker process, interleaved ABAB.

Beside them, in the same rounds, a PNG kind's drawing alone (bench._worker "drawing": everything but the image's
encoding, the work both renders share): its time over the naive's is the lowest ratio that any way of turning
the drawing into an image could reach. And first the issue's own reference figure, a 10×10 annotated heatmap
(bench.reference), both ways. A kind that fails to render (e.g. while it is being rewritten) is reported with its
error, and the others still run.
"""

from __future__ import annotations

from .timing import Worker, WorkerFailed, interleave

GOAL_RATIO = 0.75


def kind_names() -> list[str]:
    from app.visuals import KINDS, get_kind

    get_kind("soft-lookup")  # registers every kind
    return sorted(KINDS)


def reference(rounds: int, batch_seconds: float) -> dict:
    """The issue's 10×10 annotated heatmap, the app's way against the naive way."""
    workers = {"ours": Worker("reference"), "naive": Worker("reference-naive")}
    try:
        timed = interleave(workers, rounds, batch_seconds=batch_seconds)
    finally:
        for worker in workers.values():
            worker.close()
    return {"ours_ms": timed.median("ours") * 1e3, "naive_ms": timed.median("naive") * 1e3,
            "ratio": timed.ratio("ours", "naive"), "ratio_iqr": timed.ratio_spread("ours", "naive")}


def run(rounds: int = 7, batch_seconds: float = 0.6, profile: bool = False, kinds: list[str] | None = None) -> dict:
    from app.visuals import get_kind

    rows = []
    print("  reference, a 10×10 annotated heatmap: ...", flush=True)
    reference_row = reference(rounds, batch_seconds)
    print(f"  reference: {reference_row['ratio']:.2f}x naive", flush=True)
    for name in kinds or kind_names():
        workers = {}
        try:
            workers["ours"] = Worker("render", name)
            workers["naive"] = Worker("naive", name)
            if get_kind(name).format == "png":  # an SVG is written as it is drawn: no drawing without the image
                workers["drawing"] = Worker("drawing", name)
            timed = interleave(workers, rounds, batch_seconds=batch_seconds)
            row = {"kind": name, "ours_ms": timed.median("ours") * 1e3, "naive_ms": timed.median("naive") * 1e3,
                   "ratio": timed.ratio("ours", "naive"), "ratio_iqr": timed.ratio_spread("ours", "naive"),
                   "ratios": timed.ratios("ours", "naive"), "calls_per_batch": timed.calls}
            if "drawing" in workers:
                row |= {"drawing_ms": timed.median("drawing") * 1e3, "floor": timed.ratio("drawing", "naive")}
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
            floor = f"; drawing alone {row['floor']:.2f}x" if "floor" in row else ""
            print(f"  {name}: {row['ratio']:.2f}x naive ({row['ours_ms']:.0f} ms vs {row['naive_ms']:.0f} ms{floor})",
                  flush=True)
        rows.append(row)
    return {"goal_ratio": GOAL_RATIO, "rounds": rounds, "reference": reference_row, "kinds": rows}
