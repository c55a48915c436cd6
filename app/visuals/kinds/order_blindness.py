"""The "order-blindness" visual: self-attention without position information ignores word order.

Permuting the input only permutes the output rows (equivariance); adding positional encodings breaks that.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field

from app.engine import sinusoidal_positional_encoding
from app.engine.toy import MAX_TOKENS, averaging_self_attention, embed, tokenize, unknown_words
from app.plots.results import OrderBlindnessResult
from app.plots.sizes import ORDER_BLINDNESS_INCHES

from .. import register
from ..base import Control, Description, OnOff, Rendered, Sentence, VisualKind, VisualParams

D_MODEL_MIN, D_MODEL_MAX = 2, 64
MODEL_SEED = 0
PERMUTATIONS = {
    "reverse": "reverse the order",
    "rotate": "move the first word to the end",
    "swap-ends": "swap the first and last words",
}


class OrderBlindnessParams(VisualParams):
    sentence: Sentence = "the dog chased the cat"
    permutation: Literal["reverse", "rotate", "swap-ends"] = "reverse"
    positional: OnOff = "off"
    d_model: int = Field(default=8, ge=D_MODEL_MIN, le=D_MODEL_MAX)




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


def order_blindness_result(params: OrderBlindnessParams) -> OrderBlindnessResult:
    tokens = tokenize(params.sentence, MAX_TOKENS)
    n = len(tokens)
    order = permutation_order(params.permutation, n)
    permuted_tokens = [tokens[i] for i in order]
    x = embed(tokens, params.d_model)  # (N, d_model)
    x_permuted = embed(permuted_tokens, params.d_model)  # (N, d_model) == x[order]
    if params.positional == "on":
        # The encoding belongs to the position, not the word: position p gets PE[p] in both sentences.
        encoding = sinusoidal_positional_encoding(n, params.d_model)  # (N, d_model)
        x = x + encoding
        x_permuted = x_permuted + encoding
    model = averaging_self_attention(params.d_model, seed=MODEL_SEED)
    output, _ = model(x)  # (N, d_model)
    permuted_output, _ = model(x_permuted)  # (N, d_model)
    # permuted_output[j] belongs to tokens[order[j]]; put it back in row order[j].
    restored = np.empty_like(permuted_output)
    restored[order] = permuted_output
    difference = restored - output
    return OrderBlindnessResult(
        tokens=tuple(tokens),
        permuted_tokens=tuple(permuted_tokens),
        permutation=params.permutation,
        positional=params.positional == "on",
        d_model=params.d_model,
        output=output,
        permuted_output=permuted_output,
        difference=difference,
        max_abs_difference=float(np.max(np.abs(difference))),
        unknown=tuple(unknown_words(tokens)),
    )


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
        Control("d_model", "Model width d_model", "int", min=D_MODEL_MIN, max=D_MODEL_MAX, step=1),
        Control("sentence", f"Sentence (up to {MAX_TOKENS} words)", "text", max_length=80),
    )
    learn = "/learn/position-encoding#order"
    inches = ORDER_BLINDNESS_INCHES

    def render(self, params: OrderBlindnessParams) -> Rendered:
        # Drawing imports matplotlib (about a second): only when a figure is drawn.
        from app.plots.figure import to_png
        from app.plots.order_blindness import draw_order_blindness

        result = order_blindness_result(params)
        figure, alt = draw_order_blindness(result)
        return Rendered(image=to_png(figure), mimetype="image/png", alt=alt, caption=self.caption(params, result))

    def describe(self, params: OrderBlindnessParams) -> Description:
        # The alt text through the function the drawing uses, without importing matplotlib.
        from app.plots.describe import order_blindness_alt

        result = order_blindness_result(params)
        return Description(alt=order_blindness_alt(result), caption=self.caption(params, result))

    def caption(self, params: OrderBlindnessParams, result) -> str:
        caption = (
            "One self-attention layer (one head with random query and key weights, seed 0, and the "
            "embeddings themselves as values, so each output row is a weighted average of the input rows; "
            "constructed illustration, not a trained model) applied to a sentence and to a shuffled copy. "
            "Each output row depends only on "
            "its own token and the set of tokens around it, so without position information shuffling the "
            "input just shuffles the output rows in the same way (the layer is permutation-equivariant): "
            "it cannot tell 'the dog chased the cat' from 'the cat chased the dog'. Adding a sinusoidal "
            "position encoding to each embedding makes the outputs depend on where each word stands. "
            "All three panels share one diverging colour scale, symmetric about 0."
        )
        if result.unknown:
            caption += " Not in the toy lexicon, so given pseudo-random features: " + ", ".join(result.unknown) + "."
        return caption


__all__ = ["OrderBlindnessKind", "OrderBlindnessParams", "order_blindness_result", "permutation_order"]
