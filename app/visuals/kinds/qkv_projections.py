"""The "qkv-projections" visual: queries, keys and values are computed from the input embeddings X.

Shows X and, for each of Q, K, V, the learned matrix W and the product X·W, with their shapes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from pydantic import Field

from .. import register
from ..base import WIDTH, Control, Sentence, VisualKind, VisualParams, chosen, option_choice
from ..toy import MAX_TOKENS, column_names, embed, project_qkv, tokenize, unknown_words
from ..words import symmetric_limit, unknown_words_sentence

D_MODEL_MIN, D_MODEL_MAX = 2, 16
D_K_MIN, D_K_MAX = 1, 16


OPTIONS = ("values", "keys", "queries", "embeddings")  # the question's option ids; all but embeddings are right


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
        limit=symmetric_limit(x, projections.w_q, projections.w_k, projections.w_v,
                              projections.q, projections.k, projections.v),
        unknown=tuple(unknown_words(tokens)),
    )


def _largest_entry(result: QkvResult, name: str, matrix: np.ndarray) -> str:
    row, column = np.unravel_index(int(np.argmax(np.abs(matrix))), matrix.shape)
    return f"{name} {matrix[row, column]:+.2f} (token '{result.tokens[row]}', column {column + 1})"


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

    def compute(self, params: QkvProjectionsParams) -> QkvResult:
        return qkv_result(params)

    def alt(self, params: QkvProjectionsParams, result: QkvResult) -> str:
        n, d_model = result.x.shape
        d_k = result.q.shape[1]
        largest = "; ".join(
            _largest_entry(result, name, matrix) for name, matrix in (("Q", result.q), ("K", result.k), ("V", result.v))
        )
        text = (
            f"Input embeddings X ({n}×{d_model}: {n} token{'s' if n != 1 else ''} '{' '.join(result.tokens)}' × "
            f"{d_model} features) are the "
            f"layer's input. Queries, keys and values are computed from X by the learned matrices W_Q, W_K and W_V "
            f"(each {d_model}×{d_k}): Q = X·W_Q, K = X·W_K and V = X·W_V, each {n}×{d_k}, one row per token. "
            f"Largest |entry|: {largest}. Colours: one diverging scale from {-result.limit:.2f} to "
            f"{result.limit:.2f} shared by all panels; random weights, seed {result.seed}."
        )
        if result.unknown:
            text += " " + unknown_words_sentence(result.unknown)
        return text

    def draw(self, params: QkvProjectionsParams, result: QkvResult, inches):
        from app.plots.qkv_projections import draw_qkv_projections

        return draw_qkv_projections(result, inches)

    def caption(self, params: QkvProjectionsParams, result: QkvResult) -> str:
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
        return caption + choice_sentence(chosen(params.choice))


def choice_sentence(ticked: tuple[str, ...]) -> str:
    """What the figure says about the student's ticks ("" when none are known)."""
    if not ticked:
        return ""
    text = ""
    missed = [name for name in ("queries", "keys", "values") if name not in ticked]
    if missed:
        text += (f" You left {' and '.join(missed)} unticked, but the figure computes "
                 f"{'them' if len(missed) > 1 else 'it'} from X with a learned matrix.")
    if "embeddings" in ticked:
        text += (" You ticked word embeddings, but X is the layer's input, looked up, not computed from another "
                 "embedding space by a learned map here: the learned maps start from X.")
    if not missed and "embeddings" not in ticked:
        text += " You ticked queries, keys and values, each a learned map of X, and left X itself out: right."
    return text


__all__ = ["QkvProjectionsKind", "QkvProjectionsParams", "QkvResult", "qkv_result"]
