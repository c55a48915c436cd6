"""The model-overview visual: its top heads, marks and tally against the real model's numbers by plain loops."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.visuals import get_kind
from app.visuals.model import CHARACTERS, FOCUSED_BELOW, NUM_HEADS, NUM_LAYERS, SHARE_MARK, heads_on, run

from .test_model_heads import SENTENCES, expected_outlines, naive_characters, on_its_side, outlines, two

KIND = get_kind("model-overview")
WORDS = {"previous": "the previous token", "next": "the next token", "cls": "[CLS]", "sep": "[SEP]"}


def naive_table(sentence):
    """{(layer, head): (previous, next, cls, sep, entropy)}, 0-based, by loops."""
    attentions = run(sentence).attentions
    return {(layer, head): naive_characters(attentions[layer, head].tolist())
            for layer in range(NUM_LAYERS) for head in range(NUM_HEADS)}


def heads_named(text: str) -> list[tuple[int, int]]:
    return [(int(layer) - 1, int(head) - 1) for layer, head in re.findall(r"layer (\d+) head (\d+)", text)]


@settings(max_examples=len(SENTENCES), deadline=None)
@given(sentence=st.sampled_from(SENTENCES))
def test_alt_names_the_top_heads_of_each_character_with_their_ties(sentence):
    params = KIND.parse({"sentence": sentence})
    alt = KIND.alt(params, KIND.compute(params))
    table = naive_table(sentence)
    for index, character in enumerate(CHARACTERS):
        best = max(values[index] for values in table.values())
        claim = re.search(rf"Most weight on {re.escape(WORDS[character])}: (.*?), (\d\.\d+) on average\.", alt)
        assert heads_named(claim.group(1)) == sorted(key for key, values in table.items()
                                                     if two(values[index]) == two(best))  # ties as shown
        assert claim.group(2) == on_its_side(best, SHARE_MARK)
    entropies = {key: values[4] for key, values in table.items()}
    focused = re.search(r"Most focused: (.*?) \(row entropy (\d\.\d+) nats\); broadest: (.*?) \((\d\.\d+) of", alt)
    low, high = min(entropies.values()), max(entropies.values())
    assert heads_named(focused.group(1)) == sorted(k for k, e in entropies.items() if two(-e) == two(-low))
    assert heads_named(focused.group(3)) == sorted(k for k, e in entropies.items() if two(e) == two(high))
    assert (focused.group(2), focused.group(4)) == (on_its_side(low, FOCUSED_BELOW), on_its_side(high, FOCUSED_BELOW))
    assert f"of at most {math.log(len(run(sentence).tokens)):.2f})" in alt


def expected_mark(values, with_share: bool) -> str:
    shares = values[:4]
    best = max(shares)
    if best >= SHARE_MARK:
        letter = "PNCS"[shares.index(best)]
        return f"{letter} {on_its_side(best, SHARE_MARK)}" if with_share else letter
    return "" if values[4] < FOCUSED_BELOW else "b"


@pytest.mark.parametrize("sentence", SENTENCES[:3])
def test_caption_lists_every_heads_mark_and_the_tally(sentence):
    params = KIND.parse({"sentence": sentence})
    caption = KIND.caption(params, KIND.compute(params))
    table = naive_table(sentence)
    for layer in range(NUM_LAYERS):
        row = re.search(rf"layer {layer + 1}: ([^;]*?)(?:;|\.$)", caption).group(1)
        assert row == ", ".join(f"{head + 1} {expected_mark(table[layer, head], True) or '–'}"
                                for head in range(NUM_HEADS))
    marks = [expected_mark(values, False) for values in table.values()]
    assert (f"Here: {marks.count('P')} P, {marks.count('N')} N, {marks.count('C')} C, {marks.count('S')} S, "
            f"{marks.count('b')} b.") in caption


@pytest.mark.parametrize(("sentence", "layout"), [(SENTENCES[0], "wide"), (SENTENCES[0], "narrow"),
                                                  (SENTENCES[4], "narrow")])
def test_every_head_is_drawn_from_its_weights_with_its_mark(sentence, layout):
    params = KIND.parse({"sentence": sentence})
    result = KIND.compute(params)
    figure = KIND.draw(params, result, KIND.figure_inches(params, layout, result))
    ax, bar = figure.axes  # the maps, and their colour bar
    (mesh,) = [c for c in ax.collections if c.get_gid() == "maps"]  # the 72 maps, one mesh (the gaps masked)
    # One scale for every map, 0 to 1, shown under the grid (the alt text's "weights from 0 to 1").
    assert [t.get_text() for t in bar.get_xticklabels()] == ["0", "0.5", "1"] and bar.get_xlim() == (0.0, 1.0)
    assert [t.get_text() for t in bar.texts] == ["attention weight"]
    assert bar.get_position().y1 < ax.transAxes.inverted().transform(ax.transData.transform(
        mesh.get_coordinates()[-1, 0]))[1]  # below the lowest map
    values, corners = mesh.get_array(), mesh.get_coordinates()  # (cells down, across); (.. + 1, .. + 1, 2) inches
    attentions = run(sentence).attentions
    n = attentions.shape[-1]
    rows, columns = (NUM_LAYERS, NUM_HEADS) if layout == "wide" else (NUM_HEADS, NUM_LAYERS)
    assert values.shape == (rows * (n + 1) - 1, columns * (n + 1) - 1)
    assert int(np.ma.count(values)) == NUM_LAYERS * NUM_HEADS * n * n  # nothing drawn between the maps
    assert mesh.get_clim() == (0.0, 1.0)
    extents = {}  # (layer, head) -> (left, right, top, bottom) in inches from the top-left corner
    for row in range(rows):
        for column in range(columns):
            layer, head = (row, column) if layout == "wide" else (column, row)
            down, across = slice(row * (n + 1), row * (n + 1) + n), slice(column * (n + 1), column * (n + 1) + n)
            assert np.array_equal(values[down, across].filled(-1), attentions[layer, head])  # rows queries
            (left, top), (right, bottom) = corners[down.start, across.start], corners[down.stop, across.stop]
            extents[layer, head] = (left, right, top, bottom)
    (collection,) = [c for c in ax.collections if hasattr(c, "cell_texts")]
    marks = {}  # the mark drawn centred above each map
    for (x, y), text in zip(collection.get_offsets(), collection.cell_texts):
        (where,) = [key for key, (left, right, top, _) in extents.items() if left < x < right and 0 < top - y < 0.2]
        marks[where] = text
    table = naive_table(sentence)
    for layer in range(NUM_LAYERS):
        for head in range(NUM_HEADS):
            assert marks.get((layer, head), "") == expected_mark(table[layer, head], layout == "wide")
    # Layers down and heads across (a phone: heads down): layer 2 head 1 sits below (right of) layer 1 head 1.
    first, second = extents[0, 0], extents[1, 0]
    assert (second[2] > first[2]) == (layout == "wide") and (second[0] > first[0]) == (layout == "narrow")
    texts = list(ax.texts) + list(figure.texts)
    assert min(t.get_fontsize() for t in texts if t.get_text()) >= 8


@pytest.mark.parametrize("layout", ["wide", "narrow"])
def test_labels_stay_inside_the_figure_and_apart(layout):
    from .test_model_heads import assert_labels_apart

    params = KIND.parse({"sentence": SENTENCES[0]})
    result = KIND.compute(params)
    assert_labels_apart(KIND.draw(params, result, KIND.figure_inches(params, layout, result)))


@pytest.mark.parametrize("layout", ["wide", "narrow"])
@pytest.mark.parametrize("asked", [{}, {"layer": 1, "asks": "sep", "predicted": "3"}, {"layer": 6}])
def test_labels_the_colour_bar_and_the_legend_stay_inside_the_figure_and_apart(layout, asked):
    from .test_model_heads import LONG, assert_labels_apart

    params = KIND.parse({"sentence": LONG, **asked})
    result = KIND.compute(params)
    assert_labels_apart(KIND.draw(params, result, KIND.figure_inches(params, layout, result)))


# --- the layer a question is about, and the head it asks for -------------------------------------------------


@pytest.mark.parametrize("sentence", SENTENCES[:3])
@pytest.mark.parametrize("layer", [1, 4, 6])
def test_a_questions_layer_is_highlighted_and_its_heads_counted_by_character(sentence, layer):
    table = naive_table(sentence)
    marks = [expected_mark(table[layer - 1, head], False) for head in range(NUM_HEADS)]
    params = KIND.parse({"sentence": sentence, "layer": layer})
    result = KIND.compute(params)
    caption = KIND.caption(params, result)
    placed = sum(marks.count(letter) for letter in "PNCS")
    assert caption.startswith(f"In layer {layer} (highlighted), {placed} of the 12 heads "
                              f"{'puts' if placed == 1 else 'put'} at least 0.5 of "
                              f"{'its' if placed == 1 else 'their'} weight on one place")
    # Each place counts the heads that put at least 0.5 there, as the bank's heads_on does: a head may count twice.
    reaching = {letter: [head for head in range(NUM_HEADS) if table[layer - 1, head][index] >= SHARE_MARK]
                for index, letter in enumerate("PNCS")}
    for (letter, heads), words in zip(reaching.items(), WORDS.values()):
        assert (f"{len(heads)} on {words} ({letter})" in caption) == (len(heads) > 0)
        assert len(heads) == heads_on(sentence, layer, dict(zip("PNCS", WORDS))[letter])
    twice = [head for head in range(NUM_HEADS) if sum(head in heads for heads in reaching.values()) > 1]
    assert ("on two places" in caption) == bool(twice)
    assert f"{marks.count('b')} {'is' if marks.count('b') == 1 else 'are'} broad (b)" in caption
    for layout in ("wide", "narrow"):
        figure = KIND.draw(params, result, KIND.figure_inches(params, layout, result))
        (band,) = [patch for patch in figure.axes[0].patches if patch.get_gid() == "layer"]
        x, y, width, height = band.get_x(), band.get_y(), band.get_width(), band.get_height()
        # The band lies behind this layer's maps and no other's: their labels, 'layer k' at the left of a row
        # (wide) or 'Lk' under a column (narrow), in the axes' inches from the top-left corner.
        for text in figure.axes[0].texts:
            found = re.fullmatch(r"layer (\d)|L(\d)", text.get_text())
            if found:
                k = int(found.group(1) or found.group(2))
                tx, ty = text.get_position()
                inside = y <= ty <= y + height if found.group(1) else x <= tx <= x + width
                assert inside == (k == layer), text.get_text()
        assert outlines(figure) == {}


def test_a_head_reaching_half_its_weight_on_two_places_counts_for_each_as_the_bank_counts():
    """'go home', layer 3: heads 2 and 9 put on average over 0.5 on the next token and over 0.5 on [CLS] (means
    over different queries). The words count 12 on [CLS], as heads_on (the nothing-to-do key) does, not the 10
    whose letter is C, and say why two heads count twice."""
    params = KIND.parse({"sentence": "go home", "layer": 3})
    caption = KIND.caption(params, KIND.compute(params))
    assert heads_on("go home", 3, "cls") == 12 and heads_on("go home", 3, "next") == 2
    assert "2 on the next token (N), 12 on [CLS] (C) (heads 2 and 9 reach 0.5 on two places" in caption
    assert "a map's letter names the larger" in caption


@pytest.mark.parametrize("sentence", SENTENCES[:3])
def test_asked_for_the_head_of_a_layer_the_overview_outlines_it_and_the_students(sentence):
    table = naive_table(sentence)
    layer = 4
    shares = [table[layer - 1, head][2] for head in range(NUM_HEADS)]
    best = [head for head in range(NUM_HEADS) if two(shares[head]) == two(max(shares))]
    wrong = next(head for head in range(NUM_HEADS) if head not in best)
    for predicted, yours in ((str(best[0] + 1), best[0]), (str(wrong + 1), wrong), ("0", None), ("", None)):
        params = KIND.parse({"sentence": sentence, "layer": layer, "asks": "cls", "predicted": predicted})
        result = KIND.compute(params)
        caption = KIND.caption(params, result)
        assert f"{' and '.join(f'head {h + 1}' for h in best)} put{'s' if len(best) == 1 else ''} the most weight " \
               f"on [CLS]: {on_its_side(max(shares), SHARE_MARK)} on average (outlined solid; the layer's maps are " \
               "titled with their share there after the letter C, below 0.5 too)" in caption
        if yours is not None and yours not in best:
            assert caption.startswith(f"You answered head {yours + 1}, which puts "
                                      f"{on_its_side(shares[yours], SHARE_MARK)} of its weight on [CLS]")
        for layout in ("wide", "narrow"):
            figure = KIND.draw(params, result, KIND.figure_inches(params, layout, result))
            assert outlines(figure) == expected_outlines(best, yours)
            # The asked layer's maps are titled with the share the heads are compared by, not their own letter.
            drawn = [text for ax in figure.axes for c in ax.collections for text in getattr(c, "cell_texts", ())]
            assert all(f"C {on_its_side(share, SHARE_MARK)}" in drawn for share in shares)
            legend = [t.get_text() for legend in figure.legends for t in legend.get_texts()]
            assert legend == (["your answer", "the answer"] if yours is not None else ["the answer"])


def test_asks_needs_the_layer_it_is_about():
    from app.visuals import check_visual

    ((_, message),) = check_visual("model-overview", {"asks": "cls"})
    assert message == "asks: cls is about the heads of one layer: give its layer (1 to 6)"
    ((_, message),) = check_visual("model-overview", {"layer": 7})
    assert "layer must be at most 6" in message
