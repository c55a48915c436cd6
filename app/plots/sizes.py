"""The size of every figure the visuals draw, and the size a browser lays each image out at.

No matplotlib here: a page puts these sizes on its <img> tags without drawing anything (so the page
does not shift when the image arrives), and the draw functions make their figures at the same sizes.
"""

from __future__ import annotations

from typing import Literal

DPI = 100  # PNG pixels per inch of figure; a PNG pixel is shown as one CSS pixel
CSS_PX_PER_INCH = 96  # how a browser sizes an SVG, whose width and height are in points (1/72 inch)

WIDTH = 7.6  # inches (760 px): every visual has the same width, so they line up on a page

# (width, height) in inches of each visual's figure.
SOFT_LOOKUP_INCHES = (WIDTH, 5.0)
QKV_PROJECTIONS_INCHES = (WIDTH, 5.0)
ORDER_BLINDNESS_INCHES = (WIDTH, 3.8)
HEAD_SPLIT_INCHES = (WIDTH, 4.4)
POSITION_ENCODING_INCHES = (WIDTH, 5.4)
LONG_RANGE_INCHES = (WIDTH, 3.6)
AUTOREGRESSIVE_PIXELS_INCHES = (WIDTH, 4.4)
COMPLEXITY_INCHES = (WIDTH, 3.8)


def head_grid(num_heads: int) -> tuple[int, int]:
    """(rows, columns) of the per-head heatmaps: one row up to 3 heads, then two rows."""
    if num_heads <= 3:
        return 1, num_heads
    return 2, (num_heads + 1) // 2


def multi_head_inches(num_heads: int) -> tuple[float, float]:
    """The multi-head (and attention-playground) figure: taller when the heads take two rows."""
    rows, _ = head_grid(num_heads)
    return (WIDTH, 3.9 if rows == 1 else 6.0)


def pixel_size(inches: tuple[float, float], image_format: Literal["png", "svg"] = "png") -> tuple[int, int]:
    """The (width, height) in CSS pixels a browser gives the image of a figure this many inches big."""
    width, height = inches
    if image_format == "svg":
        return round(width * CSS_PX_PER_INCH), round(height * CSS_PX_PER_INCH)
    # Agg's canvas is int(inches · dpi) pixels, with a 1e-8 tolerance for floating-point ticks
    # (matplotlib's FigureCanvasBase.get_width_height): 4.14 in is 413.99999999999994 px, drawn as 414.
    return int(width * DPI + 1e-8), int(height * DPI + 1e-8)
