"""The "qkv-projections" visual: queries, keys and values are computed from the input embeddings X.

Shows X and, for each of Q, K, V, the learned matrix W and the product X·W, with their shapes.
"""

from __future__ import annotations

from pydantic import Field

from app.engine.toy import MAX_TOKENS, column_names, embed, project_qkv, tokenize, unknown_words
from app.plots.results import QkvResult
from app.plots.sizes import QKV_PROJECTIONS_INCHES

from .. import register
from ..base import Control, Description, Rendered, Sentence, VisualKind, VisualParams

D_MODEL_MIN, D_MODEL_MAX = 2, 16
D_K_MIN, D_K_MAX = 1, 16


class QkvProjectionsParams(VisualParams):
    sentence: Sentence = "the cat sat on the mat"
    d_model: int = Field(default=6, ge=D_MODEL_MIN, le=D_MODEL_MAX)
    d_k: int = Field(default=4, ge=D_K_MIN, le=D_K_MAX)
    seed: int = Field(default=0, ge=0, le=9999)



def qkv_result(params: QkvProjectionsParams) -> QkvResult:
    tokens = tokenize(params.sentence, MAX_TOKENS)
    x = embed(tokens, params.d_model)  # (N, d_model)
    projections = project_qkv(x, params.d_k, seed=params.seed)
    return QkvResult(
        tokens=tuple(tokens),
        feature_names=column_names(params.d_model),
        x=x,
        w_q=projections.w_q,
        w_k=projections.w_k,
        w_v=projections.w_v,
        q=projections.q,
        k=projections.k,
        v=projections.v,
        seed=params.seed,
        unknown=tuple(unknown_words(tokens)),
    )


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
    inches = QKV_PROJECTIONS_INCHES

    def render(self, params: QkvProjectionsParams) -> Rendered:
        # Drawing imports matplotlib (about a second): only when a figure is drawn.
        from app.plots.figure import to_png
        from app.plots.qkv_projections import draw_qkv_projections

        result = qkv_result(params)
        figure, alt = draw_qkv_projections(result)
        return Rendered(image=to_png(figure), mimetype="image/png", alt=alt, caption=self.caption(params, result))

    def describe(self, params: QkvProjectionsParams) -> Description:
        # The alt text through the function the drawing uses, without importing matplotlib.
        from app.plots.describe import qkv_alt

        result = qkv_result(params)
        return Description(alt=qkv_alt(result), caption=self.caption(params, result))

    def caption(self, params: QkvProjectionsParams, result) -> str:
        caption = (
            "The word embeddings X are the layer's input: they are looked up, not computed by the "
            "attention layer. Queries, keys and values are computed from X by learned linear maps "
            "(Q = X·W_Q, K = X·W_K, V = X·W_V, one dense layer each, drawn like a matrix product: "
            "X on the left, W above, the product where their rows and columns meet). Every panel "
            "uses one diverging colour scale, symmetric about 0 and set by the largest |entry| of "
            f"all seven matrices. The weights are random (seed {params.seed}), not trained, and the "
            "embeddings are toy features (constructed illustration, not a trained model)."
        )
        if result.unknown:
            caption += " Not in the toy lexicon, so given pseudo-random features: " + ", ".join(result.unknown) + "."
        return caption


__all__ = ["QkvProjectionsKind", "QkvProjectionsParams", "qkv_result"]
