"""The "long-range" visual answers Q2's three options: path length between tokens k apart, the matrix
products a layer runs in order, and the parameters at equal d_model (LSTM against Transformer block)."""

from __future__ import annotations

import html
import itertools
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from app.engine import MultiHeadAttention
from app.visuals import check_visual, get_kind
from app.visuals.base import NARROW_WIDTH
from app.visuals.kinds.long_range import OPTION_TEXT, OPTIONS
from app.visuals.words import plural
from conftest import SEED_BANK, answer_via_form

from .helpers import computed

KIND = "long-range"


# --- naive references ----------------------------------------------------------------------------


def rnn_steps_between(first: int, second: int) -> int:
    """Hidden-state updates a signal needs from token `first` to token `second` of a chain, by walking it."""
    steps, position = 0, first
    while position != second:
        position += 1  # an RNN passes information only to the next token
        steps += 1
    return steps


def lstm_parameters(d: int) -> int:
    """Four gates, each with d × d input weights, d × d recurrent weights and d biases."""
    return sum(d * d + d * d + d for _gate in ("input", "forget", "cell", "output"))


def block_parameters(d: int) -> tuple[int, int, int]:
    """(attention, feed-forward, LayerNorms) of a Transformer block, attention from the engine's
    randomly initialised weights, the rest from the formulas of the issue."""
    model = MultiHeadAttention.init(d, 1)
    attention = sum(w.size for w in (model.w_q, model.w_k, model.w_v, model.w_o,
                                     model.b_q, model.b_k, model.b_v, model.b_o))
    d_ff = 4 * d
    return attention, 2 * d * d_ff + d_ff + d, 2 * (d + d)


def multiply_adds(left: tuple[int, int], right: tuple[int, int]) -> int:
    """Multiply-adds of a (rows × inner) · (inner × cols) product, by counting the loop's steps."""
    (rows, inner), (inner_again, cols) = left, right
    assert inner == inner_again
    return sum(1 for _ in itertools.product(range(rows), range(inner), range(cols)))


# --- strategies ----------------------------------------------------------------------------------

SIZES = st.integers(2, 512).flatmap(lambda top: st.tuples(st.just(top), st.integers(1, top)))
D_MODEL = st.one_of(st.integers(1, 8), st.integers(1, 1024))
CHOICE = st.lists(st.sampled_from(OPTIONS), unique=True).flatmap(st.permutations)


def ticked(choice) -> str:
    return ",".join(choice)


# --- the computed numbers --------------------------------------------------------------------------


@pytest.mark.parametrize("d", [1, 2, 3, 8, 64, 512])
def test_parameter_counts_come_from_real_shapes(d):
    kind = get_kind(KIND)
    result = kind.compute(kind.parse({"d_model": d}))
    attention, ffn, norms = block_parameters(d)
    assert result.lstm_parameters == lstm_parameters(d) == 4 * (2 * d * d + d)
    assert (result.attention_parameters, result.ffn_parameters, result.layer_norm_parameters) == (attention, ffn, norms)
    assert attention == 4 * d * d + 4 * d and ffn == 8 * d * d + 5 * d and norms == 4 * d
    assert result.block_parameters == 12 * d * d + 13 * d > result.lstm_parameters


def test_the_blocks_products_have_the_engines_shapes():
    n, d, h = 5, 8, 2
    kind = get_kind(KIND)
    result = kind.compute(kind.parse({"max_distance": 8, "distance": n - 1, "d_model": d}))
    trace = MultiHeadAttention.init(d, h).forward_detailed(np.ones((n, d)))
    qkv, scores, weights_v, output, up, down = result.block
    assert (qkv.rows, qkv.inner, qkv.cols) == (n, d, 3 * d)  # x (n, d) @ w_qkv (d, 3d)
    assert trace.q.shape == trace.k.shape == trace.v.shape == (n, d)
    # Q·Kᵀ and A·V over all heads: h products of (n × d_k)·(d_k × n) and (n × n)·(n × d_k).
    assert trace.scores.shape == trace.weights.shape == (h, n, n)
    assert scores.multiply_adds == h * multiply_adds((n, d // h), (d // h, n))
    assert weights_v.multiply_adds == h * multiply_adds((n, n), (n, d // h))
    assert (output.rows, output.inner, output.cols) == (n, trace.concatenated.shape[-1], d)  # concat @ w_o
    assert (up.rows, up.inner, up.cols, down.rows, down.inner, down.cols) == (n, d, 4 * d, n, 4 * d, d)
    assert all(product.rows == n for product in result.block)  # every product covers all n tokens
    assert result.lstm_step.multiply_adds == multiply_adds((1, 2 * d), (2 * d, 4 * d)) == 8 * d * d
    assert sum(p.multiply_adds for p in result.block) == sum(
        multiply_adds((p.rows, p.inner), (p.inner, p.cols)) for p in result.block) == 12 * n * d * d + 2 * n * n * d


# --- every claim, for every accepted value ------------------------------------------------------------


@settings(max_examples=30, deadline=None)
@given(SIZES, D_MODEL, CHOICE)
def test_every_claim_holds_for_every_value(sizes, d, choice):
    max_distance, k = sizes
    kind = get_kind(KIND)
    params = kind.parse({"max_distance": max_distance, "distance": k, "d_model": d, "choice": ticked(choice)})
    result = kind.compute(params)
    alt, caption = kind.alt(params, result), kind.caption(params, result)
    n = k + 1
    lstm, (attention, ffn, norms) = lstm_parameters(d), block_parameters(d) if d <= 64 else (
        4 * d * d + 4 * d, 8 * d * d + 5 * d, 4 * d)
    block = attention + ffn + norms
    ratio = f"{block / lstm:.2f}×"

    # (1) path length
    rnn = rnn_steps_between(0, k)
    assert list(result.rnn_path) == [rnn_steps_between(0, j) for j in range(1, max_distance + 1)]
    assert set(result.attention_path) == {1}
    assert f"for k from 1 to {max_distance}; at k = {k}, {rnn} against 1." in alt
    if rnn == 1:
        assert f"For neighbours (k = {k}) both take 1 step" in caption
    else:
        assert rnn > 1 and f"For tokens k = {k} apart: {rnn} steps in an LSTM, 1 step in self-attention." in caption

    # (2) products in order: one per token for the LSTM, 6 for the block whatever n
    assert result.lstm_products == n and len(result.block) == 6
    assert f"the LSTM layer runs {plural(n, 'matrix product')} one after another" in alt
    assert f"the Transformer block 6, each for all {n} tokens at once" in alt
    if n > 6:
        assert f"({n - 6} more for the LSTM)" in caption
    elif n == 6:
        assert "(as many at this length)" in caption
    else:
        assert "at this short length the block's 6 are more" in caption
    block_work, lstm_work = 12 * n * d * d + 2 * n * n * d, 8 * n * d * d
    assert block_work > lstm_work  # "the block does more arithmetic"
    assert f"12nd² + 2n²d = {block_work:,} multiply-adds and the LSTM 8nd² = {lstm_work:,}. So the block does " \
           "more arithmetic" in caption
    assert f"= 8d² = {8 * d * d:,} multiply-adds" in caption

    # (3) parameters: the block has more, so "many fewer parameters" is false
    assert block > lstm and block > lstm + 4 * d  # also more than PyTorch's two-bias LSTM
    assert (f"the LSTM layer has {lstm:,} parameters and the Transformer block {block:,} (attention "
            f"{attention:,}, feed-forward {ffn:,}, LayerNorms {norms:,}), {ratio} as many.") in alt
    assert f"4(2d² + d) (W_x and W_h, each d × 4d, and b, 4d) = {lstm:,}" in caption
    assert f"total 12d² + 13d = {block:,}, {ratio} the LSTM's" in caption
    assert f"4(2d² + 2d) = {lstm + 4 * d:,}: still fewer." in caption
    assert float(ratio[:-1]) >= 1.5  # never "fewer", whatever d

    # the student's choice
    chosen = set(choice)
    for option, label in zip(OPTIONS, ("long-range dependencies", "modern hardware", "fewer parameters")):
        truth = "true" if option != "fewer-parameters" else "false"
        state = "" if not chosen else " · you ticked it" if option in chosen else " · you left it unticked"
        assert f"{label} ({truth}{state})" in alt
    wrong = (f"You ticked '{OPTION_TEXT['fewer-parameters']}', which is not among the advantages: Transformers do "
             f"not win by being smaller. At the same width, d_model = {d}, one block (attention and its feed-forward "
             "network) has ")
    assert (wrong in caption) == ("fewer-parameters" in chosen)
    missed = [option for option in ("long-range", "hardware") if chosen and option not in chosen]
    assert ("unticked, but" in caption) == bool(missed)
    assert all(repr(OPTION_TEXT[option]) in caption for option in chosen | set(missed))
    assert not re.search(r"\bnan\b|\binf\b|-0\b", caption + alt)


# --- the figure -------------------------------------------------------------------------------------


def titles(figure) -> list[str]:
    return [ax.get_title() for ax in figure.axes]


def framed(figure) -> list[bool]:
    return [max(spine.get_linewidth() for spine in ax.spines.values()) > 2 for ax in figure.axes]


def test_figure_draws_the_three_options_from_the_numbers():
    params, result, figure, _, _ = computed(KIND, {"max_distance": 40, "distance": 9, "d_model": 64})
    path_ax, products_ax, parameters_ax = figure.axes
    rnn, attention = path_ax.lines[0], path_ax.lines[1]
    assert list(rnn.get_xdata()) == list(range(1, 41))
    assert list(rnn.get_ydata()) == [rnn_steps_between(0, k) for k in range(1, 41)]
    assert set(attention.get_ydata()) == {1}
    # Middle: one box per product, in order: 10 for the LSTM (n = k + 1), 6 for the block.
    lstm_boxes, block_boxes = (len(collection.get_paths()) for collection in products_ax.collections)
    assert (lstm_boxes, block_boxes) == (10, 6)
    texts = [text.get_text() for ax in figure.axes for text in ax.texts]
    assert "LSTM layer: 10 products,\n1 token each" in texts and "Transformer block: 6,\n10 tokens each" in texts
    # Right: bar heights (in thousands) are the counts; the block's stack sums to its total.
    heights = [patch.get_height() * 1000 for patch in parameters_ax.patches]
    assert heights[0] == pytest.approx(lstm_parameters(64))
    assert heights[1:] == pytest.approx(list(block_parameters(64)))
    assert f"{lstm_parameters(64):,}" in texts and f"{sum(block_parameters(64)):,}\n= 1.51× LSTM" in texts
    assert titles(figure) == ["Long-range dependencies\ntrue", "Faster on parallel hardware\ntrue",
                              "Many fewer parameters?\nfalse"]
    assert framed(figure) == [False, False, False]


@pytest.mark.parametrize("distance, shorter", [(1, True), (4, True), (5, False), (9, False)])
def test_a_short_lstm_bar_under_true_says_the_blocks_count_stays_while_the_lstms_grows(distance, shorter):
    """At n = k + 1 < 6 the LSTM runs fewer products than the block's 6, under the title "true"."""
    _, result, figure, _, _ = computed(KIND, {"max_distance": 40, "distance": distance})
    products_ax = figure.axes[1]
    assert (result.lstm_products < len(result.block)) == shorter
    note = "\nblock: 6 at any n; LSTM: n"
    assert products_ax.get_xlabel() == f"matrix products in order (n = {distance + 1})" + (note if shorter else "")


@pytest.mark.parametrize("choice", ["fewer-parameters", "hardware,long-range", "long-range,fewer-parameters"])
def test_the_ticked_options_are_framed_and_named(choice):
    _, result, figure, alt, caption = computed(KIND, {"choice": choice})
    chosen = choice.split(",")
    assert framed(figure) == [option in chosen for option in OPTIONS]
    for title, option in zip(titles(figure), OPTIONS):
        assert title.endswith("you ticked it" if option in chosen else "you left it unticked")
    if "fewer-parameters" in chosen:
        assert titles(figure)[2] == "Many fewer parameters?\nfalse · you ticked it"
        # One block against one layer of the same width: it says what a block costs, not what a task needs.
        assert ("At the same width, d_model = 512, one block (attention and its feed-forward network) has 1.50× the "
                "parameters of one LSTM layer (3,152,384 against 2,099,200); what a task needs for similar results is "
                "not settled by one layer's count. The gains are the short paths and the parallel hardware.") in caption


def test_narrow_layout_stacks_the_panels():
    kind = get_kind(KIND)
    params = kind.parse({})
    figure = kind.draw(params, kind.compute(params), kind.figure_inches(params, "narrow"))
    assert figure.get_size_inches()[0] == NARROW_WIDTH
    boxes = [ax.get_position() for ax in figure.axes]
    assert boxes[0].y0 > boxes[1].y1 and boxes[1].y0 > boxes[2].y1  # one above the other
    assert all(box.x0 == pytest.approx(boxes[0].x0) for box in boxes)


# --- parameters -------------------------------------------------------------------------------------


def test_choice_takes_option_ids_in_any_order_and_refuses_others():
    kind = get_kind(KIND)
    assert kind.parse({"choice": " hardware , long-range,hardware"}).choice == "long-range,hardware"
    assert kind.parse({"choice": ""}).choice == ""
    assert kind.choice_param == "choice" and "choice" not in {control.name for control in kind.controls}
    ((path, message),) = check_visual(KIND, {"choice": "long-range,bogus"})
    assert (path, message) == (("params", "choice"),
                               "choice must name options among long-range, hardware, fewer-parameters; got bogus")


def test_rejects_a_distance_beyond_the_plot_and_an_unbounded_width():
    with pytest.raises(ValidationError) as error:
        get_kind(KIND).parse({"max_distance": 32, "distance": 40})
    assert "distance (40) must be at most max_distance (32)" in str(error.value)
    assert check_visual(KIND, {"max_distance": 1000}) == [
        (("params", "max_distance"), "max_distance must be at most 512, got 1000")]
    assert check_visual(KIND, {"d_model": 1025}) == [(("params", "d_model"), "d_model must be at most 1024, got 1025")]
    assert check_visual(KIND, {"distance": "many"}) == [
        (("params", "distance"), "distance must be a whole number, got 'many'")]


# --- the answer page -----------------------------------------------------------------------------------


def test_the_answer_page_marks_the_students_ticks(client):
    response = answer_via_form(client, SEED_BANK, "transformer-advantages", ["long-range", "fewer-parameters"])
    page = html.unescape(client.get(response.location).get_data(as_text=True))
    assert "You ticked 'Require many fewer parameters to achieve similar results', which is not among the " \
           "advantages" in page
    assert "You left 'Faster to train and run on modern hardware' unticked, but it is true." in page
    assert re.search(r"/plots/long-range\.png\?[^\"]*choice=long-range(,|%2C)fewer-parameters", page)
