"""The "multi-head" visual: heads of one attention layer attend in different, simpler subspaces.

A constructed model: head 1 relates nouns to nouns, head 2 verbs to verbs, further heads are random.
"""

from __future__ import annotations

import numpy as np
from pydantic import Field, model_validator

from app.engine import causal_mask
from app.engine.toy import (
    HEAD_ROLES,
    MAX_TOKENS,
    constructed_multi_head,
    embed,
    head_attention,
    lookup,
    tokenize,
    unknown_words,
)
from app.plots.results import MultiHeadResult
from app.plots.sizes import multi_head_inches

from .. import register
from ..base import Control, Description, Rendered, Sentence, VisualKind, VisualParams

NUM_HEADS_MIN, NUM_HEADS_MAX = 1, 8
D_MODEL_MIN, D_MODEL_MAX = 2, 64
TEMPERATURE_MIN, TEMPERATURE_MAX, TEMPERATURE_STEP = 0.05, 20.0, 0.05
MODEL_SEED = 0  # the random heads' weights; fixed so every page shows the same model


def check_heads_divide(num_heads: int, d_model: int) -> None:
    if d_model % num_heads:
        divisors = [h for h in range(NUM_HEADS_MIN, NUM_HEADS_MAX + 1) if d_model % h == 0]
        raise ValueError(
            f"num_heads={num_heads} does not divide d_model={d_model}: each head gets d_model / num_heads "
            f"features, so choose num_heads from {', '.join(map(str, divisors))} or change d_model"
        )


class MultiHeadParams(VisualParams):
    sentence: Sentence = "the cat sat on the mat while the dog ran"
    num_heads: int = Field(default=2, ge=NUM_HEADS_MIN, le=NUM_HEADS_MAX)
    d_model: int = Field(default=16, ge=D_MODEL_MIN, le=D_MODEL_MAX)
    temperature: float = Field(default=1.0, ge=TEMPERATURE_MIN, le=TEMPERATURE_MAX, allow_inf_nan=False)


    @model_validator(mode="after")
    def _heads_divide_width(self):
        check_heads_divide(self.num_heads, self.d_model)
        return self


def head_title(head: int) -> str:
    role = HEAD_ROLES.get(head)
    return f"head {head + 1}: {role}s↔{role}s" if role else f"head {head + 1} (random)"


def multi_head_result(
    sentence: str, num_heads: int, d_model: int, temperature: float, causal: bool = False
) -> MultiHeadResult:
    tokens = tokenize(sentence, MAX_TOKENS)
    x = embed(tokens, d_model)  # (N, d_model)
    model = constructed_multi_head(d_model, num_heads, seed=MODEL_SEED)
    mask = causal_mask(len(tokens)) if causal else None  # (N, N)
    _, weights = head_attention(model, x, mask=mask, temperature=temperature)  # (h, N, N)
    categories = np.array([lookup(token).category for token in tokens])
    roles, shares, members = [], [], []
    for head in range(num_heads):
        role = HEAD_ROLES.get(head)
        in_role = categories == role  # (N,) the tokens this head relates
        roles.append(role)
        members.append(tuple(token for token, chosen in zip(tokens, in_role) if chosen))
        if role is None or not in_role.any():
            shares.append(None)
        else:
            # Each role query's total weight on role keys, averaged over the role queries.
            shares.append(float(weights[head][np.ix_(in_role, in_role)].sum(axis=1).mean()))
    return MultiHeadResult(
        tokens=tuple(tokens),
        weights=weights,
        head_titles=tuple(head_title(head) for head in range(num_heads)),
        head_roles=tuple(roles),
        role_shares=tuple(shares),
        role_tokens=tuple(members),
        temperature=temperature,
        d_model=d_model,
        mask=mask,
        unknown=tuple(unknown_words(tokens)),
    )


CAPTION = (
    "Each head has its own query and key projections, so it compares the tokens in its own small "
    "subspace of the features. Here the heads are set by hand: head 1 reads only the 'noun' feature, "
    "so nouns attend to nouns; head 2 reads only the 'verb' feature, so verbs attend to verbs, however "
    "far apart they are. Any further heads have random weights. Constructed illustration, not a "
    "trained model: a trained model learns its heads' subspaces from data."
)


@register
class MultiHeadKind(VisualKind):
    name = "multi-head"
    title = "Multi-head attention: several simpler subspaces"
    Params = MultiHeadParams
    controls = (
        Control("num_heads", "Number of heads (must divide d_model)", "int",
                min=NUM_HEADS_MIN, max=NUM_HEADS_MAX, step=1),
        Control("d_model", "Model width d_model", "int", min=D_MODEL_MIN, max=D_MODEL_MAX, step=1),
        Control("temperature", "Softmax temperature (lower = sharper)", "float",
                min=TEMPERATURE_MIN, max=TEMPERATURE_MAX, step=TEMPERATURE_STEP),
        Control("sentence", f"Sentence (up to {MAX_TOKENS} words)", "text", max_length=80),
    )
    learn = "/learn/attention#multi-head"

    def figure_inches(self, params: MultiHeadParams) -> tuple[float, float]:
        return multi_head_inches(params.num_heads)  # draw_multi_head sizes its figure by the heads

    def render(self, params: MultiHeadParams) -> Rendered:
        # Drawing imports matplotlib (about a second): only when a figure is drawn.
        from app.plots.figure import to_png
        from app.plots.multi_head import draw_multi_head

        result = multi_head_result(params.sentence, params.num_heads, params.d_model, params.temperature)
        figure, alt = draw_multi_head(result)
        return Rendered(image=to_png(figure), mimetype="image/png", alt=alt, caption=self.caption(params, result))

    def describe(self, params: MultiHeadParams) -> Description:
        # The alt text through the function the drawing uses, without importing matplotlib.
        from app.plots.describe import multi_head_alt

        result = multi_head_result(params.sentence, params.num_heads, params.d_model, params.temperature)
        return Description(alt=multi_head_alt(result), caption=self.caption(params, result))

    def caption(self, params: MultiHeadParams, result) -> str:
        caption = CAPTION
        if result.unknown:
            caption += " Not in the toy lexicon, so given pseudo-random features: " + ", ".join(result.unknown) + "."
        return caption


__all__ = ["MultiHeadKind", "MultiHeadParams", "check_heads_divide", "head_title", "multi_head_result"]
