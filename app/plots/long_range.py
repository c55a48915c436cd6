"""Plot for the "long-range" visual: one panel per option of Q2, LSTM against Transformer.

Path length between tokens k apart; the matrix products a layer runs in order; the parameters at equal
d_model. Three columns on the wide image, stacked on the phone's; the student's ticked options framed.
"""

from __future__ import annotations

import matplotlib
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from matplotlib.ticker import MaxNLocator

from app.visuals.base import NARROW_WIDTH
from app.visuals.kinds.long_range import OPTIONS, verdict
from app.visuals.words import plural

from .figure import SEQUENTIAL, fixed_grid, new_figure

RNN_COLOUR, NORM_COLOUR, ATTENTION_COLOUR, FFN_COLOUR = matplotlib.colormaps[SEQUENTIAL]([0.15, 0.4, 0.62, 0.85])
TEXT_SIZE = 8  # pt: ≥ 10 CSS px on the phone image, shown at about its own size
TITLES = {"long-range": "Long-range dependencies", "hardware": "Faster on parallel hardware",
          "fewer-parameters": "Many fewer parameters?"}


def draw_long_range(result, inches: tuple[float, float]) -> Figure:
    """result: a LongRangeResult (app.visuals.kinds.long_range)."""
    figure = new_figure(*inches, layout=None)
    narrow = inches[0] == NARROW_WIDTH
    fixed_grid(figure, rows=3 if narrow else 1, cols=1 if narrow else 3, left=0.62, right=0.14,
               bottom=0.5 if narrow else 0.62, top=0.5, row_gap=1.02, col_gap=0.72)
    axes = figure.subplots(3, 1) if narrow else figure.subplots(1, 3)
    for ax, option, panel in zip(axes, OPTIONS, (_path_panel, _products_panel, _parameters_panel)):
        ax.tick_params(labelsize=TEXT_SIZE)
        panel(ax, result)
        # y given: matplotlib then skips measuring every tick label to place the title (none sits on top).
        ax.set_title(f"{TITLES[option]}\n{verdict(result, option)}", fontsize=9, y=1.0)
        if option in result.choice:
            for spine in ax.spines.values():
                spine.set_linewidth(2.4)  # pt: the frame of a panel whose option the student ticked
    return figure


def _path_panel(ax, result) -> None:
    k, rnn, attention = result.path_marks
    top = int(result.distances[-1])
    ax.plot(result.distances, result.rnn_path, color=RNN_COLOUR, linewidth=2, label=f"LSTM: k ({rnn} here)")
    ax.plot(result.distances, result.attention_path, color=ATTENTION_COLOUR, linewidth=2, linestyle="--",
            label="self-attention: 1")
    ax.axvline(k, color="0.5", linewidth=0.8, linestyle=":")
    ax.plot([k, k], [rnn, attention], "o", color="black", markersize=4)
    ax.set_xlim(0, top + 1)
    # Room above the LSTM's line for the legend, and below 1 so that attention's line clears the frame.
    ax.set_ylim(-0.05 * 1.75 * top, 1.75 * top)
    # Few ticks: each costs six artists to make and draw, and the marks and the legend give the numbers.
    _ticks_in_view(ax.xaxis, MaxNLocator(nbins=5, integer=True))
    _ticks_in_view(ax.yaxis, MaxNLocator(nbins=3, integer=True, min_n_ticks=2))
    ax.set_xlabel("distance k between the tokens", fontsize=TEXT_SIZE)
    ax.set_ylabel("steps between the two tokens", fontsize=TEXT_SIZE)
    ax.legend(loc="upper left", fontsize=TEXT_SIZE, handlelength=1.6, borderaxespad=0.3)


def _products_panel(ax, result) -> None:
    """Each product a box in its place in the order; a row per layer, its label above it."""
    n, lstm, block = result.tokens, result.lstm_products, len(result.block)
    longest = max(lstm, block)
    rows = ((lstm, 1.0, RNN_COLOUR, f"LSTM layer: {plural(lstm, 'product')},\n1 token each"),
            (block, 0.0, ATTENTION_COLOUR, f"Transformer block: {block},\n{plural(n, 'token')} each"))
    for count, y, colour, label in rows:
        # White edges between boxes while each box is wider than its edges (about 60 boxes on the axes);
        # the black outline round the bar keeps a short one (6 of 513) visible.
        ax.broken_barh([(index, 1) for index in range(count)], (y, 0.42), facecolors=colour,
                       edgecolors="white" if longest <= 60 else "none", linewidth=0.8)
        ax.add_patch(Rectangle((0, y), count, 0.42, fill=False, edgecolor="black", linewidth=0.8))
        ax.text(0.03, y + 0.5, label, fontsize=TEXT_SIZE, va="bottom", transform=ax.get_yaxis_transform())
    ax.set_xlim(0, longest * 1.04)
    _ticks_in_view(ax.xaxis, MaxNLocator(nbins=4, integer=True))
    ax.set_ylim(-0.1, 2.15)
    ax.set_yticks([])
    # At a short length the LSTM's bar is the shorter one, under the title "true": say why that changes with n.
    short = f"\nblock: {block} at any n; LSTM: n" if lstm < block else ""
    ax.set_xlabel(f"matrix products in order (n = {n}){short}", fontsize=TEXT_SIZE)


def _parameters_panel(ax, result) -> None:
    lstm, total = result.lstm_parameters, result.block_parameters
    unit, unit_name = (1e6, " (millions)") if total >= 1e6 else (1e3, " (thousands)") if total >= 1e4 else (1, "")
    ax.bar([0], [lstm / unit], width=0.62, color=RNN_COLOUR)
    ax.bar([1, 1, 1], [value / unit for value in (result.attention_parameters, result.ffn_parameters,
                                                   result.layer_norm_parameters)], width=0.62,
           bottom=[0, result.attention_parameters / unit, (total - result.layer_norm_parameters) / unit],
           color=[ATTENTION_COLOUR, FFN_COLOUR, NORM_COLOUR], label=["attention", "feed-forward", "LayerNorms"])
    ax.text(0, lstm / unit, f"{lstm:,}", ha="center", va="bottom", fontsize=TEXT_SIZE)
    ax.text(1, total / unit, f"{total:,}\n= {result.ratio} LSTM", ha="center",
            va="bottom", fontsize=TEXT_SIZE)
    ax.set_xticks([0, 1], labels=["LSTM\nlayer", "Transformer\nblock"], fontsize=TEXT_SIZE)
    ax.set_xlim(-0.5, 1.5)
    ax.set_ylim(0, 1.7 * total / unit)  # room above the bars for their numbers and the legend
    _ticks_in_view(ax.yaxis, MaxNLocator(nbins=3))  # a scale only: each bar is labelled with its count
    ax.set_ylabel(f"parameters{unit_name}, d_model = {result.d_model}", fontsize=TEXT_SIZE)
    ax.legend(loc="upper left", fontsize=TEXT_SIZE, handlelength=1.0, borderaxespad=0.3)


def _ticks_in_view(axis, locator=None) -> None:
    """Fix the axis's ticks to those its locator puts in view: matplotlib makes six artists per tick."""
    if locator:
        axis.set_major_locator(locator)
    low, high = axis.get_view_interval()
    ticks = axis.get_major_locator()()
    axis.set_ticks(ticks[(ticks >= low) & (ticks <= high)])
