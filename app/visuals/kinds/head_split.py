"""The "head-split" visual: every head reads all d_model input features through its own projections,
and it is the projected Q, K and V (not the input X) that are divided into h heads of d_k = d_model / h.

The shapes come from running the engine's MultiHeadAttention on a few random tokens; a table answers
Q5's options by showing what each head width d_k would make of the concatenation, W_O and the cost.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Annotated, Literal

import numpy as np
from pydantic import BeforeValidator, Field, model_validator

from app.engine import MultiHeadAttention, split_heads

from .. import register
from ..base import NARROW_WIDTH, WIDTH, Control, VisualKind, VisualParams
from ..predictions import NumberParam, number_text
from ..words import plural
from .multi_head import check_heads_divide

NUM_HEADS_MIN, NUM_HEADS_MAX = 1, 64

TOKENS = 4  # N: rows of the random input the engine runs on; the shapes hold for any N
SEED = 0
OPTION_WIDTHS = (32, 64, 128, 512)  # the head widths Q5 (head-dimension) offers, as its option ids spell them
NO_CHOICE = "none"
# A numeric answer's width gets a row of the table while its heads concatenate to at most this many features: the
# widest the options give (64 heads of 512), so the table's columns hold every number.
MAX_TABLE_CONCAT = 64 * 512
# Beyond MAX_DRAWN_HEADS heads the diagram draws heads 0, 1 and h − 1 and groups the rest in one column.
MAX_DRAWN_HEADS = 4  # a column each must hold "W_Q^i … 128 × 32" legibly on a 340 px phone image
HEADS_BEFORE_GROUP = 2


def drawn_heads(num_heads: int) -> list[int | None]:
    """Head indices to draw as columns; None marks the column standing for the grouped middle heads."""
    if num_heads <= MAX_DRAWN_HEADS:
        return list(range(num_heads))
    return list(range(HEADS_BEFORE_GROUP)) + [None, num_heads - 1]


# Layout in inches, shared with app/plots/head_split.py; here so that a page can size the image without
# importing matplotlib. Pairs are (wide, narrow), indexed by `narrow`. Narrow: W_Q^i, W_K^i, W_V^i stack
# on three lines, and each row's heading sits above the row (HEADING) instead of on its left.
ROWS = {"input": (0.36, 0.34), "projections": (0.46, 0.66), "qkv": (0.46, 0.36), "weights": (0.46, 0.36),
        "heads": (0.46, 0.36), "concat": (0.36, 0.34), "output": (0.36, 0.34)}  # the diagram's rows, top down
HEADING, ROW_GAP, FAN_GAP = (0.0, 0.23), (0.24, 0.10), (0.42, 0.34)  # FAN_GAP: the arrows from X to every head
TABLE_TOP = 0.82  # gap, title and two-line column headers
TABLE_ROW, LEGEND = (0.25, 0.23), (0.52, 0.32)  # the wide legend has two lines
NARROW_LINE = 0.16  # a second line of the phone's legend
MARGIN = 0.08


def row_positions(narrow: bool) -> dict[str, tuple[float, float, float]]:
    """Each diagram row's (heading top, box top, box bottom) in inches below the figure's top edge."""
    positions, y = {}, MARGIN
    for name, heights in ROWS.items():
        top = y + HEADING[narrow]
        positions[name] = (y, top, top + heights[narrow])
        y = top + heights[narrow] + (FAN_GAP if name == "input" else ROW_GAP)[narrow]
    return positions


def figure_height(table_rows: int, narrow: bool, both_marks: bool = False) -> float:
    """both_marks: a numeric answer and a compared width, whose two marks the phone's legend explains on a line
    of their own."""
    diagram = row_positions(narrow)["output"][2]
    legend = LEGEND[narrow] + (NARROW_LINE if narrow and both_marks else 0.0)
    return round(diagram + TABLE_TOP + table_rows * TABLE_ROW[narrow] + legend + MARGIN, 2)


# A bank may write `choice: 128`; the bank's option ids and the select control send "128".
Choice = Annotated[Literal["none", "32", "64", "128", "512"], BeforeValidator(str)]


class HeadSplitParams(VisualParams):
    d_model: int = Field(default=128, ge=1, le=1024)
    num_heads: int = Field(default=4, ge=NUM_HEADS_MIN, le=NUM_HEADS_MAX)
    choice: Choice = NO_CHOICE  # the head width the student picked in Q5, highlighted in the table
    answer_width: NumberParam = ""  # a numeric question's answer, the d_k the student worked out ("" for none)

    @model_validator(mode="after")
    def _heads_divide_d_model(self) -> HeadSplitParams:
        check_heads_divide(self.num_heads, self.d_model, NUM_HEADS_MIN, NUM_HEADS_MAX)
        return self


@dataclass(frozen=True)
class WidthRow:
    """What heads of width `head_dim` would give with this d_model and h (one row of the table)."""

    head_dim: int
    concat_width: int  # h · d_k: the concatenated heads, N × concat_width
    output_projection_shape: tuple[int, int]  # W_O: (h · d_k) × d_model
    weights: int  # W_Q, W_K, W_V (3 · d_model · h · d_k) and W_O (h · d_k · d_model)
    relative_cost: Fraction  # h · d_k / d_model: weights and multiply-adds against d_k = d_model / h


@dataclass(frozen=True)
class HeadSplitResult:
    d_model: int
    num_heads: int
    head_dim: int  # d_k, read off the engine's per-head queries
    tokens: int  # N of the run
    # The engine's shapes by the diagram's names: X (N, d_model); W_Q^i, like W_K^i and W_V^i, (d_model, d_k);
    # Q_i, like K_i and V_i, (N, d_k); A_i (N, N); head_i (N, d_k); concat (N, h · d_k); W_O (h · d_k, d_model);
    # output (N, d_model).
    shapes: dict[str, tuple[int, int]]
    projection_weights: int  # the engine's w_q, w_k, w_v entries: 3 · d_model²
    output_weights: int  # the engine's w_o entries
    heads_read_every_feature: bool  # X @ W_Q^i (all d_model columns of X) equals head i's queries, for every i
    rows: tuple[WidthRow, ...]  # d_model / h, Q5's option widths and a numeric answer's width, narrowest first
    choice: int | None  # the width picked in the select (Q5's answer, or one to compare), None when none is
    answered: float | None = None  # a numeric question's answer, marked apart from `choice`
    answer_row: WidthRow | None = None  # a whole-numbered answer's numbers, in `rows` too when they fit the table

    @property
    def chosen_row(self) -> WidthRow | None:
        return next((row for row in self.rows if row.head_dim == self.choice), None)


# Words shared by the alt text, the caption and the figure --------------------------------------------


def format_ratio(ratio: Fraction) -> str:
    """4 -> "4×", 1/2 -> "1/2×", 4/3 -> "4/3×": exact, so a student can check it."""
    return f"{ratio.numerator}×" if ratio.denominator == 1 else f"{ratio.numerator}/{ratio.denominator}×"


def shape(dims: tuple[int, int], first: str = "N") -> str:
    """(4, 32) -> "N × 32" (the token axis by name), or "128 × 32" with first=""."""
    return f"{first or dims[0]} × {dims[1]}"


def row_summary(result: HeadSplitResult, row: WidthRow) -> str:
    """What heads of this width give, against d_k = d_model / h."""
    concat = f"concat N × {row.concat_width}"
    w_o = f"W_O {shape(row.output_projection_shape, '')}, {row.weights:,} weights"
    if row.head_dim == result.head_dim:
        return f"d_k = {row.head_dim} = {result.d_model} / {result.num_heads}: {concat} = d_model, {w_o}"
    return (f"d_k = {row.head_dim}: {concat}, {w_o}, {format_ratio(row.relative_cost)} the weights and multiply-adds "
            f"of d_k = {result.head_dim}")


def answer_width(answered: float | None) -> int | None:
    """A numeric answer as a head width: a whole number of features from 1, else None."""
    if answered is None or answered != int(answered) or answered < 1:
        return None
    return int(answered)


def width_row(width: int, d_model: int, h: int) -> WidthRow:
    return WidthRow(width, h * width, (h * width, d_model), 4 * d_model * h * width, Fraction(h * width, d_model))


def table_widths(d_k: int, h: int, answered: float | None) -> list[int]:
    """The table's widths: d_model / h, Q5's options, and a numeric answer's width where its numbers fit."""
    width = answer_width(answered)
    return sorted({d_k, *OPTION_WIDTHS, *([width] if width and h * width <= MAX_TABLE_CONCAT else [])})


def width_sentence(result: HeadSplitResult, row: WidthRow, lead: str) -> str:
    """What heads of `row`'s width give, opened by `lead` ("Your answer, d_k", "Chosen d_k", or "" for d_model / h's
    row on its own)."""
    h, d_model, d_k = result.num_heads, result.d_model, result.head_dim
    if row.head_dim == d_k:
        said = f"{lead} = {d_k}{',' * lead.startswith('Your')} is d_model / h. " if lead else ""
        if h == 1:
            return said + f"With one head d_k = d_model = {d_k}: nothing is split, and the head's output is already N × {d_model}."
        return said + (f"d_k = {d_model} / {h} = {d_k} makes the concat N × {d_model}, the input's width, so W_O is "
                       f"a square {d_model} × {d_model} and the {h} heads have the weights and multiply-adds of one "
                       f"head of width {d_model}. Any width gives X's shape in the end (W_O maps the concat back to "
                       f"{d_model}): wider heads pay for it in weights and multiply-adds, and narrower ones, though "
                       f"cheaper, pass every token through fewer than {d_model} features.")
    gives = (f"one head of {row.head_dim} gives N × {row.concat_width}" if h == 1 else
             f"{h} heads of {row.head_dim} concatenate to N × {row.concat_width}")
    unlisted = "" if row in result.rows else " (too wide for the table)"
    narrower = (f" The saving has a price: W_O sees only {row.concat_width} numbers per token, so the layer's outputs "
                f"span at most {row.concat_width} of the {d_model} dimensions (a bottleneck; d_k = {d_k} keeps all "
                f"{d_model})." if row.concat_width < d_model else "")
    return (f"{lead} = {row.head_dim}{unlisted}: {gives}, not N × {d_model}; W_O must be "
            f"{shape(row.output_projection_shape, '')} to map it back to X's shape; {format_ratio(row.relative_cost)} "
            f"the weights and multiply-adds of d_k = {d_k}.{narrower}")


def choice_sentence(result: HeadSplitResult) -> str:
    """The sentences on the student's numeric answer and on the width picked in the select, each where there is one
    (the select's only when it picks another width than the answer); on d_model / h's width when there is neither."""
    sentences = []
    if result.answered is not None and result.answer_row is None:
        sentences.append(f"Your answer, {number_text(result.answered)}, is not a head width: d_k counts the features "
                         "of each head's queries, a whole number from 1 (so the table has no row for it); d_model / h = "
                         f"{result.d_model} / {result.num_heads} = {result.head_dim}.")
    elif result.answer_row is not None:
        sentences.append(width_sentence(result, result.answer_row, "Your answer, d_k"))
    chosen = result.chosen_row
    if chosen is not None and chosen != result.answer_row:
        sentences.append(width_sentence(result, chosen, "Chosen d_k"))
    if not sentences:
        sentences.append(width_sentence(result, width_row(result.head_dim, result.d_model, result.num_heads), ""))
    return " ".join(sentences)


@register
class HeadSplitKind(VisualKind):
    name = "head-split"
    title = "Multi-head shapes: each head projects all of X, then attends in d_k = d_model / h"
    Params = HeadSplitParams
    controls = (
        Control("d_model", "Model width d_model (features per token)", "int", min=1, max=1024, step=1),
        Control("num_heads", "Number of heads h (must divide d_model)", "int", min=NUM_HEADS_MIN, max=NUM_HEADS_MAX,
                step=1),
        Control("choice", "Head width d_k to compare", "choice",
                choices=((NO_CHOICE, "none"), *((str(width), str(width)) for width in OPTION_WIDTHS))),
    )
    learn = "/learn/attention#head-split"
    format = "svg"
    choice_param = "choice"

    def figure_inches(self, params: HeadSplitParams, layout: str = "wide", result=None) -> tuple[float, float]:
        answered = float(params.answer_width) if params.answer_width else None
        table_rows = len(table_widths(params.d_model // params.num_heads, params.num_heads, answered))
        narrow = layout == "narrow"
        both_marks = params.choice != NO_CHOICE and answer_width(answered) is not None
        return (NARROW_WIDTH if narrow else WIDTH), figure_height(table_rows, narrow, both_marks)

    narrow_inches = (NARROW_WIDTH, figure_height(len(OPTION_WIDTHS) + 2, narrow=True, both_marks=True))  # the tallest
    predictions = {"numeric": ("answer_width", None)}  # the d_k a numeric question's student worked out

    def compute(self, params: HeadSplitParams) -> HeadSplitResult:
        model = MultiHeadAttention.init(params.d_model, params.num_heads, seed=SEED, dtype=np.float32)
        x = np.random.default_rng(SEED).standard_normal((TOKENS, params.d_model)).astype(np.float32)  # (N, d_model)
        trace = model.forward_detailed(x)
        h, n, d_k = trace.q_heads.shape
        # Head i's projection is columns i·d_k:(i+1)·d_k of W_Q: the same split the engine applies to Q.
        w_q_heads = split_heads(model.w_q, h)  # (h, d_model, d_k)
        # X @ (h, d_model, d_k) is (h, N, d_k): every head's projection of all of X, against the engine's heads.
        reads_all = all(np.allclose(x @ split_heads(w, h), heads, rtol=1e-4, atol=1e-5)
                        for w, heads in ((model.w_q, trace.q_heads), (model.w_k, trace.k_heads),
                                         (model.w_v, trace.v_heads)))
        d_model = model.d_model
        answered = float(params.answer_width) if params.answer_width else None
        width = answer_width(answered)
        return HeadSplitResult(
            d_model=d_model, num_heads=h, head_dim=d_k, tokens=n,
            shapes={"X": x.shape, "W_Q^i": w_q_heads.shape[1:], "Q_i": trace.q_heads.shape[1:],
                    "A_i": trace.weights.shape[1:], "head_i": trace.head_outputs.shape[1:],
                    "concat": trace.concatenated.shape, "W_O": model.w_o.shape, "output": trace.output.shape},
            projection_weights=int(model.w_qkv.size), output_weights=int(model.w_o.size),
            heads_read_every_feature=reads_all,
            rows=tuple(width_row(w, d_model, h) for w in table_widths(d_k, h, answered)),
            choice=None if params.choice == NO_CHOICE else int(params.choice),
            answered=answered, answer_row=width_row(width, d_model, h) if width else None,
        )

    def alt(self, params: HeadSplitParams, result: HeadSplitResult) -> str:
        h, d_k, d_model, shapes = result.num_heads, result.head_dim, result.d_model, result.shapes
        proj, qkv, head = shape(shapes["W_Q^i"], ""), shape(shapes["Q_i"]), shape(shapes["head_i"])
        if h == 1:
            flow = (f"One head, so nothing is split: X (N × {d_model}) times the head's W_Q, W_K and W_V (each {proj}) "
                    f"gives Q, K and V (each {qkv}); A = softmax(Q Kᵀ / √{d_k}) is N × N; the head's output A V is "
                    f"{head} and needs no concatenation; W_O ({shape(shapes['W_O'], '')}) maps it")
        else:
            flow = (f"X (N × {d_model}) goes whole to each of the {h} heads; head i multiplies all {d_model} features "
                    f"by its own W_Q^i, W_K^i and W_V^i (each {proj}) to get Q_i, K_i and V_i (each {qkv}); A_i = "
                    f"softmax(Q_i K_iᵀ / √{d_k}) is N × N; head_i = A_i V_i is {head}; the heads concatenate to "
                    f"{shape(shapes['concat'])}; W_O ({shape(shapes['W_O'], '')}) maps that")
        alt = (f"Flow diagram of multi-head attention with d_model = {d_model} and {plural(h, 'head')} of d_k = {d_k}. "
               f"{flow} to the output, {shape(shapes['output'])}.")
        if len(drawn_heads(h)) < h:
            alt += f" Heads {HEADS_BEFORE_GROUP} to {h - 2} are drawn as one column, as their shapes are the same."
        alt += " A table compares head widths: " + "; ".join(row_summary(result, row) for row in result.rows) + "."
        return alt + " " + choice_sentence(result)

    def caption(self, params: HeadSplitParams, result: HeadSplitResult) -> str:
        h, d_k, d_model = result.num_heads, result.head_dim, result.d_model
        w_o, concat_width = shape(result.shapes["W_O"], ""), result.shapes["concat"][1]
        output = f"the N × {result.shapes['output'][1]} output, X's shape, so residual connections add."
        if h == 1:
            flow = (f"With h = 1 there is one head: d_k = {d_model} / 1 = {d_k}, and its W_Q, W_K and W_V are the "
                    f"whole {d_model} × {d_model} matrices, so Q = X W_Q is N × {d_k}. A = softmax(Q Kᵀ / √{d_k}) is N "
                    f"× N and the head's output A V is N × {d_k}, already {concat_width} wide; W_O ({w_o}) maps it to "
                    f"{output}")
        else:
            columns = "column i" if d_k == 1 else f"columns {d_k}·i to {d_k}·i + {d_k - 1}"
            flow = (f"d_k = d_model / h = {d_model} / {h} = {d_k}. Head i has its own W_Q^i, W_K^i and W_V^i, each "
                    f"{d_model} × {d_k} ({columns} of the {d_model} × {d_model} W_Q, W_K, W_V): it multiplies all "
                    f"{d_model} features of X, so Q_i = X W_Q^i is N × {d_k}. Splitting X's columns instead would give "
                    f"each head only {d_k} of the {d_model} features. A_i = softmax(Q_i K_iᵀ / √{d_k}) is N × N and "
                    f"head_i = A_i V_i is N × {d_k}; the {h} heads side by side are N × ({h} · {d_k}) = N × "
                    f"{concat_width}, and W_O ({w_o}) maps them to {output}")
        if d_k == 1:
            flow += (" With d_k = 1 each query and key is one number, so a score is a product of two numbers and √1 = "
                     "1 leaves it unscaled.")
        per_head = "" if h == 1 else f" ({h} · 3 · {d_model} · {d_k})"
        weights = (f" Weights (biases aside): W_Q, W_K, W_V 3 · {d_model} · {d_model} = {result.projection_weights:,}"
                   f"{per_head}, W_O {d_model} · {d_model} = {result.output_weights:,}, "
                   f"{result.projection_weights + result.output_weights:,} in all.")
        hw = f"{h}·w"
        row = result.answer_row
        answer_row = (f", and your answer {row.head_dim}" if row in result.rows and row.head_dim not in (d_k, *OPTION_WIDTHS)
                      else "")
        table = (f" Heads of width w would concatenate to N × {hw} and need W_O of ({hw}) × {d_model}, so 4 · "
                 f"{d_model} · {hw} weights: {hw} / {d_model} times the d_k = {d_k} layer, and so are its "
                 f"multiply-adds (W_Q, W_K, W_V and W_O: N · 4 · {d_model} · {hw}; the attention itself: 2 · N² · "
                 f"{hw}). The table does this arithmetic for d_model / h and the widths "
                 f"{', '.join(map(str, OPTION_WIDTHS[:-1]))} and {OPTION_WIDTHS[-1]} (the seed quiz's options)"
                 f"{answer_row}; the engine builds only d_k = d_model / h.")
        ran = f" The engine ran these shapes on N = {result.tokens} random tokens and checked"
        if not result.heads_read_every_feature:
            checked = " The engine's per-head queries did not match X times the head's projection columns."
        elif h == 1:
            checked = f"{ran} that X times W_Q, W_K, W_V gives the head's Q, K, V."
        else:
            checked = f"{ran}, for every head, that X times that head's W_Q^i, W_K^i, W_V^i gives its Q_i, K_i, V_i."
        spoken = result.choice is not None or result.answered is not None  # the student's answer, answered
        return flow + weights + table + checked + (" " + choice_sentence(result) if spoken else "")

    def draw(self, params: HeadSplitParams, result: HeadSplitResult, inches):
        from app.plots.head_split import draw_head_split

        return draw_head_split(result, inches, narrow=inches[0] <= NARROW_WIDTH)
