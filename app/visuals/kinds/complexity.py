"""The "complexity" visual: softmax(Q Kᵀ) V costs N·M·(d + l) multiply-adds, quadratic in N when M = N.

Counts come from engine.attention_flops; wall times are measured live on the engine, so they vary.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from pydantic import Field

from app.engine import attention_flops, scaled_dot_product_attention
from app.plots.sizes import COMPLEXITY_INCHES

from .. import register
from ..base import Control, Rendered, VisualKind, VisualParams

TIMED_SIZES = 7  # points on the measured grid
COUNTED_SIZES = 48  # points on the operation-count curve
SMALLEST_N = 16
MEASUREMENT_BUDGET_SECONDS = 0.35  # repeats stop once this is spent; every size is timed at least once
MAX_REPEATS = 5


class ComplexityParams(VisualParams):
    d: int = Field(default=64, ge=1, le=256)
    l: int = Field(default=64, ge=1, le=256)  # noqa: E741 - the value width's name in the question
    max_n: int = Field(default=512, ge=16, le=2048)


def size_grid(max_n: int, points: int) -> np.ndarray:
    """Distinct integer sizes spaced evenly on a log scale, up to max_n.

    The grid starts at 16, or lower when max_n is small, so that it always spans a factor of 8
    and a slope can be fitted.
    """
    smallest = max(2, min(SMALLEST_N, max_n // 8))
    return np.unique(np.round(np.geomspace(smallest, max_n, points)).astype(int))


def measure_attention_seconds(sizes, d: int, l: int, *, timer: Callable[[], float] = time.perf_counter,
                              budget_seconds: float = MEASUREMENT_BUDGET_SECONDS,
                              max_repeats: int = MAX_REPEATS) -> np.ndarray:
    """Best wall time of engine.scaled_dot_product_attention with N = M = each size, float32.

    Every size is timed once, smallest first; then further rounds repeat each size while the next
    run is expected to fit in the budget. The minimum of the repeats is the least disturbed by other
    work on the machine.
    """
    rng = np.random.default_rng(0)
    inputs = []
    for n in sizes:
        q = rng.standard_normal((n, d), dtype=np.float32)  # (N, d)
        k = rng.standard_normal((n, d), dtype=np.float32)  # (M, d), M = N
        v = rng.standard_normal((n, l), dtype=np.float32)  # (M, l)
        inputs.append((q, k, v))
    scaled_dot_product_attention(*inputs[0])  # warm-up: first-call costs are not attention's

    best = np.full(len(inputs), np.inf)
    start = timer()
    for repeat in range(max_repeats):
        for index, (q, k, v) in enumerate(inputs):
            if repeat > 0 and timer() - start + best[index] > budget_seconds:
                continue
            before = timer()
            scaled_dot_product_attention(q, k, v)
            best[index] = min(best[index], timer() - before)
    return best


def fitted_slope(sizes: np.ndarray, seconds: np.ndarray) -> float:
    """Least-squares slope of log(time) against log(N) over the larger half of the sizes.

    There the N·M term dominates; small N is mostly fixed per-call overhead.
    """
    larger = slice(len(sizes) // 2, None)
    slope, _ = np.polyfit(np.log(sizes[larger]), np.log(seconds[larger]), 1)
    return float(slope)


@dataclass(frozen=True)
class ComplexityResult:
    d: int
    l: int  # noqa: E741
    max_n: int
    counted_n: np.ndarray  # N = M for the count curves
    score_multiply_adds: np.ndarray  # Q Kᵀ: N·M·d
    value_multiply_adds: np.ndarray  # weights · V: N·M·l
    total_multiply_adds: np.ndarray  # N·M·(d + l), engine.attention_flops
    total_at_max: int  # attention_flops(max_n, max_n, d, l)
    timed_n: np.ndarray  # N = M for the wall-time measurements
    seconds: np.ndarray  # best measured time per size
    slope: float  # fitted on log-log over the larger half


def complexity_result(params: ComplexityParams, seconds: np.ndarray | None = None) -> ComplexityResult:
    """Counts from the engine, and wall times measured now unless `seconds` is given (tests pass them)."""
    counted_n = size_grid(params.max_n, COUNTED_SIZES)
    timed_n = size_grid(params.max_n, TIMED_SIZES)
    if seconds is None:
        seconds = measure_attention_seconds(timed_n, params.d, params.l)
    seconds = np.asarray(seconds, dtype=float)
    if seconds.shape != timed_n.shape:
        raise ValueError(
            f"expected {timed_n.size} timings, one per size {timed_n.tolist()}, got {seconds.size}"
        )
    return ComplexityResult(
        d=params.d,
        l=params.l,
        max_n=params.max_n,
        counted_n=counted_n,
        score_multiply_adds=np.array([attention_flops(n, n, params.d, 0) for n in counted_n], dtype=float),
        value_multiply_adds=np.array([attention_flops(n, n, 0, params.l) for n in counted_n], dtype=float),
        total_multiply_adds=np.array([attention_flops(n, n, params.d, params.l) for n in counted_n],
                                     dtype=float),
        total_at_max=attention_flops(params.max_n, params.max_n, params.d, params.l),
        timed_n=timed_n,
        seconds=seconds,
        slope=fitted_slope(timed_n, seconds),
    )


@register
class ComplexityKind(VisualKind):
    name = "complexity"
    title = "The cost of attention grows with N·M"
    Params = ComplexityParams
    controls = (
        Control("d", "Query/key width d", "int", min=1, max=256, step=1),
        Control("l", "Value width l", "int", min=1, max=256, step=1),
        Control("max_n", "Largest sequence length N (= M)", "int", min=16, max=2048, step=1),
    )
    learn = "/learn/complexity"
    inches = COMPLEXITY_INCHES

    def render(self, params: ComplexityParams) -> Rendered:
        # Drawing imports matplotlib (about a second): only when a figure is drawn.
        from app.plots.complexity import draw_complexity
        from app.plots.figure import to_png

        result = complexity_result(params)
        figure, alt = draw_complexity(result)
        caption = (
            "Left: exact counts from the engine's attention_flops: Q Kᵀ needs N·M·d multiply-adds and "
            "weights·V needs N·M·l, so softmax(Q Kᵀ)V is O(N·M·(d + l)); the softmax itself adds only "
            "O(N·M). Right: wall times of the engine's scaled_dot_product_attention, measured on this "
            "server when the figure was drawn (float32, best of up to five runs in about a third of a "
            "second), so they change from render to render. At small N fixed per-call overhead dominates, and matrix "
            "libraries get more efficient as matrices grow, so measured slopes are often below 2; the "
            "slope is fitted on the larger half of the sizes only. On a busy machine a multi-threaded "
            "matrix product can stall for milliseconds, which shows up as a sudden jump."
        )
        return Rendered(image=to_png(figure), mimetype="image/png", alt=alt, caption=caption)
