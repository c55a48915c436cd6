"""End to end: the pages follow the system's colour scheme (prefers-color-scheme), keep AA contrast in the
dark one, and keep every figure on a white card there, since the figures are drawn on white."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import SEED_BANK

pytestmark = pytest.mark.browser

AXE_SOURCE = (Path(__file__).resolve().parent / "vendor" / "axe-core" / "axe.min.js").read_text()

def _colours(page, selector: str) -> tuple[str, str]:
    """The computed background and text colours of the first element that matches."""
    return tuple(page.locator(selector).first.evaluate(
        "el => [getComputedStyle(el).backgroundColor, getComputedStyle(el).color]"))


def _luminance(css: str) -> float:
    """WCAG relative luminance of an opaque `rgb(r, g, b)` computed colour."""
    assert css.startswith("rgb(") and "/" not in css, f"not an opaque colour: {css}"
    channels = [int(c) / 255 for c in css[4:-1].split(",")]
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def _answer(page, base: str, question_id: str, label: str) -> None:
    page.goto(f"{base}/quiz/{SEED_BANK}/{question_id}")
    if not page.url.endswith("/answer"):
        page.click(f"label[for={label}]")
        page.click("button:has-text('Submit answer')")
        page.wait_for_url(f"**/{question_id}/answer")


def _wait_for_images(page, timeout_ms: float = 15000) -> None:
    """Poll with page.evaluate (wait_for_function evals strings, which the CSP forbids)."""
    waited = 0
    while not page.evaluate("() => [...document.images].every(img => img.complete && img.naturalWidth > 0)"):
        assert waited < timeout_ms, "the figure did not load"
        page.wait_for_timeout(50)
        waited += 50


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_page_follows_the_systems_colour_scheme(browser, live_server, scheme):
    context = browser.new_context(color_scheme=scheme)
    page = context.new_page()
    page.goto(f"{live_server.url}/quiz/{SEED_BANK}/head-dimension")
    paper, ink = _colours(page, ":root")
    card, _ = _colours(page, ".option label")
    if scheme == "dark":
        assert _luminance(paper) < 0.02 and _luminance(card) < 0.03 and _luminance(ink) > 0.7
    else:
        assert _luminance(paper) > 0.9 and _luminance(card) > 0.9 and _luminance(ink) < 0.05
    context.close()


@pytest.mark.parametrize("width", [1280, 375])
def test_in_the_dark_the_figure_sits_on_a_white_card(browser, live_server, artifacts, width):
    context = browser.new_context(color_scheme="dark", viewport={"width": width, "height": 900})
    page = context.new_page()
    _answer(page, live_server.url, "soft-dictionary-lookup", "option-2")
    _wait_for_images(page)
    assert _luminance(_colours(page, ".visual")[0]) < 0.03  # the visual's card is dark like the page
    assert _luminance(_colours(page, ".visual picture")[0]) > 0.99  # the figure sits on white, as drawn
    inside = page.evaluate("""() => {
        const img = document.querySelector('.visual-image').getBoundingClientRect();
        const card = document.querySelector('.visual picture').getBoundingClientRect();
        return img.left > card.left && img.right < card.right && img.top > card.top && img.bottom < card.bottom; }""")
    assert inside  # a white margin all round, so the figure's edge reads as a card, not a cut
    page.screenshot(path=str(artifacts / f"dark-answer-{width}.png"), full_page=True)
    context.close()


def _contrast_violations(page) -> list[dict]:
    _wait_for_images(page)
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.evaluate(AXE_SOURCE)  # outside the page's CSP, as in test_a11y
    return page.evaluate("""async () => {
        const results = await axe.run(document, {runOnly: {type: 'rule', values: ['color-contrast']}});
        return results.violations.flatMap(v => v.nodes.map(n => ({target: n.target.join(' '),
            summary: n.failureSummary})));
    }""")


def test_every_kind_of_quiz_page_keeps_aa_contrast_in_the_dark(browser, live_server, artifacts):
    context = browser.new_context(color_scheme="dark", viewport={"width": 1280, "height": 900})
    page = context.new_page()
    base = f"{live_server.url}/quiz/{SEED_BANK}"
    checked: dict[str, list[dict]] = {}
    page.goto(f"{live_server.url}/")
    checked["home"] = _contrast_violations(page)
    page.goto(f"{base}/transformer-advantages")
    page.click("label[for=option-1]")  # a chosen option
    checked["question"] = _contrast_violations(page)
    page.goto(f"{base}/why-position-encodings")
    page.click("button:has-text('Submit answer')")  # nothing chosen: the error message
    checked["question with an error"] = _contrast_violations(page)
    _answer(page, live_server.url, "why-position-encodings", "option-2")  # wrong
    checked["wrong answer"] = _contrast_violations(page)
    _answer(page, live_server.url, "transformer-advantages", "option-2")  # partly right
    checked["partly right answer"] = _contrast_violations(page)
    _answer(page, live_server.url, "head-dimension", "option-1")  # right
    checked["right answer"] = _contrast_violations(page)
    page.goto(f"{base}/")
    checked["start, some answered"] = _contrast_violations(page)
    page.screenshot(path=str(artifacts / "dark-start-1280.png"), full_page=True)
    page.goto(f"{base}/summary")
    checked["summary"] = _contrast_violations(page)
    assert {name: found for name, found in checked.items() if found} == {}
    context.close()
