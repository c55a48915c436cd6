"""Engine: our MultiHeadAttention against torch.nn.MultiheadAttention, interleaved in the same run.

The goal is at the app's working size (N = 16, d_model = 128, 4 heads); N = 256 (d_model 256,
8 heads) is reported without a goal. Both return the output and the per-head weights, and both
must agree to 1e-5 in float32.
"""

from __future__ import annotations

import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from .timing import ROOT, Worker, interleave

GOAL_SIZE = (16, 128, 4)
GOAL_RATIO = 0.8
REPORTED_SIZES = [(256, 256, 8)]
TOLERANCE = 1e-5


def check_outputs(sizes) -> list[dict]:
    """Our outputs and per-head weights against torch's, float32, same weights: max |difference|."""
    import torch

    from ._worker import _mha, torch_model

    torch.set_grad_enabled(False)
    rows = []
    for n, d_model, num_heads in sizes:
        mha, x = _mha(n, d_model, num_heads)
        ours_out, ours_weights = mha(x)  # (N, d_model), (h, N, N)
        xt = torch.from_numpy(x.copy()).unsqueeze(0)
        torch_out, torch_weights = torch_model(mha)(xt, xt, xt, need_weights=True, average_attn_weights=False)
        rows.append({
            "size": (n, d_model, num_heads),
            "output_diff": float(np.abs(ours_out - torch_out[0].numpy()).max()),
            "weights_diff": float(np.abs(ours_weights - torch_weights[0].numpy()).max()),
            "dtype": str(ours_out.dtype),
            "shapes": [list(ours_out.shape), list(ours_weights.shape)],
        })
    return rows


def run(rounds: int = 41, profile: bool = False) -> dict:
    results: dict = {"goal_ratio": GOAL_RATIO, "sizes": []}
    for size in [GOAL_SIZE, *REPORTED_SIZES]:
        n, d_model, num_heads = size
        workers = {"ours": Worker("ours", n, d_model, num_heads), "torch": Worker("torch", n, d_model, num_heads)}
        try:
            # Many short batches: the two halves of a pair run within a tenth of a second of each other.
            timed = interleave(workers, rounds, batch_seconds=0.05 if n < 256 else 0.1)
        finally:
            for worker in workers.values():
                worker.close()
        results["sizes"].append({
            "size": size,
            "goal": GOAL_RATIO if size == GOAL_SIZE else None,
            "ours_ms": timed.median("ours") * 1e3,
            "torch_ms": timed.median("torch") * 1e3,
            "ratio": timed.ratio("ours", "torch"),
            "ratio_iqr": timed.ratio_spread("ours", "torch"),
            "fast_decile_ratio": timed.quantile_ratio("ours", "torch", 0.1),
            "ours_fast_ms": sorted(timed.times["ours"])[len(timed.times["ours"]) // 10] * 1e3,
            "torch_fast_ms": sorted(timed.times["torch"])[len(timed.times["torch"]) // 10] * 1e3,
            "ratios": timed.ratios("ours", "torch"),
            "rounds": rounds,
            "calls_per_batch": timed.calls,
        })
    results["outputs"] = check_outputs([GOAL_SIZE, *REPORTED_SIZES])
    goal_row = results["sizes"][0]
    if profile or goal_row["ratio"] > GOAL_RATIO:
        results["line_costs"] = line_costs(*GOAL_SIZE)
    return results


# --- why: where one forward pass spends its time, line by line ----------------------------------


def line_costs(n: int, d_model: int, num_heads: int, calls: int = 400) -> dict:
    """Time per source line of app/engine/ over `calls` forward passes at this size (in this process).

    A line's time includes what it calls outside app/engine/ (NumPy, Python's builtins) but not the
    lines of another engine function it calls, which count on their own (exclusive times). Tracing
    costs about a microsecond per line, which inflates cheap lines; `untraced_us` is the pass
    without the tracer, for scale.
    """
    from ._worker import _mha

    mha, x = _mha(n, d_model, num_heads)
    engine_dir = str(ROOT / "app" / "engine")
    for _ in range(50):
        mha(x)
    start = time.perf_counter()
    for _ in range(calls):
        mha(x)
    untraced = (time.perf_counter() - start) / calls
    costs: dict[tuple[str, int], float] = defaultdict(float)
    hits: dict[tuple[str, int], int] = defaultdict(int)
    open_line: dict[int, tuple[tuple[str, int], float]] = {}  # frame id -> (its current line, since when)
    paused: dict[int, tuple[str, int]] = {}  # caller frame id -> its line, while an engine callee runs

    def close(frame_id: int, now: float) -> tuple[str, int] | None:
        entry = open_line.pop(frame_id, None)
        if entry is None:
            return None
        costs[entry[0]] += now - entry[1]
        return entry[0]

    def local(frame, event, arg):
        now = time.perf_counter()
        close(id(frame), now)
        if event == "line":
            key = (frame.f_code.co_filename, frame.f_lineno)
            hits[key] += 1
            open_line[id(frame)] = (key, time.perf_counter())
        elif event == "return" and frame.f_back is not None:
            resumed = paused.pop(id(frame.f_back), None)
            if resumed is not None:  # the caller's line goes on (e.g. unpacking what this returned)
                open_line[id(frame.f_back)] = (resumed, time.perf_counter())
        return local

    def global_trace(frame, event, arg):
        if not frame.f_code.co_filename.startswith(engine_dir):
            return None
        if frame.f_back is not None:  # exclusive times: the caller's line stops while this frame runs
            key = close(id(frame.f_back), time.perf_counter())
            if key is not None:
                paused[id(frame.f_back)] = key
        return local

    sys.settrace(global_trace)
    try:
        start = time.perf_counter()
        for _ in range(calls):
            mha(x)
        traced = (time.perf_counter() - start) / calls
    finally:
        sys.settrace(None)
    rows = []
    for (path, line), seconds in costs.items():
        source = Path(path).read_text().splitlines()[line - 1].strip()
        rows.append({"where": f"{Path(path).relative_to(ROOT)}:{line}", "source": source[:110],
                     "us_per_call": seconds / calls * 1e6, "hits_per_call": hits[(path, line)] / calls})
    rows.sort(key=lambda row: row["us_per_call"], reverse=True)
    return {"size": (n, d_model, num_heads), "untraced_us": untraced * 1e6, "traced_us": traced * 1e6,
            "lines": rows[:15]}
