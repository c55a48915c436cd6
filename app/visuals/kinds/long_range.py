"""The "long-range" visual: Q2's three options, one panel each. Path length between tokens k apart
(LSTM k, self-attention 1); the matrix products a layer must run in order (LSTM n, Transformer block 6);
and the parameters at equal d_model (LSTM layer 4(2d² + d) against a Transformer block's 12d² + 13d).

Counts from the layers' shapes (the attention weights' from the engine's MultiHeadAttention), not timings.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from math import prod
from typing import Annotated, Literal

import numpy as np
from pydantic import BeforeValidator, Field, model_validator

from app.engine import MultiHeadAttention

from .. import register
from ..base import NARROW_WIDTH, WIDTH, Control, VisualKind, VisualParams
from ..words import plural

# Q2 (transformer-advantages): its option ids in the bank's order, and whether each is an advantage.
OPTIONS = ("long-range", "hardware", "fewer-parameters")
CORRECT = {"long-range": True, "hardware": True, "fewer-parameters": False}
OPTION_TEXT = {
    "long-range": "Better at learning long-range dependencies",
    "hardware": "Faster to train and run on modern hardware",
    "fewer-parameters": "Require many fewer parameters to achieve similar results",
}
FFN_FACTOR = 4  # d_ff = 4 · d_model (Vaswani et al. 2017: 2048 = 4 · 512)
BLOCK_PRODUCTS = 6  # matrix products in order in one Transformer block, whatever n (see block_products)


def _canonical_choice(value):
    """A student's ticked option ids, comma-separated in any order, as one string in the bank's order;
    a value with an unknown id is left as it is, for the Literal to refuse by name."""
    if not isinstance(value, str):
        return value
    ids = {part.strip() for part in value.split(",")} - {""}
    if not ids <= set(OPTIONS):
        return value
    return ",".join(option for option in OPTIONS if option in ids)


# Every subset of the options in the bank's order, "" (no answer known) first, all three last.
CHOICES = tuple(",".join(option for bit, option in enumerate(OPTIONS) if mask >> bit & 1)
                for mask in sorted(range(2 ** len(OPTIONS)), key=lambda mask: (bin(mask).count("1"), mask)))
Choice = Annotated[Literal[CHOICES], BeforeValidator(_canonical_choice)]


class LongRangeParams(VisualParams):
    max_distance: int = Field(default=32, ge=2, le=512)
    distance: int = Field(default=16, ge=1, le=512)
    d_model: int = Field(default=512, ge=1, le=1024)
    choice: Choice = ""  # the options the student ticked (the answer page passes them), "" for none known

    @model_validator(mode="after")
    def _distance_fits(self) -> LongRangeParams:
        if self.distance > self.max_distance:
            raise ValueError(
                f"distance ({self.distance}) must be at most max_distance ({self.max_distance}): "
                "lower the distance or raise max_distance"
            )
        return self


# (1) Path length ----------------------------------------------------------------------------------


def rnn_path_length(distance):
    """Steps between tokens k apart in an RNN: the signal passes through k hidden-state updates, O(k).

    Vaswani et al. (2017), Table 1, "maximum path length": O(n) recurrent, O(1) self-attention.
    """
    return np.asarray(distance, dtype=np.int64)


def attention_path_length(distance):
    """Steps between any two tokens in one self-attention layer: every query reads every key directly."""
    return np.ones_like(np.asarray(distance, dtype=np.int64))


# (2) Matrix products in order -------------------------------------------------------------------------


@dataclass(frozen=True)
class Product:
    """One matrix product of a layer: (rows × inner) · (inner × cols)."""

    name: str
    rows: int  # tokens the product handles at once
    inner: int
    cols: int

    @property
    def multiply_adds(self) -> int:
        return self.rows * self.inner * self.cols

    def shape_text(self) -> str:
        return f"({self.rows}×{self.inner})·({self.inner}×{self.cols})"


def lstm_step_product(d_model: int) -> Product:
    """One LSTM step: [x_t, h_{t−1}] (1 × 2d) times the four gates' weights (2d × 4d).

    It needs h_{t−1}, so the n steps of a sequence run one after another.
    """
    return Product("[x_t, h_t−1]·W", 1, 2 * d_model, 4 * d_model)


def block_products(tokens: int, attention: MultiHeadAttention) -> tuple[Product, ...]:
    """The matrix products of one Transformer block over n tokens, each needing the one before.

    From the engine's weights: X·W_QKV, Q·Kᵀ and A·V (all heads in one batched product, h · n² · d_k
    = n² · d multiply-adds), concat·W_O, then the feed-forward network's W_1 (d × d_ff) and W_2.
    """
    n = tokens
    d_model, qkv_width = attention.w_qkv.shape  # (d, 3d)
    d_ff = FFN_FACTOR * d_model
    return (
        Product("X·W_QKV", n, d_model, qkv_width),
        Product("Q·Kᵀ", n, d_model, n),
        Product("A·V", n, n, d_model),
        Product("·W_O", n, attention.w_o.shape[0], attention.w_o.shape[1]),
        Product("FFN ·W_1", n, d_model, d_ff),
        Product("FFN ·W_2", n, d_ff, d_model),
    )


# (3) Parameters ---------------------------------------------------------------------------------------


def lstm_weight_shapes(d_model: int) -> dict[str, tuple[int, ...]]:
    """An LSTM layer of width d: input and recurrent weights for the four gates, and their bias."""
    d = d_model
    return {"W_x": (d, 4 * d), "W_h": (d, 4 * d), "b": (4 * d,)}


def attention_weight_shapes(attention: MultiHeadAttention) -> dict[str, tuple[int, ...]]:
    """The engine's multi-head attention weights: W_Q | W_K | W_V, W_O and their biases."""
    return {"W_QKV": attention.w_qkv.shape, "b_QKV": attention.b_qkv.shape,
            "W_O": attention.w_o.shape, "b_O": attention.b_o.shape}


def ffn_weight_shapes(d_model: int) -> dict[str, tuple[int, ...]]:
    d, d_ff = d_model, FFN_FACTOR * d_model
    return {"W_1": (d, d_ff), "b_1": (d_ff,), "W_2": (d_ff, d), "b_2": (d,)}


def layer_norm_shapes(d_model: int) -> dict[str, tuple[int, ...]]:
    """Two LayerNorms (after attention and after the FFN), each a gain γ and a bias β of width d."""
    return {"γ_1": (d_model,), "β_1": (d_model,), "γ_2": (d_model,), "β_2": (d_model,)}


def count(shapes: dict[str, tuple[int, ...]]) -> int:
    return sum(prod(shape) for shape in shapes.values())


def empty_attention(d_model: int) -> MultiHeadAttention:
    """The engine's attention layer with zero weights: only its shapes are read (zeros cost no random draw)."""
    weights = np.zeros((d_model, d_model), dtype=np.float32)
    bias = np.zeros(d_model, dtype=np.float32)
    return MultiHeadAttention(w_q=weights, w_k=weights, w_v=weights, w_o=weights,
                              b_q=bias, b_k=bias, b_v=bias, b_o=bias, num_heads=1)


@dataclass(frozen=True)
class LongRangeResult:
    distances: np.ndarray  # k = 1..max_distance
    rnn_path: np.ndarray  # steps between tokens k apart, LSTM
    attention_path: np.ndarray  # the same for self-attention
    distance: int  # the chosen k
    tokens: int  # n = k + 1, the tokens from the first of the pair to the second
    d_model: int
    lstm_step: Product  # one of the LSTM's n products in order
    block: tuple[Product, ...]  # the Transformer block's products in order
    lstm_parameters: int  # 4(2d² + d)
    attention_parameters: int  # 4d² + 4d, the engine's weights
    ffn_parameters: int  # 2·d·d_ff + d_ff + d = 8d² + 5d
    layer_norm_parameters: int  # 4d
    choice: tuple[str, ...]  # the ticked option ids, in the bank's order

    @property
    def lstm_products(self) -> int:
        return self.tokens  # one per token

    @property
    def lstm_multiply_adds(self) -> int:
        return self.lstm_products * self.lstm_step.multiply_adds

    @property
    def block_multiply_adds(self) -> int:
        return sum(product.multiply_adds for product in self.block)

    @property
    def block_parameters(self) -> int:
        return self.attention_parameters + self.ffn_parameters + self.layer_norm_parameters

    @property
    def parameter_ratio(self) -> Fraction:
        return Fraction(self.block_parameters, self.lstm_parameters)

    @property
    def path_marks(self) -> tuple[int, int, int]:
        """(k, LSTM path, attention path) at the chosen distance."""
        k = self.distance
        return k, int(self.rnn_path[k - 1]), int(self.attention_path[k - 1])


def long_range_result(params: LongRangeParams) -> LongRangeResult:
    distances = np.arange(1, params.max_distance + 1)  # (max_distance,)
    d = params.d_model
    attention = empty_attention(d)
    tokens = params.distance + 1
    return LongRangeResult(
        distances=distances,
        rnn_path=rnn_path_length(distances),
        attention_path=attention_path_length(distances),
        distance=params.distance,
        tokens=tokens,
        d_model=d,
        lstm_step=lstm_step_product(d),
        block=block_products(tokens, attention),
        lstm_parameters=count(lstm_weight_shapes(d)),
        attention_parameters=count(attention_weight_shapes(attention)),
        ffn_parameters=count(ffn_weight_shapes(d)),
        layer_norm_parameters=count(layer_norm_shapes(d)),
        choice=tuple(option for option in params.choice.split(",") if option),
    )


# Words shared by the alt text, the caption and the figure --------------------------------------------


def ratio_text(ratio: Fraction) -> str:
    return f"{float(ratio):.2f}×"


def verdict(result: LongRangeResult, option: str) -> str:
    """"true"/"false", and what the student did with the option when their answer is known."""
    truth = "true" if CORRECT[option] else "false"
    if not result.choice:
        return truth
    return f"{truth} · you {'ticked' if option in result.choice else 'left'} it" + (
        "" if option in result.choice else " unticked")


def path_sentence(result: LongRangeResult) -> str:
    k, rnn, attention = result.path_marks
    if rnn == attention:
        return (f"For neighbours (k = {k}) both take {plural(rnn, 'step')}; the LSTM's path grows by one "
                f"step per token of distance, attention's stays {attention}.")
    return (f"For tokens k = {k} apart: {plural(rnn, 'step')} in an LSTM, {plural(attention, 'step')} "
            f"in self-attention.")


def products_sentence(result: LongRangeResult) -> str:
    n, lstm, block = result.tokens, result.lstm_products, len(result.block)
    if lstm > block:
        comparison = f"{lstm - block} more for the LSTM"
    elif lstm == block:
        comparison = "as many at this length"
    else:
        comparison = (f"at this short length the block's {block} are more, but they stay {block} as n grows "
                      f"while the LSTM adds one per token")
    return (f"For n = {n} tokens: the LSTM runs {plural(lstm, 'product')} in order, each of 1 token; "
            f"the Transformer block runs {block}, each of all {n} tokens ({comparison}).")


def parameters_sentence(result: LongRangeResult) -> str:
    return (f"At d_model = {result.d_model}: LSTM layer {result.lstm_parameters:,} parameters, "
            f"Transformer block {result.block_parameters:,} ({ratio_text(result.parameter_ratio)} as many), "
            "so 'many fewer parameters' is false.")


def choice_sentence(result: LongRangeResult) -> str:
    if not result.choice:
        return ""
    ticked = [option for option in OPTIONS if option in result.choice]
    right = [option for option in ticked if CORRECT[option]]
    wrong = [option for option in ticked if not CORRECT[option]]
    missed = [option for option in OPTIONS if CORRECT[option] and option not in result.choice]
    parts = []
    if right:
        parts.append(f"You ticked {' and '.join(repr(OPTION_TEXT[o]) for o in right)}: "
                     f"{'true' if len(right) == 1 else 'both true'} (the frame{'s' if len(right) > 1 else ''}).")
    if wrong:
        parts.append(
            f"You ticked '{OPTION_TEXT['fewer-parameters']}', which is false: at d_model = {result.d_model} "
            f"the Transformer block has {result.block_parameters:,} parameters, the LSTM layer "
            f"{result.lstm_parameters:,}, so it needs {ratio_text(result.parameter_ratio)} as many, not fewer; "
            "its gains come from short paths and parallel hardware.")
    if missed:
        parts.append(f"You left {' and '.join(repr(OPTION_TEXT[o]) for o in missed)} unticked, but "
                     f"{'it is' if len(missed) == 1 else 'both are'} true.")
    return " ".join(parts)


@register
class LongRangeKind(VisualKind):
    name = "long-range"
    title = "Transformers against RNNs: long-range paths, parallel hardware, parameters"
    Params = LongRangeParams
    choice_param = "choice"
    controls = (
        Control("distance", "Distance k between the two tokens", "int", min=1, max=512, step=1,
                help="At most the largest distance plotted; the n = k + 1 tokens set the middle panel."),
        Control("max_distance", "Largest distance plotted", "int", min=2, max=512, step=1),
        Control("d_model", "Model width d_model", "int", min=1, max=1024, step=1,
                help="The width of the LSTM and of the Transformer block (d_ff = 4 · d_model)."),
    )
    learn = "/learn/attention#long-range"
    inches = (WIDTH, 3.9)
    narrow_inches = (NARROW_WIDTH, 8.6)

    def compute(self, params: LongRangeParams) -> LongRangeResult:
        return long_range_result(params)

    def alt(self, params: LongRangeParams, result: LongRangeResult) -> str:
        k, rnn, attention = result.path_marks
        step = result.lstm_step
        return (
            "Three panels, one per option, LSTM against Transformer. "
            f"Left, long-range dependencies ({verdict(result, 'long-range')}): the steps information and "
            f"gradients travel between tokens k apart, k in an LSTM and 1 in self-attention, for k from 1 to "
            f"{int(result.distances[-1])}; at k = {k}, {rnn} against {attention}. "
            f"Middle, modern hardware ({verdict(result, 'hardware')}): for n = {result.tokens} tokens the "
            f"LSTM layer runs {plural(result.lstm_products, 'matrix product')} one after another, each "
            f"{step.shape_text()} for 1 token, and the Transformer block {len(result.block)}, each for all "
            f"{result.tokens} tokens at once. "
            f"Right, fewer parameters ({verdict(result, 'fewer-parameters')}): at d_model = {result.d_model} "
            f"the LSTM layer has {result.lstm_parameters:,} parameters and the Transformer block "
            f"{result.block_parameters:,} (attention {result.attention_parameters:,}, feed-forward "
            f"{result.ffn_parameters:,}, LayerNorms {result.layer_norm_parameters:,}), "
            f"{ratio_text(result.parameter_ratio)} as many."
        )

    def draw(self, params: LongRangeParams, result: LongRangeResult, inches):
        from app.plots.long_range import draw_long_range

        return draw_long_range(result, inches)

    def caption(self, params: LongRangeParams, result: LongRangeResult) -> str:
        d = result.d_model
        step = result.lstm_step
        block = ", ".join(f"{product.name} {product.shape_text()}" for product in result.block)
        parts = [
            "Counts from the layers' shapes, not timings (a timing on a shared server says little about a GPU).",
            f"Long-range: in an LSTM, token t + k hears token t only through k hidden-state updates, and the "
            f"gradient flows back through the same k steps, where it can vanish or explode; one self-attention "
            f"layer links every pair in 1 step. {path_sentence(result)}",
            f"Hardware: h_t needs h_(t−1), so an LSTM layer runs one product per token, in order, each "
            f"[x_t, h_(t−1)] · W = {step.shape_text()} = 8d² = {step.multiply_adds:,} multiply-adds. "
            f"A Transformer block runs {len(result.block)} products in order whatever n, each over every token "
            f"at once (all heads batched): {block}. {products_sentence(result)} In total the block does "
            f"12nd² + 2n²d = {result.block_multiply_adds:,} multiply-adds and the LSTM 8nd² = "
            f"{result.lstm_multiply_adds:,}. So the block does more arithmetic, yet it suits a GPU or TPU better: "
            "its products stay 6 and grow wider with n, and each can be spread over the chip's thousands of "
            "units at once, while the LSTM's stay 1 token wide and grow in number, each waiting for the one "
            "before.",
            f"Parameters at d = d_model = {d}, d_ff = 4d = {FFN_FACTOR * d}: LSTM layer 4(2d² + d) "
            f"(W_x and W_h, each d × 4d, and b, 4d) = {result.lstm_parameters:,}. Transformer block: attention "
            f"4d² + 4d (the engine's W_QKV d × 3d, W_O d × d and their biases) = {result.attention_parameters:,}; "
            f"feed-forward 2·d·d_ff + d_ff + d = 8d² + 5d = {result.ffn_parameters:,}; two LayerNorms 4d = "
            f"{result.layer_norm_parameters:,}; total 12d² + 13d = {result.block_parameters:,}, "
            f"{ratio_text(result.parameter_ratio)} the LSTM's. PyTorch's LSTM keeps two bias vectors, "
            f"4(2d² + 2d) = {result.lstm_parameters + 4 * d:,}: still fewer.",
        ]
        chosen = choice_sentence(result)
        if chosen:
            parts.append(chosen)
        return " ".join(parts)
