"""The "autoregressive-pixels" visual: an image generated as a sequence of pixels in raster order.

The engine's causal mask over H·W pixels decides which earlier pixels each pixel may attend to.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from pydantic import Field, model_validator

from app.engine import causal_mask
from app.plots.sizes import AUTOREGRESSIVE_PIXELS_INCHES

from .. import register
from ..base import Control, Description, Rendered, VisualKind, VisualParams

MAX_SIDE = 16


class AutoregressivePixelsParams(VisualParams):
    height: int = Field(default=6, ge=2, le=MAX_SIDE)
    width: int = Field(default=6, ge=2, le=MAX_SIDE)
    row: int = Field(default=3, ge=0, le=MAX_SIDE - 1)
    col: int = Field(default=2, ge=0, le=MAX_SIDE - 1)

    @model_validator(mode="after")
    def _pixel_inside_image(self) -> AutoregressivePixelsParams:
        if self.row >= self.height or self.col >= self.width:
            raise ValueError(
                f"pixel (row {self.row}, col {self.col}) lies outside the {self.height} × {self.width} "
                f"image: choose row from 0 to {self.height - 1} and col from 0 to {self.width - 1}"
            )
        return self


@dataclass(frozen=True)
class AutoregressivePixelsResult:
    height: int
    width: int
    row: int
    col: int
    index: int  # the chosen pixel's position in raster order, row * width + col
    mask: np.ndarray  # (H·W, H·W) engine.causal_mask: True = query pixel may attend key pixel
    allowed: np.ndarray  # (H, W) the chosen pixel's row of the mask, laid out as the image
    raster_index: np.ndarray  # (H, W) each pixel's position in the sequence


def autoregressive_pixels_result(params: AutoregressivePixelsParams) -> AutoregressivePixelsResult:
    pixels = params.height * params.width
    # Raster order: left to right along a row, rows top to bottom, as in Image Transformer / ImageGPT.
    raster_index = np.arange(pixels).reshape(params.height, params.width)  # (H, W)
    index = int(raster_index[params.row, params.col])
    mask = causal_mask(pixels)  # (H·W, H·W)
    return AutoregressivePixelsResult(
        height=params.height,
        width=params.width,
        row=params.row,
        col=params.col,
        index=index,
        mask=mask,
        allowed=mask[index].reshape(params.height, params.width),
        raster_index=raster_index,
    )


@register
class AutoregressivePixelsKind(VisualKind):
    name = "autoregressive-pixels"
    title = "Generating an image pixel by pixel"
    Params = AutoregressivePixelsParams
    controls = (
        Control("height", "Image height (rows)", "int", min=2, max=MAX_SIDE, step=1),
        Control("width", "Image width (columns)", "int", min=2, max=MAX_SIDE, step=1),
        Control("row", "Chosen pixel's row (0 = top)", "int", min=0, max=MAX_SIDE - 1, step=1,
                help="Must be below the image height."),
        Control("col", "Chosen pixel's column (0 = left)", "int", min=0, max=MAX_SIDE - 1, step=1,
                help="Must be below the image width."),
    )
    learn = "/learn/attention#autoregressive"
    inches = AUTOREGRESSIVE_PIXELS_INCHES

    def render(self, params: AutoregressivePixelsParams) -> Rendered:
        # Drawing imports matplotlib (about a second): only when a figure is drawn.
        from app.plots.autoregressive_pixels import draw_autoregressive_pixels
        from app.plots.figure import to_png

        result = autoregressive_pixels_result(params)
        figure, alt = draw_autoregressive_pixels(result)
        return Rendered(image=to_png(figure), mimetype="image/png", alt=alt, caption=self.caption(params, result))

    def describe(self, params: AutoregressivePixelsParams) -> Description:
        # The alt text through the function the drawing uses, without importing matplotlib.
        from app.plots.describe import autoregressive_pixels_alt

        result = autoregressive_pixels_result(params)
        return Description(alt=autoregressive_pixels_alt(result), caption=self.caption(params, result))

    def caption(self, params: AutoregressivePixelsParams, result) -> str:
        caption = (
            "The image is flattened row by row into one sequence, and a Transformer predicts each "
            "pixel from the pixels before it. The causal mask (the engine's causal_mask) lets query "
            "pixel i attend only to key pixels 0 to i, so training can predict every pixel at once "
            "without any pixel seeing its own future. At generation time pixels are sampled one at "
            "a time in the same order."
        )
        return caption
