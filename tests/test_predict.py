"""Predict, then reveal (issue 14): a cells or numeric question's visual draws the student's prediction beside
the answer's cells or the engine's number, says the comparison in words, and refuses at bank load the kinds
that cannot draw it; and the controls keep what a student typed when it is refused (aria-invalid)."""

from __future__ import annotations

import re
import shutil
from html import unescape
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import parse_qs, urlsplit

import numpy as np
import pytest
from conftest import answer_via_form
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from matplotlib.colors import to_rgba
from matplotlib.patches import Rectangle

from app.bank.loader import load_bank_file
from app.grading import grade, parse_answer
from app.plots.figure import ANSWER_STYLE, PREDICTED_STYLE
from app.visuals import KINDS, check_visual, get_kind
from app.visuals.model import top_keys
from app.web.visual_views import answer_text, with_answer

ROOT = Path(__file__).parent.parent
SOFT = get_kind("soft-lookup")
HEADS = get_kind("model-heads")


# --- the answer as a visual's param ------------------------------------------------------------------------


@pytest.mark.parametrize("answer, text", [
    ([[1, 2], [0, 1], [0, 1]], "0,1;1,2"),  # sorted, each cell once
    ([], ""),  # nothing ticked, on a cells question
    (0.5, "0.5"),
    (3.0, "3"),
    (["a", "c"], "a,c"),
    (True, "true"),
    ("b", "b"),
])
def test_an_answer_becomes_the_text_of_a_param(answer, text):
    assert answer_text(answer) == text


def test_a_cells_answer_goes_to_the_prediction_and_the_key_to_the_answer_cells():
    params = with_answer(SOFT, SOFT.parse({}), "cells", [[0, 1]], key=[[0, 0], [1, 2]])
    assert (params.predicted_cells, params.answer_cells, params.choice) == ("0,1", "0,0;1,2", "")
    numeric = with_answer(SOFT, SOFT.parse({"weight_cell": "1,2"}), "numeric", 0.25, key=0.4)
    assert (numeric.predicted_weight, numeric.predicted_cells) == ("0.25", "")
    choice = with_answer(SOFT, SOFT.parse({}), "true_false", True)
    assert (choice.choice, choice.predicted_cells) == ("true", "")


# --- refused at bank load ----------------------------------------------------------------------------------


def test_a_kind_that_cannot_draw_cells_is_refused_for_a_cells_question():
    able = {question_type: sorted(name for name, kind in KINDS.items() if question_type in kind.predictions)
            for question_type in ("cells", "numeric")}
    assert able == {"cells": ["model-heads", "soft-lookup"],
                    "numeric": ["complexity", "head-split", "model-heads", "model-overview", "soft-lookup"]}
    (problem,) = check_visual("complexity", {}, "cells", [[0, 0]])
    assert problem == (("kind",), "a cells question's visual draws the student's prediction, and 'complexity' "
                                  "cannot; the kinds that can: model-heads, soft-lookup")
    # A numeric question keeps the visuals that show its quantity their own way (a count, a head width).
    assert check_visual("complexity", {}, "numeric", 1024.0) == []
    assert check_visual("complexity", {}, "single_choice") == []


@pytest.mark.parametrize("kind, params, question_type, key, words", [
    ("soft-lookup", {}, "cells", [[0, 5]],
     "the question's answer cannot be drawn on this figure: predicted_cells has the cell (0, 5), outside the figure's "
     "2 × 5 grid"),
    ("soft-lookup", {}, "numeric", 0.78, "predicted_weight needs weight_cell"),
    ("soft-lookup", {"weight_cell": "2,0"}, "numeric", 0.78, "weight_cell has the cell (2, 0)"),
    ("soft-lookup", {"weight_cell": "0,0;0,1"}, "numeric", 0.78, "weight_cell names one cell"),
    ("model-heads", {"head": "all"}, "cells", [[1, 1]], "a prediction is drawn on one head"),
    ("model-heads", {"sentence": "a cat"}, "cells", [[4, 0]], "(4, 0), outside the figure's 4 × 4 grid"),
])
def test_a_visual_that_cannot_take_the_key_as_a_prediction_is_refused(kind, params, question_type, key, words):
    problems = check_visual(kind, params, question_type, key)
    assert len(problems) == 1 and words in problems[0][1], problems


def test_a_misspelt_kind_gets_its_did_you_mean():
    ((path, message),) = check_visual("head_split", {})
    assert path == ("kind",) and message.startswith("unknown visual kind 'head_split' (did you mean 'head-split'?); "
                                                    "the kinds are attention-playground, ")
    assert "did you mean" not in check_visual("heatmap", {})[0][1]


def test_a_visual_that_can_draw_the_key_passes():
    assert check_visual("soft-lookup", {}, "cells", [[0, 0], [1, 2]]) == []
    assert check_visual("soft-lookup", {"weight_cell": "0,0"}, "numeric", 0.78) == []
    assert check_visual("model-heads", {"head": 3}, "cells", [[8, 7]]) == []


CELLS_BANK = """\
id: grid-bank
title: Grid
questions:
  - id: predict
    type: cells
    prompt: For each query, tick the key that gets its largest weight.
    grid: {rows: [kitten, truck], cols: [cat, dog, car, tree, sun]}
    answer: [[0, 0], [1, 2]]
    explanation: Panel 3 of the figure.
    visual: {kind: soft-lookup, params: {queries: kitten truck, keys: cat dog car tree sky}}
"""


@pytest.mark.parametrize("grid, error", [
    ("{rows: [kitten, truck], cols: [cat, dog, car, tree, sun]}",
     "grid.yaml:7:41: questions[0].grid.cols: the grid's cols must be the figure's keys, in order: cat, dog, car, tree, sky; "
     "the grid has cat, dog, car, tree, sun"),
    # The same words in another order: the key [0, 0] would be graded on "dog" while the figure says "cat".
    ("{rows: [kitten, truck], cols: [dog, cat, car, tree, sky]}", "the grid has dog, cat, car, tree, sky"),
    ("{rows: 2, cols: [cat, dog, car, tree, sky]}",
     "grid.yaml:7:18: questions[0].grid.rows: the grid's rows must be the figure's queries, in order: kitten, truck; the grid "
     "has 2 numbered ones"),
    ("{rows: [kitten, truck], cols: [cat, dog, car, tree, sky]}", None),
])
def test_a_cells_grid_must_be_its_figures_grid(tmp_path, grid, error):
    """A cells question's grid is what the student ticks, and its figure what the answer page explains: a grid
    labelled "sun" over a figure of "sky", or the keys in another order, graded against the other's words."""
    path = tmp_path / "grid.yaml"
    path.write_text(CELLS_BANK.replace("{rows: [kitten, truck], cols: [cat, dog, car, tree, sun]}", grid))
    result = load_bank_file(path, "grid.yaml", check_visual)
    messages = [str(problem) for problem in result.errors]
    if error is None:
        assert messages == []
    else:
        assert len(messages) == 1 and error in messages[0], messages


def test_a_model_heads_cells_grid_is_the_sentences_wordpiece_tokens():
    tokens = ["[CLS]", "a", "cat", "[SEP]"]
    grid = SimpleNamespace(rows=tokens, cols=tokens)
    assert check_visual("model-heads", {"sentence": "a cat", "head": 3}, "cells", [[2, 1]], grid) == []
    (problem,) = check_visual("model-heads", {"sentence": "a cat", "head": 3}, "cells", [[2, 1]],
                              SimpleNamespace(rows=tokens, cols=["a", "cat"]))
    assert problem == (("grid", "cols"), "the grid's cols must be the figure's keys, in order: [CLS], a, cat, [SEP]; "
                                         "the grid has a, cat")


# --- soft-lookup: cells --------------------------------------------------------------------------------------


def outlines(figure) -> dict[str, list[tuple[int, int]]]:
    """The prediction's and the answer's outlined cells of panel 3, as (row, key column), by their line style."""
    found = {"predicted": [], "answer": []}
    for ax in figure.axes:
        columns = [tick.get_text() for tick in ax.get_xticklabels()]
        for patch in ax.patches:
            if not isinstance(patch, Rectangle):
                continue
            x, y = patch.get_xy()
            col, row = round(x + patch.get_width() / 2), round(y + patch.get_height() / 2)
            dashed = np.allclose(patch.get_edgecolor(), to_rgba(PREDICTED_STYLE["edgecolor"]))
            assert dashed or np.allclose(patch.get_edgecolor(), to_rgba(ANSWER_STYLE["edgecolor"]))
            which = "predicted" if dashed else "answer"
            found[which].append((row, (ax, columns, col)))
    return found


def drawn_cells(figure, result) -> dict[str, set[tuple[int, int]]]:
    """The outlined cells, with each axes' column mapped back to its key (panel 3 may be split in chunks)."""
    cells = {}
    for which, marks in outlines(figure).items():
        cells[which] = set()
        for row, (ax, columns, col) in marks:
            title = ax.get_title(loc="left")
            assert title.startswith("3."), title  # drawn on the soft weights only
            start = int(re.search(r"keys (\d+) to", title).group(1)) - 1 if "keys " in title else 0
            cells[which].add((row, start + col))
    return cells


def legend_texts(figure) -> list[str]:
    return [text.get_text() for legend in figure.legends for text in legend.get_texts()]


QUERY_WORDS = st.lists(st.sampled_from(["kitten", "truck", "cat", "dog", "zorblax", "it"]), min_size=1, max_size=3)
KEY_WORDS = st.lists(st.sampled_from(["cat", "dog", "car", "tree", "sky", "quux", "kitten"]), min_size=2, max_size=7)


@st.composite
def predictions(draw):
    queries, keys = draw(QUERY_WORDS), draw(KEY_WORDS)
    cell = st.tuples(st.integers(0, len(queries) - 1), st.integers(0, len(keys) - 1))
    return {"queries": " ".join(queries), "keys": " ".join(keys),
            "temperature": draw(st.sampled_from([0.05, 0.5, 1.0, 20.0])),
            "predicted_cells": [list(c) for c in draw(st.sets(cell, max_size=4))],
            "answer_cells": [list(c) for c in draw(st.sets(cell, min_size=1, max_size=3))]}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(predictions())
def test_soft_lookup_draws_and_words_every_prediction_from_the_engines_weights(values):
    params = SOFT.parse(values)
    result = SOFT.compute(params)
    predicted, answer = {tuple(c) for c in values["predicted_cells"]}, {tuple(c) for c in values["answer_cells"]}
    figure = SOFT.draw(params, result, SOFT.figure_inches(params, "narrow", result))
    assert drawn_cells(figure, result) == {"predicted": predicted, "answer": answer}
    assert legend_texts(figure) == ["your prediction", "the answer"]
    caption, alt = SOFT.caption(params, result), SOFT.alt(params, result)
    for words in (caption, alt):
        assert words.startswith("In panel 3 (your cells outlined with dashes, the answer's with a solid line), ")
    weights = result.soft_weights
    for row in sorted({r for r, _ in predicted | answer}):
        query = result.query_tokens[row]
        chose = [f"'{result.key_tokens[c]}' (weight {weights[row, c]:.2f})" for c in sorted(
            c for r, c in predicted if r == row)]
        right = [f"'{result.key_tokens[c]}' (weight {weights[row, c]:.2f})" for c in sorted(
            c for r, c in answer if r == row)]
        best = [c for c in range(len(result.key_tokens)) if weights[row, c] == weights[row].max()]
        sentence = (f"for query '{query}' you predicted {' and '.join(chose) or 'no key'}; "
                    f"the answer is {' and '.join(right) or 'no key'}; ")
        if len(best) == 1:
            sentence += f"the strongest key is '{result.key_tokens[best[0]]}' (weight {weights[row].max():.2f})"
        else:
            tied = " and ".join(f"'{result.key_tokens[c]}'" for c in best)
            sentence += f"the strongest keys tie: {tied} (weight {weights[row].max():.2f} each)"
        assert sentence in caption, (sentence, caption)
    hits = len(predicted & answer)
    if predicted == answer:
        assert f"Your prediction is the answer exactly ({len(answer)} cell" in caption
    elif not predicted:
        assert "You predicted no cells; the answer has " in caption
    else:
        assert f" {hits} of your {len(predicted)} predicted cell" in caption
        assert "is the answer exactly" not in caption


def test_the_words_of_a_right_a_wrong_and_a_tied_prediction():
    right = SOFT.describe(SOFT.parse({"predicted_cells": "0,0;1,2", "answer_cells": "0,0;1,2"}))
    assert ("for query 'kitten' you predicted 'cat' (weight 0.78); the answer is 'cat' (weight 0.78); the strongest "
            "key is 'cat' (weight 0.78); for query 'truck' you predicted 'car' (weight 0.40)") in right.caption
    assert "Your prediction is the answer exactly (2 cells)." in right.caption
    wrong = SOFT.describe(SOFT.parse({"predicted_cells": "0,1", "answer_cells": "0,0;1,2"}))
    assert "0 of your 1 predicted cell are in the answer, which has 2 cells." in wrong.caption
    assert "for query 'truck' you predicted no key; the answer is 'car' (weight 0.40)" in wrong.caption
    tied = SOFT.describe(SOFT.parse({"queries": "truck", "keys": "cat dog", "answer_cells": "0,0"}))
    assert "the strongest keys tie: 'cat' and 'dog' (weight 0.50 each)" in tied.caption
    assert "You predicted no cells; the answer has 1 cell." in tied.caption


def test_without_a_prediction_the_figure_and_its_words_are_the_ones_before():
    plain, choice = SOFT.describe(SOFT.parse({})), SOFT.describe(SOFT.parse({"choice": "true"}))
    for described in (plain, choice):
        assert "predict" not in described.alt + described.caption
    assert plain.sizes == SOFT.describe(SOFT.parse({"temperature": 1.0})).sizes
    for layout, (width, height) in choice.sizes.items():  # the answer's band on top: taller, as wide
        assert width == plain.sizes[layout][0] and height > plain.sizes[layout][1]
    figure = SOFT.draw(SOFT.parse({}), plain.result, SOFT.figure_inches(SOFT.parse({})))
    assert figure.legends == [] and outlines(figure) == {"predicted": [], "answer": []}


def test_the_legend_takes_room_of_its_own_in_both_layouts():
    for layout in ("wide", "narrow"):
        plain = SOFT.size(SOFT.parse({}), layout)
        predicted = SOFT.size(SOFT.parse({"predicted_cells": "0,0"}), layout)
        assert predicted[0] == plain[0] and predicted[1] > plain[1]


def test_a_wide_key_row_split_into_chunks_keeps_each_outline_on_its_key():
    values = {"queries": "kitten", "keys": "cat dog car tree sky kitten truck bus road hill",
              "predicted_cells": "0,9;0,1", "answer_cells": "0,0"}
    params = SOFT.parse(values)
    result = SOFT.compute(params)
    figure = SOFT.draw(params, result, SOFT.figure_inches(params, "narrow", result))
    assert sum(ax.get_title(loc="left").startswith("3.") for ax in figure.axes) > 1  # panel 3 is split
    assert drawn_cells(figure, result) == {"predicted": {(0, 9), (0, 1)}, "answer": {(0, 0)}}


# --- soft-lookup: a number ----------------------------------------------------------------------------------


@pytest.mark.parametrize("predicted, cell, expected", [
    (0.5, "0,0", "the engine's weight there is 0.78, 0.28 higher than your prediction."),
    (0.78, "0,0", "the engine's weight there is 0.78, which your prediction matches to the 2 decimals shown."),
    (0.9, "1,2", "the engine's weight there is 0.40, 0.5 lower than your prediction."),
    (1.5, "1,0", "0.15, 1.4 lower than your prediction (a softmax weight lies between 0 and 1)."),
])
def test_a_numeric_prediction_sits_beside_the_engines_weight(predicted, cell, expected):
    params = SOFT.parse({"predicted_weight": predicted, "weight_cell": cell})
    result = SOFT.compute(params)
    row, col = map(int, cell.split(","))
    shown = f"{result.soft_weights[row, col]:.2f}"
    caption = SOFT.caption(params, result)
    assert caption.startswith(f"In panel 3, you predicted {predicted:g} for the weight of query "
                              f"'{result.query_tokens[row]}' on key '{result.key_tokens[col]}'")
    assert expected in caption and shown in expected
    figure = SOFT.draw(params, result, SOFT.figure_inches(params, "wide", result))
    assert legend_texts(figure) == [f"your prediction: {predicted:g}", f"the engine's weight: {shown}"]
    assert drawn_cells(figure, result) == {"predicted": {(row, col)}, "answer": {(row, col)}}


# --- model-heads: the real model -----------------------------------------------------------------------------


def link_pairs(figure, style) -> set[tuple[int, int]]:
    """The (query, key) links drawn in `style` (the prediction's or the answer's colour)."""
    colour = np.array(to_rgba(style["edgecolor"]))
    pairs = set()
    for ax in figure.axes:
        for collection in ax.collections:
            colours = collection.get_colors()
            if len(colours) and np.allclose(colours[0], colour) and collection.get_linewidths()[0] == 2.0:
                pairs |= {(round(segment[0][1]), round(segment[1][1])) for segment in collection.get_segments()}
    return pairs


@pytest.mark.parametrize("predicted, answer", [([[8, 2]], [[8, 7]]), ([[8, 7]], [[8, 7]]), ([], [[8, 7], [3, 2]])])
def test_model_heads_draws_the_predicted_and_the_right_links_with_the_engines_weights(predicted, answer):
    params = HEADS.parse({"layer": 1, "head": 3, "predicted_cells": predicted, "answer_cells": answer})
    result = HEADS.compute(params)
    for layout in ("wide", "narrow"):
        figure = HEADS.draw(params, result, HEADS.figure_inches(params, layout, result))
        assert link_pairs(figure, PREDICTED_STYLE) == {tuple(c) for c in predicted}
        assert link_pairs(figure, ANSWER_STYLE) == {tuple(c) for c in answer}
        assert legend_texts(figure) == ["your prediction", "the answer"]
    weights, tokens = result.weights[0], result.tokens
    caption = HEADS.caption(params, result)
    for query, key in answer:
        best = top_keys(weights[query])
        assert f"the answer is '{tokens[key]}'({key}) (weight {weights[query, key]:.2f})" in caption
        if len(best) == 1:
            assert (f"the strongest key is '{tokens[best[0]]}'({best[0]}) (weight {weights[query, best[0]]:.2f})"
                    in caption)
    assert HEADS.alt(params, result).startswith("In the links (your pairs dashed, the answer's solid), for query ")


# --- the answer page -----------------------------------------------------------------------------------------


@pytest.fixture
def predict_app(tmp_path):
    """The bundled practice bank (it holds the predict-then-reveal question) and the seed bank, in a folder."""
    from app import create_app

    folder = tmp_path / "quizzes"
    folder.mkdir()
    shutil.copy(ROOT / "quizzes" / "attention-practice.yaml", folder)
    shutil.copy(ROOT / "quizzes" / "attention-transformers.yaml", folder)
    return create_app({"TESTING": True, "SECRET_KEY": "test-secret-key", "QUIZ_DIR": str(folder),
                       "DATABASE_URL": f"sqlite:///{tmp_path / 'test.sqlite3'}"}), folder


def test_the_practice_question_loads_and_its_key_is_the_engines_strongest_key(predict_app):
    _, folder = predict_app
    result = load_bank_file(folder / "attention-practice.yaml", "attention-practice.yaml", check_visual)
    assert result.errors == ()
    (question,) = [q for q in result.bank.questions if q.id == "predict-soft-lookup"]
    params = SOFT.parse(question.visual.params)
    weights = SOFT.compute(params).soft_weights
    assert question.grid.rows == list(SOFT.compute(params).query_tokens)
    assert question.grid.cols == list(SOFT.compute(params).key_tokens)
    assert sorted(map(list, question.answer)) == [[row, int(np.argmax(w))] for row, w in enumerate(weights)]
    assert check_visual("soft-lookup", dict(question.visual.params), "cells", question.answer) == []
    for number in re.findall(r"\b0\.\d\d\b", question.explanation):  # every weight it quotes is the engine's
        assert number in {f"{w:.2f}" for w in weights.ravel()}, number
    assert grade(question, parse_answer(question, [[0, 0], [1, 2]])).correct


def figure_of(html: str) -> tuple[dict, str]:
    """The answer page's figure: its image URL's params and its alt text."""
    tag = re.search(r'<img class="visual-image" src="([^"]+)"[^>]*alt="([^"]*)"', html)
    assert tag, "no figure on the page"
    return parse_qs(urlsplit(unescape(tag.group(1))).query), unescape(tag.group(2))


def test_the_question_page_hides_the_figure_and_the_answer_page_draws_the_prediction(predict_app):
    app, _ = predict_app
    client = app.test_client()
    question = client.get("/quiz/attention-practice/predict-soft-lookup").get_data(as_text=True)
    assert 'class="visual-image"' not in question  # predict first: no figure before the answer
    answered = answer_via_form(client, "attention-practice", "predict-soft-lookup", ["0,1", "1,2"])
    assert answered.status_code == 303
    page = client.get("/quiz/attention-practice/predict-soft-lookup/answer")
    html = page.get_data(as_text=True)
    query, alt = figure_of(html)
    assert query["predicted_cells"] == ["0,1;1,2"]
    assert alt.startswith("In panel 3 (your cells outlined with dashes, the answer's with a solid line), for query "
                          "'kitten' you predicted 'dog' (weight 0.11)")
    image = client.get(unescape(re.search(r'<img class="visual-image" src="([^"]+)"', html).group(1)))
    assert image.status_code == 200 and image.mimetype == "image/png"
    # The live controls send the prediction with their values, as hidden plot params.
    assert re.search(r'<input type="hidden" name="predicted_cells" value="0,1;1,2" data-plot-param data-prediction>', html)


def test_the_answer_page_marks_the_key_beside_the_prediction(predict_app):
    # Needs the answer page to pass the key: visual_view(..., answer=result.answer, key=result.correct_answer).
    app, _ = predict_app
    client = app.test_client()
    answer_via_form(client, "attention-practice", "predict-soft-lookup", ["0,1"])
    query, alt = figure_of(client.get("/quiz/attention-practice/predict-soft-lookup/answer").get_data(as_text=True))
    assert query["answer_cells"] == ["0,0;1,2"]
    assert "the answer is 'cat' (weight 0.78)" in alt and "0 of your 1 predicted cell are in the answer" in alt


def test_other_words_drop_the_prediction_with_a_note_and_the_temperature_keeps_it(predict_app):
    app, _ = predict_app
    client = app.test_client()
    answer_via_form(client, "attention-practice", "predict-soft-lookup", ["0,0", "1,2"])
    answer = "/quiz/attention-practice/predict-soft-lookup/answer"
    hot = client.get(f"{answer}?v=soft-lookup&temperature=5&queries=kitten+truck&keys=cat+dog+car+tree+sky")
    query, alt = figure_of(hot.get_data(as_text=True))
    assert hot.status_code == 200 and query["predicted_cells"] == ["0,0;1,2"] and query["temperature"] == ["5.0"]
    other = client.get(f"{answer}?v=soft-lookup&temperature=1&queries=dog&keys=cat+dog")
    html = other.get_data(as_text=True)
    query, alt = figure_of(html)
    assert other.status_code == 200 and "predicted_cells" not in query and query["queries"] == ["dog"]
    assert "Your prediction is drawn on the question&#39;s own query words and key words in the dictionary" in html


# --- controls that keep a refused value ---------------------------------------------------------------------


def control(html: str, control_id: str) -> str:
    match = re.search(rf'<(?:input|select) id="{control_id}"[^>]*>', html, re.DOTALL)
    assert match, control_id
    return match.group(0)


@pytest.mark.parametrize("kind, anchor, query, marked, sentence", [
    ("multi-head", "multi-head", "num_heads=3&d_model=16", ("num_heads", "d_model"),
     "d_model=16 is not divisible by num_heads=3"),
    ("head-split", "head-split", "num_heads=3&d_model=64", ("num_heads", "d_model"),
     "d_model=64 is not divisible by num_heads=3"),
    ("long-range", "long-range", "distance=200&max_distance=100", ("distance", "max_distance"),
     "distance (200) must be at most max_distance (100)"),
    ("autoregressive-pixels", "autoregressive", "row=5&height=4", ("row", "height"), "pixel (row 5, col"),
])
def test_a_rule_across_two_fields_marks_both_and_says_its_sentence_once(client, kind, anchor, query, marked,
                                                                         sentence):
    """Without JavaScript: both values stay in their fields, marked and described by the one sentence above; the
    JSON answer (what static/visual.js marks from) names both fields with it."""
    page = client.get(f"/learn/attention?v={kind}&{query}")
    html = page.get_data(as_text=True)
    assert page.status_code == 400
    status = re.search(rf'<p class="visual-error" id="{anchor}-status"[^>]*>([^<]*)</p>', html).group(1)
    assert sentence in status and status.endswith("change the marked values to draw yours.")
    for name in marked:
        field = control(html, f"{anchor}-{name}")
        assert 'aria-invalid="true"' in field and f"{anchor}-status" in re.search(
            r'aria-describedby="([^"]*)"', field).group(1).split()
    assert html.count(sentence) == 1
    refused = client.get(f"/plots/{kind}.json?{query}")
    fields = refused.get_json()["error"]["fields"]
    assert refused.status_code == 400 and set(fields) == set(marked) and all(sentence in f for f in fields.values())


def test_a_refused_value_stays_in_its_field_marked_with_its_message_and_the_figure_is_the_pages_own(client):
    page = client.get("/learn/attention?v=soft-lookup&temperature=99&queries=kitten+dog&keys=cat+tree")
    html = page.get_data(as_text=True)
    assert page.status_code == 400
    temperature = control(html, "soft-lookup-temperature")
    assert 'value="99"' in temperature and 'aria-invalid="true"' in temperature
    assert 'aria-describedby="soft-lookup-temperature-error"' in temperature
    message = re.search(r'<p class="form-error field-error" id="soft-lookup-temperature-error">([^<]*)</p>', html)
    assert message and "temperature must be at most 20" in message.group(1)
    # The status line says what the figure shows, without the field's sentence a second time.
    status = re.search(r'<p class="visual-error" id="soft-lookup-status"[^>]*>([^<]*)</p>', html).group(1)
    assert html.count(message.group(1)) == 1
    assert status == "The plot shows the default values instead: change the marked value to draw yours."
    # The other fields keep what the student typed, unmarked; their help is still their description.
    queries = control(html, "soft-lookup-queries")
    assert 'value="kitten dog"' in queries and "aria-invalid" not in queries
    assert 'aria-describedby="soft-lookup-queries-help"' in queries
    assert 'value="cat tree"' in control(html, "soft-lookup-keys")
    query, _ = figure_of(html[html.index('id="soft-lookup"'):])
    assert query["temperature"] == ["1.0"] and query["queries"] == ["kitten truck"]  # the figure's own values


def test_every_refused_field_is_marked_and_a_choice_keeps_its_options(client):
    page = client.get("/learn/attention?v=soft-lookup&temperature=hot&queries=%3F%21&keys=cat")
    html = page.get_data(as_text=True)
    assert page.status_code == 400
    for name, words in (("temperature", "temperature must be a number"), ("queries", "has 0 words"),
                        ("keys", "keys")):
        field = control(html, f"soft-lookup-{name}")
        assert 'aria-invalid="true"' in field, name
        assert f"soft-lookup-{name}-error" in field
        error = re.search(rf'id="soft-lookup-{name}-error">([^<]*)<', html)
        assert error and words in unescape(error.group(1)), (name, error and error.group(1))
    assert 'value="hot"' in control(html, "soft-lookup-temperature")


def test_a_good_value_marks_nothing(client):
    html = client.get("/learn/attention?v=soft-lookup&temperature=2").get_data(as_text=True)
    assert "aria-invalid" not in html[html.index('id="soft-lookup"'):html.index("</section>", html.index(
        'id="soft-lookup"'))]


# --- in the browser ----------------------------------------------------------------------------------------


def wait_until(page, expression: str, arg=None, timeout: float = 20.0) -> None:
    """Poll a JS function with page.evaluate (wait_for_function evals strings, which the CSP forbids)."""
    import time

    deadline = time.monotonic() + timeout
    while not page.evaluate(expression, arg):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {expression}")
        page.wait_for_timeout(50)


IMAGE = "() => { const img = document.querySelector('.visual-image'); return {src: img.getAttribute('src'), " \
        "alt: img.alt, width: img.naturalWidth, done: img.complete}; }"


def test_in_the_browser_the_prediction_follows_the_temperature_and_leaves_with_other_words(browser, tmp_path,
                                                                                          artifacts):
    from conftest import STRONG_SECRET_KEY, LiveServer
    from test_a11y import BLOCKING_IMPACTS, run_axe

    from app import create_app

    folder = tmp_path / "quizzes"
    folder.mkdir()
    shutil.copy(ROOT / "quizzes" / "attention-practice.yaml", folder)
    app = create_app({"TESTING": False, "SECRET_KEY": STRONG_SECRET_KEY, "QUIZ_DIR": str(folder),
                      "DATABASE_URL": f"sqlite:///{tmp_path / 'browser.sqlite3'}"})
    with LiveServer(app) as server:
        for width in (1280, 375):
            context = browser.new_context(viewport={"width": width, "height": 900}, device_scale_factor=2)
            page = context.new_page()
            page.goto(f"{server.url}/quiz/attention-practice/predict-soft-lookup")
            assert page.locator(".visual-image").count() == 0  # predict first
            page.locator('input[name="answer"][value="0,1"]').check()
            page.locator('input[name="answer"][value="1,2"]').check()
            page.click("button:has-text('Submit answer')")
            wait_until(page, "() => { const img = document.querySelector('.visual-image'); "
                             "return img && img.complete && img.naturalWidth > 0; }")
            before = page.evaluate(IMAGE)
            assert "predicted_cells=0%2C1%3B1%2C2" in before["src"]
            assert before["alt"].startswith("In panel 3 (your cells outlined with dashes")
            page.screenshot(path=str(artifacts / f"predict-answer-{width}.png"), full_page=True)
            page.locator("#visual-temperature").fill("0.5")
            wait_until(page, "src => document.querySelector('.visual-image').getAttribute('src') !== src",
                       before["src"])
            colder = page.evaluate(IMAGE)
            assert "temperature=0.5" in colder["src"] and "predicted_cells=0%2C1%3B1%2C2" in colder["src"]
            assert colder["alt"].startswith("In panel 3") and colder["alt"] != before["alt"]
            note = page.locator(".visual-note")
            assert not note.is_visible()  # the temperature is no part of the prediction's grid
            assert "predicted_cells" not in page.url  # the page's URL carries the controls only
            page.locator("#visual-queries").fill("dog")
            wait_until(page, "src => document.querySelector('.visual-image').getAttribute('src') !== src",
                       colder["src"])
            other = page.evaluate(IMAGE)
            assert "queries=dog" in other["src"] and "predicted_cells" not in other["src"]
            assert not other["alt"].startswith("In panel 3")
            # The page says why the prediction went, as the page without JavaScript does, until the words are back.
            assert note.is_visible() and note.inner_text().startswith("Your prediction is drawn on the question's own")
            page.locator("#visual-queries").fill(page.locator("#visual-queries").get_attribute("value"))
            wait_until(page, "() => document.querySelector('.visual-note').hidden")
            assert "predicted_cells=0%2C1%3B1%2C2" in page.evaluate(IMAGE)["src"]
            # A refused value, without JavaScript's help: kept, marked, described, and no axe violation.
            page.goto(f"{server.url}/quiz/attention-practice/predict-soft-lookup/answer?v=soft-lookup&temperature=99")
            field = page.locator("#visual-temperature")
            assert field.input_value() == "99" and field.get_attribute("aria-invalid") == "true"
            described = page.locator(f"#{field.get_attribute('aria-describedby')}").inner_text()
            assert "temperature must be at most 20" in described
            blocking = [v for v in run_axe(page) if v["impact"] in BLOCKING_IMPACTS]
            assert not blocking, blocking
            context.close()


def test_the_outlines_keep_to_their_cell_so_a_neighbours_number_stays_clear():
    """The student's dashes were drawn 0.07 of a cell outside it, on a 4 pt halo: on a small heatmap they covered the
    next cell's number."""
    from matplotlib.figure import Figure

    from app.plots.figure import HALO, INSETS, mark_cells

    ax = Figure().add_subplot()
    mark_cells(ax, [(0, 1)], [(1, 2)], range(5))
    (answer, predicted) = ax.patches
    assert (answer.get_x(), answer.get_y()) == pytest.approx((1.5 + INSETS["answer"], 0.5 + INSETS["answer"]))
    assert (predicted.get_x(), predicted.get_y()) == pytest.approx((0.5 + INSETS["predicted"], -0.5 + INSETS["predicted"]))
    assert 0 < INSETS["answer"] <= 0.1 and -0.02 <= INSETS["predicted"] <= 0 and HALO <= 3
