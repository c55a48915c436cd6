"""The quiz start page: each question listed in the question page's Markdown and maths, and no internal
file name anywhere a student looks."""

from __future__ import annotations

import re

import pytest

from app.markup import render_inline
from conftest import SEED_BANK, answer_via_form
from test_seed import SEED_TEXT

QUESTION_INDEX = re.compile(r'<ol class="question-index">(.*?)</ol>', re.S)
INDEX_LINK = re.compile(r'<li><a href="[^"]+">(.*?)</a>', re.S)


def _index(client, bank_id: str) -> str:
    page = client.get(f"/quiz/{bank_id}/")
    assert page.status_code == 200
    match = QUESTION_INDEX.search(page.get_data(as_text=True))
    assert match, "the start page lists no questions"
    return match.group(1)


def _without_text_alternatives(html: str) -> str:
    """The page without the LaTeX that each <math> carries as its alttext and aria-label (read, not shown)."""
    return re.sub(r'(alttext|aria-label)="[^"]*"', "", html)


def test_the_seed_questions_are_listed_as_the_question_page_renders_them(app, client):
    bank = app.extensions["banks"].get(SEED_BANK)
    links = INDEX_LINK.findall(_index(client, SEED_BANK))
    assert links == [str(render_inline(q.prompt)) for q in bank.questions]
    assert links[0].startswith("<strong>True or False:</strong> Dot-product attention")
    complexity = links[-1]
    shown = _without_text_alternatives(complexity)  # each formula's LaTeX is its label for screen readers
    assert complexity.count("<math") == 7 and "\\times" not in shown and "$" not in shown


def test_no_bank_lists_raw_markdown_or_latex(app, client):
    for bank_id in app.extensions["banks"].banks:
        index = _without_text_alternatives(_index(client, bank_id))
        for raw in ("**", "$", "\\times", "\\mathrm"):
            assert raw not in index, f"{bank_id}: the start page shows {raw!r} unrendered"


def test_an_answered_question_is_still_marked(client):
    assert answer_via_form(client, SEED_BANK, "head-dimension", "32").status_code == 303
    items = re.findall(r"<li>.*?</li>", _index(client, SEED_BANK), re.S)
    marked = [i for i, item in enumerate(items) if '<span class="tag">answered</span>' in item]
    assert marked == [4]


def test_students_read_the_credit_but_never_the_seed_file_name(client):
    start = client.get(f"/quiz/{SEED_BANK}/").get_data(as_text=True)
    assert '<p class="source">Adapted from the quiz &#34;Deep learning: Attention and Transformers&#34;.</p>' in start
    assert answer_via_form(client, SEED_BANK, "head-dimension", "32").status_code == 303
    pages = ["/", f"/quiz/{SEED_BANK}/", f"/quiz/{SEED_BANK}/soft-dictionary-lookup",
             f"/quiz/{SEED_BANK}/head-dimension/answer", f"/quiz/{SEED_BANK}/summary",
             "/api/banks", f"/api/banks/{SEED_BANK}"]
    for path in pages:
        response = client.get(path)
        assert response.status_code == 200, path
        text = response.get_data(as_text=True)
        for name in (SEED_TEXT.stem, SEED_TEXT.name, f"{SEED_BANK}.yaml", "shared/seeds"):
            assert name not in text, f"{path} shows the file name {name!r}"


@pytest.mark.browser
def test_each_listed_prompt_is_at_most_two_lines_with_its_maths_laid_out(browser, live_server):
    context = browser.new_context(viewport={"width": 375, "height": 812})
    page = context.new_page()
    page.goto(f"{live_server.url}/quiz/{SEED_BANK}/")
    lines = page.locator(".question-index a").evaluate_all(
        "links => links.map(a => a.getBoundingClientRect().height / parseFloat(getComputedStyle(a).lineHeight))")
    assert len(lines) == 9 and all(0.9 < n < 2.2 for n in lines), lines
    assert max(lines) > 1.5  # the long prompts do take their second line
    # MathML laid out inline, in the text's line: each formula no taller than a line.
    heights = page.locator(".question-index math").evaluate_all(
        "els => els.map(m => m.getBoundingClientRect().height"
        " / parseFloat(getComputedStyle(m.closest('a')).lineHeight))")
    assert heights and all(0.3 < h <= 1.2 for h in heights), heights
    context.close()
