"""End to end: a person takes the seed quiz in Debian's Chromium, with and without JavaScript."""

from __future__ import annotations

import pytest

from conftest import SEED_BANK, is_a_busy_figure
from test_seed import EXPECTED

pytestmark = pytest.mark.browser


def _choose(page, question_id: str, key) -> None:
    """Click the label of every option in the key, as a person would."""
    values = ["true" if key else "false"] if isinstance(key, bool) else (key if isinstance(key, list) else [key])
    for value in values:
        control_id = page.locator(f'input[name="answer"][value="{value}"]').get_attribute("id")
        page.click(f'label[for="{control_id}"]')


def _take_whole_quiz(page, base_url: str, artifacts, tag: str) -> None:
    page.goto(f"{base_url}/")
    page.click("text=Deep learning: Attention and Transformers")
    page.click("text=Start the quiz")
    for number, (question_id, (key, _)) in enumerate(EXPECTED.items(), start=1):
        assert page.url.endswith(f"/quiz/{SEED_BANK}/{question_id}")
        assert page.locator("#quiz-progress").get_attribute("value") == str(number - 1)
        _choose(page, question_id, key)
        page.click("button:has-text('Submit answer')")
        assert page.locator("#verdict").inner_text() == "Correct"
        assert page.locator(".explanation").is_visible()
        if number == 5:
            page.screenshot(path=str(artifacts / f"answer-page-{tag}.png"), full_page=True)
        page.click("text=Next question" if number < len(EXPECTED) else "text=See your results")
    assert page.url.endswith(f"/quiz/{SEED_BANK}/summary")
    assert page.locator(".total-score").inner_text().startswith("You scored 9 out of 9")
    page.screenshot(path=str(artifacts / f"summary-{tag}.png"), full_page=True)


def test_take_the_whole_seed_quiz_with_full_marks(browser, live_server, artifacts):
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda message: errors.append(message.text)
            if message.type == "error" and not is_a_busy_figure(message) else None)
    _take_whole_quiz(page, live_server.url, artifacts, "js")
    page.click("button:has-text('Retake the quiz')")
    assert page.url.endswith(f"/quiz/{SEED_BANK}/soft-dictionary-lookup")
    assert page.locator("#quiz-progress").get_attribute("value") == "0"
    assert errors == []  # no CSP violations or script errors
    context.close()


def test_take_the_whole_seed_quiz_without_javascript(browser, live_server, artifacts):
    context = browser.new_context(java_script_enabled=False, viewport={"width": 390, "height": 844})
    page = context.new_page()
    _take_whole_quiz(page, live_server.url, artifacts, "nojs-phone")
    context.close()


def test_wrong_answer_shows_the_right_answer_and_explanation(browser, live_server, artifacts):
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    page = context.new_page()
    page.goto(f"{live_server.url}/quiz/{SEED_BANK}/attention-complexity")
    _choose(page, "attention-complexity", "nmd2l")
    page.click("button:has-text('Submit answer')")
    assert page.locator("#verdict").inner_text() == "Not quite"
    right = page.locator(".feedback.is-correct")
    assert right.count() == 1
    assert "Correct answer" in right.inner_text()
    mine = page.locator(".feedback.is-selected")
    assert "Your choice" in mine.inner_text() and "Incorrect" in mine.inner_text()
    assert "their costs add" in mine.inner_text()
    assert "we multiply the resulting" in page.locator(".explanation").inner_text()
    assert page.locator(".explanation math").count() > 5  # the maths arrived as MathML
    page.screenshot(path=str(artifacts / "wrong-answer.png"), full_page=True)
    context.close()


def test_keyboard_only_answering(browser, live_server):
    context = browser.new_context()
    page = context.new_page()
    page.goto(f"{live_server.url}/quiz/{SEED_BANK}/why-position-encodings")
    # Tab to the first radio, select it with Space, Tab to the button, press Enter.
    for _ in range(12):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.name") == "answer":
            break
    assert page.evaluate("document.activeElement.value") == "order-agnostic"
    outline = page.evaluate("getComputedStyle(document.activeElement.nextElementSibling).outlineStyle")
    assert outline == "solid"  # focus is visible on the option's label
    page.keyboard.press("Space")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent").strip() == "Submit answer"
    page.keyboard.press("Enter")
    page.wait_for_url("**/why-position-encodings/answer")
    assert page.locator("#verdict").inner_text() == "Correct"
    context.close()


# One control change per seed visual, each valid for the question's own params.
CONTROL_CHANGES = {
    "soft-dictionary-lookup": ("temperature", "0.2"),
    "transformer-advantages": ("distance", "8"),
    "qkv-projections": ("d_k", "2"),
    "multi-head-subspaces": ("num_heads", "4"),
    "head-dimension": ("num_heads", "8"),
    "why-position-encodings": ("positional", "on"),
    "position-encoding-properties": ("d_model", "16"),
    "transformers-for-images": ("row", "1"),
    "attention-complexity": ("d", "32"),
}


def _wait_until(page, expression: str, arg=None, timeout: float = 15.0) -> None:
    """Poll a JS function with page.evaluate (wait_for_function evals strings, which our CSP forbids)."""
    import time

    deadline = time.monotonic() + timeout
    while not page.evaluate(expression, arg):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {expression}")
        page.wait_for_timeout(50)


def _image_state(page):
    return page.evaluate(
        "() => { const img = document.querySelector('.visual-image');"
        " return {src: img.getAttribute('src'), alt: img.alt, width: img.naturalWidth,"
        " natural: [img.naturalWidth, img.naturalHeight],"
        " stated: [Number(img.getAttribute('width')), Number(img.getAttribute('height'))],"
        " caption: document.querySelector('.visual-alt').textContent}; }")


def test_every_answer_page_shows_its_visual_and_the_controls_change_it(browser, live_server, artifacts):
    context = browser.new_context(viewport={"width": 1100, "height": 900})
    page = context.new_page()
    for question_id, (key, _) in EXPECTED.items():
        page.goto(f"{live_server.url}/quiz/{SEED_BANK}/{question_id}")
        if page.url.endswith("/answer") is False:
            _choose(page, question_id, key)
            page.click("button:has-text('Submit answer')")
            # The click starts the POST and its redirect; ask the answer page, not the question page, for its image.
            page.wait_for_url(f"**/{question_id}/answer", wait_until="domcontentloaded")
        _wait_until(page, "() => document.querySelector('.visual-image').complete")
        before = _image_state(page)
        assert before["width"] > 0, f"{question_id}: the image did not load"
        assert before["alt"] and before["alt"] == before["caption"]
        assert before["stated"] == before["natural"], f"{question_id}: the <img> states another size"
        name, value = CONTROL_CHANGES[question_id]
        control = page.locator(f"#visual-{name}")
        assert page.locator(f'label[for="visual-{name}"]').count() == 1
        if control.evaluate("el => el.tagName") == "SELECT":
            control.select_option(value)
        else:
            control.fill(value)
        _wait_until(page, "src => document.querySelector('.visual-image').getAttribute('src') !== src", before["src"])
        _wait_until(page, "() => document.querySelector('.visual-image').complete && "
                          "document.querySelector('.visual-image').naturalWidth > 0")
        after = _image_state(page)
        assert f"{name}={value}" in after["src"]
        assert after["alt"] != before["alt"], f"{question_id}: alt text did not follow the new numbers"
        assert after["alt"] == after["caption"]
        assert after["stated"] == after["natural"], f"{question_id}: the size did not follow the new figure"
        assert f"{name}={value}" in page.url  # a reload keeps the student's settings
        page.screenshot(path=str(artifacts / f"visual-{question_id}.png"), full_page=True)
    context.close()


def _layout(page):
    """Where the figure and the text under it are, and how wide the column is, in CSS pixels."""
    return page.evaluate(
        "() => { const img = document.querySelector('.visual-image');"
        " const box = img.getBoundingClientRect();"
        " return {width: box.width, height: box.height, column: img.parentElement.getBoundingClientRect().width,"
        " below: document.querySelector('.visual-alt').getBoundingClientRect().top + window.scrollY}; }")


@pytest.mark.parametrize("viewport", [{"width": 1100, "height": 900}, {"width": 375, "height": 812}])
def test_the_page_keeps_the_images_space_while_it_loads_and_scales_it_to_the_screen(browser, live_server,
                                                                                       artifacts, viewport):
    context = browser.new_context(viewport=viewport)
    page = context.new_page()
    held = []
    page.route("**/plots/*.png*", lambda route: held.append(route))  # held back, as on a slow link
    page.goto(f"{live_server.url}/quiz/{SEED_BANK}/multi-head-subspaces")
    _choose(page, "multi-head-subspaces", True)
    page.click("button:has-text('Submit answer')")
    page.wait_for_url("**/multi-head-subspaces/answer", wait_until="domcontentloaded")
    _wait_until(page, "() => document.querySelector('.visual-alt') !== null")
    while not held:
        page.wait_for_timeout(50)
    waiting = _layout(page)
    assert page.evaluate("document.querySelector('.visual-image').naturalWidth") == 0  # not arrived yet
    page.screenshot(path=str(artifacts / f"visual-loading-{viewport['width']}.png"), full_page=True)
    for route in held:
        route.continue_()
    _wait_until(page, "() => document.querySelector('.visual-image').complete && "
                      "document.querySelector('.visual-image').naturalWidth > 0")
    loaded = _layout(page)
    page.screenshot(path=str(artifacts / f"visual-loaded-{viewport['width']}.png"), full_page=True)
    assert loaded == waiting  # nothing moved when the image arrived
    assert loaded["width"] == min(760, loaded["column"])  # its own size, or the column's width on a phone
    natural = page.evaluate("(() => { const img = document.querySelector('.visual-image');"
                            " return img.naturalHeight / img.naturalWidth; })()")
    assert loaded["height"] == pytest.approx(loaded["width"] * natural, abs=1)  # not stretched
    context.close()


def test_visual_controls_work_without_javascript(browser, live_server):
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    page.goto(f"{live_server.url}/quiz/{SEED_BANK}/head-dimension")
    if not page.url.endswith("/answer"):
        _choose(page, "head-dimension", "32")
        page.click("button:has-text('Submit answer')")
    page.fill("#visual-num_heads", "16")
    page.click("button:has-text('Update the plot')")
    assert "num_heads=16" in page.url
    assert "16 heads of d_k = 8" in page.get_attribute(".visual-image", "alt")
    assert "16 heads of d_k = 8" in page.locator(".visual-alt").text_content()  # in "Describe this figure"
    # The page is served before its figure is drawn: the image arrives when /plots has drawn it.
    _wait_until(page, "() => document.querySelector('.visual-image').complete")
    assert page.evaluate("document.querySelector('.visual-image').naturalWidth") > 0
    context.close()


def test_a_figure_the_server_was_too_busy_to_draw_is_asked_for_again(browser, tmp_path):
    """/learn/attention shows eight new figures; in a window tall enough to hold them all (its later figures load
    as the reader nears them) they are asked for at once, a render gate of two slots refuses most of them (503,
    Retry-After), and static/visual.js asks again until every one is drawn."""
    from app import create_app
    from app.visuals.service import RenderGate
    from conftest import STRONG_SECRET_KEY, LiveServer

    app = create_app({"TESTING": False, "SECRET_KEY": STRONG_SECRET_KEY,
                      "DATABASE_URL": f"sqlite:///{tmp_path / 'busy.sqlite3'}"})
    app.extensions["visual_cache"].gate = RenderGate(slots=2, per_client=2)
    with LiveServer(app) as server:
        context = browser.new_context(viewport={"width": 1100, "height": 20000})
        page = context.new_page()
        statuses = []
        page.on("response", lambda response: statuses.append(response.status) if "/plots/" in response.url else None)
        page.goto(f"{server.url}/learn/attention")
        _wait_until(page, "() => Array.from(document.querySelectorAll('img.visual-image'))"
                          ".every(img => img.complete && img.naturalWidth > 0)", timeout=60)
        context.close()
    assert 503 in statuses  # the gate did refuse some, and they were drawn later


def _q5_answer_page(browser, live_server):
    """A new page on Q5's answer page, after the right answer: its head-split figure with its controls."""
    page = browser.new_page(viewport={"width": 1100, "height": 900})
    page.goto(f"{live_server.url}/quiz/{SEED_BANK}/head-dimension")
    _choose(page, "head-dimension", EXPECTED["head-dimension"][0])
    page.click("button:has-text('Submit answer')")
    page.wait_for_url("**/head-dimension/answer")
    return page


def test_a_refused_control_is_marked_and_a_redraw_is_announced(browser, live_server):
    """With JavaScript as without: the control a sentence is about is marked invalid and described by it, and
    a screen reader hears when the figure (and its description) has changed."""
    page = _q5_answer_page(browser, live_server)
    control = page.locator("#visual-num_heads")
    control.fill("100")  # past its bound of 64
    _wait_until(page, "() => document.querySelector('.visual-error').textContent.trim() !== ''")
    assert control.get_attribute("aria-invalid") == "true"
    status_id = page.locator(".visual-error").get_attribute("id")
    assert status_id in control.get_attribute("aria-describedby").split()
    control.fill("8")
    _wait_until(page, "() => document.querySelector('.visual-updated').textContent === 'Plot updated.'")
    assert control.get_attribute("aria-invalid") is None
    assert status_id not in (control.get_attribute("aria-describedby") or "").split()
    assert page.locator(".visual-error").inner_text().strip() == ""
    page.close()


def test_a_rule_across_two_controls_marks_both_live(browser, live_server):
    """num_heads = 3 is in its range but does not divide d_model: both controls are marked, described by the
    sentence, and both are cleared by the next value that draws."""
    page = _q5_answer_page(browser, live_server)
    heads, width = page.locator("#visual-num_heads"), page.locator("#visual-d_model")
    heads.fill("3")
    _wait_until(page, "() => document.querySelector('.visual-error').textContent.includes('num_heads=3')")
    status_id = page.locator(".visual-error").get_attribute("id")
    for control in (heads, width):
        assert control.get_attribute("aria-invalid") == "true"
        assert status_id in control.get_attribute("aria-describedby").split()
    width.fill("99999")  # now only d_model is wrong (past its bound): num_heads's mark goes
    _wait_until(page, "() => !document.querySelector('.visual-error').textContent.includes('num_heads=3')")
    assert width.get_attribute("aria-invalid") == "true" and heads.get_attribute("aria-invalid") is None
    assert status_id not in (heads.get_attribute("aria-describedby") or "").split()
    width.fill("128")
    heads.fill("4")
    _wait_until(page, "() => document.querySelector('.visual-updated').textContent === 'Plot updated.'")
    assert heads.get_attribute("aria-invalid") is None and width.get_attribute("aria-invalid") is None
    page.close()


def test_reset_after_a_refused_first_change_puts_the_questions_values_back(browser, live_server):
    """The first change refused, the page's address was still the plain one, and Reset only scrolled to the figure,
    leaving the refused value and its error."""
    page = _q5_answer_page(browser, live_server)
    control = page.locator("#visual-num_heads")
    served = control.input_value()
    control.fill("100")
    _wait_until(page, "() => document.querySelector('.visual-error').textContent.trim() !== ''")
    page.click("a.reset-link")
    _wait_until(page, "() => document.querySelector('.visual-updated').textContent === 'Plot updated.'")
    assert control.input_value() == served and control.get_attribute("aria-invalid") is None
    assert page.locator(".visual-error").inner_text().strip() == ""
    page.close()


def test_a_choice_stays_marked_live_when_the_controls_of_a_prediction_grid_change(browser, live_server):
    """complexity's N, M, d and l fix what a numeric prediction is about, not the option the student chose: a
    live change dropped the choice too, so the caption lost "Your answer ... is wrong" (the page without
    JavaScript, and a reload, kept it)."""
    page = browser.new_page(viewport={"width": 1100, "height": 900})
    page.goto(f"{live_server.url}/quiz/{SEED_BANK}/attention-complexity")
    key = EXPECTED["attention-complexity"][0]
    wrong = next(value for value in page.locator('input[name="answer"]').evaluate_all("els => els.map(e => e.value)")
                 if value != key)
    _choose(page, "attention-complexity", wrong)
    page.click("button:has-text('Submit answer')")
    page.wait_for_url("**/attention-complexity/answer")
    caption = page.locator(".visual-caption")
    assert "is wrong" in caption.inner_text()
    page.locator("#visual-n").fill("64")
    _wait_until(page, "() => document.querySelector('.visual-updated').textContent === 'Plot updated.'")
    live = caption.inner_text()
    assert "Your answer" in live and "is wrong" in live
    assert "choice=" in page.locator(".visual-image").get_attribute("src")
    page.reload()  # the address the script wrote: the page without it says the same
    assert caption.inner_text() == live
    page.close()


def test_a_rule_across_training_length_and_length_marks_both_live(browser, live_server):
    """Q7's figure has a control named "length": form.elements["length"] is the form's number of controls, so the
    live page marked only the training length, though the sentence says "or show more positions"."""
    page = browser.new_page(viewport={"width": 1100, "height": 900})
    page.goto(f"{live_server.url}/quiz/{SEED_BANK}/position-encoding-properties")
    page.locator('input[name="answer"]').first.check()
    page.click("button:has-text('Submit answer')")
    page.wait_for_url("**/position-encoding-properties/answer")
    page.locator("form.visual-controls [name=train_length]").fill("100")
    _wait_until(page, "() => document.querySelector('.visual-error').textContent.includes('train_length (100)')")
    marked = page.evaluate("[...document.querySelectorAll('form.visual-controls [aria-invalid]')].map(e => e.name)")
    assert sorted(marked) == ["length", "train_length"]
    page.close()
