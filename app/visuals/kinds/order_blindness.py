"""The "order-blindness" visual: self-attention without position information ignores word order.

Permuting the input only permutes the output rows (equivariance); adding positional encodings breaks that.
It answers Q6 (why-position-encodings): the student's own sentence and permutation are the example,
words that collapse to one embedding at the chosen width are named, and the distractor (adversarial
robustness) is answered.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from pydantic import Field

from app.engine import sinusoidal_positional_encoding

from .. import register
from ..base import NARROW_WIDTH, WIDTH, Control, OnOff, Sentence, VisualKind, VisualParams
from ..toy import FEATURE_COUNT, FEATURE_NAMES, MAX_TOKENS, averaging_self_attention, embed, tokenize, unknown_words
from ..words import format_difference, quoted_list, unknown_words_sentence

D_MODEL_MIN, D_MODEL_MAX = 2, 64
# 16 = every toy feature: the default sentence's words ('the', 'dog', 'chased', 'cat') all have
# different embeddings. Below 16 'dog' and 'cat' collapse (they differ only in the last feature).
D_MODEL_DEFAULT = FEATURE_COUNT
MODEL_SEED = 0
ROUNDING = 1e-12  # a difference at most this big is floating-point rounding (the values are of order 1)
EXAMPLE_FEATURES = 3  # output features quoted for the example word
PERMUTATIONS = {
    "reverse": "reverse the order",
    "rotate": "move the first word to the end",
    "swap-ends": "swap the first and last words",
}
# Q6's options (quizzes/attention-transformers.yaml), as the question words them.
OPTIONS = {
    "order-agnostic": "Because the dot-product attention operation is agnostic to token ordering",
    "adversarial": "To increase robustness to adversarial attacks in the token embedding space",
}
CORRECT = "order-agnostic"


class OrderBlindnessParams(VisualParams):
    sentence: Sentence = "the dog chased the cat"
    permutation: Literal["reverse", "rotate", "swap-ends"] = "reverse"
    positional: OnOff = "off"
    d_model: int = Field(default=D_MODEL_DEFAULT, ge=D_MODEL_MIN, le=D_MODEL_MAX)
    # The student's answer to Q6 (the answer page passes it), "" when none is known.
    choice: Literal["", "order-agnostic", "adversarial"] = ""


@dataclass(frozen=True)
class CollapsedGroup:
    """Distinct words of the sentence that have one and the same embedding at this d_model."""

    words: tuple[str, ...]  # in order of first appearance
    twins: tuple[tuple[str, ...], ...]  # subsets with the same toy features at every width (2+ words each)
    first_difference: int | None  # 0-based toy feature where any two of them first differ; None: never


@dataclass(frozen=True)
class Run:
    """The comparison with position encodings off or on."""

    output: np.ndarray  # (N, d_model) attention output for the sentence
    permuted_output: np.ndarray  # (N, d_model) output for the permuted sentence, in its own order
    difference: np.ndarray  # (N, d_model) permuted output put back in the original order, minus output
    max_abs_difference: float
    largest: tuple[int, int]  # (row, feature) of the first largest |difference|


@dataclass(frozen=True)
class OrderBlindnessResult:
    tokens: tuple[str, ...]
    permuted_tokens: tuple[str, ...]
    permutation: str  # "reverse", "rotate" or "swap-ends"
    positional: bool  # whether the figure's run adds sinusoidal position encodings to the embeddings
    d_model: int
    order: tuple[int, ...]  # permuted row j is original row order[j] (the identity for an unchanged input)
    same_words: bool  # the permutation leaves the sentence as it was
    same_input: bool  # the permuted sentence's embeddings equal the original's (same words, or collapsed ones)
    without: Run  # no position encodings
    with_encoding: Run  # sinusoidal position encodings added
    collapsed: tuple[CollapsedGroup, ...]  # the sentence's words that share an embedding at this width
    unknown: tuple[str, ...]
    choice: str  # the student's option id, or ""

    @property
    def run(self) -> Run:
        """The run the figure draws."""
        return self.with_encoding if self.positional else self.without

    # The figure's arrays, for the drawing code and the tests.
    @property
    def output(self) -> np.ndarray:
        return self.run.output

    @property
    def permuted_output(self) -> np.ndarray:
        return self.run.permuted_output

    @property
    def difference(self) -> np.ndarray:
        return self.run.difference

    @property
    def max_abs_difference(self) -> float:
        return self.run.max_abs_difference

    @property
    def example(self) -> tuple[int, int] | None:
        """(original row, permuted row) of the first word of the permuted sentence that changed places."""
        if self.same_input:
            return None
        j = next(j for j, (a, b) in enumerate(zip(self.tokens, self.permuted_tokens)) if a != b)
        return self.order[j], j


def permutation_order(name: str, length: int) -> np.ndarray:
    """Indices `order` such that the permuted sentence is tokens[order]."""
    order = np.arange(length)
    if name == "reverse":
        return order[::-1].copy()
    if name == "rotate":
        return np.roll(order, -1)
    if name == "swap-ends":
        order[[0, -1]] = order[[-1, 0]]
        return order
    raise ValueError(f"unknown permutation {name!r}; choose one of {', '.join(PERMUTATIONS)}")


def first_difference(a: np.ndarray, b: np.ndarray) -> int | None:
    """The first index where two feature vectors differ, or None."""
    unequal = np.flatnonzero(a != b)
    return int(unequal[0]) if unequal.size else None


def collapsed_groups(tokens, d_model: int) -> tuple[CollapsedGroup, ...]:
    """The distinct words whose embeddings at d_model coincide, grouped, in order of first appearance."""
    words = list(dict.fromkeys(tokens))
    narrow = embed(words, d_model)  # (W, d_model)
    full = embed(words, FEATURE_COUNT)  # (W, FEATURE_COUNT): everything the toy lexicon gives a word
    groups: dict[bytes, list[int]] = {}
    for index in range(len(words)):
        groups.setdefault(narrow[index].tobytes(), []).append(index)
    result = []
    for members in groups.values():
        if len(members) < 2:
            continue
        twins: dict[bytes, list[str]] = {}
        for index in members:
            twins.setdefault(full[index].tobytes(), []).append(words[index])
        differences = [first_difference(full[a], full[b]) for i, a in enumerate(members) for b in members[i + 1:]]
        differences = [index for index in differences if index is not None]
        result.append(CollapsedGroup(
            words=tuple(words[index] for index in members),
            twins=tuple(tuple(group) for group in twins.values() if len(group) > 1),
            first_difference=min(differences) if differences else None,
        ))
    return tuple(result)


def _run(model, x: np.ndarray, x_permuted: np.ndarray, order: np.ndarray) -> Run:
    output, _ = model(x)  # (N, d_model)
    permuted_output, _ = model(x_permuted)  # (N, d_model)
    # permuted_output[j] belongs to tokens[order[j]]; put it back in row order[j].
    restored = np.empty_like(permuted_output)
    restored[order] = permuted_output
    difference = restored - output
    magnitude = np.abs(difference)
    row, feature = np.unravel_index(int(np.argmax(magnitude)), magnitude.shape)
    return Run(output=output, permuted_output=permuted_output, difference=difference,
               max_abs_difference=float(magnitude.max()), largest=(int(row), int(feature)))


def order_blindness_result(params: OrderBlindnessParams) -> OrderBlindnessResult:
    tokens = tokenize(params.sentence, MAX_TOKENS)
    n = len(tokens)
    order = permutation_order(params.permutation, n)
    permuted_tokens = [tokens[i] for i in order]
    x = embed(tokens, params.d_model)  # (N, d_model)
    x_permuted = embed(permuted_tokens, params.d_model)  # (N, d_model) == x[order]
    same_words = permuted_tokens == tokens
    same_input = bool(np.array_equal(x, x_permuted))
    if same_input:
        # The same input (the same words in the same places, e.g. "a a" reversed, or words that differ only
        # in features this width drops): nothing the layer sees has moved, so nothing is put back.
        # Re-ordering by the permutation would compare different positions, which differ once position
        # encodings are added, though the input is unchanged.
        order = np.arange(n)
    model = averaging_self_attention(params.d_model, seed=MODEL_SEED)
    # The encoding belongs to the position, not the word: position p gets PE[p] in both sentences.
    encoding = sinusoidal_positional_encoding(n, params.d_model)  # (N, d_model)
    return OrderBlindnessResult(
        tokens=tuple(tokens),
        permuted_tokens=tuple(permuted_tokens),
        permutation=params.permutation,
        positional=params.positional == "on",
        d_model=params.d_model,
        order=tuple(int(i) for i in order),
        same_words=same_words,
        same_input=same_input,
        without=_run(model, x, x_permuted, order),
        with_encoding=_run(model, x + encoding, x_permuted + encoding, order),
        collapsed=collapsed_groups(tokens, params.d_model),
        unknown=tuple(unknown_words(tokens)),
        choice=params.choice,
    )


# --- the phone layout's size (no matplotlib here: the page sizes its <img> without drawing) ---------------

NARROW_TEXT = 8  # points: every text of the phone layout
NARROW_ROW = 0.17  # inches per token row of a stacked panel (an 8 pt label is 0.13 in tall)
NARROW_HEADER = 0.5  # inches: two lines of the header at 8 pt, and the pads around them
NARROW_TITLE = 0.36  # two title lines at 8 pt and the title's pad
NARROW_BELOW = 0.42  # tick labels, the axis label and the gap to the next panel's title
NARROW_COLORBAR = 0.62  # the horizontal colour bar, its tick labels and its label, with the edge


def narrow_panel_height(rows: int) -> float:
    return max(rows * NARROW_ROW, 0.5)


def narrow_height(rows: int) -> float:
    """The phone figure's height for a sentence of `rows` words: header, three stacked panels, colour bar."""
    return round(NARROW_HEADER + 3 * (NARROW_TITLE + narrow_panel_height(rows) + NARROW_BELOW) + NARROW_COLORBAR, 2)


# --- words -------------------------------------------------------------------------------------------


def format_value(value: float) -> str:
    """An output value with 2 decimals and a true minus sign; a value that rounds to 0 is "0.00", never "−0.00"."""
    text = f"{value:.2f}"
    if float(text) == 0:
        return "0.00"
    return text.replace("-", "−")


def exact_difference(value: float) -> str:
    """The largest |difference| as computed, and what it is: exactly 0, rounding, or a real difference."""
    if value == 0:
        return "exactly 0"
    if value <= ROUNDING:
        return f"{format_difference(value)}, floating-point rounding (0 in exact arithmetic)"
    return format_difference(value)


def feature_name(index: int) -> str:
    return f"feature {index + 1} ('{FEATURE_NAMES[index]}')"


def unchanged_reason(result: OrderBlindnessResult) -> str:
    """Why the permutation leaves this sentence as it was, and what to type instead."""
    if len(result.tokens) == 1:
        return "a single word has no order to change; type two or more different words"
    if result.permutation == "reverse":
        return "the words read the same backwards; try a sentence that does not"
    if result.permutation == "rotate":
        return "every word is the same; try different words"
    return "the first and last words are the same; try a sentence whose first and last words differ"


def collapsed_sentence(group: CollapsedGroup, d_model: int) -> str:
    """Why these words have one embedding at this width, in the words' own terms."""
    words = quoted_list(group.words)
    if group.first_difference is None:  # every one has the same toy features
        return (f"{words} have the same toy features, so the same embedding at every width, and the layer "
                "cannot tell them apart: putting one in place of another changes nothing, with position "
                "encodings or without.")
    some = "some of them" if group.twins else "them"
    sentence = (f"At d_model {d_model}, {words} have the same embedding: the features that tell {some} apart "
                f"begin at {feature_name(group.first_difference)}, which this width drops (the toy embedding "
                f"keeps only the first {d_model} features). So the layer cannot tell them apart: putting one in "
                "place of another changes nothing, with position encodings or without")
    if group.twins:
        sentence += "; " + "; ".join(f"{quoted_list(twins)} share every toy feature" for twins in group.twins)
    return sentence + "."


def example_values(row: np.ndarray) -> str:
    """'(0.23, −0.37, 0.95, …)': the first EXAMPLE_FEATURES values of an output row."""
    count = min(EXAMPLE_FEATURES, len(row))
    more = ", …" if len(row) > count else ""
    return "(" + ", ".join(format_value(value) for value in row[:count]) + more + ")"


def example_features(d_model: int) -> str:
    count = min(EXAMPLE_FEATURES, d_model)
    return f"features 1–{count}" if count > 1 else "feature 1"


def comparison_sentences(result: OrderBlindnessResult) -> str:
    """The student's own sentence and permutation as the example, with the figure's numbers."""
    sentence, permuted = " ".join(result.tokens), " ".join(result.permuted_tokens)
    if result.same_words:
        return (f"The '{result.permutation}' permutation leaves '{sentence}' as it was ({unchanged_reason(result)}), "
                "so both runs compute the same thing: the difference is exactly 0, with position encodings or "
                "without.")
    if result.same_input:
        pairs = sorted({tuple(sorted((a, b))) for a, b in zip(result.tokens, result.permuted_tokens) if a != b})
        swapped = "; ".join(f"{quoted_list(pair)}" for pair in pairs)
        return (f"At d_model {result.d_model}, '{permuted}' is the same input as '{sentence}': every word that changed "
                f"places has the same embedding as the word now in its place ({swapped}), so both runs compute "
                "the same thing and the difference is exactly 0, with position encodings or without. No layer "
                "could tell these two sentences apart at this width.")
    original_row, permuted_row = result.example
    word = result.tokens[original_row]
    where = f"'{word}' (row {original_row + 1} of the original, row {permuted_row + 1} of the permuted sentence)"
    without, with_encoding = result.without.max_abs_difference, result.with_encoding.max_abs_difference
    text = ""
    if without <= ROUNDING:
        text += (f"Without position encodings the layer cannot tell '{sentence}' from '{permuted}': every word gets "
                 "the same output row in both, only in another place, so the permuted output re-ordered back "
                 f"equals the original; the largest |difference| is {exact_difference(without)}.")
    else:  # not expected: attention without positions is permutation-equivariant
        text += (f"Without position encodings the outputs for '{sentence}' and '{permuted}', re-ordered back, "
                 f"differ by up to {exact_difference(without)}.")
    if with_encoding > ROUNDING:
        row, feature = result.with_encoding.largest
        text += (f" With sinusoidal position encodings added (PE[p] to the word at position p, in both sentences), "
                 f"they differ by up to {exact_difference(with_encoding)} (at '{result.tokens[row]}', row {row + 1}, "
                 f"feature {feature + 1}): the outputs now depend on where each word stands.")
    else:
        text += (" Even with sinusoidal position encodings added, the outputs re-ordered back match here "
                 f"(largest |difference| {exact_difference(with_encoding)}).")
    run = result.run
    if not result.positional and without <= ROUNDING:
        text += (f" In the figure (no position encodings), {where} has the same output row in both, up to "
                 f"rounding: {example_values(run.output[original_row])} in {example_features(result.d_model)}.")
    else:
        setting = "with position encodings" if result.positional else "without position encodings"
        text += (f" In the figure ({setting}), {where} has output {example_values(run.output[original_row])} in "
                 f"the original and {example_values(run.permuted_output[permuted_row])} in the permuted sentence "
                 f"({example_features(result.d_model)}).")
    return text


def choice_sentence(result: OrderBlindnessResult) -> str:
    if not result.choice:
        return ""
    if result.choice == CORRECT:
        return (f"You chose '{OPTIONS[CORRECT]}': correct. Without position encodings, shuffling the words only "
                "shuffles the output rows, so nothing after attention can recover the order; position encodings "
                "give it back.")
    return (f"You chose '{OPTIONS['adversarial']}': that is not what position encodings do. They add where each "
            "word stands to its embedding, because attention on its own is agnostic to token order (the run "
            "without them shows it); they do nothing for robustness to adversarial attacks, since a perturbed "
            "embedding plus its position encoding is still a perturbed input. The correct option is "
            f"'{OPTIONS[CORRECT]}'.")


def header_text(result: OrderBlindnessResult) -> str:
    """The figure's top line: the student's choice marked, or the question's answer."""
    if result.choice == CORRECT:
        return "✓ Your answer, “agnostic to token ordering”, is correct"
    if result.choice:
        return "✗ Your answer, “adversarial robustness”, is wrong: position encodings add word order"
    return "Why position encodings? Attention alone is agnostic to token order"


@register
class OrderBlindnessKind(VisualKind):
    name = "order-blindness"
    title = "Attention is blind to word order without position encodings"
    Params = OrderBlindnessParams
    controls = (
        Control("permutation", "How to shuffle the sentence", "choice",
                choices=tuple((value, label) for value, label in PERMUTATIONS.items())),
        Control("positional", "Add sinusoidal position encodings", "choice",
                choices=(("off", "off"), ("on", "on"))),
        Control("d_model", "Model width d_model", "int", min=D_MODEL_MIN, max=D_MODEL_MAX, step=1,
                help=f"Below {FEATURE_COUNT} the toy embedding drops its last features, so some words collapse."),
        Control("sentence", f"Sentence (up to {MAX_TOKENS} words)", "text", max_length=80),
    )
    choice_param = "choice"
    learn = "/learn/position-encoding#order"
    inches = (WIDTH, 4.1)
    narrow_inches = (NARROW_WIDTH, narrow_height(5))  # the default sentence; figure_inches sizes each sentence

    def figure_inches(self, params: OrderBlindnessParams, layout: str = "wide",
                      result: OrderBlindnessResult | None = None) -> tuple[float, float]:
        if layout != "narrow":
            return self.inches
        rows = len(result.tokens) if result is not None else len(tokenize(params.sentence, MAX_TOKENS))
        return NARROW_WIDTH, narrow_height(rows)

    def compute(self, params: OrderBlindnessParams) -> OrderBlindnessResult:
        return order_blindness_result(params)

    def alt(self, params: OrderBlindnessParams, result: OrderBlindnessResult) -> str:
        sentence, permuted = " ".join(result.tokens), " ".join(result.permuted_tokens)
        setting = "with sinusoidal position encodings added" if result.positional else "without position encodings"
        text = (
            f"Self-attention outputs (one head, random query and key weights, d_model {result.d_model}, {setting}) "
            f"for '{sentence}' and, after the '{result.permutation}' permutation, for '{permuted}', and the permuted "
            "output re-ordered back minus the original; rows are tokens, columns output features, with one "
            "diverging colour scale. "
        )
        text += comparison_sentences(result)
        for group in result.collapsed:
            text += " " + collapsed_sentence(group, result.d_model)
        if result.unknown:
            text += " " + unknown_words_sentence(result.unknown)
        if result.choice:
            text += " " + choice_sentence(result)
        return text

    def draw(self, params: OrderBlindnessParams, result: OrderBlindnessResult, inches):
        from app.plots.order_blindness import draw_order_blindness

        return draw_order_blindness(result, inches)

    def caption(self, params: OrderBlindnessParams, result: OrderBlindnessResult) -> str:
        caption = (
            f"One self-attention layer of width d_model {result.d_model} (one head with random query and key "
            "weights, seed 0, and the embeddings themselves as values, so output row i = Σ_j w_ij x_j with "
            "w_i = softmax((x_i W_Q)(X W_K)ᵀ / √d_model), a weighted average of the input rows; constructed "
            "illustration, not a trained model) applied to the sentence and to its shuffled copy. A row's weights "
            "depend only on its own token and the set of tokens around it, so without position information "
            "shuffling the input just shuffles the output rows in the same way (the layer is permutation-equivariant). "
        )
        caption += comparison_sentences(result)
        for group in result.collapsed:
            caption += " " + collapsed_sentence(group, result.d_model)
        put_back = ("the permuted output minus the original (the input is unchanged, so nothing is put back)"
                    if result.same_input else "the permuted output put back in the original order minus the original")
        caption += (f" The third panel is {put_back}; all three panels share one diverging colour scale, symmetric "
                    "about 0, so 0 is its pale middle colour.")
        if result.unknown:
            caption += " " + unknown_words_sentence(result.unknown)
        if result.choice:
            caption += " " + choice_sentence(result)
        return caption


__all__ = ["CollapsedGroup", "OPTIONS", "OrderBlindnessKind", "OrderBlindnessParams", "OrderBlindnessResult", "Run",
           "collapsed_groups", "order_blindness_result", "permutation_order"]
