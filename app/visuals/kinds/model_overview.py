"""The "model-overview" visual: all 72 heads of the real pretrained model (6 layers × 12 heads) on the student's
sentence as small attention maps, each marked with its computed character (previous/next token, [CLS], [SEP], broad)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from pydantic import Field, model_validator

from .. import register
from ..base import AcrossFields, NARROW_WIDTH, WIDTH, Control, VisualKind, VisualParams, line_height
from ..model import (CHARACTER_LETTERS, CHARACTER_WORDS, CHARACTERS, DEFAULT_SENTENCE, FOCUSED_BELOW, MAX_TOKENS,
                     NUM_HEADS, NUM_LAYERS, SENTENCE_MAX_LENGTH, SHARE_MARK, HeadCharacters, ModelSentence,
                     beside, characters, font_sentence, head_name, letters_sentence, run, top_heads)
from ..predictions import NumberParam
from .model_heads import CAPTION as HEADS_CAPTION
from .model_heads import EDGE, FONT, MODEL, TITLE, legend_height, strongest_head_words

GAP = 0.04  # inches between neighbouring maps
LEFT = EDGE + 0.55  # the row labels ('layer 1' or 'head 12')
COLOUR_BAR = (0.26, 0.09, 0.08)  # inches: from the maps' bottom to the colour bar, its height, and below it
UNDER = 7 / 72 + sum(COLOUR_BAR) + 2 * line_height(FONT) + EDGE  # the column labels, the colour bar, the legend


class ModelOverviewParams(VisualParams):
    sentence: ModelSentence = DEFAULT_SENTENCE
    # The layer a question is about (1 to 6), highlighted, its heads counted in the words; with `asks` (a
    # character), a numeric answer is the head of that layer that puts the most weight there.
    layer: int | None = Field(default=None, ge=1, le=NUM_LAYERS)
    asks: Literal["", *CHARACTERS] = ""
    predicted: NumberParam = ""  # a numeric question's answer: a head of `layer`, 1 to 12

    @model_validator(mode="after")
    def _asks_about_a_layer(self):
        if self.asks and self.layer is None:
            raise AcrossFields(f"asks: {self.asks} is about the heads of one layer: give its layer (1 to {NUM_LAYERS})",
                               "layer")
        return self


@dataclass(frozen=True)
class ModelOverviewResult:
    tokens: tuple[str, ...]
    attentions: np.ndarray  # (L, H, N, N) rows queries, columns keys
    characters: HeadCharacters
    layer: int | None = None  # 0-based: the layer a question is about
    asks: str = ""
    number: float | None = None  # the student's head, counted from 1, with asks

    @property
    def shows_prediction(self) -> bool:
        return bool(self.asks)


def layer_words(result: ModelOverviewResult) -> str:
    """The layer a question is about: its heads counted by character, and what it asks, answered."""
    if result.layer is None:
        return ""
    layer, characters = result.layer, result.characters
    labels = [characters.label(layer, head) for head in range(NUM_HEADS)]
    # Counted as the bank's heads_on counts: every character a head reaches SHARE_MARK on, so one head may count
    # twice (its shares are means over different queries), though its letter names only the largest.
    reaching = {c: [head for head in range(NUM_HEADS) if characters.share(c)[layer, head] >= SHARE_MARK]
                for c in CHARACTERS}
    counts = [f"{len(heads)} on {CHARACTER_WORDS[c]} ({CHARACTER_LETTERS[c]})" for c, heads in reaching.items() if heads]
    twice = sorted({head for head in range(NUM_HEADS) if sum(head in heads for heads in reaching.values()) > 1})
    placed = NUM_HEADS - labels.count("broad") - labels.count(None)
    broad, other = labels.count("broad"), labels.count(None)
    one = placed == 1
    text = (f"In layer {layer + 1} (highlighted), {placed} of the {NUM_HEADS} heads {'puts' if one else 'put'} at "
            f"least {SHARE_MARK:g} of {'its' if one else 'their'} weight on one place on average"
            f"{': ' + ', '.join(counts) if counts else ''}")
    if twice:
        heads = " and ".join([", ".join(str(head + 1) for head in twice[:-1]), str(twice[-1] + 1)] if len(twice) > 1
                             else [str(twice[0] + 1)])
        text += (f" ({'head' if len(twice) == 1 else 'heads'} {heads} {'reaches' if len(twice) == 1 else 'reach'} "
                 f"{SHARE_MARK:g} on two places, as each share is a mean over different queries, and so count"
                 f"{'s' if len(twice) == 1 else ''} twice; a map's letter names the larger)")
    text += (f"; {broad} {'is' if broad == 1 else 'are'} broad (b)"
             + (f" and {other} focused with no such place" if other else "") + ".")
    if result.asks:
        titles = (f"the layer's maps are titled with their share there after the letter "
                  f"{CHARACTER_LETTERS[result.asks]}, below {SHARE_MARK:g} too")
        text = strongest_head_words(characters, layer, result.asks, result.number, titles) + " " + text
    return text


def grid_shape(width: float) -> tuple[int, int]:
    """(rows, columns) of maps: layers down and heads across, or on a phone heads down and layers across."""
    return (NUM_LAYERS, NUM_HEADS) if width != NARROW_WIDTH else (NUM_HEADS, NUM_LAYERS)


def cell_side(width: float) -> float:
    _, columns = grid_shape(width)
    return (width - LEFT - EDGE - (columns - 1) * GAP) / columns


def overview_height(width: float) -> float:
    rows, _ = grid_shape(width)
    title = line_height(FONT) + 2 / 72
    return round(EDGE + 2 * line_height(TITLE) + rows * (title + cell_side(width) + GAP) + UNDER, 2)


def mark(characters: HeadCharacters, layer: int, head: int, with_share: bool) -> str:
    """A map's title: its character's letter ('P 1.00', 'b') or '' for a focused head of no character."""
    label = characters.label(layer, head)
    if label is None:
        return ""
    if label == "broad" or not with_share:
        return CHARACTER_LETTERS[label]
    return f"{CHARACTER_LETTERS[label]} {beside(float(characters.share(label)[layer, head]), SHARE_MARK)}"


def named_heads(pairs) -> str:
    return " and ".join(head_name(layer, head) for layer, head in pairs)


@register
class ModelOverviewKind(VisualKind):
    """Wide: layers down, heads across. Narrow (phone): heads down, layers across."""

    name = "model-overview"
    title = "Every head of a real model"
    Params = ModelOverviewParams
    controls = (Control("sentence", f"Sentence (up to {MAX_TOKENS} tokens after WordPiece)", "text",
                        max_length=SENTENCE_MAX_LENGTH),)
    learn = "/learn/attention#real-model"
    inches = (WIDTH, overview_height(WIDTH))
    narrow_inches = (NARROW_WIDTH, overview_height(NARROW_WIDTH))

    predictions = {"numeric": ("predicted", None)}
    prediction_grid = ("sentence",)

    def figure_inches(self, params: ModelOverviewParams, layout: str = "wide", result=None) -> tuple[float, float]:
        width = NARROW_WIDTH if layout == "narrow" else WIDTH
        return width, round(overview_height(width) + (legend_height(width) if params.asks else 0.0), 2)

    def compute(self, params: ModelOverviewParams) -> ModelOverviewResult:
        model_run = run(params.sentence)
        layer = None if params.layer is None else params.layer - 1
        number = float(params.predicted) if params.predicted and params.asks else None
        return ModelOverviewResult(tuple(model_run.tokens), model_run.attentions, characters(params.sentence), layer,
                                   params.asks, number)

    def alt(self, params: ModelOverviewParams, result: ModelOverviewResult) -> str:
        characters = result.characters
        parts = [f"All {NUM_LAYERS * NUM_HEADS} attention heads of {MODEL} ({NUM_LAYERS} layers × {NUM_HEADS} heads) "
                 f"on '{' '.join(result.tokens)}' ({len(result.tokens)} tokens), one small map per head, rows are "
                 "queries and columns are keys, weights from 0 to 1 on the one colour scale of the bar under the maps."]
        for character in CHARACTERS:
            values = characters.share(character)
            best = top_heads(values)
            parts.append(f"Most weight on {CHARACTER_WORDS[character]}: {named_heads(best)}, "
                         f"{beside(float(values[best[0]]), SHARE_MARK)} on average.")
        focused, broad = top_heads(-characters.entropy), top_heads(characters.entropy)
        entropy = lambda pair: beside(float(characters.entropy[pair]), FOCUSED_BELOW)  # noqa: E731
        parts.append(f"Most focused: {named_heads(focused)} (row entropy {entropy(focused[0])} "
                     f"nats); broadest: {named_heads(broad)} ({entropy(broad[0])} of at most "
                     f"{characters.uniform_entropy:.2f}).")
        words = layer_words(result)
        return (f"{words} " if words else "") + " ".join(parts) + font_sentence(result.tokens)

    def caption(self, params: ModelOverviewParams, result: ModelOverviewResult) -> str:
        characters = result.characters
        counts = {label: 0 for label in (*CHARACTERS, "broad")}
        rows = []
        for layer in range(NUM_LAYERS):
            cells = []
            for head in range(NUM_HEADS):
                label = characters.label(layer, head)
                if label is not None:
                    counts[label] += 1
                cells.append(f"{head + 1} {mark(characters, layer, head, True) or '–'}")
            rows.append(f"layer {layer + 1}: " + ", ".join(cells))
        tally = ", ".join(f"{count} {CHARACTER_LETTERS[label]}" for label, count in counts.items())
        words = layer_words(result)
        return (f"{words} " if words else "") + (HEADS_CAPTION.format(model=MODEL, focused=FOCUSED_BELOW)
                + " " + letters_sentence(" (with that share)") + f" In the list below – is no letter. Here: {tally}. "
                + "; ".join(rows) + "."
                + font_sentence(result.tokens))

    def draw(self, params: ModelOverviewParams, result: ModelOverviewResult, inches):
        from app.plots.model_overview import draw_overview

        return draw_overview(result, inches)
