"""`flask export-quiz`: Moodle XML and GIFT exports of a bank, checked against the source bank.

The Moodle XML is parsed with ElementTree; the GIFT text is read back by a port of the parts of
Moodle's own GIFT reader (question/format/gift/format.php) that these exports use.
"""

from __future__ import annotations

import base64
import itertools
import re
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app import create_app
from app.authoring import cli
from app.authoring.export import (GIFT_SPECIAL, MOODLE_PERCENTS, gift_escape, moodle_category, right_percents, to_gift,
                                  to_html, to_moodle_xml)
from app.bank.schema import Bank
from app.bank.loader import load_bank_file
from app.bank.variants import instantiate
from app.grading import score_choice
from app.markup import render_inline, render_markdown
from app.paths import resource_dir
from app.visuals import check_visual

SEED_BANK = "attention-transformers"
GIFT_ESCAPED = re.compile(r"\\([\\~=#{}:n])")  # what Moodle's GIFT reader unescapes


def gift_unescape(text: str) -> str:
    """What Moodle reads from escaped GIFT text; the inverse of gift_escape (up to line endings)."""
    return GIFT_ESCAPED.sub(lambda match: "\n" if match.group(1) == "n" else match.group(1), text)
PRACTICE_BANK = "attention-practice"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

# question_bank::fraction_options_full() in Moodle: an imported grade must be within 1e-5 of one of
# these (or of its negative, or 0), or Moodle refuses the question.
MOODLE_FRACTIONS = (1.0, 0.9, 0.8333333, 0.8, 0.75, 0.7, 0.6666667, 0.6, 0.5, 0.4, 0.3333333, 0.3, 0.25, 0.2,
                    0.1666667, 0.1428571, 0.125, 0.1111111, 0.1, 0.05)

SCHEMES_BANK = """\
id: schemes
title: Scoring schemes
questions:
  - id: all-or-nothing
    type: multiple_choice
    scoring: all_or_nothing
    prompt: Pick a and b.
    answer: [a, b]
    options: [{id: a, text: A}, {id: b, text: B}, {id: c, text: C}]
    explanation: A and B.
  - id: per-option
    type: multiple_choice
    scoring: per_option
    prompt: Pick a.
    answer: [a]
    options: [{id: a, text: A}, {id: b, text: B}, {id: c, text: C}, {id: d, text: D}]
    explanation: Only A.
  - id: latency
    type: numeric
    prompt: 'How long, for $n = 200$?'
    answer: 200
    tolerance: {abs: 1, rel: 0.01}
    unit: ms
    learn: /learn/attention
    explanation: '200 ms, give or take 1 %.'
  - id: one-right
    type: multiple_choice
    scoring: all_or_nothing
    prompt: Pick a.
    answer: [a]
    options: [{id: a, text: A}, {id: b, text: B}]
    explanation: Only A.
"""


@pytest.fixture(scope="module")
def export_app():
    app = create_app({"TESTING": True, "SECRET_KEY": "t", "QUIZ_DIR": str(resource_dir("quizzes")),
                      "DATABASE_URL": "sqlite://"})
    if "export-quiz" not in app.cli.commands:
        cli.init_app(app)
    return app


@pytest.fixture(scope="module")
def run(export_app):
    runner = export_app.test_cli_runner()

    def invoke(*args: str):
        return runner.invoke(args=["export-quiz", *args])

    return invoke


def load(path: Path):
    result = load_bank_file(path, None, check_visual)
    assert result.bank is not None, result.errors
    return result.bank


@pytest.fixture(scope="module")
def seed_bank():
    return load(resource_dir("quizzes") / f"{SEED_BANK}.yaml")


@pytest.fixture(scope="module")
def practice_bank():
    return load(resource_dir("quizzes") / f"{PRACTICE_BANK}.yaml")


@pytest.fixture(scope="module")
def moodle_xml(run):
    """The seed bank as Moodle XML with the defaults (TeX maths, figures in the general feedback)."""
    result = run(SEED_BANK, "--format", "moodle-xml")
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines()[-1] == \
        "exported 9 question(s) of 'attention-transformers' as moodle-xml; 5 warning(s)"  # the 5 "See ..." links
    return ElementTree.fromstring(result.stdout.encode())


def questions_of(root) -> list[ElementTree.Element]:
    return [element for element in root.findall("question") if element.get("type") != "category"]


def answers_of(element) -> list[tuple[float, str, str]]:
    return [(float(a.get("fraction")), a.findtext("text"), a.findtext("feedback/text") or "")
            for a in element.findall("answer")]


# --- Moodle XML ---------------------------------------------------------------------------------------


def test_moodle_xml_has_every_question_under_its_id_and_moodle_type(moodle_xml, seed_bank):
    elements = questions_of(moodle_xml)
    assert [e.findtext("name/text") for e in elements] == [q.id for q in seed_bank.questions]
    expected = {"true_false": ("truefalse", None), "single_choice": ("multichoice", "true"),
                "multiple_choice": ("multichoice", "false"), "numeric": ("numerical", None)}
    for element, question in zip(elements, seed_bank.questions):
        moodle_type, single = expected[question.type]
        assert element.get("type") == moodle_type, question.id
        assert element.findtext("single") == single, question.id
        assert [t.findtext("text") for t in element.findall("tags/tag")] == question.tags


def test_every_fraction_is_one_moodle_accepts(moodle_xml):
    for answer in moodle_xml.iter("answer"):
        fraction = float(answer.get("fraction")) / 100
        assert fraction == 0 or any(abs(abs(fraction) - allowed) < 1e-5 for allowed in MOODLE_FRACTIONS), fraction


def test_single_choice_gives_100_to_the_right_option_only(moodle_xml, seed_bank):
    for element, question in zip(questions_of(moodle_xml), seed_bank.questions):
        if question.type != "single_choice":
            continue
        answers = answers_of(element)
        assert [fraction for fraction, _, _ in answers].count(100) == 1, question.id
        assert all(fraction in (0, 100) for fraction, _, _ in answers)
        right_text = next(text for fraction, text, _ in answers if fraction == 100)
        assert right_text == to_html(question.option(question.correct_option_ids[0]).text, inline=True)


def test_multi_select_right_fractions_sum_to_100_and_wrong_ones_are_negative(moodle_xml, seed_bank):
    multi = [(e, q) for e, q in zip(questions_of(moodle_xml), seed_bank.questions) if q.type == "multiple_choice"]
    assert len(multi) == 3
    for element, question in multi:
        fractions = [fraction for fraction, _, _ in answers_of(element)]
        right = [f for f, o in zip(fractions, question.options) if o.correct]
        wrong = [f for f, o in zip(fractions, question.options) if not o.correct]
        assert sum(right) == pytest.approx(100, abs=0.01), question.id
        assert all(f > 0 for f in right) and all(f < 0 for f in wrong), question.id


def test_net_correct_grades_every_pick_as_the_app_does(moodle_xml, seed_bank):
    """Moodle scores a multi-select pick as the sum of its grades, clamped to 0..1: the app's net_correct."""
    for element, question in zip(questions_of(moodle_xml), seed_bank.questions):
        if question.type != "multiple_choice":
            continue
        assert question.scoring == "net_correct"
        grade_of = {o.id: fraction / 100 for o, (fraction, _, _) in zip(question.options, answers_of(element))}
        ids = [o.id for o in question.options]
        for size in range(1, len(ids) + 1):
            for picked in itertools.combinations(ids, size):
                moodle = min(1.0, max(0.0, sum(grade_of[i] for i in picked)))
                assert moodle == pytest.approx(score_choice(question, set(picked)), abs=1e-4), (question.id, picked)


def test_true_false_keys_and_feedback(moodle_xml, seed_bank):
    for element, question in zip(questions_of(moodle_xml), seed_bank.questions):
        if question.type != "true_false":
            continue
        answers = {text: (fraction, feedback) for fraction, text, feedback in answers_of(element)}
        assert set(answers) == {"true", "false"}
        key = bool(question.option("true").correct)
        assert answers["true"][0] == (100 if key else 0) and answers["false"][0] == (0 if key else 100)
        for option_id in ("true", "false"):
            option = question.option(option_id)
            assert answers[option_id][1] == (to_html(option.feedback, inline=True) if option.feedback else "")


def test_option_feedback_is_kept_for_every_option(moodle_xml, seed_bank):
    for element, question in zip(questions_of(moodle_xml), seed_bank.questions):
        if question.type not in ("single_choice", "multiple_choice"):
            continue
        for option, (_, text, feedback) in zip(question.options, answers_of(element)):
            assert text == to_html(option.text, inline=True)
            assert feedback == (to_html(option.feedback, inline=True) if option.feedback else ""), option.id


def test_tex_maths_is_left_for_mathjax_and_other_markdown_renders_as_in_the_app(moodle_xml, seed_bank):
    for element, question in zip(questions_of(moodle_xml), seed_bank.questions):
        prompt_html = element.findtext("questiontext/text")
        if "$" not in question.prompt:
            assert prompt_html == str(render_markdown(question.prompt))  # same parser settings as the app
        else:
            assert "\\(" in prompt_html and "<math" not in prompt_html and "$" not in prompt_html
    complexity = next(e for e in questions_of(moodle_xml) if e.findtext("name/text") == "attention-complexity")
    assert "\\(O(NM(d+l))\\)" in complexity.findtext("answer/text")


def words_only(text: str) -> str:
    """A text as exported: its links to the app's own pages reduced to their words (app.authoring.export)."""
    return re.sub(r"\[([^\]\n]+)\]\((/[^)\s]*)\)", r"\1", text)


def test_general_feedback_is_the_rendered_explanation_followed_by_the_figure(moodle_xml, seed_bank):
    for element, question in zip(questions_of(moodle_xml), seed_bank.questions):
        feedback = element.findtext("generalfeedback/text")
        explanation = to_html(words_only(question.explanation), inline=False)
        assert feedback.startswith(explanation), question.id
        assert feedback[len(explanation):].startswith('<p><img src="@@PLUGINFILE@@/'), question.id


def test_mathml_option_uses_the_apps_own_rendering(run, seed_bank):
    result = run(SEED_BANK, "--format", "moodle-xml", "--math", "mathml", "--visual", "none")
    assert result.exit_code == 0, result.output
    root = ElementTree.fromstring(result.stdout.encode())
    for element, question in zip(questions_of(root), seed_bank.questions):
        assert element.findtext("questiontext/text") == str(render_markdown(question.prompt))
        assert element.findtext("generalfeedback/text") == str(render_markdown(words_only(question.explanation)))
        assert element.find(".//file") is None
        for option, (_, text, feedback) in zip(question.options, answers_of(element)):
            if question.type != "true_false":
                assert text == str(render_inline(option.text))
            assert feedback == (str(render_inline(option.feedback)) if option.feedback else "")


def embedded_files(field) -> dict[str, bytes]:
    return {f.get("name"): base64.b64decode(f.text, validate=True) for f in field.findall("file")}


def check_figure(field, question) -> None:
    """`field` (questiontext or generalfeedback) embeds one decodable image and shows it with alt text."""
    files = embedded_files(field)
    assert len(files) == 1, question.id
    (name, data), = files.items()
    assert all(f.get("path") == "/" and f.get("encoding") == "base64" for f in field.findall("file"))
    if name.endswith(".png"):
        assert data.startswith(PNG_SIGNATURE), name
    else:
        assert name.endswith(".svg") and ElementTree.fromstring(data).tag.endswith("svg"), name
    match = re.search(r'<img src="@@PLUGINFILE@@/([^"]+)" alt="([^"]+)">', field.findtext("text"))
    assert match and match.group(1) == name and match.group(2).strip(), question.id


def test_each_visual_is_embedded_in_the_general_feedback(moodle_xml, seed_bank):
    kinds = set()
    for element, question in zip(questions_of(moodle_xml), seed_bank.questions):
        check_figure(element.find("generalfeedback"), question)
        assert element.find("questiontext/file") is None and "<img" not in element.findtext("questiontext/text")
        kinds.add(next(iter(embedded_files(element.find("generalfeedback")))).rsplit(".")[-1])
    assert kinds == {"png", "svg"}  # head-split is drawn as SVG and stays SVG


def test_visual_in_the_question_text(run, seed_bank):
    result = run(SEED_BANK, "--format", "moodle-xml", "--visual", "question")
    assert result.exit_code == 0, result.output
    for element, question in zip(questions_of(ElementTree.fromstring(result.stdout.encode())), seed_bank.questions):
        check_figure(element.find("questiontext"), question)
        assert element.find("generalfeedback/file") is None


def test_scoring_schemes_without_a_moodle_equivalent_are_reported(run, tmp_path):
    bank = tmp_path / "schemes.yaml"
    bank.write_text(SCHEMES_BANK)
    result = run(str(bank), "--format", "moodle-xml")
    assert result.exit_code == 0, result.output
    root = ElementTree.fromstring(result.stdout.encode())
    aon, per_option, latency, one_right = questions_of(root)
    assert [f for f, _, _ in answers_of(aon)] == [50, 50, -100]
    assert [f for f, _, _ in answers_of(per_option)] == [100, -33.33333, -33.33333, -33.33333]
    assert [f for f, _, _ in answers_of(one_right)] == [100, -100]  # exact: no partial credit possible
    comments = re.findall(r"<!--(.*?)-->", result.stdout)  # ElementTree.fromstring drops comments
    assert any("all-or-nothing: all_or_nothing has no Moodle equivalent" in c for c in comments)
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning: ")]
    assert warnings == [
        "warning: questions[0] all-or-nothing: all_or_nothing has no Moodle equivalent: Moodle gives partial "
        "credit for some of the right options; exported with -100% per wrong option, so any wrong tick still scores 0",
        "warning: questions[1] per-option: per_option has no Moodle equivalent (Moodle cannot credit a wrong option "
        "left unticked); exported as 100% per right tick and -33.33333% per wrong tick",
        "warning: questions[2] latency: the learn link '/learn/attention' is a path on this app's site, which "
        "Moodle cannot follow; it was left out",
    ]
    # Numerical: the relative tolerance becomes absolute, max(1, 0.01 * 200) = 2; the unit is kept.
    assert latency.get("type") == "numerical"
    assert latency.findtext("answer/text") == "200" and latency.findtext("answer/tolerance") == "2"
    assert latency.findtext("units/unit/unit_name") == "ms" and latency.findtext("units/unit/multiplier") == "1"
    assert run(str(bank), "--format", "moodle-xml", "--strict").exit_code == 1


@pytest.mark.parametrize("count", range(1, 21))
def test_right_option_grades_sum_to_100_from_moodles_list(count):
    grades = right_percents(count)
    assert len(grades) == count and sum(grades) == pytest.approx(100, abs=0.01)
    assert all(g in MOODLE_PERCENTS for g in grades)
    if count <= 10:
        assert len(set(grades)) == 1  # an equal share, as net_correct gives


def test_more_than_20_right_options_cannot_be_graded():
    assert right_percents(21) is None


def test_moodle_xml_numeric_variant_for_the_chosen_seed(run, practice_bank):
    result = run(PRACTICE_BANK, "--format", "moodle-xml", "--seed", "5", "--visual", "none")
    assert result.exit_code == 0, result.output
    elements = {e.findtext("name/text"): e for e in questions_of(ElementTree.fromstring(result.stdout.encode()))}
    for question in [q for q in practice_bank.questions if q.type == "numeric"]:
        element, concrete = elements[question.id], instantiate(question, 5)
        assert element.get("type") == "numerical"
        assert float(element.findtext("answer/text")) == concrete.answer
        tolerance = max(concrete.tolerance.abs, concrete.tolerance.rel * abs(concrete.answer))
        assert float(element.findtext("answer/tolerance")) == pytest.approx(tolerance)
        assert element.findtext("questiontext/text") == to_html(concrete.prompt, inline=False)
        assert element.findtext("units/unit/unit_name") == question.unit
    for index, question in enumerate(practice_bank.questions):
        assert (f"warning: questions[{index}] {question.id}: has params; only its variant for seed 5 was exported"
                in result.stderr) == bool(question.params)


def test_several_variants_become_separate_questions(run, practice_bank):
    result = run(PRACTICE_BANK, "--format", "gift", "--seed", "2", "--variants", "3")
    assert result.exit_code == 0, result.output
    read = {q["name"]: q for q in read_gift(result.stdout)}
    exported = [q for q in practice_bank.questions if q.type != "matrix"]  # GIFT cannot carry a matrix
    assert list(read) == [name for q in exported for name in
                          ([f"{q.id}-seed{s}" for s in (2, 3, 4)] if q.params else [q.id])]
    for question in [q for q in exported if q.type == "numeric" and q.params]:
        for seed in (2, 3, 4):
            assert float(read[f"{question.id}-seed{seed}"]["answers"][0][1]) == instantiate(question, seed).answer
    assert "has params" not in result.stderr


# --- CLI ----------------------------------------------------------------------------------------------


def test_output_file(run, tmp_path):
    target = tmp_path / "bank.gift.txt"
    result = run(SEED_BANK, "--format", "gift", "--output", str(target))
    assert result.exit_code == 0 and result.stdout == ""
    assert target.read_text(encoding="utf-8").startswith("// attention-quiz bank attention-transformers")
    assert f"to {target}" in result.stderr


def test_unknown_bank_id(run):
    result = run("no-such-bank", "--format", "gift")
    assert result.exit_code == 2
    assert "no bank 'no-such-bank' is served" in result.stderr
    assert "the banks are: attention-drill, attention-practice, attention-transformers" in result.stderr


def test_missing_file(run, tmp_path):
    result = run(str(tmp_path / "missing.yaml"), "--format", "gift")
    assert result.exit_code == 2 and "no such bank file" in result.stderr


def test_broken_bank_file_prints_its_errors(run, tmp_path):
    broken = tmp_path / "broken.yaml"
    broken.write_text("id: broken\ntitle: Broken\nquestions: []\n")
    result = run(str(broken), "--format", "moodle-xml")
    assert result.exit_code == 1 and result.stdout == ""
    assert "broken.yaml:3:12: questions: the list of questions is empty" in result.stderr


def test_format_is_required(run):
    result = run(SEED_BANK)
    assert result.exit_code == 2 and "--format" in result.output


# --- GIFT ---------------------------------------------------------------------------------------------

# Every special character, both line endings and the letter n (as in \n), mixed with any other text.
GIFT_TEXT = st.text(st.sampled_from([*GIFT_SPECIAL, "\n", "\r", "n", "a", " ", "$", "é"]) | st.characters())
ESCAPED_ONLY = re.compile(r"(?:\\[\\~=#{}:n]|[^\\~=#{}:\n\r])*")


@given(GIFT_TEXT)
def test_gift_escape_round_trips(text):
    assert gift_unescape(gift_escape(text)) == text.replace("\r\n", "\n").replace("\r", "\n")


@given(GIFT_TEXT)
def test_gift_escape_leaves_no_special_character_bare(text):
    assert ESCAPED_ONLY.fullmatch(gift_escape(text))


def test_gift_escape_examples():
    assert gift_escape("a:b") == "a\\:b"
    assert gift_escape("$\\frac{1}{2}$ = 0.5 # ~") == "$\\\\frac\\{1\\}\\{2\\}$ \\= 0.5 \\# \\~"
    assert gift_escape("one\ntwo") == "one\\ntwo"
    assert gift_unescape("\\\\n") == "\\n"  # an escaped backslash before n is not a newline


# A port of the parts of Moodle's qformat_gift::readquestion these exports use (Moodle 4.x).
_PLACEHOLDERS = [("\\:", "&&058;", ":"), ("\\#", "&&035;", "#"), ("\\=", "&&061;", "="), ("\\{", "&&123;", "{"),
                 ("\\}", "&&125;", "}"), ("\\~", "&&126;", "~"), ("\\n", "&&010", "\n")]
_WEIGHT = re.compile(r"^%\-*([0-9]{1,2})\.?([0-9]*)%")


def _pre(text: str) -> str:
    text = text.replace("\\\\", "&&092;")
    for escaped, placeholder, _ in _PLACEHOLDERS:
        text = text.replace(escaped, placeholder)
    return text.replace("&&092;", "\\")


def _post(text: str) -> str:
    for _, placeholder, char in _PLACEHOLDERS:
        text = text.replace(placeholder, char)
    return text


def _with_format(text: str) -> tuple[str, str]:
    text_format = "moodle"
    if text.startswith("["):
        end = text.index("]")
        text_format, text = text[1:end], text[end + 1:]
    return text_format, _post(text).strip()


def read_gift_question(lines: list[str]) -> dict | None:
    text = "\n".join(" " if line.strip().startswith("//") else line for line in lines).strip()
    if not text:
        return None
    if text.startswith("$CATEGORY:"):  # the questions after it go to that category
        return {"type": "category", "category": text[len("$CATEGORY:"):].strip()}
    text = _pre(text)
    assert text.startswith("::")
    text = text[2:]
    name, text = _post(text[:text.index("::")]), text[text.index("::") + 2:].strip()
    start, finish = text.index("{"), text.index("}")
    answer_text = text[start + 1:finish].strip()
    assert text.endswith("}") and finish == len(text) - 1, "text after the answers"
    question_format, question_text = _with_format(text[:start])
    general = ""
    if "####" in answer_text:
        cut = answer_text.rindex("####")
        general, answer_text = _post(answer_text[cut + 4:]).strip(), answer_text[:cut].strip()
    entry = {"name": name, "format": question_format, "text": question_text, "general": general}
    if answer_text.startswith("#"):
        value = answer_text[1:].strip()
        if not value.startswith("="):
            answer, tolerance = value.split(":") if ":" in value else (value, "0")
            return entry | {"type": "numerical", "answers": [(1.0, answer.strip(), tolerance.strip())]}
        answers, feedbacks = [], []  # several answers, {#=3:0.01 =%0%24:0.01#feedback}, misconceptions after the key
        for part in re.split(r"(?<!\\)=", value)[1:]:
            weight = 1.0
            if _WEIGHT.match(part):
                weight, part = float(part[1:part.index("%", 1)]) / 100, part[part.index("%", 1) + 1:]
            bits = part.split("#", 1)
            answer, tolerance = bits[0].strip().split(":")
            answers.append((weight, answer, tolerance))
            feedbacks.append(_post(bits[1].strip()).strip() if len(bits) > 1 else "")
        return entry | {"type": "numerical", "answers": answers, "feedbacks": feedbacks}
    if "~" in answer_text:
        single = "=" in answer_text
        parts = answer_text.replace("=", "~=").split("~")
        parts = parts[1:] if not parts[0].strip() else parts
        answers = []
        for part in parts:
            part = part.strip()
            if part.startswith("="):
                weight, part = 1.0, part[1:]
            elif _WEIGHT.match(part):
                weight = float(part[1:part.index("%", 1)]) / 100
                part = part[part.index("%", 1) + 1:]
            else:
                weight = 0.0
            bits = part.split("#", 1)
            feedback = _post(bits[1].strip()).strip() if len(bits) > 1 else ""
            answers.append((weight, _post(bits[0].strip()).strip(), feedback))
        return entry | {"type": "multichoice", "single": single, "answers": answers}
    bits = [_post(b.strip()).strip() for b in answer_text.split("#", 2)] + ["", ""]
    assert bits[0] in ("T", "TRUE", "F", "FALSE"), answer_text
    return entry | {"type": "truefalse", "answer": bits[0] in ("T", "TRUE"), "wrong": bits[1], "right": bits[2]}


def read_gift(text: str, categories: bool = False) -> list[dict]:
    """Moodle splits a GIFT file into questions at blank lines (and `$CATEGORY:` blocks, with `categories`)."""
    blocks, current = [], []
    for line in text.splitlines():
        if line.strip():
            current.append(line)
        elif current:
            blocks.append(current)
            current = []
    if current:
        blocks.append(current)
    read = [q for q in (read_gift_question(block) for block in blocks) if q is not None]
    return read if categories else [q for q in read if q["type"] != "category"]


@pytest.fixture(scope="module")
def gift_export(run):
    result = run(SEED_BANK, "--format", "gift")
    assert result.exit_code == 0, result.output
    return result


def test_gift_reads_back_as_the_bank(gift_export, seed_bank):
    read = read_gift(gift_export.stdout)
    assert [q["name"] for q in read] == [q.id for q in seed_bank.questions]
    for entry, question in zip(read, seed_bank.questions):
        assert entry["format"] == "markdown"
        assert entry["text"] == question.prompt.strip()  # maths stays as its $...$ source
        assert entry["general"] == words_only(question.explanation).strip()
        if question.type == "true_false":
            key = bool(question.option("true").correct)
            right, wrong = (question.option("true"), question.option("false"))[:: 1 if key else -1]
            assert entry["type"] == "truefalse" and entry["answer"] == key
            assert (entry["right"], entry["wrong"]) == (right.feedback or "", wrong.feedback or "")
            continue
        assert entry["type"] == "multichoice" and entry["single"] == (question.type == "single_choice")
        assert [(text, feedback) for _, text, feedback in entry["answers"]] == \
            [(o.text, o.feedback or "") for o in question.options]
        weights = [weight for weight, _, _ in entry["answers"]]
        if question.type == "single_choice":
            assert weights == [1.0 if o.correct else 0.0 for o in question.options]
        else:
            right = [w for w, o in zip(weights, question.options) if o.correct]
            assert sum(right) == pytest.approx(1, abs=1e-4)
            assert all(w < 0 for w, o in zip(weights, question.options) if not o.correct)
            assert all(any(abs(abs(w) - f) < 1e-5 for f in MOODLE_FRACTIONS) for w in weights)


def test_gift_reports_each_visual_it_leaves_out(gift_export, seed_bank):
    lines = gift_export.stderr.splitlines()
    for index, question in enumerate(seed_bank.questions):
        assert (f"warning: questions[{index}] {question.id}: the visual '{question.visual.kind}' cannot be carried "
                "by GIFT; it was left out") in lines
    assert ("warning: questions[3] multi-head-subspaces: the tags (multi-head) cannot be carried by GIFT; "
            "they were left out") in lines
    assert "warning: bank: the bank's description and source cannot be carried by GIFT; they are comments at the top" in lines
    assert lines[-1] == "exported 9 question(s) of 'attention-transformers' as gift; 24 warning(s)"  # 5 "See ..." links


def test_gift_strict_fails_on_warnings(run):
    assert run(SEED_BANK, "--format", "gift", "--strict").exit_code == 1


def test_gift_numeric_and_schemes(run, tmp_path):
    bank = tmp_path / "schemes.yaml"
    bank.write_text(SCHEMES_BANK)
    result = run(str(bank), "--format", "gift")
    assert result.exit_code == 0, result.output
    aon, per_option, latency, one_right = read_gift(result.stdout)
    assert [w for w, _, _ in aon["answers"]] == [0.5, 0.5, -1.0] and not aon["single"]
    assert [w for w, _, _ in one_right["answers"]] == [1.0, -1.0] and not one_right["single"]
    assert latency["answers"] == [(1.0, "200", "2")] and latency["text"] == "How long, for $n = 200$?"
    assert "warning: questions[2] latency: the unit 'ms' cannot be carried by GIFT; it was left out" in result.stderr
    assert "// all_or_nothing has no Moodle equivalent" in result.stdout


def test_gift_exports_the_variant_for_the_seed(run, practice_bank):
    result = run(PRACTICE_BANK, "--format", "gift", "--seed", "3")
    assert result.exit_code == 0, result.output
    read = {entry["name"]: entry for entry in read_gift(result.stdout)}
    for question in [q for q in practice_bank.questions if q.type == "numeric"]:
        concrete = instantiate(question, 3)
        assert read[question.id]["text"] == concrete.prompt.strip()
        assert float(read[question.id]["answers"][0][1]) == concrete.answer
    assert ("warning: questions[0] head-dimension-variant: has params; only its variant for seed 3 was exported"
            in result.stderr)


# --- matrix, cells and misconceptions (issue 14) ------------------------------------------------------

GRIDS_BANK = """\
id: grids
title: Grids
questions:
  - id: weights
    type: matrix
    prompt: The softmax of [2, 1, 0]?
    explanation: Exponentiate, then normalise.
    answer: softmax([2, 1, 0])
    tolerance: {abs: 0.01}
    misconceptions:
      - {id: divide-by-sum, answer: [0.6667, 0.3333, 0], feedback: Scores over their sum.}
  - id: mask
    type: cells
    prompt: Which keys may query 2 attend to?
    explanation: Keys 1 and 2.
    grid: {rows: [q2], cols: [k1, k2, k3]}
    answer: [[0, 0], [0, 1]]
    scoring: net_correct
  - id: scaled
    type: numeric
    prompt: q·k = 24, d_k = 64?
    explanation: 24 / 8 = 3.
    answer: 3
    tolerance: {abs: 0.01}
    misconceptions:
      - {id: no-sqrt-scaling, answer: 24, feedback: "Divide by the square root of d_k = 64."}
"""


@pytest.fixture
def grids_bank(tmp_path):
    path = tmp_path / "grids.yaml"
    path.write_text(GRIDS_BANK, encoding="utf-8")
    return str(path)


def test_moodle_xml_carries_matrix_as_cloze_cells_as_choices_and_numeric_misconceptions(run, grids_bank):
    result = run(grids_bank, "--format", "moodle-xml")
    assert result.exit_code == 0, result.output
    weights, mask, scaled = questions_of(ElementTree.fromstring(result.stdout.encode()))
    assert weights.get("type") == "cloze"
    blanks = re.findall(r"\{1:NUMERICAL:=([^:]+):([^}]+)\}", weights.findtext("questiontext/text"))
    key = load(Path(grids_bank)).questions[0].answer[0]
    assert [float(v) for v, _ in blanks] == pytest.approx(key) and {t for _, t in blanks} == {"0.01"}
    assert mask.get("type") == "multichoice" and mask.findtext("single") == "false"
    assert [(f, t) for f, t, _ in answers_of(mask)] == [(50.0, "query q2 → key k1"), (50.0, "query q2 → key k2"),
                                                       (-50.0, "query q2 → key k3")]
    assert [(f, t) for f, t, _ in answers_of(scaled)] == [(100.0, "3"), (0.0, "24")]
    assert answers_of(scaled)[1][2] == "<p>Divide by the square root of d_k = 64.</p>\n"
    assert [a.findtext("tolerance") for a in scaled.findall("answer")] == ["0.01", "0.01"]
    comments = re.findall(r"<!--(.*?)-->", result.stdout)
    for message in ["weights: exported as a Moodle cloze question with one numerical blank per entry",
                    "weights: its misconceptions (divide-by-sum) cannot be carried by a cloze question",
                    "mask: Moodle has no grid of cells; exported as a multiple-choice list of its 3 cells"]:
        assert any(message in comment for comment in comments), message
        assert f"warning: questions[{0 if 'weights' in message else 1}] {message}" in result.stderr


def test_gift_leaves_out_matrix_questions_and_says_so(run, grids_bank):
    result = run(grids_bank, "--format", "gift")
    assert result.exit_code == 0, result.output
    mask, scaled = read_gift(result.stdout)
    message = "GIFT has no matrix or cloze answers, so the question was left out (moodle-xml carries it)"
    assert f"// questions[0] weights: {message}" in result.stdout
    assert f"warning: questions[0] weights: {message}" in result.stderr
    assert "exported 2 question(s)" in result.stderr
    assert [(w, t) for w, t, _ in mask["answers"]] == [(0.5, "query q2 → key k1"), (0.5, "query q2 → key k2"),
                                                       (-0.5, "query q2 → key k3")]
    assert scaled["answers"] == [(1.0, "3", "0.01"), (0.0, "24", "0.01")]
    assert scaled["feedbacks"] == ["", "Divide by the square root of d_k = 64."]
    assert scaled["general"] == "24 / 8 = 3."


def test_a_try_again_banks_tries_and_penalty_are_carried_where_they_can_be_and_reported_where_not():
    from app.authoring.export import to_gift, to_moodle_xml
    from app.bank.loader import load_bank_file

    bank = load_bank_file(resource_dir("quizzes") / "attention-drill.yaml", "attention-drill.yaml").bank
    assert bank.feedback == "try_again" and bank.penalty == [1, 0.5, 0.25]
    moodle = to_moodle_xml(bank)
    root = ElementTree.fromstring(moodle.text)
    assert [q.findtext("penalty") for q in questions_of(root)] == ["0.5"] * len(bank.questions)
    (note,) = [w for w in moodle.warnings if w.index is None]
    assert "Interactive with multiple tries" in note.message and "after the second try" in note.message
    assert str(note).startswith("bank: feedback: try_again (3 tries")
    gift = to_gift(bank)
    (note,) = [w for w in gift.warnings if w.index is None and "try_again" in w.message]
    assert "cannot be carried by GIFT" in note.message and f"// {note.message}" in gift.text
    # A question's hint: one Moodle <hint> per try after the first (interactive mode shows one after each wrong
    # try); GIFT has none, and says so.
    hinted = [q for q in bank.questions if q.hint]
    assert hinted
    for question, element in zip(bank.questions, (q for q in root.iter("question") if q.get("type") != "category")):
        hints = [hint.findtext("text") for hint in element.findall("hint")]
        assert len(hints) == (bank.tries - 1 if question.hint else 0)
        assert all("width of one head" in h or "take $e$" in h or "e to the power" in h or "Divide each" in h
                   for h in hints)
    assert [w.message for w in gift.warnings if "hint" in w.message] == \
        ["the hint cannot be carried by GIFT; it was left out"] * len([q for q in hinted if q.type != "matrix"])
    # (GIFT leaves a matrix question out whole, with its own warning)


def test_an_immediate_bank_gets_no_penalty_and_no_bank_note():
    from app.authoring.export import to_moodle_xml
    from app.bank.loader import load_bank_file

    bank = load_bank_file(resource_dir("quizzes") / "attention-transformers.yaml", "x.yaml").bank
    moodle = to_moodle_xml(bank)
    assert "<penalty>" not in moodle.text and not [w for w in moodle.warnings if w.index is None]


def test_links_to_the_apps_own_pages_become_their_words_with_a_warning():
    from app.authoring.export import to_gift, to_moodle_xml
    from app.bank.loader import load_bank_file

    bank = load_bank_file(resource_dir("quizzes") / "attention-transformers.yaml", "x.yaml").bank
    assert "[See Tutorial](/learn/attention#soft-lookup-text)" in bank.questions[0].explanation
    for export in (to_moodle_xml(bank), to_gift(bank)):
        assert 'href="/learn' not in export.text and "](/learn" not in export.text
        assert "See Tutorial." in export.text
        warned = [str(w) for w in export.warnings if "lead nowhere from Moodle" in w.message]
        assert "questions[0] soft-dictionary-lookup: its links to this app's pages (/learn/attention#soft-lookup-text)" \
               " lead nowhere from Moodle; each was reduced to its words" in warned


def test_assessment_settings_are_reported_and_shuffled_options_carried(tmp_path):
    from app.authoring.export import to_gift, to_moodle_xml
    from app.bank.loader import load_bank_file

    path = tmp_path / "timed.yaml"
    path.write_text(GRIDS_BANK.replace("title: Grids\n", "title: Grids\ntime_limit: 20m\nattempts: 2\n"
                                       "closes: 2099-03-02T09:00Z\nshuffle: {questions: true, options: true}\n")
                    + """\
  - id: pick
    type: single_choice
    prompt: Which?
    explanation: A.
    options: [{id: a, text: A, correct: true}, {id: b, text: B}]
""", encoding="utf-8")
    bank = load_bank_file(path, "timed.yaml").bank
    moodle, gift = to_moodle_xml(bank), to_gift(bank)
    notes = [w.message for w in moodle.warnings if w.index is None]
    for name, where in [("time_limit", "Timing: Time limit"), ("opens/closes", "Timing: Open and Close the quiz"),
                        ("attempts", "Grade: Attempts allowed"), ("shuffle.questions", "Layout: Shuffle")]:
        assert any(n.startswith(f"{name} is a Moodle quiz setting") and where in n for n in notes), name
    assert not any(n.startswith("shuffle.options") for n in notes)  # carried by each question's shuffleanswers
    assert any(w.message.startswith("shuffle.options") for w in gift.warnings if w.index is None)
    shuffle = {q.findtext("name/text"): q.findtext("shuffleanswers")
               for q in ElementTree.fromstring(moodle.text.encode()).iter("question") if q.get("type") == "multichoice"}
    assert shuffle == {"mask": "false", "pick": "true"}  # cells keep their row-by-row list


def test_a_cells_question_whose_sentence_repeats_a_word_exports_options_that_can_be_told_apart(run, tmp_path):
    path = tmp_path / "repeat.yaml"
    path.write_text("""\
id: repeat
title: Repeat
questions:
  - id: mask
    type: cells
    prompt: Which keys may the last query attend to?
    explanation: All of them.
    grid: {rows: [the], cols: [the, cat, the]}
    answer: [[0, 0], [0, 1], [0, 2]]
""", encoding="utf-8")
    result = run(str(path), "--format", "moodle-xml")
    assert result.exit_code == 0, result.output
    (mask,) = questions_of(ElementTree.fromstring(result.stdout.encode()))
    assert [t for _, t, _ in answers_of(mask)] == ["query the → key the (1)", "query the → key cat",
                                                  "query the → key the (3)"]


# --- categories: the bank's title, description and source, and a category per question's variants -----


def filed(elements) -> list[tuple[str, str]]:
    """(category, question name) for each question, in order: Moodle files a question in the category before it."""
    out, category = [], None
    for element in elements:
        if element["type"] == "category":
            category = element["category"]
        else:
            out.append((category, element["name"]))
    return out


def moodle_elements(root) -> list[dict]:
    return [{"type": "category", "category": e.findtext("category/text"), "info": e.findtext("info/text")}
            if e.get("type") == "category" else {"type": e.get("type"), "name": e.findtext("name/text")}
            for e in root.findall("question")]


def test_moodle_xml_files_the_bank_in_a_category_named_after_it_with_its_description_and_source(moodle_xml,
                                                                                                seed_bank):
    elements = moodle_elements(moodle_xml)
    top = f"$course$/top/{seed_bank.title}"
    assert elements[0]["type"] == "category" and elements[0]["category"] == top
    assert filed(elements) == [(top, q.id) for q in seed_bank.questions]  # one category: no variants
    info = elements[0]["info"]
    assert "Nine questions on dot-product attention" in info and "<p>Adapted from the quiz &#34;Deep learning: Attention and Transformers&#34;.</p>" in info


def test_each_parameterised_questions_variants_get_a_category_of_their_own(run, practice_bank):
    top = f"$course$/top/{practice_bank.title}"
    expected = [(f"{top}/{q.id}" if q.params else top, name) for q in practice_bank.questions
                for name in ([f"{q.id}-seed{s}" for s in (2, 3, 4)] if q.params else [q.id])]
    result = run(PRACTICE_BANK, "--format", "moodle-xml", "--seed", "2", "--variants", "3", "--visual", "none")
    assert result.exit_code == 0, result.output
    elements = moodle_elements(ElementTree.fromstring(result.stdout.encode()))
    assert filed(elements) == expected
    categories = [e for e in elements if e["type"] == "category"]
    assert all("a quiz draws one of them at random" in e["info"] for e in categories if e["category"] != top)
    gift = run(PRACTICE_BANK, "--format", "gift", "--seed", "2", "--variants", "3")
    assert gift.exit_code == 0, gift.output
    exported = {q.id for q in practice_bank.questions if q.type != "matrix"}
    assert filed(read_gift(gift.stdout, categories=True)) == [
        (category, name) for category, name in expected if name.rsplit("-seed", 1)[0] in exported]
    # Without variants, one category: the bank's.
    single = run(PRACTICE_BANK, "--format", "gift")
    assert {category for category, _ in filed(read_gift(single.stdout, categories=True))} == {top}


def test_a_slash_in_the_title_is_doubled_and_gift_keeps_the_description_as_comments():
    bank = Bank.model_validate({
        "id": "slashed", "title": "Attention / Transformers", "description": "First line.\n\nSecond line.",
        "source": "Adapted from a course.",
        "questions": [{"id": "q1", "type": "true_false", "prompt": "Is softmax monotone?", "explanation": "Yes.",
                       "options": [{"id": "true", "text": "True", "correct": True}, {"id": "false", "text": "False"}]}]})
    assert moodle_category(bank) == "$course$/top/Attention // Transformers"
    gift = to_gift(bank)
    assert gift.text.splitlines()[2:5] == ["// First line.", "// Second line.", "// Adapted from a course."]
    assert any("description and source cannot be carried by GIFT" in w.message for w in gift.warnings)
    assert "$CATEGORY: $course$/top/Attention // Transformers" in gift.text
    root = ElementTree.fromstring(to_moodle_xml(bank).text.encode())
    assert not [w for w in to_moodle_xml(bank).warnings if "description" in w.message]
    assert moodle_elements(root)[0] == {"type": "category", "category": "$course$/top/Attention // Transformers",
                                        "info": "<p>First line.</p>\n<p>Second line.</p>\n<p>Adapted from a course.</p>"}
