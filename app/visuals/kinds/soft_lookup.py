"""The "soft-lookup" visual: softmax attention as a soft dictionary lookup, beside the hard (argmax) one.

Queries and keys are toy word features; each key's value is its readable semantic features. The figure
shows every step a student can redo by hand: score, score ÷ T, softmax weights, values, weighted sum.
"""

from __future__ import annotations

import math
from collections import namedtuple
from dataclasses import dataclass, replace

import numpy as np
from pydantic import Field, ValidationInfo, field_validator, model_validator

from app.engine import hard_attention

# scaled_dot_product_attention's one path: the public function returns only the output and the weights,
# and the figure's first panel shows the engine's scores.
from app.engine.attention import attend, best_keys

from .. import register
from ..base import (AcrossFields, NARROW_WIDTH, WIDTH, Control, VisualKind, VisualParams, estimated_width, line_height,
                    option_choice, wrap_lines)
from ..predictions import Cells, CellsParam, NumberParam, cells_comparison, cells_of, check_in_grid
from ..toy import FEATURE_COUNT, FEATURE_INDEX, embed, tokenize, unknown_words
from ..words import format_temperature

MAX_QUERIES = 6
MIN_KEYS, MAX_KEYS = 2, 10
WORD_COUNTS = {"queries": (1, MAX_QUERIES), "keys": (MIN_KEYS, MAX_KEYS)}  # field -> (fewest, most) words
TEMPERATURE_MIN, TEMPERATURE_MAX, TEMPERATURE_STEP = 0.05, 20.0, 0.05

# What a key "stores": its semantic features, so the looked-up mixture reads as words.
VALUE_FEATURES = ("animal", "person", "vehicle", "place", "nature")

# q = s·x and k = s·y with s = d^(1/4) = 2 (d = 16), so q·k/√d = 4·x·y/4 = x·y exactly (powers of two
# scale floats without rounding): the score is the plain dot product of the two words' feature vectors.
FEATURE_SCALE = FEATURE_COUNT ** 0.25

HASHED_MARK = "*"  # after a word's label in the figure: not in the lexicon, pseudo-random features
# The student's answer, as the figure marks it at its top: (the option's word, whether it is right); the reason is
# the same for both, as the answer is the same for both: it names the panels that show it.
CHOICE_MARKS = {"true": ("True", True), "false": ("False", False)}
CHOICE_REASON = "panel 5 mixes every key's value by panel 3's weights, a soft form of panel 7's hard lookup."
# ... and where a query's best keys tie, the soft weights approach an even split among them, not panel 7's one pick.
CHOICE_TIE_REASON = ("panel 5 mixes every key's value by panel 3's weights, a soft form of panel 7's hard lookup, "
                     "except that keys tied for the best score weigh the same instead of the first taking all.")
CHOICE_SENTENCES = {  # the student's answer -> the caption's last sentence
    "true": "You answered True, and this is why: panel 5 mixes every key's value by its weight, a lookup whose "
            "match is soft, and panel 7 is the hard lookup it approaches.",
    "false": "You answered False, but panel 5 is exactly a soft dictionary lookup: each key's value counts by how "
             "well the key matches the query, and as T falls it approaches the hard lookup of panel 7.",
}


COLOUR_WORDS = ("Panels 1 and 2 share one colour scale, from 0 (or the lowest value, if one is below 0) to the "
                "largest value in either, or further where that range would be under 1 wide (so equal or tiny scores "
                "are not stretched across the map), so their colours compare directly and a lighter cell holds a larger number; "
                "panels 3 to 7 colour the range 0 to 1, where weights, values and outputs all lie.")


def words(text: str, field: str) -> list[str]:
    """The tokens of the queries or keys field; a ValueError naming it when there are too few or too many."""
    fewest, most = WORD_COUNTS[field]
    return tokenize(text, most, min_tokens=fewest, name=field)


class SoftLookupParams(VisualParams):
    queries: str = Field(default="kitten truck", min_length=1, max_length=80)
    keys: str = Field(default="cat dog car tree sky", min_length=1, max_length=80)
    temperature: float = Field(default=1.0, ge=TEMPERATURE_MIN, le=TEMPERATURE_MAX, allow_inf_nan=False)
    choice: option_choice(("true", "false"), one=True) = ""  # the student's answer to "attention is a soft lookup"
    # Predict, then reveal, on panel 3 (rows queries, columns keys): a cells question's predicted and right
    # cells, or a numeric question's predicted weight for the one cell `weight_cell`.
    predicted_cells: CellsParam = ""
    answer_cells: CellsParam = ""
    predicted_weight: NumberParam = ""
    weight_cell: CellsParam = ""
    # The temperature a numeric prediction was made for, the question's: when the student moves the temperature
    # control, the prediction is still judged at it, not at the figure's. Set from `temperature` when a
    # prediction arrives without it (the answer page's with_answer).
    weight_temperature: float | None = Field(default=None, ge=TEMPERATURE_MIN, le=TEMPERATURE_MAX,
                                             allow_inf_nan=False)

    @field_validator("weight_temperature", mode="before")
    @classmethod
    def _empty_is_none(cls, value):
        return None if value == "" else value  # "": a form's or a cleared prediction's empty value

    @model_validator(mode="before")
    @classmethod
    def _prediction_made_at_this_temperature(cls, data):
        if isinstance(data, dict) and data.get("predicted_weight") not in (None, "") \
                and data.get("weight_temperature") in (None, ""):
            temperature = data.get("temperature", cls.model_fields["temperature"].default)
            try:  # a temperature that cannot be taken is refused once, by its own field
                valid = TEMPERATURE_MIN <= float(temperature) <= TEMPERATURE_MAX
            except (TypeError, ValueError):
                valid = False
            if valid:
                data = {**data, "weight_temperature": temperature}
        return data

    @field_validator("queries", "keys")
    @classmethod
    def _word_count(cls, text: str, info: ValidationInfo) -> str:
        words(text, info.field_name)
        return text

    @model_validator(mode="after")
    def _cells_in_the_grid(self):
        rows, cols = len(words(self.queries, "queries")), len(words(self.keys, "keys"))
        for name in ("predicted_cells", "answer_cells", "weight_cell"):
            check_in_grid(name, getattr(self, name), rows, cols)
        if len(cells_of(self.weight_cell)) > 1:
            raise AcrossFields("weight_cell names one cell, row,col", "weight_cell")
        if self.predicted_weight and not self.weight_cell:
            raise AcrossFields("predicted_weight needs weight_cell: the cell row,col of panel 3 (the soft weights, "
                               "rows queries, columns keys, from 0) whose weight the question asks for",
                               "predicted_weight", "weight_cell")
        return self


@dataclass(frozen=True)
class SoftLookupResult:
    query_tokens: tuple[str, ...]
    key_tokens: tuple[str, ...]
    temperature: float
    scores: np.ndarray  # (Nq, Nk) q·k/√d, the engine's, before the temperature
    scaled_scores: np.ndarray  # (Nq, Nk) scores / T: what the softmax is taken of
    values: np.ndarray  # (Nk, l) each key's value, its VALUE_FEATURES
    soft_weights: np.ndarray  # (Nq, Nk) softmax(q·k / (sqrt(d)·T))
    hard_weights: np.ndarray  # (Nq, Nk) one-hot argmax
    soft_output: np.ndarray  # (Nq, l) soft_weights @ values
    hard_output: np.ndarray  # (Nq, l) hard_weights @ values
    unknown: tuple[str, ...]  # words given hashed features
    predicted: Cells = ()  # the student's cells of panel 3
    answer: Cells | None = None  # the key's cells; None when not given
    predicted_weight: float | None = None  # a numeric question's prediction for weight_cell
    weight_cell: tuple[int, int] | None = None
    prediction_temperature: float | None = None  # the temperature predicted_weight was made for
    weight_then: float | None = None  # the engine's weight at weight_cell at prediction_temperature
    choice: str = ""  # the student's answer to "attention is a soft lookup"; "" for none

    @property
    def prediction_moved(self) -> bool:
        """A numeric prediction made for another temperature than the figure's."""
        return self.predicted_weight is not None and self.prediction_temperature != self.temperature

    @property
    def shows_prediction(self) -> bool:
        return bool(self.predicted) or self.answer is not None or self.predicted_weight is not None


# --- the numbers as shown ---------------------------------------------------------------------------


def format_number(value: float) -> str:
    """Two decimals with trailing zeros dropped: 4 -> "4", 2.5 -> "2.5", 0.667 -> "0.67"; never "-0"."""
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def format_weight(value: float) -> str:
    """Two fixed decimals, for weights and outputs in [0, 1]; never "-0.00"."""
    return f"{value:.2f}".replace("-0.00", "0.00")


# panel name -> (the result's array, how its cells are written)
PANEL_DATA = {"scores": ("scores", format_number), "scaled": ("scaled_scores", format_number),
              "soft": ("soft_weights", format_weight), "values": ("values", format_number),
              "soft_output": ("soft_output", format_weight), "hard": ("hard_weights", "{:.0f}".format),
              "hard_output": ("hard_output", format_weight)}


def shown_cells(result: SoftLookupResult) -> dict[str, list[list[str]]]:
    """Every panel's cell texts, exactly as the figure writes them."""
    return {name: [[fmt(value) for value in row] for row in getattr(result, field)]
            for name, (field, fmt) in PANEL_DATA.items()}


def word_label(word: str, unknown: tuple[str, ...]) -> str:
    """A word as a tick label: at most 12 characters, marked when its features are hashed."""
    text = word if len(word) <= 12 else word[:11] + "…"
    return text + HASHED_MARK if word in unknown else text


# --- per-query facts, shared by the alt text and the caption ------------------------------------------


def distinguishing(a: float, b: float) -> tuple[str, str]:
    """a and b with just enough decimals (3 or more) to tell them apart: they differ, and |a|, |b| <= 16."""
    return next((f"{a:.{d}f}", f"{b:.{d}f}") for d in range(3, 18) if f"{a:.{d}f}" != f"{b:.{d}f}")


def query_words(result: SoftLookupResult, row: int) -> tuple[str, str]:
    """One query in words: the alt text's account (scores, weights, the hard pick, the outputs), and the
    caption's sentences about its ties ("" when it has none)."""
    query, keys = result.query_tokens[row], result.key_tokens

    def key(j: int) -> str:  # a word typed twice among the keys is told apart by its column
        return f"'{keys[j]}' (column {j + 1})" if keys.count(keys[j]) > 1 else f"'{keys[j]}'"

    scores, weights = result.scores[row], result.soft_weights[row]
    at_best = best_keys(scores)  # equal scores tie (identical keys' scores may differ in their last digit)
    best = np.flatnonzero(at_best)
    hard_key = key(int(np.argmax(result.hard_weights[row])))  # the engine's hard lookup's pick: best[0]
    best_score = format_number(scores.max())
    if len(best) == len(keys):
        lookup = (f"every score is the same, so it spreads its weight evenly ({format_weight(weights[0])} on each "
                  f"key) at any temperature; hard lookup picks the first key, {hard_key}, with weight 1")
        ties = (f"'{query}' scores every key the same ({best_score}), so its weights are even, "
                f"{format_weight(weights[0])} each, at every temperature, and the hard lookup takes the first key, "
                f"{hard_key}.")
    elif len(best) > 1:
        tied = ", ".join(key(j) for j in best[:-1]) + " and " + key(best[-1])
        lookup = (f"it puts its largest weight, {format_weight(weights[best[0]])} each, on the tied keys {tied} "
                  f"(score {best_score}); hard lookup picks the first of them, {hard_key}, with weight 1")
        ties = (f"For query '{query}', the keys {tied} tie for the best score ({best_score}): they get equal "
                f"weights at every temperature, and the hard lookup takes the first, {hard_key}.")
    else:
        lookup = (f"it puts its largest weight, {format_weight(weights[best[0]])}, on key {key(best[0])} "
                  f"(score {best_score}); hard lookup picks {hard_key} with weight 1")
        ties = ""
    # A near tie: a key whose shown score equals the best one's though it scores lower.
    near = next((j for j, score in enumerate(scores) if not at_best[j] and format_number(score) == best_score), None)
    if near is not None:
        high, low = distinguishing(scores[best[0]], scores[near])
        near_tie = (f"'{query}' scores {key(best[0])} and {key(near)} the same to the shown 2 decimals, but "
                    f"{key(best[0])} is higher ({high} against {low}), so the hard lookup picks {key(best[0])}")
        ties = f"{ties} {near_tie}.".strip()
    feature = int(np.argmax(result.soft_output[row]))
    if result.soft_output[row].any() or result.hard_output[row].any():
        outputs = (f"soft output {VALUE_FEATURES[feature]} {format_weight(result.soft_output[row, feature])} "
                   f"vs hard {format_weight(result.hard_output[row, feature])}")
    else:  # no key has any of the value features (e.g. 'on', 'in'): nothing to name
        outputs = "soft and hard outputs 0 on every value feature, as every key's value is 0"
    return "; ".join([
        f"Query '{query}' scores the keys " + ", ".join(f"{k} {format_number(s)}" for k, s in zip(keys, scores)),
        lookup,
        outputs,
        *([near_tie] if near is not None else []),
    ]), ties


def choice_sentence(result: SoftLookupResult, choice: str) -> str:
    """The caption's last sentence for the student's answer ("" for none, or for "true,false"): with tied best keys
    the soft weights approach an even split among them, not panel 6's one-hot pick."""
    sentence = CHOICE_SENTENCES.get(choice, "")
    if sentence and has_tied_best(result):
        sentence = sentence[:-1] + (" where one key scores highest; where keys tie for the best score, the weights "
                                    "split evenly among them instead.")
    return sentence


# --- the student's prediction on panel 3 ------------------------------------------------------------


def strongest_keys(row: np.ndarray) -> list[int]:
    """The keys of a row of soft weights with its largest weight: equal weights tie (engine.best_keys)."""
    return [int(k) for k in np.flatnonzero(best_keys(row))]


def weight_text(value: float) -> str:
    return f"{value:g}"


def prediction_words(result: SoftLookupResult) -> str:
    """The prediction against the answer (or the engine's weight) in words, "" when there is no prediction."""
    if result.predicted_weight is not None:
        row, col = result.weight_cell
        predicted, weight = result.predicted_weight, result.weight_then
        text = (f"In panel 3, you predicted {weight_text(predicted)} for the weight of query "
                f"'{result.query_tokens[row]}' on key '{result.key_tokens[col]}' (outlined with dashes and a solid "
                "line)")
        if result.prediction_moved:  # judged at the temperature it was made for, not at the figure's
            text += (f" at T = {format_temperature(result.prediction_temperature)}, the question's temperature; "
                     f"at that T the engine's weight there is {format_weight(weight)}")
        else:
            text += f"; the engine's weight there is {format_weight(weight)}"
        if f"{predicted:.2f}" == format_weight(weight):
            text += ", which your prediction matches to the 2 decimals shown"
        else:
            direction = "higher" if weight > predicted else "lower"
            text += f", {abs(weight - predicted):.2g} {direction} than your prediction"
        if not 0 <= predicted <= 1:
            text += " (a softmax weight lies between 0 and 1)"
        if result.prediction_moved:
            text += (f". This figure is drawn at T = {format_temperature(result.temperature)}, where that weight is "
                     f"{format_weight(result.soft_weights[row, col])}")
        return text + "."
    if not result.shows_prediction:
        return ""
    return cells_comparison([f"'{word}'" for word in result.query_tokens], lambda col: f"'{result.key_tokens[col]}'",
                            result.soft_weights, result.predicted, result.answer, strongest_keys,
                            "panel 3 (your cells outlined with dashes, the answer's with a solid line)")


def legend_entries(result: SoftLookupResult) -> tuple[str, str]:
    """The legend's labels for the dashed outline and the solid inner one."""
    if result.predicted_weight is not None:
        row, col = result.weight_cell
        if result.prediction_moved:
            then = format_temperature(result.prediction_temperature)
            return (f"your prediction for T = {then}: {weight_text(result.predicted_weight)}",
                    f"the engine's weight: {format_weight(result.weight_then)} at T = {then}, "
                    f"{format_weight(result.soft_weights[row, col])} here")
        return (f"your prediction: {weight_text(result.predicted_weight)}",
                f"the engine's weight: {format_weight(result.weight_then)}")
    return "your prediction", "the answer"


def has_tied_best(result: SoftLookupResult) -> bool:
    """Whether some query's best score is shared by several keys (engine.best_keys): its soft weights then
    approach an even split among them as T falls, not the hard lookup's one pick."""
    return any(np.count_nonzero(best_keys(row)) > 1 for row in result.scores)


def choice_reason(result: SoftLookupResult) -> str:
    """Why True is the answer, naming the panels that show it, with the tie clause where some query has tied keys."""
    return CHOICE_TIE_REASON if has_tied_best(result) else CHOICE_REASON


def choice_mark(result: SoftLookupResult) -> tuple[str, str] | None:
    """The figure's mark of the student's answer: its bold first line and the reason under it; None for none."""
    if result.choice not in CHOICE_MARKS:
        return None
    word, right = CHOICE_MARKS[result.choice]
    reason = choice_reason(result)
    return f"Your answer: {word} {'✓ right' if right else '✗ wrong'}", reason[0].upper() + reason[1:]


def choice_alt(result: SoftLookupResult) -> str:
    """The alt text's account of the figure's mark of the student's answer ("" for none)."""
    if result.choice not in CHOICE_MARKS:
        return ""
    word, right = CHOICE_MARKS[result.choice]
    return (f"At its top the figure marks your answer, {word}, as {'right' if right else 'wrong'}: "
            f"{choice_reason(result)}")


# --- the colours of panels 1 and 2 ------------------------------------------------------------------------

MIN_SCORE_SPAN = 1.0  # one shared lexicon feature: the colour range of scores that are all (nearly) 0


def score_range(result: SoftLookupResult) -> tuple[float, float]:
    """Panels 1 and 2's one colour range: from 0 (or the lowest value, when one is below 0) to the largest of
    both panels, at least MIN_SCORE_SPAN wide. Anchored at 0 and shared, a small difference between large scores
    keeps nearly one colour (as the softmax gives it nearly even weights), and panel 2's colours show dividing by T
    stretch (T < 1) or shrink (T > 1) the scores."""
    both = np.concatenate([result.scores.ravel(), result.scaled_scores.ravel()])
    low, high = min(0.0, float(both.min())), max(0.0, float(both.max()))
    return low, max(high, low + MIN_SCORE_SPAN)


# --- layout: panels packed into rows, cells sized to their widest number ------------------------------

# Cell numbers and tick labels: 8 pt = 11 px in the narrow image, which a phone shows at about its own
# size (>= 10 CSS px); 9 pt in the wide one.
NARROW_POINTS, WIDE_POINTS = 8.0, 9.0
# In inches: beside the widest number in a cell; what cells grow to, at most, to fill a row's spare width;
# between panels in a row and between rows; the "query"/"key" axis label beside or under the tick labels,
# a tick mark and its pad; the figure's margin; the footnote about hashed words.
CELL_PAD, CELL_MAX, GAP, ROW_GAP, AXIS_LABEL, TICK, EDGE, NOTE_HEIGHT = 0.1, 0.6, 0.2, 0.12, 0.2, 0.07, 0.08, 0.3

# name, title (two lines at most), row title, column title; in reading order, grouped into figure rows.
GROUPS = (
    (("scores", "1. score = q·k/√d", "query", "key"),
     ("scaled", "2. score ÷ T\n(T = {T})", "query", "key"),
     ("soft", "3. soft weights =\nsoftmax of row", "query", "key")),
    (("values", "4. values V\n(each key's value)", "key", "value feature"),
     ("soft_output", "5. soft output =\nweights · values", "query", "value feature")),
    (("hard", "6. hard lookup:\nweight 1 on best key", "query", "key"),
     ("hard_output", "7. hard output =\nbest key's value", "query", "value feature")),
)


@dataclass(frozen=True)
class Placement:
    """One axes: a panel's columns [start, stop), and its rectangle in inches from the figure's bottom left."""

    name: str
    title: str
    row_title: str
    col_title: str
    row_labels: tuple[str, ...]
    col_labels: tuple[str, ...]  # the whole panel's; this axes shows [start:stop]
    start: int
    stop: int
    rect: tuple[float, float, float, float]  # left, bottom, width, height
    rotate_columns: bool
    # What packing the axes into rows needs: the room for the tick labels and the axis label left of the
    # axes, the narrowest column width that fits the numbers, and the title's width.
    left: float = 0.0
    cell: float = 0.0
    title_width: float = 0.0

    def room(self, factor: float) -> tuple[float, float]:
        """(column width, width taken in the row) with the cells grown by `factor`, up to CELL_MAX."""
        cell = min(self.cell * factor, max(self.cell, CELL_MAX))
        return cell, self.left + max((self.stop - self.start) * cell, self.title_width)


# size: (width, height) in inches; points: the cell numbers' and tick labels' size; note: the hashed-words footnote;
# legend: the prediction legend's lines (0: none), in a band at the top; choice: the lines of the mark of the
# student's answer, at the very top (the first bold; () for none)
Layout = namedtuple("Layout", "size points placements note legend choice")


def plan_layout(result: SoftLookupResult, width: float) -> Layout:
    """Pack the panels, group by group, into rows no wider than `width`, splitting a panel's columns
    when it is too wide alone; then grow the cells to fill each row. Pure arithmetic (no matplotlib),
    so the page can size the image before it is drawn."""
    points = NARROW_POINTS if width <= NARROW_WIDTH else WIDE_POINTS
    title_height = 2 * (points + 0.5) * 1.25 / 72 + 0.06  # two title lines and the pad
    cell_height = points * 2.1 / 72
    cells = shown_cells(result)
    labels = {"query": tuple(word_label(w, result.unknown) for w in result.query_tokens),
              "key": tuple(word_label(w, result.unknown) for w in result.key_tokens),
              "value feature": VALUE_FEATURES}
    usable = width - 2 * EDGE
    # The prediction's legend: its two entries side by side when they fit, else one above the other.
    legend = 0
    if result.shows_prediction:
        legend = 1 if estimated_width(["  ".join(legend_entries(result))], points) + 1.6 <= usable else 2
    mark = choice_mark(result)
    choice = () if mark is None else (mark[0], *wrap_lines(mark[1], usable, points))

    rows: list[list[Placement]] = []  # each figure row's axes, not yet placed
    for group in GROUPS:
        rows.append([])
        used = 0.0
        for name, title, row_title, col_title in group:
            title = title.replace("{T}", format_temperature(result.temperature))
            cell = max(estimated_width([text for line in cells[name] for text in line], points) + CELL_PAD,
                       points * 2.3 / 72)
            left = estimated_width(labels[row_title], points) + TICK + AXIS_LABEL
            columns = len(labels[col_title])
            chunks = math.ceil(columns / max(1, int((usable - left) // cell)))  # axes of as many columns as fit
            per = math.ceil(columns / chunks)
            for start in range(0, columns, per):
                stop = min(start + per, columns)
                columns_name = "keys" if col_title == "key" else "features"  # panels 4, 5 and 7: value features
                chunk_title = (title if chunks == 1
                               else f"{title.split(chr(10))[0]}\n({columns_name} {start + 1} to {stop})")
                chunk = Placement(name, chunk_title, row_title, col_title, labels[row_title], labels[col_title],
                                  start, stop, (0, 0, 0, 0), False, left, cell,
                                  estimated_width(chunk_title.split("\n"), points + 0.5))
                need = chunk.room(1.0)[1]
                if rows[-1] and used + need > usable + 1e-9:
                    rows.append([])
                    used = 0.0
                rows[-1].append(chunk)
                used += need + GAP

    placements: list[Placement] = []  # rects' second number: the axes' top, from the figure's top, until the end
    top = EDGE + choice_height(choice, points) + legend_height(legend, points)  # the current row's top
    for row in rows:
        factor = 1.0
        while factor < 3 and sum(c.room(factor + 0.02)[1] for c in row) + GAP * (len(row) - 1) <= usable:
            factor += 0.02
        x, below, tallest = EDGE, 0.0, 0.0
        for chunk in row:
            cell, room = chunk.room(factor)
            widest_column = estimated_width(chunk.col_labels[chunk.start:chunk.stop], points)
            rotate = widest_column > cell - 0.04
            below = max(below, TICK + AXIS_LABEL + (widest_column if rotate else points * 1.35 / 72))
            w, h = (chunk.stop - chunk.start) * cell, len(chunk.row_labels) * cell_height
            placements.append(replace(chunk, rect=(x + chunk.left, top + title_height, w, h), rotate_columns=rotate))
            x, tallest = x + room + GAP, max(tallest, h)
        top += title_height + tallest + below + ROW_GAP

    note = None
    if result.unknown:
        note = f"{HASHED_MARK} not in the toy lexicon: pseudo-random features in [0, 1), so its scores are not counts"
        if estimated_width([note], points) > usable:
            note = note.replace(" in [0, 1),", "\nin [0, 1),")
    total = math.ceil((top - ROW_GAP + EDGE + (NOTE_HEIGHT if note else 0)) * 100) / 100  # whole pixels at 100 dpi
    return Layout((width, total), points, tuple(replace(p, rect=(x, total - y - h, w, h))
                                                for p in placements for x, y, w, h in [p.rect]), note, legend, choice)


def choice_height(lines: tuple[str, ...], points: float) -> float:
    """The band of the mark of the student's answer: its lines, and a gap under them."""
    return 0.0 if not lines else len(lines) * line_height(points + 0.5) + 0.1


def legend_height(lines: int, points: float) -> float:
    """The prediction legend's band: its lines with matplotlib's legend spacing, its frame's padding."""
    return 0.0 if not lines else lines * 1.5 * line_height(points) + 0.12


@register
class SoftLookupKind(VisualKind):
    name = "soft-lookup"
    title = "Attention as a soft dictionary lookup"
    Params = SoftLookupParams
    controls = (
        Control("temperature", "Softmax temperature (lower = sharper weights)", "float",
                min=TEMPERATURE_MIN, max=TEMPERATURE_MAX, step=TEMPERATURE_STEP),
        Control("queries", f"Query words (up to {MAX_QUERIES})", "text", max_length=80,
                help="Words to look up, separated by spaces, e.g. kitten truck."),
        Control("keys", f"Key words in the dictionary ({MIN_KEYS} to {MAX_KEYS})", "text", max_length=80,
                help="The dictionary's keys; each key's value is its animal/person/vehicle/place/nature features."),
    )
    learn = "/learn/attention#soft-lookup"
    choice_param = "choice"
    predictions = {"cells": ("predicted_cells", "answer_cells"), "numeric": ("predicted_weight", None)}
    # Not the temperature: a cells prediction (each query's strongest key) holds at every T > 0, as dividing by T
    # keeps the scores' order, and a numeric one keeps the temperature it was made for (weight_temperature).
    prediction_grid = ("queries", "keys")

    def figure_grid(self, params: SoftLookupParams) -> tuple[list[str], list[str]]:
        return list(words(params.queries, "queries")), list(words(params.keys, "keys"))  # panel 3's rows, columns
    prediction_params = ("predicted_cells", "answer_cells", "predicted_weight", "weight_cell", "weight_temperature")
    inches = (WIDTH, 7.0)  # nominal: figure_inches sizes the figure to its panels
    narrow_inches = (NARROW_WIDTH, 12.0)

    def figure_inches(self, params: SoftLookupParams, layout: str = "wide",
                      result: SoftLookupResult | None = None) -> tuple[float, float]:
        # The height follows the panels' rows and the widest numbers, so it needs the result: callers pass
        # the one they computed; computing it here (a test asking for a size alone) gives the same numbers.
        width = NARROW_WIDTH if layout == "narrow" else WIDTH
        return plan_layout(result if result is not None else self.compute(params), width).size

    def compute(self, params: SoftLookupParams) -> SoftLookupResult:
        query_tokens, key_tokens = words(params.queries, "queries"), words(params.keys, "keys")
        queries = FEATURE_SCALE * embed(query_tokens, FEATURE_COUNT)  # (Nq, d)
        keys = FEATURE_SCALE * embed(key_tokens, FEATURE_COUNT)  # (Nk, d)
        values = embed(key_tokens, FEATURE_COUNT)[:, [FEATURE_INDEX[name] for name in VALUE_FEATURES]]  # (Nk, l)
        soft_output, soft_weights, scores = attend(queries, keys, values, None, params.temperature)
        hard_output, hard_weights = hard_attention(queries, keys, values)
        weight_cell = cells_of(params.weight_cell)[0] if params.weight_cell else None
        weight_then = None  # the weight the numeric prediction is judged against: at the temperature it was made for
        if params.predicted_weight:
            weights_then = soft_weights
            if params.weight_temperature != params.temperature:
                weights_then = attend(queries, keys, values, None, params.weight_temperature)[1]
            weight_then = float(weights_then[weight_cell])
        return SoftLookupResult(tuple(query_tokens), tuple(key_tokens), params.temperature, scores,
                                scores / params.temperature, values, soft_weights, hard_weights, soft_output,
                                hard_output, tuple(unknown_words(query_tokens + key_tokens)),
                                cells_of(params.predicted_cells),
                                cells_of(params.answer_cells) if params.answer_cells else None,
                                float(params.predicted_weight) if params.predicted_weight else None,
                                weight_cell, params.weight_temperature if params.predicted_weight else None,
                                weight_then, params.choice)

    def alt(self, params: SoftLookupParams, result: SoftLookupResult) -> str:
        text = (f"Soft lookup at temperature {format_temperature(result.temperature)} over the keys "
                f"{', '.join(result.key_tokens)}. "
                + ". ".join(query_words(result, row)[0] for row in range(len(result.query_tokens)))
                + ". Panels 1, 2, 3 and 6 have a row per query and a column per key: 1 the scores q·k/√d, 2 the "
                "scores divided by the temperature, 3 the softmax weights of each row, 6 the hard (argmax, one-hot) "
                f"lookup. Panel 4, the value table, has a row per key and a column per value feature "
                f"({', '.join(VALUE_FEATURES)}); panels 5 and 7 have a row per query and a column per value feature: "
                "5 the soft output, the weighted combination of all the values, and 7 the hard output, the one best "
                "key's value.")
        if result.shows_prediction:  # first: the comparison is what the student came to the figure for
            text = f"{prediction_words(result)} {text}"
        if params.choice in CHOICE_MARKS:  # what the figure marks at its top
            text += f" {choice_alt(result)}"
        if result.unknown:
            text += (f" Not in the toy lexicon, marked {HASHED_MARK}, given pseudo-random features in [0, 1), so "
                     "their scores are sums of products rather than counts of shared features: "
                     f"{', '.join(result.unknown)}.")
        return text

    def draw(self, params: SoftLookupParams, result: SoftLookupResult, inches):
        from app.plots.soft_lookup import draw_soft_lookup

        return draw_soft_lookup(result, plan_layout(result, inches[0]))

    def caption(self, params: SoftLookupParams, result: SoftLookupResult) -> str:
        return " ".join(filter(None, [
            prediction_words(result),
            "A dictionary lookup, made soft: every key gets a weight, and the output is the weighted "
            "combination of all the values; a hard lookup returns only the best key's value.",
            "(1) A score is q·k/√d, which here is exactly the dot product of the two words' toy feature vectors "
            f"(each is scaled by d^¼ = 2, d = {FEATURE_COUNT}). For two lexicon words that is +1 for each feature "
            "both words have (noun, animate, animal, …) plus, on the signed cat+/dog− feature, +1 if both are "
            "cats or both are dogs and −1 if one is a cat and the other a dog: kitten·cat = 3 + 1 = 4, "
            "kitten·dog = 3 − 1 = 2.",
            f"Words marked {HASHED_MARK} ({', '.join(result.unknown)}) are not in the toy lexicon: each gets "
            f"pseudo-random features in [0, 1) on all {FEATURE_COUNT} features, so a score with one of them is a sum "
            "of products of such fractions, not a count of shared features." if result.unknown else "",
            f"(2) Each score is divided by the temperature T = {format_temperature(result.temperature)}, and "
            "(3) the softmax of each row gives key j the weight e^(s_j/T) / Σ e^(s_i/T); the weights sum to 1. "
            "(4) Each key's value is its animal, person, vehicle, place and nature features, and (5) a query's "
            "output is Σ weight × value over all the keys. (6, 7) The hard lookup gives weight 1 to the key "
            "with the highest score, the first of them if several tie, and returns that key's value. As T "
            "falls the soft weights approach it (tied keys keep equal shares); as T grows they flatten "
            f"towards 1/{len(result.key_tokens)} = {format_weight(1 / len(result.key_tokens))} each.",
            *(query_words(result, row)[1] for row in range(len(result.query_tokens))),
            COLOUR_WORDS,
            "Numbers are rounded to 2 decimals. Constructed illustration, not a trained model.",
            choice_sentence(result, params.choice),
        ]))
