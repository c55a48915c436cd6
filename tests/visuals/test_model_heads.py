"""The model-heads visual and the shared head characters (app/visuals/model.py), checked against the real model's
numbers recomputed by plain loops. Model runs are cached (app.visuals.model.run), drawings kept to a few."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from matplotlib.collections import LineCollection
from matplotlib.font_manager import FontProperties, findfont, get_font

from app.engine.pretrained import load_model
from app.visuals import check_visual, get_kind
from app.visuals.base import line_height
from app.visuals.kinds.model_heads import FONT
from app.visuals.model import (CHARACTER_LETTERS, CHARACTERS, FOCUSED_BELOW, NUM_HEADS, NUM_LAYERS, SHARE_MARK, drawable,
                               font_sentence, head_characters, missing_glyphs, run)

from .helpers import grids

KIND = get_kind("model-heads")
LONG = " ".join(("the quick brown fox jumps over the lazy dog and then it runs far away " * 5).split()[:62])
SENTENCES = ("the cat sat on the mat because it was tired", "a dog", "the the the the", "Кошка спит, η γάτα επίσης",
             "猫が座った 🙂", LONG)


def test_the_long_sentence_is_the_models_limit_and_one_more_token_is_refused():
    assert len(run(LONG).tokens) == 64
    problems = check_visual("model-heads", {"sentence": LONG + " dog"})
    assert problems == [(("params", "sentence"), "the sentence is 65 tokens long after WordPiece ([CLS] and [SEP] "
                                                 "included), and the model reads at most 64: shorten it")]


def test_the_models_shape_is_the_one_the_controls_offer():
    config = load_model().config
    assert (config["num_hidden_layers"], config["num_attention_heads"]) == (NUM_LAYERS, NUM_HEADS)


@pytest.mark.parametrize(("values", "field", "words"), [
    ({"layer": 0}, "layer", "layer must be at least 1"), ({"layer": 7}, "layer", "layer must be at most 6"),
    ({"head": "13"}, "head", "head must be one of"), ({"head": "0"}, "head", "head must be one of"),
    ({"sentence": "   "}, "sentence", "must not be empty"), ({"sentence": "a\x00b"}, "sentence", "U+0000"),
    ({"sentence": "x" * 401}, "sentence", "at most 400 characters"),
])
def test_bad_params_get_a_sentence_naming_the_field(values, field, words):
    ((path, message),) = check_visual("model-heads", values)
    assert path == ("params", field) and words in message


# --- the characters, against loops ------------------------------------------------------------------


def two(value: float) -> str:
    return f"{value:.2f}"


def on_its_side(value: float, mark: float) -> str:
    """The text the words must use for a value they compare with `mark`: 2 decimals, more while the shown number
    would fall on the other side of it (0.997 nats below the 1 of "focused" is never "1.00")."""
    decimals = 2
    while (float(f"{value:.{decimals}f}") < mark) != (value < mark) and decimals < 16:
        decimals += 1
    return f"{value:.{decimals}f}"


def naive_characters(weights):
    """(previous, next, cls, sep, entropy) of one head's (N, N) weights, by loops over the queries. Previous and
    next are between the sentence's own tokens 1..N-2, never [CLS] (0) or [SEP] (N-1)."""
    n = len(weights)
    words = range(1, n - 1)
    pairs = [(i, i - 1) for i in words if i - 1 in words]  # (query, the token before it)
    previous = sum(weights[i][j] for i, j in pairs) / len(pairs)
    following = sum(weights[j][i] for i, j in pairs) / len(pairs)  # the same pairs, from the earlier token
    cls = sum(weights[i][0] for i in range(n)) / n
    sep = sum(weights[i][n - 1] for i in range(n)) / n
    entropy = sum(-sum(a * math.log(a) for a in row if a > 0) for row in weights) / n
    return float(previous), float(following), float(cls), float(sep), float(entropy)


@pytest.mark.parametrize("sentence", SENTENCES[:4])
def test_head_characters_equal_the_loops_and_labels_follow_their_definition(sentence):
    attentions = run(sentence).attentions
    characters = head_characters(attentions)
    for layer in range(NUM_LAYERS):
        for head in range(NUM_HEADS):
            naive = naive_characters(attentions[layer, head].tolist())
            computed = [float(characters.share(c)[layer, head]) for c in CHARACTERS]
            computed.append(float(characters.entropy[layer, head]))
            assert computed == pytest.approx(naive, abs=1e-5)
            label = characters.label(layer, head)
            best = max(naive[:4])
            if best >= SHARE_MARK:
                assert label == CHARACTERS[naive.index(best)]
            else:
                assert label == (None if naive[4] < FOCUSED_BELOW else "broad")
    assert characters.uniform_entropy == pytest.approx(math.log(len(run(sentence).tokens)))


def test_a_head_parking_on_cls_is_not_a_previous_token_head_on_a_short_sentence():
    # "cat sat": 'cat' puts 0.95 on [CLS], the token before it. Counting that as "previous" too made layer 3 head
    # 12, which parks 0.66 of its weight on [CLS] on average, a previous-token head (0.70): one weight counted
    # twice. Between the sentence's own tokens, only 'sat' → 'cat' (0.59) is a previous-token weight.
    attentions = run("cat sat").attentions  # [CLS] cat sat [SEP]
    characters = head_characters(attentions)
    weights = attentions[2, 11]
    assert characters.previous[2, 11] == pytest.approx(weights[2, 1]) and characters.next[2, 11] == pytest.approx(
        weights[1, 2])
    old_previous = (weights[1, 0] + weights[2, 1] + weights[3, 2]) / 3  # [CLS] and [SEP] counted as neighbours
    assert old_previous > characters.cls[2, 11] > characters.previous[2, 11]  # it was a "previous-token head"
    assert characters.label(2, 11) == "cls"


def test_a_one_token_sentence_is_refused_and_typed_special_tokens_are_text():
    with pytest.raises(ValidationError) as refused:
        KIND.parse({"sentence": "cat"})
    assert "the sentence is one token long after WordPiece ('cat')" in str(refused.value)
    assert "type at least two words" in str(refused.value)
    tokens = run("the cat [SEP] sat [PAD]").tokens
    assert tokens[0] == "[CLS]" and tokens[-1] == "[SEP]" and tokens.count("[SEP]") == 1 and "[PAD]" not in tokens
    assert tokens[3:6] == ["[", "sep", "]"]


def test_the_known_heads_of_this_model_show_their_characters():
    characters = head_characters(run(SENTENCES[0]).attentions)
    assert characters.label(0, 2) == "previous" and characters.previous[0, 2] > 0.99  # layer 1 head 3
    assert characters.label(1, 8) == "next"  # layer 2 head 9
    assert characters.label(4, 5) == "cls"  # layer 5 head 6: parked on [CLS]


# --- the words, for any params ------------------------------------------------------------------------

STRONGEST = re.compile(r"'([^']*)'\((\d+)\) → ((?:'[^']*'\(\d+\)(?: or )?)+) (\d\.\d\d)")


@settings(max_examples=40, deadline=None)
@given(sentence=st.sampled_from(SENTENCES), layer=st.integers(1, NUM_LAYERS),
       head=st.sampled_from([str(h) for h in range(1, NUM_HEADS + 1)]))
def test_alt_names_each_tokens_strongest_keys_with_ties_and_the_heads_character(sentence, layer, head):
    params = KIND.parse({"sentence": sentence, "layer": layer, "head": head})
    result = KIND.compute(params)
    alt = KIND.alt(params, result)
    tokens = run(sentence).tokens
    weights = run(sentence).attentions[layer - 1, int(head) - 1].astype(float)  # (N, N)
    claims = STRONGEST.findall(alt.split("Where each token attends most: ")[1])
    assert [int(query) for _, query, _, _ in claims] == list(range(len(tokens)))
    for token, query, keys, weight in claims:
        query = int(query)
        assert token == tokens[query]
        named = [int(k) for k in re.findall(r"\((\d+)\)", keys)]
        best = max(weights[query])
        assert named == [k for k in range(len(tokens)) if two(weights[query][k]) == two(best)]  # ties as shown
        assert weight == f"{weights[query][named[0]]:.2f}"
    previous, following, cls, sep, entropy = naive_characters(weights.tolist())
    shares = [on_its_side(value, SHARE_MARK) for value in (previous, following, cls, sep)]
    assert (f"on average {shares[0]} on the previous token, {shares[1]} on the next token, {shares[2]} on [CLS], "
            f"{shares[3]} on [SEP]; row entropy {on_its_side(entropy, FOCUSED_BELOW)} nats") in alt
    assert alt.count(", so focused.") + alt.count(", so broad.") == 1
    assert (", so focused." in alt) == (entropy < FOCUSED_BELOW)
    # The caption shows the same numbers (the focused-or-broad question sends the student to it, and the phone's
    # figure has no room for the bars).
    caption = KIND.caption(params, result)
    assert (f"Layer {layer}, head {head} puts on average {shares[0]} on the previous token" in caption
            and f"row entropy {on_its_side(entropy, FOCUSED_BELOW)} nats" in caption)


@settings(max_examples=12, deadline=None)
@given(sentence=st.sampled_from(SENTENCES), layer=st.integers(1, NUM_LAYERS))
def test_all_heads_are_each_described_from_their_own_numbers(sentence, layer):
    params = KIND.parse({"sentence": sentence, "layer": layer, "head": "all"})
    result = KIND.compute(params)
    alt, caption = KIND.alt(params, result), KIND.caption(params, result)
    attentions = run(sentence).attentions
    for head in range(NUM_HEADS):
        previous, *_ = naive_characters(attentions[layer - 1, head].tolist())
        assert f"head {head + 1}: on average {on_its_side(previous, SHARE_MARK)} on the previous token" in alt
        assert f"head {head + 1}: '[CLS]'(0) → " in alt
    assert "Choose one head" in caption


# --- fonts ---------------------------------------------------------------------------------------------


def test_the_font_table_is_the_one_matplotlib_draws_with():
    charmap = get_font(findfont(FontProperties())).get_charmap()  # matplotlib's default sans-serif: DejaVu Sans
    for text, covered in (("Кошка", True), ("γάτα", True), ("naïve", True), ("שלום", True), ("القطة", True),
                          ("かっ", False), ("🙂", False), ("한국어", False), ("ไทย", False)):
        assert all((ord(ch) in charmap) == covered for ch in text)
        assert (missing_glyphs(text) == []) == covered
    assert drawable("##た") == "##U+305F" and drawable("кот") == "кот"


@pytest.mark.parametrize(("sentence", "missing"), [(SENTENCES[3], ""), (SENTENCES[4], "か (U+304B), っ (U+3063)")])
def test_a_script_the_font_lacks_is_named_and_drawn_as_code_points(sentence, missing):
    # filterwarnings = error: drawing a glyph the font lacks would warn and fail here.
    params = KIND.parse({"sentence": sentence})
    rendered = KIND.render(params, layout="narrow")
    assert rendered.image
    said = font_sentence(run(sentence).tokens)
    assert (said == "") == (missing == "")
    if missing:
        assert missing in rendered.alt and missing in rendered.caption and "[UNK]" in rendered.alt


# --- the figures ---------------------------------------------------------------------------------------


def all_texts(figure):
    return [text for ax in figure.axes for text in ax.texts] + list(figure.texts)


@pytest.mark.parametrize(("sentence", "inches_of"),
                         [(SENTENCES[0], "wide"), (SENTENCES[4], "narrow"), (LONG, "narrow"), (LONG, "wide")])
def test_links_join_every_query_to_every_key_with_the_weight_as_opacity(sentence, inches_of):
    params = KIND.parse({"sentence": sentence, "layer": 2, "head": "9"})
    result = KIND.compute(params)
    figure = KIND.draw(params, result, KIND.figure_inches(params, inches_of, result))
    weights = run(sentence).attentions[1, 8]
    n = len(weights)
    (links,) = [c for ax in figure.axes for c in ax.collections if isinstance(c, LineCollection)]
    segments = links.get_segments()
    assert [(tuple(s[0]), tuple(s[1])) for s in segments] == [((0, i), (1, j)) for i in range(n) for j in range(n)]
    assert np.allclose(links.get_colors()[:, 3], weights.ravel())  # alpha = weight, row by row
    labels = [drawable(token)[:16] for token in run(sentence).tokens]
    drawn = [t.get_text() for t in figure.axes[0].texts]
    assert [d.rstrip("…") for d in drawn[0::2]] == [label.rstrip("…")[:len(d.rstrip("…"))] for label, d in
                                                    zip(labels, drawn[0::2])]
    assert drawn[0::2] == drawn[1::2]  # queries on the left, keys on the right, the same tokens
    assert min(t.get_fontsize() for t in all_texts(figure)) >= 8


def test_all_heads_draw_the_layers_weights_on_a_zero_to_one_scale():
    params = KIND.parse({"sentence": SENTENCES[0], "layer": 4, "head": "all"})
    result = KIND.compute(params)
    for layout in ("wide", "narrow"):
        figure = KIND.draw(params, result, KIND.figure_inches(params, layout, result))
        grid = next(ax for ax in figure.axes if grids(ax))
        images = {image.get_gid(): image for image in grids(grid)}
        titles = {text.get_gid(): text.get_text() for text in grid.texts if text.get_gid()}
        assert len(images) == len(titles) == NUM_HEADS
        for head in range(NUM_HEADS):
            image = images[f"head-{head}"]
            assert np.array_equal(image.get_array(), run(SENTENCES[0]).attentions[3, head])
            assert image.get_clim() == (0.0, 1.0)
            label = result.characters.label(3, head)
            letter = {"previous": "P", "next": "N", "cls": "C", "sep": "S", "broad": "b"}.get(label)
            assert titles[f"title-{head}"] == f"head {head + 1}" + (f" ({letter})" if letter else "")
        # Heads run left to right, then down: head 2 right of head 1, the head below head 1 lower.
        # (left, top) corners of each head's grid, in the axes' inches (y grows down)
        corners = [tuple(images[f"head-{head}"].get_coordinates()[0, 0]) for head in range(NUM_HEADS)]
        per_row = 4 if layout == "wide" else 2
        assert corners[1][0] > corners[0][0] and corners[per_row][1] > corners[0][1] == corners[1][1]
        assert min(t.get_fontsize() for t in all_texts(figure)) >= 8


# --- the /learn page's real-model section ----------------------------------------------------------------


def test_the_learn_pages_claims_hold_and_its_links_serve_the_figures(client):
    page = client.get("/learn/attention")
    assert page.status_code == 200
    html = page.get_data(as_text=True)
    assert 'id="real-model-text"' in html
    assert KIND.parse({}).sentence == "the cat sat on the mat because it was tired"  # the sentence the text names
    characters = head_characters(run("the cat sat on the mat because it was tired").attentions)
    assert characters.previous[0, 2] > 0.995  # "layer 1 head 3 sends all of each token's weight to the one before"
    assert sum(characters.label(4, head) == "cls" for head in range(NUM_HEADS)) > NUM_HEADS / 2  # "most of them"
    for link in ("/plots/model-heads.png", "/plots/model-heads.png?layer=5&amp;head=all", "/plots/model-overview.png"):
        assert f'href="{link}"' in html
        response = client.get(link.replace("&amp;", "&"))
        assert response.status_code == 200 and response.mimetype == "image/png"


def test_the_playground_links_its_own_sentence_to_the_real_model(client):
    html = client.get("/learn/attention?v=attention-playground&sentence=the+dog+ran+home").get_data(as_text=True)
    for link in ("/plots/model-heads.png?sentence=the+dog+ran+home&amp;head=all",
                 "/plots/model-overview.png?sentence=the+dog+ran+home"):
        assert f'href="{link}"' in html
        assert client.get(link.replace("&amp;", "&")).status_code == 200


# --- layout: every label inside the figure, none over another ---------------------------------------------


def assert_labels_apart(figure):
    """Every text (tick labels, titles, texts, the colour bar's) lies inside the figure and off every other one."""
    from test_plots_layout import label_boxes, overlap

    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    boxes = label_boxes(figure, renderer) + [(None, f"figure text {t.get_text()!r}", t.get_window_extent(renderer))
                                             for t in figure.texts]
    page = figure.bbox
    for _, what, box in boxes:
        assert box.x0 >= page.x0 - 1 and box.x1 <= page.x1 + 1 and box.y0 >= page.y0 - 1 and box.y1 <= page.y1 + 1, \
            f"{what} is clipped"
    for index, (_, what, box) in enumerate(boxes):
        for _, other, other_box in boxes[index + 1:]:
            assert overlap(box, other_box) <= 1, f"{what} overlaps {other}"


@pytest.mark.parametrize("layout", ["wide", "narrow"])
@pytest.mark.parametrize(("sentence", "head"), [(SENTENCES[0], "3"), (LONG, "9"), (SENTENCES[4], "1"),
                                                (SENTENCES[1], "all"), (LONG, "all")])
@pytest.mark.parametrize("asked", [{}, {"asks": "previous", "predicted": "12"}, {"asks": "focused", "said": "false"}])
def test_labels_stay_inside_the_figure_and_apart(sentence, head, layout, asked):
    if asked.get("asks") == "focused" and head == "all":
        asked = {}
    params = KIND.parse({"sentence": sentence, "head": head, "layer": 2, **asked})
    result = KIND.compute(params)
    assert_labels_apart(KIND.draw(params, result, KIND.figure_inches(params, layout, result)))


def test_a_number_next_to_its_bound_keeps_its_side_and_ties_are_what_is_shown():
    focused = KIND.parse({"layer": 2, "head": "1"})  # the default sentence
    alt = KIND.alt(focused, KIND.compute(focused))
    assert "row entropy 0.997 nats of at most 2.48, so focused" in alt  # 0.99727: "1.00" would contradict it
    short = KIND.parse({"layer": 4, "head": "1"})
    assert "0.499 on [CLS]" in KIND.alt(short, KIND.compute(short))  # 0.49914: short of a letter's 0.5
    near = KIND.parse({"layer": 1, "head": "1", "predicted_cells": "9,0"})  # 'was' → [CLS] 0.2036, [SEP] 0.2063
    alt = KIND.alt(near, KIND.compute(near))
    assert "'was'(9) → '[SEP]'(11) 0.21" in alt and "the strongest key is '[SEP]'(11) (weight 0.21)" in alt


# --- what a question asks of the figure (asks), answered beside the student's answer ---------------------------

def outlines(figure) -> dict[int, set[str]]:
    """{head: {"answer", "yours"}} of the grid's outlined heatmaps: solid black the answer, dashed the student's."""
    found: dict[int, set[str]] = {}
    for ax in figure.axes:
        for patch in ax.patches:
            if (patch.get_gid() or "").startswith("outline-"):
                head = int(patch.get_gid().split("-")[1])
                found.setdefault(head, set()).add("answer" if patch.get_linestyle() == "solid" else "yours")
    return found


def expected_outlines(best, yours) -> dict[int, set[str]]:
    """outlines() of a figure that outlines the `best` heads solid and the student's head `yours` (or None) dashed."""
    expected = {head: {"answer"} for head in best}
    if yours is not None:
        expected.setdefault(yours, set()).add("yours")
    return expected


def best_heads(sentence, layer: int, index: int) -> list[int]:
    """The heads (0-based) of `layer` with the largest mean weight on CHARACTERS[index], ties as shown, by loops."""
    attentions = run(sentence).attentions
    shares = [naive_characters(attentions[layer, head].tolist())[index] for head in range(NUM_HEADS)]
    return [head for head, share in enumerate(shares) if two(share) == two(max(shares))]


@pytest.mark.parametrize("sentence", SENTENCES[:3])
@pytest.mark.parametrize("character", CHARACTERS)
def test_asked_for_a_head_the_grid_outlines_the_strongest_and_the_students_and_says_what_each_puts_there(
        sentence, character):
    layer = 1
    best = best_heads(sentence, layer, CHARACTERS.index(character))
    wrong = next(head for head in range(NUM_HEADS) if head not in best)
    shares = [naive_characters(run(sentence).attentions[layer, head].tolist())[CHARACTERS.index(character)]
              for head in range(NUM_HEADS)]
    for predicted, yours in ((str(best[0] + 1), best[0]), (str(wrong + 1), wrong), ("13", None), ("2.5", None),
                             ("", None)):
        params = KIND.parse({"sentence": sentence, "layer": 2, "head": "all", "asks": character,
                             "predicted": predicted})
        result = KIND.compute(params)
        caption = KIND.caption(params, result)
        most = " and ".join(f"head {head + 1}" for head in best)
        assert f"of layer 2's heads, {most} put{'s' if len(best) == 1 else ''} the most weight on " in caption.lower()
        assert f": {on_its_side(shares[best[0]], SHARE_MARK)} on average (outlined solid" in caption
        if predicted == "":
            assert caption.startswith("Of layer 2's heads")
        elif yours is None:
            assert caption.startswith(f"Your answer, {predicted}, is not a head of the layer (1 to 12); ")
        elif yours in best:
            assert caption.startswith(f"You answered head {yours + 1}, rightly: ")
        else:
            assert caption.startswith(f"You answered head {yours + 1}, which puts "
                                      f"{on_its_side(shares[yours], SHARE_MARK)} of its weight on ")
        assert KIND.alt(params, result).startswith(caption.split(". ")[0])
        for layout in ("wide", "narrow"):
            figure = KIND.draw(params, result, KIND.figure_inches(params, layout, result))
            assert outlines(figure) == expected_outlines(best, yours)
            grid = next(ax for ax in figure.axes if grids(ax))
            titles = {text.get_gid(): text.get_text() for text in grid.texts if text.get_gid()}
            letter = CHARACTER_LETTERS[character]
            for head in range(NUM_HEADS):  # each head's title gives the share the heads are compared by, under
                # the asked place's letter: never the head's own letter beside another place's share
                assert titles[f"title-{head}"] == f"head {head + 1}: {letter} {on_its_side(shares[head], SHARE_MARK)}"
            legends = [text.get_text() for legend in figure.legends for text in legend.get_texts()]
            assert legends == (["your answer", "the answer"] if yours is not None else ["the answer"])


@pytest.mark.parametrize("predicted", ["0.4", "0.86", "1", "0", "3", "-0.5", ""])
def test_asked_for_a_heads_share_its_bar_is_outlined_and_the_students_share_dashed_on_it(predicted):
    sentence = SENTENCES[0]
    cls = naive_characters(run(sentence).attentions[4, 5].tolist())[2]
    params = KIND.parse({"sentence": sentence, "layer": 5, "head": "6", "asks": "cls", "predicted": predicted})
    result = KIND.compute(params)
    caption = KIND.caption(params, result)
    claim = f"layer 5 head 6 puts {on_its_side(cls, SHARE_MARK)} of its weight on [CLS] on average (its bar, outlined)"
    shown = float(predicted) if predicted else None
    if shown is None:
        assert caption.startswith(claim[0].upper() + claim[1:] + ".")
    elif not 0 <= shown <= 1:
        assert caption.startswith(f"Your answer, {predicted}, is not a share of the weight, which lies between 0 "
                                  f"and 1; {claim}.")
    elif abs(cls - shown) < 0.005:
        assert caption.startswith(f"You answered {predicted} (the dashed line), which is the share to 2 decimals")
    else:
        assert caption.startswith(f"You answered {predicted} (the dashed line); {claim}: {abs(cls - shown):.2f} "
                                  f"{'more' if cls > shown else 'less'} than your answer.")
    for layout in ("wide", "narrow"):  # the phone shows the bars too when a question asks about them
        figure = KIND.draw(params, result, KIND.figure_inches(params, layout, result))
        (bars,) = [ax for ax in figure.axes if ax.patches and ax.get_yticklabels()]
        at = {float(tick): label.get_text() for tick, label in zip(bars.get_yticks(), bars.get_yticklabels())}
        by_label = {at[bar.get_y() + bar.get_height() / 2]: bar for bar in bars.patches}  # each bar by its tick label
        assert by_label["[CLS]"].get_width() == pytest.approx(cls)
        assert [label for label, bar in by_label.items() if bar.get_linewidth() == 2.0] == ["[CLS]"]
        (mine,) = [line for line in bars.get_lines() if line.get_gid() == "your-answer"] or [None]
        if shown is not None and 0 <= shown <= 1:
            assert tuple(mine.get_xdata()) == (shown, shown) and mine.get_linestyle() not in ("-", "solid")
            y = by_label["[CLS]"].get_y() + by_label["[CLS]"].get_height() / 2
            assert min(mine.get_ydata()) < y < max(mine.get_ydata())  # across the asked bar
        else:
            assert mine is None
        assert_labels_apart(figure)


@pytest.mark.parametrize("sentence", SENTENCES[:3])
def test_asked_for_a_querys_strongest_key_the_links_draw_it_and_the_students_key(sentence):
    weights = run(sentence).attentions[1, 8].tolist()
    n = len(weights)
    query = min(3, n - 2)
    row = weights[query]
    best = [key for key, weight in enumerate(row) if two(weight) == two(max(row))]
    wrong = next(key for key in range(n) if key not in best)
    for predicted, drawn in ((str(best[0]), best[0]), (str(wrong), wrong), (str(n), None), ("1.5", None)):
        params = KIND.parse({"sentence": sentence, "layer": 2, "head": "9", "asks": "key", "query": query,
                             "predicted": predicted})
        result = KIND.compute(params)
        assert result.answer == tuple((query, key) for key in best)
        assert result.predicted == (() if drawn is None else ((query, drawn),))
        caption = KIND.caption(params, result)
        assert f"({query}) puts the most weight on " in caption and f", {two(row[best[0]])} (the solid link" in caption
        if drawn is None:
            assert caption.startswith(f"Your answer, {predicted}, is not a position of the sentence (0 to {n - 1}); ")
        elif drawn in best:
            assert caption.startswith(f"You answered position {drawn}, rightly: query ")
        else:
            assert caption.startswith(f"You answered position {drawn}, ") and f"gives {two(row[drawn])} (the dashed" \
                in caption
        figure = KIND.draw(params, result, KIND.figure_inches(params, "narrow", result))
        solid, *dashed = [c for ax in figure.axes for c in ax.collections if isinstance(c, LineCollection)][1:]
        assert [tuple(map(tuple, s)) for s in solid.get_segments()] == [((0, query), (1, key)) for key in best]
        assert [tuple(map(tuple, s)) for c in dashed for s in c.get_segments()] == \
            ([] if drawn is None else [((0, query), (1, drawn))])


@pytest.mark.parametrize(("layer", "head"), [(2, "1"), (2, "9"), (3, "4"), (1, "3")])
@pytest.mark.parametrize("said", ["true", "false", ""])
def test_asked_whether_a_head_is_focused_the_words_answer_the_students_claim_from_the_entropy(layer, head, said):
    entropy = naive_characters(run(SENTENCES[0]).attentions[layer - 1, int(head) - 1].tolist())[4]
    focused = entropy < FOCUSED_BELOW
    params = KIND.parse({"layer": layer, "head": head, "asks": "focused", "said": said})
    caption = KIND.caption(params, KIND.compute(params))
    claim = (f"layer {layer} head {head}'s rows have a mean entropy of {on_its_side(entropy, FOCUSED_BELOW)} nats, "
             f"{'below' if focused else 'not below'} 1: the head is {'focused' if focused else 'broad'} "
             "(the bars' title)")
    if said:
        verdict = "rightly" if (said == "true") == focused else f"but it is {'true' if focused else 'false'}"
        assert caption.startswith(f"You answered {said}, {verdict}: {claim}.")
    else:
        assert caption.startswith(claim[0].upper() + claim[1:] + ".")
    figure = KIND.draw(params, KIND.compute(params), KIND.figure_inches(params, "narrow"))
    assert any("entropy" in ax.get_title(loc="left") for ax in figure.axes)  # the phone shows the bars it names


@pytest.mark.parametrize(("values", "words"), [
    ({"asks": "key"}, "asks: key needs the query's position"),
    ({"query": 2}, "query is only for asks: key"),
    ({"asks": "key", "query": 12}, "query must be a position of the sentence's 12 tokens, 0 to 11; got 12"),
    ({"asks": "key", "query": 64}, "query must be at most 63"),
    ({"asks": "focused", "head": "all"}, "asks: focused is about one head"),
    ({"asks": "key", "query": 1, "head": "all"}, "asks: key is about one head"),
    ({"asks": "sideways"}, "asks must be one of"),
    ({"said": "maybe"}, "said must be one of"),
])
def test_what_a_question_asks_must_fit_the_figure(values, words):
    ((_, message),) = check_visual("model-heads", values)
    assert words in message


def test_an_answer_page_draws_the_students_head_and_changing_the_sentence_drops_it(client, app):
    from test_model_bank import csrf_token

    url = "/quiz/real-attention-heads/previous-token-head"
    page = client.get(url).get_data(as_text=True)
    sentence = re.search(r'reads "([^"]+)"', page.replace("&#34;", '"').replace("&quot;", '"')).group(1)
    best = best_heads(sentence, 0, 0)
    wrong = next(head for head in range(NUM_HEADS) if head not in best)
    response = client.post(url, data={"csrf_token": csrf_token(page), "answer": str(wrong + 1)})
    answer_page = client.get(response.location).get_data(as_text=True)
    assert "asks=previous" in answer_page and f"predicted={wrong + 1}" in answer_page  # the figure's own URL
    assert f'alt="You answered head {wrong + 1}, which puts ' in answer_page
    # The student tries another sentence: the answer was about the question's, so it is not drawn on theirs.
    other = client.get(response.location + "?v=model-heads&sentence=a+small+dog&layer=1&head=all")
    html = other.get_data(as_text=True)
    assert other.status_code == 200 and "predicted=" not in html and "asks=" not in html
    assert "Your answer is drawn on the question&#39;s own sentence, layer and head, not on these" in html


@pytest.mark.parametrize("said", ["true", "false", ""])
def test_a_focused_question_puts_the_students_answer_in_the_bars_title_judged_by_the_entropy(said):
    """The figure itself answers the true/false question: the bars' title gives the entropy, the verdict and the
    student's answer with ✓ or ✗, on the phone too (a line taller)."""
    for layer, head in ((3, 5), (1, 1)):  # one focused head and one broad one on the default sentence
        params = KIND.parse({"layer": layer, "head": head, "asks": "focused", "said": said})
        result = KIND.compute(params)
        focused = result.characters.focused(layer - 1, head - 1)
        for layout in ("wide", "narrow"):
            figure = KIND.draw(params, result, KIND.figure_inches(params, layout, result))
            (title,) = [ax.get_title(loc="left") for ax in figure.axes if ax.get_title(loc="left")]
            assert title.split(": ")[1].startswith("focused" if focused else "broad")
            if said:
                right = (said == "true") == focused
                assert title.endswith(f"your answer: {'focused' if said == 'true' else 'broad'} "
                                      f"{'✓' if right else '✗'}")
            else:
                assert "your answer" not in title
        unsaid = KIND.parse({"layer": layer, "head": head, "asks": "focused"})
        taller = KIND.figure_inches(params, "narrow")[1] - KIND.figure_inches(unsaid, "narrow")[1]
        assert taller == pytest.approx(0.0 if not said else line_height(FONT), abs=0.011)
