"""Plot figures: a cold render of each visual kind (default params) against the naive pyplot
baseline (bench.naive_plots), each in its own worker process, interleaved."""

from __future__ import annotations

from .timing import Worker, interleave


def kind_names() -> list[str]:
    from app.visuals import KINDS, get_kind

    get_kind("soft-lookup")  # registers every kind
    return sorted(KINDS)


def run(rounds: int = 7) -> list[dict]:
    rows = []
    for name in kind_names():
        workers = {"ours": Worker("render", name), "naive": Worker("naive", name),
                   "no layout": Worker("render-no-layout", name)}
        try:
            timed = interleave(workers, rounds, batch_seconds=0.6)
        finally:
            for worker in workers.values():
                worker.close()
        rows.append({"kind": name, "ours_ms": timed.median("ours") * 1e3, "naive_ms": timed.median("naive") * 1e3,
                     "ratio": timed.ratio("ours", "naive"), "ratio_iqr": timed.ratio_spread("ours", "naive"),
                     "no_layout_ratio": timed.ratio("no layout", "naive")})
    return rows
