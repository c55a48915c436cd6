"""The instructor's export for Moodle in the browser: `flask export-quiz` behind the instructor sign-in, with the
same settings (bounded), the same warnings on the page and the same file to download."""

from __future__ import annotations

import html
import re
import xml.etree.ElementTree as ElementTree

import pytest

from app import create_app
from app.authoring.cli import app_renderer
from app.authoring.export import export_bank
from app.instructor.views import WEB_MAX_VARIANTS
from app.paths import resource_dir
from test_instructor import PASSWORD_HASH, sign_in

SEED = "attention-transformers"
PRACTICE = "attention-practice"


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    database = tmp_path_factory.mktemp("export") / "export.sqlite3"
    return create_app({"TESTING": True, "SECRET_KEY": "test-secret-key", "QUIZ_DIR": str(resource_dir("quizzes")),
                       "DATABASE_URL": f"sqlite:///{database}", "INSTRUCTOR_PASSWORD_HASH": PASSWORD_HASH})


@pytest.fixture(scope="module")
def instructor(app):  # one sign-in for the module: the sign-in page allows 10 a minute
    client = app.test_client()
    assert sign_in(client).status_code == 303
    return client


def flat(response) -> str:
    return " ".join(response.get_data(as_text=True).split("<main", 1)[1].split())


def test_the_export_is_for_instructors_only(app):
    client = app.test_client()
    page = client.get(f"/instructor/banks/{SEED}/export")
    assert page.status_code == 303 and "/instructor/login" in page.location
    assert client.get(f"/instructor/banks/{SEED}/export/file").status_code == 401


def test_the_page_lists_what_the_cli_warns_and_the_download_is_the_clis_file(app, instructor):
    bank_page = instructor.get(f"/instructor/banks/{SEED}").get_data(as_text=True)
    assert f'href="/instructor/banks/{SEED}/export">Export for Moodle</a>' in bank_page
    page = flat(instructor.get(f"/instructor/banks/{SEED}/export"))
    assert "9 questions to export" in page
    with app.test_request_context():
        bank = app.extensions["banks"].get(SEED)
        expected = export_bank(bank, "moodle-xml", render=app_renderer())
    listed = re.findall(r"<li>(.*?)</li>", page.split('id="export-warnings"', 1)[1].split("</ul>", 1)[0])
    assert [html.unescape(item) for item in listed] == [str(warning) for warning in expected.warnings]
    assert len(listed) == 5 and all("nowhere from Moodle" in item for item in listed)
    # Download submits the form to the file's address: the settings as they are in the form, not as checked.
    assert re.search(r'<form method="get" action="/instructor/banks/attention-transformers/export" '
                     r'class="export-form" id="export-form"', page)
    assert re.search(r'<button type="submit" form="export-form" class="button primary" id="export-download" '
                     r'formaction="/instructor/banks/attention-transformers/export/file">', page), page
    assert "that is attention-transformers.xml" in page
    response = instructor.get(f"/instructor/banks/{SEED}/export/file?format=moodle-xml&math=tex&visual=feedback"
                              "&seed=0&variants=1")
    assert response.status_code == 200 and response.mimetype == "application/xml"
    assert response.headers["Content-Disposition"] == 'attachment; filename="attention-transformers.xml"'
    assert response.get_data(as_text=True) == expected.text  # figures and all, as the command line writes it
    root = ElementTree.fromstring(response.data)
    assert len(root.findall("question[@type='category']")) == 1
    assert len(root.findall(".//generalfeedback/file")) == 9  # every seed question's figure


def test_gift_and_variants_follow_the_settings(app, instructor):
    page = flat(instructor.get(f"/instructor/banks/{PRACTICE}/export?format=gift&seed=2&variants=3"))
    assert "cannot be carried by GIFT" in page and 'that is attention-practice.gift.txt' in page
    response = instructor.get(f"/instructor/banks/{PRACTICE}/export/file?format=gift&seed=2&variants=3&math=tex"
                              "&visual=feedback")
    assert response.status_code == 200 and response.mimetype == "text/plain"
    with app.test_request_context():
        bank = app.extensions["banks"].get(PRACTICE)
        assert response.get_data(as_text=True) == export_bank(bank, "gift", seed=2, variants=3).text
    assert f"$CATEGORY: $course$/top/{bank.title}/" in response.get_data(as_text=True)


@pytest.mark.parametrize("query, field, sentence", [
    ("format=docx", "format", "format must be one of gift, moodle-xml."),
    (f"variants={WEB_MAX_VARIANTS + 1}", "variants", f"variants must be a whole number from 1 to {WEB_MAX_VARIANTS}."),
    ("variants=0", "variants", "variants"),
    ("seed=-1", "seed", "seed must be a whole number from 0 to 2147483647."),
    ("seed=1e3", "seed", "seed must be a whole number"),
    ("seed=%EF%BC%93", "seed", "seed must be a whole number"),  # a fullwidth digit
    ("math=latex", "math", "math must be one of tex, mathml."),
    ("visual=everywhere", "visual", "visual must be one of feedback, question, none."),
])
def test_a_refused_setting_is_marked_on_the_page_and_the_file_is_a_400(instructor, query, field, sentence):
    page = instructor.get(f"/instructor/banks/{SEED}/export?{query}")
    text = page.get_data(as_text=True)
    assert page.status_code == 400 and sentence in text
    assert re.search(rf'id="export-{field}"[^>]*aria-invalid="true"', text)
    assert "export-download" not in text
    refused = instructor.get(f"/instructor/banks/{SEED}/export/file?{query}")
    assert refused.status_code == 400 and sentence in refused.get_data(as_text=True)


def test_an_unknown_bank_is_a_404(instructor):
    assert instructor.get("/instructor/banks/nope/export").status_code == 404
    assert instructor.get("/instructor/banks/nope/export/file").status_code == 404


def test_an_export_that_would_draw_too_many_figures_says_so_and_draws_none(app, instructor, monkeypatch):
    import app.instructor.views as views

    drawn = []
    monkeypatch.setattr(views, "WEB_MAX_FIGURES", 20)  # the practice bank's 10 variants make 21
    monkeypatch.setattr(views, "app_renderer", lambda: lambda kind, params: drawn.append(kind) or 1 / 0)
    query = "format=moodle-xml&variants=10&seed=0&math=tex"
    page = instructor.get(f"/instructor/banks/{PRACTICE}/export?{query}&visual=feedback")
    text = flat(page)
    assert page.status_code == 400
    command = "flask --app app export-quiz attention-practice --format moodle-xml --variants 10 -o attention-practice.xml"
    assert ("These settings make 21 figures, and an export from the browser draws at most 20. Choose fewer "
            "variants or Figures: none, or make the same file on the server with this command:") in text
    assert f"<code>{command}</code>" in text
    assert 'id="export-download"' not in text and "45 questions to export" in text
    file = instructor.get(f"/instructor/banks/{PRACTICE}/export/file?{query}&visual=feedback")
    assert file.status_code == 400 and "These settings make 21 figures" in file.get_data(as_text=True)
    assert command in file.get_data(as_text=True)
    assert drawn == []  # refused before the first figure
    for fine in (f"{query}&visual=none", "format=gift&variants=10&seed=0&math=tex&visual=feedback",
                 "format=moodle-xml&variants=9&seed=0&math=tex&visual=feedback"):
        page = flat(instructor.get(f"/instructor/banks/{PRACTICE}/export?{fine}"))
        assert 'id="export-download"' in page, fine
        assert ("19 of them have a visual, each drawn as a figure" in page) == ("variants=9" in fine), fine
        assert ("No figures are drawn." in page) == ("variants=9" not in fine), fine


def test_the_command_the_page_offers_writes_the_file_the_browser_would(app, tmp_path, monkeypatch):
    from app.instructor.views import export_command

    options = {"format": "gift", "seed": 7, "variants": 3, "math": "mathml", "visual": "none"}
    command = export_command(PRACTICE, options).split()
    assert command[:4] == ["flask", "--app", "app", "export-quiz"] and command[-2:] == ["-o", f"{PRACTICE}.gift.txt"]
    monkeypatch.chdir(tmp_path)
    result = app.test_cli_runner().invoke(args=command[3:])
    assert result.exit_code == 0, result.output
    with app.app_context():
        expected = export_bank(app.extensions["banks"].get(PRACTICE), "gift", seed=7, variants=3, math_mode="mathml",
                               visual="none")
    assert (tmp_path / f"{PRACTICE}.gift.txt").read_text() == expected.text


def test_the_command_leaves_out_only_export_quizs_own_defaults():
    from app.authoring.cli import export_quiz_command
    from app.instructor.views import CLI_DEFAULTS, export_command

    assert CLI_DEFAULTS == {param.name: param.default for param in export_quiz_command.params if param.name in CLI_DEFAULTS}
    assert export_command(SEED, {"format": "gift", **CLI_DEFAULTS}) == (
        "flask --app app export-quiz attention-transformers --format gift -o attention-transformers.gift.txt")
