"""Interleaved (ABAB) timing of contenders that each live in their own worker process.

Every figure the benchmarks report is a ratio of two times measured in alternation in one run:
the machine is shared and noisy, so an absolute time means little and a ratio of neighbours a lot.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Idle OpenBLAS threads spin for about 0.1 s after a call (OpenMP's for less): rest that long
# between batches so one worker's spinning threads do not steal the cores from the next.
REST_SECONDS = 0.15


class Worker:
    """A `python -m bench._worker KIND ARGS...` process that times `calls` calls on request."""

    def __init__(self, kind: str, *args, env: dict | None = None):
        self.label = " ".join([kind, *map(str, args)])
        self.process = subprocess.Popen(
            [sys.executable, "-m", "bench._worker", kind, *map(str, args)],
            cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
            env={**os.environ, **(env or {})},
        )
        ready = self.process.stdout.readline()
        if not ready:
            raise RuntimeError(f"worker {self.label!r} failed to start")

    def time(self, calls: int) -> float:
        self.process.stdin.write(json.dumps({"calls": calls}) + "\n")
        self.process.stdin.flush()
        return json.loads(self.process.stdout.readline())["seconds"]

    def close(self) -> None:
        if self.process.poll() is None:
            try:
                self.process.stdin.write(json.dumps({"stop": True}) + "\n")
                self.process.stdin.flush()
                self.process.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self.process.kill()
                self.process.wait()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


@dataclass
class Interleaved:
    """Per-round times of each contender; round r of every contender ran back to back."""

    times: dict[str, list[float]] = field(default_factory=dict)

    def median(self, name: str) -> float:
        return statistics.median(self.times[name])

    def ratio(self, name: str, baseline: str) -> float:
        """Median over rounds of time(name) / time(baseline) within the same round."""
        return statistics.median(a / b for a, b in zip(self.times[name], self.times[baseline]))

    def ratio_spread(self, name: str, baseline: str) -> tuple[float, float]:
        """The quartiles of the per-round ratios: how much the noise moved them."""
        ratios = sorted(a / b for a, b in zip(self.times[name], self.times[baseline]))
        q = statistics.quantiles(ratios, n=4) if len(ratios) >= 2 else [ratios[0]] * 3
        return q[0], q[2]


def calls_for(worker: Worker, target_seconds: float) -> int:
    """How many calls make one batch of about target_seconds (from a short probe)."""
    probe = worker.time(1)
    return max(1, min(100_000, round(target_seconds / max(probe, 1e-7))))


def interleave(workers: dict[str, Worker], rounds: int, batch_seconds: float) -> Interleaved:
    """ABAB...: each round runs one batch of every worker, in alternating order, resting between."""
    calls = {name: calls_for(worker, batch_seconds) for name, worker in workers.items()}
    result = Interleaved({name: [] for name in workers})
    names = list(workers)
    for round_index in range(rounds):
        order = names if round_index % 2 == 0 else names[::-1]
        for name in order:
            time.sleep(REST_SECONDS)
            result.times[name].append(workers[name].time(calls[name]))
    return result
