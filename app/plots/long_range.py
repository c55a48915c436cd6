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
from app.visuals.kinds.long_range import OPTIONS, ratio_text, verdict
from app.visuals.words import plural

from .figure import SEQUENTIAL, fixed_grid, new_figure

_COLOURS = matplotlib.colormaps[SEQUENTIAL]
RNN_COLOUR = _COLOURS(0.15)
ATTENTION_COLOUR = _COLOURS(0.62)
FFN_COLOUR = _COLOURS(0.85)
NORM_COLOUR = _COLOURS(0.4)
TEXT_SIZE = 8  # pt: ≥ 10 CSS px on the phone image, shown at about its own size
TITLE_SIZE = 9
TICKED_FRAME = 2.4  # pt: the frame of a panel whose option the student ticked
BAR_Y = {"lstm": 1.0, "block": 0.0}  # the bottom of each layer's bar, in data units
BAR_HEIGHT = 0.42
TITLES = {"long-range": "Long-range dependencies", "hardware": "Faster on parallel hardware",
          "fewer-parameters": "Many fewer parameters?"}


def draw_long_range(result, inches: tuple[float, float]) -> Figure:
    """result: a LongRangeResult (app.visuals.kinds.long_range)."""
    figure = new_figure(*inches, layout=None)
    if inches[0] == NARROW_WIDTH:
        fixed_grid(figure, rows=3, left=0.62, right=0.14, bottom=0.5, top=0.5, row_gap=1.02)
        axes = figure.subplots(3, 1)
    else:
        fixed_grid(figure, cols=3, left=0.62, right=0.14, bottom=0.62, top=0.5, col_gap=0.72)
        axes = figure.subplots(1, 3)
    path_ax, products_ax, parameters_ax = axes
    for ax in axes:
        ax.tick_params(labelsize=TEXT_SIZE)
    _path_panel(path_ax, result)
    _products_panel(products_ax, result)
    _parameters_panel(parameters_ax, result)
    for ax, option in zip(axes, OPTIONS):
        ax.set_title(f"{TITLES[option]}\n{verdict(result, option)}", fontsize=TITLE_SIZE)
        if option in result.choice:
            for spine in ax.spines.values():
                spine.set_linewidth(TICKED_FRAME)
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
    ax.xaxis.set_major_locator(MaxNLocator(nbins=5, integer=True))
    ax.yaxis.set_major_locator(MaxNLocator(nbins=6, integer=True, min_n_ticks=2))
    ax.set_xlabel("distance k between the tokens", fontsize=TEXT_SIZE)
    ax.set_ylabel("steps between the two tokens", fontsize=TEXT_SIZE)
    ax.legend(loc="upper left", fontsize=TEXT_SIZE, handlelength=1.6, borderaxespad=0.3)


def _products_panel(ax, result) -> None:
    """Each product a box in its place in the order; a row per layer."""
    n, lstm, block = result.tokens, result.lstm_products, len(result.block)
    longest = max(lstm, block)
    for count, y, colour in ((lstm, BAR_Y["lstm"], RNN_COLOUR), (block, BAR_Y["block"], ATTENTION_COLOUR)):
        # White edges between boxes while each box is wider than its edges (about 60 boxes on the axes);
        # an outline round the bar keeps a short one (6 of 513) visible.
        separator = "white" if longest <= 60 else "none"
        ax.broken_barh([(index, 1) for index in range(count)], (y, BAR_HEIGHT), facecolors=colour,
                       edgecolors=separator, linewidth=0.8)
        ax.add_patch(Rectangle((0, y), count, BAR_HEIGHT, fill=False, edgecolor="black", linewidth=0.8))
    label_x = ax.get_yaxis_transform()  # x in axes fraction, y in data
    ax.text(0.03, BAR_Y["lstm"] + BAR_HEIGHT + 0.08, f"LSTM layer: {plural(lstm, 'product')},\n1 token each",
            fontsize=TEXT_SIZE, va="bottom", transform=label_x)
    ax.text(0.03, BAR_Y["block"] + BAR_HEIGHT + 0.08, f"Transformer block: {block},\n{plural(n, 'token')} each",
            fontsize=TEXT_SIZE, va="bottom", transform=label_x)
    ax.set_xlim(0, longest * 1.04)
    ax.xaxis.set_major_locator(MaxNLocator(nbins=5, integer=True))
    ax.set_ylim(-0.1, 2.15)
    ax.set_yticks([])
    ax.set_xlabel(f"matrix products in order (n = {n})", fontsize=TEXT_SIZE)


def _parameters_panel(ax, result) -> None:
    lstm, total = result.lstm_parameters, result.block_parameters
    unit, unit_name = (1e6, "millions") if total >= 1e6 else (1e3, "thousands") if total >= 1e4 else (1, "")
    ax.bar([0], [lstm / unit], width=0.62, color=RNN_COLOUR)
    parts = ((result.attention_parameters, "attention", ATTENTION_COLOUR),
             (result.ffn_parameters, "feed-forward", FFN_COLOUR),
             (result.layer_norm_parameters, "LayerNorms", NORM_COLOUR))
    bottom = 0.0
    for value, label, colour in parts:
        ax.bar([1], [value / unit], width=0.62, bottom=bottom, color=colour, label=label)
        bottom += value / unit
    ax.text(0, lstm / unit, f"{lstm:,}", ha="center", va="bottom", fontsize=TEXT_SIZE)
    ax.text(1, total / unit, f"{total:,}\n= {ratio_text(result.parameter_ratio)} LSTM", ha="center",
            va="bottom", fontsize=TEXT_SIZE)
    ax.set_xticks([0, 1], labels=["LSTM\nlayer", "Transformer\nblock"], fontsize=TEXT_SIZE)
    ax.set_xlim(-0.5, 1.5)
    ax.set_ylim(0, 1.7 * total / unit)  # room above the bars for their numbers and the legend
    ax.set_ylabel(f"parameters{f' ({unit_name})' if unit_name else ''}, d_model = {result.d_model}",
                  fontsize=TEXT_SIZE)
    ax.legend(loc="upper left", fontsize=TEXT_SIZE, handlelength=1.0, borderaxespad=0.3, ncols=1)
