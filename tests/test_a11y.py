"""Accessibility in Chromium: axe-core (vendored in tests/vendor/axe-core) on every kind of page, and
a whole quiz taken with the keyboard alone.

axe is injected with `page.evaluate`, which runs outside the page's Content-Security-Policy (the app
forbids inline scripts, so a <script> tag could not be added).
"""

from __future__ import annotations

import json
import re
import shutil
import time
from pathlib import Path

import pytest
from werkzeug.security import generate_password_hash

from app import create_app
from app.paths import resource_dir
from conftest import SEED_BANK, STRONG_SECRET_KEY, LiveServer, csrf_token
from test_seed import EXPECTED

pytestmark = pytest.mark.browser

AXE_SOURCE = (Path(__file__).resolve().parent / "vendor" / "axe-core" / "axe.min.js").read_text()
INSTRUCTOR_PASSWORD = "pw"
BLOCKING_IMPACTS = {"serious", "critical"}
PRACTICE_BANK = "attention-practice"
BROKEN_BANKS = Path(__file__).resolve().parent / "broken_banks"
STALE_BANK = "stale-practice"  # a copy of the practice bank that the instructor test breaks on disk


def _key_values(key) -> list[str]:
    return ["true" if key else "false"] if isinstance(key, bool) else (key if isinstance(key, list) else [key])


LONG_NAME = "maria.gonzalez-fernandez@student.example.edu"  # a student who types an e-mail address as a name


def _seed_answers(app) -> None:
    """Six students answer the seed quiz, some wrongly, so the instructor pages have every table and chart; the
    first gives a long name with no space in it."""
    bank = app.extensions["banks"].get(SEED_BANK)
    for student in range(6):
        client = app.test_client()
        if student == 0:
            start = client.get(f"/quiz/{SEED_BANK}/").get_data(as_text=True)
            named = client.post(f"/quiz/{SEED_BANK}/name", data={"csrf_token": csrf_token(start),
                                                                  "display_name": LONG_NAME})
            assert named.status_code in (302, 303)
        for number, question in enumerate(bank.questions):
            key = _key_values(EXPECTED[question.id][0])
            # A wrong option, or only part of the key when every option is right.
            wrong = [next((o.id for o in question.options if o.id not in key), key[0])]
            values = wrong if (student + number) % 3 == 0 else key
            page = client.get(f"/quiz/{SEED_BANK}/{question.id}")
            response = client.post(f"/quiz/{SEED_BANK}/{question.id}",
                                   data={"csrf_token": csrf_token(page.get_data(as_text=True)), "answer": values})
            assert response.status_code == 303


@pytest.fixture(scope="module")
def a11y_server(tmp_path_factory):
    """The bundled banks plus two broken ones (so the preview lists errors), six students' answers,
    and an instructor password."""
    folder = tmp_path_factory.mktemp("a11y")
    quiz_dir = folder / "quizzes"
    shutil.copytree(resource_dir("quizzes"), quiz_dir)
    for broken in ("overflowing-answer.yaml", "unknown-keys.yaml"):
        shutil.copy(BROKEN_BANKS / broken, quiz_dir)
    practice = (quiz_dir / f"{PRACTICE_BANK}.yaml").read_text()
    (quiz_dir / "stale.yaml").write_text(practice.replace(f"id: {PRACTICE_BANK}", f"id: {STALE_BANK}", 1))
    app = create_app({
        "TESTING": False, "SECRET_KEY": STRONG_SECRET_KEY, "QUIZ_DIR": str(quiz_dir), "QUIZ_HOT_RELOAD": True,
        "DATABASE_URL": f"sqlite:///{folder / 'a11y.sqlite3'}",
        "INSTRUCTOR_PASSWORD_HASH": generate_password_hash(INSTRUCTOR_PASSWORD, method="pbkdf2:sha256:1000"),
    })
    _seed_answers(app)
    with LiveServer(app) as server:
        server.quiz_dir = quiz_dir
        server.banks = app.extensions["banks"]
        yield server


@pytest.fixture(scope="module")
def signin_off_server(tmp_path_factory):
    """No instructor password configured: the sign-in page explains how to set one up."""
    database = tmp_path_factory.mktemp("a11y-off") / "off.sqlite3"
    app = create_app({"TESTING": False, "SECRET_KEY": STRONG_SECRET_KEY, "QUIZ_DIR": str(resource_dir("quizzes")),
                      "DATABASE_URL": f"sqlite:///{database}", "INSTRUCTOR_PASSWORD_HASH": None})
    with LiveServer(app) as server:
        yield server


@pytest.fixture(scope="module")
def axe_results():
    """Every page's violations, written to test-artifacts/a11y-violations.json at the end."""
    results: dict[str, list[dict]] = {}
    yield results
    artifacts = Path(__file__).resolve().parent.parent / "test-artifacts"
    artifacts.mkdir(exist_ok=True)
    (artifacts / "a11y-violations.json").write_text(json.dumps(results, indent=2))


def _wait_until(page, expression: str, timeout: float = 15.0) -> None:
    """Poll with page.evaluate (wait_for_function evals strings, which the CSP forbids)."""
    deadline = time.monotonic() + timeout
    while not page.evaluate(expression):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {expression}")
        page.wait_for_timeout(50)


def run_axe(page) -> list[dict]:
    """axe's violations on the page as it is now, each with its impact and the offending elements."""
    # A learn page's later figures load only as the reader nears them (loading="lazy"): not waited for.
    _wait_until(page, "() => [...document.images].every(img => img.complete || img.loading === 'lazy')")
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.evaluate(AXE_SOURCE)
    return page.evaluate("""async () => {
        const results = await axe.run(document, {resultTypes: ['violations']});
        return results.violations.map(v => ({
            id: v.id, impact: v.impact, help: v.help,
            nodes: v.nodes.map(n => ({target: n.target.join(' '), summary: n.failureSummary})),
        }));
    }""")


def check_page(page, name: str, results: dict) -> None:
    violations = run_axe(page)
    results[name] = violations
    blocking = [v for v in violations if v["impact"] in BLOCKING_IMPACTS]
    assert not blocking, f"{name} ({page.url}): " + json.dumps(blocking, indent=2)


def _choose_and_submit(page, values: list[str]) -> None:
    for value in values:
        control_id = page.locator(f'input[name="answer"][value="{value}"]').get_attribute("id")
        page.click(f'label[for="{control_id}"]')
    page.click("button:has-text('Submit answer')")


def _sign_in(page, base_url: str) -> None:
    page.goto(f"{base_url}/instructor/login")
    page.fill("#password", INSTRUCTOR_PASSWORD)
    page.click("button:has-text('Sign in')")
    page.wait_for_url(f"{base_url}/instructor/")


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    page = context.new_page()
    yield page
    context.close()


# --------------------------------------------------------------------------------------------------
# axe on every kind of page


STUDENT_PAGES = {
    "home": "/",
    "quiz start": f"/quiz/{SEED_BANK}/",
    "learn index": "/learn/",
    "learn attention": "/learn/attention",
    "learn position-encoding": "/learn/position-encoding",
    "learn complexity": "/learn/complexity",
    "learn with a control error": "/learn/attention?v=head-split&d_model=130&num_heads=4",
    "error 404": "/no/such/page",
    "error 404 unknown quiz": "/quiz/no-such-quiz/",
    "instructor login": "/instructor/login",
}


@pytest.mark.parametrize("name", list(STUDENT_PAGES))
def test_student_and_public_pages_have_no_serious_violations(a11y_server, page, axe_results, name):
    page.goto(a11y_server.url + STUDENT_PAGES[name])
    check_page(page, name, axe_results)


def test_question_pages_and_their_error_state(a11y_server, page, axe_results):
    base = a11y_server.url
    for question_id in ("soft-dictionary-lookup", "transformer-advantages", "head-dimension"):
        page.goto(f"{base}/quiz/{SEED_BANK}/{question_id}")
        check_page(page, f"question {question_id}", axe_results)
    # Submitting nothing re-renders the question with its error message.
    page.click("button:has-text('Submit answer')")
    assert page.locator(".form-error").is_visible()
    check_page(page, "question with an error", axe_results)
    page.goto(f"{base}/quiz/{PRACTICE_BANK}/head-dimension-variant")
    check_page(page, "numeric question", axe_results)
    page.fill("#answer-input", "many")
    page.click("button:has-text('Submit answer')")
    check_page(page, "numeric question with an error", axe_results)


def test_an_option_or_link_made_of_maths_has_a_name_a_screen_reader_can_read(a11y_server, page, axe_results):
    """Browsers leave MathML out of the name of a label or a link; each formula carries its LaTeX as its label."""
    page.goto(f"{a11y_server.url}/quiz/{SEED_BANK}/attention-complexity")
    check_page(page, "question with maths options", axe_results)
    names = [page.get_by_role("radio", name=text, exact=True).count()
             for text in ("O(NM(d+l))", "O(NM^2dl)", "O(NM^2d^2l)", "O(NMd^2l)")]
    assert names == [1, 1, 1, 1]
    page.goto(f"{a11y_server.url}/quiz/attention-drill/")
    link = page.get_by_role("link", name=re.compile(r"divide the scores q \\cdot k by \\sqrt\{d_k\} \?"))
    assert link.count() == 1


def test_no_page_scrolls_sideways_on_a_320_px_phone(a11y_server, browser):
    """Wide formulas and grids scroll in their own boxes: the results page (a cells answer among its items) and
    the /learn page with the longest inline formula keep to the screen's width."""
    context = browser.new_context(viewport={"width": 320, "height": 800})
    page = context.new_page()
    base = a11y_server.url
    page.goto(f"{base}/quiz/{PRACTICE_BANK}/causal-mask-query-4")
    page.locator('input[name="answer"]').first.check()
    page.click("button:has-text('Submit answer')")
    page.wait_for_url("**/causal-mask-query-4/answer")
    for path in (f"/quiz/{PRACTICE_BANK}/summary", "/learn/position-encoding", f"/quiz/{SEED_BANK}/"):
        page.goto(base + path)
        assert page.evaluate("document.scrollingElement.scrollWidth") <= 320, path
    context.close()


def test_an_instructor_table_that_scrolls_on_a_phone_keeps_its_caption_in_view(a11y_server, browser):
    """A stats table wider than a 375 px screen scrolls in its box; its caption wraps to the box, whether the table
    is scrolled or not (it was one line as wide as the table, cut off at the box's edge)."""
    context = browser.new_context(viewport={"width": 375, "height": 800})
    page = context.new_page()
    _sign_in(page, a11y_server.url)
    for path in ("/instructor/", f"/instructor/banks/{SEED_BANK}"):
        page.goto(a11y_server.url + path)
        boxes = page.eval_on_selector_all(".table-wrap", """wraps => wraps.map(wrap => {
            const before = wrap.querySelector('caption').getBoundingClientRect();
            wrap.scrollLeft = wrap.scrollWidth;
            const after = wrap.querySelector('caption').getBoundingClientRect(), box = wrap.getBoundingClientRect();
            return {scrolls: wrap.scrollWidth > wrap.clientWidth, box: [box.left, box.right],
                    caption: [before.left, before.right, after.left, after.right]};
        })""")
        assert any(b["scrolls"] for b in boxes), path  # the case this is about is there
        for b in boxes:
            left, right = b["box"]
            assert all(left - 1 <= x <= right + 1 for x in b["caption"]), (path, b)
    context.close()


def _edge_shade(page, wrap) -> tuple[float, float]:
    """How much darker than the box's middle its leftmost and rightmost pixel columns are (0: not at all)."""
    import io

    from PIL import Image

    image = Image.open(io.BytesIO(wrap.screenshot())).convert("L")
    width, height = image.size
    rows = range(height // 3, 2 * height // 3)  # the table's rows, under the caption

    def column(x: int) -> float:
        return sum(image.getpixel((x, y)) for y in rows) / len(rows)

    middle = max(column(x) for x in range(width // 2 - 20, width // 2 + 20))  # a gap between the cells' text
    return middle - column(1), middle - column(width - 2)


def _cue(box) -> tuple[float, float]:
    """How much darker the box's leftmost and rightmost 3 pixel columns are with its background (the scroll cue)
    than without it: the content under them is the same in both pictures."""
    import io

    from PIL import Image, ImageChops

    def shot():
        return Image.open(io.BytesIO(box.screenshot())).convert("L")

    cued = shot()
    box.evaluate("box => { box.dataset.background = box.style.background; box.style.background = 'none'; }")
    bare = shot()
    box.evaluate("box => { box.style.background = box.dataset.background; }")
    darker = ImageChops.subtract(bare, cued)  # bare - cued, clipped at 0: the shadow's darkening
    width, height = darker.size

    def column(x: int) -> float:
        return sum(darker.getpixel((x, y)) for y in range(height)) / height

    # The most darkened column near each edge (the box's last pixel may be a fraction, left out of the picture).
    return max(map(column, range(0, 8))), max(map(column, range(width - 8, width)))


def test_a_table_that_scrolls_on_a_phone_shows_a_shadow_where_more_of_it_is_hidden(a11y_server, browser):
    """With no scroll bar on a phone, the item analysis table's hidden columns (r, D, the review flags) need a cue:
    a shadow on the right edge while more lies to the right, on the left once scrolled to the end, none on a table
    that fits."""
    context = browser.new_context(viewport={"width": 375, "height": 800})
    page = context.new_page()
    _sign_in(page, a11y_server.url)
    page.goto(f"{a11y_server.url}/instructor/banks/{SEED_BANK}")
    wrap = page.locator(".table-wrap:has(caption#items-caption)")
    assert wrap.evaluate("w => w.scrollWidth > w.clientWidth")
    left, right = _edge_shade(page, wrap)
    assert right > 8 and left < 3, (left, right)
    wrap.evaluate("w => { w.scrollLeft = w.scrollWidth; }")
    left, right = _edge_shade(page, wrap)
    assert left > 8 and right < 3, (left, right)
    page.set_viewport_size({"width": 1280, "height": 800})
    assert not wrap.evaluate("w => w.scrollWidth > w.clientWidth")
    assert max(_edge_shade(page, wrap)) < 3
    context.close()


def test_a_long_name_wraps_on_a_phone_instead_of_widening_the_page(a11y_server, browser):
    context = browser.new_context(viewport={"width": 375, "height": 800})
    page = context.new_page()
    _sign_in(page, a11y_server.url)
    page.goto(f"{a11y_server.url}/instructor/banks/{SEED_BANK}/attempts")
    page.locator("#attempts tbody tr", has_text=LONG_NAME).locator("a").first.click()
    page.wait_for_url("**/attempts/*")
    assert LONG_NAME in page.locator("h1").inner_text()
    assert page.evaluate("document.scrollingElement.scrollWidth") <= 375
    context.close()


def test_every_answer_page_with_its_visual_and_the_summary(a11y_server, page, axe_results):
    base = a11y_server.url
    for number, (question_id, (key, _)) in enumerate(EXPECTED.items()):
        page.goto(f"{base}/quiz/{SEED_BANK}/{question_id}")
        # Every third answer is wrong, so right, wrong and partly right answer pages are all checked.
        values = _key_values(key)
        if number % 3 == 1:
            options = page.locator('input[name="answer"]').evaluate_all("els => els.map(e => e.value)")
            values = [next(v for v in options if v not in values)]
        _choose_and_submit(page, values)
        page.wait_for_url(f"**/{question_id}/answer")
        assert page.locator(".visual-image").count() == 1
        check_page(page, f"answer {question_id}", axe_results)
    page.goto(f"{base}/quiz/{SEED_BANK}/head-dimension/answer?v=head-split&d_model=130&num_heads=4")
    assert page.locator(".visual-error").inner_text().strip()
    check_page(page, "answer with a control error", axe_results)
    page.goto(f"{base}/quiz/{SEED_BANK}/summary")
    check_page(page, "summary", axe_results)


def test_instructor_pages_have_no_serious_violations(a11y_server, page, axe_results):
    base = a11y_server.url
    page.goto(f"{base}/instructor/login")
    page.fill("#password", "not the password")
    page.click("button:has-text('Sign in')")
    assert page.locator("#login-error").is_visible()
    check_page(page, "instructor login with an error", axe_results)
    _sign_in(page, base)
    check_page(page, "instructor dashboard", axe_results)
    for name, path in {
        "instructor bank report": f"/instructor/banks/{SEED_BANK}",
        "instructor regrade page": f"/instructor/banks/{SEED_BANK}/regrade",
        "instructor preview index": "/instructor/preview/",
        "instructor preview question": f"/instructor/preview/{SEED_BANK}/multi-head-subspaces",
        "instructor preview, an answer tried": f"/instructor/preview/{SEED_BANK}/multi-head-subspaces?answer=false",
        "instructor preview, an answer refused": f"/instructor/preview/{PRACTICE_BANK}/head-dimension-variant"
                                                 "?seed=7&answer=twelve",
        "instructor preview variant": f"/instructor/preview/{PRACTICE_BANK}/head-dimension-variant?seed=7",
        "error 400 bad seed": f"/instructor/preview/{PRACTICE_BANK}/head-dimension-variant?seed=x",
    }.items():
        page.goto(base + path)
        check_page(page, name, axe_results)
    page.goto(f"{base}/instructor/banks/{SEED_BANK}/attempts")
    check_page(page, "instructor attempts", axe_results)
    page.locator("#attempts tbody a").first.click()
    page.wait_for_url("**/attempts/*")
    check_page(page, "instructor attempt review", axe_results)
    # A served bank whose file stops validating: the preview keeps it and shows the new errors.
    stale_file = a11y_server.quiz_dir / "stale.yaml"
    stale_file.write_text(stale_file.read_text() + "  - id: [unclosed\n")
    a11y_server.banks.refresh_if_changed()  # what the hot-reload thread does within a second
    page.goto(f"{base}/instructor/preview/{STALE_BANK}/head-dimension-variant")
    assert page.locator(".notice[role=alert] .error-list").is_visible()
    check_page(page, "instructor preview of a stale bank", axe_results)
    page.goto(f"{base}/instructor/preview/")
    check_page(page, "instructor preview index with a stale bank", axe_results)


def test_instructor_sign_in_page_when_sign_in_is_switched_off(signin_off_server, page, axe_results):
    page.goto(f"{signin_off_server.url}/instructor/login")
    assert page.locator("pre.command").is_visible()  # the set-up instructions with the command to run
    check_page(page, "instructor login, sign-in switched off", axe_results)


def test_the_checker_finds_a_real_violation(a11y_server, page):
    """axe is really running: an image without alt text on a real page is reported."""
    page.goto(f"{a11y_server.url}/")
    page.evaluate("() => { const img = document.createElement('img'); img.src = '/static/favicon.svg';"
                  " document.querySelector('main').append(img); }")
    assert "image-alt" in {v["id"] for v in run_axe(page)}


# --------------------------------------------------------------------------------------------------
# The whole quiz with the keyboard alone


def _active(page) -> dict:
    return page.evaluate("""() => { const el = document.activeElement;
        const label = el.id ? document.querySelector(`label[for="${el.id}"]`) : null;
        const style = getComputedStyle(el), labelStyle = label ? getComputedStyle(label) : null;
        return {tag: el.tagName, type: el.type || null, name: el.name || null, value: el.value ?? null,
                checked: !!el.checked, text: (el.textContent || '').trim(),
                visible: style.outlineStyle !== 'none' || (labelStyle && labelStyle.outlineStyle !== 'none')}; }""")


def _tab_to(page, matches, what: str, limit: int = 80, key: str = "Tab") -> dict:
    """Press Tab until the focused element matches; every stop on the way must show its focus."""
    for _ in range(limit):
        page.keyboard.press(key)
        active = _active(page)
        if active["tag"] != "BODY":
            assert active["visible"], f"focus is not visible on {active}"
        if matches(active):
            return active
    raise AssertionError(f"{what}: not reached with {limit} presses of {key} (on {page.url})")


def _is_link(text: str):
    return lambda a: a["tag"] == "A" and a["text"] == text


def _answer_with_keys(page, key) -> None:
    wanted = _key_values(key)
    first = _tab_to(page, lambda a: a["name"] == "answer", "the first option")
    if first["type"] == "radio":
        # A radio group is one Tab stop; the arrow keys move through it and select as they go.
        options = page.locator('input[name="answer"]').evaluate_all("els => els.map(e => e.value)")
        target = options.index(wanted[0])
        for _ in range(target):
            page.keyboard.press("ArrowDown")
        if target == 0:
            page.keyboard.press("Space")
        assert _active(page)["value"] == wanted[0] and _active(page)["checked"]
    else:
        active = first
        while active["name"] == "answer":
            if active["value"] in wanted:
                page.keyboard.press("Space")
                assert _active(page)["checked"]
            page.keyboard.press("Tab")
            active = _active(page)
        page.keyboard.press("Shift+Tab")  # back onto the last checkbox, to Tab on to the button below
    checked = page.locator('input[name="answer"]:checked').evaluate_all("els => els.map(e => e.value)")
    assert sorted(checked) == sorted(wanted)
    button = _tab_to(page, lambda a: a["tag"] == "BUTTON", "the submit button")
    assert button["text"] == "Submit answer"
    page.keyboard.press("Enter")


def test_a_whole_quiz_with_the_keyboard_alone(a11y_server, browser, artifacts):
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    page = context.new_page()
    page.goto(f"{a11y_server.url}/")
    # The skip link comes first, and takes focus into the page's content.
    skip = _tab_to(page, lambda a: a["tag"] == "A", "the skip link", limit=1)
    assert skip["text"] == "Skip to content"
    _tab_to(page, _is_link("Deep learning: Attention and Transformers"), "the seed bank's link")
    page.keyboard.press("Enter")
    page.wait_for_url(f"**/quiz/{SEED_BANK}/")
    _tab_to(page, _is_link("Start the quiz"), "Start the quiz")
    page.keyboard.press("Enter")
    for number, (question_id, (key, _)) in enumerate(EXPECTED.items(), start=1):
        page.wait_for_url(f"**/quiz/{SEED_BANK}/{question_id}")
        _answer_with_keys(page, key)
        page.wait_for_url(f"**/quiz/{SEED_BANK}/{question_id}/answer")
        assert page.locator("#verdict").inner_text() == "Correct", question_id
        onward = "Next question" if number < len(EXPECTED) else "See your results"
        _tab_to(page, _is_link(onward), onward, limit=150)
        page.keyboard.press("Enter")
    page.wait_for_url(f"**/quiz/{SEED_BANK}/summary")
    assert page.locator(".total-score").inner_text().startswith("You scored 9 out of 9")
    # The retake button and the link after it are reachable, and Shift+Tab walks back.
    _tab_to(page, lambda a: a["tag"] == "BUTTON" and a["text"] == "Retake the quiz", "retake", limit=150)
    _tab_to(page, _is_link("All quizzes"), "All quizzes", limit=1)
    _tab_to(page, lambda a: a["text"] == "Retake the quiz", "retake again", limit=1, key="Shift+Tab")
    page.screenshot(path=str(artifacts / "summary-keyboard.png"), full_page=True)
    context.close()


def test_on_a_phone_the_results_pages_wide_formulas_scroll_in_boxes_the_keyboard_reaches(a11y_server, browser,
                                                                                         axe_results):
    """At 375 px, Q1's softmax formula in the results page's explanation is wider than its box (a box in a box):
    the box scrolls, shows a shadow where the formula goes on, and is a tab stop (axe's scrollable-region-focusable
    was serious here), and the page itself does not scroll sideways."""
    context = browser.new_context(viewport={"width": 375, "height": 800})
    page = context.new_page()
    base = a11y_server.url
    for question_id, (key, _) in EXPECTED.items():
        page.goto(f"{base}/quiz/{SEED_BANK}/{question_id}")
        _choose_and_submit(page, _key_values(key))
        page.wait_for_url(f"**/{question_id}/answer")
    page.goto(f"{base}/quiz/{SEED_BANK}/summary")
    check_page(page, "summary at 375 px", axe_results)
    assert page.evaluate("document.scrollingElement.scrollWidth") <= 375
    displayed = page.locator(".math:has(math[display=block])")
    assert displayed.count() and all(tabindex == "0" for tabindex in displayed.evaluate_all(
        "boxes => boxes.map(box => box.getAttribute('tabindex'))"))
    wide = displayed.filter(has=page.locator("math[alttext*='softmax']")).first
    assert wide.evaluate("box => box.scrollWidth > box.clientWidth")
    left, right = _cue(wide)
    assert right > 20 and left < 1, (left, right)
    wide.focus()
    page.keyboard.press("ArrowRight")
    page.wait_for_function("box => box.scrollLeft > 0", arg=wide.element_handle())
    context.close()


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_a_formula_that_fits_shows_no_scroll_cue_and_none_in_a_link_is_a_tab_stop(a11y_server, browser, scheme):
    """The cue's covers are painted in the colour of the box a formula sits on: on a question page, an answer page,
    a tutorial and the preview, a formula that fits must look as it would without them (the covers once drew dark
    bars beside formulas in option labels and feedback, in the dark scheme). A formula in a link or an option's
    label takes no focus of its own: the link's or the option's is the one to keep."""
    from PIL import Image, ImageChops
    import io

    context = browser.new_context(viewport={"width": 1280, "height": 900}, color_scheme=scheme)
    page = context.new_page()
    base, question = a11y_server.url, f"/quiz/{PRACTICE_BANK}/attention-output-2x2"
    page.goto(f"{base}/quiz/{PRACTICE_BANK}/")
    assert page.locator("a .math, label .math").count() and page.locator("a [tabindex], label [tabindex]").count() == 0
    page.goto(f"{base}/quiz/{SEED_BANK}/soft-dictionary-lookup")
    _choose_and_submit(page, ["true"])  # its answer page explains with the softmax formula, in a card
    page.wait_for_url("**/soft-dictionary-lookup/answer")
    checked = 0
    for path in (question, f"/quiz/{SEED_BANK}/soft-dictionary-lookup/answer", "/learn/attention"):
        page.goto(base + path)
        for box in page.locator(".math[tabindex]").all():
            if not box.is_visible() or box.evaluate("b => b.scrollWidth > b.clientWidth"):
                continue
            box.scroll_into_view_if_needed()
            clip = box.bounding_box()  # one clip of the page for both pictures: nothing scrolls in between
            cued = Image.open(io.BytesIO(page.screenshot(clip=clip))).convert("RGB")
            box.evaluate("b => { b.style.background = 'none'; }")
            bare = Image.open(io.BytesIO(page.screenshot(clip=clip))).convert("RGB")
            box.evaluate("b => { b.style.background = ''; }")
            # At most 1 level apart: a box with a background may antialias its text a shade differently; the bars
            # this is about were 10 to 40 levels off.
            largest = max(high for _, high in ImageChops.difference(cued, bare).getextrema())
            assert largest <= 1, (path, largest, box.inner_html()[:80])
            checked += 1
    assert checked >= 3
    context.close()
