"""The instructor area through Flask's test client: sign-in and its defences, every route closed to
students, and the numbers, charts and CSV after a class of students has taken a small quiz."""

from __future__ import annotations

import csv
import io
import json
import re
from datetime import datetime
from urllib.parse import parse_qs, urlsplit

import numpy as np
import pytest
from flask import url_for
from werkzeug.security import check_password_hash, generate_password_hash
from matplotlib.text import Text

from app import create_app, db
from app.instructor.export import guard_cell
from conftest import answer_via_form, csrf_token, image_size

PASSWORD = "correct horse battery"
PASSWORD_HASH = generate_password_hash(PASSWORD, method="pbkdf2:sha256:1000")  # cheap, for tests only
BANK = "mini"
QUESTIONS = ("tf", "sc", "mc", "num")

MINI_BANK = """\
id: mini
title: Mini attention quiz
questions:
  - id: tf
    type: true_false
    prompt: Attention is a soft dictionary lookup.
    answer: true
    explanation: Each query mixes all values.
  - id: sc
    type: single_choice
    prompt: With $d_{model} = 128$ and 4 heads, how wide is each head?
    answer: a
    options:
      - {id: a, text: "32"}
      - {id: b, text: "64"}
      - {id: c, text: "128"}
    explanation: 128 / 4 = 32.
  - id: mc
    type: multiple_choice
    scoring: net_correct
    prompt: Which are projections of the input?
    options:
      - {id: x, text: Queries, correct: true}
      - {id: y, text: Keys, correct: true}
      - {id: z, text: Embeddings}
    explanation: Queries, keys and values are projections.
  - id: num
    type: numeric
    prompt: For $d_k = 64$, by what are the scores divided?
    answer: 8
    tolerance: {abs: 0.01}
    explanation: By sqrt(64) = 8.
"""

# Six students who finish, each with their answers to (tf, sc, mc, num) and the scores those earn.
# mc is net_correct over two right options: (right picks - wrong picks) / 2, floored at 0.
FINISHERS = [
    (("true", "a", ["x", "y"], "8"), (1, 1, 1.0, 1)),
    (("true", "a", ["x"], "8"), (1, 1, 0.5, 1)),
    (("true", "b", ["x", "z"], "8"), (1, 0, 0.0, 1)),
    (("false", "a", ["y"], "7"), (0, 1, 0.5, 0)),
    (("true", "c", ["z"], "16"), (1, 0, 0.0, 0)),
    (("false", "b", ["x", "y"], "8"), (0, 0, 1.0, 1)),
]
SCORES = np.array([scores for _, scores in FINISHERS], dtype=float)  # (students, questions)
TOTALS = SCORES.sum(axis=1)  # 4, 3.5, 2, 1.5, 1, 2
# A seventh student answers only the true/false question (true) and does not finish.


@pytest.fixture
def quiz_dir(tmp_path):
    folder = tmp_path / "quizzes"
    folder.mkdir()
    (folder / "mini.yaml").write_text(MINI_BANK)
    return folder


def build_app(quiz_dir, tmp_path, **config):
    settings = {"TESTING": True, "SECRET_KEY": "test-secret-key", "QUIZ_DIR": str(quiz_dir),
                "DATABASE_URL": f"sqlite:///{tmp_path / 'instructor.sqlite3'}",
                "INSTRUCTOR_PASSWORD_HASH": PASSWORD_HASH}
    return create_app({**settings, **config})


@pytest.fixture
def app(quiz_dir, tmp_path):
    return build_app(quiz_dir, tmp_path)


def sign_in(client, password=PASSWORD, **extra):
    token = csrf_token(client.get("/instructor/login").get_data(as_text=True))
    return client.post("/instructor/login", data={"csrf_token": token, "password": password, **extra})


def is_signed_in(client) -> bool:
    with client.session_transaction() as session:
        return session.get("instructor") is True


def take_quiz(app, answers):
    student = app.test_client()
    for question_id, value in zip(QUESTIONS, answers):
        assert answer_via_form(student, BANK, question_id, value).status_code == 303
    return student


def attempt_id(student) -> str:
    with student.session_transaction() as session:
        return session["attempts"][BANK]


@pytest.fixture
def classroom(app):
    """Six students finish the quiz; a seventh answers one question. The first calls themself =cmd()."""
    students = [take_quiz(app, answers) for answers, _ in FINISHERS]
    take_quiz(app, ["true"])
    with app.app_context():
        db.set_display_name(attempt_id(students[0]), "=cmd()")
    return students


def cells(html: str, row_id: str) -> list[str]:
    """The text of each cell in the table row with this id."""
    row = re.search(rf'<tr id="{re.escape(row_id)}">(.*?)</tr>', html, re.S)
    assert row, f"no row {row_id}"
    return [re.sub(r"<[^>]+>", "", cell).strip() for cell in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row.group(1), re.S)]


# --- signing in ----------------------------------------------------------------------------------

def test_the_right_password_signs_in_and_opens_the_dashboard(client):
    response = sign_in(client)
    assert response.status_code == 303
    assert urlsplit(response.location).path == "/instructor/"
    assert is_signed_in(client)
    page = client.get("/instructor/")
    assert page.status_code == 200
    assert "Mini attention quiz" in page.get_data(as_text=True)


def test_a_wrong_password_is_refused_with_a_message_and_no_session_flag(client):
    response = sign_in(client, password="correct horse")
    assert response.status_code == 401
    assert "That password is not right" in response.get_data(as_text=True)
    assert not is_signed_in(client)
    assert client.get("/instructor/").status_code == 303


def test_signing_in_needs_the_csrf_token(client):
    response = client.post("/instructor/login", data={"password": PASSWORD})
    assert response.status_code == 400
    assert "security token" in response.get_data(as_text=True)
    assert not is_signed_in(client)


def test_signing_out_is_a_post_with_a_csrf_token(client):
    sign_in(client)
    assert client.get("/instructor/logout").status_code == 405
    assert client.post("/instructor/logout").status_code == 400  # no token
    assert is_signed_in(client)
    page = client.get("/instructor/").get_data(as_text=True)
    response = client.post("/instructor/logout", data={"csrf_token": csrf_token(page)})
    assert response.status_code == 303
    assert not is_signed_in(client)
    assert client.get("/instructor/").status_code == 303


def test_sign_in_attempts_are_rate_limited_per_address(app, client):
    app.config["RATE_LIMIT_LOGIN"] = "3 per minute"
    for _ in range(3):
        assert sign_in(client, password="guess").status_code == 401
    response = sign_in(client)  # even the right password waits once the limit is reached
    assert response.status_code == 429
    assert not is_signed_in(client)
    assert client.get("/instructor/login").status_code == 200  # only POSTs count


@pytest.mark.parametrize("target, expected", [
    ("/instructor/banks/mini", "/instructor/banks/mini"),
    ("/instructor/banks/mini?x=1#q-sc", "/instructor/banks/mini?x=1#q-sc"),
    ("https://evil.example/", "/instructor/"),
    ("//evil.example/instructor/", "/instructor/"),
    ("/\\evil.example", "/instructor/"),
    ("/\t/evil.example", "/instructor/"),
    ("javascript:alert(1)", "/instructor/"),
    ("evil.example", "/instructor/"),
])
def test_next_is_followed_only_to_a_path_on_this_site(client, target, expected):
    response = sign_in(client, next=target)
    assert response.status_code == 303
    assert response.location == expected


def test_a_signed_out_visitor_is_sent_to_sign_in_and_then_back(client):
    response = client.get("/instructor/banks/mini?tab=1")
    assert response.status_code == 303
    location = urlsplit(response.location)
    assert location.path == "/instructor/login"
    assert parse_qs(location.query)["next"] == ["/instructor/banks/mini?tab=1"]
    page = client.get(response.location).get_data(as_text=True)
    assert 'name="next" value="/instructor/banks/mini?tab=1"' in page
    assert sign_in(client, next="/instructor/banks/mini?tab=1").location == "/instructor/banks/mini?tab=1"


def test_every_instructor_route_is_closed_without_signing_in(app, client):
    student = take_quiz(app, ["true", "a", ["x"], "8"])  # so every chart has something to draw
    rules = [r for r in app.url_map.iter_rules()
             if r.endpoint.startswith("instructor.") and r.endpoint != "instructor.login"]
    assert len(rules) >= 6
    sample = {"bank_id": BANK, "question_id": "sc", "attempt_id": attempt_id(student)}
    with app.test_request_context():
        urls = [(rule, url_for(rule.endpoint, **{a: sample[a] for a in rule.arguments})) for rule in rules]
    token = csrf_token(client.get("/instructor/login").get_data(as_text=True))
    for rule, url in urls:
        for method in sorted(rule.methods - {"HEAD", "OPTIONS"}):
            response = client.open(url, method=method, data={"csrf_token": token} if method != "GET" else None)
            body = response.get_data(as_text=True)
            if response.status_code == 303:
                assert method == "GET", (method, url)
                location = urlsplit(response.location)
                assert location.path == "/instructor/login"
                assert parse_qs(location.query)["next"] == [url]
            else:
                assert response.status_code == 401, (method, url, response.status_code)
                assert "Mini attention quiz" not in body and "instructors only" in body
    # The pages redirect, the data answers 401.
    assert client.get("/instructor/").status_code == 303
    assert client.get(f"/instructor/banks/{BANK}").status_code == 303
    assert client.get(f"/instructor/banks/{BANK}/responses.csv").status_code == 401
    assert client.get(f"/instructor/banks/{BANK}/charts/histogram.png").status_code == 401
    # Once signed in, the same URLs answer.
    sign_in(client)
    for rule, url in urls:
        if "GET" in rule.methods:
            assert client.get(url, follow_redirects=True).status_code == 200, url


def test_without_a_configured_hash_nobody_can_sign_in_and_the_page_says_how_to_set_it(quiz_dir, tmp_path):
    app = build_app(quiz_dir, tmp_path, INSTRUCTOR_PASSWORD_HASH=None)
    client = app.test_client()
    page = client.get("/instructor/login").get_data(as_text=True)
    assert "FLASK_INSTRUCTOR_PASSWORD_HASH" in page
    assert "from werkzeug.security import generate_password_hash as g; print(g(&#39;your password&#39;))" in page
    assert "flask --app app hash-password" in page
    for password in ("", PASSWORD, "anything"):
        response = sign_in(client, password=password)
        assert response.status_code == 401
        assert "switched off" in response.get_data(as_text=True)
        assert not is_signed_in(client)


def test_a_plain_password_in_the_hash_setting_is_rejected_with_a_hint(quiz_dir, tmp_path):
    app = build_app(quiz_dir, tmp_path, INSTRUCTOR_PASSWORD_HASH=PASSWORD)
    client = app.test_client()
    assert "does not look like a werkzeug password hash" in client.get("/instructor/login").get_data(as_text=True)
    assert sign_in(client).status_code == 401
    assert not is_signed_in(client)


def test_changing_the_password_hash_signs_everyone_out(app, client):
    sign_in(client)
    assert client.get("/instructor/").status_code == 200
    app.config["INSTRUCTOR_PASSWORD_HASH"] = generate_password_hash("a new one", method="pbkdf2:sha256:1000")
    assert client.get("/instructor/").status_code == 303


def test_hash_password_command_prints_a_hash_that_verifies(runner):
    result = runner.invoke(args=["hash-password"], input="a long passphrase\na long passphrase\n")
    assert result.exit_code == 0, result.output
    hashed = [line for line in result.stdout.splitlines() if "$" in line and " " not in line][0]
    assert check_password_hash(hashed, "a long passphrase")
    assert not check_password_hash(hashed, "a long passphras")
    short = runner.invoke(args=["hash-password"], input="short\nshort\n")
    assert short.exit_code != 0 and "at least 8 characters" in short.output


# --- the numbers -------------------------------------------------------------------------------

def test_dashboard_lists_attempts_and_mean_score(classroom, client):
    sign_in(client)
    html = client.get("/instructor/").get_data(as_text=True)
    # 7 started, 6 finished; mean of total/4 over finished = (4 + 3.5 + 2 + 1.5 + 1 + 2) / 24 = 58%
    assert cells(html, f"bank-{BANK}") == ["Mini attention quiz", "4", "7", "6", "58%"]


def test_bank_page_shows_attempts_facility_discrimination_and_picks(classroom, client):
    sign_in(client)
    response = client.get(f"/instructor/banks/{BANK}")
    assert response.status_code == 200
    assert response.headers["Cache-Control"] == "no-store"
    html = response.get_data(as_text=True)
    assert re.search(r'id="attempts-started">7<', html)
    assert re.search(r'id="attempts-finished">6<', html)
    assert re.search(r'id="mean-score">58%<', html)

    # Discrimination: Pearson r of item vs rest over the six finishers, computed independently here.
    rest = TOTALS[:, None] - SCORES
    r = [np.corrcoef(SCORES[:, j], rest[:, j])[0, 1] for j in range(4)]
    assert [round(v, 3) for v in r] == [-0.060, 0.196, 0.227, 0.369]
    # Upper-lower: 27% of 6 rounds to 2 students. By total the top two are students 1 and 2 (4, 3.5),
    # the bottom two students 4 and 5 (1.5, 1). tf: 1 - 0.5; sc: 1 - 0.5; mc: 0.75 - 0.25; num: 1 - 0.
    # Facility counts every response: tf also has the unfinished seventh student's right answer (5/7).
    expected = {
        # r < 0 and r < 0.2, shown but not flagged: six students are too few to act on a correlation.
        "tf": ["1. tf", "7", "0.71", "0.71", f"{r[0]:.2f}", "0.50", "none"],
        "sc": ["2. sc", "6", "0.50", "0.50", f"{r[1]:.2f}", "0.50", "none"],
        "mc": ["3. mc", "6", "0.50", "0.33", f"{r[2]:.2f}", "0.50", "none"],
        "num": ["4. num", "6", "0.67", "0.67", f"{r[3]:.2f}", "1.00", "none"],
    }
    for question_id, row in expected.items():
        assert cells(html, f"summary-{question_id}") == row
    assert ("Discrimination uses the 6 finished attempts that answered this question; below 20 it is mostly "
            "chance, so it is not flagged.") in " ".join(html.split())

    # How often each option was picked (multi-select counts every id) and its share of responses.
    assert cells(html, "pick-tf-true")[-2:] == ["5", "71%"]
    assert cells(html, "pick-tf-false")[-2:] == ["2", "29%"]
    assert [cells(html, f"pick-sc-{o}")[-2] for o in "abc"] == ["3", "2", "1"]
    assert [cells(html, f"pick-mc-{o}")[-2] for o in "xyz"] == ["4", "3", "2"]
    assert cells(html, "pick-mc-x")[2] == "yes" and cells(html, "pick-mc-z")[2] == "no"
    numeric = re.search(r'<table class="stats-table compact" id="answers-num">(.*?)</table>', html, re.S).group(1)
    rows = [[re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", tr, re.S)]
            for tr in re.findall(r"<tr>(.*?)</tr>", numeric, re.S)][1:]
    assert rows == [["8", "yes", "4"], ["7", "no", "1"], ["16", "no", "1"]]


def test_charts_have_alt_text_shown_on_the_page_from_the_same_numbers(classroom, client):
    sign_in(client)
    html = client.get(f"/instructor/banks/{BANK}").get_data(as_text=True)
    images = re.findall(r'<img class="chart-image" src="([^"]+)" width="(\d+)" height="(\d+)" alt="([^"]+)">\s*'
                        r'</picture>\s*<figcaption><p class="chart-alt" aria-hidden="true">([^<]+)</p>', html)
    figures = [(src, alt, caption) for src, _, _, alt, caption in images]
    assert len(figures) == 5  # the histogram and one chart per question
    for _, alt, caption in figures:
        assert alt == caption
    for src, width, height, _, _ in images:  # the page keeps each chart's space before it arrives
        assert image_size(client.get(src).data) == (int(width), int(height)), src
    histogram_alt = figures[0][1]
    # Totals / 4: 1.0, 0.875, 0.5, 0.375, 0.25, 0.5
    assert "6 finished attempts, mean score 58%" in histogram_alt
    assert ("20%\u201330%: 1; 30%\u201340%: 1; 50%\u201360%: 2; 80%\u201390%: 1; 90%\u2013100%: 1. "
            "Bands not listed are empty.") in histogram_alt
    mc_alt = dict((src.rsplit("/", 1)[-1], alt) for src, alt, _ in figures)["mc.png"]
    assert "6 responses; each could pick several options" in mc_alt
    assert "x (correct): 4; y (correct): 3; z: 2" in mc_alt
    # The band table under the histogram holds the same counts.
    bands = re.findall(r'<tr><th scope="row">(\d+%\u2013\d+%)</th><td class="number">(\d+)</td></tr>', html)
    assert [int(c) for _, c in bands] == [0, 0, 1, 1, 0, 2, 0, 0, 1, 1]


def test_chart_images_are_pngs_for_instructors_only(classroom, app, client):
    urls = [f"/instructor/banks/{BANK}/charts/histogram.png"] + [
        f"/instructor/banks/{BANK}/charts/questions/{q}.png" for q in QUESTIONS]
    for url in urls:
        assert client.get(url).status_code == 401
    sign_in(client)
    for url in urls:
        response = client.get(url)
        assert response.status_code == 200, url
        assert response.mimetype == "image/png"
        assert response.data.startswith(b"\x89PNG\r\n\x1a\n")
        assert response.headers["Cache-Control"] == "no-store"
    assert client.get(f"/instructor/banks/{BANK}/charts/questions/nope.png").status_code == 404
    assert client.get("/instructor/banks/nope/charts/histogram.png").status_code == 404
    # A phone's layout: the page offers it for narrow screens, drawn at a phone's width; nothing else is taken.
    html = client.get(f"/instructor/banks/{BANK}").get_data(as_text=True)
    for url in urls:
        assert f'<source media="(max-width: 640px)" srcset="{url}?layout=narrow"' in html
        narrow = client.get(url + "?layout=narrow")
        assert narrow.status_code == 200 and image_size(narrow.data)[0] == 340
    refused = client.get(urls[0] + "?layout=tiny")
    assert refused.status_code == 400 and "layout must be wide or narrow" in refused.get_data(as_text=True)


def test_a_bank_without_answers_says_so_instead_of_charting(client):
    sign_in(client)
    html = client.get(f"/instructor/banks/{BANK}").get_data(as_text=True)
    assert "No attempt has been finished yet" in html
    assert html.count("No responses yet.") == 4
    assert "only 0 finished attempts answered it; at least 5 are needed" in html
    assert client.get(f"/instructor/banks/{BANK}/charts/histogram.png").status_code == 404
    assert cells(client.get("/instructor/").get_data(as_text=True), f"bank-{BANK}")[2:] == ["0", "0", "n/a"]


def test_csv_export_has_every_response_and_defuses_formulas(classroom, client):
    sign_in(client)
    response = client.get(f"/instructor/banks/{BANK}/responses.csv")
    assert response.status_code == 200
    assert response.mimetype == "text/csv"
    assert re.fullmatch(r'attachment; filename="mini-responses-\d{8}-\d{6}\.csv"',
                        response.headers["Content-Disposition"])
    assert response.headers["Cache-Control"] == "no-store"
    rows = list(csv.DictReader(io.StringIO(response.get_data(as_text=True))))
    assert list(rows[0]) == ["attempt_id", "display_name", "bank_id", "question_id", "seed", "answer", "score",
                             "answered_at", "finished_at", "total_score", "max_score", "attempt_kind",
                             "lms_user_id", "lms_user_name"]
    assert len(rows) == 6 * 4 + 1
    first = [row for row in rows if row["attempt_id"] == attempt_id(classroom[0])]
    assert [row["question_id"] for row in first] == list(QUESTIONS)
    assert {row["display_name"] for row in first} == {"'=cmd()"}
    assert [json.loads(row["answer"]) for row in first] == [True, "a", ["x", "y"], 8.0]
    assert [float(row["score"]) for row in first] == [1.0, 1.0, 1.0, 1.0]
    assert {row["total_score"] for row in first} == {"4.0"}
    assert {(row["max_score"], row["attempt_kind"], row["lms_user_id"]) for row in first} == {("4", "whole", "")}
    for row in rows:
        answered = datetime.fromisoformat(row["answered_at"])
        assert answered.utcoffset() is not None and answered.utcoffset().total_seconds() == 0
        assert row["bank_id"] == BANK and row["seed"].isdigit()
    unfinished = [row for row in rows if row["finished_at"] == ""]
    assert len(unfinished) == 1 and unfinished[0]["question_id"] == "tf" and unfinished[0]["total_score"] == ""
    assert sum(float(row["score"]) for row in rows) == pytest.approx(TOTALS.sum() + 1)


@pytest.mark.parametrize("value, expected", [
    ("=cmd()", "'=cmd()"),
    ("+SUM(A1:A9)", "'+SUM(A1:A9)"),
    ("-2+3", "'-2+3"),
    ("@SUM(1)", "'@SUM(1)"),
    ("\t=1", "'\t=1"),
    ("-3", "-3"),  # a plain number stays a number
    ("-0.5e3", "-0.5e3"),
    ("Ada", "Ada"),
    ('"=x"', '"=x"'),  # a JSON string starts with a quote: inert
    (None, ""),
])
def test_guard_cell_defuses_formulas_and_keeps_plain_numbers(value, expected):
    assert guard_cell(value) == expected


@pytest.mark.parametrize("bars", [0, 1, 2, 5, 7, 8, 9, 12])
def test_an_instructor_chart_states_the_size_of_its_png(bars):
    # Moved from tests/test_image_sizes.py: the chart page reserves each chart's space before it arrives.
    from app.instructor.charts import CountChart, render_png

    chart = CountChart(title="t", subject="answers", category_title="option", labels=tuple(f"o{i}" for i in range(bars)),
                       counts=tuple(range(bars)), highlighted=tuple(i == 0 for i in range(bars)))
    for layout in ("wide", "narrow"):
        assert chart.size(layout) == image_size(render_png(chart, layout))
    assert chart.size("narrow")[0] == 340 < chart.size("wide")[0]  # a phone's width: its text keeps its size


@pytest.mark.parametrize("layout", ["wide", "narrow"])
def test_a_charts_title_and_labels_stay_inside_it_at_a_phones_width_too(layout):
    from app.instructor.charts import CountChart, draw_chart

    chart = CountChart(title="Question 12: how often each option was chosen, of all finished attempts",
                       subject="answers", category_title="option", labels=("nm2-d2l", "nm-d-plus-l", "nmd2l"),
                       counts=(3, 12, 0), highlighted=(False, True, False))
    figure = draw_chart(chart, layout)
    figure.canvas.draw()  # the constrained layout places everything as it draws
    renderer = figure.canvas.get_renderer()
    frame = figure.bbox
    (ax,) = figure.axes
    (low, high), (bottom, top) = sorted(ax.get_xlim()), sorted(ax.get_ylim())
    tick_labels = ax.get_xticklabels() + ax.get_yticklabels()
    drawn_ticks = [label for label in ax.get_xticklabels() if low <= label.get_position()[0] <= high] + [
        label for label in ax.get_yticklabels() if bottom <= label.get_position()[1] <= top]  # outside: not drawn
    texts = [text for text in figure.findobj(Text) if text.get_visible() and text.get_text()
             and (text not in tick_labels or text in drawn_ticks)]
    assert any(chart.title.split(",")[0] in text.get_text().replace("\n", " ") for text in texts)
    for text in texts:
        box = text.get_window_extent(renderer)
        assert frame.x0 - 1 <= box.x0 and box.x1 <= frame.x1 + 1, (text.get_text(), box)
        assert frame.y0 - 1 <= box.y0 and box.y1 <= frame.y1 + 1, (text.get_text(), box)
    assert len(chart.title_lines(layout)) == (1 if layout == "wide" else 2)



def test_wrong_answers_bars_are_neutral_grey_and_only_the_correct_ones_coloured():
    """Bright green on the wrong options' bars read as "correct" to instructors (an audit's finding)."""
    import io

    import numpy as np
    from PIL import Image

    from app.instructor.charts import CountChart, render_png

    chart = CountChart(title="t", subject="answers", category_title="option", labels=("right", "wrong"),
                       counts=(5, 5), highlighted=(True, False))
    pixels = np.asarray(Image.open(io.BytesIO(render_png(chart))).convert("RGB")).reshape(-1, 3).astype(int)
    spread = pixels.max(axis=1) - pixels.min(axis=1)  # 0 for greys and white
    greens = (pixels[:, 1] > pixels[:, 0] + 60) & (pixels[:, 1] > pixels[:, 2] + 30)
    assert not greens.any()
    grey_bar = (spread < 15) & (pixels.min(axis=1) > 180) & (pixels.max(axis=1) < 230)
    assert grey_bar.sum() > 1000  # the wrong option's bar
    assert (spread > 60).sum() > 1000  # the correct one's blue


# --- tries and misconceptions (feedback: try_again) -----------------------------------------------------


@pytest.mark.parametrize("database", ["sqlite", "postgresql"])
def test_the_report_shows_tries_per_question_and_how_often_each_misconception_was_hit(tmp_path, request, database):
    from test_feedback_modes import TRY_AGAIN, make_app, send

    extra = {}
    if database == "postgresql":  # the counts are the database's own (GROUP BY, AVG of the final try numbers)
        extra["DATABASE_URL"] = request.getfixturevalue("postgres").create_database(f"tries_{tmp_path.name[-8:]}")
    app = make_app(tmp_path, TRY_AGAIN, INSTRUCTOR_PASSWORD_HASH=PASSWORD_HASH, **extra)
    request.addfinalizer(app.extensions["db_engine"].dispose)
    first, second = app.test_client(), app.test_client()
    for value in ("64", "64", "8"):  # two tries matching no-sqrt, then right on the third
        send(first, "scale", value)
    for value in ("64", "9"):  # one hit, then a wrong answer that matches nothing; the question stays open
        send(second, "scale", value)
    send(second, "heads", "a")  # right on the first try
    instructor = app.test_client()
    sign_in(instructor)
    html = " ".join(instructor.get("/instructor/banks/modes").get_data(as_text=True).split())
    assert re.search(r'id="tries-scale">5 <span class="meta">\(3.00 per answer\)</span>', html)
    assert re.search(r'id="tries-heads">1 <span class="meta">\(1.00 per answer\)</span>', html)
    assert re.search(r'id="tries-projections">0</dd>', html)
    feedback = "That is d_k itself; the scores are divided by its square root."
    assert cells(html, "miss-scale-no-sqrt") == ["no-sqrt", feedback, "3"]
    assert "feedback try again: 3 tries per question" in html


def test_every_bundled_bank_reports_once_each_question_type_has_answers(tmp_path):
    """Each bundled bank, every question answered twice (right, then wrong) through the JSON API: its report, every
    question's chart and the CSV open for the instructor (a matrix or cells question once broke the report)."""
    from app.authoring.selftest import answer_key, wrong_answers
    from app.bank.variants import instantiate
    from app.paths import resource_dir

    app = build_app(resource_dir("quizzes"), tmp_path)
    registry = app.extensions["banks"]
    client = app.test_client()
    for bank in registry.banks.values():
        for pick_key in (True, False):
            attempt = client.post(f"/api/banks/{bank.id}/attempts").get_json()
            with app.app_context():
                seed = db.attempt_state(attempt["attempt"]).row.seed
            for shown in attempt["questions"]:
                concrete = instantiate(bank.question(shown["id"]), seed)
                key = answer_key(concrete)
                answer = key if pick_key else (wrong_answers(concrete, key) or [key])[0]
                response = client.post(f"/api/banks/{bank.id}/attempts/{attempt['attempt']}/questions/"
                                       f"{shown['id']}/answer", json={"answer": answer})
                assert response.status_code == 200, response.get_json()
    types = {q.type for bank in registry.banks.values() for q in bank.questions}
    assert {"matrix", "cells", "numeric", "multiple_choice"} <= types
    instructor = app.test_client()
    sign_in(instructor)
    for bank in registry.banks.values():
        page = instructor.get(f"/instructor/banks/{bank.id}")
        assert page.status_code == 200, bank.id
        for question in bank.questions:
            chart = instructor.get(f"/instructor/banks/{bank.id}/charts/questions/{question.id}.png")
            assert chart.status_code == 200 and chart.mimetype == "image/png", (bank.id, question.id)
        assert instructor.get(f"/instructor/banks/{bank.id}/responses.csv").status_code == 200


def test_a_parameterised_prompt_on_the_report_shows_each_number_to_draw_as_an_ellipsis(tmp_path):
    """The report showed the template: "$d_{model} = {{ d_model }}$" rendered as maths read "dmodel = dmodel",
    and a placeholder outside $...$ stayed as raw braces."""
    folder = tmp_path / "quizzes"
    folder.mkdir()
    (folder / "p.yaml").write_text(
        "id: p\ntitle: P\nquestions:\n  - id: width\n    type: numeric\n"
        "    params: {d_model: [64, 128], num_heads: [2, 4]}\n"
        "    prompt: 'With $d_{model} = {{ d_model }}$ and {{ num_heads }} heads, how wide is each head?'\n"
        "    answer: d_model / num_heads\n    explanation: Divide.\n")
    app = build_app(folder, tmp_path)
    client = app.test_client()
    sign_in(client)
    page = client.get("/instructor/banks/p").get_data(as_text=True)
    prompt = re.search(r'<div class="prompt">(.*?)</div>', page, re.S).group(1)
    assert "{{" not in prompt and "…" in prompt and "heads, how wide" in prompt
    assert 'alttext="d_{model} = …"' in prompt


def test_an_error_in_the_instructor_area_keeps_its_links_and_leads_back_to_the_dashboard(client):
    sign_in(client)
    page = client.get(f"/instructor/banks/{BANK}/attempts?page=x")
    html = page.get_data(as_text=True)
    assert page.status_code == 400 and "page number must be a whole number" in html
    assert "Preview banks" in html and "Sign out" in html and "Back to the dashboard" in html
    missing = client.get("/instructor/banks/nope").get_data(as_text=True)
    assert "Preview banks" in missing and "Back to the dashboard" in missing
    # Signed out, the area's refusal shows none of its links.
    client.post("/instructor/logout", data={"csrf_token": csrf_token(client.get("/instructor/").get_data(
        as_text=True))})
    refused = client.get(f"/instructor/banks/{BANK}/responses.csv")
    assert refused.status_code == 401
    assert "Preview banks" not in refused.get_data(as_text=True)
    assert "Back to the quizzes" in refused.get_data(as_text=True)
