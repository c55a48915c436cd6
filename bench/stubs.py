"""Fixed wall times for the complexity visual, so that the plot benchmark times drawing only.

The complexity kind measures the engine live for about a third of a second on every render; that
is the figure's content, not its drawing, and it is the same for the app and the naive baseline.
"""

from __future__ import annotations

import numpy as np


def quadratic_seconds(sizes, d, l, **_):  # noqa: E741 - the value width's name in the app
    return 1e-7 + np.asarray(sizes, dtype=float) ** 2 * (d + l) * 1e-10


def stub_complexity_timing() -> None:
    import app.visuals.kinds.complexity as complexity

    complexity.measure_attention_seconds = quadratic_seconds
