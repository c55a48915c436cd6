"""The "attention-playground" visual on the /learn page: a constructed multi-head model with every knob
exposed (sentence, heads, width, temperature, an optional causal mask), drawn one heatmap per head."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from pydantic import Field, model_validator

from app.engine import causal_mask

from .. import register
from ..base import (NARROW_WIDTH, WIDTH, Control, OnOff, Sentence, VisualKind, VisualParams, estimated_width,
                    line_height)
from ..toy import HEAD_ROLES, MAX_TOKENS, constructed_multi_head, embed, lookup, tokenize, unknown_words
from ..words import format_temperature
from .multi_head import (TEMPERATURE_CONTROL, TEMPERATURE_MAX, TEMPERATURE_MIN, check_heads_divide, unknown_caption,
                         unknown_sentence)

NUM_HEADS_MIN, NUM_HEADS_MAX = 1, 8
D_MODEL_MIN, D_MODEL_MAX = 2, 64
MODEL_SEED = 0  # the random heads' weights; fixed so every page shows the same model


class AttentionPlaygroundParams(VisualParams):
    sentence: Sentence = "the cat sat on the mat"
    num_heads: int = Field(default=2, ge=NUM_HEADS_MIN, le=NUM_HEADS_MAX)
    d_model: int = Field(default=16, ge=D_MODEL_MIN, le=D_MODEL_MAX)
    temperature: float = Field(default=1.0, ge=TEMPERATURE_MIN, le=TEMPERATURE_MAX, allow_inf_nan=False)
    causal: OnOff = "off"

    @model_validator(mode="after")
    def _heads_divide_width(self):
        check_heads_divide(self.num_heads, self.d_model, NUM_HEADS_MIN, NUM_HEADS_MAX)
        return self


@dataclass(frozen=True)
class MultiHeadResult:
    tokens: tuple[str, ...]
    weights: np.ndarray  # (h, N, N) per-head attention weights
    temperature: float
    d_model: int
    mask: np.ndarray | None  # (N, N) True = may attend, or None for no mask
    unknown: tuple[str, ...]

    @property
    def head_titles(self) -> tuple[str, ...]:  # HEAD_ROLES: the constructed heads' "noun" and "verb"
        return tuple(f"head {head + 1}: {HEAD_ROLES[head]}s↔{HEAD_ROLES[head]}s" if head in HEAD_ROLES
                     else f"head {head + 1} (random)" for head in range(len(self.weights)))


def _strongest(result: MultiHeadResult, head: int) -> str:
    weights = result.weights[head]
    best = float(weights.max())
    ties = np.argwhere(weights >= best - 1e-12)
    query, key = (int(index) for index in ties[0])
    text = f"strongest weight {best:.2f}, query '{result.tokens[query]}' → key '{result.tokens[key]}'"
    if len(ties) > 1:
        text += f" ({len(ties) - 1} other pair{'s tie' if len(ties) > 2 else ' ties'})"
    return text


def _describe_head(result: MultiHeadResult, head: int) -> str:
    role = HEAD_ROLES.get(head)
    if role is None:
        return f"Head {head + 1} (random): {_strongest(result, head)}."
    label = f"Head {head + 1} ({role}s↔{role}s)"
    in_role = np.array([lookup(token).category == role for token in result.tokens])  # (N,) the tokens it relates
    members = [token for token, chosen in zip(result.tokens, in_role) if chosen]
    if not members:
        return f"{label}: the sentence has no {role}s, so this head has nothing to relate; {_strongest(result, head)}."
    # Each role query's total weight on role keys, averaged over the role queries.
    share = float(result.weights[head][np.ix_(in_role, in_role)].sum(axis=1).mean())
    if len(members) == 1:
        subject = f"the only {role}, '{members[0]}', puts {share:.2f} of its weight"
    else:
        subject = f"the {role}s ({', '.join(members)}) put on average {share:.2f} of their weight"
    return f"{label}: {subject} on {role}s; {_strongest(result, head)}."


CAPTION = (
    "Each head has its own query and key projections, so it compares the tokens in its own small "
    "subspace of the features. Here the heads are set by hand: head 1 reads only the 'noun' feature, "
    "so nouns attend to nouns; head 2 reads only the 'verb' feature, so verbs attend to verbs, however "
    "far apart they are. Any further heads have random weights. Constructed illustration, not a "
    "trained model: a trained model learns its heads' subspaces from data."
)
CAUSAL_CAPTION = (
    " With the causal mask on, as in a decoder that generates text left to right, query i may attend only keys "
    "1..i: the hatched cells are masked and get weight exactly 0, and each row's remaining weights still sum to 1."
)

# The phone layout, in inches: one column of heads, each with its own labels, one scale bar below.
FONT, TITLE = 8.0, 9.0  # 8 pt ≈ 11 CSS px in the 340 px image, shown at about its own size
EDGE, TICK, LABEL_PAD, TITLE_PAD = 0.05, 7 / 72, 4 / 72, 6 / 72  # as app.plots.figure's
NUMBERED_CELL = 0.3  # "0.17" at 8 pt is 0.25 inch: narrower cells go without their numbers
MAX_NUMBERED_CELL, MAX_PLAIN_CELL = 0.42, 0.2  # larger squares only make the column longer
HEAD_GAP, BAR = 0.18, 0.12
MAX_LABEL = 16  # longer words are cut in the tick labels ("…"); the alt text has them whole


def short(word: str) -> str:
    return word if len(word) <= MAX_LABEL else word[: MAX_LABEL - 1] + "…"


@dataclass(frozen=True)
class ColumnPlan:
    """Head h's square heatmap, `side` inches wide, at (left, EDGE + title room + h · pitch) from the top-left."""

    left: float
    side: float
    pitch: float  # from one head's top to the next one's
    numbered: bool  # the cells carry their weights
    upright: bool  # the key labels are turned 90° (too wide to stand level under their cells)
    height: float  # of the figure, the scale bar and its labels included


def column_plan(tokens, num_heads: int) -> ColumnPlan:
    label_width = estimated_width([short(token) for token in tokens], FONT)
    left = EDGE + line_height(FONT) + LABEL_PAD + label_width + TICK
    room = (NARROW_WIDTH - left - EDGE) / len(tokens)  # a cell's width if the heatmap fills the column
    numbered = room >= NUMBERED_CELL
    cell = min(room, MAX_NUMBERED_CELL if numbered else MAX_PLAIN_CELL)
    upright = label_width > 0.9 * cell
    below = TICK + (label_width if upright else line_height(FONT)) + LABEL_PAD + line_height(FONT)
    pitch = line_height(TITLE) + TITLE_PAD + len(tokens) * cell + below + HEAD_GAP
    bar_room = BAR + TICK + 2 * line_height(FONT) + LABEL_PAD + EDGE  # the bar, its numbers and its label
    return ColumnPlan(left, len(tokens) * cell, pitch, numbered, upright, round(EDGE + num_heads * pitch + bar_room, 2))


@register
class AttentionPlaygroundKind(VisualKind):
    """Wide: the heads on a grid, one row up to 3 heads, then two rows. Narrow (phone): one column of heads."""

    name = "attention-playground"
    title = "Attention playground"
    Params = AttentionPlaygroundParams
    controls = (
        Control("sentence", f"Sentence (up to {MAX_TOKENS} words)", "text", max_length=80),
        Control("num_heads", "Number of heads (must divide d_model)", "int",
                min=NUM_HEADS_MIN, max=NUM_HEADS_MAX, step=1),
        Control("d_model", "Model width d_model", "int", min=D_MODEL_MIN, max=D_MODEL_MAX, step=1),
        TEMPERATURE_CONTROL,
        Control("causal", "Causal mask (a query sees only itself and earlier tokens)", "choice",
                choices=(("off", "off"), ("on", "on"))),
    )
    learn = "/learn/attention#playground"
    narrow_inches = (NARROW_WIDTH, 9.0)  # nominal: figure_inches sizes the column to the heads and words

    def figure_inches(self, params, layout: str = "wide", result=None) -> tuple[float, float]:
        if layout == "narrow":
            tokens = result.tokens if result is not None else tokenize(params.sentence, MAX_TOKENS)
            return NARROW_WIDTH, column_plan(tokens, params.num_heads).height
        return WIDTH, 3.9 if params.num_heads <= 3 else 6.0

    def compute(self, params: AttentionPlaygroundParams) -> MultiHeadResult:
        tokens = tokenize(params.sentence, MAX_TOKENS)
        x = embed(tokens, params.d_model)  # (N, d_model)
        model = constructed_multi_head(params.d_model, params.num_heads, seed=MODEL_SEED)
        mask = causal_mask(len(tokens)) if params.causal == "on" else None  # (N, N)
        _, weights = model(x, mask=mask, temperature=params.temperature)  # (h, N, N)
        return MultiHeadResult(tuple(tokens), weights, params.temperature, params.d_model, mask,
                               tuple(unknown_words(tokens)))

    def alt(self, params: AttentionPlaygroundParams, result: MultiHeadResult) -> str:
        parts = [(
            f"Constructed {len(result.weights)}-head self-attention over '{' '.join(result.tokens)}' (d_model "
            f"{result.d_model}, temperature {format_temperature(result.temperature)}): one heatmap per head, rows "
            "are queries and columns are keys, weights from 0 to 1."
        )]
        parts += [_describe_head(result, head) for head in range(len(result.weights))]
        parts.append("In those heads, queries of other parts of speech spread their weight evenly over the keys they "
                     "see.")  # head 1 is always the noun head
        if result.mask is not None:
            parts.append("Causal mask on: each query sees only itself and earlier tokens; the hatched cells above the "
                         "diagonal are masked and have weight exactly 0.")
        return " ".join(parts + ([unknown_sentence(result.unknown)] if result.unknown else []))

    def caption(self, params: AttentionPlaygroundParams, result: MultiHeadResult) -> str:
        return CAPTION + (CAUSAL_CAPTION if params.causal == "on" else "") + unknown_caption(result.unknown)

    def draw(self, params: AttentionPlaygroundParams, result: MultiHeadResult, inches):
        from app.plots.multi_head import draw_heads

        return draw_heads(result, inches, column_plan(result.tokens, len(result.weights))
                          if inches[0] == NARROW_WIDTH else None)

