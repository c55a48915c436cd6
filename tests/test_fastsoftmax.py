"""The engine's optional C softmax kernel (app/engine/_fastsoftmax.c) against the NumPy path.

The kernel computes float32 softmaxes along the last axis when it is built and the CPU has AVX2
and FMA; everything else stays with NumPy. Its weights must be the NumPy path's up to float32
rounding, with the same rules: masked (-inf) keys exactly 0, an all-masked row all 0, a row with
NaN or +inf left to NumPy. tests/test_engine.py runs the engine's tests with it on and off.
"""

from __future__ import annotations

import platform
import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from numpy.testing import assert_allclose, assert_array_equal

import app.engine.attention as attention
from app.engine import MultiHeadAttention, scaled_dot_product_attention


def _cpu_has_avx2_and_fma() -> bool:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            flags = next((line.split(":", 1)[1].split() for line in cpuinfo if line.startswith("flags")), [])
    except OSError:
        return False
    return "avx2" in flags and "fma" in flags


needs_kernel = pytest.mark.skipif(
    not attention.use_kernel,
    reason="the C kernel is not built or not supported here: these run where it was built "
    "(a C compiler at install) on x86-64 with AVX2 and FMA, as in CI",
)


def test_kernel_is_built_wherever_it_can_run():
    # The build step is optional (no compiler: the package still installs), so a silent build
    # failure would quietly hand every softmax back to NumPy. Where it can run, it must be there.
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "AMD64") or not _cpu_has_avx2_and_fma():
        pytest.skip("the kernel runs on x86-64 Linux with AVX2 and FMA only; this test runs there (as in CI)")
    assert attention._fastsoftmax is not None, "app/engine/_fastsoftmax.c was not built: is a C compiler installed?"
    assert attention._fastsoftmax.supported()
    assert attention.use_kernel


def numpy_softmax(x: np.ndarray) -> np.ndarray:
    """The NumPy path's float32 softmax along the last axis."""
    return attention._softmax_in_place(np.array(x, dtype=np.float32), axis=-1)


def kernel_softmax(x: np.ndarray) -> np.ndarray:
    return attention._kernel_softmax_rows(np.array(x, dtype=np.float32, order="C"))


def float64_softmax(x: np.ndarray) -> np.ndarray:
    return attention._softmax_in_place(np.array(x, dtype=np.float64), axis=-1)


@needs_kernel
@pytest.mark.parametrize("cols", [1, 2, 7, 8, 9, 31, 32, 33, 100, 1024, 1031])
def test_kernel_matches_float64_softmax_to_float32_rounding(cols):
    # Every row length: whole vectors of 8, the unrolled 32, and each tail length.
    x = np.random.default_rng(cols).standard_normal((37, cols)).astype(np.float32) * 4
    weights = kernel_softmax(x)
    reference = float64_softmax(x)
    assert weights.dtype == np.float32
    assert_allclose(weights, reference, rtol=5e-6, atol=1e-9)
    assert_allclose(weights.sum(axis=-1), 1.0, rtol=1e-5)
    assert_allclose(weights, numpy_softmax(x), rtol=5e-6, atol=1e-9)


@needs_kernel
def test_kernel_exp_is_accurate_over_its_whole_range():
    # Row [0, t]: weights 1/(1+e^t) and e^t/(1+e^t), so the second weight is exp(t) to within
    # rounding for the t near the bottom of exp's range, where the polynomial and 2^n meet.
    t = np.concatenate([-np.geomspace(1e-6, 87.3, 4000), np.linspace(-87.3, 0, 4001)]).astype(np.float32)
    rows = np.stack([np.zeros_like(t), t], axis=1)
    weights = kernel_softmax(rows)
    expected = np.exp(t.astype(np.float64)) / (1 + np.exp(t.astype(np.float64)))
    assert_allclose(weights[:, 1], expected, rtol=3e-7, atol=0)


@needs_kernel
def test_kernel_keeps_the_masking_rules():
    x = np.random.default_rng(1).standard_normal((6, 45)).astype(np.float32)
    x[0, ::3] = -np.inf  # masked keys: weight exactly 0
    x[1] = -np.inf  # every key masked: all weights 0, not NaN
    x[2, :44] = -np.inf  # one key left, in the tail: weight exactly 1
    x[3, 5] = -200.0  # far below the max: exp underflows to 0
    x[4] = 1e30  # huge equal scores: uniform weights
    x[5, 7] = -1e30
    weights = kernel_softmax(x)
    assert_array_equal(weights[0, ::3], 0.0)
    assert_allclose(weights[0].sum(), 1.0, rtol=1e-6)
    assert_array_equal(weights[1], 0.0)
    assert_array_equal(weights[2, :44], 0.0)
    assert weights[2, 44] == 1.0
    assert weights[3, 5] == 0.0
    assert_allclose(weights[4], 1 / 45, rtol=1e-6)
    assert weights[5, 7] == 0.0
    assert_allclose(weights, numpy_softmax(x), rtol=5e-6, atol=1e-30)


@needs_kernel
def test_rows_with_nan_or_inf_get_the_numpy_result_and_the_rest_the_kernels():
    x = np.random.default_rng(2).standard_normal((7, 20)).astype(np.float32)
    x[1, 3] = np.nan
    x[4, 19] = np.inf  # in the tail of the row
    x[6, 0] = np.inf
    with np.errstate(invalid="ignore"):  # NumPy's inf - inf and NaN - max
        weights = kernel_softmax(x)
        expected = numpy_softmax(x)
    for row in (1, 4, 6):
        assert_array_equal(weights[row], expected[row])  # NaN where NumPy has NaN
    for row in (0, 2, 3, 5):
        assert_allclose(weights[row], float64_softmax(x[row]), rtol=5e-6)


@needs_kernel
@settings(deadline=None, max_examples=60)
@given(
    hnp.arrays(
        np.float32,
        hnp.array_shapes(min_dims=2, max_dims=2, min_side=1, max_side=70),
        elements=st.one_of(
            st.floats(-1e4, 1e4, width=32),
            st.just(float("-inf")),
        ),
    )
)
def test_kernel_agrees_with_numpy_on_any_scores(x):
    weights = kernel_softmax(x)
    expected = numpy_softmax(x)
    assert_array_equal(weights == 0, expected < 1e-37)  # the same zeros, up to exp's underflow
    assert_allclose(weights, expected, rtol=1e-5, atol=1e-37)


@needs_kernel
def test_kernel_refuses_what_it_cannot_read():
    kernel = attention._fastsoftmax.softmax_rows
    with pytest.raises(TypeError, match="float32"):
        kernel(np.zeros((2, 3)), 3)
    with pytest.raises(ValueError, match="whole number of rows"):
        kernel(np.zeros(7, np.float32), 3)
    with pytest.raises(ValueError, match="at least 1"):
        kernel(np.zeros(3, np.float32), 0)
    with pytest.raises((TypeError, BufferError, ValueError)):
        kernel(np.zeros((3, 4), np.float32)[:, ::2], 2)  # not contiguous
    read_only = np.zeros((2, 3), np.float32)
    read_only.setflags(write=False)
    with pytest.raises((TypeError, BufferError, ValueError)):
        kernel(read_only, 3)


def test_only_contiguous_float32_at_temperature_1_goes_to_the_kernel(monkeypatch):
    monkeypatch.setattr(attention, "use_kernel", True)
    scores = np.zeros((3, 4), np.float32)
    assert attention._kernel_applies(scores)
    assert not attention._kernel_applies(scores, temperature=0.5)
    assert not attention._kernel_applies(scores.astype(np.float64))
    assert not attention._kernel_applies(scores.T)
    assert not attention._kernel_applies(np.zeros((3, 0), np.float32))
    monkeypatch.setattr(attention, "use_kernel", False)
    assert not attention._kernel_applies(scores)


@needs_kernel
def test_the_kernel_runs_in_many_threads_at_once():
    # It releases the GIL (a threaded server's requests run it side by side): each thread's
    # result must be the one it gets alone.
    x = np.random.default_rng(3).standard_normal((4, 200, 300)).astype(np.float32)
    alone = [kernel_softmax(item) for item in x]
    results = [None] * 8

    def run(index):
        results[index] = kernel_softmax(x[index % 4])

    threads = [threading.Thread(target=run, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for index, result in enumerate(results):
        assert_array_equal(result, alone[index % 4])


@needs_kernel
@pytest.mark.parametrize("n", [16, 300])
def test_multihead_attention_with_and_without_the_kernel(monkeypatch, n):
    # Both paths of the module (small and general) against the NumPy-only engine.
    mha = MultiHeadAttention.init(32, 4, seed=4, dtype=np.float32)
    x = np.random.default_rng(5).standard_normal((n, 32)).astype(np.float32)
    mask = np.tril(np.ones((n, n), bool))
    output, weights = mha(x, mask=mask)
    monkeypatch.setattr(attention, "use_kernel", False)
    numpy_output, numpy_weights = mha(x, mask=mask)
    assert_allclose(weights, numpy_weights, rtol=1e-5, atol=1e-7)
    assert_allclose(output, numpy_output, rtol=1e-5, atol=1e-6)
    assert_array_equal(weights[:, 0, 1:], 0.0)


@needs_kernel
def test_attention_weights_equal_softmax_of_the_scores():
    # softmax() takes the same path as the attention functions, so they agree exactly.
    q, k, v = (np.random.default_rng(6).standard_normal(shape).astype(np.float32) for shape in ((5, 8), (9, 8), (9, 3)))
    _, weights = scaled_dot_product_attention(q, k, v)
    scores = (q * np.float32(1 / np.sqrt(8))) @ k.T
    assert_array_equal(weights, attention.softmax(scores))
