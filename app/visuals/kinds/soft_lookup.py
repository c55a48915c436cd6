"""The "soft-lookup" visual: softmax attention as a soft dictionary lookup, beside the hard (argmax) one.

Queries and keys are toy word features; each key's value is its readable semantic features. The figure
shows every step a student can redo by hand: score, score ÷ T, softmax weights, values, weighted sum.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from pydantic import Field, field_validator

from app.engine import hard_attention
from app.engine.attention import attend  # scaled_dot_product_attention's one path; it also returns the scores

from .. import register
from ..base import NARROW_WIDTH, WIDTH, Control, VisualKind, VisualParams, option_choice
from ..toy import FEATURE_COUNT, FEATURE_INDEX, embed, tokenize, unknown_words
from ..words import format_temperature, quoted_list

MAX_QUERIES = 6
MIN_KEYS, MAX_KEYS = 2, 10
TEMPERATURE_MIN, TEMPERATURE_MAX, TEMPERATURE_STEP = 0.05, 20.0, 0.05

# What a key "stores": its semantic features, so the looked-up mixture reads as words.
VALUE_FEATURES = ("animal", "person", "vehicle", "place", "nature")

# q = s·x and k = s·y with s = d^(1/4) = 2 (d = 16), so q·k/√d = 4·x·y/4 = x·y exactly (powers of two
# scale floats without rounding): the score is the plain dot product of the two words' feature vectors.
FEATURE_SCALE = FEATURE_COUNT ** 0.25

HASHED_MARK = "*"  # after a word's label in the figure: not in the lexicon, pseudo-random features


class SoftLookupParams(VisualParams):
    queries: str = Field(default="kitten truck", min_length=1, max_length=80)
    keys: str = Field(default="cat dog car tree sky", min_length=1, max_length=80)
    temperature: float = Field(default=1.0, ge=TEMPERATURE_MIN, le=TEMPERATURE_MAX, allow_inf_nan=False)
    choice: option_choice(("true", "false")) = ""  # the student's answer to "attention is a soft lookup"

    @field_validator("queries")
    @classmethod
    def _few_queries(cls, text: str) -> str:
        tokenize(text, MAX_QUERIES, name="queries")
        return text

    @field_validator("keys")
    @classmethod
    def _enough_keys(cls, text: str) -> str:
        tokenize(text, MAX_KEYS, min_tokens=MIN_KEYS, name="keys")
        return text


@dataclass(frozen=True)
class SoftLookupResult:
    query_tokens: tuple[str, ...]
    key_tokens: tuple[str, ...]
    value_features: tuple[str, ...]  # names of the value columns
    temperature: float
    scores: np.ndarray  # (Nq, Nk) q·k/√d, the engine's, before the temperature
    scaled_scores: np.ndarray  # (Nq, Nk) scores / T: what the softmax is taken of
    values: np.ndarray  # (Nk, l) each key's value
    soft_weights: np.ndarray  # (Nq, Nk) softmax(q·k / (sqrt(d)·T))
    hard_weights: np.ndarray  # (Nq, Nk) one-hot argmax
    soft_output: np.ndarray  # (Nq, l) soft_weights @ values
    hard_output: np.ndarray  # (Nq, l) hard_weights @ values
    unknown: tuple[str, ...]  # words given hashed features


def soft_lookup_result(params: SoftLookupParams) -> SoftLookupResult:
    query_tokens = tokenize(params.queries, MAX_QUERIES, name="queries")
    key_tokens = tokenize(params.keys, MAX_KEYS, min_tokens=MIN_KEYS, name="keys")
    queries = FEATURE_SCALE * embed(query_tokens, FEATURE_COUNT)  # (Nq, d)
    keys = FEATURE_SCALE * embed(key_tokens, FEATURE_COUNT)  # (Nk, d)
    values = embed(key_tokens, FEATURE_COUNT)[:, [FEATURE_INDEX[name] for name in VALUE_FEATURES]]  # (Nk, l)
    soft_output, soft_weights, scores = attend(queries, keys, values, None, params.temperature)
    hard_output, hard_weights = hard_attention(queries, keys, values)
    return SoftLookupResult(
        query_tokens=tuple(query_tokens),
        key_tokens=tuple(key_tokens),
        value_features=VALUE_FEATURES,
        temperature=params.temperature,
        scores=scores,
        scaled_scores=scores / params.temperature,
        values=values,
        soft_weights=soft_weights,
        hard_weights=hard_weights,
        soft_output=soft_output,
        hard_output=hard_output,
        unknown=tuple(unknown_words(query_tokens + key_tokens)),
    )


# --- the numbers as shown ---------------------------------------------------------------------------


def format_number(value: float) -> str:
    """Two decimals with trailing zeros dropped: 4 -> "4", 2.5 -> "2.5", 0.667 -> "0.67"; never "-0"."""
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def format_weight(value: float) -> str:
    """Two fixed decimals, for weights and outputs in [0, 1]; never "-0.00"."""
    text = f"{value:.2f}"
    return "0.00" if text == "-0.00" else text


# panel name -> (the result's array, how its cells are written)
PANEL_DATA = {
    "scores": ("scores", format_number),
    "scaled": ("scaled_scores", format_number),
    "soft": ("soft_weights", format_weight),
    "values": ("values", format_number),
    "soft_output": ("soft_output", format_weight),
    "hard": ("hard_weights", "{:.0f}".format),
    "hard_output": ("hard_output", format_weight),
}


def shown_cells(result: SoftLookupResult) -> dict[str, list[list[str]]]:
    """Every panel's cell texts, exactly as the figure writes them."""
    return {
        name: [[fmt(float(value)) for value in row] for row in getattr(result, field)]
        for name, (field, fmt) in PANEL_DATA.items()
    }


def word_label(word: str, unknown: tuple[str, ...]) -> str:
    """A word as a tick label: at most 12 characters, marked when its features are hashed."""
    text = word if len(word) <= 12 else word[:11] + "…"
    return text + HASHED_MARK if word in unknown else text


# --- per-query facts, shared by the alt text and the caption ------------------------------------------


@dataclass(frozen=True)
class QueryFacts:
    query: str
    best_keys: tuple[int, ...]  # indices of the keys with the highest score (exactly equal scores tie)
    hard_key: int  # the key the engine's hard lookup picked
    all_equal: bool  # every key has the same score: even weights at every temperature
    near_tie: int | None  # a key whose shown score equals the best one's but which scores lower


def query_facts(result: SoftLookupResult, row: int) -> QueryFacts:
    scores = result.scores[row]
    best = scores.max()
    best_keys = tuple(int(j) for j in np.flatnonzero(scores == best))
    shown = [format_number(float(s)) for s in scores]
    near = [j for j in range(len(scores)) if j not in best_keys and shown[j] == shown[best_keys[0]]]
    return QueryFacts(
        query=result.query_tokens[row],
        best_keys=best_keys,
        hard_key=int(np.argmax(result.hard_weights[row])),
        all_equal=len(best_keys) == len(scores),
        near_tie=near[0] if near else None,
    )


def distinguishing(a: float, b: float) -> tuple[str, str]:
    """a and b with just enough decimals to tell them apart (they differ)."""
    for decimals in range(3, 18):
        first, second = f"{a:.{decimals}f}", f"{b:.{decimals}f}"
        if first != second:
            return first, second
    return repr(a), repr(b)


def near_tie_sentence(result: SoftLookupResult, row: int, facts: QueryFacts) -> str:
    best, other = facts.best_keys[0], facts.near_tie
    keys, scores = result.key_tokens, result.scores[row]
    high, low = distinguishing(float(scores[best]), float(scores[other]))
    return (f"'{facts.query}' scores '{keys[best]}' and '{keys[other]}' the same to the shown 2 decimals, "
            f"but '{keys[best]}' is higher ({high} against {low}), so the hard lookup picks '{keys[best]}'")


def _scores_text(result: SoftLookupResult, row: int) -> str:
    return ", ".join(f"{key} {format_number(float(score))}" for key, score in zip(result.key_tokens, result.scores[row]))


def _describe_query(result: SoftLookupResult, row: int) -> str:
    facts = query_facts(result, row)
    query, keys = facts.query, result.key_tokens
    weights = result.soft_weights[row]
    best_score = format_number(float(result.scores[row, facts.best_keys[0]]))
    scores_text = f"Query '{query}' scores the keys {_scores_text(result, row)}"
    if facts.all_equal:
        soft_text = (f"every score is the same, so it spreads its weight evenly ({format_weight(weights[0])} "
                     "on each key) at any temperature")
        hard_text = f"hard lookup picks the first key, '{keys[facts.hard_key]}', with weight 1"
    elif len(facts.best_keys) > 1:
        tied = [keys[j] for j in facts.best_keys]
        soft_text = (f"it puts its largest weight, {format_weight(weights[facts.best_keys[0]])} each, on the tied "
                     f"keys {quoted_list(tied)} (score {best_score})")
        hard_text = f"hard lookup picks the first of them, '{keys[facts.hard_key]}', with weight 1"
    else:
        best = facts.best_keys[0]
        soft_text = (f"it puts its largest weight, {format_weight(weights[best])}, on key '{keys[best]}' "
                     f"(score {best_score})")
        hard_text = f"hard lookup picks '{keys[facts.hard_key]}' with weight 1"
    feature = int(np.argmax(result.soft_output[row]))
    output_text = (
        f"soft output {result.value_features[feature]} {format_weight(result.soft_output[row, feature])} "
        f"vs hard {format_weight(result.hard_output[row, feature])}"
    )
    parts = [scores_text, soft_text, hard_text, output_text]
    if facts.near_tie is not None:
        parts.append(near_tie_sentence(result, row, facts))
    return "; ".join(parts)


# --- layout: panels packed into rows, cells sized to their widest number ------------------------------

# Cell numbers and tick labels: 8 pt = 11 px in the narrow image, which a phone shows at about its own
# size (>= 10 CSS px); 9 pt in the wide one.
NARROW_POINTS, WIDE_POINTS = 8.0, 9.0
# DejaVu Sans advance widths in em (measured with matplotlib's TextToPath); others count as 0.8 em.
_EM = {**{c: 0.636 for c in "0123456789"}, ".": 0.318, "-": 0.361, "−": 0.838, "*": 0.5, "…": 1.0,
       "(": 0.39, ")": 0.39, "=": 0.838, "·": 0.318, "÷": 0.838, "√": 0.637, "→": 0.838, "/": 0.337,
       "'": 0.275, " ": 0.318, ",": 0.318, ":": 0.337,
       **dict(zip("abcdefghijklmnopqrstuvwxyz",
                  (0.613, 0.635, 0.55, 0.635, 0.615, 0.352, 0.635, 0.634, 0.278, 0.278, 0.579, 0.278, 0.974,
                   0.634, 0.612, 0.635, 0.635, 0.411, 0.521, 0.392, 0.634, 0.592, 0.818, 0.592, 0.592, 0.525)))}


def text_inches(text: str, points: float) -> float:
    """The width of the longest line of text in DejaVu Sans, in inches (a slight overestimate)."""
    return max((sum(_EM.get(c, 0.8) for c in line) for line in text.split("\n")), default=0.0) * points / 72


# In inches:
CELL_PAD = 0.1  # beside the widest number in a cell
CELL_MAX = 0.6  # cells grow to fill a row's spare width, up to this
GAP = 0.2  # between panels in a row
ROW_GAP = 0.12
AXIS_LABEL = 0.2  # the "query"/"key" axis label beside or under the tick labels
TICK = 0.07  # tick mark and padding
EDGE = 0.08  # figure margin
NOTE_HEIGHT = 0.3  # the footnote about hashed words

# name, title (two lines at most), row title, column title; in reading order, grouped into figure rows.
GROUPS = (
    (("scores", "1. score = q·k/√d", "query", "key"),
     ("scaled", "2. score ÷ T\n(T = {T})", "query", "key"),
     ("soft", "3. soft weights =\nsoftmax of row", "query", "key")),
    (("values", "4. values V\n(each key's value)", "key", "value feature"),
     ("soft_output", "5. soft output =\nweights · values", "query", "value feature")),
    (("hard", "6. hard lookup (T → 0):\nweight 1 on best key", "query", "key"),
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
    col_labels: tuple[str, ...]
    start: int
    stop: int
    rect: tuple[float, float, float, float]  # left, bottom, width, height
    rotate_columns: bool


@dataclass(frozen=True)
class Layout:
    size: tuple[float, float]
    points: float  # font size of the cell numbers and tick labels
    placements: tuple[Placement, ...]
    note: str | None  # the hashed-words footnote


@dataclass
class _Slot:
    name: str
    title: str
    row_title: str
    col_title: str
    start: int
    stop: int
    left: float  # tick labels and axis label, left of the axes
    cell: float  # column width
    title_width: float


def plan_layout(result: SoftLookupResult, width: float) -> Layout:
    """Pack the panels, group by group, into rows no wider than `width`, splitting a panel's columns
    when it is too wide alone; then grow the cells to fill each row. Pure arithmetic (no matplotlib),
    so the page can size the image before it is drawn."""
    points = NARROW_POINTS if width <= NARROW_WIDTH else WIDE_POINTS
    title_points = points + 0.5
    title_height = 2 * title_points * 1.25 / 72 + 0.06
    cell_height = points * 2.1 / 72
    cells = shown_cells(result)
    labels = {"query": tuple(word_label(w, result.unknown) for w in result.query_tokens),
              "key": tuple(word_label(w, result.unknown) for w in result.key_tokens),
              "value feature": result.value_features}
    usable = width - 2 * EDGE

    rows: list[list[_Slot]] = []
    for group in GROUPS:
        row: list[_Slot] = []
        used = 0.0
        for name, title, row_title, col_title in group:
            title = title.replace("{T}", format_temperature(result.temperature))
            cell = max(text_inches(text, points) for line in cells[name] for text in line) + CELL_PAD
            cell = max(cell, points * 2.3 / 72)
            left = max(text_inches(label, points) for label in labels[row_title]) + TICK + AXIS_LABEL
            columns = len(labels[col_title])
            most = max(1, int((usable - left) // cell))  # columns that fit in one axes
            chunks = math.ceil(columns / most)
            per = math.ceil(columns / chunks)
            for start in range(0, columns, per):
                stop = min(start + per, columns)
                chunk_title = title if chunks == 1 else f"{title.split(chr(10))[0]}\n(keys {start + 1} to {stop})"
                slot = _Slot(name, chunk_title, row_title, col_title, start, stop, left, cell,
                             text_inches(chunk_title, title_points))
                need = left + max((stop - start) * cell, slot.title_width)
                if row and used + need > usable + 1e-9:
                    rows.append(row)
                    row, used = [], 0.0
                row.append(slot)
                used += need + GAP
        rows.append(row)

    def row_width(row: list[_Slot], factor: float) -> float:
        return sum(s.left + max((s.stop - s.start) * min(s.cell * factor, max(s.cell, CELL_MAX)), s.title_width)
                   for s in row) + GAP * (len(row) - 1)

    placed: list[tuple[list[Placement], float]] = []  # each row's placements (bottoms from the row's top) and height
    for row in rows:
        factor = 1.0
        while factor < 3 and row_width(row, factor + 0.02) <= usable:
            factor += 0.02
        x, items, below_most = EDGE, [], 0.0
        for s in row:
            cell = min(s.cell * factor, max(s.cell, CELL_MAX))
            col_labels = labels[s.col_title][s.start:s.stop]
            rotate = any(text_inches(label, points) > cell - 0.04 for label in col_labels)
            below = TICK + AXIS_LABEL + (max(text_inches(label, points) for label in col_labels) if rotate
                                         else points * 1.35 / 72)
            below_most = max(below_most, below)
            axes_width = (s.stop - s.start) * cell
            axes_height = len(labels[s.row_title]) * cell_height
            items.append(Placement(s.name, s.title, s.row_title, s.col_title, labels[s.row_title],
                                   labels[s.col_title], s.start, s.stop,
                                   (x + s.left, -axes_height, axes_width, axes_height), rotate))
            x += s.left + max(axes_width, s.title_width) + GAP
        height = title_height + max(-p.rect[1] for p in items) + below_most
        placed.append((items, height))

    note = None
    if result.unknown:
        note = f"{HASHED_MARK} not in the toy lexicon: pseudo-random features in [0, 1), so its scores are not counts"
        if text_inches(note, points) > usable:
            note = note.replace(" in [0, 1),", "\nin [0, 1),")
    total = 2 * EDGE + sum(h for _, h in placed) + ROW_GAP * (len(placed) - 1) + (NOTE_HEIGHT if note else 0)
    total = math.ceil(total * 100) / 100  # whole pixels at 100 dpi
    placements = []
    top = total - EDGE
    for items, height in placed:
        axes_top = top - title_height
        for p in items:
            left, drop, w, h = p.rect
            placements.append(Placement(**{**p.__dict__, "rect": (left, axes_top + drop, w, h)}))
        top -= height + ROW_GAP
    return Layout((width, total), points, tuple(placements), note)


@register
class SoftLookupKind(VisualKind):
    name = "soft-lookup"
    title = "Attention as a soft dictionary lookup"
    Params = SoftLookupParams
    controls = (
        Control("temperature", "Softmax temperature (lower = closer to hard lookup)", "float",
                min=TEMPERATURE_MIN, max=TEMPERATURE_MAX, step=TEMPERATURE_STEP),
        Control("queries", f"Query words (up to {MAX_QUERIES})", "text", max_length=80,
                help="Words to look up, separated by spaces, e.g. kitten truck."),
        Control("keys", f"Key words in the dictionary ({MIN_KEYS} to {MAX_KEYS})", "text", max_length=80,
                help="The dictionary's keys; each key's value is its animal/person/vehicle/place/nature features."),
    )
    learn = "/learn/attention#soft-lookup"
    choice_param = "choice"
    inches = (WIDTH, 7.0)  # nominal: figure_inches sizes the figure to its panels
    narrow_inches = (NARROW_WIDTH, 12.0)

    def figure_inches(self, params: SoftLookupParams, layout: str = "wide",
                      result: SoftLookupResult | None = None) -> tuple[float, float]:
        # The height follows the panels' rows and the widest numbers, so it needs the result: callers pass
        # the one they computed; computing it here (a test asking for a size alone) gives the same numbers.
        width = NARROW_WIDTH if layout == "narrow" else WIDTH
        return plan_layout(result if result is not None else self.compute(params), width).size

    def compute(self, params: SoftLookupParams) -> SoftLookupResult:
        return soft_lookup_result(params)

    def alt(self, params: SoftLookupParams, result: SoftLookupResult) -> str:
        parts = [
            f"Soft lookup at temperature {format_temperature(result.temperature)} over the keys "
            f"{', '.join(result.key_tokens)}. "
            + ". ".join(_describe_query(result, row) for row in range(len(result.query_tokens)))
            + "."
        ]
        parts.append(
            "Panels, rows are queries and columns are keys: 1 the scores q·k/√d, 2 the scores divided by the "
            "temperature, 3 the softmax weights of each row; 4 the value table, one row per key "
            f"({', '.join(result.value_features)}); 5 the soft output, the weighted combination of all the "
            "values; 6 the hard (argmax, one-hot) lookup and 7 its output, the one best key's value."
        )
        if result.unknown:
            parts.append(
                f"Not in the toy lexicon, marked {HASHED_MARK}, given pseudo-random features in [0, 1), so their "
                f"scores are sums of products rather than counts of shared features: {', '.join(result.unknown)}."
            )
        return " ".join(parts)

    def draw(self, params: SoftLookupParams, result: SoftLookupResult, inches):
        from app.plots.soft_lookup import draw_soft_lookup

        return draw_soft_lookup(result, plan_layout(result, inches[0]))

    def caption(self, params: SoftLookupParams, result: SoftLookupResult) -> str:
        keys = result.key_tokens
        count = len(keys)
        sentences = [
            "A dictionary lookup, made soft: every key gets a weight, and the output is the weighted "
            "combination of all the values; a hard lookup returns only the best key's value.",
            "(1) A score is q·k/√d, which here is exactly the dot product of the two words' toy feature vectors "
            f"(each is scaled by d^¼ = 2, d = {FEATURE_COUNT}). For two lexicon words that is +1 for each feature "
            "both words have (noun, animate, animal, …) plus, on the signed cat+/dog− feature, +1 if both are "
            "cats or both are dogs and −1 if one is a cat and the other a dog: kitten·cat = 3 + 1 = 4, "
            "kitten·dog = 3 − 1 = 2.",
        ]
        if result.unknown:
            sentences.append(
                f"Words marked {HASHED_MARK} ({', '.join(result.unknown)}) are not in the toy lexicon: each gets "
                f"pseudo-random features in [0, 1) on all {FEATURE_COUNT} features, so a score with one of them is a "
                "sum of products of such fractions, not a count of shared features."
            )
        sentences.append(
            f"(2) Each score is divided by the temperature T = {format_temperature(result.temperature)}, and "
            "(3) the softmax of each row gives key j the weight e^(s_j/T) / Σ e^(s_i/T); the weights sum to 1. "
            "(4) Each key's value is its animal, person, vehicle, place and nature features, and (5) a query's "
            "output is Σ weight × value over all the keys. (6, 7) The hard lookup gives weight 1 to the key "
            "with the highest score, the first of them if several tie, and returns that key's value. As T "
            "falls the soft weights approach it (tied keys keep equal shares); as T grows they flatten "
            f"towards 1/{count} = {format_weight(1 / count)} each."
        )
        for row in range(len(result.query_tokens)):
            facts = query_facts(result, row)
            best_score = format_number(float(result.scores[row, facts.best_keys[0]]))
            if facts.all_equal:
                sentences.append(
                    f"'{facts.query}' scores every key the same ({best_score}), so its weights are even, "
                    f"{format_weight(result.soft_weights[row, 0])} each, at every temperature, and the hard "
                    f"lookup takes the first key, '{keys[facts.hard_key]}'."
                )
            elif len(facts.best_keys) > 1:
                sentences.append(
                    f"'{facts.query}' ties {quoted_list([keys[j] for j in facts.best_keys])} for the best score "
                    f"({best_score}): they get equal weights at every temperature, and the hard lookup takes the "
                    f"first, '{keys[facts.hard_key]}'."
                )
            if facts.near_tie is not None:
                sentences.append(near_tie_sentence(result, row, facts) + ".")
        sentences.append("Numbers are rounded to 2 decimals. Constructed illustration, not a trained model.")
        if params.choice == "true":
            sentences.append("You answered True, and this is why: panel 5 mixes every key's value by its weight, "
                             "a lookup whose match is soft, and panel 7 is the hard lookup it approaches.")
        elif params.choice == "false":
            sentences.append("You answered False, but panel 5 is exactly a soft dictionary lookup: each key's "
                             "value counts by how well the key matches the query, and as T falls it approaches "
                             "the hard lookup of panel 7.")
        return " ".join(sentences)


__all__ = ["SoftLookupKind", "SoftLookupParams", "SoftLookupResult", "format_number", "format_weight",
           "plan_layout", "query_facts", "shown_cells", "soft_lookup_result"]
