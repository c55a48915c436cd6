"""`flask selftest-quizzes`: every question's key scores 1, wrong answers score below 1, malformed
answers are refused with BadInput, and visuals render; any failure exits 1 and is listed.
"""

from __future__ import annotations

import math

import pytest

from app import create_app
from app.authoring import cli, selftest
from app.authoring.selftest import malformed_answers, wrong_answers
from app.bank.loader import load_bank_file
from app.bank.variants import draw
from app.paths import resource_dir
from app.visuals import check_visual, get_kind

LOOSE_TOLERANCE = """\
id: loose
title: Loose tolerance
questions:
  - id: eight
    type: numeric
    prompt: How many heads?
    answer: 8
    tolerance: {abs: 1000}
    explanation: Eight.
"""

CHEAP_VISUAL = """\
id: drawn
title: A question with a visual
questions:
  - id: split
    type: numeric
    params: {extra: [1, 2, 3]}
    prompt: 'With {{ extra }} spare heads: how wide is each of 5 heads of a 10-wide model?'
    answer: 10 / 5
    explanation: Two.
    visual: {kind: head-split, params: {d_model: 10, num_heads: 5}}
"""

# For n = 2 the right option (2n) and the distractor (n + 2) both read "4".
COLLIDING_OPTIONS = """\
id: colliding
title: Colliding options
questions:
  - id: double
    type: single_choice
    params: {n: [2, 3, 5]}
    prompt: 'What is twice {{ n }}?'
    options:
      - {id: twice, text: '{{ 2 * n }}', correct: true}
      - {id: plus-two, text: '{{ n + 2 }}'}
    explanation: 'Twice {{ n }} is {{ 2 * n }}.'
"""


@pytest.fixture(scope="module")
def selftest_app():
    app = create_app({"TESTING": True, "SECRET_KEY": "t", "QUIZ_DIR": str(resource_dir("quizzes")),
                      "DATABASE_URL": "sqlite://"})
    if "selftest-quizzes" not in app.cli.commands:
        cli.init_app(app)
    return app


@pytest.fixture(scope="module")
def run(selftest_app):
    runner = selftest_app.test_cli_runner()

    def invoke(*args: str):
        return runner.invoke(args=["selftest-quizzes", *args])

    return invoke


def write(tmp_path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def table_rows(output: str) -> dict[tuple[str, str], list[str]]:
    """(bank, question) -> [seeds, checks passed, failures] from the printed table."""
    rows = {}
    for line in output.splitlines()[2:]:
        if not line.strip():
            break
        cells = line.split()
        if len(cells) == 5:
            rows[(cells[0], cells[1])] = cells[2:]
    return rows


def test_the_bundled_banks_pass(run):
    result = run("--seeds", "2")
    assert result.exit_code == 0, result.output
    rows = table_rows(result.stdout)
    for name in ("attention-transformers", "attention-practice"):
        bank = load_bank_file(resource_dir("quizzes") / f"{name}.yaml", None, check_visual).bank
        for question in bank.questions:
            seeds, passed, failures = rows[(bank.id, question.id)]
            assert seeds == ("2" if question.params else "1") and failures == "0" and int(passed) > 5
    assert result.stdout.splitlines()[-1].endswith("check(s) passed, 0 failure(s)")
    assert result.stdout.splitlines()[-1].startswith("3 bank(s), 18 question(s), ")


def test_a_tolerance_that_accepts_wrong_numbers_fails(run, tmp_path):
    result = run(write(tmp_path, "loose.yaml", LOOSE_TOLERANCE), "--seeds", "2")
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert "FAIL loose / eight / seed 0 / wrong-scores-below-1: the wrong answer 17.0 scored 1" in lines
    assert "FAIL loose / eight / seed 0 / wrong-scores-below-1: the wrong answer -9.0 scored 1" in lines
    assert table_rows(result.stdout)[("loose", "eight")][2] == "2"
    assert lines[-1].endswith("2 failure(s)")


def test_a_visual_that_cannot_render_fails_once_per_seed_but_renders_once(run, tmp_path, monkeypatch):
    calls = []

    def broken_draw(self, params, result, inches):
        calls.append(params)
        raise RuntimeError("the plot exploded")

    monkeypatch.setattr(type(get_kind("head-split")), "draw", broken_draw)
    result = run(write(tmp_path, "drawn.yaml", CHEAP_VISUAL), "--seeds", "3")
    assert result.exit_code == 1
    failures = [line for line in result.stdout.splitlines() if line.startswith("FAIL")]
    assert failures == [
        f"FAIL drawn / split / seed {seed} / visual-renders: head-split "
        '{"choice":"none","d_model":10,"num_heads":5}: raised RuntimeError: the plot exploded' for seed in range(3)
    ]
    assert len(calls) == 1  # the same params are rendered once, not once per seed


def test_options_that_read_the_same_in_a_variant_fail(run, tmp_path):
    bank = write(tmp_path, "colliding.yaml", COLLIDING_OPTIONS)
    result = run(bank, "--seeds", "8")
    question = load_bank_file(tmp_path / "colliding.yaml", None, check_visual).bank.questions[0]
    colliding_seeds = [seed for seed in range(8) if draw(question, seed)["n"] == 2]
    assert colliding_seeds and len(colliding_seeds) < 8  # the bank exercises both cases
    failures = [line for line in result.stdout.splitlines() if line.startswith("FAIL")]
    assert failures == [f"FAIL colliding / double / seed {seed} / distinct-options: options 'twice' and "
                        "'plus-two' both read '4'" for seed in colliding_seeds]
    assert result.exit_code == 1


def test_a_bank_that_does_not_load_fails_with_its_errors(run, tmp_path):
    bank = write(tmp_path, "broken.yaml", "id: broken\ntitle: Broken\nquestions: []\n")
    result = run(bank, write(tmp_path, "loose.yaml", LOOSE_TOLERANCE))
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert any(line.startswith(f"FAIL {bank} / - / seed - / load: {bank}:3:12: questions: the list of questions "
                               "is empty") for line in lines)
    assert any(line.startswith(bank) and "(does not load)" in line for line in lines)  # its row in the table
    assert ("loose", "eight") in table_rows(result.stdout)  # the good bank is still checked
    assert lines[-1].startswith("2 bank(s), 1 question(s), ")


def test_an_exception_other_than_badinput_is_a_failure(run, tmp_path, monkeypatch):
    real_parse = selftest.parse_answer

    def fragile_parse(question, value):
        if isinstance(value, float) and math.isnan(value):
            raise TypeError("cannot compare NaN")
        return real_parse(question, value)

    monkeypatch.setattr(selftest, "parse_answer", fragile_parse)
    result = run(write(tmp_path, "loose.yaml", LOOSE_TOLERANCE.replace("{abs: 1000}", "{abs: 0.5}")))
    assert result.exit_code == 1
    failures = [line for line in result.stdout.splitlines() if line.startswith("FAIL")]
    assert failures == ["FAIL loose / eight / seed 0 / malformed-rejected: raised TypeError: cannot compare NaN"]


def test_missing_path(run, tmp_path):
    result = run(str(tmp_path / "nowhere"))
    assert result.exit_code == 2 and "no such file or folder" in result.stderr


def test_empty_folder(run, tmp_path):
    result = run(str(tmp_path))
    assert result.exit_code == 1 and "no bank files" in result.stderr


def numeric(answer: float):
    text = LOOSE_TOLERANCE.replace("answer: 8", f"answer: {answer}").replace("{abs: 1000}", "{abs: 0}")
    from app.bank.loader import load_bank_bytes

    return load_bank_bytes(text.encode(), "n.yaml").bank.questions[0]


@pytest.mark.parametrize(("answer", "probes"), [(8, [17, -9]), (-1, [0]), (-0.5, [0]), (0, [1, -1])])
def test_numeric_wrong_probes_never_equal_the_answer(answer, probes):
    assert wrong_answers(numeric(answer), float(answer)) == probes


def test_malformed_answers_cover_wrong_type_unknown_id_none_and_nan():
    bank = load_bank_file(resource_dir("quizzes") / "attention-transformers.yaml", None, check_visual).bank
    multi = bank.question("qkv-projections")
    values = malformed_answers(multi)
    assert None in values and any(isinstance(v, float) and math.isnan(v) for v in values)
    assert [selftest.UNKNOWN_OPTION] in values and "values" in values  # an unknown id; a bare id, not a list
