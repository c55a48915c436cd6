"""The "qkv-projections" visual: queries, keys and values are computed from the input embeddings X.

Shows X and, for each of Q, K, V, the learned matrix W and the product X·W, with their shapes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from pydantic import Field

from .. import register
from ..base import (NARROW_WIDTH, WIDTH, Control, Sentence, VisualKind, VisualParams, chosen, estimated_width,
                    line_height, option_choice)
from ..toy import MAX_TOKENS, column_names, embed, project_qkv, tokenize, unknown_words
from ..words import minus, plural, short, symmetric_limit, unknown_words_sentence

D_MODEL_MIN, D_MODEL_MAX = 2, 16
D_K_MIN, D_K_MAX = 1, 16
MAX_NAMED_COLUMNS = 8  # X's columns carry the feature names up to here; beyond, they only fit as numbers
OPTIONS = ("values", "keys", "queries", "embeddings")  # the question's option ids
# The question's key, as the figure shows it: Q, K and V are computed from X by a learned map; X is looked up.
LEARNED = {"values": True, "keys": True, "queries": True, "embeddings": False}
PANEL = {"embeddings": "x", "queries": "q", "keys": "k", "values": "v"}  # each option's panel, top to bottom


@dataclass(frozen=True)
class Mark:
    """What the figure writes above an option's panel on an answer page: whether the student ticked it, whether
    that was right (ticked exactly when it is a learned map of X), and what the panel shows that decides it."""

    option: str
    ticked: bool

    @property
    def right(self) -> bool:
        return self.ticked == LEARNED[self.option]

    @property
    def verdict(self) -> str:
        if self.ticked:
            return "✓ ticked" if self.right else "✗ ticked"
        return "✓ left out" if self.right else "✗ missed"

    @property
    def reason(self) -> str:
        return "learned map" if LEARNED[self.option] else "looked up"


def marks(choice: str) -> dict[str, Mark]:
    """The marks for a choice param's value, by panel name (x, q, k, v); none when no option is ticked, so the
    figure before an answer, or in a lesson, gives no answer away."""
    ticked = chosen(choice)
    return {panel: Mark(option, option in ticked) for option, panel in PANEL.items()} if ticked else {}


class QkvProjectionsParams(VisualParams):
    sentence: Sentence = "the cat sat on the mat"
    d_model: int = Field(default=6, ge=D_MODEL_MIN, le=D_MODEL_MAX)
    d_k: int = Field(default=4, ge=D_K_MIN, le=D_K_MAX)
    seed: int = Field(default=0, ge=0, le=9999)
    choice: option_choice(OPTIONS) = ""  # the student's ticks in "which are learned maps of the embeddings?"


@dataclass(frozen=True)
class QkvResult:
    tokens: tuple[str, ...]
    feature_names: tuple[str, ...]  # X's columns, W's rows
    x: np.ndarray  # (N, d_model) input embeddings
    w_q: np.ndarray  # (d_model, d_k)
    w_k: np.ndarray  # (d_model, d_k)
    w_v: np.ndarray  # (d_model, d_k)
    q: np.ndarray  # (N, d_k) = x @ w_q
    k: np.ndarray  # (N, d_k) = x @ w_k
    v: np.ndarray  # (N, d_k) = x @ w_v
    seed: int
    limit: float  # the one colour half-range of all seven panels: their largest |entry|
    unknown: tuple[str, ...]
    marks: dict[str, Mark]  # the student's ticks, by panel (x, q, k, v); empty without an answer

    @property
    def matrices(self) -> dict[str, np.ndarray]:
        """The seven panels, top to bottom in the phone figure: X, then each W above its product."""
        return {"x": self.x, "w_q": self.w_q, "q": self.q, "w_k": self.w_k, "k": self.k, "w_v": self.w_v, "v": self.v}


def cell_text(value: float) -> str:
    """A cell's number with one decimal; a value that rounds to 0 is "0.0", never "-0.0".

    The hyphen-minus, narrower than "−", keeps "-0.7" clear of its neighbours in the wide figure's cells."""
    text = f"{value:.1f}"
    return "0.0" if float(text) == 0 else text


# --- The phone layout: the seven panels stacked, X on top, then each W above its product ------------

NARROW_FONT = 8.0  # tick labels, axis labels and cell numbers: 8 pt ≈ 11 CSS px in the 340 px image
MARK_FONT = 9.0  # the ✓/✗ marks above the option panels, and the wide figure's legend of them
MARK_PAD = 0.04  # inches between a mark and the title under it
# The wide figure's room for its two-line marks, between the W row and the titles of X, Q, K, V: 0.1 inch more
# above them, so that a mark reads as its product's, not as the W's above it.
WIDE_MARK_ROOM = 2 * line_height(MARK_FONT) + MARK_PAD + 0.1
NARROW_TITLE = 9.0
EDGE, TICK, LABEL_PAD, TITLE_PAD = 0.05, 7 / 72, 4 / 72, 6 / 72  # as app.plots.figure's, in inches
NUMBERED_ROW, PLAIN_ROW = 0.18, 0.15  # a row's height with numbers in its cells, and without (≥ 8 pt line)
MAX_CELL = 0.5  # wider cells only spread a few columns over the whole width
PANEL_GAP, BLOCK_GAP = 0.08, 0.12
BAR_HEIGHT = 0.12
BAR_INSET = 0.2  # room each side of the colour bar for half its end labels ("−1.00")


@dataclass(frozen=True)
class Panel:
    """Where one heatmap (or the colour bar) goes in the phone figure, in inches from the top-left corner."""

    left: float
    top: float
    width: float
    height: float
    numbered: bool  # its cells carry their numbers


BAR_LEFT = 1.0  # inches: the phone's colour bar starts here at the latest


def narrow_plan(result: QkvResult) -> tuple[float, dict[str, Panel]]:
    """The phone figure's height and its panels (result.matrices' names and "colorbar"): each as wide as its
    columns allow (cells up to MAX_CELL), its numbers written where the widest number fits its cells, rows
    tall enough for 8 pt labels."""
    line = line_height(NARROW_FONT)
    labels = [*map(short, result.tokens), *result.feature_names]  # the figure cuts a long word (short)
    left = EDGE + line + LABEL_PAD + TICK + estimated_width(labels, NARROW_FONT)
    room = NARROW_WIDTH - left - EDGE
    x_ticks = estimated_width(result.feature_names, NARROW_FONT) if result.x.shape[1] <= MAX_NAMED_COLUMNS else line
    panels, top = {}, EDGE + (line + 2 * MARK_PAD if result.marks else 0)  # the marks' legend, one line
    for name, matrix in result.matrices.items():
        rows, cols = matrix.shape
        cell = min(room / cols, MAX_CELL)
        widest = estimated_width([cell_text(v) for v in matrix.ravel()], NARROW_FONT)
        numbered = widest <= 0.85 * cell and matrix.size <= 256
        if name in result.marks:
            top += line_height(MARK_FONT) + MARK_PAD  # the ✓/✗ mark, one line above the title
        top += (2 if name == "x" else 1) * line_height(NARROW_TITLE) + TITLE_PAD
        height = rows * (NUMBERED_ROW if numbered else PLAIN_ROW)
        panels[name] = Panel(left, top, cols * cell, height, numbered)
        top += height
        if name.startswith("w_"):
            top += PANEL_GAP  # a W's columns are its product's, labelled under that
        else:  # tick labels (X's: turned names, or numbers), then the axis label
            top += TICK + (x_ticks if name == "x" else line) + LABEL_PAD + line + BLOCK_GAP
    # Under the panels, but starting no further right than BAR_LEFT, so that its label (about 2.2 inches, centred on
    # it) stays inside the figure when long words push the panels right.
    bar_left = min(left, BAR_LEFT) + BAR_INSET
    panels["colorbar"] = Panel(bar_left, top, NARROW_WIDTH - EDGE - BAR_INSET - bar_left, BAR_HEIGHT, False)
    return round(top + BAR_HEIGHT + TICK + line + LABEL_PAD + line + EDGE, 2), panels


@register
class QkvProjectionsKind(VisualKind):
    name = "qkv-projections"
    title = "Queries, keys and values are projections of the input"
    Params = QkvProjectionsParams
    controls = (
        Control("d_model", "Embedding width d_model (features per token)", "int",
                min=D_MODEL_MIN, max=D_MODEL_MAX, step=1),
        Control("d_k", "Query/key/value width d_k", "int", min=D_K_MIN, max=D_K_MAX, step=1),
        Control("sentence", f"Sentence (up to {MAX_TOKENS} words)", "text", max_length=80),
    )
    learn = "/learn/attention#projections"
    choice_param = "choice"
    inches = (WIDTH, 5.0)
    narrow_inches = (NARROW_WIDTH, 11.0)  # nominal: figure_inches sizes the phone figure to its panels

    def figure_inches(self, params: QkvProjectionsParams, layout: str = "wide",
                      result: QkvResult | None = None) -> tuple[float, float]:
        if layout != "narrow":
            return (WIDTH, round(self.inches[1] + WIDE_MARK_ROOM, 2)) if marks(params.choice) else self.inches
        return NARROW_WIDTH, narrow_plan(result if result is not None else self.compute(params))[0]

    def compute(self, params: QkvProjectionsParams) -> QkvResult:
        tokens = tokenize(params.sentence, MAX_TOKENS)
        x = embed(tokens, params.d_model)  # (N, d_model)
        p = project_qkv(x, params.d_k, seed=params.seed)
        return QkvResult(tuple(tokens), column_names(params.d_model), x, p.w_q, p.w_k, p.w_v, p.q, p.k, p.v,
                         params.seed, symmetric_limit(x, p.w_q, p.w_k, p.w_v, p.q, p.k, p.v),
                         tuple(unknown_words(tokens)), marks(params.choice))

    def alt(self, params: QkvProjectionsParams, result: QkvResult) -> str:
        n, d_model = result.x.shape
        d_k = result.q.shape[1]
        largest = []
        for name, matrix in (("Q", result.q), ("K", result.k), ("V", result.v)):
            row, column = np.unravel_index(int(np.argmax(np.abs(matrix))), matrix.shape)
            value = minus(f"{matrix[row, column]:+.2f}")
            largest.append(f"{name} {value} (token '{result.tokens[row]}', column {column + 1})"
                           if matrix.any() else f"{name} all 0")
        text = (
            f"Input embeddings X ({n}×{d_model}: {plural(n, 'token')} '{' '.join(result.tokens)}' × {d_model} "
            f"features) are the layer's input. Queries, keys and values are computed from X by the learned "
            f"matrices W_Q, W_K and W_V (each {d_model}×{d_k}): Q = X·W_Q, K = X·W_K and V = X·W_V, each "
            f"{n}×{d_k}, one row per token. Largest |entry|: {'; '.join(largest)}. Colours: one diverging scale "
            f"from {minus(f'{-result.limit:.2f}')} to {result.limit:.2f} shared by all panels; random weights, "
            f"seed {result.seed}."
        )
        if result.unknown:
            text += " " + unknown_words_sentence(result.unknown)
        return text + marks_sentence(result.marks)

    def draw(self, params: QkvProjectionsParams, result: QkvResult, inches):
        from app.plots.qkv_projections import draw_qkv_narrow, draw_qkv_projections

        if inches[0] == NARROW_WIDTH:
            return draw_qkv_narrow(result, narrow_plan(result)[1], inches)
        return draw_qkv_projections(result, inches)

    def caption(self, params: QkvProjectionsParams, result: QkvResult) -> str:
        caption = ("The word embeddings X are the layer's input: they are looked up, not computed by the attention "
                   "layer. Queries, keys and values are computed from X by learned linear maps (Q = X·W_Q, K = X·W_K, "
                   "V = X·W_V, one dense layer each). Each product has X's rows, one per token, and its W's columns, "
                   "and is drawn under its W: a column of the product sits under the column of W that makes it. Every "
                   "panel uses one diverging colour scale, symmetric about 0 and set by the largest |entry| of all "
                   f"seven matrices. The weights are random (seed {params.seed}), not trained, and the embeddings are "
                   "toy features (constructed illustration, not a trained model).")
        if result.unknown:
            caption += " Not in the toy lexicon, so given pseudo-random features: " + ", ".join(result.unknown) + "."
        return caption + choice_sentence(chosen(params.choice))


def marks_sentence(panel_marks: dict[str, Mark]) -> str:
    """How the figure marks the student's ticks, for the alt text ("" when there are none)."""
    if not panel_marks:
        return ""
    said = "; ".join(f"{panel.upper()} {'ticked' if mark.ticked else 'not ticked'}, "
                     f"{'right' if mark.right else 'wrong'} ({mark.reason})" for panel, mark in panel_marks.items())
    return f" The figure marks your answer above X, Q, K and V, with your ticks outlined in dashes: {said}."


def choice_sentence(ticked: tuple[str, ...]) -> str:
    """What the figure says about the student's ticks ("" when none are known)."""
    if not ticked:
        return ""
    def listed(names):
        return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]

    missed = [name for name in ("queries", "keys", "values") if name not in ticked]
    right = [name for name in ("queries", "keys", "values") if name in ticked]
    text = ""
    if missed:
        if right:
            text += f" You ticked {listed(right)}: right, {'each' if len(right) > 1 else 'it is'} a learned map of X."
        text += (f" You left {listed(missed)} unticked, but the figure computes "
                 f"{'them' if len(missed) > 1 else 'it'} from X with a learned matrix.")
    if "embeddings" in ticked:
        text += (" You ticked word embeddings, but X is the layer's input, looked up, not computed from another "
                 "embedding space by a learned map here: the learned maps start from X.")
    elif missed:
        text += " You left word embeddings unticked: right, X is the layer's input, looked up."
    if not missed and "embeddings" not in ticked:
        text += " You ticked queries, keys and values, each a learned map of X, and left X itself out: right."
    return text
