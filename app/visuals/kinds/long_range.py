"""The "long-range" visual: why self-attention links distant tokens and parallelises better than an RNN.

Counts the steps information travels between two tokens k apart, and the sequential steps per sequence.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from pydantic import Field, model_validator

from app.plots.sizes import LONG_RANGE_INCHES

from .. import register
from ..base import Control, Description, Rendered, VisualKind, VisualParams


class LongRangeParams(VisualParams):
    max_distance: int = Field(default=32, ge=2, le=512)
    distance: int = Field(default=16, ge=1, le=512)

    @model_validator(mode="after")
    def _distance_fits(self) -> LongRangeParams:
        if self.distance > self.max_distance:
            raise ValueError(
                f"distance ({self.distance}) must be at most max_distance ({self.max_distance}): "
                "lower the distance or raise max_distance"
            )
        return self


def rnn_path_length(distance):
    """Steps between tokens k apart in an RNN: the signal passes through k hidden-state updates, O(k).

    Vaswani et al. (2017), Table 1, "maximum path length": O(n) recurrent, O(1) self-attention.
    """
    return np.asarray(distance, dtype=np.int64)


def attention_path_length(distance):
    """Steps between any two tokens in one self-attention layer: every query reads every key directly."""
    return np.ones_like(np.asarray(distance, dtype=np.int64))


def rnn_sequential_steps(length):
    """An RNN must finish token t-1 before token t: n dependent steps for n tokens (Table 1, O(n))."""
    return np.asarray(length, dtype=np.int64)


def attention_sequential_steps(length):
    """Self-attention handles all n tokens in one batch of matrix products: O(1) sequential steps."""
    return np.ones_like(np.asarray(length, dtype=np.int64))


@dataclass(frozen=True)
class LongRangeResult:
    distances: np.ndarray  # k = 1..max_distance
    rnn_path: np.ndarray  # steps between tokens k apart, RNN
    attention_path: np.ndarray  # the same for self-attention
    lengths: np.ndarray  # sequence lengths n = 1..max_distance + 1
    rnn_steps: np.ndarray  # sequential steps to process n tokens, RNN
    attention_steps: np.ndarray  # the same for self-attention
    distance: int  # the chosen k
    sequence_length: int  # n = k + 1, the shortest sequence holding both tokens


def long_range_result(params: LongRangeParams) -> LongRangeResult:
    distances = np.arange(1, params.max_distance + 1)
    lengths = np.arange(1, params.max_distance + 2)
    return LongRangeResult(
        distances=distances,
        rnn_path=rnn_path_length(distances),
        attention_path=attention_path_length(distances),
        lengths=lengths,
        rnn_steps=rnn_sequential_steps(lengths),
        attention_steps=attention_sequential_steps(lengths),
        distance=params.distance,
        sequence_length=params.distance + 1,
    )


@register
class LongRangeKind(VisualKind):
    name = "long-range"
    title = "Long-range dependencies: RNN vs self-attention"
    Params = LongRangeParams
    controls = (
        Control("distance", "Distance k between the two tokens", "int", min=1, max=512, step=1,
                help="At most the largest distance plotted."),
        Control("max_distance", "Largest distance plotted", "int", min=2, max=512, step=1),
    )
    learn = "/learn/attention#long-range"
    inches = LONG_RANGE_INCHES

    def render(self, params: LongRangeParams) -> Rendered:
        # Drawing imports matplotlib (about a second): only when a figure is drawn.
        from app.plots.figure import to_png
        from app.plots.long_range import draw_long_range

        result = long_range_result(params)
        figure, alt = draw_long_range(result)
        return Rendered(image=to_png(figure), mimetype="image/png", alt=alt, caption=self.caption(params, result))

    def describe(self, params: LongRangeParams) -> Description:
        # The alt text through the function the drawing uses, without importing matplotlib.
        from app.plots.describe import long_range_alt

        result = long_range_result(params)
        return Description(alt=long_range_alt(result), caption=self.caption(params, result))

    def caption(self, params: LongRangeParams, result) -> str:
        caption = (
            "Counts from the structure of each layer (Vaswani et al. 2017, Table 1), not measurements. "
            "In an RNN, information from one token reaches a token k places later only through k "
            "hidden-state updates, and gradients flow back the same way, so they can vanish or explode. "
            "One self-attention layer connects every pair directly, and it processes the whole "
            "sequence as a few large matrix products that run in parallel on the hardware, instead "
            "of n small steps that must run one after another."
        )
        return caption
