"""The "attention-playground" visual on the /learn page: the multi-head model with every knob exposed.

Sentence, heads, width, temperature and an optional causal mask, drawn one heatmap per head.
"""

from __future__ import annotations

from pydantic import Field, model_validator

from app.engine.toy import MAX_TOKENS
from app.plots.sizes import multi_head_inches

from .. import register
from ..base import Control, Description, OnOff, Rendered, Sentence, VisualKind, VisualParams
from .multi_head import (
    CAPTION,
    D_MODEL_MAX,
    D_MODEL_MIN,
    NUM_HEADS_MAX,
    NUM_HEADS_MIN,
    TEMPERATURE_MAX,
    TEMPERATURE_MIN,
    TEMPERATURE_STEP,
    check_heads_divide,
    multi_head_result,
)


class AttentionPlaygroundParams(VisualParams):
    sentence: Sentence = "the cat sat on the mat"
    num_heads: int = Field(default=2, ge=NUM_HEADS_MIN, le=NUM_HEADS_MAX)
    d_model: int = Field(default=16, ge=D_MODEL_MIN, le=D_MODEL_MAX)
    temperature: float = Field(default=1.0, ge=TEMPERATURE_MIN, le=TEMPERATURE_MAX, allow_inf_nan=False)
    causal: OnOff = "off"



    @model_validator(mode="after")
    def _heads_divide_width(self):
        check_heads_divide(self.num_heads, self.d_model)
        return self


@register
class AttentionPlaygroundKind(VisualKind):
    name = "attention-playground"
    title = "Attention playground"
    Params = AttentionPlaygroundParams
    controls = (
        Control("sentence", f"Sentence (up to {MAX_TOKENS} words)", "text", max_length=80),
        Control("num_heads", "Number of heads (must divide d_model)", "int",
                min=NUM_HEADS_MIN, max=NUM_HEADS_MAX, step=1),
        Control("d_model", "Model width d_model", "int", min=D_MODEL_MIN, max=D_MODEL_MAX, step=1),
        Control("temperature", "Softmax temperature (lower = sharper)", "float",
                min=TEMPERATURE_MIN, max=TEMPERATURE_MAX, step=TEMPERATURE_STEP),
        Control("causal", "Causal mask (a query sees only itself and earlier tokens)", "choice",
                choices=(("off", "off"), ("on", "on"))),
    )
    learn = "/learn/attention#playground"

    def figure_inches(self, params: AttentionPlaygroundParams) -> tuple[float, float]:
        return multi_head_inches(params.num_heads)  # drawn by draw_multi_head, sized by the heads

    def render(self, params: AttentionPlaygroundParams) -> Rendered:
        # Drawing imports matplotlib (about a second): only when a figure is drawn.
        from app.plots.attention_playground import draw_attention_playground
        from app.plots.figure import to_png

        causal = params.causal == "on"
        result = multi_head_result(params.sentence, params.num_heads, params.d_model, params.temperature, causal)
        figure, alt = draw_attention_playground(result)
        return Rendered(image=to_png(figure), mimetype="image/png", alt=alt, caption=self.caption(params, result))

    def describe(self, params: AttentionPlaygroundParams) -> Description:
        # The alt text through the function the drawing uses, without importing matplotlib.
        from app.plots.describe import multi_head_alt

        causal = params.causal == "on"
        result = multi_head_result(params.sentence, params.num_heads, params.d_model, params.temperature, causal)
        return Description(alt=multi_head_alt(result), caption=self.caption(params, result))

    def caption(self, params: AttentionPlaygroundParams, result) -> str:
        causal = params.causal == "on"
        caption = CAPTION
        if causal:
            caption += (
                " With the causal mask on, as in a decoder that generates text left to right, query i may "
                "attend only keys 1..i: the hatched cells are masked and get weight exactly 0, and each "
                "row's remaining weights still sum to 1."
            )
        if result.unknown:
            caption += " Not in the toy lexicon, so given pseudo-random features: " + ", ".join(result.unknown) + "."
        return caption


__all__ = ["AttentionPlaygroundKind", "AttentionPlaygroundParams"]
