"""The "head-split" visual: how multi-head attention divides d_model features among h heads.

The shapes come from running the engine's split_heads and merge_heads on a dummy row of features.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from pydantic import Field, model_validator

from app.engine import merge_heads, split_heads
from app.plots.sizes import HEAD_SPLIT_INCHES

from .. import register
from ..base import Control, Description, Rendered, VisualKind, VisualParams


class HeadSplitParams(VisualParams):
    d_model: int = Field(default=128, ge=1, le=4096)
    num_heads: int = Field(default=4, ge=1, le=64)

    @model_validator(mode="after")
    def _heads_divide_d_model(self) -> HeadSplitParams:
        # The engine's own check, so the sentence a student sees is the one the engine raises.
        split_heads(np.zeros((1, self.d_model), dtype=np.int8), self.num_heads)
        return self


@dataclass(frozen=True)
class HeadSplitResult:
    d_model: int
    num_heads: int
    head_dim: int  # d_k = d_model / h, read off the shape split_heads returned
    split_shape: tuple[int, ...]  # split_heads on a (1, d_model) row: (h, 1, d_k)
    merged_shape: tuple[int, ...]  # merge_heads of that: (1, d_model) again
    head_columns: tuple[tuple[int, int], ...]  # (first, last) feature column each head receives
    output_projection_shape: tuple[int, int]  # W_O: (h·d_k, d_model)


def head_split_result(params: HeadSplitParams) -> HeadSplitResult:
    feature_index = np.arange(params.d_model).reshape(1, params.d_model)  # (1, d_model) column numbers
    heads = split_heads(feature_index, params.num_heads)  # (h, 1, d_k)
    merged = merge_heads(heads)  # (1, h·d_k)
    if not np.array_equal(merged, feature_index):
        raise AssertionError("merge_heads(split_heads(x)) did not restore x")
    num_heads, _, head_dim = heads.shape
    concatenated_width = merged.shape[-1]
    return HeadSplitResult(
        d_model=params.d_model,
        num_heads=num_heads,
        head_dim=head_dim,
        split_shape=tuple(heads.shape),
        merged_shape=tuple(merged.shape),
        head_columns=tuple((int(head[0, 0]), int(head[0, -1])) for head in heads),
        # W_O maps the concatenated heads back to d_model features (Vaswani et al. 2017, §3.2.2).
        output_projection_shape=(concatenated_width, params.d_model),
    )


@register
class HeadSplitKind(VisualKind):
    name = "head-split"
    title = "Splitting d_model features into attention heads"
    Params = HeadSplitParams
    controls = (
        Control("d_model", "Model width d_model (features per token)", "int", min=1, max=4096, step=1),
        Control("num_heads", "Number of heads h (must divide d_model)", "int", min=1, max=64, step=1),
    )
    learn = "/learn/attention#head-split"
    format = "svg"
    inches = HEAD_SPLIT_INCHES

    def render(self, params: HeadSplitParams) -> Rendered:
        # Drawing imports matplotlib (about a second): only when a figure is drawn.
        from app.plots.figure import to_svg
        from app.plots.head_split import draw_head_split

        result = head_split_result(params)
        figure, alt = draw_head_split(result)
        return Rendered(image=to_svg(figure), mimetype="image/svg+xml", alt=alt, caption=self.caption(params, result))

    def describe(self, params: HeadSplitParams) -> Description:
        # The alt text through the function the drawing uses, without importing matplotlib.
        from app.plots.describe import head_split_alt

        result = head_split_result(params)
        return Description(alt=head_split_alt(result), caption=self.caption(params, result))

    def caption(self, params: HeadSplitParams, result) -> str:
        caption = (
            f"Each of the {result.num_heads} heads gets its own slice of {result.head_dim} feature columns "
            f"(d_k = d_model / h = {result.d_model} / {result.num_heads}), computes attention on that "
            "slice, and the head outputs are concatenated in head order. W_O then mixes the heads' "
            "features. N is the number of tokens; splitting never changes it. The shapes were checked "
            "by running the engine's split_heads and merge_heads."
        )
        return caption
