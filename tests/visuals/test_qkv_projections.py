"""The "qkv-projections" visual: queries, keys and values are X·W_Q, X·W_K and X·W_V."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.visuals import get_kind
from app.visuals.toy import embed, project_qkv, tokenize, unknown_words

from .helpers import SENTENCE, computed, heatmap_axes, naive_matmul, row_labels, tick_texts, words

TITLES = {"input embeddings X\n(the layer's input, 6×6)", "$W_Q$\n(6×4)", "$W_K$\n(6×4)", "$W_V$\n(6×4)",
          "Q = X·$W_Q$\n(6×4)", "K = X·$W_K$\n(6×4)", "V = X·$W_V$\n(6×4)"}


def largest_entries(product: np.ndarray, tokens: list[str]) -> set[tuple[str, str, int]]:
    """(value as written, token, column) of every entry whose |value| is the largest (ties included)."""
    peak = np.abs(product).max()
    return {(f"{product[i, j]:+.2f}", tokens[i], j + 1) for i, j in np.ndindex(product.shape)
            if abs(product[i, j]) >= peak - 1e-12}


def test_alt_and_figure_name_shapes_and_largest_entries(default_renders):
    alt = default_renders["qkv-projections"].rendered.alt
    tokens = tokenize("the cat sat on the mat")
    x = embed(tokens, 6)
    weights = project_qkv(x, 4, seed=0)
    assert "Input embeddings X (6×6" in alt and "(each 6×4)" in alt and "each 6×4, one row per token" in alt
    limit = 0.0
    for name, w in (("Q", weights.w_q), ("K", weights.w_k), ("V", weights.w_v)):
        product = naive_matmul(x, w)
        row, column = max(np.ndindex(product.shape), key=lambda ij: abs(product[ij]))
        assert f"{name} {product[row, column]:+.2f} (token '{tokens[row]}', column {column + 1})" in alt
        limit = max(limit, np.abs(product).max(), np.abs(w).max())
    limit = max(limit, np.abs(x).max())
    assert f"from {-limit:.2f} to {limit:.2f}" in alt
    caption = default_renders["qkv-projections"].rendered.caption
    assert "constructed illustration, not a trained model" in caption.lower() and "seed 0" in caption

    _, _, figure, _, _ = computed("qkv-projections", {})
    axes = {ax.get_title(): ax for ax in heatmap_axes(figure)}
    assert set(axes) == TITLES
    for ax in axes.values():  # one diverging scale, symmetric about 0, from all seven matrices
        assert ax.images[0].get_clim() == pytest.approx((-limit, limit), rel=1e-12)
    x_axes = axes["input embeddings X\n(the layer's input, 6×6)"]
    assert tick_texts(x_axes.get_yticklabels()) == tokens
    assert tick_texts(x_axes.get_xticklabels()) == ["noun", "verb", "determiner", "adjective", "preposition",
                                                    "pronoun"]
    assert row_labels(axes["Q = X·$W_Q$\n(6×4)"]) == tokens
    np.testing.assert_allclose(axes["Q = X·$W_Q$\n(6×4)"].images[0].get_array(), naive_matmul(x, weights.w_q),
                               atol=1e-12)


@settings(max_examples=30, deadline=None)
@given(SENTENCE, st.integers(2, 16), st.integers(1, 16), st.integers(0, 9999))
def test_shapes_largest_entries_and_scale_hold_for_every_input(sentence, d_model, d_k, seed):
    alt, caption = words("qkv-projections", {"sentence": sentence, "d_model": d_model, "d_k": d_k, "seed": seed})
    tokens = tokenize(sentence)
    n = len(tokens)
    x = embed(tokens, d_model)
    weights = project_qkv(x, d_k, seed=seed)
    assert f"Input embeddings X ({n}×{d_model}:" in alt and f"(each {d_model}×{d_k})" in alt
    assert f"each {n}×{d_k}, one row per token" in alt and f"seed {seed}" in alt and f"seed {seed}" in caption
    limit = np.abs(x).max()
    for name, w in (("Q", weights.w_q), ("K", weights.w_k), ("V", weights.w_v)):
        product = naive_matmul(x, w)
        value, token, column = re.search(rf"\b{name} ([+-]\d+\.\d\d) \(token '([^']+)', column (\d+)\)", alt).groups()
        assert (value, token, int(column)) in largest_entries(product, tokens), name
        limit = max(limit, np.abs(product).max(), np.abs(w).max())
    assert f"from {-limit:.2f} to {limit:.2f}" in alt
    unknown = unknown_words(tokens)
    assert ("pseudo-random features: " + ", ".join(unknown)) in alt if unknown else "pseudo-random" not in alt


def test_the_scale_and_the_numbers_in_the_cells_follow_the_sizes():
    kind = get_kind("qkv-projections")
    params = kind.parse({"sentence": "the quick brown fox jumped over the lazy dog", "d_model": 16, "d_k": 16})
    result = kind.compute(params)
    figure = kind.draw(params, result, kind.figure_inches(params))
    for ax in heatmap_axes(figure):
        assert ax.images[0].get_clim() == pytest.approx((-result.limit, result.limit))
        assert not [c for c in ax.collections if getattr(c, "cell_texts", None)]  # too small for numbers
