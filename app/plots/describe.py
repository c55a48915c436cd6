"""Alt text for every plot, built from the engine's result with NumPy only (no matplotlib).

The draw functions return these very strings, so an answer page can describe a figure without drawing it.
"""

from __future__ import annotations

import numpy as np

from .results import MultiHeadResult, OrderBlindnessResult, QkvResult, SoftLookupResult

# head-split: beyond MAX_DRAWN_HEADS heads the diagram groups the middle ones into one block.
MAX_DRAWN_HEADS = 8  # more blocks than this would not fit a label each at ~760 px
HEADS_BEFORE_ELLIPSIS = 3
HEADS_AFTER_ELLIPSIS = 2


def symmetric_limit(*arrays: np.ndarray) -> float:
    """The half-range for a diverging colour map centred on zero, from the data itself."""
    peak = max(float(np.max(np.abs(a))) for a in arrays if np.size(a))
    return peak if peak > 0 else 1.0


def _unknown_words(unknown) -> str:
    return f"Words not in the toy lexicon, given pseudo-random features: {', '.join(unknown)}."


# soft-lookup ----------------------------------------------------------------------------------------

def format_temperature(temperature: float) -> str:
    """1 -> "1.0", 0.05 -> "0.05": as typed, with a decimal point so it reads as a temperature."""
    text = f"{temperature:g}"
    return text if any(mark in text for mark in ".e") else text + ".0"


def _quoted_list(words) -> str:
    quoted = [f"'{word}'" for word in words]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " and " + quoted[-1]


def _describe_query(result: SoftLookupResult, row: int) -> str:
    query = result.query_tokens[row]
    weights = result.soft_weights[row]
    best = float(weights.max())
    tied = [key for key, weight in zip(result.key_tokens, weights) if weight >= best - 1e-12]
    hard_key = result.key_tokens[int(np.argmax(result.hard_weights[row]))]
    if len(tied) == len(result.key_tokens):
        soft_text = f"Query '{query}' spreads its weight evenly ({best:.2f} on each key)"
        hard_text = f"hard lookup picks the first key, '{hard_key}', with weight 1"
    elif len(tied) > 1:
        soft_text = f"Query '{query}' puts its largest weight, {best:.2f} each, on the tied keys {_quoted_list(tied)}"
        hard_text = f"hard lookup picks the first of them, '{hard_key}', with weight 1"
    else:
        soft_text = f"Query '{query}' puts its largest weight, {best:.2f}, on key '{tied[0]}'"
        hard_text = f"hard lookup picks '{hard_key}' with weight 1"
    feature = int(np.argmax(result.soft_output[row]))
    output_text = (
        f"soft output {result.value_features[feature]} {result.soft_output[row, feature]:.2f} "
        f"vs hard {result.hard_output[row, feature]:.2f}"
    )
    return f"{soft_text}; {hard_text}; {output_text}"


def soft_lookup_alt(result: SoftLookupResult) -> str:
    parts = [
        f"Soft lookup at temperature {format_temperature(result.temperature)} over the keys "
        f"{', '.join(result.key_tokens)}. "
        + ". ".join(_describe_query(result, row) for row in range(len(result.query_tokens)))
        + "."
    ]
    parts.append(
        "Top: attention weights, rows are queries and columns are keys, soft (softmax) on the left and "
        "hard (argmax, one-hot) on the right. Bottom: each query's output, the weighted sum of the keys' "
        f"values ({', '.join(result.value_features)})."
    )
    if result.unknown:
        parts.append(_unknown_words(result.unknown))
    return " ".join(parts)


# multi-head and attention-playground ----------------------------------------------------------------

def _strongest(result: MultiHeadResult, head: int) -> str:
    weights = result.weights[head]
    best = float(weights.max())
    ties = np.argwhere(weights >= best - 1e-12)
    query, key = (int(index) for index in ties[0])
    text = f"strongest weight {best:.2f}, query '{result.tokens[query]}' → key '{result.tokens[key]}'"
    if len(ties) > 1:
        text += f" ({len(ties) - 1} other pair{'s tie' if len(ties) > 2 else ' ties'})"
    return text


def _describe_head(result: MultiHeadResult, head: int) -> str:
    role = result.head_roles[head]
    if role is None:
        return f"Head {head + 1} (random): {_strongest(result, head)}."
    label = f"Head {head + 1} ({role}s↔{role}s)"
    share = result.role_shares[head]
    members = result.role_tokens[head]
    if share is None:
        return f"{label}: the sentence has no {role}s, so this head has nothing to relate; {_strongest(result, head)}."
    if len(members) == 1:
        subject = f"the only {role}, '{members[0]}', puts {share:.2f} of its weight"
    else:
        subject = f"the {role}s ({', '.join(members)}) put on average {share:.2f} of their weight"
    return f"{label}: {subject} on {role}s; {_strongest(result, head)}."


def multi_head_alt(result: MultiHeadResult) -> str:
    num_heads = len(result.head_titles)
    parts = [(
        f"Constructed {num_heads}-head self-attention over '{' '.join(result.tokens)}' (d_model {result.d_model}, "
        f"temperature {format_temperature(result.temperature)}): one heatmap per head, rows are queries and "
        "columns are keys, weights from 0 to 1."
    )]
    parts.extend(_describe_head(result, head) for head in range(num_heads))
    if any(role is not None for role in result.head_roles):
        parts.append("In those heads, queries of other parts of speech spread their weight evenly over the keys they see.")
    if result.mask is not None:
        parts.append(
            "Causal mask on: each query sees only itself and earlier tokens; the hatched cells above the "
            "diagonal are masked and have weight exactly 0."
        )
    if result.unknown:
        parts.append(_unknown_words(result.unknown))
    return " ".join(parts)


# order-blindness ------------------------------------------------------------------------------------

def format_difference(value: float) -> str:
    """0 stays "0"; rounding-level values keep their exponent rather than showing as 0.00."""
    if value == 0:
        return "0"
    if value < 1e-3:
        return f"{value:.1e}"
    return f"{value:.3f}"


def order_blindness_alt(result: OrderBlindnessResult) -> str:
    sentence, permuted = " ".join(result.tokens), " ".join(result.permuted_tokens)
    difference = format_difference(result.max_abs_difference)
    text = (
        f"Self-attention outputs (one head, random query and key weights, d_model {result.d_model}) for '{sentence}' and, "
        f"after the '{result.permutation}' permutation, for '{permuted}'; rows are tokens, columns output "
        "features, with one diverging colour scale. "
    )
    if result.permuted_tokens == result.tokens:
        text += (
            f"This permutation leaves the sentence unchanged, so the outputs match (max |difference| = "
            f"{difference}); try a sentence whose first and last words differ."
        )
    elif not result.positional:
        text += (
            "Without positional encoding the permuted sentence's output rows are the original rows, permuted: "
            f"re-ordered back they match the original with max |difference| = {difference}"
            + (" (floating-point rounding)" if result.max_abs_difference > 0 else "")
            + ". Attention alone cannot see the word order."
        )
    else:
        text += (
            "With sinusoidal positional encodings added to the embeddings, the permuted sentence's outputs, "
            f"re-ordered back, differ from the original by max |difference| = {difference}: the outputs now "
            "depend on word order."
        )
    if result.unknown:
        text += " " + _unknown_words(result.unknown)
    return text


# qkv-projections ------------------------------------------------------------------------------------

def qkv_limit(result: QkvResult) -> float:
    """The one colour half-range of all seven panels: the largest |entry| of X, the Ws and Q, K, V."""
    return symmetric_limit(result.x, result.w_q, result.w_k, result.w_v, result.q, result.k, result.v)


def _largest_entry(result: QkvResult, name: str, matrix: np.ndarray) -> str:
    row, column = np.unravel_index(int(np.argmax(np.abs(matrix))), matrix.shape)
    return f"{name} {matrix[row, column]:+.2f} (token '{result.tokens[row]}', column {column + 1})"


def qkv_alt(result: QkvResult, limit: float | None = None) -> str:
    if limit is None:
        limit = qkv_limit(result)
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
        f"Largest |entry|: {largest}. Colours: one diverging scale from {-limit:.2f} to {limit:.2f} shared by "
        f"all panels; random weights, seed {result.seed}."
    )
    if result.unknown:
        text += " " + _unknown_words(result.unknown)
    return text


# long-range -----------------------------------------------------------------------------------------

def steps_text(count: int) -> str:
    return f"{count} step" if count == 1 else f"{count} steps"


def long_range_marks(result) -> tuple[int, int, int, int, int, int]:
    """(k, RNN path, attention path, n, RNN steps, attention steps): the marked points of both panels."""
    k, n = result.distance, result.sequence_length
    return (k, int(result.rnn_path[k - 1]), int(result.attention_path[k - 1]),
            n, int(result.rnn_steps[n - 1]), int(result.attention_steps[n - 1]))


def long_range_alt(result) -> str:
    k, rnn_path, attention_path, n, rnn_steps, attention_steps = long_range_marks(result)
    return (
        f"Two line plots, RNN against self-attention. Left: for two tokens k = {k} apart, information "
        f"and gradients travel {steps_text(rnn_path)} in an RNN (growing as O(k)) but {steps_text(attention_path)} "
        f"in self-attention (O(1)), for every k from 1 to {int(result.distances[-1])}. Right: processing "
        f"the n = {n} tokens that span them takes an RNN {rnn_steps} sequential steps but self-attention "
        f"{attention_steps} parallel step{'' if attention_steps == 1 else 's'} of large matrix products."
    )


# position-encoding ----------------------------------------------------------------------------------

def format_small(value: float) -> str:
    """Numbers shown on the plot and in the alt text alike: 3 significant figures."""
    return f"{value:.2g}" if abs(value) < 1e-3 and value != 0 else f"{value:.3g}"


def position_encoding_alt(result) -> str:
    length, d_model = result.encoding.shape
    train_length = result.train_length
    first, second = result.closest_pair
    starts = ", ".join(str(p) for p in result.start_positions)
    alt = (
        f"Sinusoidal positional encoding for {length} positions and {d_model} dimensions, values in "
        f"[-1, 1], with waves that slow down from dimension 0 to dimension {d_model - 1}. "
        f"The dot products PE(p)·PE(p+k) for p = {starts} coincide for every offset k from 0 to "
        f"{int(result.offsets[-1])}: the largest spread between the curves is "
        f"{format_small(result.max_spread)}. The smallest distance between two different positions is "
        f"{format_small(result.min_distance)} (positions {first} and {second}), so no two positions "
        "share an encoding. "
    )
    if result.beyond_min_distance is not None:
        alt += (
            f"Positions {train_length} to {length - 1} lie beyond the training length {train_length} and "
            f"are still defined and unique, each at least {format_small(result.beyond_min_distance)} "
            "from every other position."
        )
    else:
        alt += f"All {length} positions are within the training length {train_length}."
    return alt


# head-split -----------------------------------------------------------------------------------------

def drawn_heads(num_heads: int) -> list[int | None]:
    """Head indices to draw as labelled blocks; None marks the block standing for the omitted middle."""
    if num_heads <= MAX_DRAWN_HEADS:
        return list(range(num_heads))
    return (list(range(HEADS_BEFORE_ELLIPSIS)) + [None]
            + list(range(num_heads - HEADS_AFTER_ELLIPSIS, num_heads)))


def head_split_alt(result) -> str:
    h, d_k, d_model = result.num_heads, result.head_dim, result.d_model
    width_out, height_out = result.output_projection_shape
    heads_word = "head" if h == 1 else "heads"
    alt = (
        f"Shape diagram. d_model = {d_model} split into {h} {heads_word} of {d_k} feature"
        f"{'' if d_k == 1 else 's'} each (head i takes columns i·{d_k} to i·{d_k} + {d_k - 1}); "
        f"each head's attention output is N × {d_k}; concatenated back to {width_out}, then multiplied "
        f"by W_O ({width_out}×{height_out}) to give N × {height_out}."
    )
    if len(drawn_heads(h)) < h:
        alt += (f" Heads {HEADS_BEFORE_ELLIPSIS} to {h - HEADS_AFTER_ELLIPSIS - 1} are grouped into one "
                "block to keep the diagram legible.")
    return alt


# autoregressive-pixels ------------------------------------------------------------------------------

def pixels_text(count: int) -> str:
    return "1 pixel" if count == 1 else f"{count} pixels"


def autoregressive_pixels_alt(result) -> str:
    height, width, index = result.height, result.width, result.index
    pixels = height * width
    attended = np.flatnonzero(result.mask[index])  # the key pixels the chosen pixel may attend to
    attend_count = int(attended.size)
    future_count = int(pixels - attend_count)
    allowed_span = "0" if attend_count == 1 else f"0–{attended[-1]}"
    after = ("; it is the last pixel, so none come after it" if future_count == 0
             else f" and not to the {future_count} after it")
    return (
        f"A {height} × {width} image read in raster order (left to right, top to bottom) and its "
        f"{pixels} × {pixels} causal mask. Pixel ({result.row}, {result.col}) is number {index} in raster "
        f"order; under the causal mask it may attend to {pixels_text(attend_count)} ({allowed_span})"
        f"{after}."
    )
