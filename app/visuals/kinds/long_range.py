"""The "long-range" visual: Q2's three options, one panel each. Path length between tokens k apart
(LSTM k, self-attention 1); the matrix products a layer must run in order (LSTM n, Transformer block 6);
and the parameters at equal d_model (LSTM layer 4(2d² + d) against a Transformer block's 12d² + 13d).
Counts from the layers' shapes (the attention weights' from the engine's MultiHeadAttention), not timings.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

import numpy as np
from pydantic import Field, model_validator

from app.engine import MultiHeadAttention

from .. import register
from ..base import AcrossFields, NARROW_WIDTH, WIDTH, Control, VisualKind, VisualParams, chosen, option_choice
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


class LongRangeParams(VisualParams):
    max_distance: int = Field(default=32, ge=2, le=512)
    distance: int = Field(default=16, ge=1, le=512)
    d_model: int = Field(default=512, ge=1, le=1024)
    choice: option_choice(OPTIONS) = ""  # the options the student ticked (the answer page passes them)

    @model_validator(mode="after")
    def _distance_fits(self) -> LongRangeParams:
        if self.distance > self.max_distance:
            raise AcrossFields(f"distance ({self.distance}) must be at most max_distance ({self.max_distance}): "
                               "lower the distance or raise max_distance", "distance", "max_distance")
        return self


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


@dataclass(frozen=True)
class LongRangeResult:
    distances: np.ndarray  # (max_distance,) k = 1..max_distance
    rnn_path: np.ndarray  # (max_distance,) steps between tokens k apart in an LSTM
    attention_path: np.ndarray  # (max_distance,) the same in self-attention
    path_marks: tuple[int, int, int]  # (k, LSTM path, attention path) at the chosen distance k
    tokens: int  # n = k + 1, the tokens from the first of the pair to the second
    d_model: int
    lstm_step: Product  # one of the LSTM's n products in order
    lstm_products: int  # n: one per token
    block: tuple[Product, ...]  # the Transformer block's products in order
    lstm_parameters: int  # 4(2d² + d)
    attention_parameters: int  # 4d² + 4d, the engine's weights
    ffn_parameters: int  # 2·d·d_ff + d_ff + d = 8d² + 5d
    layer_norm_parameters: int  # 4d
    choice: tuple[str, ...]  # the ticked option ids, in the bank's order

    @property
    def block_parameters(self) -> int:
        return self.attention_parameters + self.ffn_parameters + self.layer_norm_parameters

    @property
    def ratio(self) -> str:
        """The block's parameters over the LSTM's: "1.50×"."""
        return f"{self.block_parameters / self.lstm_parameters:.2f}×"


def parameters(*shapes: tuple[int, ...]) -> int:
    return sum(prod(shape) for shape in shapes)


# Words shared by the alt text, the caption and the figure --------------------------------------------


def verdict(result: LongRangeResult, option: str) -> str:
    """"true"/"false", and what the student did with the option when their answer is known."""
    done = f" · you {'ticked it' if option in result.choice else 'left it unticked'}" if result.choice else ""
    return ("true" if CORRECT[option] else "false") + done


def path_sentence(result: LongRangeResult) -> str:
    k, rnn, attention = result.path_marks
    if rnn == attention:
        return (f"For neighbours (k = {k}) both take {plural(rnn, 'step')}; the LSTM's path grows by one "
                f"step per token of distance, attention's stays {attention}.")
    return (f"For tokens k = {k} apart: {plural(rnn, 'step')} in an LSTM, {plural(attention, 'step')} "
            f"in self-attention.")


def products_sentence(result: LongRangeResult) -> str:
    n, lstm, block = result.tokens, result.lstm_products, len(result.block)
    comparison = (f"{lstm - block} more for the LSTM" if lstm > block else "as many at this length" if lstm == block
                  else f"at this short length the block's {block} are more, but they stay {block} as n grows "
                  "while the LSTM adds one per token")
    return (f"For n = {n} tokens: the LSTM runs {plural(lstm, 'product')} in order, each of 1 token; "
            f"the Transformer block runs {block}, each of all {n} tokens ({comparison}).")


def choice_sentence(result: LongRangeResult) -> str:
    """What the student's ticks get right and wrong; "" when their answer is not known."""
    right = [repr(OPTION_TEXT[option]) for option in result.choice if CORRECT[option]]
    missed = [repr(OPTION_TEXT[option]) for option in OPTIONS
              if result.choice and CORRECT[option] and option not in result.choice]
    parts = []
    if right:
        parts.append(f"You ticked {' and '.join(right)}: "
                     f"{'true (the frame)' if len(right) == 1 else 'both true (the frames)'}.")
    if "fewer-parameters" in result.choice:
        parts.append(f"You ticked '{OPTION_TEXT['fewer-parameters']}', which is not among the advantages: "
                     "Transformers do not win by being smaller. At the same width, d_model = "
                     f"{result.d_model}, one block (attention and its feed-forward network) has {result.ratio} the "
                     f"parameters of one LSTM layer ({result.block_parameters:,} against "
                     f"{result.lstm_parameters:,}); what a task needs for similar results is not settled by one layer's "
                     "count. The gains are the short paths and the parallel hardware.")
    if missed:
        parts.append(f"You left {' and '.join(missed)} unticked, but {'both are' if missed[1:] else 'it is'} true.")
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
        k, n, d = params.distance, params.distance + 1, params.d_model
        d_ff = FFN_FACTOR * d
        distances = np.arange(1, params.max_distance + 1)  # (max_distance,)
        # Vaswani et al. (2017), Table 1, "maximum path length": O(n) recurrent, O(1) self-attention. In an RNN
        # the signal passes through k hidden-state updates; in self-attention every query reads every key directly.
        rnn_path, attention_path = distances.copy(), np.ones_like(distances)
        # The engine's attention layer with zero weights (and its zero biases): only its shapes are read.
        zeros = np.zeros((d, d), dtype=np.float32)  # no random draw, and half the memory of float64 at d = 1024
        attention = MultiHeadAttention(w_q=zeros, w_k=zeros, w_v=zeros, w_o=zeros, num_heads=1)
        # The block's products over n tokens, each needing the one before: X·W_QKV, Q·Kᵀ and A·V (all heads in one
        # batched product, h · n² · d_k = n² · d multiply-adds), concat·W_O, then the feed-forward W_1 and W_2.
        block = (Product("X·W_QKV", n, *attention.w_qkv.shape), Product("Q·Kᵀ", n, d, n), Product("A·V", n, n, d),
                 Product("·W_O", n, *attention.w_o.shape), Product("FFN ·W_1", n, d, d_ff),
                 Product("FFN ·W_2", n, d_ff, d))
        return LongRangeResult(
            distances=distances, rnn_path=rnn_path, attention_path=attention_path,
            path_marks=(k, int(rnn_path[k - 1]), int(attention_path[k - 1])), tokens=n, d_model=d,
            # One LSTM step: [x_t, h_(t−1)] (1 × 2d) times the four gates' weights (2d × 4d). It needs h_(t−1),
            # so the n steps of a sequence run one after another.
            lstm_step=Product("[x_t, h_t−1]·W", 1, 2 * d, 4 * d), lstm_products=n, block=block,
            lstm_parameters=parameters((d, 4 * d), (d, 4 * d), (4 * d,)),  # W_x, W_h for the four gates, b
            attention_parameters=sum(w.size for w in (attention.w_qkv, attention.b_qkv, attention.w_o, attention.b_o)),
            ffn_parameters=parameters((d, d_ff), (d_ff,), (d_ff, d), (d,)),  # W_1, b_1, W_2, b_2
            layer_norm_parameters=parameters(*[(d,)] * 4),  # two LayerNorms (after attention, after the FFN): γ, β
            choice=chosen(params.choice),
        )

    def alt(self, params: LongRangeParams, result: LongRangeResult) -> str:
        k, rnn, attention = result.path_marks
        return (
            "Three panels, one per option, LSTM against Transformer. "
            f"Left, long-range dependencies ({verdict(result, 'long-range')}): the steps information and "
            f"gradients travel between tokens k apart, k in an LSTM and 1 in self-attention, for k from 1 to "
            f"{int(result.distances[-1])}; at k = {k}, {rnn} against {attention}. "
            f"Middle, modern hardware ({verdict(result, 'hardware')}): for n = {result.tokens} tokens the "
            f"LSTM layer runs {plural(result.lstm_products, 'matrix product')} one after another, each "
            f"{result.lstm_step.shape_text()} for 1 token, and the Transformer block {len(result.block)}, each "
            f"for all {result.tokens} tokens at once. "
            f"Right, fewer parameters ({verdict(result, 'fewer-parameters')}): at d_model = {result.d_model} "
            f"the LSTM layer has {result.lstm_parameters:,} parameters and the Transformer block "
            f"{result.block_parameters:,} (attention {result.attention_parameters:,}, feed-forward "
            f"{result.ffn_parameters:,}, LayerNorms {result.layer_norm_parameters:,}), "
            f"{result.ratio} as many."
        )

    def draw(self, params: LongRangeParams, result: LongRangeResult, inches):
        from app.plots.long_range import draw_long_range

        return draw_long_range(result, inches)

    def caption(self, params: LongRangeParams, result: LongRangeResult) -> str:
        d, step = result.d_model, result.lstm_step
        block = ", ".join(f"{product.name} {product.shape_text()}" for product in result.block)
        block_work = sum(product.multiply_adds for product in result.block)
        return " ".join(filter(None, [
            "Counts from the layers' shapes, not timings (a timing on a shared server says little about a GPU).",
            (f"Long-range: in an LSTM, token t + k hears token t only through k hidden-state updates, and the "
             f"gradient flows back through the same k steps, where it can vanish or explode; one self-attention "
             f"layer links every pair in 1 step. {path_sentence(result)}"),
            (f"Hardware: h_t needs h_(t−1), so an LSTM layer runs one product per token, in order, each "
             f"[x_t, h_(t−1)] · W = {step.shape_text()} = 8d² = {step.multiply_adds:,} multiply-adds. "
             f"A Transformer block runs {len(result.block)} products in order whatever n, each over every token "
             f"at once (all heads batched): {block}. {products_sentence(result)} In total the block does "
             f"12nd² + 2n²d = {block_work:,} multiply-adds and the LSTM 8nd² = "
             f"{result.lstm_products * step.multiply_adds:,}. So the block does more arithmetic, yet it suits a GPU "
             "or TPU better: its products stay 6 and grow wider with n, and each can be spread over the chip's "
             "thousands of units at once, while the LSTM's stay 1 token wide and grow in number, each waiting for "
             "the one before."),
            (f"Parameters at d = d_model = {d}, d_ff = 4d = {FFN_FACTOR * d}: LSTM layer 4(2d² + d) "
             f"(W_x and W_h, each d × 4d, and b, 4d) = {result.lstm_parameters:,}. Transformer block: attention "
             f"4d² + 4d (the engine's W_QKV d × 3d, W_O d × d and their biases) = {result.attention_parameters:,}; "
             f"feed-forward 2·d·d_ff + d_ff + d = 8d² + 5d = {result.ffn_parameters:,}; two LayerNorms 4d = "
             f"{result.layer_norm_parameters:,}; total 12d² + 13d = {result.block_parameters:,}, {result.ratio} the "
             f"LSTM's. PyTorch's LSTM keeps two bias vectors, 4(2d² + 2d) = {result.lstm_parameters + 4 * d:,}: "
             "still fewer."),
            choice_sentence(result),
        ]))
