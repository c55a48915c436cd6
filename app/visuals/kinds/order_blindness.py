"""The "order-blindness" visual (Q6, why position encodings): self-attention without position information
ignores word order. Permuting the input only permutes the output rows; adding position encodings breaks that.
The student's own sentence and permutation are the example; words that collapse at the chosen width are named.
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
from ..words import format_difference, minus, quoted_list, unknown_words_sentence

D_MODEL_MIN, D_MODEL_MAX = 2, 64
MODEL_SEED = 0
ROUNDING = 1e-12  # a difference at most this big is floating-point rounding (the values are of order 1)
EXAMPLE_FEATURES = 3  # output features quoted for the example word (d_model >= 2, so always 2 or 3)
# name -> (control label, why it leaves a sentence of two or more words as it was, and what to type instead)
PERMUTATIONS = {
    "reverse": ("reverse the order", "the words read the same backwards; try a sentence that does not"),
    "rotate": ("move the first word to the end", "every word is the same; try different words"),
    "swap-ends": ("swap the first and last words",
                  "the first and last words are the same; try a sentence whose first and last words differ"),
}
# Q6's options (quizzes/attention-transformers.yaml), as the question words them.
OPTIONS = {
    "order-agnostic": "Because the dot-product attention operation is agnostic to token ordering",
    "adversarial": "To increase robustness to adversarial attacks in the token embedding space",
}
CORRECT = "order-agnostic"
# The student's answer -> the figure's top line (broken where the phone layout breaks it; one line when wide),
# and the sentence that answers it.
HEADERS = {
    "": "Why position encodings?\nAttention alone is agnostic to token order",
    "order-agnostic": "✓ Your answer, “agnostic to token ordering”, is correct",
    "adversarial": "✗ Your answer, “adversarial robustness”, is wrong:\nposition encodings add word order",
}
CHOICE_SENTENCES = {
    "": "",
    "order-agnostic": (f"You chose '{OPTIONS[CORRECT]}': correct. Without position encodings, shuffling the words "
                       "only shuffles the output rows, so nothing after attention can recover the order; position "
                       "encodings give it back."),
    "adversarial": (f"You chose '{OPTIONS['adversarial']}': that is not what position encodings do. They add where "
                    "each word stands to its embedding, because attention on its own is agnostic to token order (the "
                    "run without them shows it); they do nothing for robustness to adversarial attacks, since a "
                    "perturbed embedding plus its position encoding is still a perturbed input. The correct option "
                    f"is '{OPTIONS[CORRECT]}'."),
}


class OrderBlindnessParams(VisualParams):
    sentence: Sentence = "the dog chased the cat"
    permutation: Literal["reverse", "rotate", "swap-ends"] = "reverse"
    positional: OnOff = "off"
    # 16 = every toy feature: the default sentence's 'the', 'dog', 'chased' and 'cat' all differ. Below 16
    # 'dog' and 'cat' collapse (they differ only in the last feature).
    d_model: int = Field(default=FEATURE_COUNT, ge=D_MODEL_MIN, le=D_MODEL_MAX)
    choice: Literal["", "order-agnostic", "adversarial"] = ""  # the student's answer (the answer page passes it)


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
    permutation: str
    positional: bool  # whether the figure's run adds sinusoidal position encodings to the embeddings
    d_model: int
    order: tuple[int, ...]  # permuted row j is original row order[j] (the identity for an unchanged input)
    same_words: bool  # the permutation leaves the sentence as it was
    same_input: bool  # the permuted sentence's embeddings equal the original's (same words, or collapsed ones)
    without: Run  # no position encodings
    with_encoding: Run  # sinusoidal position encodings added
    collapsed: tuple[str, ...]  # a sentence for each group of the sentence's words that share an embedding
    unknown: tuple[str, ...]
    choice: str  # the student's option id, or ""

    @property
    def run(self) -> Run:
        """The run the figure draws."""
        return self.with_encoding if self.positional else self.without


def permutation_order(name: str, length: int) -> np.ndarray:
    """Indices `order` such that the permuted sentence is tokens[order]."""
    order = np.arange(length)
    if name == "reverse":
        return order[::-1]
    if name == "rotate":
        return np.roll(order, -1)
    order[[0, -1]] = order[[-1, 0]]  # swap-ends
    return order


def collapsed_sentences(tokens, d_model: int) -> tuple[str, ...]:
    """For each group of distinct words that have one embedding at d_model, why, in the words' own terms."""
    words = list(dict.fromkeys(tokens))
    full = embed(words, FEATURE_COUNT)  # (W, FEATURE_COUNT): everything the toy lexicon gives a word
    groups: dict[bytes, list[int]] = {}
    for index, row in enumerate(embed(words, d_model)):  # (W, d_model)
        groups.setdefault(row.tobytes(), []).append(index)
    consequence = ("the layer cannot tell them apart: putting one in place of another changes nothing, with "
                   "position encodings or without")
    sentences = []
    for members in (members for members in groups.values() if len(members) > 1):
        names = quoted_list([words[index] for index in members])
        same_features: dict[bytes, list[str]] = {}  # words alike at every width
        for index in members:
            same_features.setdefault(full[index].tobytes(), []).append(words[index])
        twins = [quoted_list(twin) for twin in same_features.values() if len(twin) > 1]
        differing = np.flatnonzero((full[members] != full[members[0]]).any(axis=0))  # features telling some apart
        if not differing.size:
            sentences.append(f"{names} have the same toy features, so the same embedding at every width, and "
                             f"{consequence}.")
            continue
        first = int(differing[0])  # >= d_model: the embedding keeps the first d_model features
        sentences.append(
            f"At d_model {d_model}, {names} have the same embedding: the features that tell "
            f"{'some of them' if twins else 'them'} apart begin at feature {first + 1} ('{FEATURE_NAMES[first]}'), "
            f"which this width drops (the toy embedding keeps only the first {d_model} features). So {consequence}"
            + "".join(f"; {twin} share every toy feature" for twin in twins) + ".")
    return tuple(sentences)


def _run(model, x: np.ndarray, x_permuted: np.ndarray, order: np.ndarray) -> Run:
    output, _ = model(x)  # (N, d_model)
    permuted_output, _ = model(x_permuted)  # (N, d_model)
    restored = np.empty_like(permuted_output)
    restored[order] = permuted_output  # permuted_output[j] belongs to tokens[order[j]]: put it back there
    magnitude = np.abs(restored - output)
    row, feature = np.unravel_index(int(np.argmax(magnitude)), magnitude.shape)
    return Run(output, permuted_output, restored - output, float(magnitude.max()), (int(row), int(feature)))


# --- the phone layout's size (no matplotlib here: the page sizes its <img> without drawing) --------------

NARROW_TEXT = 8  # points: every text of the phone layout
# Inches: the header (two 8 pt lines and pads), each panel's title (two lines and pad), a token row of a
# panel (an 8 pt label is 0.13 in tall), below a panel (tick labels, axis label, the gap to the next title),
# and the colour bar across the bottom with its tick labels, its label and the edge.
NARROW_HEADER, NARROW_TITLE, NARROW_ROW, NARROW_BELOW, NARROW_COLORBAR = 0.5, 0.36, 0.17, 0.42, 0.62


def narrow_panel_height(rows: int) -> float:
    return max(rows * NARROW_ROW, 0.5)


def narrow_height(rows: int) -> float:
    """The phone figure's height for a sentence of `rows` words: header, three stacked panels, colour bar."""
    return round(NARROW_HEADER + 3 * (NARROW_TITLE + narrow_panel_height(rows) + NARROW_BELOW) + NARROW_COLORBAR, 2)


# --- words -------------------------------------------------------------------------------------------


def exact_difference(value: float) -> str:
    """The largest |difference| as computed, and what it is: exactly 0, rounding, or a real difference."""
    if value == 0:
        return "exactly 0"
    if value <= ROUNDING:
        return f"{format_difference(value)}, floating-point rounding (0 in exact arithmetic)"
    return format_difference(value)


def example_values(row: np.ndarray) -> str:
    """'(0.23, −0.37, 0.95, …)': the first EXAMPLE_FEATURES values of an output row, with a true minus sign;
    a value that rounds to 0 is "0.00", never "−0.00"."""
    shown = [minus(f"{value:.2f}") for value in row[:EXAMPLE_FEATURES]]
    return "(" + ", ".join(shown) + (", …" if len(row) > EXAMPLE_FEATURES else "") + ")"


def comparison_sentences(result: OrderBlindnessResult) -> str:
    """The student's own sentence and permutation as the example, with the figure's numbers."""
    sentence, permuted = " ".join(result.tokens), " ".join(result.permuted_tokens)
    if result.same_words:
        reason = ("a single word has no order to change; type two or more different words" if len(result.tokens) == 1
                  else PERMUTATIONS[result.permutation][1])
        return (f"The '{result.permutation}' permutation leaves '{sentence}' as it was ({reason}), so both runs "
                "compute the same thing: the difference is exactly 0, with position encodings or without.")
    if result.same_input:
        moved = zip(result.tokens, result.permuted_tokens)
        pairs = sorted({tuple(sorted(pair)) for pair in moved if pair[0] != pair[1]})
        return (f"At d_model {result.d_model}, '{permuted}' is the same input as '{sentence}': every word that changed "
                f"places has the same embedding as the word now in its place ({'; '.join(map(quoted_list, pairs))}), "
                "so both runs compute the same thing and the difference is exactly 0, with position encodings or "
                "without. No layer could tell these two sentences apart at this width.")
    without, with_encoding = result.without.max_abs_difference, result.with_encoding.max_abs_difference
    # Attention without positions is permutation-equivariant: `without` is 0 up to rounding (<= ROUNDING).
    text = (f"Without position encodings the layer cannot tell '{sentence}' from '{permuted}': every word gets "
            "the same output row in both, only in another place, so the permuted output re-ordered back "
            f"equals the original; the largest |difference| is {exact_difference(without)}.")
    if with_encoding > ROUNDING:
        row, feature = result.with_encoding.largest
        text += (" With sinusoidal position encodings added (PE[p] to the word at position p, in both sentences), "
                 f"they differ by up to {exact_difference(with_encoding)} (at '{result.tokens[row]}', row {row + 1}, "
                 f"feature {feature + 1}): the outputs now depend on where each word stands.")
    else:
        text += (" Even with sinusoidal position encodings added, the outputs re-ordered back match here "
                 f"(largest |difference| {exact_difference(with_encoding)}).")
    # The example: the first word of the permuted sentence that changed places.
    j = next(j for j, (a, b) in enumerate(zip(result.tokens, result.permuted_tokens)) if a != b)
    i, run = result.order[j], result.run
    where = f"'{result.tokens[i]}' (row {i + 1} of the original, row {j + 1} of the permuted sentence)"
    features = f"features 1–{min(EXAMPLE_FEATURES, result.d_model)}"
    if not result.positional:
        return text + (f" In the figure (no position encodings), {where} has the same output row in both, up to "
                       f"rounding: {example_values(run.output[i])} in {features}.")
    return text + (f" In the figure (with position encodings), {where} has output {example_values(run.output[i])} in "
                   f"the original and {example_values(run.permuted_output[j])} in the permuted sentence ({features}).")


def explanation(result: OrderBlindnessResult) -> str:
    """What the alt text and the caption both say: the example, collapsed and unknown words, the answer."""
    return " ".join(filter(None, [
        comparison_sentences(result),
        *result.collapsed,
        unknown_words_sentence(result.unknown) if result.unknown else "",
        CHOICE_SENTENCES[result.choice],
    ]))


@register
class OrderBlindnessKind(VisualKind):
    name = "order-blindness"
    title = "Attention is blind to word order without position encodings"
    Params = OrderBlindnessParams
    controls = (
        Control("permutation", "How to shuffle the sentence", "choice",
                choices=tuple((name, label) for name, (label, _) in PERMUTATIONS.items())),
        Control("positional", "Add sinusoidal position encodings", "choice", choices=(("off", "off"), ("on", "on"))),
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
        return NARROW_WIDTH, narrow_height(len(tokenize(params.sentence, MAX_TOKENS)))

    def compute(self, params: OrderBlindnessParams) -> OrderBlindnessResult:
        tokens = tokenize(params.sentence, MAX_TOKENS)
        n = len(tokens)
        order = permutation_order(params.permutation, n)
        permuted_tokens = [tokens[i] for i in order]
        x = embed(tokens, params.d_model)  # (N, d_model)
        x_permuted = embed(permuted_tokens, params.d_model)  # (N, d_model) == x[order]
        same_input = bool(np.array_equal(x, x_permuted))
        if same_input:
            # Nothing the layer sees has moved (e.g. "a a" reversed, or words that differ only in features this
            # width drops), so nothing is put back: re-ordering by the permutation would compare different
            # positions, which differ once position encodings are added, though the input is unchanged.
            order = np.arange(n)
        model = averaging_self_attention(params.d_model, seed=MODEL_SEED)
        # The encoding belongs to the position, not the word: position p gets PE[p] in both sentences.
        encoding = sinusoidal_positional_encoding(n, params.d_model)  # (N, d_model)
        return OrderBlindnessResult(
            tokens=tuple(tokens), permuted_tokens=tuple(permuted_tokens), permutation=params.permutation,
            positional=params.positional == "on", d_model=params.d_model, order=tuple(int(i) for i in order),
            same_words=permuted_tokens == tokens, same_input=same_input,
            without=_run(model, x, x_permuted, order),
            with_encoding=_run(model, x + encoding, x_permuted + encoding, order),
            collapsed=collapsed_sentences(tokens, params.d_model), unknown=tuple(unknown_words(tokens)),
            choice=params.choice,
        )

    def alt(self, params: OrderBlindnessParams, result: OrderBlindnessResult) -> str:
        setting = "with sinusoidal position encodings added" if result.positional else "without position encodings"
        return (f"Self-attention outputs (one head, random query and key weights, d_model {result.d_model}, "
                f"{setting}) for '{' '.join(result.tokens)}' and, after the '{result.permutation}' permutation, for "
                f"'{' '.join(result.permuted_tokens)}', and the permuted output re-ordered back minus the original; "
                "rows are tokens, columns output features, with one diverging colour scale. " + explanation(result))

    def draw(self, params: OrderBlindnessParams, result: OrderBlindnessResult, inches):
        from app.plots.order_blindness import draw_order_blindness

        return draw_order_blindness(result, inches)

    def caption(self, params: OrderBlindnessParams, result: OrderBlindnessResult) -> str:
        put_back = ("the permuted output minus the original (the input is unchanged, so nothing is put back)"
                    if result.same_input else "the permuted output put back in the original order minus the original")
        # With encodings on, the layer's input row j is x_j + PE[j]: the encoding enters the weights and the values.
        inputs, x_j, x_i, x_all = (("the embeddings plus their position encodings", "(x_j + PE[j])", "(x_i + PE[i])",
                                    "(X + PE)") if result.positional else ("the embeddings", "x_j", "x_i", "X"))
        return (
            f"One self-attention layer of width d_model {result.d_model} (one head with random query and key "
            f"weights, seed 0, and {inputs} themselves as values, so output row i = Σ_j w_ij {x_j} with "
            f"w_i = softmax(({x_i} W_Q)({x_all} W_K)ᵀ / √d_model), a weighted average of the input rows; constructed "
            "illustration, not a trained model) applied to the sentence and to its shuffled copy. A row's weights "
            "depend only on its own token and the set of tokens around it, so without position information "
            "shuffling the input just shuffles the output rows in the same way (the layer is "
            f"permutation-equivariant). The third panel is {put_back}; all three panels share one diverging colour "
            "scale, symmetric about 0, so 0 is its pale middle colour. " + explanation(result)
        )
