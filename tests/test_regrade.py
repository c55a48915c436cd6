"""Issue 16's regrade after a bank fix: `flask --app app regrade BANK [--question Q] [--allow-lower] [--dry-run]`
grades every stored answer again with the current key (each against its own variant, the try_again penalty
applied), never lowers a score unless told to, prints and records what changed, updates the attempts' totals and
sends the new grade of an LMS attempt to the platform's grade book."""

from __future__ import annotations

import re

import pytest
import requests
from conftest import LiveServer, answer_via_form
from lti_platform import Platform, PlatformServer
from sqlalchemy import select
from test_instructor import PASSWORD_HASH, sign_in
from test_lti_flow import answer_all, launch, learner, register

from app import create_app, db
from app.instructor.regrade import regrades

BANK = "rg"
# Written with a wrong key for `sc` (a, where b is right) and for `heads` (d_model / 4 where each head has
# d_model / 2 columns, for 2 heads); FIXED is the same bank with both keys put right.
BANK_YAML = """\
id: rg
title: Regrade quiz
{header}
questions:
  - id: sc
    type: single_choice
    prompt: With d_model = 128 and 2 heads, how wide is each head?
    answer: {sc_key}
    options:
      - {{id: a, text: "32"}}
      - {{id: b, text: "64"}}
      {extra_option}
    explanation: 128 / 2 = 64.
  - id: heads
    type: numeric
    params:
      d_model: [64, 128, 256, 512]
    prompt: "With d_model = {{{{ d_model }}}} and 2 heads, how wide is each head?"
    answer: d_model / {divisor}
    tolerance: {{abs: 0}}
    explanation: d_model over the number of heads.
"""
TRY_AGAIN = "feedback: try_again\ntries: 3\npenalty: [1, 0.5, 0.25]"


def write_bank(folder, *, sc_key="a", divisor=4, header="", extra_option='- {id: c, text: "128"}'):
    (folder / f"{BANK}.yaml").write_text(BANK_YAML.format(sc_key=sc_key, divisor=divisor, header=header,
                                                          extra_option=extra_option))


def make_app(tmp_path, database_url: str | None = None):
    """A new app on the bank file as it is now (the regrade command runs in a fresh `flask` process)."""
    return create_app({"TESTING": True, "SECRET_KEY": "test-secret-key", "QUIZ_DIR": str(tmp_path / "quizzes"),
                       "DATABASE_URL": database_url or f"sqlite:///{tmp_path / 'regrade.sqlite3'}"})


@pytest.fixture
def folder(tmp_path):
    path = tmp_path / "quizzes"
    path.mkdir()
    write_bank(path)
    return path


def d_model_shown(client) -> int:
    page = client.get(f"/quiz/{BANK}/heads").get_data(as_text=True)
    return int(re.search(r"With d_model = (\d+) and 2 heads", page).group(1))


def take(app, sc: str, heads_right: bool, name: str | None = None, finish: bool = True):
    """A student answers sc, then heads (the truly right d_model / 2 of their own variant, or the old key's
    d_model / 4); returns the attempt id."""
    student = app.test_client()
    if name:
        token = re.search(r'name="csrf_token" value="([^"]+)"', student.get(f"/quiz/{BANK}/").get_data(as_text=True))
        student.post(f"/quiz/{BANK}/name", data={"csrf_token": token.group(1), "display_name": name})
    assert answer_via_form(student, BANK, "sc", sc).status_code == 303
    if finish:
        d_model = d_model_shown(student)
        value = d_model // 2 if heads_right else d_model // 4
        assert answer_via_form(student, BANK, "heads", str(value)).status_code == 303
    with student.session_transaction() as session:
        return session["attempts"][BANK]


def rows(app, table, **where):
    statement = select(table).where(*(table.c[k] == v for k, v in where.items()))
    with app.extensions["db_engine"].connect() as connection:
        return connection.execute(statement).all()


def scores(app) -> dict[tuple[str, str], float]:
    return {(r.attempt_id, r.question_id): r.score for r in rows(app, db.responses)}


def totals(app) -> dict[str, float | None]:
    return {r.id: r.total_score for r in rows(app, db.attempts)}


def regrade(app, *args):
    result = app.test_cli_runner().invoke(args=["regrade", BANK, *args])
    return result


@pytest.fixture
def classroom(folder, tmp_path):
    """Before the fix: ann picks b (marked wrong) and answers heads right for her variant (marked wrong); ben picks
    a (marked right) and gives the old key's heads (marked right); cal picks b and has not answered heads yet."""
    app = make_app(tmp_path)
    ann = take(app, "b", heads_right=True, name="Ann")
    ben = take(app, "a", heads_right=False, name="Ben")
    cal = take(app, "b", heads_right=False, name="Cal", finish=False)
    assert scores(app) == {(ann, "sc"): 0, (ann, "heads"): 0, (ben, "sc"): 1, (ben, "heads"): 1, (cal, "sc"): 0}
    assert totals(app) == {ann: 0, ben: 2, cal: None}
    write_bank(folder, sc_key="b", divisor=2)
    return make_app(tmp_path), ann, ben, cal


def test_a_fixed_key_raises_scores_and_never_lowers_them_by_default(classroom):
    app, ann, ben, cal = classroom
    result = regrade(app)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert re.fullmatch(r"attempt +student +question +old → new", lines[0])
    assert re.fullmatch(rf"{ann} +Ann +sc +0 → 1", lines[1])
    assert re.fullmatch(rf"{ann} +Ann +heads +0 → 1", lines[2])  # graded against her own variant's d_model
    assert re.fullmatch(rf"{cal} +Cal +sc +0 → 1", lines[3])
    assert "5 answers checked; 3 changed, in 2 attempt(s)." in lines
    assert "2 score(s) the current key marks lower were kept (use --allow-lower to lower them):" in lines
    assert any(re.fullmatch(rf"{ben} +Ben +heads +1 → 0", line) for line in lines)

    assert scores(app) == {(ann, "sc"): 1, (ann, "heads"): 1, (ben, "sc"): 1, (ben, "heads"): 1, (cal, "sc"): 1}
    assert totals(app) == {ann: 2, ben: 2, cal: None}  # cal's total is summed when she finishes
    recorded = {(r.attempt_id, r.question_id, r.old_score, r.new_score) for r in rows(app, regrades, bank_id=BANK)}
    assert recorded == {(ann, "sc", 0, 1), (ann, "heads", 0, 1), (cal, "sc", 0, 1)}
    assert {r.try_number: r.score for r in rows(app, db.tries, attempt_id=ann, question_id="sc")} == {1: 1}

    again = regrade(app)  # a second run finds nothing more to raise
    assert "5 answers checked; 0 changed." in again.output.splitlines()
    assert len(rows(app, regrades)) == 3


def test_the_report_says_which_answers_keep_a_score_from_an_earlier_key(classroom, tmp_path):
    app, *_ = classroom
    instructor = sign_in_instructor(app)

    def notes() -> dict[str, str]:
        html = instructor.get(f"/instructor/banks/{BANK}").get_data(as_text=True)
        return {m.group(1): " ".join(m.group(2).split())
                for m in re.finditer(r'<p class="notice" id="regrade-([a-z-]+)">(.*?)</p>', html, re.S)}

    before = notes()  # sc: ann's and cal's b are right now, ben's a is not; heads: ann's and ben's
    assert set(before) == {"sc", "heads"}
    assert before["sc"].startswith("3 answers keep scores given under an earlier key")
    assert before["heads"].startswith("2 answers keep scores")
    assert f"flask --app app regrade {BANK} --question sc --dry-run" in before["sc"]
    assert f'<a href="/instructor/banks/{BANK}/regrade?question=sc">Review them and apply' in before["sc"]
    assert regrade(app).exit_code == 0  # raises 3 scores; ben's two higher ones are kept
    after = notes()
    assert set(after) == {"sc", "heads"}
    assert all(note.startswith("1 answer keeps a score given under an earlier key") for note in after.values())
    assert regrade(app, "--allow-lower").exit_code == 0
    assert notes() == {}


def sign_in_instructor(app):
    app.config["INSTRUCTOR_PASSWORD_HASH"] = PASSWORD_HASH
    instructor = app.test_client()
    sign_in(instructor)
    return instructor


def graded_as(app) -> dict[tuple[str, str], set]:
    found: dict[tuple[str, str], set] = {}
    for row in rows(app, db.tries):
        found.setdefault((row.attempt_id, row.question_id), set()).add(row.graded_as)
    return found


@pytest.fixture
def counted_grading(monkeypatch):
    """How many tries the regrade grades again (every call of grade in app.instructor.regrade)."""
    from app.instructor import regrade as module

    calls = []

    def counting(question, answer):
        calls.append(question.id)
        return real(question, answer)

    real = module.grade
    monkeypatch.setattr(module, "grade", counting)
    return calls


def app_folder(app):
    from pathlib import Path

    return Path(app.config["QUIZ_DIR"])


def page_check(app):
    """The bank page's pending regrade, as its view computes it."""
    from app.instructor.regrade import regrade as run

    with app.app_context():
        return run(app.extensions["banks"].banks[BANK], dry_run=True, allow_lower=True, stale_only=True)


def test_the_bank_page_grades_an_answer_once_per_version_of_its_question(classroom, counted_grading):
    """Live tries are stored with the key version that scored them; the page grades only the answers with a try
    under another version, marks those that keep their score, and so grades nothing on the next look."""
    from app.grading import key_version

    app, ann, ben, cal = classroom
    bank = app.extensions["banks"].banks[BANK]
    old = {v for marks in graded_as(app).values() for v in marks}
    assert len(old) == 2 and None not in old  # sc's and heads's versions under the wrong keys
    current = {q.id: key_version(bank, q) for q in bank.questions}
    assert not old & set(current.values())

    first = page_check(app)
    assert sorted(counted_grading) == ["heads", "heads", "sc", "sc", "sc"]  # every answer once
    assert sorted((c.attempt_id, c.question_id) for c in first.changed) == sorted(
        [(ann, "sc"), (cal, "sc"), (ben, "sc"), (ann, "heads"), (ben, "heads")])
    instructor = sign_in_instructor(app)
    assert instructor.get(f"/instructor/banks/{BANK}").status_code == 200
    assert len(counted_grading) == 10  # the differing ones are graded on each look until regraded: none kept
    assert regrade(app).exit_code == 0  # raises ann's and cal's; keeps ben's two (they would go down)
    marks = graded_as(app)
    assert marks[(ann, "sc")] == marks[(cal, "sc")] == {current["sc"]} and marks[(ann, "heads")] == {current["heads"]}
    assert marks[(ben, "sc")] != {current["sc"]}  # kept: still scored under the old key, and the page says so
    counted_grading.clear()
    again = page_check(app)
    assert sorted(counted_grading) == ["heads", "sc"] and len(again.changed) == 2  # only ben's
    assert regrade(app, "--allow-lower").exit_code == 0
    counted_grading.clear()
    assert page_check(app).changed == [] and counted_grading == []


def test_the_bank_page_marks_answers_an_edit_left_unchanged(folder, tmp_path, counted_grading):
    """A wording edit changes the version: the page grades those answers once, finds their scores unchanged and
    marks them; an unchanged bank's page grades nothing at all."""
    app = make_app(tmp_path)
    ann = take(app, "b", heads_right=True)
    assert page_check(app).checked == 0 and counted_grading == []
    (folder / f"{BANK}.yaml").write_text((folder / f"{BANK}.yaml").read_text().replace("128 / 2 = 64.", "Half."))
    edited = make_app(tmp_path)
    assert page_check(edited).checked == 1 and counted_grading == ["sc"]
    assert page_check(edited).checked == 0 and counted_grading == ["sc"]
    assert scores(edited)[(ann, "sc")] == 0


def test_the_regrade_page_lists_the_changes_and_applies_them_keeping_lower_scores(classroom):
    """The web's regrade, for an instructor with no shell: the page lists what the current key changes (storing
    nothing), and its form applies it as `flask regrade` does, keeping the lower scores unless told otherwise."""
    app, ann, ben, cal = classroom
    instructor = sign_in_instructor(app)
    before = scores(app)
    page = instructor.get(f"/instructor/banks/{BANK}/regrade")
    html = " ".join(page.get_data(as_text=True).split())
    assert page.status_code == 200 and scores(app) == before  # a preview stores no score
    assert "5 scores would change" in html and "3 raised, 2 lowered, in 3 attempts." in html
    assert re.search(r"<td>Ann</td><td class=\"number\">0</td> <td class=\"number\">1 "
                     r"<span class=\"meta\">\(raised\)</span></td> <td>sc</td>", html)
    assert re.search(rf"<td>Cal</td>.*?<code>{cal}</code> <span class=\"meta\">\(unfinished\)</span>", html)
    token = re.search(r'name="csrf_token" value="([^"]+)"', html).group(1)
    keys = re.search(r'name="keys" value="([0-9a-f]{16})"', html).group(1)  # the keys this review is of
    assert instructor.post(f"/instructor/banks/{BANK}/regrade", data={"lower": "keep"}).status_code == 400  # CSRF
    done = instructor.post(f"/instructor/banks/{BANK}/regrade",
                           data={"csrf_token": token, "lower": "keep", "keys": keys})
    assert done.status_code == 303 and done.headers["Location"].endswith(f"/instructor/banks/{BANK}")
    report = " ".join(instructor.get(done.headers["Location"]).get_data(as_text=True).split())
    assert ("The current key was applied: 3 scores changed in 2 attempts (3 raised, 0 lowered). 2 scores it marks "
            "lower were kept.") in report
    assert scores(app)[(ann, "sc")] == scores(app)[(ann, "heads")] == scores(app)[(cal, "sc")] == 1
    assert scores(app)[(ben, "sc")] == 1 and totals(app)[ann] == 2  # ben's kept; ann's total follows
    assert len(rows(app, regrades)) == 3
    # The kept ones are still listed; lowering them is a choice on the form.
    only_sc = " ".join(instructor.get(f"/instructor/banks/{BANK}/regrade?question=sc").get_data(as_text=True).split())
    assert "1 score would change" in only_sc and 'id="lower-lower"' in only_sc
    sc_keys = re.search(r'name="keys" value="([0-9a-f]{16})"', only_sc).group(1)
    assert sc_keys != keys  # one question's key, not the bank's
    lowered = instructor.post(f"/instructor/banks/{BANK}/regrade",
                              data={"csrf_token": token, "lower": "lower", "question": "sc", "keys": sc_keys})
    assert "1 score changed in 1 attempt (0 raised, 1 lowered)." in " ".join(
        instructor.get(lowered.headers["Location"]).get_data(as_text=True).split())
    assert scores(app)[(ben, "sc")] == 0 and scores(app)[(ben, "heads")] == 1


@pytest.mark.parametrize("data, message", [
    ({"question": "zz"}, "This bank has no question &#39;zz&#39;"),
    ({"lower": "maybe"}, "Choose whether scores the current key marks lower are kept or lowered."),
])
def test_a_tampered_regrade_form_is_refused_with_a_sentence(classroom, data, message):
    app, *_ = classroom
    instructor = sign_in_instructor(app)
    html = instructor.get(f"/instructor/banks/{BANK}/regrade").get_data(as_text=True)
    token = re.search(r'name="csrf_token" value="([^"]+)"', html).group(1)
    before = scores(app)
    refused = instructor.post(f"/instructor/banks/{BANK}/regrade", data={"csrf_token": token, **data})
    assert refused.status_code == 400 and message in refused.get_data(as_text=True) and scores(app) == before


@pytest.mark.parametrize("question", [None, "sc"])
def test_a_key_edited_after_the_review_is_not_applied_unseen(classroom, folder, tmp_path, question):
    """The page lists what the key as it was then changes; if the file changes again before the button is pressed
    (a colleague's edit, a deploy), the form refuses, stores nothing and shows the new changes to review."""
    app, *_ = classroom
    instructor = sign_in_instructor(app)
    scope = f"?question={question}" if question else ""
    html = instructor.get(f"/instructor/banks/{BANK}/regrade{scope}").get_data(as_text=True)
    token = re.search(r'name="csrf_token" value="([^"]+)"', html).group(1)
    reviewed = re.search(r'name="keys" value="([0-9a-f]{16})"', html).group(1)
    write_bank(folder, sc_key="c", divisor=2)  # the key changes again after the review
    edited = make_app(tmp_path)
    before = scores(edited)
    instructor = sign_in_instructor(edited)
    token = re.search(r'name="csrf_token" value="([^"]+)"',
                      instructor.get(f"/instructor/banks/{BANK}/regrade{scope}").get_data(as_text=True)).group(1)
    data = {"csrf_token": token, "lower": "lower", "keys": reviewed, **({"question": question} if question else {})}
    refused = instructor.post(f"/instructor/banks/{BANK}/regrade", data=data)
    assert refused.status_code == 303 and f"/instructor/banks/{BANK}/regrade" in refused.headers["Location"]
    assert scores(edited) == before and rows(edited, regrades) == []
    page = " ".join(instructor.get(refused.headers["Location"]).get_data(as_text=True).split())
    assert "The bank&#39;s questions changed after you reviewed the changes (a key, a question&#39;s wording, or the " \
           "list of questions), so nothing was applied." in page
    assert "would change" in page
    assert instructor.post(f"/instructor/banks/{BANK}/regrade", data={**data, "keys": ""}).status_code == 303
    assert scores(edited) == before


def test_the_regrade_page_is_for_instructors_only(classroom):
    app, *_ = classroom
    visitor = app.test_client()
    assert visitor.get(f"/instructor/banks/{BANK}/regrade").status_code == 303  # to the sign-in page
    assert visitor.post(f"/instructor/banks/{BANK}/regrade", data={"lower": "lower"}).status_code in (400, 401)


def test_with_nothing_to_apply_the_regrade_page_says_so_and_offers_no_form(folder, tmp_path):
    app = make_app(tmp_path)
    take(app, "a", heads_right=False)
    html = " ".join(sign_in_instructor(app).get(f"/instructor/banks/{BANK}/regrade").get_data(as_text=True).split())
    assert "already has the score the current key gives: there is nothing to apply." in html
    assert "regrade-apply" not in html


def test_a_look_cut_short_keeps_the_marks_it_made_and_the_next_goes_on(classroom, monkeypatch, counted_grading):
    """Answers are checked a chunk at a time, each in its own transaction: a worker's timeout in the middle of a
    first look (a big bank after an upgrade) loses only the chunk it was in."""
    from app.instructor import regrade as module

    app, *_ = classroom
    monkeypatch.setattr(module, "CHUNK", 2)
    write_bank(app_folder(app), sc_key="a", divisor=4)  # the key as the answers were scored: every score stands
    app = make_app(app_folder(app).parent)
    with app.extensions["db_engine"].begin() as connection:
        connection.execute(db.tries.update().values(graded_as=None))  # as a database from before schema 4

    real = module._regraded
    def timeout_on_the_fourth(*args):
        if len(counted_grading) >= 3:
            raise TimeoutError("the worker's time is up")
        return real(*args)

    monkeypatch.setattr(module, "_regraded", timeout_on_the_fourth)
    with pytest.raises(TimeoutError):
        page_check(app)
    assert sum(None not in marks for marks in graded_as(app).values()) == 2  # the first chunk's two answers
    monkeypatch.setattr(module, "_regraded", real)
    counted_grading.clear()
    assert page_check(app).checked == 3 and len(counted_grading) == 3  # the other three, once each
    assert page_check(app).checked == 0


def test_the_check_brings_each_try_up_to_the_current_key_when_the_score_stands(folder, tmp_path):
    """try_again: 32, then 64 (0.5). A misconception added for 32 later leaves the score, but try 1 now matches it:
    the check records that, so the report counts it, rather than marking the old try as current."""
    misconception = ("\n    misconceptions:\n      - id: d-over-4\n        answer: d_model / 4\n"
                     "        feedback: That is d_model over 4.")
    write_bank(folder, divisor=2, header=TRY_AGAIN)
    app = make_app(tmp_path)
    student = app.test_client()
    d_model = d_model_shown(student)
    for value in (d_model // 4, d_model // 2):
        page = student.get(f"/quiz/{BANK}/heads").get_data(as_text=True)
        token = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)
        number = re.search(r'name="try" value="(\d+)"', page).group(1)
        student.post(f"/quiz/{BANK}/heads", data={"csrf_token": token, "answer": str(value), "try": number})
    (folder / f"{BANK}.yaml").write_text((folder / f"{BANK}.yaml").read_text().replace(
        "    explanation: d_model over the number of heads.",
        "    explanation: d_model over the number of heads." + misconception))
    fixed = make_app(tmp_path)
    assert scores(fixed) == {(next(iter(scores(fixed)))[0], "heads"): 0.5}
    assert page_check(fixed).changed == []
    assert {(r.try_number, r.misconception) for r in rows(fixed, db.tries, question_id="heads")} == {
        (1, "d-over-4"), (2, None)}
    assert page_check(fixed).checked == 0


def test_check_is_the_bank_pages_check_on_the_command_line(classroom, counted_grading):
    """`flask regrade BANK --check`: a warm-up after an upgrade that stores no score."""
    app, *_ = classroom
    before = scores(app)
    with app.extensions["db_engine"].begin() as connection:
        connection.execute(db.tries.update().values(graded_as=None))
    output = regrade(app, "--check", "--allow-lower").output
    assert "5 answers checked; 5 would change, in 3 attempt(s)." in output
    assert "Check: no score was stored or sent" in output and scores(app) == before
    write_bank(app_folder(app), sc_key="a", divisor=4)  # back to the key the answers were scored under
    unchanged = make_app(app_folder(app).parent)
    assert "5 answers checked; 0 would change." in regrade(unchanged, "--check").output
    counted_grading.clear()
    assert "0 answers checked" in regrade(unchanged, "--check").output and counted_grading == []


def test_answers_to_a_removed_question_are_not_checked_on_the_page(classroom, counted_grading):
    app, *_ = classroom
    folder = app_folder(app)
    (folder / f"{BANK}.yaml").write_text((folder / f"{BANK}.yaml").read_text().split("  - id: heads")[0])
    app = make_app(folder.parent)
    assert page_check(app).checked == 3 and sorted(counted_grading) == ["sc", "sc", "sc"]
    assert "the question is no longer in the bank" in regrade(app, "--dry-run").output  # the command says so


def test_two_regrades_at_once_apply_each_change_once(classroom, monkeypatch):
    """A second click on Apply (or another instructor, or the command) read the same scores before the first one
    stored its changes: each change is stored once, and each attempt's total moves by its difference once."""
    from app.instructor import regrade as module

    app, ann, ben, cal = classroom
    bank = app.extensions["banks"].banks[BANK]
    first_store = module._store

    def other_regrade_first(connection, *args):  # the other regrade commits between this one's read and write
        monkeypatch.setattr(module, "_store", first_store)
        with app.app_context():
            assert len(module.regrade(bank, allow_lower=True).changed) == 5
        return first_store(connection, *args)

    monkeypatch.setattr(module, "_store", other_regrade_first)
    with app.app_context():
        late = module.regrade(bank, allow_lower=True)
    assert late.changed == [] and len(rows(app, regrades)) == 5
    assert totals(app) == {ann: 2, ben: 0, cal: None}


def test_allow_lower_also_lowers_and_dry_run_stores_nothing(classroom):
    app, ann, ben, cal = classroom
    before, before_totals = scores(app), totals(app)
    dry = regrade(app, "--allow-lower", "--dry-run")
    assert dry.exit_code == 0, dry.output
    assert "5 answers checked; 5 would change, in 3 attempt(s)." in dry.output
    assert "Dry run: nothing was stored or sent." in dry.output
    assert (scores(app), totals(app), rows(app, regrades)) == (before, before_totals, [])

    done = regrade(app, "--allow-lower")
    assert re.search(rf"{ben} +Ben +sc +1 → 0", done.output) and "kept" not in done.output
    assert scores(app) == {(ann, "sc"): 1, (ann, "heads"): 1, (ben, "sc"): 0, (ben, "heads"): 0, (cal, "sc"): 1}
    assert totals(app) == {ann: 2, ben: 0, cal: None}


def test_a_students_page_shows_the_recorded_score_until_a_regrade_changes_it(folder, tmp_path):
    """The verdict follows the key as it is now; the score stays what the grade book holds, so a fix against the
    student lowers it on their page only when `--allow-lower` lowers it everywhere."""
    ben = make_app(tmp_path).test_client()
    assert answer_via_form(ben, BANK, "sc", "a").status_code == 303  # right under the old key
    cookie = ben.get_cookie("session").value
    write_bank(folder, sc_key="b", divisor=2)  # the key fixed: a is wrong
    app = make_app(tmp_path)

    def page() -> str:
        student = app.test_client()
        student.set_cookie("session", cookie)
        return " ".join(student.get(f"/quiz/{BANK}/sc/answer").get_data(as_text=True).split())

    changed = "The question's key has been changed since"
    assert "Not quite" in page() and "Score: 1 / 1" in page() and changed in page()
    assert regrade(app).exit_code == 0  # by default a score never goes down: not on the student's page either
    assert "Score: 1 / 1" in page() and changed in page()
    assert regrade(app, "--allow-lower").exit_code == 0
    assert "Not quite" in page() and "Score: 0 / 1" in page() and changed not in page()


def test_question_limits_the_regrade_to_one_question(classroom):
    app, ann, _ben, cal = classroom
    result = regrade(app, "--question", "heads")
    assert result.exit_code == 0, result.output
    assert "2 answers checked; 1 changed, in 1 attempt(s)." in result.output
    assert scores(app)[(ann, "heads")] == 1 and scores(app)[(ann, "sc")] == 0 and scores(app)[(cal, "sc")] == 0
    assert totals(app)[ann] == 1


def test_try_again_regrades_every_try_with_the_penalty_schedule(folder, tmp_path):
    write_bank(folder, header=TRY_AGAIN)
    app = make_app(tmp_path)
    student = app.test_client()
    for value in ("b", "c", "a"):  # marked wrong, wrong, then right on try 3: 0.25
        page = student.get(f"/quiz/{BANK}/sc").get_data(as_text=True)
        number = re.search(r'name="try" value="(\d+)"', page).group(1)
        token = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)
        student.post(f"/quiz/{BANK}/sc", data={"csrf_token": token, "answer": [value], "try": number})
    with student.session_transaction() as session:
        attempt = session["attempts"][BANK]
    assert scores(app) == {(attempt, "sc"): 0.25}
    write_bank(folder, sc_key="c", header=TRY_AGAIN)
    result = regrade(make_app(tmp_path))
    # With c the key, try 2 is right (× 0.5) and try 3 wrong: the best of score × factor is 0.5.
    assert re.search(rf"{attempt} +\(anonymous\) +sc +0.25 → 0.5", result.output), result.output
    assert {r.try_number: r.score for r in rows(app, db.tries, attempt_id=attempt)} == {1: 0, 2: 1, 3: 0}


def test_an_answer_that_no_longer_fits_is_reported_and_left_alone(folder, tmp_path):
    app = make_app(tmp_path)
    chose_c = take(app, "c", heads_right=True)
    chose_b = take(app, "b", heads_right=True)
    write_bank(folder, sc_key="b", divisor=2, extra_option="")  # option c is removed
    result = regrade(make_app(tmp_path))
    assert result.exit_code == 0, result.output
    assert (f"not regraded: attempt {chose_c} ((anonymous)), question sc: try 1's answer \"c\" no longer fits: "
            "There is no option 'c' in this question. Options are 'a', 'b'.") in result.output
    assert scores(app)[(chose_c, "sc")] == 0 and scores(app)[(chose_c, "heads")] == 1
    assert scores(app)[(chose_b, "sc")] == 1


@pytest.mark.parametrize("args, message", [
    (["regrade", "nope"], "error: no bank 'nope' is served from"),
    (["regrade", BANK, "--question", "zz"], "error: bank 'rg' has no question 'zz'; its questions are: sc, heads."),
])
def test_a_name_that_names_nothing_is_a_clear_error(folder, tmp_path, args, message):
    result = make_app(tmp_path).test_cli_runner().invoke(args=args)
    assert result.exit_code == 2 and message in result.output


def test_regrade_on_postgresql(postgres, folder, tmp_path, counted_grading):
    url = postgres.create_database("regrade")
    app = make_app(tmp_path, url)
    ann = take(app, "b", heads_right=True, name="Ann")
    write_bank(folder, sc_key="b", divisor=2)
    fixed = make_app(tmp_path, url)
    try:
        assert page_check(fixed).checked == 2 and len(counted_grading) == 2  # the bank page's query
        result = regrade(fixed)
        assert "2 answers checked; 2 changed, in 1 attempt(s)." in result.output, result.output
        assert totals(app) == {ann: 2}
        assert len(rows(app, regrades, attempt_id=ann)) == 2
        assert page_check(fixed).checked == 0 and len(counted_grading) == 4  # the command's two, none after
    finally:
        for each in (app, fixed):
            each.extensions["db_engine"].dispose()


# --- the new score reaches the LMS ---------------------------------------------------------------------------

LTI_BANK = """\
id: demo
title: Demo bank
questions:
  - id: heads
    type: numeric
    prompt: How many heads?
    explanation: Eight.
    answer: {heads_key}
  - id: sum
    type: numeric
    prompt: One plus one?
    explanation: Two.
    answer: 2
"""


def test_a_regraded_lms_attempt_sends_its_new_score_to_the_grade_book(tmp_path):
    platform = Platform(issuer_suffix="-regrade")
    (tmp_path / "quizzes").mkdir()
    (tmp_path / "quizzes" / "demo.yaml").write_text(LTI_BANK.format(heads_key=7))  # a wrong key: 8 is right
    config = {"TESTING": True, "SECRET_KEY": "lti-test-secret", "QUIZ_DIR": str(tmp_path / "quizzes"),
              "DATABASE_URL": f"sqlite:///{tmp_path / 'tool.sqlite3'}"}
    app = create_app(config)
    with PlatformServer(platform), LiveServer(app) as server:
        platform.tool_url = server.url
        register(app, platform)
        alice = requests.Session()
        launch(alice, platform, learner("alice"))
        answer_all(alice, server, {"heads": "8", "sum": "2"})
        assert platform.score_of("course-a", "Quiz link link-1", "alice", 1.0)

        (tmp_path / "quizzes" / "demo.yaml").write_text(LTI_BANK.format(heads_key=8))
        result = create_app(config).test_cli_runner().invoke(args=["regrade", "demo"])
        assert result.exit_code == 0, result.output
        assert re.search(r"Student alice +heads +0 → 1", result.output), result.output
        assert "1 LMS attempt(s): the new grade was queued and sent" in result.output
        assert platform.score_of("course-a", "Quiz link link-1", "alice", 2.0)
