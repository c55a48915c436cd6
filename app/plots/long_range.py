"""Plot for the "long-range" visual: path length between tokens k apart, and sequential steps per sequence.

RNN against self-attention, with the chosen distance marked and its numbers written on the plot.
"""

from __future__ import annotations

import matplotlib
from matplotlib.figure import Figure

from .describe import long_range_alt, long_range_marks
from .describe import steps_text as _steps
from .figure import SEQUENTIAL, new_figure
from .sizes import LONG_RANGE_INCHES

_COLOURS = matplotlib.colormaps[SEQUENTIAL]
RNN_COLOUR = _COLOURS(0.15)
ATTENTION_COLOUR = _COLOURS(0.62)


def draw_long_range(result) -> tuple[Figure, str]:
    figure = new_figure(*LONG_RANGE_INCHES, layout="grid")
    path_ax, steps_ax = figure.subplots(1, 2)

    k, rnn_path, attention_path, n, rnn_steps, attention_steps = long_range_marks(result)

    path_ax.plot(result.distances, result.rnn_path, color=RNN_COLOUR, linewidth=2, label="RNN: k steps, O(k)")
    path_ax.plot(result.distances, result.attention_path, color=ATTENTION_COLOUR, linewidth=2,
                 linestyle="--", label="self-attention: 1 step, O(1)")
    path_ax.axvline(k, color="0.5", linewidth=0.8, linestyle=":")
    path_ax.plot([k, k], [rnn_path, attention_path], "o", color="black", markersize=4)
    path_ax.annotate(f"k = {k}: RNN {_steps(rnn_path)},\nattention {_steps(attention_path)}",
                     xy=(k, rnn_path), xytext=(0.45, 0.16), textcoords="axes fraction", fontsize=8,
                     arrowprops={"arrowstyle": "->", "color": "0.3", "linewidth": 0.8})
    path_ax.set_xlabel("distance k between the two tokens")
    path_ax.set_ylabel("steps information and gradients travel")
    path_ax.set_title("Path between two tokens")
    path_ax.set_xlim(0, result.distances[-1] + 1)
    path_ax.set_ylim(0, None)
    path_ax.legend(loc="upper left", fontsize=8)

    steps_ax.plot(result.lengths, result.rnn_steps, color=RNN_COLOUR, linewidth=2,
                  label="RNN: n dependent steps, O(n)")
    steps_ax.plot(result.lengths, result.attention_steps, color=ATTENTION_COLOUR, linewidth=2,
                  linestyle="--", label="self-attention: 1 parallel step, O(1)")
    steps_ax.axvline(n, color="0.5", linewidth=0.8, linestyle=":")
    steps_ax.plot([n, n], [rnn_steps, attention_steps], "o", color="black", markersize=4)
    steps_ax.annotate(f"n = {n} tokens: RNN {_steps(rnn_steps)},\nattention {_steps(attention_steps)}",
                      xy=(n, rnn_steps), xytext=(0.45, 0.16), textcoords="axes fraction", fontsize=8,
                      arrowprops={"arrowstyle": "->", "color": "0.3", "linewidth": 0.8})
    steps_ax.set_xlabel("sequence length n (tokens)")
    steps_ax.set_ylabel("sequential steps per layer")
    steps_ax.set_title("Steps that must run in order")
    steps_ax.set_xlim(0, result.lengths[-1] + 1)
    steps_ax.set_ylim(0, None)
    steps_ax.legend(loc="upper left", fontsize=8)

    return figure, long_range_alt(result)
