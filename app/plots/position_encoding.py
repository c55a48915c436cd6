"""Plot for the "position-encoding" visual: (a) the PE(p)·PE(q) matrix with its constant diagonals, (b) the
distance between positions k apart, and (c) a few waves continuing past the training length.
"""

from __future__ import annotations

import matplotlib
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch, Rectangle
from matplotlib.ticker import MaxNLocator

from app.visuals.base import DPI, NARROW_WIDTH
from app.visuals.kinds.position_encoding import (DOTTED_LENGTH, OPTION_NAMES, SMOOTHED_LENGTH,
                                                   format_period)
from app.visuals.words import format_small

from .figure import EDGE, SEQUENTIAL, new_figure, text_width

BEYOND_SHADE = "0.87"
MIN_PERIOD_PIXELS = 5  # a wave whose turns are closer than this is drawn as the band it fills
STRIP_LEFT_GUESS = 1.1  # inches left of (c)'s strips, to decide which waves fill a band before measuring
TEXT = 8  # points: every label in the narrow layout, and (b)/(c)'s legends in both


def format_signed(value: float) -> str:
    """A tick label with a true minus sign, and 0 for a value that rounds to zero (never "-0")."""
    text = format_small(value)
    if float(text) == 0:
        return "0"
    return text.replace("-", "−")


def _panel_title(letter: str, option: str, what: str, result) -> str:
    """'(a) Relative ✓ you ticked it' over what the panel shows; the option named as Q7 names it."""
    name = OPTION_NAMES[option].capitalize()
    if not result.answered:
        mark = ""
    elif option in result.chosen:
        mark = "  ✓ you ticked it"
    else:
        mark = "  ✗ not ticked, but it holds"
    return f"({letter}) {name}{mark}\n{what}"


def _rect(figure: Figure, left: float, bottom: float, width: float, height: float):
    """An axes at a position given in inches from the figure's lower-left corner."""
    figure_width, figure_height = figure.get_size_inches()
    return figure.add_axes((left / figure_width, bottom / figure_height, width / figure_width,
                            height / figure_height))


def draw_position_encoding(result, inches: tuple[float, float]) -> Figure:
    """result: a PositionEncodingResult (app.visuals.kinds.position_encoding)."""
    narrow = inches[0] == NARROW_WIDTH
    width, height = inches
    figure = new_figure(width, height, layout=None)
    tick_size = TEXT if narrow else 9
    title_size = 9

    if narrow:  # stacked: (a) over (b) over (c); every block is its axes plus the labels above and below it
        heat_box = (0.58, height - 0.55 - 2.2, 2.2, 2.2)
        distance_box = (0.58, heat_box[1] - 0.42 - 0.48 - 2.0, width - 0.58 - 0.12, 2.0)
        strips_top = distance_box[1] - 0.42 - 0.98
    else:  # (a) beside (b), (c) across the width below them
        heat_box = (0.62, height - 0.5 - 2.45, 2.45, 2.45)
        distance_left = heat_box[0] + 2.45 + 0.08 + 0.1 + 0.42 + 0.6  # colour bar, its labels, (b)'s labels
        distance_box = (distance_left, heat_box[1], width - distance_left - 0.15, 2.45)
        strips_top = heat_box[1] - 0.42 - 0.7
    colourbar_box = (heat_box[0] + heat_box[2] + 0.08, heat_box[1], 0.1, heat_box[3])
    strip_labels = [_strip_label(wave, result, width - 0.15 - STRIP_LEFT_GUESS) for wave in result.waves]
    # The strips start after their labels: the widest line, its pad and the "−1" tick label.
    strips_left = (EDGE + text_width(figure, [line for label in strip_labels for line in label.split("\n")], TEXT)
                   + (4 + 3.5 + 3.5) / 72 + text_width(figure, ["−1"], tick_size))
    strips_box = (strips_left, 0.45, width - strips_left - 0.15, strips_top - 0.45)

    _draw_similarity(figure, result, heat_box, colourbar_box, tick_size, title_size)
    _draw_distances(figure, result, distance_box, tick_size, title_size, narrow)
    _draw_waves(figure, result, strips_box, strip_labels, tick_size, title_size, narrow)
    return figure


def _draw_similarity(figure, result, box, colourbar_box, tick_size, title_size) -> None:
    # (a) The colours span the data: from the smallest dot product to the diagonal's d/2, the largest.
    ax = _rect(figure, *box)
    length = len(result.similarity)
    low, high = float(result.similarity.min()), result.self_similarity
    image = ax.imshow(result.similarity, cmap=SEQUENTIAL, vmin=low, vmax=high, aspect="auto",
                      interpolation="nearest" if length <= SMOOTHED_LENGTH else "antialiased",
                      interpolation_stage="data")
    if result.train_length < length:
        # The trained positions' square, white dashes on black so it shows on every colour of the map.
        for colour, style, line_width in (("black", "-", 2.2), ("white", "--", 1.2)):
            ax.add_patch(Rectangle((-0.5, -0.5), result.train_length, result.train_length, fill=False,
                                   edgecolor=colour, linestyle=style, linewidth=line_width))
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_locator(MaxNLocator(nbins=5, integer=True))
    ax.tick_params(labelsize=tick_size)
    ax.set_xlabel("position q", fontsize=tick_size)
    ax.set_ylabel("position p", fontsize=tick_size)
    ax.set_title(_panel_title("a", "relative", "PE(p)·PE(q): constant along each diagonal", result),
                 fontsize=title_size, loc="left")
    colourbar_ax = _rect(figure, *colourbar_box)
    colourbar = figure.colorbar(image, cax=colourbar_ax, ticks=[low, high])
    colourbar.ax.set_yticklabels([format_signed(low), format_signed(high)])
    colourbar.ax.tick_params(labelsize=tick_size)


def _draw_distances(figure, result, box, tick_size, title_size, narrow) -> None:
    # (b) The distance to the position k further on, the same from every p (the spread is in the alt text):
    # only k = 0 reaches zero.
    ax = _rect(figure, *box)
    colours = matplotlib.colormaps[SEQUENTIAL]
    distances = result.offset_distance
    length = len(distances)
    size = 3.5 if length <= 64 else 2.0
    ax.plot(range(1, length), distances[1:], linestyle="none", marker="o", markersize=size,
            color=colours(0.3), label="distance at offset k ≥ 1")
    ax.plot([0], [0.0], linestyle="none", marker="s", markersize=5, markerfacecolor="white",
            markeredgecolor="black", label="k = 0: the position itself")
    k = result.closest_offset
    ring = ax.plot([k], [result.min_distance], linestyle="none", marker="o", markersize=10,
                   markerfacecolor="none", markeredgecolor="black", markeredgewidth=1.4)[0]
    floor = ax.axhline(result.min_distance, color="black", linestyle=":", linewidth=1.0)
    peak = float(distances.max())
    ax.set_xlim(-0.03 * (length - 1) - 0.5, (length - 1) * 1.03 + 0.5)
    ax.set_ylim(0, peak * 1.55)  # zero (a collision) on the axis; headroom for the legend
    ax.xaxis.set_major_locator(MaxNLocator(nbins=5, integer=True))
    ax.yaxis.set_major_locator(MaxNLocator(nbins=4))
    ax.tick_params(labelsize=tick_size)
    ax.set_xlabel("offset k = q − p", fontsize=tick_size)
    ax.set_ylabel("‖PE(p) − PE(p+k)‖", fontsize=tick_size)
    ax.set_title(_panel_title("b", "unique", "‖PE(p) − PE(p+k)‖ > 0 for every k ≥ 1", result),
                 fontsize=title_size, loc="left")
    handles, labels = ax.get_legend_handles_labels()
    handles.append((ring, floor))
    labels.append(f"closest: k = {k}, {format_small(result.min_distance)}"
                  + (" (near-collision)" if result.near_collision else ""))
    ax.legend(handles, labels, fontsize=TEXT, loc="upper center", handlelength=1.6, borderaxespad=0.3)


def _fills_a_band(wave, length: int, strip_width: float) -> bool:
    """Whether the wave's turns are too close at this width to draw (they would alias into a moiré)."""
    return strip_width * DPI * wave.period / length < MIN_PERIOD_PIXELS


def _strip_label(wave, result, strip_width: float) -> str:
    label = f"dims {2 * wave.pair}, {2 * wave.pair + 1}\nperiod {format_period(wave.period)}"
    length = len(result.encoding)
    if _fills_a_band(wave, length, strip_width):
        label += f"\n{length / wave.period:.0f} turns: a band"
    return label


def _draw_waves(figure, result, box, strip_labels, tick_size, title_size, narrow) -> None:
    # (c) One strip per frequency pair, labelled with its dimensions and period; sine solid, cosine dashed.
    left, bottom, strip_width, total = box
    waves = result.waves
    gap = 0.1
    strip_height = (total - gap * (len(waves) - 1)) / len(waves)
    colours = matplotlib.colormaps[SEQUENTIAL]
    sine_colour, cosine_colour = colours(0.25), colours(0.68)
    length, train_length = len(result.encoding), result.train_length
    dotted = length <= DOTTED_LENGTH
    axes = []
    for index, wave in enumerate(waves):
        ax = _rect(figure, left, bottom + total - (index + 1) * strip_height - index * gap, strip_width,
                   strip_height)
        axes.append(ax)
        if train_length < length:
            ax.axvspan(train_length - 0.5, length - 0.5, color=BEYOND_SHADE, zorder=0, linewidth=0)
        if "a band" in strip_labels[index]:
            # Turns closer than a few pixels would alias into a moiré: draw the band the wave fills instead.
            ax.fill_between([-0.5, length - 0.5], -1, 1, color=sine_colour, alpha=0.35, linewidth=0)
        else:
            ax.plot(result.fine_positions, wave.fine_sine, color=sine_colour, linewidth=1.3)
            ax.plot(result.fine_positions, wave.fine_cosine, color=cosine_colour, linewidth=1.3, linestyle="--")
        if dotted:
            sine, cosine = 2 * wave.pair, 2 * wave.pair + 1
            ax.plot(range(length), result.encoding[:, sine], linestyle="none", marker="o", markersize=2.6,
                    color=sine_colour)
            ax.plot(range(length), result.encoding[:, cosine], linestyle="none", marker="o", markersize=2.6,
                    color=cosine_colour)
        ax.set_xlim(-0.5, length - 0.5)
        ax.set_ylim(-1.3, 1.3)
        ax.set_yticks([-1, 1], labels=["−1", "1"])
        ax.xaxis.set_major_locator(MaxNLocator(nbins=6, integer=True))
        ax.tick_params(labelsize=tick_size, labelbottom=index == len(waves) - 1)
        ax.set_ylabel(strip_labels[index], fontsize=TEXT, rotation=0, ha="right", va="center", labelpad=4)
    axes[-1].set_xlabel("position p", fontsize=tick_size)

    top = axes[0]
    handles = [Line2D([], [], color=sine_colour, linewidth=1.3, marker="o" if dotted else None, markersize=2.6),
               Line2D([], [], color=cosine_colour, linewidth=1.3, linestyle="--", marker="o" if dotted else None,
                      markersize=2.6)]
    labels = ["sin, dim 2i (solid)", "cos, dim 2i+1 (dashed)"]
    if train_length < length:
        handles.append(Patch(facecolor=BEYOND_SHADE, edgecolor="none"))
        labels.append(f"past training: p ≥ {train_length}")
        what = f"the same formula past the training length T = {train_length}"
    else:
        what = f"{'both' if length == 2 else f'all {length}'} positions lie within the training length T = {train_length}"
    # On a phone the strip labels take a third of the width: title and legend start at the figure's edge.
    start = (0.08 - left) / strip_width if narrow else 0.0  # in the top strip's axes fraction
    columns = 1 if narrow else 3
    top.legend(handles, labels, fontsize=TEXT, loc="lower left", bbox_to_anchor=(start, 1.0), ncol=columns,
               frameon=False, borderaxespad=0.1, borderpad=0.2, handlelength=2.2, columnspacing=1.0)
    rows = -(-len(labels) // columns)
    title = top.set_title(_panel_title("c", "any-length", what, result), fontsize=title_size, loc="left",
                          pad=5 + rows * 11.5)
    title.set_x(start)
