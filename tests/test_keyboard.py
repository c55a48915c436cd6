"""End to end: the question and answer pages' keys (static/keys.js) in Chromium. 1-9 pick an option (a
checkbox toggles), Enter submits, N goes on; none of them acts in a field the student types into, or with a
modifier held. The page documents the keys, and only when the script that provides them runs."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from conftest import SEED_BANK, is_a_busy_figure

pytestmark = pytest.mark.browser

PRACTICE_BANK = "attention-practice"


@pytest.fixture
def console_errors() -> list[str]:
    return []


@pytest.fixture
def page(browser, console_errors):
    context = browser.new_context(viewport={"width": 1100, "height": 900})
    page = context.new_page()
    page.on("console", lambda message: console_errors.append(message.text)
            if message.type == "error" and not is_a_busy_figure(message) else None)
    yield page
    assert console_errors == []  # no CSP violation, no script error
    context.close()


def _checked(page) -> list[str]:
    return page.locator('input[name="answer"]:checked').evaluate_all("els => els.map(e => e.value)")


def _focused(page) -> str | None:
    return page.evaluate("document.activeElement && document.activeElement.id")


def test_digits_pick_a_single_choice_and_enter_submits_it(page, live_server):
    page.goto(f"{live_server.url}/quiz/{SEED_BANK}/head-dimension")  # options 32, 64, 128, 512
    note = page.locator("#keys-note")
    assert note.is_visible()
    assert "1–4 pick option 1 to 4, Enter submits your answer." in " ".join(note.inner_text().split())
    page.keyboard.press("3")
    assert _checked(page) == ["128"] and _focused(page) == "option-3"
    page.keyboard.press("1")
    assert _checked(page) == ["32"] and _focused(page) == "option-1"
    page.keyboard.press("5")  # there is no fifth option
    assert _checked(page) == ["32"]
    page.keyboard.press("Enter")
    page.wait_for_url("**/head-dimension/answer")
    assert page.locator("#verdict").inner_text() == "Correct"


def test_digits_toggle_checkboxes(page, live_server):
    page.goto(f"{live_server.url}/quiz/{SEED_BANK}/qkv-projections")  # values, keys, queries, embeddings
    assert "tick or untick option 1 to 4" in page.locator("#keys-note").inner_text()
    for key in ("1", "4", "2"):
        page.keyboard.press(key)
    assert _checked(page) == ["values", "keys", "embeddings"]
    page.keyboard.press("4")  # again: unticked
    assert _checked(page) == ["values", "keys"]
    page.keyboard.press("3")
    page.keyboard.press("Enter")
    page.wait_for_url("**/qkv-projections/answer")
    assert page.locator("#verdict").inner_text() == "Correct"


def test_enter_with_nothing_chosen_submits_and_the_server_says_what_to_fix(page, live_server, console_errors):
    page.goto(f"{live_server.url}/quiz/{SEED_BANK}/why-position-encodings")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert [e for e in console_errors if "status of 400" not in e] == []  # the 400 is the point
    console_errors.clear()
    assert page.locator(".form-error").is_visible()  # the form went to the server, which asked for a choice
    assert _checked(page) == []


def test_n_goes_to_the_next_question_and_after_the_last_to_the_results(page, live_server):
    base = f"{live_server.url}/quiz/{SEED_BANK}"
    page.goto(f"{base}/transformers-for-images")
    page.keyboard.press("1")
    page.keyboard.press("Enter")
    page.wait_for_url("**/transformers-for-images/answer")
    note = page.locator("#keys-note")
    assert note.is_visible() and "N goes on to the next question" in note.inner_text()
    page.keyboard.press("n")
    page.wait_for_url(f"{base}/attention-complexity")
    page.keyboard.press("1")
    page.keyboard.press("Enter")
    page.wait_for_url("**/attention-complexity/answer")
    page.keyboard.press("N")  # Caps Lock on
    page.wait_for_url(f"{base}/summary")


def test_keys_do_nothing_in_a_text_or_number_field_or_with_a_modifier(page, live_server):
    base = f"{live_server.url}/quiz/{SEED_BANK}"
    page.goto(f"{base}/soft-dictionary-lookup")
    for chord in ("Alt+1", "Control+2", "Shift+1", "Meta+2"):
        page.keyboard.press(chord)
    assert _checked(page) == []
    page.keyboard.press("2")
    page.keyboard.press("Enter")
    page.wait_for_url("**/soft-dictionary-lookup/answer")
    answer_path = urlsplit(page.url).path  # the query string follows the controls
    # The visual's text field takes an "n" as a letter; the page stays.
    field = page.locator("#visual-queries")
    field.click()
    field.press("End")
    page.keyboard.press("n")
    assert field.input_value().endswith("n")
    page.keyboard.press("Shift+N")
    assert field.input_value().endswith("nN")
    page.locator("#visual-temperature").focus()
    page.keyboard.press("n")
    page.wait_for_timeout(300)  # time for a navigation to start, if one wrongly did
    assert urlsplit(page.url).path == answer_path
    page.locator("body").click(position={"x": 5, "y": 5})  # focus back on the page: now N acts
    page.keyboard.press("Shift+N")
    page.wait_for_timeout(300)
    assert urlsplit(page.url).path == answer_path  # still not with Shift held
    page.keyboard.press("n")
    page.wait_for_url(f"{base}/transformer-advantages")


def test_digits_type_into_a_numeric_answer_and_enter_is_the_fields_own(page, live_server):
    page.goto(f"{live_server.url}/quiz/{PRACTICE_BANK}/head-dimension-variant")
    note = " ".join(page.locator("#keys-note").inner_text().split())
    assert "pick option" not in note and "Enter submits your answer." in note  # no options to pick
    page.locator("#answer-input").focus()
    page.keyboard.type("12")
    assert page.locator("#answer-input").input_value() == "12"
    page.keyboard.press("Enter")  # the browser's own submission from a text field
    page.wait_for_url("**/head-dimension-variant/answer")


def test_without_javascript_the_page_does_not_promise_the_keys(browser, live_server):
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    page.goto(f"{live_server.url}/quiz/{SEED_BANK}/head-dimension")
    assert page.locator("#keys-note").count() == 1 and not page.locator("#keys-note").is_visible()
    context.close()


def test_the_keys_can_be_turned_off_and_the_browser_remembers(page, live_server):
    """WCAG 2.1.4: speech input and some screen readers send single keys, so the note's box turns them off."""
    url = f"{live_server.url}/quiz/{SEED_BANK}/head-dimension"
    page.goto(url)
    page.uncheck("#keys-on")
    page.locator("body").click(position={"x": 5, "y": 5})  # the focus off the box, as a reader would leave it
    page.keyboard.press("2")
    assert _checked(page) == []
    page.reload()
    assert not page.is_checked("#keys-on")  # kept in this browser
    page.keyboard.press("2")
    assert _checked(page) == []
    page.check("#keys-on")
    page.locator("body").click(position={"x": 5, "y": 5})
    page.keyboard.press("2")
    assert _checked(page) == ["64"]


def test_enter_on_the_skip_links_target_submits_nothing(page, live_server):
    page.goto(f"{live_server.url}/quiz/{SEED_BANK}/head-dimension")
    page.keyboard.press("Tab")  # the skip link comes first
    page.keyboard.press("Enter")
    assert page.evaluate("document.activeElement.id") == "main"
    page.keyboard.press("Enter")
    page.wait_for_timeout(300)
    assert page.url.endswith("/head-dimension#main") and page.locator(".form-error").count() == 0


def test_enter_on_the_use_these_keys_box_submits_nothing(page, live_server):
    """Enter on the note's checkbox, outside the answer form, once submitted the answer (a try, on a drill)."""
    page.goto(f"{live_server.url}/quiz/{SEED_BANK}/head-dimension")
    page.keyboard.press("2")  # an answer is chosen: a submit would go through
    page.focus("#keys-on")
    page.keyboard.press("Enter")
    page.wait_for_timeout(300)
    assert page.url.endswith("/head-dimension") and _checked(page) == ["64"]
    page.locator("body").click(position={"x": 5, "y": 5})
    page.keyboard.press("Enter")  # with the focus on the page, Enter still submits
    page.wait_for_url("**/head-dimension/answer")
