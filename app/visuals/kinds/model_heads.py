"""The "model-heads" visual: a real pretrained Transformer's attention (all-MiniLM-L6-v2, run by our engine) on the
student's sentence, one head as token-to-token links (BertViz's head view) or every head of a layer as heatmaps."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

import numpy as np
from pydantic import BeforeValidator, Field, model_validator

from .. import register
from ..base import AcrossFields, NARROW_WIDTH, WIDTH, Control, VisualKind, VisualParams, line_height
from ..model import (CHARACTER_LETTERS, CHARACTER_WORDS, CHARACTERS, DEFAULT_SENTENCE, FOCUSED_BELOW, MAX_TOKENS,
                     NUM_HEADS, NUM_LAYERS, SENTENCE_MAX_LENGTH, SHARE_MARK, HeadCharacters, ModelSentence, beside,
                     characters, font_sentence, letters_sentence, run, top_heads, top_keys)
from ..predictions import Cells, CellsParam, NumberParam, cells_comparison, cells_of, check_in_grid

HEADS = tuple(str(head) for head in range(1, NUM_HEADS + 1)) + ("all",)
ASKS = ("", *CHARACTERS, "key", "focused")
FONT = 8.0  # token labels: 8 pt ≈ 11 CSS px in the phone's image, shown at about its own size
PITCH = 1.35 * line_height(FONT)  # inches from one token's row of the links view to the next
MODEL = "all-MiniLM-L6-v2"
EDGE, TITLE_PAD = 0.05, 6 / 72  # as app.plots.figure's
TITLE = 9.0
GRID_COLUMNS = {"wide": 4, "narrow": 2}  # the heatmaps of all heads: 4 × 3 wide, 2 × 6 on a phone
GRID_GAP, BAR_ROOM = 0.12, 0.12 + 7 / 72 + 2 * line_height(FONT) + 4 / 72 + EDGE  # the bar, its numbers, its label


NARROW_BARS, NARROW_BARS_GAP = 0.9, 0.15  # inches: the phone's bars of a head's character, under its links


def bars_height(n: int) -> float:
    """The wide links view's bars of the head's character, beside the links: as tall as the rows, within limits."""
    return min(1.4, max(n * PITCH - 0.5, 0.8))


def bars_title_lines(said: str, narrow: bool) -> int:
    """The bars' title: the mean-weight and entropy line (two lines on a phone), and the student's true/false."""
    return (2 if narrow else 1) + (1 if said else 0)


def links_height(n: int, width: float, bars: bool = False, said: str = "") -> float:
    """The links view: two title lines, then a row per token; wide, at least the bars and their numbers below; on a
    phone, with `bars` (a question about the head's character), the bars under the rows, under their title."""
    under = 7 / 72 + line_height(FONT)  # the bars' ticks and numbers
    if width != NARROW_WIDTH:
        rows = max(n * PITCH, bars_height(n) + under)
    else:
        rows = n * PITCH + (NARROW_BARS_GAP + bars_title_lines(said, True) * line_height(FONT) + TITLE_PAD
                            + NARROW_BARS + under if bars else 0.0)
    return round(EDGE + 2 * line_height(TITLE) + TITLE_PAD + rows + EDGE, 2)


def grid_side(width: float) -> float:
    """A heatmap's side in the grid of all heads: the width shared by the columns, less the gaps."""
    columns = GRID_COLUMNS["narrow" if width == NARROW_WIDTH else "wide"]
    return (width - 2 * EDGE - 0.25 - (columns - 1) * GRID_GAP) / columns  # 0.25: the 'query' label at the left


def grid_height(width: float, n: int) -> float:
    columns = GRID_COLUMNS["narrow" if width == NARROW_WIDTH else "wide"]
    rows = -(-NUM_HEADS // columns)
    title = line_height(TITLE) + TITLE_PAD
    return round(EDGE + 2 * line_height(TITLE) + rows * (title + grid_side(width)) + (rows - 1) * GRID_GAP
                 + 2 * line_height(FONT) + BAR_ROOM, 2)


class ModelHeadsParams(VisualParams):
    sentence: ModelSentence = DEFAULT_SENTENCE
    layer: int = Field(default=1, ge=1, le=NUM_LAYERS)
    # A bank may write `head: 3` or "{{ head }}" (a number); the controls send "3" or "all".
    head: Annotated[Literal[HEADS], BeforeValidator(lambda v: str(v) if type(v) is int else v)] = "3"
    # Predict, then reveal: a cells question's predicted and right (query, key) pairs of the one head drawn,
    # positions counted from [CLS] = 0.
    predicted_cells: CellsParam = ""
    answer_cells: CellsParam = ""
    # What the question asks of the figure, so that it answers the student (docs/authoring.md, "model-heads"):
    # a character (with all heads, the head that puts the most weight there; with one, its mean share), "key"
    # (the key position that the token at `query` attends most to) or "focused" (a true/false about the head).
    asks: Literal[ASKS] = ""
    # A position, [CLS] = 0, for asks: key ("" is none: prediction_params clear it so).
    query: Annotated[int | None, BeforeValidator(lambda v: None if v == "" else v)] = Field(default=None, ge=0,
                                                                                          le=MAX_TOKENS - 1)
    predicted: NumberParam = ""  # a numeric question's answer: a head, a share or a position (see asks)
    said: Literal["", "true", "false"] = ""  # a true/false question's answer, for asks: focused

    @model_validator(mode="after")
    def _cells_of_one_head(self):
        if self.predicted_cells or self.answer_cells:
            if self.head == "all":
                raise AcrossFields("a prediction is drawn on one head: choose a head from 1 to 12, not all", "head")
            n = len(run(self.sentence).tokens)
            for name in ("predicted_cells", "answer_cells"):
                check_in_grid(name, getattr(self, name), n, n, "query tokens", "key tokens")
        if self.asks in ("key", "focused") and self.head == "all":
            raise AcrossFields(f"asks: {self.asks} is about one head: choose a head from 1 to 12, not all", "head")
        if (self.asks == "key") != (self.query is not None):
            raise AcrossFields("asks: key needs the query's position (query: 0 for [CLS], 1 for the first word, ...), "
                               "and query is only for asks: key", "query")
        if self.query is not None and self.query >= (n := len(run(self.sentence).tokens)):
            raise AcrossFields(f"query must be a position of the sentence's {n} tokens, 0 to {n - 1}; got {self.query}",
                               "query")
        return self


@dataclass(frozen=True)
class ModelHeadsResult:
    tokens: tuple[str, ...]
    layer: int  # 0-based
    heads: tuple[int, ...]  # 0-based: the one head drawn, or all of the layer's
    weights: np.ndarray  # (len(heads), N, N) rows queries, columns keys
    characters: HeadCharacters  # of the whole model, (L, H) each
    predicted: Cells = ()  # the student's (query, key) pairs
    answer: Cells | None = None  # the key's pairs; None when not given
    asks: str = ""  # what the question asks of the figure (ModelHeadsParams.asks)
    query: int | None = None  # asks: key
    number: float | None = None  # a numeric question's answer, with asks
    said: str = ""  # a true/false question's answer, with asks: focused

    @property
    def shows_prediction(self) -> bool:
        """The figure marks an answer (and the student's), with a legend."""
        return bool(self.predicted) or self.answer is not None or self.asks in CHARACTERS


def shows_prediction(params: ModelHeadsParams) -> bool:
    """ModelHeadsResult.shows_prediction from the params alone, to size the figure."""
    return bool(params.predicted_cells or params.answer_cells) or params.asks in (*CHARACTERS, "key")


def shows_bars(params: ModelHeadsParams) -> bool:
    """The phone's links view shows the head's character bars too: the question is about them."""
    return params.head != "all" and params.asks in (*CHARACTERS, "focused")


PREDICTION_LEGEND = ("your prediction", "the answer")
ASKED_LEGEND = ("your answer", "the answer")


def legend_lines(width: float) -> int:
    """The prediction legend's lines: its two entries side by side in the wide figure, stacked on a phone."""
    return 2 if width == NARROW_WIDTH else 1


def legend_height(width: float) -> float:
    return legend_lines(width) * 1.5 * line_height(FONT) + 0.12


def prediction_words(result: ModelHeadsResult) -> str:
    """What the question asked of the figure, or the predicted pairs against the answer's, in words with the
    engine's numbers; "" for neither."""
    if result.asks:
        return asked_words(result)
    if not result.shows_prediction:
        return ""
    return cells_comparison([token_name(result.tokens, i) for i in range(len(result.tokens))],
                            lambda key: token_name(result.tokens, key), result.weights[0], result.predicted,
                            result.answer, top_keys, "the links (your pairs dashed, the answer's solid)")


def _capital(text: str) -> str:
    return text[0].upper() + text[1:]


def asked_words(result: ModelHeadsResult) -> str:
    """The answer to what the question asks (ModelHeadsParams.asks) from the engine's numbers, beside the
    student's answer when there is one, and where the figure marks each."""
    layer, number, characters = result.layer, result.number, result.characters
    yours = "" if number is None else f"{number:.12g}"
    if result.asks == "focused":
        (head,) = result.heads
        focused = characters.focused(layer, head)
        text = (f"layer {layer + 1} head {head + 1}'s rows have a mean entropy of "
                f"{beside(float(characters.entropy[layer, head]), FOCUSED_BELOW)} nats, "
                f"{'below' if focused else 'not below'} {FOCUSED_BELOW:g}: the head is "
                f"{'focused' if focused else 'broad'} (the bars' title)")
        if not result.said:
            return _capital(text) + "."
        right = (result.said == "true") == focused
        verdict = "rightly" if right else f"but it is {'true' if focused else 'false'}"
        return f"You answered {result.said}, {verdict}: {text}."
    if result.asks == "key":
        query, row = result.query, result.weights[0][result.query]
        best = top_keys(row)
        most = (f"query {token_name(result.tokens, query)} puts the most weight on "
                f"{' and '.join(token_name(result.tokens, key) for key in best)}, {float(row[best[0]]):.2f} "
                f"(the solid link{'s' if len(best) > 1 else ''})")
        if number is None:
            return _capital(most) + "."
        if not result.predicted:  # compute draws a number only when it is a position of the sentence
            return f"Your answer, {yours}, is not a position of the sentence (0 to {len(row) - 1}); {most}."
        ((_, key),) = result.predicted
        if key in best:
            return f"You answered position {key}, rightly: {most}."
        return (f"You answered position {key}, {token_name(result.tokens, key)}, which query "
                f"{token_name(result.tokens, query)} gives {float(row[key]):.2f} (the dashed link); {most}.")
    if len(result.heads) > 1:
        return strongest_head_words(characters, layer, result.asks, number,
                                    f"each head's title gives its share there after the letter {CHARACTER_LETTERS[result.asks]}")
    (head,) = result.heads
    actual = float(characters.share(result.asks)[layer, head])
    text = (f"layer {layer + 1} head {head + 1} puts {beside(actual, SHARE_MARK)} of its weight on "
            f"{CHARACTER_WORDS[result.asks]} on average (its bar, outlined)")
    if number is None:
        return _capital(text) + "."
    if not 0 <= number <= 1:
        return f"Your answer, {yours}, is not a share of the weight, which lies between 0 and 1; {text}."
    if abs(actual - number) < 0.005:
        return f"You answered {yours} (the dashed line), which is the share to 2 decimals: {text}."
    return (f"You answered {yours} (the dashed line); {text}: {abs(actual - number):.2f} "
            f"{'more' if actual > number else 'less'} than your answer.")


def strongest_head_words(characters: HeadCharacters, layer: int, character: str, number: float | None,
                         titles: str = "") -> str:
    """Which head of `layer` (0-based) puts the most weight on `character`, and what the student's head (`number`,
    counted from 1) puts there; the figure outlines the first solid and the second dashed, its `titles` the shares."""
    values, where = characters.share(character)[layer], CHARACTER_WORDS[character]
    share = lambda head: beside(float(values[head]), SHARE_MARK)  # noqa: E731
    best = [head for _, head in top_heads(characters.share(character), layer)]
    most = (f"of layer {layer + 1}'s heads, {' and '.join(f'head {head + 1}' for head in best)} "
            f"put{'s' if len(best) == 1 else ''} the most weight on {where}: {share(best[0])} on average "
            f"(outlined solid{'; ' + titles if titles else ''})")
    if number is None:
        return _capital(most) + "."
    head = answered_head(number, len(values))
    if head is None:
        return f"Your answer, {number:.12g}, is not a head of the layer (1 to {len(values)}); {most}."
    if head in best:
        return f"You answered head {head + 1}, rightly: {most}."
    return (f"You answered head {head + 1}, which puts {share(head)} of its weight on {where} on average "
            f"(outlined dashed); {most}.")


def answered_head(number: float | None, count: int) -> int | None:
    """The 0-based head a numeric answer names, or None for none or a number that is no head of 1 to `count`."""
    return int(number) - 1 if number is not None and number.is_integer() and 1 <= number <= count else None


def token_name(tokens, index: int) -> str:
    """'cat'(2): a token with its position ([CLS] is 0), since a sentence may repeat a word."""
    return f"'{tokens[index]}'({index})"


def character_sentence(characters: HeadCharacters, layer: int, head: int) -> str:
    """'on average 0.99 on the previous token, 0.00 on the next, 0.01 on [CLS], 0.00 on [SEP]; entropy ...'."""
    shares = ", ".join(f"{beside(float(characters.share(c)[layer, head]), SHARE_MARK)} on {CHARACTER_WORDS[c]}"
                       for c in CHARACTERS)
    entropy = beside(float(characters.entropy[layer, head]), FOCUSED_BELOW)
    kind = "focused" if characters.focused(layer, head) else "broad"
    return (f"on average {shares}; row entropy {entropy} nats of at most {characters.uniform_entropy:.2f}, "
            f"so {kind}")


def strongest_keys(tokens, weights: np.ndarray) -> list[str]:
    """Per query: "'cat'(2) → 'the'(1) 0.98", ties named ("→ 'a'(1) or 'b'(3) 0.50")."""
    lines = []
    for query, row in enumerate(weights):
        keys = top_keys(row)
        lines.append(f"{token_name(tokens, query)} → {' or '.join(token_name(tokens, k) for k in keys)} "
                     f"{float(row[keys[0]]):.2f}")
    return lines


CAPTION = (
    "Computed by this site's own NumPy engine running the pretrained {model} (6 layers × 12 heads) on the "
    "sentence after WordPiece: [CLS] is added first and [SEP] last, and each row of weights (a query) sums to 1. "
    "A head's character is the mean over its queries: the weight a token of the sentence puts on the one before it "
    "(queries 2 to N−2) and on the one after it (queries 1 to N−3), the weight on [CLS] and on [SEP] (every query), "
    "and the entropy −Σ a ln a of a row; below {focused:g} nat the head is focused, otherwise broad. The four "
    "weights are means over different queries, so they need not add up to 1."
)


@register
class ModelHeadsKind(VisualKind):
    """One head: links from each query (left) to each key (right). All heads: a grid of 12 heatmaps."""

    name = "model-heads"
    title = "A real model's attention heads"
    Params = ModelHeadsParams
    controls = (
        Control("sentence", f"Sentence (up to {MAX_TOKENS} tokens after WordPiece)", "text",
                max_length=SENTENCE_MAX_LENGTH),
        Control("layer", f"Layer (1 to {NUM_LAYERS})", "int", min=1, max=NUM_LAYERS, step=1),
        Control("head", "Head", "choice", choices=tuple((head, head if head != "all" else "all 12 heads")
                                                        for head in HEADS)),
    )
    learn = "/learn/attention#real-model"
    predictions = {"cells": ("predicted_cells", "answer_cells"), "numeric": ("predicted", None)}
    choice_param = "said"
    prediction_grid = ("sentence", "layer", "head")

    @property
    def prediction_params(self) -> tuple[str, ...]:
        # What the question asks is about its own sentence, layer and head, as its answer is.
        return (*super().prediction_params, "said", "asks", "query")

    def figure_grid(self, params: ModelHeadsParams) -> tuple[list[str], list[str]]:
        tokens = list(run(params.sentence).tokens)  # queries and keys alike, [CLS] at position 0
        return tokens, tokens
    inches = (WIDTH, 4.0)
    narrow_inches = (NARROW_WIDTH, 4.0)  # nominal: figure_inches sizes the figure to the tokens

    def figure_inches(self, params: ModelHeadsParams, layout: str = "wide", result=None) -> tuple[float, float]:
        n = len(result.tokens) if result is not None else len(run(params.sentence).tokens)
        width = NARROW_WIDTH if layout == "narrow" else WIDTH
        legend = legend_height(width) if shows_prediction(params) else 0.0
        if params.head == "all":
            return width, round(grid_height(width, n) + legend, 2)
        said = params.said if params.asks == "focused" else ""
        return width, round(links_height(n, width, shows_bars(params), said) + legend, 2)

    def compute(self, params: ModelHeadsParams) -> ModelHeadsResult:
        model_run = run(params.sentence)
        layer = params.layer - 1
        heads = tuple(range(NUM_HEADS)) if params.head == "all" else (int(params.head) - 1,)
        weights = model_run.attentions[layer, list(heads)]
        predicted = cells_of(params.predicted_cells)
        answer = cells_of(params.answer_cells) if params.answer_cells else None
        number = float(params.predicted) if params.predicted and params.asks else None
        if params.asks == "key":  # the number is a key of the query's row: drawn as links, as a cells prediction is
            query, n = params.query, len(model_run.tokens)
            answer = tuple((query, key) for key in top_keys(weights[0][query]))
            predicted = ((query, int(number)),) if number is not None and number.is_integer() and 0 <= number < n \
                else ()
        return ModelHeadsResult(tuple(model_run.tokens), layer, heads, weights, characters(params.sentence),
                                predicted, answer, params.asks, params.query, number, params.said)

    def alt(self, params: ModelHeadsParams, result: ModelHeadsResult) -> str:
        n, layer = len(result.tokens), result.layer
        sentence = " ".join(result.tokens)
        if len(result.heads) == 1:
            (head,) = result.heads
            text = (f"Attention of {MODEL}, layer {layer + 1}, head {head + 1}, on '{sentence}' ({n} tokens): "
                    "lines from each query token on the left to each key token on the right, darker and wider for "
                    f"more weight. This head puts {character_sentence(result.characters, layer, head)}. "
                    f"Where each token attends most: {'; '.join(strongest_keys(result.tokens, result.weights[0]))}.")
        else:
            summaries = [f"head {head + 1}: {character_sentence(result.characters, layer, head)}"
                         for head in result.heads]
            rows = [f"head {head + 1}: " + "; ".join(strongest_keys(result.tokens, weights))
                    for head, weights in zip(result.heads, result.weights)]
            text = (f"Attention of {MODEL}, layer {layer + 1}, all {NUM_HEADS} heads, on '{sentence}' ({n} tokens): "
                    "one heatmap per head, rows are queries and columns are keys, weights from 0 to 1. "
                    + ". ".join(summaries) + ". Where each token attends most, " + ". ".join(rows) + ".")
        if words := prediction_words(result):  # first: the answer is what the student came to the figure for
            text = f"{words} {text}"
        return text + font_sentence(result.tokens)

    def caption(self, params: ModelHeadsParams, result: ModelHeadsResult) -> str:
        text = CAPTION.format(model=MODEL, focused=FOCUSED_BELOW)
        if words := prediction_words(result):
            text = f"{words} {text}"
        if len(result.heads) > 1:
            if result.asks not in CHARACTERS:  # asked, a title gives the asked place's letter and share instead
                text += " " + letters_sentence("")
            text += (" Choose one head to follow it token by token; the figure's description lists where each "
                     "token attends most in every head.")
        else:  # the one head's numbers, which the phone's figure has no room for
            (head,) = result.heads
            text += (f" Layer {result.layer + 1}, head {head + 1} puts "
                     f"{character_sentence(result.characters, result.layer, head)}.")
        return text + font_sentence(result.tokens)

    def draw(self, params: ModelHeadsParams, result: ModelHeadsResult, inches):
        from app.plots.model_heads import draw_grid, draw_links

        return draw_links(result, inches) if len(result.heads) == 1 else draw_grid(result, inches)
