"""The "soft-lookup" visual: softmax attention as a soft dictionary lookup, beside the hard (argmax) one.

Queries and keys are toy word features; each key's value is its readable semantic features.
"""

from __future__ import annotations

from pydantic import Field, field_validator

from app.engine import hard_attention, scaled_dot_product_attention
from app.engine.toy import FEATURE_COUNT, FEATURE_INDEX, embed, tokenize, unknown_words
from app.plots.results import SoftLookupResult
from app.plots.sizes import SOFT_LOOKUP_INCHES

from .. import register
from ..base import Control, Description, Rendered, VisualKind, VisualParams

MAX_QUERIES = 6
MIN_KEYS, MAX_KEYS = 2, 10
TEMPERATURE_MIN, TEMPERATURE_MAX, TEMPERATURE_STEP = 0.05, 20.0, 0.05

# What a key "stores": its semantic features, so the looked-up mixture reads as words.
VALUE_FEATURES = ("animal", "person", "vehicle", "place", "nature")

# q·k / sqrt(d) with q = s·x, k = s·y and s = d^(1/4) equals x·y: a score is then simply the
# number of features the query and key words share (minus cat/dog disagreement).
FEATURE_SCALE = FEATURE_COUNT ** 0.25


class SoftLookupParams(VisualParams):
    queries: str = Field(default="kitten truck", min_length=1, max_length=80)
    keys: str = Field(default="cat dog car tree sky", min_length=1, max_length=80)
    temperature: float = Field(default=1.0, ge=TEMPERATURE_MIN, le=TEMPERATURE_MAX, allow_inf_nan=False)

    @field_validator("queries")
    @classmethod
    def _few_queries(cls, text: str) -> str:
        tokenize(text, MAX_QUERIES, name="queries")
        return text

    @field_validator("keys")
    @classmethod
    def _enough_keys(cls, text: str) -> str:
        tokenize(text, MAX_KEYS, min_tokens=MIN_KEYS, name="keys")
        return text


def soft_lookup_result(params: SoftLookupParams) -> SoftLookupResult:
    query_tokens = tokenize(params.queries, MAX_QUERIES, name="queries")
    key_tokens = tokenize(params.keys, MAX_KEYS, min_tokens=MIN_KEYS, name="keys")
    queries = FEATURE_SCALE * embed(query_tokens, FEATURE_COUNT)  # (Nq, d)
    keys = FEATURE_SCALE * embed(key_tokens, FEATURE_COUNT)  # (Nk, d)
    values = embed(key_tokens, FEATURE_COUNT)[:, [FEATURE_INDEX[name] for name in VALUE_FEATURES]]  # (Nk, l)
    soft_output, soft_weights = scaled_dot_product_attention(queries, keys, values, temperature=params.temperature)
    hard_output, hard_weights = hard_attention(queries, keys, values)
    return SoftLookupResult(
        query_tokens=tuple(query_tokens),
        key_tokens=tuple(key_tokens),
        value_features=VALUE_FEATURES,
        temperature=params.temperature,
        values=values,
        soft_weights=soft_weights,
        hard_weights=hard_weights,
        soft_output=soft_output,
        hard_output=hard_output,
        unknown=tuple(unknown_words(query_tokens + key_tokens)),
    )


@register
class SoftLookupKind(VisualKind):
    name = "soft-lookup"
    title = "Attention as a soft dictionary lookup"
    Params = SoftLookupParams
    controls = (
        Control("temperature", "Softmax temperature (lower = closer to hard lookup)", "float",
                min=TEMPERATURE_MIN, max=TEMPERATURE_MAX, step=TEMPERATURE_STEP),
        Control("queries", f"Query words (up to {MAX_QUERIES})", "text", max_length=80,
                help="Words to look up, separated by spaces, e.g. kitten truck."),
        Control("keys", f"Key words in the dictionary ({MIN_KEYS} to {MAX_KEYS})", "text", max_length=80,
                help="The dictionary's keys; each key's value is its animal/person/vehicle/place/nature features."),
    )
    learn = "/learn/attention#soft-lookup"
    inches = SOFT_LOOKUP_INCHES

    def render(self, params: SoftLookupParams) -> Rendered:
        # Drawing imports matplotlib (about a second): only when a figure is drawn.
        from app.plots.figure import to_png
        from app.plots.soft_lookup import draw_soft_lookup

        result = soft_lookup_result(params)
        figure, alt = draw_soft_lookup(result)
        return Rendered(image=to_png(figure), mimetype="image/png", alt=alt, caption=self.caption(params, result))

    def describe(self, params: SoftLookupParams) -> Description:
        # The alt text through the function the drawing uses, without importing matplotlib.
        from app.plots.describe import soft_lookup_alt

        result = soft_lookup_result(params)
        return Description(alt=soft_lookup_alt(result), caption=self.caption(params, result))

    def caption(self, params: SoftLookupParams, result) -> str:
        caption = (
            "Each query scores every key by the dot product of their toy feature vectors (scaled so "
            "that a score is the number of features the two words share), divided by the temperature; "
            "the softmax turns the scores into weights that mix the keys' values (the feature columns "
            "at the bottom). A hard dictionary lookup takes only the best-matching key. Lower the "
            "temperature and the soft weights approach the one-hot hard lookup; raise it and they "
            "flatten towards an even average. Constructed illustration, not a trained model."
        )
        if result.unknown:
            caption += (
                " Not in the toy lexicon, so given pseudo-random features: "
                + ", ".join(result.unknown) + "."
            )
        return caption


__all__ = ["SoftLookupKind", "SoftLookupParams", "soft_lookup_result"]

