"""LTI in Debian's Chromium: the platform's auto-posted launch, the state and session cookies, a learner
answering and the grade arriving, and the deep-linking form going back to the LMS under the page's CSP."""

from __future__ import annotations

import pytest

from test_lti_flow import INSTRUCTOR, PendingLaunch, finish, instructor, learner, lms, tool  # noqa: F401  (fixtures)

pytestmark = pytest.mark.browser


def test_a_learner_takes_the_quiz_in_a_browser_and_the_grade_arrives(browser, tool, lms):  # noqa: F811
    context = browser.new_context()
    page = context.new_page()
    page.goto(lms.start_url(learner("wes", context="course-b")))
    page.wait_for_url(f"{tool.url}/quiz/demo/")
    assert "Student wes" in page.content()
    assert any(c["name"].startswith("lti1p3-state-") for c in context.cookies())
    for question, value in (("heads", "8"), ("sum", "2")):
        page.goto(f"{tool.url}/quiz/demo/{question}")
        page.fill("#answer-input", value)
        page.click("button:has-text('Submit answer')")
        page.wait_for_url(f"{tool.url}/quiz/demo/{question}/answer")
    finish(tool, "course-b", "link-1", "wes")
    assert lms.score_of("course-b", "Quiz link link-1", "wes", 2.0)
    context.close()


def test_deep_linking_in_a_browser_posts_back_to_the_lms(browser, tool, lms):  # noqa: F811
    context = browser.new_context()
    page = context.new_page()
    blocked = []
    page.on("console", lambda message: blocked.append(message.text) if "Content Security" in message.text else None)
    page.goto(lms.start_url(PendingLaunch(user="teacher", roles=[INSTRUCTOR], context="course-b",
                                          resource_link=None, deep_link=True)))
    page.wait_for_url(f"{tool.url}/lti/launch")
    page.click("label:has-text('Demo bank')")
    page.click("button:has-text('Next: its settings in this course')")
    page.click("label:has-text('latest finished attempt')")
    page.fill("input[name=time_limit]", "20 minutes")
    page.click("button:has-text('Add this quiz to the course')")
    assert page.get_attribute("#time_limit", "aria-invalid") == "true"  # refused, next to its field
    assert "expected a duration like 20m" in page.inner_text("#time_limit-error")
    page.fill("#time_limit", "20m")
    page.select_option("#shuffle_questions", "true")
    page.click("button:has-text('Add this quiz to the course')")
    assert "a time limit of 20 minutes per attempt" in page.content()
    page.click("button:has-text('Return to the course with this quiz')")
    page.wait_for_url(f"{lms.url}/deep-link-return")
    assert "added 1 item(s)" in page.content() and blocked == []
    assert lms.deep_link_items[-1][0]["custom"] == {"bank": "demo", "score_policy": "latest", "time_limit": "20m",
                                                    "shuffle_questions": "true"}
    context.close()


def test_a_retake_in_the_browser_is_the_learners_next_graded_attempt(browser, tool, lms):  # noqa: F811
    context = browser.new_context()
    page = context.new_page()
    page.goto(lms.start_url(learner("xia", context="course-c")))
    page.wait_for_url(f"{tool.url}/quiz/demo/")
    for attempt_answers in (("8", "3"), ("8", "2")):  # 1 of 2, then 2 of 2
        for question, value in zip(("heads", "sum"), attempt_answers):
            page.goto(f"{tool.url}/quiz/demo/{question}")
            page.fill("#answer-input", value)
            page.click("button:has-text('Submit answer')")
            page.wait_for_url(f"{tool.url}/quiz/demo/{question}/answer")
        page.goto(f"{tool.url}/quiz/demo/summary")
        assert "A retake is your next attempt in the course" in page.inner_text("#course-retake")
        assert page.is_visible("button:has-text('Try the 1 I missed (practice)')") == (attempt_answers[1] == "3")
        finish(tool, "course-c", "link-1", "xia")
        page.click("button:has-text('Retake the quiz')")
        page.wait_for_url(f"{tool.url}/quiz/demo/")  # the start page, as a launch opens
        assert "Student xia" in page.content()  # still the learner the LMS launched
    assert lms.score_of("course-c", "Quiz link link-1", "xia", 2.0)  # the retake's, the best
    page.goto(f"{tool.url}/quiz/demo/summary")  # the third attempt, just started: no retake until it is finished
    assert "answer the remaining questions before you retake the quiz" in " ".join(page.inner_text("#course-retake").split())
    assert not page.is_visible("button:has-text('Retake the quiz')")
    context.close()


@pytest.mark.parametrize("width", [1280, 375])
def test_the_instructor_opens_an_attempt_from_the_course_page_and_comes_back(browser, tool, lms, artifacts,  # noqa: F811
                                                                              width):
    student = browser.new_context()
    page = student.new_page()
    page.goto(lms.start_url(learner(f"yan{width}", context=f"course-v{width}")))
    page.wait_for_url(f"{tool.url}/quiz/demo/")
    for question, value in (("heads", "3"), ("sum", "2")):
        page.goto(f"{tool.url}/quiz/demo/{question}")
        page.fill("#answer-input", value)
        page.click("button:has-text('Submit answer')")
        page.wait_for_url(f"{tool.url}/quiz/demo/{question}/answer")
    student.close()
    teacher = browser.new_context(viewport={"width": width, "height": 900})
    page = teacher.new_page()
    page.goto(lms.start_url(instructor(context=f"course-v{width}")))
    page.wait_for_url(f"{tool.url}/lti/course")
    page.click(f"a:has-text('Student yan{width}')")
    page.wait_for_url(f"{tool.url}/lti/course/attempts/*")
    assert page.locator("h1").inner_text() == f"Student yan{width}'s attempt"
    assert page.locator("#review-heads .review-score").inner_text() == "0 / 1"
    assert page.locator("#review-sum .review-score").inner_text() == "1 / 1"
    assert page.evaluate("document.documentElement.scrollWidth") <= width  # nothing wider than the phone
    page.screenshot(path=str(artifacts / f"lti-course-attempt-{width}.png"), full_page=True)
    page.click("a:has-text('The course page')")
    page.wait_for_url(f"{tool.url}/lti/course")
    teacher.close()
