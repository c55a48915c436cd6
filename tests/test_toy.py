"""Unit tests for app.visuals.toy: the tokenizer, the toy lexicon's embeddings, and the models built on them.

Numbers are checked against naive loops and against the engine's own MultiHeadAttention call.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from app.engine import MultiHeadAttention
from app.visuals.toy import (
    FEATURE_COUNT,
    FEATURE_INDEX,
    FEATURE_NAMES,
    LEXICON,
    NOUN_HEAD,
    VERB_HEAD,
    averaging_self_attention,
    column_names,
    constructed_multi_head,
    embed,
    lookup,
    project_qkv,
    tokenize,
    unknown_words,
)

ROOT = Path(__file__).resolve().parent.parent
SENTENCE = "the cat sat on the mat while the dog ran"


def naive_softmax(row):
    peak = max(row)
    exps = [math.exp(value - peak) for value in row]
    return [value / sum(exps) for value in exps]


# --- tokenizer ------------------------------------------------------------------------------------


def test_tokenize_lowercases_and_drops_punctuation():
    assert tokenize("The Cat, sat -- on the MAT!") == ["the", "cat", "sat", "on", "the", "mat"]
    assert tokenize("don't stop") == ["don't", "stop"]


def test_tokenize_refuses_too_many_and_too_few_words():
    with pytest.raises(ValueError, match="has 13 words; use at most 12"):
        tokenize(" ".join(["cat"] * 13))
    assert len(tokenize(" ".join(["cat"] * 12))) == 12
    with pytest.raises(ValueError, match="has 0 words; type at least 1"):
        tokenize("?!, ...")
    with pytest.raises(ValueError, match="keys has 1 word; type at least 2"):
        tokenize("cat", 10, min_tokens=2, name="keys")


# --- lexicon and embeddings -----------------------------------------------------------------------


def test_lexicon_size_and_categories():
    assert len(LEXICON) >= 60
    assert lookup("Cat").category == "noun" and lookup("cat").known
    assert lookup("ran").category == "verb"
    assert lookup("the").category == "determiner"
    assert lookup("on").category == "preposition"
    cat = lookup("cat").features
    assert cat[FEATURE_INDEX["noun"]] == 1 and cat[FEATURE_INDEX["animal"]] == 1
    assert cat[FEATURE_INDEX["verb"]] == 0 and cat[FEATURE_INDEX["vehicle"]] == 0


@pytest.mark.parametrize(
    ("query", "nearest", "others"),
    [
        ("kitten", "cat", ["dog", "car", "tree", "sky"]),
        ("puppy", "dog", ["cat", "car", "tree", "sky"]),
        ("truck", "car", ["cat", "dog", "tree", "sky"]),
        ("queen", "woman", ["man", "cat", "house"]),
    ],
)
def test_related_words_share_the_most_features(query, nearest, others):
    features = lookup(query).features
    best = float(features @ lookup(nearest).features)
    for other in others:
        assert best > float(features @ lookup(other).features), other


def test_unknown_words_are_marked_and_deterministic():
    info = lookup("zorblax")
    assert not info.known and info.category == "unknown"
    assert info.features.shape == (FEATURE_COUNT,)
    assert np.all((info.features >= 0) & (info.features < 1))
    assert np.array_equal(lookup("zorblax").features, info.features)
    assert not np.array_equal(lookup("quux").features, info.features)
    assert unknown_words(["the", "zorblax", "cat", "zorblax", "quux"]) == ["zorblax", "quux"]


@pytest.mark.slow
def test_unknown_word_features_are_the_same_in_another_process():
    # A different PYTHONHASHSEED changes Python's hash(); the toy features must not depend on it.
    code = "from app.visuals.toy import embed; print(repr(embed(['zorblax', 'fox'], 20).tolist()))"
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    completed = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                               text=True, check=True, timeout=60)
    assert completed.stdout.strip() == repr(embed(["zorblax", "fox"], 20).tolist())


def test_embed_keeps_the_first_features_and_pads_with_zeros():
    tokens = ["the", "cat", "zorblax"]
    full = embed(tokens, FEATURE_COUNT)
    assert full.shape == (3, FEATURE_COUNT)
    for row, token in enumerate(tokens):
        assert np.array_equal(full[row], lookup(token).features)
    narrow = embed(tokens, 6)
    assert np.array_equal(narrow, full[:, :6])
    wide = embed(tokens, FEATURE_COUNT + 4)
    assert np.array_equal(wide[:, :FEATURE_COUNT], full)
    assert not wide[:, FEATURE_COUNT:].any()
    assert column_names(6) == FEATURE_NAMES[:6]
    assert column_names(FEATURE_COUNT + 2)[-2:] == (f"dim {FEATURE_COUNT + 1}", f"dim {FEATURE_COUNT + 2}")
    for bad in (0, -3, 2.5, True):
        with pytest.raises(ValueError, match="d_model must be a whole number"):
            embed(tokens, bad)


# --- projections ------------------------------------------------------------------------------------


def test_project_qkv_is_x_times_w_with_a_seeded_bound():
    x = embed(tokenize("the cat sat on the mat"), 6)
    projections = project_qkv(x, 4, seed=3)
    bound = math.sqrt(6 / (6 + 4))
    for weight, product in ((projections.w_q, projections.q), (projections.w_k, projections.k),
                            (projections.w_v, projections.v)):
        assert weight.shape == (6, 4) and product.shape == (6, 4)
        assert np.abs(weight).max() <= bound
        naive = [[sum(x[i, m] * weight[m, j] for m in range(6)) for j in range(4)] for i in range(6)]
        np.testing.assert_allclose(product, naive, rtol=0, atol=1e-12)
    again = project_qkv(x, 4, seed=3)
    assert np.array_equal(again.w_q, projections.w_q)
    assert not np.array_equal(project_qkv(x, 4, seed=4).w_q, projections.w_q)
    assert not np.array_equal(projections.w_q, projections.w_k)


# --- the constructed multi-head model ---------------------------------------------------------------


@pytest.mark.parametrize(("d_model", "num_heads"), [(16, 2), (2, 2), (12, 3), (64, 8), (8, 4)])
def test_noun_head_and_verb_head_relate_their_part_of_speech(d_model, num_heads):
    tokens = tokenize(SENTENCE)
    categories = [lookup(token).category for token in tokens]
    x = embed(tokens, d_model)
    model = constructed_multi_head(d_model, num_heads)
    _, weights = model(x)  # the engine's own forward pass, (h, N, N)
    for head, role in ((NOUN_HEAD, "noun"), (VERB_HEAD, "verb")):
        for query, category in enumerate(categories):
            row = weights[head, query]
            if category == role:
                assert categories[int(np.argmax(row))] == role, (head, tokens[query])
                on_role = sum(w for w, c in zip(row, categories) if c == role)
                assert on_role > 0.9
            else:
                # A query outside the head's role has a zero query vector: even weights.
                np.testing.assert_allclose(row, 1 / len(tokens), atol=1e-12)


def test_single_head_model_has_only_the_noun_head():
    x = embed(tokenize(SENTENCE), 4)
    _, weights = constructed_multi_head(4, 1)(x)
    assert weights.shape == (1, 10, 10)
    np.testing.assert_allclose(weights[0, 2], 0.1, atol=1e-12)  # "sat" is no noun: even weights


def test_random_heads_are_seeded():
    x = embed(tokenize(SENTENCE), 16)
    a = constructed_multi_head(16, 4, seed=1)
    b = constructed_multi_head(16, 4, seed=1)
    c = constructed_multi_head(16, 4, seed=2)
    assert np.array_equal(a(x)[1], b(x)[1])
    differs = np.abs(a(x)[1] - c(x)[1]).max(axis=(1, 2))  # per head
    assert differs[0] < 1e-12 and differs[1] < 1e-12  # the constructed heads do not depend on the seed
    assert differs[2] > 1e-3 and differs[3] > 1e-3
    with pytest.raises(ValueError, match="not divisible"):
        constructed_multi_head(16, 3)


def test_the_constructed_model_divides_its_scores_by_the_temperature():
    tokens = tokenize(SENTENCE)
    x = embed(tokens, 16)
    model = constructed_multi_head(16, 4)
    _, weights = model(x)
    _, same = model(x, temperature=1.0)
    np.testing.assert_array_equal(weights, same)  # temperature 1 is the plain forward pass
    trace = model.forward_detailed(x)
    for temperature in (0.3, 5.0):
        _, tempered = model(x, temperature=temperature)
        for head in range(4):
            for query in range(len(tokens)):
                # trace.scores are q·k / sqrt(d_k); the temperature divides them once more.
                naive = naive_softmax([s / temperature for s in trace.scores[head, query]])
                np.testing.assert_allclose(tempered[head, query], naive, rtol=1e-12, atol=1e-15)
    # Sharper below 1, flatter above: the noun head's strongest weight rises as the temperature falls.
    peaks = [model(x, temperature=t)[1][NOUN_HEAD].max() for t in (5.0, 1.0, 0.3)]
    assert peaks[0] < peaks[1] < peaks[2]


def test_the_constructed_model_takes_a_causal_mask():
    from app.engine import causal_mask

    x = embed(tokenize(SENTENCE), 16)
    _, weights = constructed_multi_head(16, 2)(x, mask=causal_mask(10), temperature=0.5)
    assert np.all(weights[:, ~causal_mask(10)] == 0.0)
    np.testing.assert_allclose(weights.sum(axis=-1), 1.0, rtol=1e-12)


def test_averaging_self_attention_outputs_weighted_averages_of_the_inputs():
    x = embed(tokenize("the dog chased the cat"), 8)
    model = averaging_self_attention(8, seed=0)
    assert isinstance(model, MultiHeadAttention) and model.num_heads == 1
    output, weights = model(x)
    np.testing.assert_allclose(output, weights[0] @ x, rtol=0, atol=1e-12)
    assert weights.max() > 0.3  # random queries prefer some keys: not a flat average


def test_words_the_figures_font_cannot_draw_are_refused_with_their_code_points():
    # Each would be an empty box on the figure, under a label the alt text calls a word.
    with pytest.raises(ValueError, match=r"the sentence holds 日 \(U\+65E5\), 本 \(U\+672C\), which the figures' font "
                                         r"cannot draw"):
        tokenize("日本 cat")
    assert tokenize("Кошка καλη cat") == ["кошка", "καλη", "cat"]  # Cyrillic and Greek: DejaVu Sans has them
    assert tokenize("日本 cat", drawn=False) == ["日本", "cat"]  # words that are not drawn as themselves
