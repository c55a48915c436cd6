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

from app.visuals.kinds.head_split import (HEADS_BEFORE_GROUP, MARGIN, TABLE_ROW, TABLE_TOP, drawn_heads, format_ratio,
                                          row_positions, shape)

from .figure import SEQUENTIAL, new_figure

# Pairs are (wide, narrow), indexed by `narrow`, as in the kind's layout.
FONT = (9.0, 8.0)  # points; 8 pt in a narrow SVG is 10.7 CSS px on a phone
LABEL_COLUMN = (1.75, 0.0)  # wide: each row's heading sits left of it
COLUMN_GAP = (0.14, 0.06)
CHOSEN_FILL = "#ffe08a"  # with a black outline and "◀ chosen": the highlight is not colour alone
SPANNING_FILL = "0.90"
LINE_SPACING = 1.35  # in font sizes
SCRIPT = 0.72  # sub- and superscripts, as a fraction of the font size, but at least MIN_FONT
MIN_FONT = 7.5  # points: 10 CSS px in the SVG (96 px per 72 pt), the least a phone reader gets
SCRIPT_OVERLAP = 0.05  # how far (in font sizes) a sub- and a superscript stack into each other


# Text with sub- and superscripts ------------------------------------------------------------------
# "W_{Q}^{0}" is drawn as plain-text pieces packed side by side: mathtext would parse each label
# with pyparsing (3-30 ms a label, ~60 labels a figure), several times the cost of the whole drawing.
PIECE = re.compile(r"([^_^]+)(?:_\{([^}]*)\})?(?:\^\{([^}]*)\})?")  # (base, subscript, superscript)


class Sketch:
    """One figure's axes, in inches (origin bottom left), and where its rows and head columns go."""

    def __init__(self, ax, result, inches: tuple[float, float], narrow: bool):
        self.ax, self.narrow, self.font = ax, narrow, FONT[narrow]
        self.width, height = inches
        self.left, self.right = MARGIN + LABEL_COLUMN[narrow], self.width - MARGIN
        self.span = self.right - self.left
        self.heads = drawn_heads(result.num_heads)
        gap = COLUMN_GAP[narrow]
        self.column_width = (self.span - gap * (len(self.heads) - 1)) / len(self.heads)
        self.columns = [self.left + index * (self.column_width + gap) for index in range(len(self.heads))]
        # Each row's (heading top, box top, box bottom), as heights above the bottom edge.
        self.rows = {name: tuple(height - y for y in ys) for name, ys in row_positions(narrow).items()}

    def text(self, x: float, y: float, markup: str, ha: str = "center", va: str = "center", weight: str = "normal",
             color: str = "black") -> None:
        """Draw markup (lines of text with _{sub} and ^{sup}) at (x, y), aligned like ax.text; matplotlib's
        offsetbox packers lay the pieces out at draw time, from the real text extents."""
        style = {"fontweight": weight, "color": color}
        script = {"fontsize": max(self.font * SCRIPT, MIN_FONT), **style}
        lines = []
        for line in markup.split("\n"):
            pieces = []
            for base, sub, sup in PIECE.findall(line):
                pieces.append(TextArea(base, textprops={"fontsize": self.font, **style}))
                if sub or sup:  # sup over sub; a blank keeps the empty slot, so a lone subscript still sits low
                    pieces.append(VPacker(children=[TextArea(sup or " ", textprops=script),
                                                    TextArea(sub or " ", textprops=script)],
                                          align="left", pad=0, sep=-SCRIPT_OVERLAP * self.font))
            lines.append(HPacker(children=pieces, align="center", pad=0, sep=0))
        block = VPacker(children=lines, align="center" if ha == "center" else "left", pad=0,
                        sep=(LINE_SPACING - 1.2) * self.font)
        placed = AnnotationBbox(block, (x, y), frameon=False, pad=0, annotation_clip=False,
                                box_alignment=(0.5 if ha == "center" else 0.0, 0.5 if va == "center" else 1.0))
        for text in placed.findobj(Text):
            text.rich_text = markup  # what the pieces spell together, for whoever inspects the figure
        self.ax.add_artist(placed)

    def heading(self, row: str, markup: str, narrow_joint: str = ": ") -> None:
        """Two lines left of the row (wide), or one line above it, its lines joined by narrow_joint."""
        heading_top, top, bottom = self.rows[row]
        if self.narrow:
            self.text(self.left, heading_top - 0.01, markup.replace("\n", narrow_joint), ha="left", va="top",
                      color="0.15")
        else:
            self.text(MARGIN, (top + bottom) / 2, markup, ha="left", color="0.15")

    def box(self, left: float, width: float, row: str, fill, markup: str, dashed=False, bold=False) -> None:
        _, top, bottom = self.rows[row]
        self.ax.add_artist(Rectangle((left, bottom), width, top - bottom, facecolor=fill, edgecolor="0.2",
                                     linewidth=0.9, linestyle="--" if dashed else "-"))
        self.text(left + width / 2, (top + bottom) / 2, markup, weight="bold" if bold else "normal")

    def arrow(self, x_from: float, row_from: str, x_to: float, row_to: str) -> None:
        """From the bottom of one row's boxes to the top of the next row's heading."""
        self.ax.add_artist(FancyArrowPatch((x_from, self.rows[row_from][2]), (x_to, self.rows[row_to][0]),
                                           arrowstyle="-|>", mutation_scale=8, color="0.3", linewidth=0.9,
                                           shrinkA=0, shrinkB=0))


def draw_head_split(result, inches: tuple[float, float], narrow: bool = False) -> Figure:
    figure = new_figure(*inches, layout=None)  # every label is placed in inches, in one axes
    ax = figure.add_axes((0.0, 0.0, 1.0, 1.0), xlim=(0, inches[0]), ylim=(0, inches[1]))
    ax.set_axis_off()
    sketch = Sketch(ax, result, inches, narrow)
    _draw_diagram(sketch, result)
    _draw_table(sketch, result)
    return figure


def _draw_diagram(s: Sketch, result) -> None:
    h, d_k, d_model = result.num_heads, result.head_dim, result.d_model
    one_head = h == 1
    # One light tint of viridis per head (black text reads on all of them).
    tints = [0.55] if one_head else np.linspace(0.1, 0.9, h)
    colours = [0.55 * np.asarray(matplotlib.colormaps[SEQUENTIAL](tint)[:3]) + 0.45 for tint in tints]
    middle = s.left + s.span / 2

    def sub(name: str, index: str = "i") -> str:  # head i's matrix, or the one head's without an index
        return name if one_head else f"{name}_{{{index}}}"

    # The input, whole: no head gets a slice of X's columns.
    s.heading("input", f"input X\nN = {result.tokens} tokens")
    reads = "the head reads" if one_head else "every head reads"
    features = "its one feature" if d_model == 1 else f"all {d_model} features"
    s.box(s.left, s.span, "input", SPANNING_FILL, f"X: N × {result.shapes['X'][1]}, {reads} {features}", bold=True)

    # Each head's own projections of all of X, then its attention.
    whose = "the head's projections" if one_head else "own projections per head"
    s.heading("projections", f"{whose}\n{shape(result.shapes['W_Q^i'], '')} each")
    queries, others = ("Q = X W_{Q}", "K, V") if one_head else ("Q_{i} = X W_{Q}^{i}", "K_{i}, V_{i}")
    s.heading("qkv", f"{queries}, likewise\n{others}: N × {result.shapes['Q_i'][1]} each", narrow_joint=" ")
    softmax = f"{sub('A')} = softmax({sub('Q')} {sub('K')}^{{T}} / √{d_k})"
    s.heading("weights", f"{softmax}\nN × N = {shape(result.shapes['A_i'], '')}")
    s.heading("heads", f"{sub('head')} = {sub('A')} {sub('V')}\nN × {result.shapes['head_i'][1]}")
    for column, head in enumerate(s.heads):
        x = s.columns[column] + s.column_width / 2
        previous = "input"
        for row in ("projections", "qkv", "weights", "heads"):
            # All of X goes to every head: the arrows fan out from one point, not from column slices.
            s.arrow(middle if row == "projections" else x, previous, x, row)
            s.box(s.columns[column], s.column_width, row, "0.95" if head is None else colours[head],
                  _cell_text(row, head, h, s.narrow), dashed=head is None)
            previous = row
        s.arrow(x, "heads", x, "concat")

    # The heads' outputs side by side, one stripe of d_k columns per head, then W_O.
    concat_width = result.shapes['concat'][1]
    s.heading("concat", f"one head, no concat\nN × {concat_width}" if one_head
              else f"concat the heads\nN × ({h} · {d_k}) = N × {concat_width}")
    _, top, bottom = s.rows["concat"]
    stripe = s.span / h
    for head in range(h):
        s.ax.add_artist(Rectangle((s.left + head * stripe, bottom), stripe, top - bottom, facecolor=colours[head],
                                  edgecolor="white" if h > 16 else "0.2", linewidth=0.3 if h > 16 else 0.6))
        if stripe >= 0.55:  # room for "head_i" in each stripe; narrower stripes are told apart by colour
            s.text(s.left + (head + 0.5) * stripe, (top + bottom) / 2, sub("head", str(head)))
    s.ax.add_artist(Rectangle((s.left, bottom), s.span, top - bottom, fill=False, edgecolor="0.2", linewidth=0.9))

    s.heading("output", f"output projection\nW_{{O}} ({shape(result.shapes['W_O'], '')})")
    s.arrow(middle, "concat", middle, "output")
    s.box(s.left, s.span, "output", SPANNING_FILL,
          f"{'head' if one_head else 'concat'} · W_{{O}} = N × {result.shapes['output'][1]}, X's shape", bold=True)


def _cell_text(row: str, head: int | None, num_heads: int, narrow: bool) -> str:
    if head is None:  # the column standing for heads 2 to h − 2
        last = num_heads - 2
        if row != "projections":
            return "same" if narrow else "same shapes"
        return (f"heads {HEADS_BEFORE_GROUP}–{last}" if narrow
                else f"{last - HEADS_BEFORE_GROUP + 1} more heads\n{HEADS_BEFORE_GROUP} to {last}")
    sup, sub = ("", "") if num_heads == 1 else (f"^{{{head}}}", f"_{{{head}}}")
    return {"projections": ("\n" if narrow else "  ").join(f"W_{{{letter}}}{sup}" for letter in "QKV"),
            "qkv": "  ".join(f"{letter}{sub}" for letter in "QKV"), "weights": f"A{sub}", "heads": f"head{sub}"}[row]


def _draw_table(s: Sketch, result) -> None:
    h, d_k, d_model = result.num_heads, result.head_dim, result.d_model
    top = s.rows["output"][2] - 0.2
    left, right = MARGIN, s.width - MARGIN
    if s.narrow:
        title = f"Head widths d_{{k}} (h = {h}, d_{{model}} = {d_model})"
        headers = ("d_{k}", "concat\nN ×", "W_{O}", "weights", f"cost vs\n{d_k}")
        fractions = (0.09, 0.15, 0.28, 0.26, 0.13, 0.09)
    else:
        heads = "1 head" if h == 1 else f"{h} heads"
        title = f"What each head width d_{{k}} would give, with h = {heads} and d_{{model}} = {d_model}"
        headers = ("head width\nd_{k}", "concat", "W_{O}", "weights of\nW_{Q}, W_{K}, W_{V}, W_{O}",
                   f"weights, cost\nvs d_{{k}} = {d_k}")
        fractions = (0.12, 0.14, 0.15, 0.2, 0.15, 0.24)
    s.text(left, top, title, ha="left", va="top", weight="bold")
    edges = np.concatenate([[0.0], np.cumsum(fractions)]) * (right - left) + left
    centres = (edges[:-1] + edges[1:]) / 2
    for centre, header in zip(centres, headers):
        s.text(centre, top - 0.40, header, color="0.25")
    row_height = TABLE_ROW[s.narrow]
    y = top - (TABLE_TOP - 0.2)
    s.ax.plot([left, right], [y, y], color="0.5", linewidth=0.6)
    answered = result.answer_row.head_dim if result.answer_row is not None else None
    # Beside a numeric answer, the select's width is the hollow, dashed mark; on its own (Q5) it is the answer's mark.
    chosen_mark, chosen_line = ("◁", "dashed") if result.answered is not None else ("◀", "solid")
    for row in result.rows:
        # A numeric answer's row (solid) and the select's width (dashed) are marked apart: the student may pick
        # another width to compare with their answer.
        yours, chosen, correct = row.head_dim == answered, row.head_dim == result.choice, row.head_dim == d_k
        y -= row_height
        middle = y + row_height / 2
        if yours or chosen:
            s.ax.add_artist(Rectangle((left, y), right - left, row_height, facecolor=CHOSEN_FILL, edgecolor="black",
                                      linewidth=1.2, linestyle="solid" if yours else chosen_line))
        cells = (str(row.head_dim), str(row.concat_width) if s.narrow else f"N × {row.concat_width}",
                 shape(row.output_projection_shape, ""), f"{row.weights:,}", format_ratio(row.relative_cost))
        weight = "bold" if (yours or chosen or correct) and not s.narrow else "normal"  # narrow: no room
        for centre, cell in zip(centres, cells):
            s.ax.text(centre, middle, cell, ha="center", va="center", fontsize=s.font, fontweight=weight)
        marks = []
        if correct:  # beside "◀ your answer" only the tick fits the wide table (its legend says what it means)
            marks.append("✓" if s.narrow or yours else "✓ d_{model} / h")
        if yours:
            marks.append("◀" if s.narrow else "◀ your answer")
        if chosen and not yours:
            marks.append(chosen_mark if s.narrow else f"{chosen_mark} chosen")
        if marks:
            s.text(edges[-2] + 0.04, middle, "  ".join(marks), ha="left", weight="bold")
    if s.narrow:
        shown_yours = answered is not None and any(row.head_dim == answered for row in result.rows)
        shown_chosen = result.chosen_row is not None and result.choice != answered
        marks = ["◀ yours"] * shown_yours + [f"{chosen_mark} chosen"] * shown_chosen
        # Both marks go on a line of their own (the figure is a line taller, figure_height's both_marks).
        legend = ("✓ d_{model} / h: concat d_{model} wide, W_{O} square" + ("\n" if len(marks) == 2 else "   ")
                  + "   ".join(marks)).rstrip()
    else:
        legend = ("✓ d_{k} = d_{model} / h: the concat is exactly d_{model} wide, so W_{O} is square. Every width ends\n"
                  "in X's shape; weights and multiply-adds grow with h · d_{k}, and below d_{model} the concat is a bottleneck.")
    s.text(left, y - 0.08, legend, ha="left", va="top", color="0.2")
