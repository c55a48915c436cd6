"""The "attention-playground" visual on the /learn page: the multi-head model with every knob exposed.

Sentence, heads, width, temperature and an optional causal mask, drawn one heatmap per head.
"""

from __future__ import annotations

from pydantic import Field, model_validator

from .. import register
from ..base import Control, OnOff, Sentence, VisualParams
from ..toy import MAX_TOKENS
from .multi_head import (
    CAPTION,
    D_MODEL_MAX,
    D_MODEL_MIN,
    NUM_HEADS_MAX,
    NUM_HEADS_MIN,
    TEMPERATURE_MAX,
    TEMPERATURE_MIN,
    TEMPERATURE_STEP,
    HeadGridKind,
    MultiHeadResult,
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
class AttentionPlaygroundKind(HeadGridKind):
    """The multi-head model and its drawing, with a causal mask switch and its own words."""

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

    def compute(self, params: AttentionPlaygroundParams) -> MultiHeadResult:
        causal = params.causal == "on"
        return multi_head_result(params.sentence, params.num_heads, params.d_model, params.temperature, causal)

    def caption(self, params: AttentionPlaygroundParams, result: MultiHeadResult) -> str:
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
