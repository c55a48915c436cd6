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
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Idle OpenBLAS threads spin for about 0.1 s after a call (OpenMP's for less): rest that long
# between batches so one worker's spinning threads do not steal the cores from the next.
REST_SECONDS = 0.15


class WorkerFailed(RuntimeError):
    """A worker process died (e.g. a visual kind that does not render): the message has its stderr's end."""


class Worker:
    """A `python -m bench._worker KIND ARGS...` process that times `calls` calls on request."""

    def __init__(self, kind: str, *args, env: dict | None = None):
        self.label = " ".join([kind, *map(str, args)])
        self.stderr = tempfile.TemporaryFile(mode="w+")  # a file, not a pipe: a chatty worker cannot block
        self.process = subprocess.Popen(
            [sys.executable, "-m", "bench._worker", kind, *map(str, args)],
            cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr, text=True,
            env={**os.environ, **(env or {})},
        )
        self._read()  # {"ready": true} once the factory and one warm-up call have run

    def _read(self) -> dict:
        line = self.process.stdout.readline()
        if not line:
            self.process.wait()
            self.stderr.seek(0)
            tail = self.stderr.read()[-3000:].strip()
            raise WorkerFailed(f"worker {self.label!r} exited with {self.process.returncode}: {tail}")
        return json.loads(line)

    def _send(self, command: dict) -> dict:
        self.process.stdin.write(json.dumps(command) + "\n")
        self.process.stdin.flush()
        return self._read()

    def time(self, calls: int) -> float:
        """Mean seconds per call over `calls` calls."""
        return self._send({"calls": calls})["seconds"]

    def profile(self, calls: int) -> dict:
        """cProfile over `calls` calls (bench._worker.profile)."""
        return self._send({"profile": calls})

    def close(self) -> None:
        if self.process.poll() is None:
            try:
                self.process.stdin.write(json.dumps({"stop": True}) + "\n")
                self.process.stdin.flush()
                self.process.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self.process.kill()
                self.process.wait()
        self.stderr.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


@dataclass
class Interleaved:
    """Per-round times of each contender; round r of every contender ran back to back."""

    times: dict[str, list[float]] = field(default_factory=dict)
    calls: dict[str, int] = field(default_factory=dict)  # calls per batch of each contender

    def median(self, name: str) -> float:
        return statistics.median(self.times[name])

    def ratio(self, name: str, baseline: str) -> float:
        """Median over rounds of time(name) / time(baseline) within the same round."""
        return statistics.median(a / b for a, b in zip(self.times[name], self.times[baseline]))

    def ratios(self, name: str, baseline: str) -> list[float]:
        """The per-round ratios, in round order."""
        return [a / b for a, b in zip(self.times[name], self.times[baseline])]

    def quantile_ratio(self, name: str, baseline: str, q: float = 0.1) -> float:
        """time(name) / time(baseline) at each one's q-quantile batch: noise only ever adds time, so the
        fast batches are the least disturbed ones (a cross-check of the paired median)."""
        def quantile(values: list[float]) -> float:
            ordered = sorted(values)
            return ordered[min(len(ordered) - 1, int(q * len(ordered)))]
        return quantile(self.times[name]) / quantile(self.times[baseline])

    def ratio_spread(self, name: str, baseline: str) -> tuple[float, float]:
        """The quartiles of the per-round ratios: how much the noise moved them."""
        ratios = sorted(a / b for a, b in zip(self.times[name], self.times[baseline]))
        q = statistics.quantiles(ratios, n=4) if len(ratios) >= 2 else [ratios[0]] * 3
        return q[0], q[2]


def calls_for(worker: Worker, target_seconds: float) -> int:
    """How many calls make one batch of about target_seconds (from a short probe)."""
    probe = worker.time(1)
    if probe < 0.05:  # cheap calls: the least disturbed of a few probes, as one can land on a busy moment
        probe = min([probe, *(worker.time(1) for _ in range(4))])
    return max(1, min(100_000, round(target_seconds / max(probe, 1e-7))))


def interleave(workers: dict[str, Worker], rounds: int, batch_seconds: float) -> Interleaved:
    """ABAB...: each round runs one batch of every worker, in alternating order, resting between."""
    calls = {name: calls_for(worker, batch_seconds) for name, worker in workers.items()}
    result = Interleaved({name: [] for name in workers}, calls)
    names = list(workers)
    for round_index in range(rounds):
        order = names if round_index % 2 == 0 else names[::-1]
        for name in order:
            time.sleep(REST_SECONDS)
            result.times[name].append(workers[name].time(calls[name]))
    return result
