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
from ..words import plural

TOKENS = 4  # N: rows of the random input the engine runs on; the shapes hold for any N
SEED = 0
# The head widths Q5 (head-dimension) offers; `choice` is one of them, as the bank's option ids spell them.
OPTION_WIDTHS = (32, 64, 128, 512)
NO_CHOICE = "none"
# Beyond MAX_DRAWN_HEADS heads the diagram draws heads 0, 1 and h − 1 and groups the rest in one column.
MAX_DRAWN_HEADS = 4  # a column each must hold "W_Q^i … 128 × 32" legibly on a 340 px phone image
HEADS_BEFORE_GROUP = 2


def drawn_heads(num_heads: int) -> list[int | None]:
    """Head indices to draw as columns; None marks the column standing for the grouped middle heads."""
    if num_heads <= MAX_DRAWN_HEADS:
        return list(range(num_heads))
    return list(range(HEADS_BEFORE_GROUP)) + [None, num_heads - 1]


# Layout arithmetic (inches), shared with app/plots/head_split.py; here so that a page can size the
# image without importing matplotlib.
DIAGRAM_ROWS = ("input", "projections", "qkv", "weights", "heads", "concat", "output")
ROW_HEIGHT = {"wide": 0.46, "narrow": 0.36}
PROJECTION_ROW_HEIGHT = {"wide": 0.46, "narrow": 0.66}  # narrow: W_Q^i, W_K^i, W_V^i on three lines
SPANNING_ROW_HEIGHT = {"wide": 0.36, "narrow": 0.34}  # the input, concat and output bars
ROW_GAP = {"wide": 0.24, "narrow": 0.10}  # arrows between rows
FAN_GAP = {"wide": 0.42, "narrow": 0.34}  # arrows from X to every head's projections
HEADING_HEIGHT = {"wide": 0.0, "narrow": 0.23}  # narrow: each row's heading sits above it
TABLE_ROW = {"wide": 0.25, "narrow": 0.23}
TABLE_TOP = {"wide": 0.82, "narrow": 0.82}  # gap, title and two-line column headers
MARGIN = 0.08


def diagram_height(narrow: bool) -> float:
    layout = "narrow" if narrow else "wide"
    return (sum(row_height(row, narrow) for row in DIAGRAM_ROWS)
            + FAN_GAP[layout] + (len(DIAGRAM_ROWS) - 2) * ROW_GAP[layout]
            + len(DIAGRAM_ROWS) * HEADING_HEIGHT[layout])


def row_height(row: str, narrow: bool) -> float:
    layout = "narrow" if narrow else "wide"
    if row in ("input", "concat", "output"):
        return SPANNING_ROW_HEIGHT[layout]
    return (PROJECTION_ROW_HEIGHT if row == "projections" else ROW_HEIGHT)[layout]


def figure_height(table_rows: int, narrow: bool) -> float:
    layout = "narrow" if narrow else "wide"
    legend = 0.32 if narrow else 0.52  # wide: two lines
    return round(MARGIN + diagram_height(narrow) + TABLE_TOP[layout] + table_rows * TABLE_ROW[layout]
                 + legend + MARGIN, 2)


def _as_text(value):
    # A bank may write `choice: 128`; the bank's option ids and the select control send "128".
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


Choice = Annotated[Literal["none", "32", "64", "128", "512"], BeforeValidator(_as_text)]


class HeadSplitParams(VisualParams):
    d_model: int = Field(default=128, ge=1, le=1024)
    num_heads: int = Field(default=4, ge=1, le=64)
    choice: Choice = NO_CHOICE  # the head width the student picked in Q5, highlighted in the table

    @model_validator(mode="after")
    def _heads_divide_d_model(self) -> HeadSplitParams:
        # The engine's own check, so the sentence a student sees is the one the engine raises.
        split_heads(np.zeros((1, self.d_model), dtype=np.int8), self.num_heads)
        return self


@dataclass(frozen=True)
class WidthRow:
    """What heads of width `head_dim` would give with this d_model and h (one row of the table)."""

    head_dim: int
    concat_width: int  # h · d_k: the concatenated heads, N × concat_width
    output_projection_shape: tuple[int, int]  # W_O: (h · d_k) × d_model
    projection_weights: int  # W_Q, W_K, W_V together: 3 · d_model · h · d_k
    output_weights: int  # W_O: h · d_k · d_model
    relative_cost: Fraction  # h · d_k / d_model: weights and multiply-adds against d_k = d_model / h

    @property
    def weights(self) -> int:
        return self.projection_weights + self.output_weights


@dataclass(frozen=True)
class HeadSplitResult:
    d_model: int
    num_heads: int
    head_dim: int  # d_k, read off the engine's per-head queries
    tokens: int  # N of the run
    input_shape: tuple[int, int]  # X: (N, d_model)
    head_projection_shape: tuple[int, int]  # W_Q^i (and W_K^i, W_V^i): (d_model, d_k)
    qkv_head_shape: tuple[int, int]  # Q_i (and K_i, V_i): (N, d_k)
    weights_shape: tuple[int, int]  # A_i: (N, N)
    head_output_shape: tuple[int, int]  # head_i: (N, d_k)
    concatenated_shape: tuple[int, int]  # (N, h · d_k)
    output_projection_shape: tuple[int, int]  # W_O: (h · d_k, d_model)
    output_shape: tuple[int, int]  # (N, d_model)
    projection_weights: int  # the engine's w_q, w_k, w_v entries: 3 · d_model²
    output_weights: int  # the engine's w_o entries
    heads_read_every_feature: bool  # X @ W_Q^i (all d_model columns of X) equals head i's queries, for every i
    rows: tuple[WidthRow, ...]  # d_model / h and Q5's option widths, narrowest first
    choice: int | None  # the highlighted width, None when none is chosen

    @property
    def correct_row(self) -> WidthRow:
        return next(row for row in self.rows if row.head_dim == self.head_dim)

    @property
    def chosen_row(self) -> WidthRow | None:
        return next((row for row in self.rows if row.head_dim == self.choice), None)


def width_row(d_model: int, num_heads: int, head_dim: int) -> WidthRow:
    concat_width = num_heads * head_dim
    return WidthRow(
        head_dim=head_dim,
        concat_width=concat_width,
        output_projection_shape=(concat_width, d_model),
        projection_weights=3 * d_model * concat_width,
        output_weights=concat_width * d_model,
        relative_cost=Fraction(concat_width, d_model),
    )


def head_split_result(params: HeadSplitParams) -> HeadSplitResult:
    model = MultiHeadAttention.init(params.d_model, params.num_heads, seed=SEED, dtype=np.float32)
    x = np.random.default_rng(SEED).standard_normal((TOKENS, params.d_model)).astype(np.float32)  # (N, d_model)
    trace = model.forward_detailed(x)
    # Head i's projection is columns i·d_k:(i+1)·d_k of W_Q: the same split the engine applies to Q.
    w_q_heads = split_heads(model.w_q, model.num_heads)  # (h, d_model, d_k)
    w_k_heads = split_heads(model.w_k, model.num_heads)  # (h, d_model, d_k)
    w_v_heads = split_heads(model.w_v, model.num_heads)  # (h, d_model, d_k)
    reads_all = all(
        np.allclose(x @ w_heads[i], trace_heads[i], rtol=1e-4, atol=1e-5)
        for w_heads, trace_heads in ((w_q_heads, trace.q_heads), (w_k_heads, trace.k_heads),
                                     (w_v_heads, trace.v_heads))
        for i in range(model.num_heads)
    )
    h, n, d_k = trace.q_heads.shape
    widths = sorted({d_k, *OPTION_WIDTHS})
    return HeadSplitResult(
        d_model=model.d_model,
        num_heads=h,
        head_dim=d_k,
        tokens=n,
        input_shape=tuple(x.shape),
        head_projection_shape=tuple(w_q_heads.shape[1:]),
        qkv_head_shape=tuple(trace.q_heads.shape[1:]),
        weights_shape=tuple(trace.weights.shape[1:]),
        head_output_shape=tuple(trace.head_outputs.shape[1:]),
        concatenated_shape=tuple(trace.concatenated.shape),
        output_projection_shape=tuple(model.w_o.shape),
        output_shape=tuple(trace.output.shape),
        projection_weights=int(model.w_qkv.size),
        output_weights=int(model.w_o.size),
        heads_read_every_feature=reads_all,
        rows=tuple(width_row(model.d_model, h, width) for width in widths),
        choice=None if params.choice == NO_CHOICE else int(params.choice),
    )


# Words shared by the alt text, the caption and the figure --------------------------------------------


def format_ratio(ratio: Fraction) -> str:
    """4 -> "4×", 1/2 -> "1/2×", 4/3 -> "4/3×": exact, so a student can check it."""
    return f"{ratio.numerator}×" if ratio.denominator == 1 else f"{ratio.numerator}/{ratio.denominator}×"


def shape(dims: tuple[int, ...], first: str | None = "N") -> str:
    """(4, 32) -> "N × 32" (the token axis by name), or "128 × 32" with first=None."""
    parts = [first if first is not None and index == 0 else str(dim) for index, dim in enumerate(dims)]
    return " × ".join(parts)


def row_summary(result: HeadSplitResult, row: WidthRow) -> str:
    """What heads of this width give, against d_k = d_model / h."""
    h, d_model = result.num_heads, result.d_model
    concat_rows, concat_cols = row.output_projection_shape
    if row.head_dim == result.head_dim:
        return (f"d_k = {row.head_dim} = {d_model} / {h}: concat N × {row.concat_width} = d_model, "
                f"W_O {concat_rows} × {concat_cols}, {row.weights:,} weights")
    return (f"d_k = {row.head_dim}: concat N × {row.concat_width}, W_O {concat_rows} × {concat_cols}, "
            f"{row.weights:,} weights, {format_ratio(row.relative_cost)} the weights and multiply-adds "
            f"of d_k = {result.head_dim}")


def choice_sentence(result: HeadSplitResult) -> str:
    """One sentence on the highlighted width (or on d_model / h when none is chosen)."""
    h, d_model, d_k = result.num_heads, result.d_model, result.head_dim
    row = result.chosen_row
    if row is None or row.head_dim == d_k:
        lead = "" if row is None else f"Chosen d_k = {d_k} is d_model / h. "
        if h == 1:
            return lead + (f"With one head d_k = d_model = {d_k}: nothing is split, and the head's output "
                           f"is already N × {d_model}.")
        return lead + (f"d_k = {d_model} / {h} = {d_k} makes the concat N × {d_model}, the input's width, so "
                       f"the output has X's shape, and the {h} heads have the weights and multiply-adds of "
                       f"one head of width {d_model}.")
    concat_rows, concat_cols = row.output_projection_shape
    cost = f"{format_ratio(row.relative_cost)} the weights and multiply-adds of d_k = {d_k}"
    gives = (f"one head of {row.head_dim} gives N × {row.concat_width}" if h == 1 else
             f"{h} heads of {row.head_dim} concatenate to N × {row.concat_width}")
    return (f"Chosen d_k = {row.head_dim}: {gives}, not N × {d_model}; W_O must be "
            f"{concat_rows} × {concat_cols}; {cost}.")


@register
class HeadSplitKind(VisualKind):
    name = "head-split"
    title = "Multi-head shapes: each head projects all of X, then attends in d_k = d_model / h"
    Params = HeadSplitParams
    controls = (
        Control("d_model", "Model width d_model (features per token)", "int", min=1, max=1024, step=1),
        Control("num_heads", "Number of heads h (must divide d_model)", "int", min=1, max=64, step=1),
        Control("choice", "Head width d_k to compare (your answer)", "choice",
                choices=((NO_CHOICE, "none"), *((str(width), str(width)) for width in OPTION_WIDTHS))),
    )
    learn = "/learn/attention#head-split"
    format = "svg"
    choice_param = "choice"

    def figure_inches(self, params: HeadSplitParams, layout: str = "wide", result=None) -> tuple[float, float]:
        rows = len({params.d_model // params.num_heads, *OPTION_WIDTHS})  # the table's rows
        narrow = layout == "narrow"
        return (NARROW_WIDTH if narrow else WIDTH), figure_height(rows, narrow)

    narrow_inches = (NARROW_WIDTH, figure_height(len(OPTION_WIDTHS) + 1, narrow=True))  # the tallest

    def compute(self, params: HeadSplitParams) -> HeadSplitResult:
        return head_split_result(params)

    def alt(self, params: HeadSplitParams, result: HeadSplitResult) -> str:
        h, d_k, d_model = result.num_heads, result.head_dim, result.d_model
        proj = shape(result.head_projection_shape, first=None)
        w_o = shape(result.output_projection_shape, first=None)
        if h == 1:
            flow = (
                f"One head, so nothing is split: X (N × {d_model}) times the head's W_Q, W_K and W_V "
                f"(each {proj}) gives Q, K and V (each {shape(result.qkv_head_shape)}); "
                f"A = softmax(Q Kᵀ / √{d_k}) is N × N; the head's output A V is "
                f"{shape(result.head_output_shape)} and needs no concatenation; W_O ({w_o}) maps it to "
                f"the output, {shape(result.output_shape)}."
            )
        else:
            flow = (
                f"X (N × {d_model}) goes whole to each of the {h} heads; head i multiplies all {d_model} "
                f"features by its own W_Q^i, W_K^i and W_V^i (each {proj}) to get Q_i, K_i and V_i "
                f"(each {shape(result.qkv_head_shape)}); A_i = softmax(Q_i K_iᵀ / √{d_k}) is N × N; "
                f"head_i = A_i V_i is {shape(result.head_output_shape)}; the heads concatenate to "
                f"{shape(result.concatenated_shape)}; W_O ({w_o}) maps that to the output, "
                f"{shape(result.output_shape)}."
            )
        alt = (f"Flow diagram of multi-head attention with d_model = {d_model} and {plural(h, 'head')} of "
               f"d_k = {d_k}. {flow}")
        if len(drawn_heads(h)) < h:
            alt += (f" Heads {HEADS_BEFORE_GROUP} to {h - 2} are drawn as one column, as their shapes are "
                    "the same.")
        alt += " A table compares head widths: " + "; ".join(row_summary(result, row) for row in result.rows) + "."
        alt += " " + choice_sentence(result)
        return alt

    def caption(self, params: HeadSplitParams, result: HeadSplitResult) -> str:
        h, d_k, d_model = result.num_heads, result.head_dim, result.d_model
        concat_width = result.concatenated_shape[1]
        w_o_rows, w_o_cols = result.output_projection_shape
        if h == 1:
            flow = (
                f"With h = 1 there is one head: d_k = {d_model} / 1 = {d_k}, and its W_Q, W_K and W_V are "
                f"the whole {d_model} × {d_model} matrices, so Q = X W_Q is N × {d_k}. "
                f"A = softmax(Q Kᵀ / √{d_k}) is N × N and the head's output A V is N × {d_k}, already "
                f"{concat_width} wide; W_O ({w_o_rows} × {w_o_cols}) maps it to the N × "
                f"{result.output_shape[1]} output, X's shape, so residual connections add."
            )
        else:
            columns = "column i" if d_k == 1 else f"columns {d_k}·i to {d_k}·i + {d_k - 1}"
            flow = (
                f"d_k = d_model / h = {d_model} / {h} = {d_k}. Head i has its own W_Q^i, W_K^i and W_V^i, "
                f"each {d_model} × {d_k} ({columns} of the {d_model} × {d_model} W_Q, W_K, W_V): it "
                f"multiplies all {d_model} features of X, so Q_i = X W_Q^i is N × {d_k}. Splitting X's "
                f"columns instead would give each head only {d_k} of the {d_model} features. "
                f"A_i = softmax(Q_i K_iᵀ / √{d_k}) is N × N and head_i = A_i V_i is N × {d_k}; the {h} "
                f"heads side by side are N × ({h} · {d_k}) = N × {concat_width}, and W_O "
                f"({w_o_rows} × {w_o_cols}) maps them to the N × {result.output_shape[1]} output, X's "
                "shape, so residual connections add."
            )
        if d_k == 1:
            flow += (" With d_k = 1 each query and key is one number, so a score is a product of two "
                     "numbers and √1 = 1 leaves it unscaled.")
        weights = (
            f" Weights (biases aside): W_Q, W_K, W_V 3 · {d_model} · {d_model} = {result.projection_weights:,}"
            + ("" if h == 1 else f" ({h} · 3 · {d_model} · {d_k})")
            + f", W_O {d_model} · {d_model} = {result.output_weights:,}, "
            f"{result.projection_weights + result.output_weights:,} in all."
        )
        hw = f"{h}·w"
        table = (
            f" Heads of width w would concatenate to N × {hw} and need W_O of ({hw}) × {d_model}, so "
            f"4 · {d_model} · {hw} weights: {hw} / {d_model} times the d_k = {d_k} layer, and so are its "
            f"multiply-adds (W_Q, W_K, W_V and W_O: N · 4 · {d_model} · {hw}; the attention itself: "
            f"2 · N² · {hw}). The table does this arithmetic for Q5's options; the engine builds only "
            "d_k = d_model / h."
        )
        if not result.heads_read_every_feature:
            checked = " The engine's per-head queries did not match X times the head's projection columns."
        elif h == 1:
            checked = (f" The engine ran these shapes on N = {result.tokens} random tokens and checked that "
                       "X times W_Q, W_K, W_V gives the head's Q, K, V.")
        else:
            checked = (f" The engine ran these shapes on N = {result.tokens} random tokens and checked, for "
                       "every head, that X times that head's W_Q^i, W_K^i, W_V^i gives its Q_i, K_i, V_i.")
        return flow + weights + table + checked

    def draw(self, params: HeadSplitParams, result: HeadSplitResult, inches):
        from app.plots.head_split import draw_head_split

        return draw_head_split(result, inches, narrow=inches[0] <= NARROW_WIDTH)
