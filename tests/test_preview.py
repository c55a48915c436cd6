"""The instructor preview: answer key, feedback, visual and seed selector; broken banks' errors."""

from __future__ import annotations

import re
import shutil

import pytest

from app import create_app
from test_instructor import PASSWORD_HASH, sign_in


@pytest.fixture
def bank_dir(tmp_path, quiz_dir):
    folder = tmp_path / "banks"
    folder.mkdir()
    for name in ("attention-transformers.yaml", "attention-practice.yaml", "attention-drill.yaml"):
        shutil.copy(quiz_dir / name, folder)
    return folder


@pytest.fixture
def instructor(bank_dir, tmp_path):
    app = create_app({"TESTING": True, "SECRET_KEY": "s", "QUIZ_DIR": str(bank_dir), "QUIZ_HOT_RELOAD": True,
                      "INSTRUCTOR_PASSWORD_HASH": PASSWORD_HASH,
                      "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}"})
    client = app.test_client()
    assert sign_in(client).status_code in (302, 303)
    return client


def test_preview_is_closed_without_sign_in(bank_dir, tmp_path):
    app = create_app({"TESTING": True, "SECRET_KEY": "s", "QUIZ_DIR": str(bank_dir),
                      "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}"})
    client = app.test_client()
    for path in ["/instructor/preview/", "/instructor/preview/attention-transformers/head-dimension"]:
        response = client.get(path)
        assert response.status_code == 303 and "/instructor/login" in response.location


def test_preview_shows_key_every_feedback_and_the_visual(instructor):
    html = instructor.get("/instructor/preview/attention-transformers/head-dimension").get_data(as_text=True)
    assert html.count('class="badge right">Correct') == 1
    assert html.count('class="badge wrong">Wrong') == 3
    for feedback in ["128 / 4 = 32 per head", "Four heads of 64", "summed or maxed", "2048 wide"]:
        assert feedback in html
    # The question's own visual: its alt text states the question's numbers (d_model 128, 4 heads of 32).
    alt = re.search(r'<img class="visual-image"[^>]* alt="([^"]*)"', html)
    assert alt and all(number in alt.group(1) for number in ("128", "4 heads", "32")), alt
    assert "Explanation" in html


def test_seed_selector_walks_through_variants(instructor):
    url = "/instructor/preview/attention-practice/head-dimension-variant"
    seen = set()
    for seed in range(6):
        html = instructor.get(f"{url}?seed={seed}").get_data(as_text=True)
        values = re.search(r"<code>d_model = (\d+)</code>, <code>num_heads = (\d+)</code>", html)
        d_model, heads = map(int, values.groups())
        assert f"Answer: <strong>{d_model // heads}</strong>" in html
        assert f"seed={seed + 1}" in html  # next variant
        seen.add((d_model, heads))
    assert len(seen) > 1
    assert instructor.get(f"{url}?seed=-3").status_code == 400
    assert instructor.get(f"{url}?seed=abc").status_code == 400


def test_broken_bank_errors_show_in_the_preview_while_students_keep_the_last_good_version(instructor, bank_dir):
    bank = bank_dir / "attention-transformers.yaml"
    bank.write_text(bank.read_text().replace("scoring: net_correct", "scoring: lenient", 1))
    instructor.application.extensions["banks"].refresh_if_changed()  # what the hot-reload thread does
    index = instructor.get("/instructor/preview/").get_data(as_text=True)
    assert re.search(r"attention-transformers\.yaml:\d+:\d+: questions\[1\]\.scoring: expected one of", index)
    assert "Students still get the last good" in index
    page = instructor.get("/instructor/preview/attention-transformers/transformer-advantages").get_data(as_text=True)
    assert "no longer validates" in page
    assert instructor.get("/quiz/attention-transformers/transformer-advantages").status_code == 200


@pytest.mark.parametrize("seed", ["²", "9" * 5000, "1e3", "-0", ""])
def test_odd_seeds_are_a_400_with_a_sentence(instructor, seed):
    response = instructor.get("/instructor/preview/attention-practice/head-dimension-variant", query_string={"seed": seed})
    assert response.status_code == 400
    assert "seed must be a whole number" in response.get_data(as_text=True)


def test_preview_shows_a_matrix_key_and_its_misconceptions(instructor):
    html = instructor.get("/instructor/preview/attention-practice/attention-output-2x2").get_data(as_text=True)
    assert "(matrix)" in html and "Key (2 × 2) · each entry accepted within ±0.011" in " ".join(html.split())
    assert re.findall(r"<td>([0-9.]+)</td>", html) == ["2", "3", "2.60886", "3.60886"]
    assert "<h2>Misconceptions</h2>" in html
    assert "<code>no-sqrt-scaling</code>" in html and "[[2, 3], [2.762, 3.762]]" in html
    assert "The softmax ran down the columns" in html


def test_preview_marks_the_cells_of_the_key(instructor):
    html = instructor.get("/instructor/preview/attention-practice/causal-mask-grid?seed=0").get_data(as_text=True)
    n = int(re.search(r"<code>n = (\d)</code>", html).group(1))
    assert f"{n * (n + 1) // 2} of {n * n} cells are right" in html
    assert html.count('<td class="is-hit">') == n * (n + 1) // 2
    key_table = html.split('id="try-heading"', 1)[0]  # not the grid of "Answer as a student" below it
    assert re.findall(r'<th scope="row">([^<]*)</th>', key_table) == [str(i) for i in range(1, n + 1)]


def test_the_preview_says_how_the_bank_gives_feedback(instructor):
    drill = instructor.get("/instructor/preview/attention-drill/scaled-score-by-hand").get_data(as_text=True)
    assert re.search(r"The bank is practice, with\s+3 tries per question \(a right answer on try 1, 2, … earns\s+"
                     r"1, 0.5, 0.25 of the point;", drill)
    seed = instructor.get("/instructor/preview/attention-transformers/attention-complexity").get_data(as_text=True)
    assert re.search(r"The bank is practice, with\s+immediate feedback\.", seed)


def test_a_seed_that_cannot_be_made_is_named_with_the_variant_its_students_get(instructor, bank_dir):
    """It showed seed 187's drawn values beside seed 0's text, with nothing to say the seed fails."""
    from test_selftest import RARE_DIVISION

    (bank_dir / "big.yaml").write_text(RARE_DIVISION)
    instructor.application.extensions["banks"].refresh_if_changed()
    page = instructor.get("/instructor/preview/big/q1?seed=187")
    html = page.get_data(as_text=True)
    assert page.status_code == 200
    assert "Seed 187 cannot be made:</strong> {{ 12 / (a % 97 - 3) }}: division by zero" in html
    assert "gets the variant of seed 0 instead" in html and "Drawn values (seed 0):" in html
    assert "Next variant" in html  # the preview's own page, with its navigation
    ok = instructor.get("/instructor/preview/big/q1?seed=186").get_data(as_text=True)
    assert "cannot be made" not in ok and "Drawn values:" in ok


def test_the_preview_shows_the_banks_settings_the_learn_link_and_whose_prediction_the_figure_draws(instructor,
                                                                                                    bank_dir):
    (bank_dir / "exam.yaml").write_text(
        "id: exam\ntitle: Exam\nmode: graded\nfeedback: deferred\nattempts: 2\ntime_limit: 1h30m\n"
        "shuffle: {questions: true, options: true}\nopens: 2026-01-01T09:00:00Z\ncloses: 2027-01-01T09:00:00Z\n"
        "questions:\n  - {id: q1, type: true_false, prompt: Is it, answer: true, explanation: E.,\n"
        "     learn: 'https://arxiv.org/abs/1706.03762'}\n")
    instructor.application.extensions["banks"].refresh_if_changed()
    html = " ".join(instructor.get("/instructor/preview/exam/q1").get_data(as_text=True).split())
    assert ("Also: time limit 1 h 30 min; 2 attempts (counted per browser session); shuffles its questions and "
            "options; opens 2026-01-01 09:00 UTC; closes 2027-01-01 09:00 UTC.") in html
    assert 'Read more (linked from the answer page): <a href="https://arxiv.org/abs/1706.03762">' in html
    plain = instructor.get("/instructor/preview/attention-drill/why-scale").get_data(as_text=True)
    assert 'id="bank-assessment"' not in plain
    predicted = instructor.get("/instructor/preview/attention-practice/predict-soft-lookup").get_data(as_text=True)
    assert "drawn as a student who gave the key sees it" in predicted


def test_a_large_numeric_key_is_written_as_students_see_it(instructor):
    """The preview wrote 1.04858e+06 (Python's %g) where the answer page shows 1048576."""
    for seed in range(40):
        html = instructor.get(f"/instructor/preview/attention-practice/attention-cost-variant?seed={seed}").get_data(
            as_text=True)
        key = int(re.search(r"Answer: <strong>([^<]+)</strong>", html).group(1))
        if key >= 1_000_000:
            break
    else:
        pytest.fail("no seed of 40 drew a key of a million or more")
    assert "e+0" not in re.search(r"Answer: <strong>[^<]+</strong>", html).group(0)


def _words(html: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", html.split("<main", 1)[1]).split())


def test_an_answer_tried_in_the_preview_is_graded_as_the_answer_page_grades_it_and_stored_nowhere(instructor):
    url = "/instructor/preview/attention-transformers/head-dimension"
    html = instructor.get(url).get_data(as_text=True)
    assert 'id="try-heading"' in html and 'id="tried-verdict"' not in html  # the form, and no verdict yet
    wrong = instructor.get(f"{url}?answer=64").get_data(as_text=True)
    words = _words(wrong)
    assert "Not quite Score: 0 / 1" in words
    assert "Your choice Incorrect" in words and "Missed Correct answer" in words
    assert re.search(r'value="64" checked', wrong)  # the tried option stays picked
    right = _words(instructor.get(f"{url}?answer=32").get_data(as_text=True))
    assert "Correct Score: 1 / 1" in right
    engine = instructor.application.extensions["db_engine"]
    with engine.connect() as connection:
        from sqlalchemy import func, select

        from app import db
        assert connection.execute(select(func.count()).select_from(db.attempts)).scalar_one() == 0
        assert connection.execute(select(func.count()).select_from(db.tries)).scalar_one() == 0


def test_a_refused_answer_in_the_preview_is_said_beside_the_form_and_kept_to_correct(instructor):
    url = "/instructor/preview/attention-practice/head-dimension-variant?seed=3"
    response = instructor.get(f"{url}&answer=twelve")
    html = response.get_data(as_text=True)
    assert response.status_code == 200
    assert re.search(r'<p class="form-error" role="alert" id="answer-error">[^<]+</p>', html)
    assert 'value="twelve"' in html and 'id="tried-verdict"' not in html
    # Two answers to a question that takes one, or an option that does not exist: refused the same way.
    assert 'id="answer-error"' in instructor.get(
        "/instructor/preview/attention-transformers/head-dimension?answer=zz").get_data(as_text=True)


def test_the_preview_draws_the_figure_for_the_answer_tried_and_keeps_it_when_the_controls_change(instructor):
    url = "/instructor/preview/attention-practice/predict-soft-lookup"
    as_key = instructor.get(url).get_data(as_text=True)
    tried = instructor.get(f"{url}?answer=0,2").get_data(as_text=True)  # kitten → car: a wrong pick
    assert "Not quite" in _words(tried) and "drawn for the answer graded above" in tried

    def src(html):
        return re.search(r'<img class="visual-image" src="([^"]+)"', html).group(1)

    assert src(tried) != src(as_key)
    assert "0%2C2" in src(tried) or "0,2" in src(tried)  # the tried cell is drawn as the prediction
    controls = tried.split('class="visual-controls"', 1)[1].split("</form>", 1)[0]
    assert '<input type="hidden" name="answer" value="0,2">' in controls
    assert '<input type="hidden" name="seed" value="0">' in controls
