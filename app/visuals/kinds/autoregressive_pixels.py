"""The "autoregressive-pixels" visual: an image generated as a sequence of pixels in raster order.

Two masks over the H·W pixels, both from the engine's causal_mask: Image GPT's full causal attention
(query pixel i attends key pixels 0..i), and the Image Transformer's 1-D local attention (the same
mask AND a window: the query's block of `block` pixels and the block before it). Then the generation
order, step by step: which pixels are known, and which of them the chosen mask reads, when each pixel
is predicted. The student's answer (next-pixel prediction, or a map from noise) is marked and answered.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from typing import Literal

import numpy as np
from pydantic import Field, model_validator

from app.engine import causal_mask

from .. import register
from ..base import NARROW_WIDTH, WIDTH, Control, VisualKind, VisualParams, line_height
from ..words import plural

MAX_SIDE = 16
MAX_PIXELS = MAX_SIDE * MAX_SIDE  # a block this long holds every image: the local mask is then the causal one
MASK_NAMES = {"causal": "Image GPT's full causal mask", "local": "the Image Transformer's local mask"}
OPTIONS = ("next-pixel", "noise-to-image")  # the question's option ids; next-pixel is right
CORRECT = "next-pixel"
NO_CHOICE = ""

# Overlay and step-panel states of a pixel (the plot's colours index these).
LATER, EARLIER_MASKED, ATTENDED, QUERY, PREDICTED = 0, 1, 2, 3, 4


class AutoregressivePixelsParams(VisualParams):
    height: int = Field(default=6, ge=2, le=MAX_SIDE)
    width: int = Field(default=6, ge=2, le=MAX_SIDE)
    row: int = Field(default=3, ge=0, le=MAX_SIDE - 1)
    col: int = Field(default=2, ge=0, le=MAX_SIDE - 1)
    mask: Literal["causal", "local"] = "local"  # the mask the generation steps read with
    block: int = Field(default=6, ge=1, le=MAX_PIXELS)  # the local mask's query-block length, in pixels
    choice: Literal["", "next-pixel", "noise-to-image"] = NO_CHOICE  # the student's option

    @model_validator(mode="after")
    def _pixel_inside_image(self) -> AutoregressivePixelsParams:
        if self.row >= self.height or self.col >= self.width:
            raise ValueError(
                f"pixel (row {self.row}, col {self.col}) lies outside the {self.height} × {self.width} "
                f"image: choose row from 0 to {self.height - 1} and col from 0 to {self.width - 1}"
            )
        return self


@dataclass(frozen=True)
class Step:
    """One generation step: pixel `predicted` is sampled, pixels 0..predicted-1 already exist."""

    predicted: int
    read: tuple[int, int] | None  # (first, last) pixel the attention reads (row predicted-1), None at step 0
    state: np.ndarray  # (H, W) LATER / EARLIER_MASKED (known, not read) / ATTENDED (known, read) / PREDICTED

    @property
    def known(self) -> int:
        return self.predicted


@dataclass(frozen=True)
class AutoregressivePixelsResult:
    height: int
    width: int
    row: int
    col: int
    index: int  # the chosen pixel's position in raster order, row * width + col
    pixels: int
    block: int
    mask_name: str  # "causal" or "local": the mask the steps use
    choice: str  # the student's option id, "" when not known
    causal: np.ndarray  # (H·W, H·W) engine.causal_mask: True = query pixel (row) may attend key pixel (column)
    local: np.ndarray  # (H·W, H·W) causal AND (key's block >= query's block - 1)
    block_of: np.ndarray  # (H·W,) each pixel's query block, j // block
    raster_index: np.ndarray  # (H, W) each pixel's position in the sequence
    causal_state: np.ndarray  # (H, W) the chosen pixel's row of each mask, laid out as the image
    local_state: np.ndarray
    steps: tuple[Step, ...]

    @property
    def selected(self) -> np.ndarray:
        return self.causal if self.mask_name == "causal" else self.local

    def attended(self, mask: np.ndarray) -> np.ndarray:
        """The key pixels the chosen pixel's query attends to under `mask`."""
        return np.flatnonzero(mask[self.index])

    @property
    def one_block(self) -> bool:
        """The whole image is one block: the local mask is the full causal mask."""
        return self.block >= self.pixels

    @property
    def query_block(self) -> tuple[int, int]:
        """(first, last) pixel of the chosen pixel's query block (the last block may be cut short)."""
        first = int(self.block_of[self.index]) * self.block
        return first, min(first + self.block, self.pixels) - 1

    @property
    def memory_start(self) -> int:
        """The first key pixel the chosen pixel attends to under the local mask."""
        return int(self.attended(self.local)[0])


def overlay_state(mask_row: np.ndarray, index: int, shape: tuple[int, int]) -> np.ndarray:
    """A query's mask row laid out as the image: itself, attended, earlier but masked, later."""
    positions = np.arange(mask_row.size)
    state = np.where(mask_row, ATTENDED, np.where(positions < index, EARLIER_MASKED, LATER))
    state[index] = QUERY
    return state.reshape(shape)


def step_state(mask: np.ndarray, predicted: int, shape: tuple[int, int]) -> np.ndarray:
    """Generating pixel `predicted`: the known pixels (read or not by row predicted-1), itself, the later ones."""
    positions = np.arange(mask.shape[0])
    read = mask[predicted - 1] if predicted else np.zeros(mask.shape[0], dtype=bool)
    state = np.where(positions < predicted, np.where(read, ATTENDED, EARLIER_MASKED), LATER)
    state[predicted] = PREDICTED
    return state.reshape(shape)


def step_pixels(index: int, pixels: int) -> tuple[int, ...]:
    """The steps drawn: the first two pixels, the one after the chosen pixel (predicted from the output
    at the chosen pixel, so it reads the chosen pixel's mask row), and the last pixel."""
    return tuple(sorted({0, 1, min(index + 1, pixels - 1), pixels - 1}))


def autoregressive_pixels_result(params: AutoregressivePixelsParams) -> AutoregressivePixelsResult:
    height, width, block = params.height, params.width, params.block
    pixels = height * width
    shape = (height, width)
    # Raster order: left to right along a row, rows top to bottom, as in Image Transformer / Image GPT.
    raster_index = np.arange(pixels).reshape(shape)  # (H, W)
    index = int(raster_index[params.row, params.col])
    causal = causal_mask(pixels)  # (H·W, H·W)
    block_of = np.arange(pixels) // block  # (H·W,)
    # The Image Transformer's 1-D local attention: a query block attends to itself and to the block of
    # pixels generated before it (memory = query block + `block` earlier pixels), never to later pixels.
    window = block_of[np.newaxis, :] >= block_of[:, np.newaxis] - 1  # (query, key)
    local = causal & window
    selected = causal if params.mask == "causal" else local
    steps = []
    for predicted in step_pixels(index, pixels):
        read = np.flatnonzero(selected[predicted - 1]) if predicted else None
        steps.append(Step(predicted, None if read is None else (int(read[0]), int(read[-1])),
                          step_state(selected, predicted, shape)))
    return AutoregressivePixelsResult(
        height=height, width=width, row=params.row, col=params.col, index=index, pixels=pixels,
        block=block, mask_name=params.mask, choice=params.choice, causal=causal, local=local,
        block_of=block_of, raster_index=raster_index,
        causal_state=overlay_state(causal[index], index, shape),
        local_state=overlay_state(local[index], index, shape),
        steps=tuple(steps),
    )


# --- words ---------------------------------------------------------------------------------------------


def span(first: int, last: int) -> str:
    return str(first) if first == last else f"{first}–{last}"


def pixel_span(first: int, last: int) -> str:
    return f"pixel {first}" if first == last else f"pixels {first}–{last}"


def causal_sentence(result: AutoregressivePixelsResult) -> str:
    i, count = result.index, int(result.attended(result.causal).size)
    later = result.pixels - 1 - i
    itself = ", only itself" if count == 1 else ""
    after = (", and it is the last pixel, so none come after it" if later == 0
             else f", and to none of the {later} after it")
    return (f"Under Image GPT's full causal mask it may attend to {plural(count, 'pixel')} "
            f"({span(0, i)}{itself}){after}.")


def local_sentence(result: AutoregressivePixelsResult) -> str:
    i, b = result.index, result.block
    start = f"Under the Image Transformer's local 1-D mask with blocks of {plural(b, 'pixel')}"
    if result.one_block:
        return (f"{start}, at least the image's {result.pixels}, the whole image is one block, so the local "
                f"mask equals the full causal mask.")
    first, last = result.query_block
    count = int(result.attended(result.local).size)
    if first == 0:
        return (f"{start}, pixel {i} lies in the first block ({pixel_span(0, last)}), which has no block "
                f"before it, so it attends to the same {plural(count, 'pixel')} as under the full causal mask.")
    memory = result.memory_start
    return (f"{start}, its query block is {pixel_span(first, last)} and its memory adds the block before it, "
            f"{pixel_span(memory, first - 1)}, so it may attend to {plural(count, 'pixel')} ({span(memory, i)}); "
            f"the {plural(memory, 'earlier pixel')} ({span(0, memory - 1)}) {'is' if memory == 1 else 'are'} "
            f"masked.")


def step_phrase(step: Step) -> str:
    k = step.predicted
    if k == 0:
        return "pixel 0 is predicted with no pixel known"
    first, last = step.read
    if k == 1:
        return "pixel 1 with pixel 0 known and read"
    read = "all read" if first == 0 else f"{pixel_span(first, last)} read"
    return f"pixel {k} with {pixel_span(0, k - 1)} known, {read}"


def steps_sentence(result: AutoregressivePixelsResult) -> str:
    phrases = [step_phrase(step) for step in result.steps]
    listed = "; ".join(phrases)
    sentence = (f"Generation order under {MASK_NAMES[result.mask_name]}, one pixel per step: "
                f"{listed}.")
    if result.index == result.pixels - 1:
        sentence += f" Pixel {result.index} is the last, so its output predicts no further pixel."
    return sentence


WHY_NOISE_IS_WRONG = (
    "Mapping flattened noise to an image is what a GAN's generator does (a diffusion model also starts "
    "from noise and removes it step by step). Image GPT and the Image Transformer have no noise input: "
    "from the pixels generated so far they predict a probability for each value the next pixel can take, "
    "sample it, and repeat, one pixel at a time; the randomness is in that sampling."
)


def choice_sentence(choice: str) -> str:
    """What the student's option gets right or wrong; "" with no choice."""
    if choice == CORRECT:
        return ("Your answer, next-pixel prediction, is right: both models treat the pixels as a sequence "
                "and predict each one from the pixels before it.")
    if choice == "noise-to-image":
        return f"Your answer, a map from noise vectors to images, is wrong. {WHY_NOISE_IS_WRONG}"
    return ""


def banner_text(choice: str) -> str:
    """The figure's top line_height(s): the student's answer marked, or what the figure shows."""
    if choice == CORRECT:
        return "Your answer: next-pixel prediction ✓  Each pixel is predicted from the pixels before it."
    if choice == "noise-to-image":
        return ("Your answer: noise → image ✗  These models have no noise input: each pixel's value is "
                "sampled from a distribution predicted from the earlier pixels (see the generation order).")
    return "Next-pixel prediction: the image as one sequence of pixels in raster order."


def banner_lines(choice: str, narrow: bool) -> list[str]:
    bold = bool(choice)  # the answer's line is bold, and bold letters are wider
    return textwrap.wrap(banner_text(choice), (46 if bold else 54) if narrow else (96 if bold else 104))


def worked_example(result: AutoregressivePixelsResult) -> str:
    i, b = result.index, result.block
    if result.one_block:
        return (f"Here b = {b} is at least the {result.pixels} pixels, so ⌊j / b⌋ = 0 for every pixel and the "
                f"two masks are the same.")
    first, last = result.query_block
    k = int(result.block_of[i])
    text = f"For pixel {i} and b = {b}: block ⌊{i} / {b}⌋ = {k} is {pixel_span(first, last)}"
    if k == 0:
        return text + ", the first block, so it keeps every earlier key, as the full causal mask does."
    return (text + f", the block before it is {pixel_span(result.memory_start, first - 1)}, so keys "
            f"{span(result.memory_start, i)} remain.")


# --- the figure's size, shared with the drawing -------------------------------------------------------

EDGE = 0.08
TEXT_SIZE = 8  # pt: ≥ 10 CSS px on the phone image
TITLE_SIZE = 9


@dataclass(frozen=True)
class Box:
    """An axes' place: left and top edges from the figure's left and top, width and height; inches."""

    left: float
    top: float
    width: float
    height: float


@dataclass(frozen=True)
class Layout:
    inches: tuple[float, float]
    narrow: bool
    banner: tuple[str, ...]
    banner_size: float
    panels: dict  # name -> Box: causal_overlay, local_overlay, causal_mask, local_mask, step0.. step3
    steps_header_top: float  # where the steps' header line starts (from the figure's top)
    steps_header_left: float
    legend_bottom: float  # the legend's bottom edge (from the figure's bottom)
    cell: float  # the overlays' cell size
    step_cell: float


def figure_layout(height: int, width: int, choice: str, narrow: bool) -> Layout:
    """Where every panel goes, from the image's shape alone (the size is known before computing)."""
    banner = tuple(banner_lines(choice, narrow))
    banner_size = TEXT_SIZE if narrow else TITLE_SIZE
    top = EDGE + len(banner) * line_height(banner_size) + 0.1
    panels = {}
    if narrow:
        left, panel, gap = 0.44, 1.24, 0.44
        over_title, mask_title = 3 * line_height(TEXT_SIZE) + 0.05, 3 * line_height(TEXT_SIZE) + 0.05
        below = 0.36  # tick labels and axis label at 8 pt
        max_overlay_height, step_width, max_step_height = 1.24, 1.24, 0.95
    else:
        left, panel, gap = 0.52, 2.2, 0.92
        over_title, mask_title = 2 * line_height(TITLE_SIZE) + 0.07, 2 * line_height(TITLE_SIZE) + 0.07
        below = 0.4
        max_overlay_height, step_width, max_step_height = 1.8, 1.16, 0.78
    columns = (left, left + panel + gap)
    cell = min(panel / width, max_overlay_height / height)
    overlay_w, overlay_h = cell * width, cell * height
    y = top + over_title
    for name, x in zip(("causal_overlay", "local_overlay"), columns):
        panels[name] = Box(x + (panel - overlay_w) / 2, y, overlay_w, overlay_h)
    y += overlay_h + below + mask_title
    for name, x in zip(("causal_mask", "local_mask"), columns):
        panels[name] = Box(x, y, panel, panel)
    y += panel + below
    step_cell = min(step_width / width, max_step_height / height)
    step_w, step_h = step_cell * width, step_cell * height
    step_title = 3 * line_height(TEXT_SIZE) + 0.04
    header = 2 * line_height(TITLE_SIZE) if not narrow else line_height(TITLE_SIZE) + 0.04
    if narrow:
        header_top, header_left = y, EDGE
        y += header + step_title
        for slot in range(4):
            x = columns[slot % 2] + (panel - step_w) / 2
            panels[f"step{slot}"] = Box(x, y + (slot // 2) * (step_h + 0.12 + step_title), step_w, step_h)
        y += 2 * step_h + 0.12 + step_title + 0.1
        legend_rows = 7
        left_stack = y
    else:
        steps_left = columns[1] + panel + 0.34
        header_top, header_left = top, steps_left - 0.06
        sy = top + header + step_title
        for slot in range(4):
            panels[f"step{slot}"] = Box(steps_left + (step_width - step_w) / 2, sy, step_w, step_h)
            sy += step_h + 0.1 + step_title
        left_stack = max(y, sy - step_title)
        legend_rows = 3
    legend = legend_rows * line_height(TEXT_SIZE) * 1.25 + 0.12
    total = left_stack + legend + EDGE
    return Layout(inches=(NARROW_WIDTH if narrow else WIDTH, round(total, 2)), narrow=narrow, banner=banner,
                  banner_size=banner_size, panels=panels, steps_header_top=header_top,
                  steps_header_left=header_left, legend_bottom=EDGE, cell=cell, step_cell=step_cell)


@register
class AutoregressivePixelsKind(VisualKind[AutoregressivePixelsResult]):
    name = "autoregressive-pixels"
    title = "Generating an image pixel by pixel: Image GPT and the Image Transformer"
    Params = AutoregressivePixelsParams
    controls = (
        Control("height", "Image height (rows)", "int", min=2, max=MAX_SIDE, step=1),
        Control("width", "Image width (columns)", "int", min=2, max=MAX_SIDE, step=1),
        Control("row", "Chosen pixel's row (0 = top)", "int", min=0, max=MAX_SIDE - 1, step=1,
                help="Must be below the image height."),
        Control("col", "Chosen pixel's column (0 = left)", "int", min=0, max=MAX_SIDE - 1, step=1,
                help="Must be below the image width."),
        Control("mask", "Mask for the generation steps", "choice",
                choices=(("causal", "Full causal (Image GPT)"), ("local", "Local 1-D blocks (Image Transformer)"))),
        Control("block", "Local block size (pixels)", "int", min=1, max=MAX_PIXELS, step=1,
                help="Each query block attends to itself and the block before it; "
                     "a block as long as the image makes the local mask the full causal one."),
    )
    choice_param = "choice"
    learn = "/learn/attention#autoregressive"
    inches = (WIDTH, 6.6)  # nominal: figure_inches sizes the figure to the image's shape
    narrow_inches = (NARROW_WIDTH, 9.0)

    def figure_inches(self, params: AutoregressivePixelsParams, layout: str = "wide", result=None
                      ) -> tuple[float, float]:
        return figure_layout(params.height, params.width, params.choice, layout == "narrow").inches

    def compute(self, params: AutoregressivePixelsParams) -> AutoregressivePixelsResult:
        return autoregressive_pixels_result(params)

    def alt(self, params: AutoregressivePixelsParams, result: AutoregressivePixelsResult) -> str:
        pixels = result.pixels
        text = (
            f"Next-pixel prediction on a {result.height} × {result.width} image read in raster order (left to "
            f"right, rows top to bottom), with two {pixels} × {pixels} masks whose rows are query pixels and "
            f"columns key pixels. Pixel ({result.row}, {result.col}) is number {result.index}. "
            f"{causal_sentence(result)} {local_sentence(result)} {steps_sentence(result)}"
        )
        choice = choice_sentence(result.choice)
        return f"{text} {choice}" if choice else text

    def draw(self, params: AutoregressivePixelsParams, result, inches):
        from app.plots.autoregressive_pixels import draw_autoregressive_pixels

        return draw_autoregressive_pixels(result, inches)

    def caption(self, params: AutoregressivePixelsParams, result: AutoregressivePixelsResult) -> str:
        caption = (
            "Both models flatten the image row by row into one sequence. The output at pixel i gives a "
            "probability for each value pixel i + 1 can take; training scores every pixel at once, and "
            "generation samples one pixel at a time, so pixel k is predicted when pixels 0 to k − 1 exist "
            "(the generation-order panels). Image GPT (Chen et al., 2020) uses full causal attention: "
            "row i of the engine's causal_mask lets query pixel i attend to key pixels 0 to i, never a later "
            "one. The Image Transformer (Parmar et al., 2018) keeps attention local so that larger images "
            "fit; drawn is its 1-D variant (its 2-D variant uses rectangles of pixels): the sequence is cut "
            "into query blocks of b pixels, and each block attends to itself and to the block before it, so "
            "its mask is causal_mask AND ⌊j / b⌋ ≥ ⌊i / b⌋ − 1 for query i and key j. "
            f"{worked_example(result)}"
        )
        choice = choice_sentence(result.choice)
        return f"{caption} {choice}" if choice else caption
