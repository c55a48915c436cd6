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
    assert result.stdout.splitlines()[-1].startswith("4 bank(s), 29 question(s), ")


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
        '{"answer_width":"","choice":"none","d_model":10,"num_heads":5}: raised RuntimeError: the plot exploded' for seed in range(3)
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


# Two misconceptions within the tolerance of each other: a student giving the second gets the first's feedback.
SHADOWED_MISCONCEPTION = """\
id: shadowed
title: A misconception hidden behind another
questions:
  - id: scaled
    type: numeric
    prompt: q·k = 24 and d_k = 64. The scaled score?
    answer: 3
    tolerance: {abs: 0.5}
    explanation: 24 / 8 = 3.
    misconceptions:
      - {id: no-scaling, answer: 24, feedback: Divide by sqrt(d_k).}
      - {id: rounded-up, answer: 24.4, feedback: Never seen.}
  - id: weights
    type: matrix
    prompt: softmax([2, 1, 0])?
    answer: softmax([2, 1, 0])
    tolerance: {abs: 0.01}
    explanation: Exponentiate, then normalise.
    misconceptions:
      - {id: divide-by-sum, answer: [0.6667, 0.3333, 0], feedback: Scores over their sum.}
  - id: mask
    type: cells
    prompt: Which keys may query 2 attend to?
    grid: {rows: [q2], cols: [k1, k2, k3]}
    answer: causal_mask(3)[1]
    scoring: per_option
    explanation: k1 and k2.
"""


def test_misconceptions_matrix_and_cells_are_checked(run, tmp_path):
    result = run(write(tmp_path, "shadowed.yaml", SHADOWED_MISCONCEPTION))
    assert result.exit_code == 1
    failures = [line for line in result.stdout.splitlines() if line.startswith("FAIL")]
    assert failures == ["FAIL shadowed / scaled / seed 0 / misconception-matches: the misconception 'rounded-up' "
                        "answer 24.4 gets 'no-scaling''s feedback"]
    rows = table_rows(result.stdout)
    # instantiate, key, key-scores-1, 2 wrong probes, then weights (a matrix): shown-key-scores-1, 1 misconception
    # and 7 malformed; mask: 9 malformed
    assert rows[("shadowed", "weights")] == ["1", "14", "0"] and rows[("shadowed", "mask")] == ["1", "14", "0"]


def test_matrix_and_cells_probes_are_wrong_and_malformed_answers_are_refused():
    from app.bank.loader import load_bank_bytes
    from app.errors import BadInput
    from app.grading import grade, parse_answer

    _, weights, mask = load_bank_bytes(SHADOWED_MISCONCEPTION.encode(), "b.yaml").bank.questions
    for question in (weights, mask):
        key = selftest.answer_key(question)
        assert grade(question, parse_answer(question, key)).score == 1
        probes = wrong_answers(question, key)
        assert len(probes) == 2 and all(grade(question, parse_answer(question, p)).score < 1 for p in probes)
        for bad in malformed_answers(question):
            with pytest.raises(BadInput):
                parse_answer(question, bad)


def test_a_try_again_bank_needs_a_hint_for_every_wrong_try(tmp_path):
    bank = tmp_path / "drill.yaml"
    bank.write_text(
        "id: drill\ntitle: Drill\nfeedback: try_again\ntries: 2\npenalty: [1, 0.5]\nquestions:\n"
        "  - {id: bare, type: single_choice, prompt: P, explanation: E, answer: a,\n"
        "     options: [{id: a, text: A}, {id: b, text: B, feedback: Not B.}, {id: c, text: C}]}\n"
        "  - {id: number, type: numeric, prompt: P, explanation: E, answer: 3}\n"
        "  - {id: slips, type: numeric, prompt: P, explanation: E, answer: 3,\n"
        "     misconceptions: [{id: raw, answer: 24, feedback: Scale it.}]}\n"
        "  - {id: hinted, type: numeric, prompt: P, explanation: E, answer: 3, hint: Scale q·k first.,\n"
        "     misconceptions: [{id: raw, answer: 24, feedback: Scale it.}]}\n"
        "  - {id: bare-hinted, type: single_choice, prompt: P, explanation: E, answer: a, hint: Think.,\n"
        "     options: [{id: a, text: A}, {id: b, text: B}, {id: c, text: C}]}\n", encoding="utf-8")
    report = selftest.SelfTest(seeds=1).run_paths([bank])
    found = {(f.question, f.check): f.detail for f in report.failures}
    assert found == {
        ("bare", "try-again-hints"): "a wrong try that picks 'c' gets no hint: give that option feedback, or the "
                                     "question a hint:",
        ("number", "try-again-hints"): "a wrong try gets no hint: add misconceptions: (the common slips, each with "
                                       "feedback)",
        ("slips", "try-again-hints"): "a wrong try that is none of the misconceptions gets no hint: add hint: (what "
                                      "to work out first, without the answer)"}
    immediate = tmp_path / "immediate.yaml"
    immediate.write_text(bank.read_text().replace("feedback: try_again\ntries: 2\npenalty: [1, 0.5]\n", ""))
    assert selftest.SelfTest(seeds=1).run_paths([immediate]).failures == []


def test_a_try_again_question_with_no_more_options_than_tries_is_reported(tmp_path):
    bank = tmp_path / "drill.yaml"
    bank.write_text(
        "id: drill\ntitle: Drill\nfeedback: try_again\ntries: 3\npenalty: [1, 0.5, 0.25]\nquestions:\n"
        "  - {id: tf, type: true_false, prompt: P, explanation: E, answer: true,\n"
        "     options: [{id: 'true', text: 'True'}, {id: 'false', text: 'False', feedback: No.}]}\n"
        "  - {id: three, type: single_choice, prompt: P, explanation: E, answer: a, options: [{id: a, text: A},\n"
        "     {id: b, text: B, feedback: Not B.}, {id: c, text: C, feedback: Not C.}]}\n"
        "  - {id: four, type: single_choice, prompt: P, explanation: E, answer: a, options: [{id: a, text: A},\n"
        "     {id: b, text: B, feedback: Not B.}, {id: c, text: C, feedback: Not C.}, {id: d, text: D, feedback: D.}]}\n",
        encoding="utf-8")
    found = {(f.question, f.check): f.detail for f in selftest.SelfTest(seeds=1).run_paths([bank]).failures}
    assert set(found) == {("tf", "try-again-hints"), ("three", "try-again-hints")}
    assert found[("tf", "try-again-hints")].startswith(
        "with 2 options and 3 tries, a student who has ruled out the wrong ones by trying gets the last try's credit")


RARE_DIVISION = """
id: big
title: Big
questions:
  - id: q1
    type: numeric
    params:
      a: {min: 1, max: 6000}
    prompt: What is 12 / ({{ a % 97 }} - 3)?
    answer: 12 / (a % 97 - 3)
    tolerance: {rel: 0.001}
    explanation: "It is {{ 12 / (a % 97 - 3) }}."
"""


def test_a_seed_whose_variant_fails_is_reported_not_swapped_for_another(run, tmp_path):
    """instantiate() gives a student whose seed fails another seed's variant; checked through it, the self-test
    passed every seed. 6000 values are too many to try one by one, so the loader samples seeds 0-7, which pass."""
    failing = [seed for seed in range(300) if draw(load_bank_file(write(tmp_path, "big.yaml", RARE_DIVISION), None,
                                                                    check_visual).bank.questions[0], seed)["a"] % 97 == 3]
    assert failing and min(failing) > 7
    result = run(write(tmp_path, "big.yaml", RARE_DIVISION), "--seeds", "300")
    assert result.exit_code == 1
    assert [line for line in result.stdout.splitlines() if line.startswith("FAIL")] == [
        f"FAIL big / q1 / seed {seed} / instantiate: {{{{ 12 / (a % 97 - 3) }}}}: division by zero (a student whose "
        "attempt has this seed gets another seed's variant)" for seed in failing]


NO_TOLERANCE = """
id: b17
title: No tolerance
questions:
  - id: q1
    type: numeric
    params: {d_model: [100, 200], num_heads: [3, 6]}
    prompt: "{{ d_model }} / {{ num_heads }}?"
    answer: d_model / num_heads
    explanation: "It is {{ d_model / num_heads }}."
"""


def test_a_computed_key_the_page_shows_rounded_needs_a_tolerance(run, tmp_path):
    """The preview and the explanation said 33.3333, and 33.3333 was graded wrong: no check said so."""
    result = run(write(tmp_path, "b17.yaml", NO_TOLERANCE), "--seeds", "4")
    assert result.exit_code == 1
    failures = [line for line in result.stdout.splitlines() if line.startswith("FAIL")]
    assert "FAIL b17 / q1 / seed 0 / shown-key-scores-1: the key shows as 33.3333, which scores 0: a student who " \
           "types what the page shows is marked wrong; give the answer a tolerance, e.g. tolerance: {rel: 0.001}" \
           in failures
    fixed = run(write(tmp_path, "b17.yaml", NO_TOLERANCE.replace("    explanation:", "    tolerance: {rel: 0.001}\n"
                                                                   "    explanation:")), "--seeds", "4")
    assert fixed.exit_code == 0, fixed.stdout
