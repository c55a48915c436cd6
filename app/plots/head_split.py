"""Flow diagram for the "head-split" visual: X → per-head W_Q^i, W_K^i, W_V^i → Q_i, K_i, V_i → A_i →
head_i → concat → W_O → output, and a table of what each of Q5's head widths would give.

Every number drawn comes from the engine result; the axes are in inches, so text sizes are exact.
"""

from __future__ import annotations

import re

import matplotlib
import numpy as np
from matplotlib.figure import Figure
from matplotlib.offsetbox import AnnotationBbox, HPacker, TextArea, VPacker
from matplotlib.patches import FancyArrowPatch, Rectangle
from matplotlib.text import Text

from app.visuals.kinds.head_split import (
    DIAGRAM_ROWS,
    FAN_GAP,
    HEADING_HEIGHT,
    HEADS_BEFORE_GROUP,
    MARGIN,
    ROW_GAP,
    TABLE_ROW,
    TABLE_TOP,
    drawn_heads,
    format_ratio,
    row_height,
)

from .figure import SEQUENTIAL, new_figure

FONT = {"wide": 9.0, "narrow": 8.0}  # 8 pt in a narrow SVG is 10.7 CSS px on a phone
LABEL_COLUMN = {"wide": 1.75, "narrow": 0.0}  # wide: each row's heading sits left of it
COLUMN_GAP = {"wide": 0.14, "narrow": 0.06}
CHOSEN_FILL = "#ffe08a"  # with a black outline and "◀ chosen": the highlight is not colour alone
SPANNING_FILL = "0.90"
LINE_SPACING = 1.35  # in font sizes
SCRIPT = 0.72  # sub- and superscripts, as a fraction of the font size, but at least MIN_FONT
MIN_FONT = 7.5  # points: 10 CSS px in the SVG (96 px per 72 pt), the least a phone reader gets
SCRIPT_OVERLAP = 0.05  # how far (in font sizes) a sub- and a superscript stack into each other


def head_colours(num_heads: int) -> list[tuple[float, float, float]]:
    """One light tint of viridis per head (black text reads on all of them)."""
    colormap = matplotlib.colormaps[SEQUENTIAL]
    values = [0.55] if num_heads == 1 else np.linspace(0.1, 0.9, num_heads)
    return [tuple(0.55 * np.asarray(colormap(value)[:3]) + 0.45) for value in values]


# Text with sub- and superscripts ------------------------------------------------------------------
# "W_{Q}^{0}" is drawn as plain-text pieces packed side by side: mathtext would parse each label
# with pyparsing (3-30 ms a label, ~60 labels a figure), several times the cost of the whole drawing.

_SCRIPTS = re.compile(r"(_\{[^}]*\}|\^\{[^}]*\})")


def _pieces(line: str) -> list[tuple[str, str, str]]:
    """[(base, sub, sup)] for one line of markup: "W_{Q}^{0} x" -> [("W", "Q", "0"), (" x", "", "")]."""
    pieces: list[list[str]] = []
    for part in _SCRIPTS.split(line):
        if not part:
            continue
        if part[0] in "_^" and part[1:2] == "{" and pieces:
            pieces[-1][1 if part[0] == "_" else 2] += part[2:-1]
        else:
            pieces.append([part, "", ""])
    return [tuple(piece) for piece in pieces]


def plain(markup: str) -> str:
    """The markup as one line of plain text: "W_{Q}^{0}" -> "W_Q^0" (for alt-like checks and tests)."""
    return "".join(base + (f"_{sub}" if sub else "") + (f"^{sup}" if sup else "")
                   for line in markup.split("\n") for base, sub, sup in _pieces(line))


def _line(line: str, size: float, weight: str, color: str) -> HPacker:
    """One line of markup as text pieces side by side; a script pair stacks sup over sub."""
    text = {"fontweight": weight, "color": color}
    children = []
    for base, sub, sup in _pieces(line):
        if base:
            children.append(TextArea(base, textprops={"fontsize": size, **text}))
        if sub or sup:
            script = {"fontsize": max(size * SCRIPT, MIN_FONT), **text}
            # A blank keeps the empty slot, so a lone subscript still sits low and a superscript high.
            children.append(VPacker(children=[TextArea(sup or " ", textprops=script),
                                              TextArea(sub or " ", textprops=script)],
                                    align="left", pad=0, sep=-SCRIPT_OVERLAP * size))
    return HPacker(children=children, align="center", pad=0, sep=0)


def rich_text(ax, x: float, y: float, markup: str, size: float, ha: str = "center", va: str = "center",
              weight: str = "normal", color: str = "black") -> None:
    """Draw markup (lines of text with _{sub} and ^{sup}) at (x, y) inches, aligned like ax.text.

    The pieces are laid out by matplotlib's offsetbox packers at draw time, from the real text extents.
    """
    lines = [_line(line, size, weight, color) for line in markup.split("\n")]
    block = VPacker(children=lines, align="center" if ha == "center" else "left", pad=0,
                    sep=(LINE_SPACING - 1.2) * size)
    placed = AnnotationBbox(block, (x, y), xycoords="data", frameon=False, pad=0, annotation_clip=False,
                            box_alignment=(0.5 if ha == "center" else 0.0, 0.5 if va == "center" else 1.0))
    for text in placed.findobj(Text):
        text.rich_text = markup  # what the pieces spell together, for whoever inspects the figure
    ax.add_artist(placed)


class Layout:
    """Positions in inches (origin bottom left) for one figure size."""

    def __init__(self, result, inches: tuple[float, float], narrow: bool):
        self.key = "narrow" if narrow else "wide"
        self.narrow = narrow
        self.width, self.height = inches
        self.font = FONT[self.key]
        self.left = MARGIN + LABEL_COLUMN[self.key]
        self.right = self.width - MARGIN
        self.blocks = drawn_heads(result.num_heads)
        gap = COLUMN_GAP[self.key]
        self.column_width = (self.right - self.left - gap * (len(self.blocks) - 1)) / len(self.blocks)
        self.columns = [self.left + index * (self.column_width + gap) for index in range(len(self.blocks))]
        # Rows top to bottom: (heading top, box top, box bottom).
        self.rows: dict[str, tuple[float, float, float]] = {}
        y = self.height - MARGIN
        for name in DIAGRAM_ROWS:
            heading_top = y
            top = y - HEADING_HEIGHT[self.key]
            bottom = top - row_height(name, narrow)
            self.rows[name] = (heading_top, top, bottom)
            y = bottom - (FAN_GAP if name == "input" else ROW_GAP)[self.key]
        self.table_top = self.rows["output"][2]

    def centre(self, index: int) -> float:
        return self.columns[index] + self.column_width / 2


def draw_head_split(result, inches: tuple[float, float], narrow: bool = False) -> Figure:
    figure = new_figure(*inches, layout=None)  # every label is placed in inches, in one axes
    ax = figure.add_axes((0.0, 0.0, 1.0, 1.0))
    ax.set_xlim(0, inches[0])
    ax.set_ylim(0, inches[1])
    ax.set_axis_off()
    layout = Layout(result, inches, narrow)
    colours = head_colours(result.num_heads)
    _draw_diagram(ax, layout, result, colours)
    _draw_table(ax, layout, result)
    return figure


# The diagram --------------------------------------------------------------------------------------


def _heading(ax, layout: Layout, row: str, narrow_text: str, wide_text: str) -> None:
    heading_top, top, bottom = layout.rows[row]
    if layout.narrow:
        rich_text(ax, layout.left, heading_top - 0.01, narrow_text, layout.font, ha="left", va="top",
                  color="0.15")
    else:
        rich_text(ax, MARGIN, (top + bottom) / 2, wide_text, layout.font, ha="left", color="0.15")


def _box(ax, left, bottom, width, height, fill, text, font, dashed=False, bold=False) -> None:
    ax.add_artist(Rectangle((left, bottom), width, height, facecolor=fill, edgecolor="0.2",
                            linewidth=0.9, linestyle="--" if dashed else "-"))
    rich_text(ax, left + width / 2, bottom + height / 2, text, font, weight="bold" if bold else "normal")


def _arrow(ax, x_from, y_from, x_to, y_to) -> None:
    ax.add_artist(FancyArrowPatch((x_from, y_from), (x_to, y_to), arrowstyle="-|>", mutation_scale=8,
                                  color="0.3", linewidth=0.9, shrinkA=0, shrinkB=0))


def _draw_diagram(ax, layout: Layout, result, colours) -> None:
    h, d_k, d_model = result.num_heads, result.head_dim, result.d_model
    font = layout.font
    span = layout.right - layout.left
    proj_rows, proj_cols = result.head_projection_shape
    one_head = h == 1

    def sub(name: str, index: str = "i") -> str:  # head i's matrix, or the one head's without an index
        return name if one_head else f"{name}_{{{index}}}"

    # The input, whole: no head gets a slice of X's columns.
    _heading(ax, layout, "input", f"input X: N = {result.tokens} tokens", f"input X\nN = {result.tokens} tokens")
    _, top, bottom = layout.rows["input"]
    reads = "the head reads" if one_head else "every head reads"
    features = "its one feature" if d_model == 1 else f"all {d_model} features"
    _box(ax, layout.left, bottom, span, top - bottom, SPANNING_FILL,
         f"X: N × {result.input_shape[1]}, {reads} {features}", font, bold=True)

    # Each head's own projections of all of X, then its attention.
    each = f"{proj_rows} × {proj_cols} each"
    if one_head:
        _heading(ax, layout, "projections", f"the head's projections: {each}", f"the head's projections\n{each}")
        queries, others = "Q = X W_{Q}", "K, V"
    else:
        _heading(ax, layout, "projections", f"each head's own projections: {each}",
                 f"own projections per head\n{each}")
        queries, others = "Q_{i} = X W_{Q}^{i}", "K_{i}, V_{i}"
    qkv_shape = f"N × {result.qkv_head_shape[1]} each"
    _heading(ax, layout, "qkv", f"{queries}, likewise {others}: {qkv_shape}",
             f"{queries}, likewise\n{others}: {qkv_shape}")
    n_rows, n_cols = result.weights_shape
    softmax = f"{sub('A')} = softmax({sub('Q')} {sub('K')}^{{T}} / √{d_k})"
    _heading(ax, layout, "weights", f"{softmax}: {n_rows} × {n_cols}", f"{softmax}\nN × N = {n_rows} × {n_cols}")
    head_formula = f"{sub('head')} = {sub('A')} {sub('V')}"
    out = f"N × {result.head_output_shape[1]}"
    _heading(ax, layout, "heads", f"{head_formula}: {out}", f"{head_formula}\n{out}")

    input_bottom = layout.rows["input"][2]
    for column, head in enumerate(layout.blocks):
        left, x = layout.columns[column], layout.centre(column)
        fill = "0.95" if head is None else colours[head]
        for row in ("projections", "qkv", "weights", "heads"):
            heading_top, top, bottom = layout.rows[row]
            previous_bottom = input_bottom if row == "projections" else layout.rows[_previous(row)][2]
            # All of X goes to every head: the arrows fan out from one point, not from column slices.
            start_x = layout.left + span / 2 if row == "projections" else x
            _arrow(ax, start_x, previous_bottom, x, heading_top)
            _box(ax, left, bottom, layout.column_width, top - bottom, fill,
                 _cell_text(row, head, result, layout), font, dashed=head is None)

    # The heads' outputs side by side, one stripe of d_k columns per head, then W_O.
    concat_width = result.concatenated_shape[1]
    if one_head:
        _heading(ax, layout, "concat", f"one head, no concat: N × {concat_width}",
                 f"one head: no concat\nN × {concat_width}")
    else:
        product = f"N × ({h} · {d_k}) = N × {concat_width}"
        _heading(ax, layout, "concat", f"concat: {product}", f"concat the heads\n{product}")
    heading_top, top, bottom = layout.rows["concat"]
    heads_bottom = layout.rows["heads"][2]
    for column in range(len(layout.blocks)):
        _arrow(ax, layout.centre(column), heads_bottom, layout.centre(column), heading_top)
    stripe = span / h
    for head in range(h):
        ax.add_artist(Rectangle((layout.left + head * stripe, bottom), stripe, top - bottom,
                                facecolor=colours[head], edgecolor="white" if h > 16 else "0.2",
                                linewidth=0.3 if h > 16 else 0.6))
    ax.add_artist(Rectangle((layout.left, bottom), span, top - bottom, fill=False, edgecolor="0.2",
                            linewidth=0.9))
    if stripe >= 0.55:  # room for "head_i" in each stripe; narrower stripes are told apart by colour
        for head in range(h):
            rich_text(ax, layout.left + (head + 0.5) * stripe, (top + bottom) / 2, sub("head", str(head)), font)

    o_rows, o_cols = result.output_projection_shape
    merged = "head" if one_head else "concat"
    _heading(ax, layout, "output", f"output: {merged} × W_{{O}} ({o_rows} × {o_cols})",
             f"output projection\nW_{{O}}: {o_rows} × {o_cols}")
    heading_top, top, bottom = layout.rows["output"]
    _arrow(ax, layout.left + span / 2, layout.rows["concat"][2], layout.left + span / 2, heading_top)
    _box(ax, layout.left, bottom, span, top - bottom, SPANNING_FILL,
         f"{merged} · W_{{O}} = N × {result.output_shape[1]}, X's shape", font, bold=True)


def _previous(row: str) -> str:
    return DIAGRAM_ROWS[DIAGRAM_ROWS.index(row) - 1]


def _cell_text(row: str, head: int | None, result, layout: Layout) -> str:
    h = result.num_heads
    if head is None:
        last = h - 2
        if row == "projections":
            return (f"heads {HEADS_BEFORE_GROUP}–{last}" if layout.narrow
                    else f"{last - HEADS_BEFORE_GROUP + 1} more heads\n{HEADS_BEFORE_GROUP} to {last}")
        return "same" if layout.narrow else "same shapes"
    index = "" if h == 1 else f"^{{{head}}}"
    if row == "projections":
        names = [f"W_{{{letter}}}{index}" for letter in "QKV"]
        return "\n".join(names) if layout.narrow else "  ".join(names)
    index = "" if h == 1 else f"_{{{head}}}"
    if row == "qkv":
        return "  ".join(f"{letter}{index}" for letter in "QKV")
    if row == "weights":
        return f"A{index}"
    return f"head{index}"


# The table of head widths -------------------------------------------------------------------------


def _draw_table(ax, layout: Layout, result) -> None:
    font = layout.font
    h, d_k, d_model = result.num_heads, result.head_dim, result.d_model
    top = layout.table_top - 0.2
    left, right = MARGIN, layout.width - MARGIN
    heads = "1 head" if h == 1 else f"{h} heads"
    title = (f"Head widths d_{{k}} (h = {h}, d_{{model}} = {d_model})" if layout.narrow
             else f"What each head width d_{{k}} would give, with h = {heads} and d_{{model}} = {d_model}")
    rich_text(ax, left, top, title, font, ha="left", va="top", weight="bold")
    if layout.narrow:
        headers = ("d_{k}", "concat\nN ×", "W_{O}", "weights", f"cost vs\n{d_k}")
        fractions = (0.09, 0.15, 0.28, 0.26, 0.13, 0.09)
    else:
        headers = ("head width\nd_{k}", "concat", "W_{O}", "weights of\nW_{Q}, W_{K}, W_{V}, W_{O}",
                   f"weights, cost\nvs d_{{k}} = {d_k}")
        fractions = (0.12, 0.14, 0.15, 0.2, 0.15, 0.24)
    edges = np.concatenate([[0.0], np.cumsum(fractions)]) * (right - left) + left
    centres = (edges[:-1] + edges[1:]) / 2
    for index, header in enumerate(headers):
        rich_text(ax, centres[index], top - 0.40, header, font, color="0.25")
    row_height = TABLE_ROW[layout.key]
    y = top - (TABLE_TOP[layout.key] - 0.2)
    ax.plot([left, right], [y, y], color="0.5", linewidth=0.6)
    for row in result.rows:
        chosen = row.head_dim == result.choice
        correct = row.head_dim == d_k
        bottom = y - row_height
        middle = bottom + row_height / 2
        if chosen:
            ax.add_artist(Rectangle((left, bottom), right - left, row_height, facecolor=CHOSEN_FILL,
                                    edgecolor="black", linewidth=1.2))
        concat_rows, concat_cols = row.output_projection_shape
        concat = str(row.concat_width) if layout.narrow else f"N × {row.concat_width}"
        cells = (str(row.head_dim), concat, f"{concat_rows} × {concat_cols}", f"{row.weights:,}",
                 format_ratio(row.relative_cost))
        weight = "bold" if (chosen or correct) and not layout.narrow else "normal"  # narrow: no room
        for index, cell in enumerate(cells):
            ax.text(centres[index], middle, cell, ha="center", va="center", fontsize=font, fontweight=weight)
        marks = []
        if correct:
            marks.append("✓" if layout.narrow else "✓ d_{model} / h")
        if chosen:
            marks.append("◀" if layout.narrow else "◀ chosen")
        if marks:
            rich_text(ax, edges[-2] + 0.04, middle, "  ".join(marks), font, ha="left", weight="bold")
        y = bottom
    if layout.narrow:
        legend = "✓ d_{model} / h: concat is d_{model} wide" + ("   ◀ chosen" if result.choice is not None else "")
    else:
        legend = ("✓ d_{k} = d_{model} / h: the concat is exactly d_{model} wide, so the output has X's shape.\n"
                  "Weights and multiply-adds grow in proportion to h · d_{k}.")
    rich_text(ax, left, y - 0.08, legend, font, ha="left", va="top", color="0.2")
