"""Tests for the pure-NumPy attention engine (app.engine).

References are naive pure-Python loops; properties are checked with hypothesis.
"""

from __future__ import annotations

import inspect
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from numpy.testing import assert_allclose, assert_array_equal

from app.engine import (
    MultiHeadAttention,
    MultiHeadTrace,
    attention_flops,
    causal_mask,
    hard_attention,
    merge_heads,
    scaled_dot_product_attention,
    sinusoidal_positional_encoding,
    softmax,
    split_heads,
)
from app.engine.attention import best_keys

FAST = settings(deadline=None, max_examples=30)


seeds = st.integers(min_value=0, max_value=2**32 - 1)


def random_arrays(seed: int, *shapes, dtype=np.float64):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape).astype(dtype) for shape in shapes]


def random_mha(seed: int, d_model: int, num_heads: int, dtype=np.float64) -> MultiHeadAttention:
    """A model with random weights and non-zero biases (init leaves biases at zero)."""
    w_q, w_k, w_v, w_o = random_arrays(seed, *[(d_model, d_model)] * 4, dtype=dtype)
    b_q, b_k, b_v, b_o = random_arrays(seed + 1, *[(d_model,)] * 4, dtype=dtype)
    return MultiHeadAttention(
        w_q=w_q, w_k=w_k, w_v=w_v, w_o=w_o, b_q=b_q, b_k=b_k, b_v=b_v, b_o=b_o,
        num_heads=num_heads,
    )


# --- naive references: plain Python lists and loops, independent of the engine ----------


def naive_softmax(row: list[float]) -> list[float]:
    top = max(row)
    exps = [math.exp(value - top) for value in row]
    total = sum(exps)
    return [value / total for value in exps]


def naive_attention(q, k, v, mask=None, temperature=1.0):
    """Row by row: scores = q·k / sqrt(d) / T, masked keys dropped, softmax, weighted sum of v."""
    d = len(q[0])
    outputs, all_weights = [], []
    for i, query in enumerate(q):
        scores = [
            sum(a * b for a, b in zip(query, key)) / math.sqrt(d) / temperature for key in k
        ]
        allowed = [j for j in range(len(k)) if mask is None or mask[i][j]]
        weights = [0.0] * len(k)
        if allowed:
            for j, weight in zip(allowed, naive_softmax([scores[j] for j in allowed])):
                weights[j] = weight
        outputs.append(
            [sum(weights[j] * v[j][c] for j in range(len(k))) for c in range(len(v[0]))]
        )
        all_weights.append(weights)
    return outputs, all_weights


def naive_linear(x, w, b):
    """Row-vector convention: y[i][c] = sum_r x[i][r] * w[r][c] + b[c]."""
    return [
        [sum(row[r] * w[r][c] for r in range(len(row))) + b[c] for c in range(len(b))]
        for row in x
    ]


def naive_mha(mha: MultiHeadAttention, x, kv=None, mask=None, temperature=1.0):
    """Head by head: head i attends with columns i*d_k:(i+1)*d_k of Q, K, V; then w_o."""
    kv = x if kv is None else kv
    q = naive_linear(x, mha.w_q.tolist(), mha.b_q.tolist())
    k = naive_linear(kv, mha.w_k.tolist(), mha.b_k.tolist())
    v = naive_linear(kv, mha.w_v.tolist(), mha.b_v.tolist())
    d_k = mha.d_model // mha.num_heads
    concatenated = [[] for _ in x]
    all_weights = []
    for head in range(mha.num_heads):
        columns = slice(head * d_k, (head + 1) * d_k)
        out, weights = naive_attention(
            [row[columns] for row in q], [row[columns] for row in k], [row[columns] for row in v],
            mask=mask, temperature=temperature,
        )
        for row, head_row in zip(concatenated, out):
            row.extend(head_row)
        all_weights.append(weights)
    output = naive_linear(concatenated, mha.w_o.tolist(), mha.b_o.tolist())
    return np.array(output), np.array(all_weights)


def test_docs_show_the_naive_reference_the_tests_use():
    docs = (Path(__file__).parent.parent / "docs" / "engine.md").read_text(encoding="utf-8")
    for reference in (naive_softmax, naive_attention, naive_linear, naive_mha):
        assert inspect.getsource(reference) in docs, f"docs/engine.md shows an old {reference.__name__}"


# --- softmax -------------------------------------------------------------------------------


def test_softmax_known_values():
    assert_allclose(softmax([0.0, math.log(3.0)]), [0.25, 0.75], rtol=1e-15)
    assert_allclose(softmax([[1.0, 1.0, 1.0, 1.0]]), [[0.25] * 4], rtol=1e-15)
    # Large equal-ish magnitudes: a naive exp would overflow to inf/inf.
    assert_allclose(softmax([1000.0, 1000.0 + math.log(3.0)]), [0.25, 0.75], rtol=1e-12)


@FAST
@given(
    hnp.arrays(
        np.float64,
        hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=6),
        elements=st.floats(-1e300, 1e300),
    )
)
def test_softmax_rows_sum_to_one_even_for_huge_magnitudes(x):
    probabilities = softmax(x)
    assert probabilities.shape == x.shape
    assert np.all(np.isfinite(probabilities))
    assert np.all(probabilities >= 0)
    assert_allclose(probabilities.sum(axis=-1), 1.0, rtol=1e-12)
    # The largest entry of each row gets the largest probability.
    rows_max = np.take_along_axis(probabilities, x.argmax(axis=-1)[..., None], axis=-1)
    assert_array_equal(rows_max[..., 0], probabilities.max(axis=-1))


@FAST
@given(
    hnp.arrays(
        np.float32,
        hnp.array_shapes(min_dims=2, max_dims=2, min_side=1, max_side=6),
        elements=st.floats(-(2.0**100), 2.0**100, width=32),
    )
)
def test_softmax_float32_rows_sum_to_one(x):
    probabilities = softmax(x)
    assert probabilities.dtype == np.float32
    assert_allclose(probabilities.sum(axis=-1), 1.0, rtol=1e-5)


@FAST
@given(
    hnp.arrays(
        np.float64,
        st.tuples(st.integers(1, 4), st.integers(1, 6)),
        elements=st.floats(-50, 50),
    ),
    st.floats(-1e3, 1e3),
)
def test_softmax_matches_naive_and_ignores_shifts(x, shift):
    expected = [naive_softmax(row) for row in x.tolist()]
    assert_allclose(softmax(x), expected, rtol=1e-12, atol=1e-300)
    assert_allclose(softmax(x + shift), expected, rtol=1e-9, atol=1e-300)


def test_softmax_axis():
    x = np.arange(12.0).reshape(3, 4)
    assert_allclose(softmax(x, axis=0), softmax(x.T).T)
    assert_allclose(softmax(x, axis=0).sum(axis=0), 1.0)


def test_softmax_minus_infinity_is_zero_weight_and_all_minus_infinity_row_is_zeros():
    x = np.array([[0.0, -np.inf, 0.0], [-np.inf, -np.inf, -np.inf], [-np.inf, 5.0, -np.inf]])
    probabilities = softmax(x)  # filterwarnings=error: a 0/0 would fail here
    assert_array_equal(probabilities, [[0.5, 0.0, 0.5], [0.0, 0.0, 0.0], [0.0, 1.0, 0.0]])


def test_softmax_rejects_nan_and_plus_infinity_and_leaves_input_alone():
    for bad in (np.nan, np.inf):
        with pytest.raises(ValueError, match="NaN or \\+inf"):
            softmax([1.0, bad])
    x = np.array([1.0, 2.0])
    softmax(x)
    assert_array_equal(x, [1.0, 2.0])


# --- scaled dot-product attention ------------------------------------------------------------


def test_attention_worked_example():
    # The docs/engine.md example: one query, two keys, d = 2.
    output, weights = scaled_dot_product_attention(
        [[1.0, 0.0]], [[1.0, 0.0], [0.0, 1.0]], [[1.0, 2.0], [3.0, 4.0]]
    )
    first = math.exp(1 / math.sqrt(2)) / (math.exp(1 / math.sqrt(2)) + 1)
    assert_allclose(weights, [[first, 1 - first]], rtol=1e-14)
    expected_output = [[first * 1 + (1 - first) * 3, first * 2 + (1 - first) * 4]]
    assert_allclose(output, expected_output, rtol=1e-14)
    assert_allclose(weights, [[0.6697615493266569, 0.3302384506733431]], rtol=1e-14)


def boolean_matrices(n: int, m: int):
    rows = st.lists(st.booleans(), min_size=m, max_size=m)
    return st.lists(rows, min_size=n, max_size=n).map(np.array)


@st.composite
def attention_problems(draw, with_mask=True):
    n, m = draw(st.integers(1, 5)), draw(st.integers(1, 5))
    d, l = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    q, k, v = random_arrays(draw(seeds), (n, d), (m, d), (m, l))
    mask = None
    if with_mask and draw(st.booleans()):
        mask = draw(boolean_matrices(n, m))
    return q, k, v, mask


@FAST
@given(attention_problems(), st.sampled_from([1.0, 0.5, 3.0]))
def test_attention_matches_naive_loops(problem, temperature):
    q, k, v, mask = problem
    output, weights = scaled_dot_product_attention(q, k, v, mask=mask, temperature=temperature)
    expected_output, expected_weights = naive_attention(
        q.tolist(), k.tolist(), v.tolist(), None if mask is None else mask.tolist(), temperature
    )
    assert output.shape == (q.shape[0], v.shape[1])
    assert weights.shape == (q.shape[0], k.shape[0])
    assert_allclose(weights, expected_weights, rtol=1e-12, atol=1e-15)
    assert_allclose(output, expected_output, rtol=1e-12, atol=1e-12)


@FAST
@given(attention_problems(with_mask=False), st.data())
def test_masked_keys_get_exactly_zero_weight_and_empty_rows_give_zeros(problem, data):
    q, k, v, _ = problem
    n, m = q.shape[0], k.shape[0]
    mask = data.draw(boolean_matrices(n, m))
    output, weights = scaled_dot_product_attention(q, k, v, mask=mask)
    assert np.all(np.isfinite(output)) and np.all(np.isfinite(weights))
    assert np.all(weights[~mask] == 0.0)
    has_key = mask.any(axis=1)
    assert_allclose(weights[has_key].sum(axis=1), 1.0, rtol=1e-12)
    assert np.all(weights[~has_key] == 0.0)
    assert np.all(output[~has_key] == 0.0)


def test_no_keys_at_all_gives_zeros():
    q, v = np.ones((2, 3)), np.ones((0, 4))
    for function in (scaled_dot_product_attention, hard_attention):
        output, weights = function(q, np.ones((0, 3)), v)
        assert weights.shape == (2, 0)
        assert_array_equal(output, np.zeros((2, 4)))


def test_fully_masked_attention_is_zeros_not_nan():
    q, k, v = random_arrays(0, (3, 4), (5, 4), (5, 2))
    output, weights = scaled_dot_product_attention(q, k, v, mask=np.zeros((3, 5), dtype=bool))
    assert_array_equal(output, np.zeros((3, 2)))
    assert_array_equal(weights, np.zeros((3, 5)))


@FAST
@given(seeds, st.integers(1, 6), st.integers(1, 4), st.randoms(use_true_random=False))
def test_attention_is_permutation_equivariant(seed, n, d, random):
    x, w_q, w_k, w_v = random_arrays(seed, (n, d), (d, d), (d, d), (d, d))
    perm = np.array(random.sample(range(n), n))
    output, weights = scaled_dot_product_attention(x @ w_q, x @ w_k, x @ w_v)
    permuted_output, permuted_weights = scaled_dot_product_attention(
        x[perm] @ w_q, x[perm] @ w_k, x[perm] @ w_v
    )
    assert_allclose(permuted_output, output[perm], rtol=1e-10, atol=1e-12)
    assert_allclose(permuted_weights, weights[perm][:, perm], rtol=1e-10, atol=1e-14)


def test_keys_order_does_not_matter_when_values_move_with_them():
    q, k, v = random_arrays(1, (3, 4), (6, 4), (6, 2))
    perm = np.array([5, 2, 0, 4, 1, 3])
    output, weights = scaled_dot_product_attention(q, k, v)
    permuted_output, permuted_weights = scaled_dot_product_attention(q, k[perm], v[perm])
    assert_allclose(permuted_output, output, rtol=1e-12)
    assert_allclose(permuted_weights, weights[:, perm], rtol=1e-12)


def test_temperature_is_the_same_as_dividing_the_queries():
    q, k, v = random_arrays(2, (4, 3), (5, 3), (5, 2))
    for temperature in (0.1, 0.7, 2.0, 25.0):
        tempered = scaled_dot_product_attention(q, k, v, temperature=temperature)
        rescaled = scaled_dot_product_attention(q / temperature, k, v)
        assert_allclose(tempered[1], rescaled[1], rtol=1e-10, atol=1e-300)
        assert_allclose(tempered[0], rescaled[0], rtol=1e-10, atol=1e-12)


@FAST
@given(seeds)
def test_small_temperature_approaches_hard_attention(seed):
    q, k, v = random_arrays(seed, (4, 3), (6, 3), (6, 2))
    scores = np.sort(q @ k.T, axis=1)
    assume(np.all(scores[:, -1] - scores[:, -2] > 1e-3))  # no near-ties
    hard_output, hard_weights = hard_attention(q, k, v)
    output, weights = scaled_dot_product_attention(q, k, v, temperature=1e-7)
    assert_allclose(weights, hard_weights, atol=1e-6)
    assert_allclose(output, hard_output, atol=1e-5)


def test_tiny_temperature_does_not_overflow_in_float32():
    q, k, v = random_arrays(3, (4, 3), (6, 3), (6, 2), dtype=np.float32)
    output, weights = scaled_dot_product_attention(q, k, v, temperature=1e-300)
    assert weights.dtype == np.float32
    assert np.all(np.isfinite(weights)) and np.all(np.isfinite(output))
    assert_array_equal(weights, hard_attention(q, k, v)[1])


def test_large_temperature_approaches_uniform():
    q, k, v = random_arrays(4, (4, 3), (6, 3), (6, 2))
    output, weights = scaled_dot_product_attention(q, k, v, temperature=1e8)
    assert_allclose(weights, np.full((4, 6), 1 / 6), rtol=1e-6)
    assert_allclose(output, np.broadcast_to(v.mean(axis=0), (4, 2)), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("temperature", [0.0, -1.0, math.inf, math.nan, "hot"])
def test_temperature_must_be_positive_and_finite(temperature):
    q, k, v = random_arrays(5, (2, 3), (2, 3), (2, 3))
    with pytest.raises(ValueError, match="temperature must be"):
        scaled_dot_product_attention(q, k, v, temperature=temperature)


def test_attention_shape_errors_explain_themselves():
    q, k, v = random_arrays(6, (2, 3), (4, 3), (4, 5))
    with pytest.raises(ValueError, match="q and k must have the same last dimension"):
        scaled_dot_product_attention(q, k[:, :2], v)
    with pytest.raises(ValueError, match="k and v must have the same length M"):
        scaled_dot_product_attention(q, k, v[:3])
    with pytest.raises(ValueError, match=r"must have shape \(\.\.\., length, features\)"):
        scaled_dot_product_attention(q[0], k, v)
    with pytest.raises(ValueError, match="mask must be boolean"):
        scaled_dot_product_attention(q, k, v, mask=np.ones((2, 4)))
    with pytest.raises(ValueError, match="does not broadcast"):
        scaled_dot_product_attention(q, k, v, mask=np.ones((2, 3), dtype=bool))
    with pytest.raises(ValueError, match="do not broadcast together"):
        scaled_dot_product_attention(q[None].repeat(2, 0), k[None].repeat(3, 0), v)


@FAST
@given(seeds, st.integers(1, 3), st.integers(1, 4), st.integers(1, 4))
def test_batched_attention_equals_a_loop_over_items(seed, batch, n, m):
    q, k, v = random_arrays(seed, (batch, n, 3), (batch, m, 3), (batch, m, 2))
    mask = np.random.default_rng(seed).random((batch, n, m)) < 0.7
    output, weights = scaled_dot_product_attention(q, k, v, mask=mask)
    for item in range(batch):
        item_output, item_weights = scaled_dot_product_attention(
            q[item], k[item], v[item], mask=mask[item]
        )
        assert_allclose(output[item], item_output, rtol=1e-13, atol=1e-15)
        assert_allclose(weights[item], item_weights, rtol=1e-13, atol=1e-15)


def test_shared_keys_broadcast_over_a_batch_of_queries():
    q, k, v = random_arrays(7, (3, 2, 4), (5, 4), (5, 2))
    output, weights = scaled_dot_product_attention(q, k, v, mask=causal_mask(2, 5))
    assert output.shape == (3, 2, 2) and weights.shape == (3, 2, 5)
    for item in range(3):
        item_output, _ = scaled_dot_product_attention(q[item], k, v, mask=causal_mask(2, 5))
        assert_allclose(output[item], item_output)


def test_huge_scores_do_not_overflow_in_float32():
    # Scores in the thousands would overflow exp without the max subtraction.
    q, k, v = random_arrays(17, (4, 64, 8), (4, 64, 8), (4, 64, 8), dtype=np.float32)
    q *= 300
    output, weights = scaled_dot_product_attention(q, k, v)
    assert weights.dtype == np.float32
    assert np.all(np.isfinite(weights)) and np.all(np.isfinite(output))
    expected = softmax((q.astype(np.float64) @ np.swapaxes(k, 1, 2)) / math.sqrt(8))
    assert_allclose(weights, expected, rtol=1e-3, atol=1e-6)
    assert_allclose(weights.sum(axis=-1), 1.0, rtol=1e-5)


# --- hard attention -------------------------------------------------------------------------


def test_hard_attention_copies_the_best_value():
    q, k, v = random_arrays(9, (5, 3), (7, 3), (7, 2))
    mask = np.random.default_rng(9).random((5, 7)) < 0.6
    mask[2] = False
    output, weights = hard_attention(q, k, v, mask=mask)
    for i in range(5):
        allowed = [j for j in range(7) if mask[i, j]]
        if not allowed:
            assert_array_equal(weights[i], 0.0)
            assert_array_equal(output[i], 0.0)
            continue
        best = max(allowed, key=lambda j: float(q[i] @ k[j]))
        expected = np.zeros(7)
        expected[best] = 1.0
        assert_array_equal(weights[i], expected)
        assert_array_equal(output[i], v[best])


def test_hard_attention_breaks_ties_by_first_key():
    k = np.array([[0.0, 1.0], [1.0, 0.0], [1.0, 0.0]])
    v = np.array([[10.0], [20.0], [30.0]])
    output, weights = hard_attention([[1.0, 0.0]], k, v)
    assert_array_equal(weights, [[0.0, 1.0, 0.0]])
    assert_array_equal(output, [[20.0]])


@pytest.mark.parametrize(("seed", "m"), [(1, 9), (1, 17), (3, 13)])  # seeds this machine rounds apart
def test_identical_keys_tie_though_the_product_rounds_them_apart(seed, m):
    """A matrix product may round one column's dot product differently from an identical column's (BLAS sums a
    block's last columns in another order): the soft-lookup visual's 9 keys, the last two the same word, scored
    2.538378871178385 and ...384. They still tie, and the first of them wins."""
    rng = np.random.default_rng(seed)
    k = rng.random((m, 16))
    k[-1] = k[-2]  # the last two keys are one word typed twice
    k[-2:] += 2.0  # ... and every query's best
    q = rng.random((3, 16))
    scores = q @ k.T
    v = np.arange(m, dtype=float)[:, None]
    output, weights = hard_attention(q, k, v)
    assert_array_equal(weights.argmax(axis=-1), [m - 2] * 3)
    assert_array_equal(output[:, 0], m - 2.0)
    assert best_keys(scores)[:, -2:].all() and not best_keys(scores)[:, :-2].any()
    # One unit of rounding apart, as the product left them here, they tie; further apart they do not, and
    # float32's rounding is coarser.
    top = 2.538378871178385
    assert_array_equal(best_keys(np.array([[0.5, np.nextafter(top, 0), top]])), [[False, True, True]])
    assert_array_equal(best_keys(np.array([[1.0, 1.0 - 1e-9, 1.0 + 1e-15]])), [[True, False, True]])
    assert_array_equal(best_keys(np.array([[1.0, 1.0 - 1e-6, 1.0 - 1e-4]], dtype=np.float32)), [[True, True, False]])


# --- heads ----------------------------------------------------------------------------------


@FAST
@given(seeds, st.integers(1, 3), st.integers(1, 5), st.integers(1, 4), st.integers(1, 4),
       st.booleans())
def test_split_and_merge_heads_round_trip(seed, batch, n, num_heads, head_dim, batched):
    shape = (batch, n, num_heads * head_dim) if batched else (n, num_heads * head_dim)
    (x,) = random_arrays(seed, shape)
    heads = split_heads(x, num_heads)
    assert heads.shape == (*shape[:-2], num_heads, n, head_dim)
    assert heads.flags.c_contiguous
    for head in range(num_heads):
        assert_array_equal(heads[..., head, :, :], x[..., head * head_dim : (head + 1) * head_dim])
    assert_array_equal(merge_heads(heads), x)


def test_split_heads_keeps_integer_columns():
    columns = np.arange(6)[None, :]  # (1, 6): which column lands in which head
    assert_array_equal(split_heads(columns, 3), [[[0, 1]], [[2, 3]], [[4, 5]]])


def test_split_heads_errors():
    x = np.zeros((2, 130))
    with pytest.raises(ValueError) as error:
        split_heads(x, 4)
    assert str(error.value) == (
        "d_model=130 is not divisible by num_heads=4: each head gets d_model / num_heads "
        "features, so choose num_heads that divides d_model"
    )
    for bad in (0, -2):
        with pytest.raises(ValueError, match="num_heads must be at least 1"):
            split_heads(x, bad)
    with pytest.raises(ValueError, match="num_heads must be an integer"):
        split_heads(x, 2.0)
    with pytest.raises(ValueError, match="merge_heads needs shape"):
        merge_heads(x)


# --- multi-head attention -------------------------------------------------------------------


@FAST
@given(seeds, st.integers(1, 4), st.integers(1, 4), st.integers(1, 3), st.integers(1, 3),
       st.booleans(), st.sampled_from([1.0, 0.5, 3.0]))
def test_mha_matches_naive_head_by_head(seed, n, m, num_heads, head_dim, cross, temperature):
    d_model = num_heads * head_dim
    mha = random_mha(seed, d_model, num_heads)
    x, kv = random_arrays(seed + 2, (n, d_model), (m, d_model))
    kv = kv if cross else None
    mask = np.random.default_rng(seed).random((n, m if cross else n)) < 0.7
    output, weights = mha(x, kv=kv, mask=mask, temperature=temperature)
    expected_output, expected_weights = naive_mha(
        mha, x.tolist(), None if kv is None else kv.tolist(), mask.tolist(), temperature
    )
    assert weights.shape == (num_heads, n, m if cross else n)
    assert_allclose(weights, expected_weights, rtol=1e-10, atol=1e-14)
    assert_allclose(output, expected_output, rtol=1e-10, atol=1e-10)


def test_mha_cross_attention_shapes():
    mha = MultiHeadAttention.init(8, 2, seed=3)
    x, memory = random_arrays(10, (2, 3, 8), (2, 5, 8))
    output, weights = mha(x, kv=memory)
    assert output.shape == (2, 3, 8)
    # kv=x is self-attention (one product with w_qkv) and must agree with a separate copy of x.
    assert_allclose(mha(x, kv=x)[0], mha(x, kv=x.copy())[0], rtol=1e-13)
    assert weights.shape == (2, 2, 3, 5)
    assert_allclose(weights.sum(axis=-1), 1.0)


@FAST
@given(seeds, st.integers(1, 6), st.sampled_from([(4, 1), (4, 2), (6, 3)]),
       st.randoms(use_true_random=False))
def test_mha_is_permutation_equivariant_without_positions(seed, n, shape, random):
    d_model, num_heads = shape
    mha = random_mha(seed, d_model, num_heads)
    (x,) = random_arrays(seed + 2, (n, d_model))
    perm = np.array(random.sample(range(n), n))
    output, weights = mha(x)
    permuted_output, permuted_weights = mha(x[perm])
    assert_allclose(permuted_output, output[perm], rtol=1e-10, atol=1e-12)
    assert_allclose(permuted_weights, weights[:, perm][:, :, perm], rtol=1e-10, atol=1e-14)


def test_positional_encoding_breaks_permutation_equivariance():
    mha = MultiHeadAttention.init(8, 2, seed=0)
    (tokens,) = random_arrays(11, (4, 8))
    positions = sinusoidal_positional_encoding(4, 8)
    perm = np.array([1, 0, 3, 2])
    in_order, shuffled = mha(tokens + positions)[0], mha(tokens[perm] + positions)[0]
    assert not np.allclose(shuffled, in_order[perm])


@FAST
@given(seeds, st.integers(1, 3), st.integers(1, 4), st.integers(1, 4))
def test_batched_mha_equals_a_loop_over_items(seed, batch, n, m):
    mha = random_mha(seed, 6, 2)
    x, kv = random_arrays(seed + 2, (batch, n, 6), (batch, m, 6))
    mask = np.random.default_rng(seed).random((batch, 1, n, m)) < 0.7
    for keys in (None, kv):
        item_mask = mask if keys is not None else causal_mask(n)
        output, weights = mha(x, kv=keys, mask=item_mask)
        for item in range(batch):
            item_keys = None if keys is None else keys[item]
            item_output, item_weights = mha(
                x[item], kv=item_keys, mask=item_mask[item] if keys is not None else item_mask
            )
            assert_allclose(output[item], item_output, rtol=1e-12, atol=1e-14)
            assert_allclose(weights[item], item_weights, rtol=1e-12, atol=1e-15)


def test_mha_causal_first_query_sees_only_the_first_token():
    mha = random_mha(12, 6, 3)
    (x,) = random_arrays(13, (4, 6))
    _, weights = mha(x, mask=causal_mask(4))
    assert_array_equal(weights[:, 0], np.tile([1.0, 0.0, 0.0, 0.0], (3, 1)))
    assert np.all(weights[:, np.triu_indices(4, 1)[0], np.triu_indices(4, 1)[1]] == 0.0)
    # Causality: changing the last token leaves earlier outputs alone.
    changed = x.copy()
    changed[3] += 1.0
    before, after = mha(x, mask=causal_mask(4))[0], mha(changed, mask=causal_mask(4))[0]
    assert_allclose(after[:3], before[:3], rtol=1e-13)
    assert not np.allclose(after[3], before[3])


@pytest.mark.parametrize("cross", [False, True])
def test_forward_detailed_exposes_every_intermediate(cross):
    mha = random_mha(14, 8, 2)
    x, memory = random_arrays(15, (3, 8), (5, 8))
    kv = memory if cross else None
    keys = memory if cross else x
    mask = np.random.default_rng(15).random((3, len(keys))) < 0.7
    trace = mha.forward_detailed(x, kv=kv, mask=mask)
    assert isinstance(trace, MultiHeadTrace)
    output, weights = mha(x, kv=kv, mask=mask)
    assert_array_equal(trace.output, output)  # the very same numbers, not a re-derivation
    assert_array_equal(trace.weights, weights)
    assert_allclose(trace.q, x @ mha.w_q + mha.b_q, rtol=1e-12)
    assert_allclose(trace.k, keys @ mha.w_k + mha.b_k, rtol=1e-12)
    assert_allclose(trace.v, keys @ mha.w_v + mha.b_v, rtol=1e-12)
    for head in range(2):
        columns = slice(head * 4, (head + 1) * 4)
        assert_array_equal(trace.q_heads[head], trace.q[:, columns])
        assert_array_equal(trace.k_heads[head], trace.k[:, columns])
        assert_array_equal(trace.v_heads[head], trace.v[:, columns])
        head_scores = trace.q[:, columns] @ trace.k[:, columns].T / math.sqrt(4)
        assert_allclose(trace.scores[head], head_scores, rtol=1e-12)
        assert_array_equal(trace.concatenated[:, columns], trace.head_outputs[head])
    assert_allclose(trace.weights, softmax(np.where(mask, trace.scores, -np.inf)), rtol=1e-12)
    assert_allclose(trace.head_outputs, trace.weights @ trace.v_heads, rtol=1e-12)
    assert_allclose(trace.output, trace.concatenated @ mha.w_o + mha.b_o, rtol=1e-12)
    q, k, v = mha.project(x, kv=kv)
    assert_array_equal(q, trace.q)
    assert_array_equal(k, trace.k)
    assert_array_equal(v, trace.v)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("batched", [False, True])
@pytest.mark.parametrize("cross", [False, True])
@pytest.mark.parametrize("masked", [False, True])
@pytest.mark.parametrize("temperature", [1.0, 0.25])
def test_calling_the_module_returns_the_traces_output_and_weights(dtype, batched, cross, masked, temperature):
    mha = random_mha(18, 16, 4, dtype=dtype)
    shape = (2, 5, 16) if batched else (5, 16)
    x, memory = random_arrays(19, shape, shape, dtype=dtype)
    kv = memory if cross else None
    mask = causal_mask(5) if masked else None
    output, weights = mha(x, kv=kv, mask=mask, temperature=temperature)
    trace = mha.forward_detailed(x, kv=kv, mask=mask, temperature=temperature)
    assert_array_equal(output, trace.output)  # the very same numbers, not a re-derivation
    assert_array_equal(weights, trace.weights)
    assert output.dtype == weights.dtype == dtype
    assert output.shape == shape and weights.shape == (*shape[:-2], 4, 5, 5)


def test_mha_temperature_is_per_head_attention_with_that_temperature():
    mha = random_mha(20, 12, 3)
    x, memory = random_arrays(21, (4, 12), (6, 12))
    mask = np.random.default_rng(21).random((4, 6)) < 0.7
    q, k, v = mha.project(x, kv=memory)
    q_heads, k_heads, v_heads = split_heads(q, 3), split_heads(k, 3), split_heads(v, 3)
    for temperature in (0.1, 0.5, 1.0, 4.0):
        output, weights = mha(x, kv=memory, mask=mask, temperature=temperature)
        head_outputs, expected_weights = scaled_dot_product_attention(
            q_heads, k_heads, v_heads, mask=mask, temperature=temperature
        )
        assert_allclose(weights, expected_weights, rtol=1e-12, atol=1e-15)
        assert_allclose(output, merge_heads(head_outputs) @ mha.w_o + mha.b_o, rtol=1e-12, atol=1e-12)
    # Temperature 1 is the standard formula, and the default; other temperatures change the weights.
    assert_array_equal(mha(x, kv=memory, temperature=1.0)[1], mha(x, kv=memory)[1])
    assert not np.allclose(mha(x, kv=memory, temperature=0.5)[1], mha(x, kv=memory)[1])
    # The trace's scores are before the temperature; its weights are after it.
    cold = mha.forward_detailed(x, kv=memory, temperature=0.5)
    assert_array_equal(cold.scores, mha.forward_detailed(x, kv=memory).scores)
    assert_allclose(cold.weights, softmax(cold.scores / 0.5), rtol=1e-12)
    with pytest.raises(ValueError, match="temperature must be a finite number > 0"):
        mha(x, temperature=0.0)


def test_mha_keeps_a_copy_of_the_given_weights_with_w_qkv_their_concatenation():
    w_q, w_k, w_v, w_o = random_arrays(22, *[(4, 4)] * 4)
    mha = MultiHeadAttention(w_q=w_q, w_k=w_k, w_v=w_v, w_o=w_o, b_v=np.arange(4), num_heads=2)
    for name, passed in (("w_q", w_q), ("w_k", w_k), ("w_v", w_v), ("w_o", w_o)):
        assert_array_equal(getattr(mha, name), passed)
    assert_array_equal(mha.w_qkv, np.concatenate([w_q, w_k, w_v], axis=1))
    assert_array_equal(mha.b_qkv, [0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3])
    assert_array_equal(mha.b_o, np.zeros(4))
    w_q[0, 0] += 1.0
    assert mha.w_q[0, 0] == w_q[0, 0] - 1.0  # changing the caller's array leaves the model alone


def test_mha_init_is_seeded_and_follows_torchs_bounds():
    d_model = 16
    first = MultiHeadAttention.init(d_model, 4, seed=7)
    again = MultiHeadAttention.init(d_model, 4, seed=7)
    other = MultiHeadAttention.init(d_model, 4, seed=8)
    single = MultiHeadAttention.init(d_model, 4, seed=7, dtype=np.float32)
    assert (first.d_model, first.num_heads, first.head_dim) == (16, 4, 4)
    for name in ("w_q", "w_k", "w_v", "w_o"):
        assert_array_equal(getattr(first, name), getattr(again, name))
        assert not np.array_equal(getattr(first, name), getattr(other, name))
        assert getattr(single, name).dtype == np.float32
        assert_allclose(getattr(single, name), getattr(first, name), rtol=1e-6)
    in_bound = math.sqrt(6 / (4 * d_model))
    for weight in (first.w_q, first.w_k, first.w_v):
        assert np.abs(weight).max() <= in_bound
        assert np.abs(weight).max() > 0.8 * in_bound  # drawn over the whole range
    assert np.abs(first.w_o).max() <= 1 / math.sqrt(d_model)
    for name in ("b_q", "b_k", "b_v", "b_o"):
        assert_array_equal(getattr(first, name), np.zeros(d_model))
    with pytest.raises(ValueError):
        first.w_q[0, 0] = 1.0  # read-only, like w_qkv whose column block it is


def test_mha_validation_messages():
    with pytest.raises(ValueError, match="d_model=130 is not divisible by num_heads=4"):
        MultiHeadAttention.init(130, 4)
    with pytest.raises(ValueError, match="num_heads must be at least 1"):
        MultiHeadAttention.init(8, 0)
    good = dict(w_q=np.eye(4), w_k=np.eye(4), w_v=np.eye(4), w_o=np.eye(4), num_heads=2)
    with pytest.raises(ValueError, match=r"w_k must have shape \(d_model, d_model\) = \(4, 4\)"):
        MultiHeadAttention(**{**good, "w_k": np.eye(3)})
    with pytest.raises(ValueError, match="w_q must be a square"):
        MultiHeadAttention(**{**good, "w_q": np.ones((4, 3))})
    with pytest.raises(ValueError, match=r"b_o must have shape \(d_model,\) = \(4,\)"):
        MultiHeadAttention(**good, b_o=np.zeros(5))
    mha = MultiHeadAttention(**good)
    with pytest.raises(ValueError, match=r"x must have shape \(N, d_model\) or .* d_model=4"):
        mha(np.zeros((3, 5)))
    with pytest.raises(ValueError, match="kv must be batched like x"):
        mha(np.zeros((2, 3, 4)), kv=np.zeros((3, 4)))
    with pytest.raises(ValueError, match="ambiguous"):
        mha(np.zeros((2, 3, 4)), mask=np.ones((2, 3, 3), dtype=bool))


def test_mha_identity_weights_reduce_to_per_head_attention():
    # With identity projections, MHA is split_heads -> attention -> merge_heads.
    (x,) = random_arrays(16, (5, 6))
    identity = np.eye(6)
    mha = MultiHeadAttention(w_q=identity, w_k=identity, w_v=identity, w_o=identity, num_heads=3)
    heads = split_heads(x, 3)
    expected_output, expected_weights = scaled_dot_product_attention(heads, heads, heads)
    output, weights = mha(x)
    assert_allclose(weights, expected_weights, rtol=1e-13)
    assert_allclose(output, merge_heads(expected_output), rtol=1e-13)


# --- dtypes ---------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dtype_is_preserved(dtype):
    q, k, v = random_arrays(17, (3, 4), (5, 4), (5, 2), dtype=dtype)
    assert softmax(q).dtype == dtype
    for function in (scaled_dot_product_attention, hard_attention):
        output, weights = function(q, k, v, mask=causal_mask(3, 5))
        assert output.dtype == dtype and weights.dtype == dtype
    assert scaled_dot_product_attention(q, k, v, temperature=0.3)[1].dtype == dtype
    mha = MultiHeadAttention.init(4, 2, dtype=dtype)
    trace = mha.forward_detailed(q)
    for name in ("q", "k", "v", "q_heads", "scores", "weights", "head_outputs", "output"):
        assert getattr(trace, name).dtype == dtype, name
    assert mha(q[None])[0].dtype == dtype
    assert sinusoidal_positional_encoding(3, 4, dtype=dtype).dtype == dtype


def test_integers_are_promoted_to_float64_and_mixed_floats_to_the_wider():
    assert softmax([1, 2, 3]).dtype == np.float64
    output, weights = scaled_dot_product_attention([[1, 0]], [[1, 0], [0, 1]], [[1], [2]])
    assert output.dtype == weights.dtype == np.float64
    q32, k64 = np.ones((2, 2), np.float32), np.ones((2, 2), np.float64)
    assert scaled_dot_product_attention(q32, k64, k64)[1].dtype == np.float64
    assert MultiHeadAttention.init(4, 2)(np.ones((2, 4), dtype=np.int64))[0].dtype == np.float64
    # The weights take part in promotion: float32 x with float64 weights computes in float64.
    assert MultiHeadAttention.init(4, 2)(np.ones((2, 4), dtype=np.float32))[0].dtype == np.float64


# --- masks, positions, cost -----------------------------------------------------------------


def test_causal_mask():
    assert_array_equal(
        causal_mask(3),
        [[True, False, False], [True, True, False], [True, True, True]],
    )
    rectangular = causal_mask(2, 4)
    assert rectangular.dtype == np.bool_ and rectangular.shape == (2, 4)
    assert_array_equal(rectangular, [[True, False, False, False], [True, True, False, False]])
    for i in range(5):
        for j in range(6):
            assert causal_mask(5, 6)[i, j] == (j <= i)
    assert causal_mask(0).shape == (0, 0)
    with pytest.raises(ValueError):
        causal_mask(-1)


def test_causal_attention_first_query_copies_first_value():
    q, k, v = random_arrays(18, (4, 3), (4, 3), (4, 2))
    output, weights = scaled_dot_product_attention(q, k, v, mask=causal_mask(4))
    assert_array_equal(weights[0], [1.0, 0.0, 0.0, 0.0])
    assert_allclose(output[0], v[0], rtol=1e-15)
    assert np.all(np.triu(weights, 1) == 0.0)


def naive_positional_encoding(length, d_model, base=10000.0):
    table = []
    for p in range(length):
        row = []
        for column in range(d_model):
            angle = p / base ** (2 * (column // 2) / d_model)
            row.append(math.sin(angle) if column % 2 == 0 else math.cos(angle))
        table.append(row)
    return table


@pytest.mark.parametrize(
    "length, d_model, base", [(7, 8, 10000.0), (5, 7, 10000.0), (4, 1, 10000.0), (6, 6, 100.0)]
)
def test_positional_encoding_matches_the_interleaved_formula(length, d_model, base):
    encoding = sinusoidal_positional_encoding(length, d_model, base=base)
    assert encoding.shape == (length, d_model) and encoding.dtype == np.float64
    expected = naive_positional_encoding(length, d_model, base)
    assert_allclose(encoding, expected, rtol=1e-12, atol=1e-15)


def test_positional_encoding_known_values():
    encoding = sinusoidal_positional_encoding(3, 5)
    assert_array_equal(encoding[0], [0.0, 1.0, 0.0, 1.0, 0.0])  # sin 0, cos 0, ...
    assert_allclose(encoding[2, :2], [math.sin(2), math.cos(2)], rtol=1e-15)
    # Odd d_model: the last column is a sine, with frequency 10000^(-4/5).
    assert_allclose(encoding[1, 4], math.sin(1 / 10000 ** (4 / 5)), rtol=1e-15)


@FAST
@given(st.integers(0, 300), st.integers(0, 60), st.integers(1, 32))
def test_positional_dot_product_depends_only_on_offset(p, offset, half_width):
    d_model = 2 * half_width
    encoding = sinusoidal_positional_encoding(p + offset + 1, d_model)
    frequencies = 10000.0 ** (-2 * np.arange(half_width) / d_model)
    expected = float(np.sum(np.cos(offset * frequencies)))
    assert math.isclose(encoding[p] @ encoding[p + offset], expected, abs_tol=1e-9)
    assert math.isclose(encoding[0] @ encoding[offset], expected, abs_tol=1e-9)


def test_positional_encoding_validation():
    with pytest.raises(ValueError, match="d_model must be at least 1"):
        sinusoidal_positional_encoding(4, 0)
    with pytest.raises(ValueError, match="base must be"):
        sinusoidal_positional_encoding(4, 4, base=0.0)
    assert sinusoidal_positional_encoding(0, 4).shape == (0, 4)


def test_attention_flops_closed_form_and_loop_count():
    assert attention_flops(4, 6, 8, 2) == 4 * 6 * 8 + 4 * 6 * 2
    assert attention_flops(4, 6, 8, 2, include_softmax=True) == 4 * 6 * (8 + 2) + 4 * 6
    n, m, d, l = 3, 5, 2, 4
    counted = sum(1 for _ in range(n) for _ in range(m) for _ in range(d))  # each q·k term
    counted += sum(1 for _ in range(n) for _ in range(l) for _ in range(m))  # each w·v term
    assert attention_flops(n, m, d, l) == counted
    huge = attention_flops(10**7, 10**7, 4096, 4096)
    assert huge == 10**14 * 8192 and isinstance(huge, int)  # beyond int64: Python ints
    assert attention_flops(0, 5, 3, 3) == 0
    with pytest.raises(ValueError, match="n must be at least 0"):
        attention_flops(-1, 2, 3, 4)
    with pytest.raises(ValueError, match="d must be an integer"):
        attention_flops(1, 2, 3.5, 4)
