"""The "autoregressive-pixels" visual: an image generated as a sequence of pixels in raster order.

Two masks over the H·W pixels, both from the engine's causal_mask: Image GPT's full causal attention (query
pixel i attends key pixels 0..i), and the Image Transformer's 1-D local attention (the same mask AND a window:
the query's block of `block` pixels and the block before it). Then the generation order, step by step: which
pixels are known, and which of them the chosen mask reads, when each pixel is predicted. The student's answer
(next-pixel prediction, or a map from noise) is marked and answered.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from typing import Literal

import numpy as np
from pydantic import Field, model_validator

from app.engine import causal_mask

from .. import register
from ..base import AcrossFields, NARROW_WIDTH, WIDTH, Control, VisualKind, VisualParams, line_height
from ..words import plural

MAX_SIDE = 16
MAX_PIXELS = MAX_SIDE * MAX_SIDE  # a block this long holds every image: the local mask is then the causal one
# Overlay and step-panel states of a pixel (the plot's colours index these).
LATER, EARLIER_MASKED, ATTENDED, QUERY, PREDICTED = range(5)


class AutoregressivePixelsParams(VisualParams):
    height: int = Field(default=6, ge=2, le=MAX_SIDE)
    width: int = Field(default=6, ge=2, le=MAX_SIDE)
    row: int = Field(default=3, ge=0, le=MAX_SIDE - 1)
    col: int = Field(default=2, ge=0, le=MAX_SIDE - 1)
    mask: Literal["causal", "local"] = "local"  # the mask the generation steps read with
    block: int = Field(default=6, ge=1, le=MAX_PIXELS)  # the local mask's query-block length, in pixels
    choice: Literal["", "next-pixel", "noise-to-image"] = ""  # the student's option; next-pixel is right

    @model_validator(mode="after")
    def _pixel_inside_image(self) -> AutoregressivePixelsParams:
        if self.row >= self.height or self.col >= self.width:
            outside = (("row", "height") if self.row >= self.height else ()) + (
                ("col", "width") if self.col >= self.width else ())
            raise AcrossFields(f"pixel (row {self.row}, col {self.col}) lies outside the {self.height} × "
                               f"{self.width} image: choose row from 0 to {self.height - 1} and col from 0 to "
                               f"{self.width - 1}", *outside)
        return self


@dataclass(frozen=True)
class Step:
    """One generation step: pixel `predicted` is sampled, pixels 0..predicted-1 already exist."""

    predicted: int
    read: tuple[int, int] | None  # (first, last) pixel the attention reads (row predicted-1), None at step 0
    state: np.ndarray  # (H, W) LATER / EARLIER_MASKED (known, not read) / ATTENDED (known, read) / PREDICTED


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
    selected: np.ndarray  # (H·W, H·W) the one of the two the steps read with
    query_block: tuple[int, int]  # (first, last) pixel of the chosen pixel's block (the last may be cut short)
    memory_start: int  # the first key pixel the chosen pixel attends to under the local mask
    one_block: bool  # the whole image is one block: the local mask is the full causal mask
    steps: tuple[Step, ...]


def pixel_states(mask_row: np.ndarray, position: int, mark: int, shape: tuple[int, int]) -> np.ndarray:
    """The pixels before `position` ATTENDED where `mask_row` reads them, else EARLIER_MASKED; `position`
    itself `mark`; the later ones LATER."""
    state = np.where(np.arange(mask_row.size) < position, np.where(mask_row, ATTENDED, EARLIER_MASKED), LATER)
    state[position] = mark
    return state.reshape(shape)  # (H, W)


# --- words ---------------------------------------------------------------------------------------------


def span(first: int, last: int) -> str:
    return str(first) if first == last else f"{first}–{last}"


def pixel_span(first: int, last: int) -> str:
    return f"pixel {first}" if first == last else f"pixels {first}–{last}"


def causal_sentence(result: AutoregressivePixelsResult) -> str:
    i, count = result.index, int(result.causal[result.index].sum())
    later = result.pixels - 1 - i
    after = (", and it is the last pixel, so none come after it" if later == 0
             else f", and to none of the {later} after it")
    return (f"Under Image GPT's full causal mask it may attend to {plural(count, 'pixel')} "
            f"({span(0, i)}{', only itself' if count == 1 else ''}){after}.")


def local_sentence(result: AutoregressivePixelsResult) -> str:
    i = result.index
    start = f"Under the Image Transformer's local 1-D mask with blocks of {plural(result.block, 'pixel')}"
    if result.one_block:
        return (f"{start}, at least the image's {result.pixels}, the whole image is one block, so the local "
                f"mask equals the full causal mask.")
    (first, last), count, memory = result.query_block, int(result.local[i].sum()), result.memory_start
    if first == 0:
        return (f"{start}, pixel {i} lies in the first block ({pixel_span(0, last)}), which has no block "
                f"before it, so it attends to the same {plural(count, 'pixel')} as under the full causal mask.")
    attends = (f"{start}, its query block is {pixel_span(first, last)} and its memory adds the block before it, "
               f"{pixel_span(memory, first - 1)}, so it may attend to {plural(count, 'pixel')} ({span(memory, i)})")
    if memory == 0:  # the second block: the block before it is the first, so no earlier pixel is left out
        return (f"{attends}, itself and every pixel before it, as under the full causal mask: no block lies further "
                "back.")
    # One layer reads the block before; the next layer's keys have already read the block before theirs, so each
    # stacked layer reaches one block further back, and block q's pixels see every earlier pixel after q layers.
    layers = first // result.block
    return (f"{attends}; the {plural(memory, 'earlier pixel')} ({span(0, memory - 1)}) "
            f"{'is' if memory == 1 else 'are'} masked in one attention layer. Stacked layers reach one block further "
            f"back each, as each key pixel has already read the block before its own, so a stack of {layers} layers "
            f"lets pixel {i} depend on every earlier pixel.")


def steps_sentence(result: AutoregressivePixelsResult) -> str:
    phrases = ["pixel 0 is predicted with no pixel known", "pixel 1 with pixel 0 known and read"]  # steps 0 and 1
    for step in result.steps[2:]:
        k, (first, last) = step.predicted, step.read
        phrases.append(f"pixel {k} with {pixel_span(0, k - 1)} known, "
                       f"{'all' if first == 0 else pixel_span(first, last)} read")
    mask = "Image GPT's full causal mask" if result.mask_name == "causal" else "the Image Transformer's local mask"
    last = (f" Pixel {result.index} is the last, so its output predicts no further pixel."
            if result.index == result.pixels - 1 else "")
    return f"Generation order under {mask}, one pixel per step: {'; '.join(phrases)}.{last}"


# The student's option: (the figure's top line, what the words say about it).
ANSWERS = {
    "": ("Next-pixel prediction: the image as one sequence of pixels in raster order.", ""),
    "next-pixel": (
        "Your answer: next-pixel prediction ✓  Each pixel is predicted from the pixels before it.",
        ("Your answer, next-pixel prediction, is right: both models treat the pixels as a sequence and predict "
         "each one from the pixels before it.")),
    "noise-to-image": (
        ("Your answer: noise → image ✗  These models have no noise input: each pixel's value is sampled from a "
         "distribution predicted from the earlier pixels (see the generation order)."),
        ("Your answer, a map from noise vectors to images, is wrong. Mapping flattened noise to an image is what "
         "a GAN's generator does (a diffusion model also starts from noise and removes it step by step). Image "
         "GPT and the Image Transformer have no noise input: from the pixels generated so far they predict a "
         "probability for each value the next pixel can take, sample it, and repeat, one pixel at a time; the "
         "randomness is in that sampling.")),
}


def worked_example(result: AutoregressivePixelsResult) -> str:
    i, b = result.index, result.block
    if result.one_block:
        return (f"Here b = {b} is at least the {result.pixels} pixels, so ⌊j / b⌋ = 0 for every pixel and the "
                f"two masks are the same.")
    (first, last), k = result.query_block, i // b
    text = f"For pixel {i} and b = {b}: block ⌊{i} / {b}⌋ = {k} is {pixel_span(first, last)}"
    if k == 0:
        return text + ", the first block, so it keeps every earlier key, as the full causal mask does."
    return (text + f", the block before it is {pixel_span(result.memory_start, first - 1)}, so keys "
            f"{span(result.memory_start, i)} remain.")


# --- the figure's size, shared with the drawing -------------------------------------------------------

EDGE = 0.08  # inches between the figure's edge and its text
TEXT_SIZE, TITLE_SIZE = 8, 9  # pt: 8 pt is ≥ 10 CSS px on the phone image
# Inches, per layout: the left margin, the masks' side, the gap between the two columns, the room for the
# titles above the overlays and masks, for ticks and axis label below them, the overlays' greatest height, a
# step panel's greatest width and height, the room for the steps' header, and the legend's rows.
SIZES = {
    "wide": {"left": 0.52, "panel": 2.2, "gap": 0.92, "title": 2 * line_height(TITLE_SIZE) + 0.07, "below": 0.4,
             "overlay": 1.8, "step": (1.16, 0.78), "header": 2 * line_height(TITLE_SIZE), "legend_rows": 3},
    "narrow": {"left": 0.44, "panel": 1.24, "gap": 0.44, "title": 3 * line_height(TEXT_SIZE) + 0.05, "below": 0.36,
               "overlay": 1.24, "step": (1.24, 0.95), "header": line_height(TITLE_SIZE) + 0.04, "legend_rows": 7},
}
STEP_TITLE = 3 * line_height(TEXT_SIZE) + 0.04  # a step panel's three lines of title


@dataclass(frozen=True)
class Layout:
    inches: tuple[float, float]
    banner: tuple[str, ...]  # the top line(s): the student's answer marked, or what the figure shows
    panels: dict  # name -> (left, top, width, height) in inches from the figure's top left corner
    header: tuple[float, float]  # (left, top) of the steps' header


def figure_layout(height: int, width: int, choice: str, narrow: bool) -> Layout:
    """Where every panel goes, from the image's shape alone (the size is known before computing)."""
    size = SIZES["narrow" if narrow else "wide"]
    bold = bool(choice)  # the answer's line is bold, and bold letters are wider
    banner = tuple(textwrap.wrap(ANSWERS[choice][0], (46 if bold else 54) if narrow else (96 if bold else 104)))
    top = EDGE + len(banner) * line_height(TEXT_SIZE if narrow else TITLE_SIZE) + 0.1
    panel, (step_width, step_height) = size["panel"], size["step"]
    columns = (size["left"], size["left"] + panel + size["gap"])
    cell = min(panel / width, size["overlay"] / height)  # inches per pixel
    y = top + size["title"]
    panels = {name: (x + (panel - cell * width) / 2, y, cell * width, cell * height)
              for name, x in zip(("causal_overlay", "local_overlay"), columns)}
    y += cell * height + size["below"] + size["title"]
    panels |= {name: (x, y, panel, panel) for name, x in zip(("causal_mask", "local_mask"), columns)}
    y += panel + size["below"]
    # The steps: two by two below the masks on the phone, in a column right of the masks on the wide image.
    header = (EDGE, y) if narrow else (columns[1] + panel + 0.28, top)
    step_columns = columns if narrow else (header[0] + 0.06,)
    step_cell = min(step_width / width, step_height / height)
    pitch = step_cell * height + 0.1 + STEP_TITLE  # from a row of steps to the next
    for slot in range(4):
        row, col = divmod(slot, len(step_columns))
        panels[f"step{slot}"] = (step_columns[col] + (step_width - step_cell * width) / 2,
                                 header[1] + size["header"] + STEP_TITLE + row * pitch, step_cell * width,
                                 step_cell * height)
    bottom = max(y, header[1] + size["header"] + 4 // len(step_columns) * pitch)
    legend = size["legend_rows"] * line_height(TEXT_SIZE) * 1.25 + 0.12
    return Layout((NARROW_WIDTH if narrow else WIDTH, round(bottom + legend + EDGE, 2)), banner, panels, header)


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
                choices=(("causal", "Image GPT: full causal"), ("local", "Image Transformer: local"))),
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
        height, width, block = params.height, params.width, params.block
        pixels, index = height * width, params.row * width + params.col  # raster order: rows top to bottom
        causal = causal_mask(pixels)  # (H·W, H·W)
        block_of = np.arange(pixels) // block  # (H·W,)
        # The Image Transformer's 1-D local attention: a query block attends to itself and to the block of
        # pixels generated before it (memory = query block + `block` earlier pixels), never to later pixels.
        local = causal & (block_of[np.newaxis, :] >= block_of[:, np.newaxis] - 1)  # (query, key)
        selected = causal if params.mask == "causal" else local
        # The steps drawn: the first two pixels, the one after the chosen pixel (predicted from the output at
        # the chosen pixel, so it reads the chosen pixel's mask row), and the last pixel. Pixel k is predicted
        # from the output at pixel k − 1, whose mask row says which known pixels are read.
        steps = []
        for k in sorted({0, 1, min(index + 1, pixels - 1), pixels - 1}):
            row = selected[k - 1] if k else np.zeros(pixels, dtype=bool)  # (H·W,): none is known at k = 0
            read = np.flatnonzero(row)
            steps.append(Step(k, (int(read[0]), int(read[-1])) if k else None,
                              pixel_states(row, k, PREDICTED, (height, width))))
        first = block_of[index] * block
        return AutoregressivePixelsResult(
            height=height, width=width, row=params.row, col=params.col, index=index, pixels=pixels, block=block,
            mask_name=params.mask, choice=params.choice, causal=causal, local=local, selected=selected,
            query_block=(int(first), int(min(first + block, pixels) - 1)),
            memory_start=int(np.flatnonzero(local[index])[0]), one_block=block >= pixels, steps=tuple(steps))

    def alt(self, params: AutoregressivePixelsParams, result: AutoregressivePixelsResult) -> str:
        pixels = result.pixels
        text = (
            f"Next-pixel prediction on a {result.height} × {result.width} image read in raster order (left to "
            f"right, rows top to bottom), with two {pixels} × {pixels} masks whose rows are query pixels and "
            f"columns key pixels. Pixel ({result.row}, {result.col}) is number {result.index}. "
            f"{causal_sentence(result)} {local_sentence(result)} {steps_sentence(result)}"
        )
        return " ".join(filter(None, (text, ANSWERS[result.choice][1])))

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
            "its mask is causal_mask AND ⌊j / b⌋ ≥ ⌊i / b⌋ − 1 for query i and key j, in each of its layers. "
            "Drawn per pixel: Image GPT's positions are pixels (each one of 512 colour clusters); the Image "
            "Transformer's are colour channels, three per pixel, so its blocks count channel intensities. "
            f"{worked_example(result)}"
        )
        return " ".join(filter(None, (caption, ANSWERS[result.choice][1])))
