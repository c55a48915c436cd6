"""The "attention-playground" visual on the /learn page, one heatmap per head: the constructed toy model with every
knob (heads, width, temperature, a causal mask), or, switched to the real model, a head of all-MiniLM-L6-v2."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

import numpy as np
from pydantic import Field, ValidationInfo, field_validator, model_validator

from app.engine import causal_mask

from .. import register
from ..base import (AcrossFields, NARROW_WIDTH, WIDTH, Control, OnOff, VisualKind, VisualParams, estimated_width,
                    line_height)
from ..model import (CHARACTER_WORDS, CHARACTERS, FOCUSED_BELOW, NUM_HEADS, NUM_LAYERS, SHARE_MARK, HeadCharacters,
                     beside, characters, drawable, fits_the_model, font_sentence, run)
from ..toy import HEAD_ROLES, MAX_TOKENS, constructed_multi_head, embed, lookup, tokenize, unknown_words
from ..words import format_temperature, short, unknown_words_sentence
from .model_heads import CAPTION as REAL_CAPTION
from .model_heads import MODEL as REAL_MODEL
from .model_heads import strongest_keys
from .multi_head import TEMPERATURE_CONTROL, TEMPERATURE_MAX, TEMPERATURE_MIN, check_heads_divide, unknown_caption

NUM_HEADS_MIN, NUM_HEADS_MAX = 1, 8
D_MODEL_MIN, D_MODEL_MAX = 2, 64
MODEL_SEED = 0  # the random heads' weights; fixed so every page shows the same model
REAL_CELL, REAL_SIDE_MAX = 0.3, 6.0  # the real head's wide heatmap: cells with room for "0.17", at most 6 inches


class AttentionPlaygroundParams(VisualParams):
    model: Literal["toy", "real"] = "toy"
    # The toy's word limit in both models; the font's in the toy's only (the real one draws code points instead).
    sentence: str = Field(default="the cat sat on the mat", min_length=1, max_length=80)
    # The toy model's knobs. The real model's sizes are fixed by its training, and it reads both ways (no mask).
    num_heads: int = Field(default=2, ge=NUM_HEADS_MIN, le=NUM_HEADS_MAX)
    d_model: int = Field(default=16, ge=D_MODEL_MIN, le=D_MODEL_MAX)
    temperature: float = Field(default=1.0, ge=TEMPERATURE_MIN, le=TEMPERATURE_MAX, allow_inf_nan=False)
    causal: OnOff = "off"
    # The real model's: which of its 72 heads (layer 1 head 3 is its previous-token head).
    layer: int = Field(default=1, ge=1, le=NUM_LAYERS)
    head: int = Field(default=3, ge=1, le=NUM_HEADS)

    @field_validator("sentence")
    @classmethod
    def _fits_the_tokenizer(cls, sentence: str, info: ValidationInfo) -> str:
        tokenize(sentence, MAX_TOKENS, drawn=info.data.get("model", "toy") == "toy")
        return sentence

    @model_validator(mode="after")
    def _fits_the_model(self):
        # Only the chosen model's rules: a control that does not apply to it never refuses its figure.
        if self.model == "toy":
            check_heads_divide(self.num_heads, self.d_model, NUM_HEADS_MIN, NUM_HEADS_MAX)
        else:
            try:
                fits_the_model(self.sentence)  # at most 64 WordPiece tokens, of text the tokenizer can read
            except ValueError as error:
                raise AcrossFields(str(error), "sentence") from None
        return self


@dataclass(frozen=True)
class MultiHeadResult:
    """The toy model's heads."""

    tokens: tuple[str, ...]
    weights: np.ndarray  # (h, N, N) per-head attention weights
    temperature: float
    d_model: int
    mask: np.ndarray | None  # (N, N) True = may attend, or None for no mask
    unknown: tuple[str, ...]

    @property
    def labels(self) -> tuple[str, ...]:  # the tokens as the figure writes them
        return self.tokens

    @property
    def head_titles(self) -> tuple[str, ...]:  # HEAD_ROLES: the constructed heads' "noun" and "verb"
        return tuple(f"head {head + 1}: {HEAD_ROLES[head]}s↔{HEAD_ROLES[head]}s" if head in HEAD_ROLES
                     else f"head {head + 1} (random)" for head in range(len(self.weights)))


@dataclass(frozen=True)
class RealHeadResult:
    """One head of the real model on the sentence, drawn like a toy head (no mask)."""

    tokens: tuple[str, ...]  # WordPiece tokens, [CLS] first and [SEP] last
    layer: int  # 0-based
    head: int  # 0-based
    weights: np.ndarray  # (1, N, N) rows queries, columns keys
    characters: HeadCharacters  # of the whole model, (L, H) each
    mask = None

    @property
    def labels(self) -> tuple[str, ...]:  # characters the font lacks as their code point
        return tuple(drawable(token) for token in self.tokens)

    @property
    def head_titles(self) -> tuple[str]:
        title = f"layer {self.layer + 1} head {self.head + 1}"
        label = self.characters.label(self.layer, self.head)
        if label in CHARACTERS:
            title += (f": {beside(float(self.characters.share(label)[self.layer, self.head]), SHARE_MARK)} on "
                      f"{CHARACTER_WORDS[label]}")
        return (title + (": broad" if label == "broad" else ""),)


def real_character_sentence(characters: HeadCharacters, layer: int, head: int, count: int) -> str:
    """'on average 0.45 on the previous token, ...; row entropy 0.91 nats on average, below the 1-nat mark, so
    focused: ...', for `count` tokens. The mark is fixed while a row's largest entropy, ln N, grows with the
    sentence (1.39 for 4 tokens, 4.16 for 64), so the words give that maximum and the row's spread in keys too."""
    shares = ", ".join(f"{beside(float(characters.share(c)[layer, head]), SHARE_MARK)} on {CHARACTER_WORDS[c]}"
                       for c in CHARACTERS)
    entropy = float(characters.entropy[layer, head])
    shown = beside(entropy, FOCUSED_BELOW)
    focused = characters.focused(layer, head)
    return (f"on average {shares}; row entropy {shown} nats on average, {'below' if focused else 'not below'} the "
            f"{FOCUSED_BELOW:g}-nat mark (an even split over e ≈ 2.7 keys, however many a row sees), so "
            f"{'focused' if focused else 'broad'}: {shown} nats is the entropy of an even split over e^{shown} ≈ "
            f"{np.exp(entropy):.1f} keys, of the {count} each row sees, and the most a row can have is "
            f"ln {count} = {characters.uniform_entropy:.2f} (all {count} keys alike)")


def _sees(result: MultiHeadResult) -> np.ndarray:
    """(N, N) True where query i may attend key j: every key without the mask, keys 1..i with it."""
    n = len(result.tokens)
    return np.ones((n, n), dtype=bool) if result.mask is None else result.mask


def _uneven(result: MultiHeadResult, head: int) -> np.ndarray:
    """(N,) the queries whose row is a choice: they see two keys or more and do not split their weight evenly over
    them. A row of one key (the first under the causal mask) or of equal weights says nothing about the head."""
    sees = _sees(result)
    rows = np.where(sees, result.weights[head], np.nan)  # (N, N) the visible weights
    spread = np.nanmax(rows, axis=1) - np.nanmin(rows, axis=1)  # (N,)
    return (sees.sum(axis=1) >= 2) & (spread > 1e-12)


def _strongest(result: MultiHeadResult, head: int) -> str:
    """The head's largest weight and its (query, key), among the queries whose row is a choice (see _uneven)."""
    if len(result.tokens) == 1:
        return f"the only token, '{result.tokens[0]}', has only itself to attend to (weight 1)"
    choosing = _uneven(result, head)  # (N,)
    if not choosing.any():
        return ("every query that sees more than one key splits its weight evenly over them, so no key is "
                "strongest")
    weights = result.weights[head]  # (N, N)
    best = float(weights[choosing].max())
    ties = np.argwhere((weights >= best - 1e-12) & choosing[:, None])
    query, key = (int(index) for index in ties[0])
    seen = int(_sees(result)[query].sum())
    text = (f"strongest weight {best:.2f}, query '{result.tokens[query]}' → key '{result.tokens[key]}' (an even "
            f"split over the {seen} keys it sees would give {1 / seen:.2f})")
    if len(ties) > 1:
        text += f"; {len(ties) - 1} other pair{'s tie' if len(ties) > 2 else ' ties'}"
    return text


def _role_share(result: MultiHeadResult, head: int, role: str) -> str:
    """What the role's queries put on the role's keys, against an even split over the keys each query sees: the
    baseline a head that ignored the features would reach. A query that sees one key (the first under the mask)
    is left out: its weight of 1 is the mask's, not the head's."""
    in_role = np.array([lookup(token).category == role for token in result.tokens])  # (N,) lexicon role words
    sees = _sees(result)  # (N, N)
    counted = in_role & (sees.sum(axis=1) >= 2)  # (N,) the role queries that choose
    members = [token for token, chosen in zip(result.tokens, in_role) if chosen]
    if not counted.any():  # one role word, first under the mask (or the only token)
        return (f"the only {role}, '{members[0]}', is the first token and sees only itself under the mask, so its "
                "weight of 1 shows nothing of the head")
    shares = result.weights[head][counted][:, in_role].sum(axis=1)  # (queries,) weight on role keys
    even = (sees[counted] & in_role).sum(axis=1) / sees[counted].sum(axis=1)  # (queries,) an even split's share
    names = [token for token, chosen in zip(result.tokens, counted) if chosen]
    if len(names) == 1:
        only = "the only " if len(members) == 1 else "the "
        text = (f"{only}{role} '{names[0]}' puts {float(shares[0]):.2f} of its weight on {role}s, against "
                f"{float(even[0]):.2f} for an even split over the {int(sees[counted][0].sum())} keys it sees")
    else:
        text = (f"the {role}s ({', '.join(names)}) put on average {float(shares.mean()):.2f} of their weight on "
                f"{role}s, against {float(even.mean()):.2f} for an even split over the keys each sees")
    if np.all(even == 1.0):
        text += f": every key {'it sees' if len(names) == 1 else 'they see'} is a {role}, so there is none to prefer"
    left_out = [token for token, role_word, seen in zip(result.tokens, in_role, sees.sum(axis=1))
                if role_word and seen < 2]
    if left_out and len(result.tokens) > 1:
        text += f" ('{left_out[0]}', the first token, sees only itself and is left out)"
    return text


def _describe_head(result: MultiHeadResult, head: int) -> str:
    role = HEAD_ROLES.get(head)
    if role is None:
        return f"Head {head + 1} (random): {_strongest(result, head)}."
    label = f"Head {head + 1} ({role}s↔{role}s)"
    if len(result.tokens) == 1:
        return f"{label}: {_strongest(result, head)}."
    if not any(lookup(token).category == role for token in result.tokens):
        # A lexicon word's query then reads 0 and scores every key alike: only an unknown word's random features
        # (a fraction of the role's among them) can make a row uneven.
        reads = (", so only the pseudo-random features of the words outside the lexicon give this head something to read"
                 if _uneven(result, head).any() else "")
        return f"{label}: the sentence has no {role}s of the toy lexicon{reads}; {_strongest(result, head)}."
    return f"{label}: {_role_share(result, head, role)}; {_strongest(result, head)}."


def toy_caption(num_heads: int) -> str:
    """The constructed model's heads in words, for `num_heads` of them (1 to NUM_HEADS_MAX)."""
    if num_heads == 1:
        heads = ("With one head, its query and key projections read all the features. Here it is set by hand to read "
                 "only the 'noun' feature, so a noun attends more to nouns than to other words, however far apart "
                 "they are: sharply at a low temperature, hardly more at a high one.")
    else:
        heads = ("Each head has its own query and key projections, so it compares the tokens in its own small "
                 "subspace of the features. Here the heads are set by hand: head 1 reads only the 'noun' feature, "
                 "so a noun attends more to nouns than to other words; head 2 reads only the 'verb' feature, so a "
                 "verb attends more to verbs, however far apart they are: sharply at a low temperature, hardly more "
                 "at a high one." + (" The further heads have random weights." if num_heads > 2 else ""))
    return (heads + " Constructed illustration, not a trained model: a trained model learns its heads' subspaces "
            "from data.")


def role_heads(num_heads: int) -> list[str]:
    """The roles of the hand-set heads among `num_heads`: ["noun"] or ["noun", "verb"]."""
    return [HEAD_ROLES[head] for head in sorted(HEAD_ROLES) if head < num_heads]


def role_heads_name(num_heads: int) -> str:
    roles = role_heads(num_heads)
    return f"the {' and '.join(roles)} head{'s' if len(roles) > 1 else ''}"


def unknown_in_role_heads(unknown, num_heads: int) -> str:
    """Words not in the lexicon, and what the hand-set heads make of them: their pseudo-random features include a
    fraction of the features those heads read."""
    roles = role_heads(num_heads)
    return (f"{unknown_words_sentence(unknown)} Those features include a fraction of "
            f"{' and '.join(repr(role) for role in roles)}, so {role_heads_name(num_heads)} "
            f"read{'' if len(roles) > 1 else 's'} these words as partly {' and partly '.join(r + 's' for r in roles)}: "
            "their rows, and the weight other rows put on them, need not be even.")


CAUSAL_CAPTION = (
    " With the causal mask on, as in a decoder that generates text left to right, query i may attend only keys "
    "1..i: the hatched cells are masked and get weight exactly 0, and each row's remaining weights still sum to 1."
)

TOY_CAPTION_END = " The layer and head controls choose a head of the real model only: switch the model to real."
REAL_CAPTION_END = (
    " The number of heads, d_model, the temperature and the causal mask set the toy model only: this model's sizes "
    "are fixed by its training (6 layers × 12 heads, 384 features, 32 per head), and every token reads the whole "
    "sentence, both ways."
)
TOY_ONLY, REAL_ONLY = "toy model only", "real model only"

# The phone layout, in inches: one column of heads, each with its own labels, one scale bar below.
FONT, TITLE = 8.0, 9.0  # 8 pt ≈ 11 CSS px in the 340 px image, shown at about its own size
EDGE, TICK, LABEL_PAD, TITLE_PAD = 0.05, 7 / 72, 4 / 72, 6 / 72  # as app.plots.figure's
NUMBERED_CELL = 0.3  # "0.17" at 8 pt is 0.25 inch: narrower cells go without their numbers
MAX_NUMBERED_CELL, MAX_PLAIN_CELL = 0.42, 0.2  # larger squares only make the column longer
HEAD_GAP, BAR = 0.18, 0.12
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


def labels_of(params: AttentionPlaygroundParams) -> tuple[str, ...]:
    """The tokens as the figure will write them, before computing (the real model's run is cached)."""
    if params.model == "real":
        return tuple(drawable(token) for token in run(params.sentence).tokens)
    return tuple(tokenize(params.sentence, MAX_TOKENS))


@register
class AttentionPlaygroundKind(VisualKind):
    """Wide: the heads on a grid, one row up to 3 heads, then two rows. Narrow (phone): one column of heads.
    The real model: its one chosen head, a heatmap sized to the tokens."""

    name = "attention-playground"
    title = "Attention playground"
    Params = AttentionPlaygroundParams
    controls = (
        Control("model", "Model", "choice", choices=(("toy", "toy, hand-set"), ("real", "real, MiniLM-L6"))),
        Control("sentence", f"Sentence (up to {MAX_TOKENS} words)", "text", max_length=80),
        Control("num_heads", f"Number of heads ({TOY_ONLY}; must divide d_model)", "int",
                min=NUM_HEADS_MIN, max=NUM_HEADS_MAX, step=1),
        Control("d_model", f"Model width d_model ({TOY_ONLY})", "int", min=D_MODEL_MIN, max=D_MODEL_MAX, step=1),
        replace(TEMPERATURE_CONTROL, label=f"{TEMPERATURE_CONTROL.label} ({TOY_ONLY})"),
        Control("causal", f"Causal mask ({TOY_ONLY}: a query sees only itself and earlier tokens)", "choice",
                choices=(("off", "off"), ("on", "on"))),
        Control("layer", f"Layer ({REAL_ONLY}, 1 to {NUM_LAYERS})", "int", min=1, max=NUM_LAYERS, step=1),
        Control("head", f"Head ({REAL_ONLY}, 1 to {NUM_HEADS})", "int", min=1, max=NUM_HEADS, step=1),
    )
    learn = "/learn/attention#playground"
    narrow_inches = (NARROW_WIDTH, 9.0)  # nominal: figure_inches sizes the column to the heads and words

    def figure_inches(self, params, layout: str = "wide", result=None) -> tuple[float, float]:
        labels = result.labels if result is not None else labels_of(params)
        heads = 1 if params.model == "real" else params.num_heads
        if layout == "narrow":
            return NARROW_WIDTH, column_plan(labels, heads).height
        if params.model == "real":  # room for the labels and title (as the toy's), and a square of cells
            return WIDTH, round(1.6 + min(len(labels) * REAL_CELL, REAL_SIDE_MAX), 2)
        return WIDTH, 3.9 if heads <= 3 else 6.0

    def compute(self, params: AttentionPlaygroundParams) -> MultiHeadResult | RealHeadResult:
        if params.model == "real":
            model_run = run(params.sentence)
            layer, head = params.layer - 1, params.head - 1
            return RealHeadResult(tuple(model_run.tokens), layer, head, model_run.attentions[layer, head: head + 1],
                                  characters(params.sentence))
        tokens = tokenize(params.sentence, MAX_TOKENS)
        x = embed(tokens, params.d_model)  # (N, d_model)
        model = constructed_multi_head(params.d_model, params.num_heads, seed=MODEL_SEED)
        mask = causal_mask(len(tokens)) if params.causal == "on" else None  # (N, N)
        _, weights = model(x, mask=mask, temperature=params.temperature)  # (h, N, N)
        return MultiHeadResult(tuple(tokens), weights, params.temperature, params.d_model, mask,
                               tuple(unknown_words(tokens)))

    def alt(self, params: AttentionPlaygroundParams, result) -> str:
        if isinstance(result, RealHeadResult):
            layer, head = result.layer, result.head
            return (f"Trained self-attention of {REAL_MODEL}, layer {layer + 1} head {head + 1}, over "
                    f"'{' '.join(result.tokens)}' ({len(result.tokens)} tokens after WordPiece): one heatmap, rows are "
                    "queries and columns are keys, weights from 0 to 1. This head puts "
                    f"{real_character_sentence(result.characters, layer, head, len(result.tokens))}. Where each token attends most: "
                    f"{'; '.join(strongest_keys(result.tokens, result.weights[0]))}." + font_sentence(result.tokens))
        parts = [(
            f"Constructed {len(result.weights)}-head self-attention over '{' '.join(result.tokens)}' (d_model "
            f"{result.d_model}, temperature {format_temperature(result.temperature)}): one heatmap per head, rows "
            "are queries and columns are keys, weights from 0 to 1."
        )]
        parts += [_describe_head(result, head) for head in range(len(result.weights))]
        parts.append(f"In {role_heads_name(len(result.weights))}, a query of a lexicon word of another part of speech "
                     "spreads its weight evenly over the keys it sees.")
        if len(result.tokens) > 1:
            parts.append("A strongest weight is looked for among the queries that choose: it leaves out "
                         + ("the first query, which sees only itself (weight 1), and " if result.mask is not None
                            else "") + "any query that splits its weight evenly over the keys it sees.")
        if result.mask is not None:
            parts.append("Causal mask on: each query sees only itself and earlier tokens; the hatched cells above the "
                         "diagonal are masked and have weight exactly 0.")
        if result.unknown:
            parts.append(unknown_in_role_heads(result.unknown, len(result.weights)))
        return " ".join(parts)

    def caption(self, params: AttentionPlaygroundParams, result) -> str:
        if isinstance(result, RealHeadResult):
            return (REAL_CAPTION.format(model=REAL_MODEL, focused=FOCUSED_BELOW) + REAL_CAPTION_END
                    + font_sentence(result.tokens))
        return (toy_caption(len(result.weights)) + (CAUSAL_CAPTION if params.causal == "on" else "")
                + unknown_caption(result.unknown) + TOY_CAPTION_END)

    def draw(self, params: AttentionPlaygroundParams, result, inches):
        from app.plots.multi_head import draw_heads

        return draw_heads(result, inches, column_plan(result.labels, len(result.weights))
                          if inches[0] == NARROW_WIDTH else None)
