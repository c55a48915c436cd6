"""Issue 16's item analysis per variant: for a parameterised question, the bank report splits facility by each
parameter's value (from each attempt's stored seed), in an accessible table with a caution on small groups."""

from __future__ import annotations

import re
from collections import defaultdict

import pytest
from conftest import answer_via_form, app_on_bank, csrf_token
from werkzeug.security import generate_password_hash

from app.bank.loader import load_bank_bytes
from app.instructor import report
from app.instructor import stats

PASSWORD = "correct horse battery"
BANK = "variants"
BANK_YAML = """\
id: variants
title: Variants quiz
questions:
  - id: heads
    type: numeric
    params:
      d_model: [64, 128]
      num_heads: [2, 4]
    prompt: "With d_model = {{ d_model }} and {{ num_heads }} heads, how wide is each head?"
    answer: d_model / num_heads
    tolerance: {abs: 0}
    explanation: d_model over the number of heads.
  - id: plain
    type: true_false
    prompt: Attention is a soft dictionary lookup.
    answer: true
    explanation: Each query mixes all values.
"""
STUDENTS = 14


def test_facility_by_value_splits_scores_by_each_parameter():
    answers = [({"d": 512, "h": 8}, 0.0), ({"d": 64, "h": 8}, 1.0), ({"d": 512, "h": 2}, 1.0),
               ({"d": 512, "h": 8}, 0.5)]
    rows = stats.facility_by_value(answers, min_n=2)
    assert [(r.param, r.value, r.responses, r.facility, r.few) for r in rows] == [
        ("d", 64, 1, 1.0, True), ("d", 512, 3, 0.5, False),  # (0 + 1 + 0.5) / 3
        ("h", 2, 1, 1.0, True), ("h", 8, 3, 0.5, False),  # (0 + 1 + 0.5) / 3
    ]
    assert [r.value for r in stats.facility_by_value([({"act": "relu"}, 1), ({"act": "gelu"}, 0)])] == \
        ["gelu", "relu"]
    assert stats.facility_by_value([]) == []


@pytest.fixture
def app(tmp_path):
    return app_on_bank(tmp_path, BANK, BANK_YAML,
                       INSTRUCTOR_PASSWORD_HASH=generate_password_hash(PASSWORD, method="pbkdf2:sha256:1000"))


def report_page(app) -> str:
    instructor = app.test_client()
    token = csrf_token(instructor.get("/instructor/login").get_data(as_text=True))
    instructor.post("/instructor/login", data={"csrf_token": token, "password": PASSWORD})
    page = instructor.get(f"/instructor/banks/{BANK}")
    assert page.status_code == 200
    return page.get_data(as_text=True)


def table_rows(html: str, table_id: str) -> list[list[str]]:
    table = re.search(rf'<table[^>]*id="{table_id}">(.*?)</table>', html, re.DOTALL)
    assert table, f"no table {table_id}"
    body = table.group(1).split("<tbody>", 1)[1]
    cells = r"<t[hd][^>]*>(.*?)</t[hd]>"
    return [[" ".join(re.sub(r"<[^>]+>", "", cell).split()) for cell in re.findall(cells, row, re.DOTALL)]
            for row in re.findall(r"<tr>(.*?)</tr>", body, re.DOTALL)]


def test_the_report_splits_facility_by_the_values_each_student_was_shown(app):
    # Each student reads their own variant off the question page and answers right only when d_model = 64:
    # the split must find facility 1 for d_model = 64, 0 for 128, and the mix for each num_heads.
    shown: dict[tuple[str, int], list[float]] = defaultdict(list)
    for _ in range(STUDENTS):
        student = app.test_client()
        page = student.get(f"/quiz/{BANK}/heads").get_data(as_text=True)
        d_model, num_heads = map(int, re.search(r"With d_model = (\d+) and (\d+) heads", page).groups())
        right = d_model == 64
        assert answer_via_form(student, BANK, "heads", str(d_model // num_heads if right else 1)).status_code == 303
        shown["d_model", d_model].append(1.0 if right else 0.0)
        shown["num_heads", num_heads].append(1.0 if right else 0.0)

    html = report_page(app)
    assert '<caption id="by-value-heads-caption">Facility of question 1 by parameter value</caption>' in html
    rows = table_rows(html, "by-value-heads")
    expected = [[f"{param} = {value}", str(len(scores)), f"{sum(scores) / len(scores):.2f}",
                 f"only {len(scores)} response{'s' if len(scores) != 1 else ''}: too few to compare"
                 if len(scores) < stats.MIN_ATTEMPTS else ""]
                for (param, value), scores in sorted(shown.items())]
    assert rows == expected
    assert 'id="by-value-plain"' not in html  # a question without params has no split


def test_no_table_before_any_answer(app):
    assert 'id="by-value-heads"' not in report_page(app)


def test_a_value_right_for_some_variants_only_says_how_many_earned_full_credit(app):
    """Typing 32 is right for d_model 64 with 2 heads and wrong for every other variant: the answers table and the
    chart must not call 32 a full-credit answer for everyone who gave it (an OR over its responses once did)."""
    credited = total = 0
    while total < 6 or credited in (0, total):  # until 32 has been given both rightly and wrongly
        student = app.test_client()
        page = student.get(f"/quiz/{BANK}/heads").get_data(as_text=True)
        d_model, num_heads = map(int, re.search(r"With d_model = (\d+) and (\d+) heads", page).groups())
        assert answer_via_form(student, BANK, "heads", "32").status_code == 303
        total += 1
        credited += d_model // num_heads == 32
        assert total < 200
    html = report_page(app)
    assert table_rows(html, "answers-heads")[0] == ["32", f"{credited} of {total}", str(total)]
    question = load_bank_bytes(BANK_YAML.encode(), "variants.yaml").bank.question("heads")
    given = ([report.Response("s", "heads", 32, 1.0)] * credited
             + [report.Response("s", "heads", 32, 0.0)] * (total - credited))
    rows, other = report.answer_breakdown(question, given)
    assert [(r.label, r.correct, r.credited, r.count) for r in rows] == [("32", False, credited, total)]
    chart = report.answer_chart(1, question, rows, other, total)
    assert chart.labels == (f"32 ({credited} of {total} full credit)",) and chart.highlighted == (False,)
    assert f"32 ({credited} of {total} full credit): {total}" in chart.alt


def test_under_try_again_the_key_value_earns_full_credit_whatever_try_reached_it(tmp_path):
    """The stored score of a right answer on try 2 is 0.5 (the penalty): the answers table judged "full credit" by
    it, so the drill's key value 3 read "2 of 3", or "no" had everyone needed two tries. The answer is right; the
    try's penalty is the try's."""
    from app.paths import resource_dir

    app = create_app_on(tmp_path, resource_dir("quizzes"))
    bank, question = "attention-drill", "scaled-score-by-hand"
    for tries in (["3"], ["3"], ["12", "3"]):
        student = app.test_client()
        for number, value in enumerate(tries, start=1):
            page = student.get(f"/quiz/{bank}/{question}").get_data(as_text=True)
            sent = student.post(f"/quiz/{bank}/{question}",
                                data={"csrf_token": csrf_token(page), "answer": value, "try": str(number)})
            assert sent.status_code == 303
    instructor = app.test_client()
    token = csrf_token(instructor.get("/instructor/login").get_data(as_text=True))
    instructor.post("/instructor/login", data={"csrf_token": token, "password": PASSWORD})
    html = instructor.get(f"/instructor/banks/{bank}").get_data(as_text=True)
    assert table_rows(html, f"answers-{question}")[0] == ["3", "yes", "3"]
    rows, _ = report.answer_breakdown(app.extensions["banks"].get(bank).question(question),
                                      report.load_responses(db_engine(app), bank, question))
    assert [(r.label, r.correct, r.credited, r.count) for r in rows] == [("3", True, 3, 3)]


def create_app_on(tmp_path, folder):
    from app import create_app

    return create_app({"TESTING": True, "SECRET_KEY": "test-secret-key", "QUIZ_DIR": str(folder),
                       "DATABASE_URL": f"sqlite:///{tmp_path / 'drill.sqlite3'}",
                       "INSTRUCTOR_PASSWORD_HASH": generate_password_hash(PASSWORD, method="pbkdf2:sha256:1000")})


def db_engine(app):
    from app import db

    with app.app_context():
        return db.engine()
