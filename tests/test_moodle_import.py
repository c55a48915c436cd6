"""Moodle XML into a bank: the supported types with their keys, feedback and maths, what is left out said, the
result checked as validate-quizzes checks it, and a round trip through the app's own Moodle export."""

from __future__ import annotations

import re

import pytest
import yaml

from app import create_app
from app.authoring.export import _without_site_links, export_bank
from app.authoring.moodle_import import ImportFailed, import_moodle_xml
from app.bank.loader import load_bank_bytes, load_bank_file
from app.bank.variants import instantiate
from app.markup import render_inline, render_markdown
from app.paths import resource_dir

BANKS = ("attention-transformers", "attention-practice", "attention-drill", "real-attention-heads")


def _same_text(markdown_a: str, markdown_b: str, inline: bool = False) -> bool:
    render = render_inline if inline else render_markdown

    def norm(text: str) -> str:  # what a reader sees: the words and the maths, not where a paragraph ends
        return " ".join(re.sub(r"<[^>]+>", " ", str(render(text))).split())

    return norm(markdown_a) == norm(markdown_b)


@pytest.mark.parametrize("bank_id", BANKS)
def test_a_bundled_bank_comes_back_from_its_moodle_export_with_its_keys_feedback_and_maths(bank_id):
    source = load_bank_file(resource_dir("quizzes") / f"{bank_id}.yaml").bank
    exported = export_bank(source, "moodle-xml", visual="none")
    imported = import_moodle_xml(exported.text.encode(), f"{bank_id}-back")
    back = load_bank_bytes(imported.text.encode(), "back.yaml")
    assert back.errors == (), back.errors
    by_id = {q.id: q for q in back.bank.questions}
    carried = 0
    for template in source.questions:
        original, _ = _without_site_links(instantiate(template, 0))  # Moodle cannot follow the app's own paths
        if original.type == "matrix":  # a cloze table in Moodle, which has no counterpart here
            assert original.id not in by_id
            continue
        question = by_id[original.id]
        carried += 1
        if original.type == "cells":  # Moodle's list of cells comes back as that list: one option per cell
            rows, cols = original.shape
            assert question.type == "multiple_choice" and len(question.options) == rows * cols
            assert sum(bool(o.correct) for o in question.options) == len(original.answer)
            continue
        assert question.type == original.type
        assert _same_text(question.prompt, original.prompt), (question.prompt, original.prompt)
        assert _same_text(question.explanation, original.explanation)
        if original.type == "numeric":
            assert question.answer == pytest.approx(float(original.answer))
            assert [m.answer for m in question.misconceptions or []] == pytest.approx(
                [float(m.answer) for m in original.misconceptions or []])
            assert question.unit == original.unit
        elif original.type == "true_false":
            key = question.answer if question.answer is not None else question.option("true").correct
            original_key = original.answer if original.answer is not None else original.option("true").correct
            assert key == original_key
        else:
            assert [o.correct for o in question.options] == [bool(o.correct) for o in original.options]
            for mine, theirs in zip(question.options, original.options):
                assert _same_text(mine.text, theirs.text, inline=True), (mine.text, theirs.text)
                assert (mine.feedback is None) == (theirs.feedback is None)
    assert carried == len(back.bank.questions) > 0


MOODLE = """<?xml version="1.0" encoding="UTF-8"?>
<quiz>
  <question type="category"><category><text>$course$/top/Week 3: attention</text></category></question>
  <question type="multichoice">
    <name><text>Scaling &amp; heads!</text></name>
    <questiontext format="html"><text><![CDATA[<p>Why divide by \\(\\sqrt{d_k}\\)? <img src="@@PLUGINFILE@@/a.png"></p>]]></text></questiontext>
    <generalfeedback format="html"><text><![CDATA[<p>Variance: $$\\mathrm{Var}(q_i k_i) = 1$$</p>]]></text></generalfeedback>
    <single>false</single>
    <answer fraction="50"><text>Variance</text><feedback><text>Yes.</text></feedback></answer>
    <answer fraction="50"><text><![CDATA[<b>Gradients</b>]]></text></answer>
    <answer fraction="-50"><text>Speed</text><feedback><text><![CDATA[<p>No: cost is $$n^2$$.</p>]]></text></feedback></answer>
    <tags><tag><text>Week 3</text></tag></tags>
  </question>
  <question type="essay"><name><text>Explain</text></name><questiontext><text>Why?</text></questiontext></question>
  <question type="truefalse">
    <name><text>soft</text></name>
    <questiontext format="html"><text>Attention is a soft lookup.</text></questiontext>
    <generalfeedback><text></text></generalfeedback>
    <answer fraction="100"><text>true</text></answer>
    <answer fraction="0"><text>false</text></answer>
  </question>
  <question type="numerical">
    <name><text>width</text></name>
    <questiontext format="markdown"><text>How wide is a head of $d_{model} = 512$ split 8 ways?</text></questiontext>
    <generalfeedback format="markdown"><text>512 / 8 = 64.</text></generalfeedback>
    <answer fraction="100"><text>64</text><tolerance>0</tolerance></answer>
    <answer fraction="50"><text>60</text><tolerance>5</tolerance></answer>
    <answer fraction="0"><text>4096</text><feedback format="markdown"><text>That is 512 × 8.</text></feedback></answer>
    <answer fraction="0"><text>*</text></answer>
    <units><unit><multiplier>1</multiplier><unit_name>features</unit_name></unit></units>
  </question>
</quiz>
"""


def test_each_supported_type_is_carried_and_what_is_not_is_said():
    imported = import_moodle_xml(MOODLE.encode(), "week-3")
    assert (imported.questions, imported.skipped) == (3, 1)
    bank = yaml.safe_load(imported.text)
    assert bank["title"] == "Week 3: attention"  # the last category
    choice, true_false, numeric = bank["questions"]
    assert choice["id"] == "scaling-heads" and choice["type"] == "multiple_choice"
    assert choice["scoring"] == "net_correct"  # a wrong pick takes a share away, as Moodle's -50 % did
    assert choice["prompt"] == "Why divide by $\\sqrt{d_k}$?"  # the maths kept, unescaped; the image out
    assert choice["explanation"] == "Variance: $$\\mathrm{Var}(q_i k_i) = 1$$"
    assert [o["correct"] for o in choice["options"]] == [True, True, False]
    assert choice["options"][1]["text"] == "**Gradients**"
    assert choice["options"][2]["feedback"] == "No: cost is $$n^2$$."
    assert choice["tags"] == ["week-3"]
    assert true_false["answer"] is True and true_false["explanation"] == ""
    assert numeric["answer"] == 64 and numeric["tolerance"] == {"abs": 0.0} and numeric["unit"] == "features"
    assert numeric["misconceptions"] == [{"id": "slip-1", "answer": 4096.0, "feedback": "That is 512 × 8."}]
    said = "\n".join(map(str, imported.warnings))
    assert "question 2 (Scaling & heads!): the question text had images, which were left out" in said
    assert "question 3 (Explain): Moodle's essay questions have no counterpart here" in said
    assert "question 4 (soft): it has no general feedback" in said
    assert "the answer 60 is worth 50 % of the grade" in said
    assert "scored net_correct" in said


@pytest.mark.parametrize("raw, reason", [
    (b"<quiz><question", "not well-formed XML at line 1"),
    (b"<html><body/></html>", "the root element is <html>"),
    (b'<?xml version="1.0"?><!DOCTYPE q [<!ENTITY a "aaaa">]><quiz/>', "declares a DOCTYPE"),
    (b"<quiz><question type='essay'><name><text>e</text></name></question></quiz>", "no question could be imported"),
    (b" " * (20 * 1024 * 1024 + 1), "at most 20,971,520 are read"),
])
def test_a_file_that_is_not_moodle_xml_is_refused_with_a_reason(raw, reason):
    with pytest.raises(ImportFailed, match=re.escape(reason)):
        import_moodle_xml(raw, "x")


@pytest.fixture
def runner(tmp_path):
    app = create_app({"TESTING": True, "SECRET_KEY": "test-secret-key", "QUIZ_DIR": str(tmp_path),
                      "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}"})
    return app.test_cli_runner(mix_stderr=False) if "mix_stderr" in app.test_cli_runner.__code__.co_varnames \
        else app.test_cli_runner()


def test_the_command_writes_a_new_file_never_over_one_and_lists_the_banks_errors(runner, tmp_path):
    source = tmp_path / "Week 3.xml"
    source.write_text(MOODLE)
    target = tmp_path / "week-3.yaml"
    result = runner.invoke(args=["import-moodle", str(source), "-o", str(target)])
    # The true/false question has no explanation: the bank is written, its error listed with line and column.
    assert result.exit_code == 1, result.output
    assert target.exists() and "id: week-3" in target.read_text()  # the id from the file's name
    assert re.search(rf"{re.escape(str(target))}:\d+:\d+: .*explanation", result.stderr)
    assert "imported 3 question(s) as bank 'week-3'" in result.stderr
    again = runner.invoke(args=["import-moodle", str(source), "-o", str(target)])
    assert again.exit_code == 2 and "exists" in again.stderr
    fixed = tmp_path / "fixed.xml"
    fixed.write_text(MOODLE.replace("<generalfeedback><text></text></generalfeedback>",
                                    "<generalfeedback><text>Each query mixes values.</text></generalfeedback>"))
    clean = runner.invoke(args=["import-moodle", str(fixed), "--id", "wk3", "--title", "Week three"])
    assert clean.exit_code == 0, clean.stderr
    assert clean.stdout.startswith("# Imported from Moodle XML") and "title: Week three" in clean.stdout
    bad = runner.invoke(args=["import-moodle", str(fixed), "--id", "Not An Id"])
    assert bad.exit_code == 2 and "is not a bank id" in bad.stderr
    missing = runner.invoke(args=["import-moodle", str(tmp_path / "nope.xml")])
    assert missing.exit_code == 2 and "cannot read" in missing.stderr


def test_a_name_or_tag_of_no_id_characters_gets_a_made_up_id_or_is_left_out():
    """A tag 日本 once sent the id maker round forever; a name of no id characters gets question-N."""
    raw = MOODLE.replace("<name><text>soft</text></name>", "<name><text>日本語</text></name>").replace(
        "<tags><tag><text>Week 3</text></tag></tags>", "<tags><tag><text>日本</text></tag><tag><text>Week 3</text></tag></tags>")
    bank = yaml.safe_load(import_moodle_xml(raw.encode(), "jp").text)
    assert bank["questions"][0]["tags"] == ["week-3"]
    assert bank["questions"][1]["id"] == "question-4"
