"""Tests for the attention visuals: soft-lookup, qkv-projections, multi-head, order-blindness and
attention-playground. Alt-text numbers are checked against naive loops or a separate engine path.
"""

from __future__ import annotations

import math
import re
import typing

import numpy as np
import pytest
from pydantic import ValidationError

from app.engine import causal_mask
from app.engine.toy import (
    FEATURE_INDEX,
    averaging_self_attention,
    constructed_multi_head,
    embed,
    lookup,
    project_qkv,
    tokenize,
)
from app.plots.attention_playground import draw_attention_playground
from app.plots.multi_head import draw_multi_head
from app.plots.order_blindness import draw_order_blindness, format_difference
from app.plots.qkv_projections import draw_qkv_projections
from app.plots.soft_lookup import draw_soft_lookup
from app.visuals import check_visual, get_kind
from app.visuals.kinds import multi_head, order_blindness, qkv_projections, soft_lookup

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

# The seed questions' params, written out as the bank would (they are also the defaults).
SEED_PARAMS = {
    "soft-lookup": {"queries": "kitten truck", "keys": "cat dog car tree sky", "temperature": 1.0},
    "qkv-projections": {"sentence": "the cat sat on the mat", "d_model": 6, "d_k": 4, "seed": 0},
    "multi-head": {"sentence": "the cat sat on the mat while the dog ran", "num_heads": 2, "d_model": 16,
                   "temperature": 1.0},
    "order-blindness": {"sentence": "the dog chased the cat", "permutation": "reverse", "positional": "off",
                        "d_model": 8},
    "attention-playground": {"sentence": "the cat sat on the mat", "num_heads": 2, "d_model": 16,
                             "temperature": 1.0, "causal": "off"},
}
LEARN = {
    "soft-lookup": "/learn/attention#soft-lookup",
    "qkv-projections": "/learn/attention#projections",
    "multi-head": "/learn/attention#multi-head",
    "order-blindness": "/learn/position-encoding#order",
    "attention-playground": "/learn/attention#playground",
}
TWELVE_WORDS = "the quick brown fox jumped over the lazy dog and the cat"
WORST_CASE = {
    "soft-lookup": {"queries": "kitten truck queen river sky zorblax",
                    "keys": "cat dog car tree sky puppy truck house bank sun", "temperature": 0.05},
    "qkv-projections": {"sentence": TWELVE_WORDS, "d_model": 16, "d_k": 16, "seed": 9999},
    "multi-head": {"sentence": TWELVE_WORDS, "num_heads": 8, "d_model": 64, "temperature": 0.05},
    "order-blindness": {"sentence": TWELVE_WORDS, "permutation": "swap-ends", "positional": "on", "d_model": 64},
    "attention-playground": {"sentence": TWELVE_WORDS, "num_heads": 8, "d_model": 64, "temperature": 20,
                             "causal": "on"},
}


@pytest.fixture(scope="module")
def default_renders():
    """Each kind rendered from {} and again from the seed question's params."""
    renders = {}
    for name, seed_params in SEED_PARAMS.items():
        kind = get_kind(name)
        renders[name] = (kind.render(kind.parse({})), kind.render(kind.parse(seed_params)))
    return renders


def naive_softmax(row):
    peak = max(row)
    exps = [math.exp(value - peak) for value in row]
    total = sum(exps)
    return [value / total for value in exps]


def naive_matmul(a, b):
    return np.array([[sum(a[i, m] * b[m, j] for m in range(a.shape[1])) for j in range(b.shape[1])]
                     for i in range(a.shape[0])])


def first_max(matrix):
    """(value, row, column) of the first largest entry in row-major order, by a plain loop."""
    best = (-math.inf, -1, -1)
    for i, row in enumerate(matrix):
        for j, value in enumerate(row):
            if value > best[0]:
                best = (float(value), i, j)
    return best


def heatmap_axes(figure):
    return [ax for ax in figure.axes if ax.images]


def tick_texts(labels):
    return [label.get_text() for label in labels]


def row_labels(ax):
    """The y tick labels' texts, including ones hidden beside a neighbouring panel."""
    return [tick.label1.get_text() for tick in ax.yaxis.get_major_ticks()]


# --- (1) every kind: registered, deterministic PNG, seed params = defaults ---------------------------


@pytest.mark.parametrize("name", list(SEED_PARAMS))
def test_renders_deterministic_png(name, default_renders):
    from_defaults, from_seed_params = default_renders[name]
    assert from_defaults.mimetype == "image/png"
    assert from_defaults.image.startswith(PNG_SIGNATURE)
    # A second render (from the same values, spelled out) gives identical bytes and alt text.
    assert from_seed_params.image == from_defaults.image
    assert from_seed_params.alt == from_defaults.alt
    assert "constructed illustration, not a trained model" in from_defaults.caption.lower()


@pytest.mark.parametrize("name", list(SEED_PARAMS))
def test_kind_metadata_and_controls_match_the_bounds(name):
    kind = get_kind(name)
    assert kind.name == name and kind.learn == LEARN[name] and kind.title
    fields = kind.Params.model_fields
    for control in kind.controls:
        assert control.label, control.name
        field = fields[control.name]
        if control.type in ("int", "float"):
            ge = next(m.ge for m in field.metadata if hasattr(m, "ge"))
            le = next(m.le for m in field.metadata if hasattr(m, "le"))
            assert (control.min, control.max) == (ge, le), control.name
            assert control.step == (1 if control.type == "int" else 0.05)
        elif control.type == "text":
            assert control.max_length == next(m.max_length for m in field.metadata if hasattr(m, "max_length"))
        else:
            assert tuple(value for value, _ in control.choices) == typing.get_args(field.annotation)
    # Every field is bounded: parsing {} works and the defaults are the seed question's params.
    assert kind.parse({}).model_dump() == kind.parse(SEED_PARAMS[name]).model_dump()


# --- (2, 3) soft-lookup ------------------------------------------------------------------------------


def naive_lookup(queries, keys, temperature):
    """Soft weights softmax(x·y / T) over the words' feature vectors, and the best key, by plain loops."""
    rows = []
    for query in queries:
        q = lookup(query).features
        scores = [sum(a * b for a, b in zip(q, lookup(key).features)) / temperature for key in keys]
        rows.append(naive_softmax(scores))
    return rows


def test_soft_lookup_alt_names_the_real_weights_and_outputs(default_renders):
    alt = default_renders["soft-lookup"][0].alt
    keys = ["cat", "dog", "car", "tree", "sky"]
    weights = naive_lookup(["kitten", "truck"], keys, 1.0)
    assert "temperature 1.0" in alt
    for query, row in zip(["kitten", "truck"], weights):
        best = max(row)
        best_key = keys[row.index(best)]
        assert f"Query '{query}' puts its largest weight, {best:.2f}, on key '{best_key}'" in alt
        assert f"hard lookup picks '{best_key}' with weight 1" in alt
        values = [[lookup(key).features[FEATURE_INDEX[f]] for f in soft_lookup.VALUE_FEATURES] for key in keys]
        output = [sum(w * v[f] for w, v in zip(row, values)) for f in range(len(soft_lookup.VALUE_FEATURES))]
        feature = output.index(max(output))
        hard = values[row.index(best)][feature]
        assert f"soft output {soft_lookup.VALUE_FEATURES[feature]} {output[feature]:.2f} vs hard {hard:.2f}" in alt
    # The seed's picture: kitten finds cat and truck finds car.
    assert "on key 'cat'" in alt and "on key 'car'" in alt


def test_soft_lookup_figure_shows_weights_in_zero_one_with_labelled_axes():
    params = soft_lookup.SoftLookupParams(queries="kitten truck", keys="cat dog car tree sky", temperature=2.0)
    result = soft_lookup.soft_lookup_result(params)
    figure, alt = draw_soft_lookup(result)
    axes = heatmap_axes(figure)
    assert len(axes) == 4
    for ax in axes:
        assert ax.images[0].get_clim() == (0.0, 1.0)
        assert ax.get_ylabel() == "query"
        assert tick_texts(ax.get_yticklabels()) == ["kitten", "truck"]
    soft, hard = axes[0], axes[1]
    assert soft.get_title() == "soft: softmax weights (T = 2.0)"
    assert soft.get_xlabel() == "key" and hard.get_xlabel() == "key"
    assert tick_texts(soft.get_xticklabels()) == ["cat", "dog", "car", "tree", "sky"]
    np.testing.assert_allclose(soft.images[0].get_array(), naive_lookup(["kitten", "truck"],
                               ["cat", "dog", "car", "tree", "sky"], 2.0), rtol=1e-12)
    assert np.array_equal(np.asarray(hard.images[0].get_array()), [[1, 0, 0, 0, 0], [0, 0, 1, 0, 0]])
    assert tick_texts(axes[2].get_xticklabels()) == list(soft_lookup.VALUE_FEATURES)
    assert "temperature 2.0" in alt


def test_soft_lookup_approaches_hard_lookup_as_temperature_falls():
    cold = soft_lookup.soft_lookup_result(soft_lookup.SoftLookupParams(temperature=0.05))
    warm = soft_lookup.soft_lookup_result(soft_lookup.SoftLookupParams(temperature=20))
    np.testing.assert_allclose(cold.soft_weights, cold.hard_weights, atol=1e-7)
    np.testing.assert_allclose(cold.soft_output, cold.hard_output, atol=1e-7)
    assert np.abs(warm.soft_weights - 0.2).max() < 0.03  # flattened towards 1/5 per key


def test_soft_lookup_alt_reports_ties_and_unknown_words():
    params = soft_lookup.SoftLookupParams(queries="ran zorblax", keys="cat dog car")
    result = soft_lookup.soft_lookup_result(params)
    _, alt = draw_soft_lookup(result)
    # 'ran' shares no feature with the nouns: every score is 0, so the weights are even.
    assert "Query 'ran' spreads its weight evenly (0.33 on each key)" in alt
    assert "hard lookup picks the first key, 'cat'" in alt
    assert "pseudo-random features: zorblax" in alt


# --- (2, 3) qkv-projections --------------------------------------------------------------------------


def test_qkv_alt_and_figure_name_shapes_and_largest_entries(default_renders):
    alt = default_renders["qkv-projections"][0].alt
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

    result = qkv_projections.qkv_result(qkv_projections.QkvProjectionsParams())
    figure, _ = draw_qkv_projections(result)
    axes = {ax.get_title(): ax for ax in heatmap_axes(figure)}
    assert set(axes) == {"input embeddings X\n(the layer's input, 6×6)", "$W_Q$\n(6×4)", "$W_K$\n(6×4)",
                         "$W_V$\n(6×4)", "Q = X·$W_Q$\n(6×4)", "K = X·$W_K$\n(6×4)", "V = X·$W_V$\n(6×4)"}
    for ax in axes.values():  # one diverging scale, symmetric about 0, from all seven matrices
        assert ax.images[0].get_clim() == pytest.approx((-limit, limit), rel=1e-12)
    x_axes = axes["input embeddings X\n(the layer's input, 6×6)"]
    assert tick_texts(x_axes.get_yticklabels()) == tokens
    assert tick_texts(x_axes.get_xticklabels()) == ["noun", "verb", "determiner", "adjective", "preposition",
                                                    "pronoun"]
    assert row_labels(axes["Q = X·$W_Q$\n(6×4)"]) == tokens
    np.testing.assert_allclose(axes["Q = X·$W_Q$\n(6×4)"].images[0].get_array(), naive_matmul(x, weights.w_q),
                               atol=1e-12)


# --- (2, 3) multi-head and attention-playground ---------------------------------------------------------


def naive_head_summary(tokens, weights, role):
    """Mean weight the role's queries put on the role's keys, by loops."""
    members = [i for i, token in enumerate(tokens) if lookup(token).category == role]
    return sum(sum(weights[i][j] for j in members) for i in members) / len(members)


def test_multi_head_alt_names_each_heads_real_numbers(default_renders):
    alt = default_renders["multi-head"][0].alt
    tokens = tokenize("the cat sat on the mat while the dog ran")
    # An independent path: the engine module's own forward pass (temperature 1).
    _, weights = constructed_multi_head(16, 2)(embed(tokens, 16))
    noun_share = naive_head_summary(tokens, weights[0], "noun")
    verb_share = naive_head_summary(tokens, weights[1], "verb")
    assert noun_share > 0.9 and verb_share > 0.9
    assert f"Head 1 (nouns↔nouns): the nouns (cat, mat, dog) put on average {noun_share:.2f} of their weight on nouns" in alt
    assert f"Head 2 (verbs↔verbs): the verbs (sat, ran) put on average {verb_share:.2f} of their weight on verbs" in alt
    for head in (0, 1):
        best, query, key = first_max(weights[head])
        assert f"strongest weight {best:.2f}, query '{tokens[query]}' → key '{tokens[key]}'" in alt
    assert "temperature 1.0" in alt and "Causal" not in alt


def test_multi_head_temperature_and_random_head_in_alt_and_figure():
    params = multi_head.MultiHeadParams(num_heads=3, d_model=12, temperature=0.5)
    result = multi_head.multi_head_result(params.sentence, params.num_heads, params.d_model, params.temperature)
    figure, alt = draw_multi_head(result)
    tokens = tokenize(params.sentence)
    trace = constructed_multi_head(12, 3).forward_detailed(embed(tokens, 12))
    for head in range(3):
        naive = [naive_softmax([s / 0.5 for s in row]) for row in trace.scores[head]]
        np.testing.assert_allclose(result.weights[head], naive, rtol=1e-12, atol=1e-15)
        best, query, key = first_max(naive)
        assert f"strongest weight {best:.2f}, query '{tokens[query]}' → key '{tokens[key]}'" in alt
    assert "Head 3 (random)" in alt and "temperature 0.5" in alt
    axes = heatmap_axes(figure)
    assert [ax.get_title() for ax in axes] == ["head 1: nouns↔nouns", "head 2: verbs↔verbs", "head 3 (random)"]
    assert axes[0].get_ylabel() == "query"
    for ax in axes:
        assert ax.images[0].get_clim() == (0.0, 1.0)
        assert ax.get_xlabel() == "key"
        assert tick_texts(ax.get_xticklabels()) == tokens
        assert row_labels(ax) == tokens
    assert tick_texts(axes[0].get_yticklabels()) == tokens  # shown on the row's first heatmap


def test_playground_causal_mask_zeroes_and_hatches_the_future():
    kind = get_kind("attention-playground")
    params = kind.parse({"causal": "on"})
    result = multi_head.multi_head_result(params.sentence, params.num_heads, params.d_model, params.temperature,
                                          causal=True)
    tokens = tokenize(params.sentence)
    n = len(tokens)
    future = ~causal_mask(n)
    assert np.all(result.weights[:, future] == 0.0)  # exactly 0, not merely small
    np.testing.assert_allclose(result.weights.sum(axis=-1), 1.0, rtol=1e-12)
    # The engine module with the same mask (its own path, temperature 1) agrees.
    _, engine_weights = constructed_multi_head(16, 2)(embed(tokens, 16), mask=causal_mask(n))
    np.testing.assert_allclose(result.weights, engine_weights, rtol=0, atol=1e-15)

    figure, alt = draw_attention_playground(result)
    for ax in heatmap_axes(figure):
        (hatched,) = [patch for patch in ax.patches if patch.get_hatch()]
        # Exactly the masked cells are covered: test each cell's centre, in data coordinates.
        path = hatched.get_path()
        covered = [[path.contains_point((j, i)) for j in range(n)] for i in range(n)]
        assert np.array_equal(covered, future)
        assert ax.images[0].get_clim() == (0.0, 1.0)
    assert "Causal mask on: each query sees only itself and earlier tokens" in alt
    for head in range(2):
        best, query, key = first_max(engine_weights[head])
        assert f"strongest weight {best:.2f}, query '{tokens[query]}' → key '{tokens[key]}'" in alt


# --- (2, 3) order-blindness -------------------------------------------------------------------------------


def naive_attention_output(x, model):
    """softmax(x W_Q (x W_K)ᵀ / sqrt(d)) x by loops: W_V = W_O = I in this model."""
    q, k = naive_matmul(x, np.asarray(model.w_q)), naive_matmul(x, np.asarray(model.w_k))
    d = x.shape[1]
    out = np.zeros_like(x)
    for i in range(len(x)):
        weights = naive_softmax([sum(q[i, m] * k[j, m] for m in range(d)) / math.sqrt(d) for j in range(len(x))])
        out[i] = sum(w * x[j] for j, w in enumerate(weights))
    return out


@pytest.mark.parametrize("positional", ["off", "on"])
def test_order_blindness_reports_the_real_difference(positional, default_renders):
    from app.engine import sinusoidal_positional_encoding

    tokens = tokenize("the dog chased the cat")
    order = [4, 3, 2, 1, 0]
    x, x_permuted = embed(tokens, 8), embed([tokens[i] for i in order], 8)
    if positional == "on":
        encoding = sinusoidal_positional_encoding(5, 8)
        x, x_permuted = x + encoding, x_permuted + encoding
    model = averaging_self_attention(8, seed=0)
    original, permuted = naive_attention_output(x, model), naive_attention_output(x_permuted, model)
    difference = max(abs(permuted[j, m] - original[order[j], m]) for j in range(5) for m in range(8))

    if positional == "off":
        alt = default_renders["order-blindness"][0].alt
    else:
        params = get_kind("order-blindness").parse({"positional": "on"})
        _, alt = draw_order_blindness(order_blindness.order_blindness_result(params))
    assert "'the dog chased the cat'" in alt and "'cat the chased dog the'" in alt
    stated = float(re.search(r"max \|difference\| = ([0-9.e+-]+)", alt).group(1).rstrip("."))
    if positional == "off":
        assert difference < 1e-12 and stated < 1e-12
        assert "match the original" in alt
    else:
        assert difference > 0.1
        assert stated == pytest.approx(difference, abs=5e-4)  # written with 3 decimals
        assert "depend on word order" in alt


def test_order_blindness_figure_shares_one_symmetric_scale():
    params = order_blindness.OrderBlindnessParams(permutation="rotate", positional="on")
    result = order_blindness.order_blindness_result(params)
    figure, _ = draw_order_blindness(result)
    axes = heatmap_axes(figure)
    assert len(axes) == 3
    limit = max(np.abs(result.output).max(), np.abs(result.permuted_output).max(), np.abs(result.difference).max())
    for ax in axes:
        assert ax.images[0].get_clim() == pytest.approx((-limit, limit))
        assert ax.get_xlabel() == "output feature"
    tokens = tokenize(params.sentence)
    assert tick_texts(axes[0].get_yticklabels()) == tokens
    assert tick_texts(axes[1].get_yticklabels()) == tokens[1:] + tokens[:1]  # rotated left by one
    assert tick_texts(axes[2].get_yticklabels()) == tokens
    written = [text.get_text() for text in axes[2].texts]
    assert written == [f"max |difference|\n= {format_difference(result.max_abs_difference)}"]


@pytest.mark.parametrize(
    ("name", "length", "expected"),
    [("reverse", 4, [3, 2, 1, 0]), ("rotate", 4, [1, 2, 3, 0]), ("swap-ends", 4, [3, 1, 2, 0]),
     ("swap-ends", 1, [0])],
)
def test_permutations(name, length, expected):
    assert order_blindness.permutation_order(name, length).tolist() == expected


def test_format_difference():
    assert format_difference(0.0) == "0"
    assert format_difference(1.7e-16) == "1.7e-16"
    assert format_difference(1.5899) == "1.590"


# --- (4, 5) validation ---------------------------------------------------------------------------------

BAD_PARAMS = [
    ("soft-lookup", {"queries": "a b c d e f g"}, "queries has 7 words; use at most 6"),
    ("soft-lookup", {"keys": "cat"}, "keys has 1 word; type at least 2"),
    ("soft-lookup", {"keys": " ".join(["cat"] * 11)}, "keys has 11 words; use at most 10"),
    ("soft-lookup", {"queries": "?!"}, "queries has 0 words"),
    ("qkv-projections", {"sentence": " ".join(["cat"] * 13)}, "the sentence has 13 words; use at most 12"),
    ("multi-head", {"num_heads": 3}, "num_heads=3 does not divide d_model=16: "),
    ("multi-head", {"num_heads": 8, "d_model": 12}, "num_heads=8 does not divide d_model=12: "),
    ("attention-playground", {"num_heads": 4, "d_model": 18}, "num_heads=4 does not divide d_model=18: "),
    ("order-blindness", {"sentence": " ".join(["dog"] * 13)}, "the sentence has 13 words; use at most 12"),
]


@pytest.mark.parametrize(("name", "params", "sentence"), BAD_PARAMS)
def test_invalid_params_raise_with_a_sentence_that_says_what_to_fix(name, params, sentence):
    with pytest.raises(ValidationError) as error:
        get_kind(name).parse(params)
    assert sentence in str(error.value)
    problems = check_visual(name, params)
    assert len(problems) == 1 and sentence in problems[0][1]


BOUNDS = [
    ("soft-lookup", {"temperature": 0}, "temperature must be at least 0.05"),
    ("soft-lookup", {"temperature": "25"}, "temperature must be at most 20"),
    ("soft-lookup", {"temperature": "hot"}, "temperature must be a number"),
    ("soft-lookup", {"temperature": "nan"}, "temperature must be a number"),
    ("soft-lookup", {"queries": "x" * 81}, "queries must be at most 80 characters"),
    ("qkv-projections", {"d_model": 1}, "d_model must be at least 2"),
    ("qkv-projections", {"d_k": 17}, "d_k must be at most 16"),
    ("qkv-projections", {"d_model": "six"}, "d_model must be a whole number"),
    ("qkv-projections", {"seed": 10000}, "seed must be at most 9999"),
    ("multi-head", {"num_heads": 9}, "num_heads must be at most 8"),
    ("multi-head", {"d_model": 65}, "d_model must be at most 64"),
    ("multi-head", {"temperature": 0.01}, "temperature must be at least 0.05"),
    ("order-blindness", {"permutation": "shuffle"}, "permutation must be one of"),
    ("order-blindness", {"positional": "yes"}, "positional must be one of"),
    ("order-blindness", {"d_model": 0}, "d_model must be at least 2"),
    ("attention-playground", {"causal": "yes"}, "causal must be one of"),
    ("attention-playground", {"colour": "red"}, "unknown parameter 'colour'"),
]


@pytest.mark.parametrize(("name", "params", "message"), BOUNDS)
def test_out_of_range_and_wrong_type_params(name, params, message):
    with pytest.raises(ValidationError):
        get_kind(name).parse(params)
    problems = check_visual(name, params)
    assert problems and message in problems[0][1], problems


@pytest.mark.parametrize("name", list(SEED_PARAMS))
def test_valid_params_pass_check_visual(name):
    assert check_visual(name, {}) == []
    assert check_visual(name, SEED_PARAMS[name]) == []
    assert check_visual(name, WORST_CASE[name]) == []


def test_query_string_values_coerce():
    parsed = get_kind("attention-playground").parse(
        {"num_heads": "4", "d_model": "32", "temperature": "0.5", "causal": "on", "sentence": " a cat "})
    assert (parsed.num_heads, parsed.d_model, parsed.temperature, parsed.causal) == (4, 32, 0.5, "on")
    assert parsed.sentence == "a cat"
    assert get_kind("qkv-projections").parse({"d_model": "3", "d_k": "2", "seed": "17"}).d_k == 2
    assert get_kind("soft-lookup").parse({"temperature": "0.25"}).temperature == 0.25
    assert get_kind("order-blindness").parse({"d_model": "5", "positional": "on"}).d_model == 5
    # YAML 1.1 reads an unquoted off/on as a boolean: a bank may write `positional: off`.
    assert get_kind("order-blindness").parse({"positional": False}).positional == "off"
    assert get_kind("attention-playground").parse({"causal": True}).causal == "on"


# --- (6) the largest params still render -------------------------------------------------------------------


@pytest.mark.parametrize("name", list(WORST_CASE))
def test_worst_case_params_render(name):
    kind = get_kind(name)
    rendered = kind.render(kind.parse(WORST_CASE[name]))
    assert rendered.image.startswith(PNG_SIGNATURE)
    assert rendered.alt
    if name == "attention-playground":
        assert "causal mask" in rendered.caption.lower() and "Causal mask on" in rendered.alt
