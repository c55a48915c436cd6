"""The "What real attention heads do" bank: keys computed from the real model at run time (checked here against
the engine's attention weights by plain loops), true_false keys given as conditions, and their load errors."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

from app.bank.loader import load_bank_bytes
from app.bank.variants import instantiate
from app.visuals import check_visual
from app.visuals.model import run
from conftest import csrf_token

BANK_FILE = Path(__file__).resolve().parent.parent / "quizzes" / "real-attention-heads.yaml"
SEEDS = range(12)


@pytest.fixture(scope="module")
def bank():
    result = load_bank_bytes(BANK_FILE.read_bytes(), "quizzes/real-attention-heads.yaml", check_visual)
    assert result.errors == (), [str(error) for error in result.errors]
    return result.bank


def sentence_of(question) -> str:
    return re.search(r'reads "([^"]+)"', question.prompt).group(1)


def mean_on(weights, offset: int | None = None, key: int | None = None) -> float:
    """A head's mean weight over its queries on key i + offset (queries that have one), or on a fixed key."""
    n = len(weights)
    if key is not None:
        return sum(weights[i][key] for i in range(n)) / n
    queries = [i for i in range(n) if 0 <= i + offset < n]
    return sum(weights[i][i + offset] for i in queries) / len(queries)


def best_head(attentions, layer: int, **where) -> int:
    """1-based: the head of 1-based `layer` with the largest mean weight, by a loop."""
    values = [mean_on(attentions[layer - 1][head].tolist(), **where) for head in range(12)]
    return values.index(max(values)) + 1


def key_of(question):
    if question.type == "numeric":
        return question.answer
    return question.correct_option_ids == ("true",)


def test_the_bank_has_at_least_six_questions_each_with_a_model_visual_of_its_sentence(bank):
    assert len(bank.questions) >= 6
    for question in bank.questions:
        concrete = instantiate(question, 3)
        assert concrete.visual.kind in ("model-heads", "model-overview")
        assert concrete.visual.params["sentence"] == sentence_of(concrete)
        assert "{{" not in concrete.prompt + concrete.explanation


@pytest.mark.parametrize("seed", SEEDS)
def test_every_key_is_the_models_own_number(bank, seed):
    for question in bank.questions:
        concrete = instantiate(question, seed)
        attentions = run(sentence_of(concrete)).attentions
        layer = int(m.group(1)) if (m := re.search(r"layer (\d+)", concrete.prompt)) else None
        if question.id == "previous-token-head":
            assert concrete.answer == best_head(attentions, 1, offset=-1)
        elif question.id == "next-token-head":
            assert concrete.answer == best_head(attentions, 2, offset=1)
        elif question.id == "cls-head-by-layer":
            assert concrete.answer == best_head(attentions, layer, key=0)
        elif question.id == "nothing-to-do":
            parked = sum(mean_on(attentions[layer - 1][head].tolist(), key=0) >= 0.5 for head in range(12))
            assert key_of(concrete) == (parked >= 7)
        elif question.id == "parked-share":
            assert concrete.answer == pytest.approx(mean_on(attentions[4][5].tolist(), key=0), abs=1e-6)
        elif question.id == "focused-or-broad":
            head = int(re.search(r"head (\d+) is focused", concrete.prompt).group(1))
            rows = attentions[layer - 1][head - 1].astype(float)
            entropy = float(-(rows * __import__("numpy").log(rows)).sum(axis=1).mean())
            assert key_of(concrete) == (entropy < 1.0)
        elif question.id == "strongest-key":
            position = int(re.search(r"token at position\s+(\d+)", concrete.prompt).group(1))
            row = attentions[1][8][position].tolist()
            assert concrete.answer == row.index(max(row))
        else:
            pytest.fail(f"no check for {question.id}")


def test_variants_change_the_sentence_and_with_it_some_keys(bank):
    for question_id in ("nothing-to-do", "focused-or-broad", "strongest-key"):
        question = bank.question(question_id)
        variants = {(sentence_of(instantiate(question, seed)), key_of(instantiate(question, seed))) for seed in SEEDS}
        assert len({sentence for sentence, _ in variants}) > 1
        assert len({key for _, key in variants}) > 1, question_id


def test_the_answer_page_grades_the_computed_key_and_shows_that_sentences_heads(app):
    client = app.test_client()
    url = "/quiz/real-attention-heads/strongest-key"
    page = client.get(url).get_data(as_text=True)
    sentence = re.search(r'reads "([^"]+)"', html.unescape(page)).group(1)
    position = int(re.search(r"token at position\s+(\d+)", page).group(1))
    row = run(sentence).attentions[1][8][position].tolist()
    response = client.post(url, data={"csrf_token": csrf_token(page), "answer": str(row.index(max(row)))})
    answer_page = client.get(response.location).get_data(as_text=True)
    assert '<h1 id="verdict">Correct</h1>' in answer_page
    assert "/plots/model-heads.png?" in answer_page
    alt = html.unescape(re.search(r'alt="(You answered[^"]*)"', answer_page).group(1))
    assert " ".join(run(sentence).tokens) in alt  # the figure is of this very sentence
    # ... and answers the question asked: this query's strongest key, with the student's own answer
    assert alt.startswith(f"You answered position {row.index(max(row))}, rightly: query ")
    assert f"({position}) puts the most weight on " in alt


BANK = """\
id: tiny
title: Tiny
questions:
  - id: q
    type: true_false
    params: {sentence: ["the cat sat on the mat"]}
    prompt: "{{ sentence }}"
    answer: focused(sentence, 1, 3)
    explanation: x
"""


def test_a_condition_key_loads_and_keys_the_true_option():
    result = load_bank_bytes(BANK.encode(), "bank.yaml", check_visual)
    assert result.errors == ()
    assert instantiate(result.bank.questions[0], 0).correct_option_ids == ("true",)


@pytest.mark.parametrize(("change", "expected"), [
    (("answer: focused(sentence, 1, 3)", "answer: previous_weight(sentence, 1, 3)"),
     "bank.yaml:8:13: questions[0].answer: with sentence = 'the cat sat on the mat': the answer condition gives 0.99"),
    (("answer: focused(sentence, 1, 3)", "answer: focused(sentence, 7, 3)"),
     "bank.yaml:8:13: questions[0].answer: with sentence = 'the cat sat on the mat': focused(...) failed: layer "
     "must be a whole number from 1 to 6, got 7"),
    (("answer: focused(sentence, 1, 3)", "answer: focused(sentence, 1)"),
     "bank.yaml:8:13: questions[0].answer: with sentence = 'the cat sat on the mat': focused(...) failed:"),
    (("the cat sat on the mat", "cat"),
     "bank.yaml:8:13: questions[0].answer: with sentence = 'cat': focused(...) failed: the sentence is one token "
     "long after WordPiece ('cat'), and a head's previous- and next-token shares are measured between the "
     "sentence's own tokens: type at least two words"),
    (("    params: {sentence: [\"the cat sat on the mat\"]}\n", ""),
     "bank.yaml:7:13: questions[0].answer: a true_false answer is true or false (no quotes); got 'focused(sentence, 1, "
     "3)' (a condition like"),
])
def test_a_bad_condition_key_is_reported_at_its_line(change, expected):
    result = load_bank_bytes(BANK.replace(*change).encode(), "bank.yaml", check_visual)
    messages = [str(error) for error in result.errors]
    assert any(message.startswith(expected) for message in messages), messages


def test_what_the_explanations_say_of_every_sentence_holds(bank):
    from app.visuals.model import head_characters

    sentences = {sentence_of(instantiate(bank.questions[0], seed)) for seed in range(40)}
    assert len(sentences) == 5
    for sentence in sentences:
        characters = head_characters(run(sentence).attentions)
        assert sum(characters.label(0, head) == "cls" for head in range(12)) == 0  # "the first layer has none parked"
        # "one of its heads follows the previous token, and the others spread their weight broadly"
        assert [characters.label(0, head) for head in range(12)] == ["broad"] * 2 + ["previous"] + ["broad"] * 9
        assert characters.label(4, 5) == "cls"  # layer 5 head 6: "the head has parked its weight"
        assert characters.label(1, 8) == "next"  # layer 2 head 9 "mostly looks at the next token"


def test_every_sentence_is_one_token_a_word_as_the_prompts_count_them(bank):
    """strongest-key says "[CLS] at position 0, then the words, then [SEP]": a word WordPiece cuts in two
    ("postman" -> post ##man) would put a different token at the position the student counts to."""
    sentences = {sentence_of(instantiate(bank.questions[0], seed)) for seed in range(40)}
    for sentence in sentences:
        assert list(run(sentence).tokens) == ["[CLS]", *sentence.split(), "[SEP]"], sentence


def test_focused_or_broad_is_not_won_by_always_answering_one_way(bank):
    """Over all six layers 78 % of its variants were broad: "false" every time scored about 0.78."""
    question = next(q for q in bank.questions if q.id == "focused-or-broad")
    keys = [key_of(instantiate(question, seed)) for seed in range(300)]
    assert 0.3 <= sum(keys) / len(keys) <= 0.7
