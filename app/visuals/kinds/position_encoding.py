"""The "position-encoding" visual: what makes the sinusoidal encoding a good positional encoding.

Shows the encoding, its waves, that PE(p)·PE(p+k) depends only on k, and that every position is unique.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from pydantic import Field, model_validator

from app.engine import sinusoidal_positional_encoding
from app.plots.sizes import POSITION_ENCODING_INCHES

from .. import register
from ..base import Control, Description, Rendered, VisualKind, VisualParams

WAVE_DIMENSIONS = (0, 1, 4, 5)  # plus d_model - 2: two fast pairs and the slowest sine


class PositionEncodingParams(VisualParams):
    length: int = Field(default=64, ge=2, le=512)
    d_model: int = Field(default=32, ge=2, le=256)
    train_length: int = Field(default=32, ge=1, le=512)

    @model_validator(mode="after")
    def _consistent(self) -> PositionEncodingParams:
        if self.d_model % 2:
            raise ValueError(
                f"d_model must be even, got {self.d_model}: each frequency needs a sine and a cosine "
                "column, which is what makes PE(p)·PE(p+k) depend only on k"
            )
        if self.train_length > self.length:
            raise ValueError(
                f"train_length ({self.train_length}) must be at most length ({self.length}): "
                "lower the training length or show more positions"
            )
        return self


@dataclass(frozen=True)
class PositionEncodingResult:
    encoding: np.ndarray  # (length, d_model) from the engine
    wave_dimensions: tuple[int, ...]
    start_positions: tuple[int, ...]  # the p of each PE(p)·PE(p+k) curve
    offsets: np.ndarray  # k = 0..max_offset
    dot_products: np.ndarray  # (len(start_positions), len(offsets)): PE(p)·PE(p+k)
    max_spread: float  # largest difference between the curves at one k
    nearest_distance: np.ndarray  # (length,): min over q != p of ||PE(p) - PE(q)||
    min_distance: float  # the smallest distance between two different positions
    closest_pair: tuple[int, int]  # the positions (p, q), p < q, at that distance
    train_length: int
    beyond_min_distance: float | None  # smallest nearest-neighbour distance beyond train_length


def position_encoding_result(params: PositionEncodingParams) -> PositionEncodingResult:
    encoding = sinusoidal_positional_encoding(params.length, params.d_model)  # (length, d_model)
    length, d_model = encoding.shape

    wave_dimensions = tuple(dict.fromkeys(d for d in (*WAVE_DIMENSIONS, d_model - 2) if d < d_model))
    start_positions = tuple(dict.fromkeys((0, length // 4, length // 2)))
    offsets = np.arange(length - start_positions[-1])  # every p + k stays inside the encoding
    dot_products = np.array([
        np.einsum("kd,d->k", encoding[p + offsets], encoding[p]) for p in start_positions
    ])  # (curves, offsets)
    max_spread = float(np.max(np.ptp(dot_products, axis=0)))

    # ||a - b||² = |a|² + |b|² - 2 a·b for all pairs at once; clipped at 0 against rounding.
    squared_norms = np.einsum("pd,pd->p", encoding, encoding)
    squared = squared_norms[:, None] + squared_norms[None, :] - 2.0 * (encoding @ encoding.T)
    distances = np.sqrt(np.clip(squared, 0.0, None))  # (length, length)
    np.fill_diagonal(distances, np.inf)  # a position's distance to itself is not a collision
    nearest_distance = distances.min(axis=1)
    min_distance = float(distances.min())
    # Distances depend only on |p - q|, so many pairs tie up to rounding; name the first of them.
    ties = np.argwhere(np.triu(distances <= min_distance * (1 + 1e-9) + 1e-12, k=1))
    p, q = ties[0]
    beyond = nearest_distance[params.train_length:]
    return PositionEncodingResult(
        encoding=encoding,
        wave_dimensions=wave_dimensions,
        start_positions=start_positions,
        offsets=offsets,
        dot_products=dot_products,
        max_spread=max_spread,
        nearest_distance=nearest_distance,
        min_distance=min_distance,
        closest_pair=(int(p), int(q)),
        train_length=params.train_length,
        beyond_min_distance=float(beyond.min()) if beyond.size else None,
    )


@register
class PositionEncodingKind(VisualKind):
    name = "position-encoding"
    title = "Sinusoidal positional encoding: unique, relative, any length"
    Params = PositionEncodingParams
    controls = (
        Control("length", "Positions shown", "int", min=2, max=512, step=1),
        Control("d_model", "Encoding width d_model (even)", "int", min=2, max=256, step=2),
        Control("train_length", "Training length (longest sequence seen in training)", "int",
                min=1, max=512, step=1, help="At most the number of positions shown."),
    )
    learn = "/learn/position-encoding#sinusoidal"
    inches = POSITION_ENCODING_INCHES

    def render(self, params: PositionEncodingParams) -> Rendered:
        # Drawing imports matplotlib (about a second): only when a figure is drawn.
        from app.plots.figure import to_png
        from app.plots.position_encoding import draw_position_encoding

        result = position_encoding_result(params)
        figure, alt = draw_position_encoding(result)
        return Rendered(image=to_png(figure), mimetype="image/png", alt=alt, caption=self.caption(params, result))

    def describe(self, params: PositionEncodingParams) -> Description:
        # The alt text through the function the drawing uses, without importing matplotlib.
        from app.plots.describe import position_encoding_alt

        result = position_encoding_result(params)
        return Description(alt=position_encoding_alt(result), caption=self.caption(params, result))

    def caption(self, params: PositionEncodingParams, result) -> str:
        caption = (
            "PE[p, 2i] = sin(p / 10000^(2i/d)) and PE[p, 2i+1] = cos(p / 10000^(2i/d)) (Vaswani et al. "
            "2017, §3.5), computed by the engine. Because each sine has a cosine partner at the same "
            "frequency, PE(p)·PE(p+k) = Σ cos(k·ω_i) depends only on the offset k, so the curves in (c) "
            "coincide up to floating-point rounding. The formula needs no training data, so positions "
            "beyond the training length are defined the same way; (d) shows each position's distance "
            "to its nearest other position stays above zero."
        )
        return caption
