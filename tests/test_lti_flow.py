"""LTI 1.3 end to end against a real platform library (lti1p3platform, tests/lti_platform.py) on its own HTTP
server: registration, login, launch, a learner finishing, the score in the platform's grade book; deep linking,
an instructor's course page; and launches that must be refused (replay, audience, expiry, signature, deployment).

Each person is a requests.Session: it follows redirects and posts the platform's auto-submitting form, as a
browser does.
"""

from __future__ import annotations

import base64
import html
import json
import re
import time
from datetime import datetime, timedelta, timezone
from contextlib import contextmanager
from html.parser import HTMLParser

import pytest
import requests
from sqlalchemy import select, update

from app import create_app, db
from app.lti import grades, store
from conftest import LiveServer
from lti_platform import INSTRUCTOR, LEARNER, PendingLaunch, Platform, PlatformServer

BANK = """\
id: demo
title: Demo bank
questions:
  - id: heads
    type: numeric
    prompt: How many heads?
    explanation: Eight.
    answer: 8
  - id: sum
    type: numeric
    prompt: One plus one?
    explanation: Two.
    answer: 2
"""
RIGHT = {"heads": "8", "sum": "2"}
WRONG = {"heads": "3", "sum": "5"}


class Forms(HTMLParser):
    """Every form on a page: its action and its inputs' names and values."""

    def __init__(self, page: str):
        super().__init__()
        self.forms: list[dict] = []
        self.feed(page)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "form":
            self.forms.append({"action": attrs.get("action"), "fields": {}})
        elif tag == "input" and self.forms and attrs.get("name"):
            if attrs.get("type") in ("radio", "checkbox") and "checked" not in attrs:
                return
            self.forms[-1]["fields"][attrs["name"]] = attrs.get("value", "")


def only_form(page: str) -> dict:
    forms = Forms(page).forms
    assert len(forms) >= 1, page[:500]
    return forms[-1]


@pytest.fixture(scope="module")
def lms():
    platform = Platform()
    with PlatformServer(platform):
        yield platform


def register(app, lms: Platform) -> str:
    """`flask lti add-platform` with the test platform's URLs, as an administrator runs it; its output."""
    result = app.test_cli_runner().invoke(args=[
        "lti", "add-platform", "--issuer", lms.issuer, "--client-id", lms.client_id,
        "--auth-url", f"{lms.url}/authorize", "--token-url", f"{lms.url}/token", "--jwks-url", f"{lms.url}/jwks",
        "--deployment-id", lms.deployment_id])
    assert result.exit_code == 0, result.output
    return result.output


@contextmanager
def serve_tool(lms: Platform, folder, bank_name: str, bank_yaml: str, **config):
    """The tool on a live server of its own, over one bank in `folder`, registered with `lms`."""
    (folder / "quizzes").mkdir()
    (folder / "quizzes" / bank_name).write_text(bank_yaml)
    app = create_app({"TESTING": True, "SECRET_KEY": "lti-test-secret", "QUIZ_DIR": str(folder / "quizzes"),
                      "DATABASE_URL": f"sqlite:///{folder / 'tool.sqlite3'}", "RATE_LIMIT_SUBMIT": "1000 per minute",
                      **config})
    with LiveServer(app) as server:
        lms.tool_url = server.url
        server.registered = register(app, lms)
        server.app = app
        yield server


@pytest.fixture(scope="module")
def tool(lms, tmp_path_factory):
    with serve_tool(lms, tmp_path_factory.mktemp("lti"), "demo.yaml", BANK) as server:
        assert f"registered {lms.issuer} (client id {lms.client_id}); deployments: deployment-1" in server.registered
        yield server


def launch(person: requests.Session, lms: Platform, pending: PendingLaunch, tamper=None) -> requests.Response:
    """Click the course link: platform -> tool login -> platform authorize -> the auto-posted id_token."""
    page = person.get(lms.start_url(pending))
    assert page.status_code == 200, page.text[:500]
    form = only_form(page.text)
    fields = dict(form["fields"])
    if tamper:
        fields["id_token"] = tamper(fields["id_token"])
    return person.post(form["action"], data=fields)


def learner(user: str, context: str = "course-a", link: str = "link-1", **kwargs) -> PendingLaunch:
    custom = kwargs.pop("custom", {"bank": "demo"})
    return PendingLaunch(user=user, roles=[LEARNER], context=context, resource_link=link, name=f"Student {user}",
                         custom=custom, **kwargs)


def instructor(user: str = "teacher", context: str = "course-a", **kwargs) -> PendingLaunch:
    return PendingLaunch(user=user, roles=[INSTRUCTOR], context=context, resource_link=kwargs.pop("link", "link-1"),
                         name="Teacher", custom={"bank": "demo"}, **kwargs)


def answer_all(person: requests.Session, tool, answers: dict[str, str]) -> None:
    for question, value in answers.items():
        page = person.get(f"{tool.url}/quiz/demo/{question}")
        assert page.status_code == 200, page.text[:300]
        token = re.search(r'name="csrf_token" value="([^"]+)"', page.text).group(1)
        done = person.post(f"{tool.url}/quiz/demo/{question}", data={"csrf_token": token, "answer": value})
        assert done.status_code == 200 and "/answer" in done.url, done.text[:300]


def finish(tool, context: str, link: str, user: str) -> str:
    """The attempt the learner just finished, once the grade that its last answer queued has been tried: the
    tool sends it after the response (no call here)."""
    with tool.app.app_context():
        platform = store.find_platform(tool_lms_issuer(tool), None)
        found = store.find_link(platform.id, "deployment-1", context, link)
        latest = store.user_attempts(found.id, user)[0]
        assert latest.finished_at is not None
        wait_for_the_send(found.id, user)
        return latest.id


def wait_for_the_send(link_id: int, user: str, seconds: float = 20) -> None:
    """Until the user's queued grade in that link has been sent or has failed (app context)."""
    deadline = time.monotonic() + seconds
    query = select(store.grade_sync.c.status).where(store.grade_sync.c.link_id == link_id,
                                                    store.grade_sync.c.user_sub == user)
    while True:
        with db.engine().connect() as connection:
            status = connection.execute(query).scalar()
        if status != "pending" or time.monotonic() > deadline:
            assert status != "pending", f"the grade of {user} was never tried"
            return
        time.sleep(0.05)


def tool_lms_issuer(tool) -> str:
    with tool.app.app_context():
        return store.list_platforms()[0].issuer


def test_learner_finishes_and_the_score_reaches_the_grade_book(tool, lms):
    alice = requests.Session()
    opened = launch(alice, lms, learner("alice"))
    assert opened.status_code == 200 and opened.url == f"{tool.url}/quiz/demo/", opened.text[:500]
    assert "Demo bank" in opened.text and "Student alice" in opened.text
    answer_all(alice, tool, RIGHT)
    finish(tool, "course-a", "link-1", "alice")
    book = lms.gradebook("course-a")
    assert list(book) == ["Quiz link link-1"]  # one grade column for the link, created by the tool
    score = book["Quiz link link-1"]["alice"]
    assert (score["scoreGiven"], score["scoreMaximum"]) == (2.0, 2.0)
    assert score["activityProgress"] == "Completed" and score["gradingProgress"] == "FullyGraded"

    bob = requests.Session()  # a second student in the same link: his own grade, the same column
    launch(bob, lms, learner("bob"))
    answer_all(bob, tool, WRONG)
    finish(tool, "course-a", "link-1", "bob")
    book = lms.gradebook("course-a")
    assert list(book) == ["Quiz link link-1"]
    assert book["Quiz link link-1"]["bob"]["scoreGiven"] == 0.0
    assert book["Quiz link link-1"]["alice"]["scoreGiven"] == 2.0


def test_a_relaunch_resumes_the_unfinished_attempt(tool, lms):
    carol = requests.Session()
    launch(carol, lms, learner("carol"))
    answer_all(carol, tool, {"heads": "8"})
    again = requests.Session()  # another browser, the same LMS user
    page = launch(again, lms, learner("carol"))
    assert page.status_code == 200
    assert again.get(f"{tool.url}/quiz/demo/heads").url.endswith("/quiz/demo/heads/answer")  # already answered


def test_best_score_counts_by_default_and_latest_when_the_link_says_so(tool, lms):
    dana = requests.Session()
    launch(dana, lms, learner("dana", link="link-best"))
    answer_all(dana, tool, RIGHT)
    finish(tool, "course-a", "link-best", "dana")
    launch(dana, lms, learner("dana", link="link-best"))  # a finished attempt: the next launch starts another
    answer_all(dana, tool, WRONG)
    finish(tool, "course-a", "link-best", "dana")
    assert lms.gradebook("course-a")["Quiz link link-best"]["dana"]["scoreGiven"] == 2.0

    custom = {"bank": "demo", "score_policy": "latest"}
    launch(dana, lms, learner("dana", link="link-latest", custom=custom))
    answer_all(dana, tool, RIGHT)
    finish(tool, "course-a", "link-latest", "dana")
    launch(dana, lms, learner("dana", link="link-latest", custom=custom))
    answer_all(dana, tool, WRONG)
    finish(tool, "course-a", "link-latest", "dana")
    assert lms.gradebook("course-a")["Quiz link link-latest"]["dana"]["scoreGiven"] == 0.0


def test_a_slow_platform_does_not_hold_the_learners_last_answer(tool, lms):
    # The grade goes out after the response: the token endpoint's 3 s are not the learner's.
    lms.token_delay = 3.0
    try:
        gus = requests.Session()
        launch(gus, lms, learner("gus", context="course-slow"))
        *first, (last, value) = RIGHT.items()
        answer_all(gus, tool, dict(first))
        page = gus.get(f"{tool.url}/quiz/demo/{last}")
        token = re.search(r'name="csrf_token" value="([^"]+)"', page.text).group(1)
        started = time.monotonic()
        done = gus.post(f"{tool.url}/quiz/demo/{last}", data={"csrf_token": token, "answer": value},
                        allow_redirects=False)
        waited = time.monotonic() - started
        assert done.status_code == 303 and waited < lms.token_delay, waited
        finish(tool, "course-slow", "link-1", "gus")  # waits for the send
    finally:
        lms.token_delay = 0.0
    assert lms.gradebook("course-slow")["Quiz link link-1"]["gus"]["scoreGiven"] == 2.0


def test_a_failed_send_is_queued_shown_and_sent_later(tool, lms):
    lms.refuse_scores = True
    erin = requests.Session()
    launch(erin, lms, learner("erin", context="course-q"))
    answer_all(erin, tool, RIGHT)
    finish(tool, "course-q", "link-1", "erin")
    assert "erin" not in lms.gradebook("course-q").get("Quiz link link-1", {})
    with tool.app.app_context():
        rows = store.due_grades(10, user_sub="erin")
        assert rows == []  # not due: the retry waits
        assert grades.send_due(limit=10) == (0, 0)

    teacher = requests.Session()
    course = launch(teacher, lms, instructor(context="course-q"))
    assert course.status_code == 200 and course.url == f"{tool.url}/lti/course", course.text[:300]
    text = " ".join(course.text.split())
    assert "0 sent, 0 pending, 1 failed" in text and "503" in text, text[text.find("<main"):][:3000]

    lms.refuse_scores = False
    token = re.search(r'name="csrf_token" value="([^"]+)"', course.text).group(1)
    after = teacher.post(f"{tool.url}/lti/course/grades", data={"csrf_token": token})
    assert "1 sent, 0 pending, 0 failed" in " ".join(after.text.split())
    assert lms.gradebook("course-q")["Quiz link link-1"]["erin"]["scoreGiven"] == 2.0


def test_failed_sends_back_off_and_the_cron_command_sends_them(tool, lms):
    lms.refuse_scores = True
    fay = requests.Session()
    launch(fay, lms, learner("fay", context="course-r"))
    answer_all(fay, tool, RIGHT)
    finish(tool, "course-r", "link-1", "fay")
    with tool.app.app_context():
        for tries in (1, 2, 3):
            with db.engine().begin() as connection:  # the retry time has come
                connection.execute(update(store.grade_sync).values(next_try_at=db.now()))
            row = store.due_grades(10, user_sub="fay")[0]
            assert (row.status, row.tries) == ("failed", tries)
            assert grades.send(row) is False
            row = store.course_grade_rows(row.link_id and store.link_by_id(row.link_id).platform_id, "deployment-1",
                                          "course-r")[0]
            waited = (row.next_try_at - row.updated_at).total_seconds()
            assert waited == pytest.approx(grades.FIRST_RETRY_SECONDS * 2 ** tries, abs=2)
        lms.refuse_scores = False
        with db.engine().begin() as connection:
            connection.execute(update(store.grade_sync).values(next_try_at=db.now()))
    result = tool.app.test_cli_runner().invoke(args=["lti", "send-grades"])
    assert result.exit_code == 0 and "sent 1 grade(s), 0 failed" in result.output, result.output
    assert lms.gradebook("course-r")["Quiz link link-1"]["fay"]["scoreGiven"] == 2.0


def test_deep_linking_returns_a_signed_item_the_platform_accepts(tool, lms):
    teacher = requests.Session()
    picker = launch(teacher, lms, PendingLaunch(user="teacher", roles=[INSTRUCTOR], context="course-d",
                                                resource_link=None, deep_link=True))
    assert picker.status_code == 200 and "Choose the quiz this link opens" in picker.text, picker.text[:500]
    form = only_form(picker.text)
    assert form["fields"]["bank"] == "demo"
    step = teacher.post(tool.url + form["action"], data=form["fields"])
    assert step.status_code == 200 and "Demo bank in this course" in step.text, step.text[:500]
    form = only_form(step.text)
    chosen = teacher.post(tool.url + form["action"], data={**form["fields"], "score_policy": "latest"})
    assert chosen.status_code == 200, chosen.text[:500]
    assert lms.url in chosen.headers["Content-Security-Policy"]  # the form may go back to the LMS, and only there
    back = only_form(chosen.text)
    assert back["action"] == f"{lms.url}/deep-link-return"
    accepted = teacher.post(back["action"], data=back["fields"])
    assert accepted.status_code == 200 and accepted.text == "added 1 item(s)", accepted.text
    item = lms.deep_link_items[-1][0]
    assert item["type"] == "ltiResourceLink" and item["url"] == f"{tool.url}/lti/launch"
    assert item["custom"] == {"bank": "demo", "score_policy": "latest"}
    assert item["lineItem"]["scoreMaximum"] == 2
    # The same selection cannot be sent twice.
    again = teacher.post(tool.url + form["action"], data={**form["fields"], "score_policy": "latest"})
    assert again.status_code == 403

    student = requests.Session()  # the LMS launches the placed item with its custom parameters
    opened = launch(student, lms, learner("gil", context="course-d", link="placed", custom=item["custom"]))
    assert opened.url == f"{tool.url}/quiz/demo/"


def test_a_learner_cannot_deep_link(tool, lms):
    student = requests.Session()
    refused = launch(student, lms, PendingLaunch(user="hal", roles=[LEARNER], context="course-d",
                                                 resource_link=None, deep_link=True))
    assert refused.status_code == 403 and "Only an instructor" in refused.text


def test_the_instructor_sees_this_course_only_and_who_has_not_started(tool, lms):
    lms.members["course-m"] = [
        {"user_id": "ivy", "name": "Ivy", "roles": [LEARNER], "status": "Active"},
        {"user_id": "jon", "name": "Jon Not-Started", "roles": [LEARNER], "status": "Active"},
        {"user_id": "teacher", "name": "Teacher", "roles": [INSTRUCTOR], "status": "Active"},
    ]
    ivy = requests.Session()
    launch(ivy, lms, learner("ivy", context="course-m"))
    answer_all(ivy, tool, RIGHT)
    other = requests.Session()
    launch(other, lms, learner("kim", context="course-other"))

    teacher = requests.Session()
    page = launch(teacher, lms, instructor(context="course-m"))
    assert page.status_code == 200 and "Course course-m" in page.text
    assert "Student ivy" in page.text and "2 / 2" in page.text
    assert "Student kim" not in page.text and "Student alice" not in page.text  # other courses' students
    assert "Jon Not-Started" in page.text and "<li>Ivy</li>" not in page.text


@pytest.mark.parametrize("odd", [
    {"user_id": "zed", "roles": [5]},  # a role that is no string
    {"user_id": ["zed"], "roles": [LEARNER]},  # an id that is no string
    {"user_id": "zed", "roles": None},
])
def test_a_roster_member_of_another_shape_is_left_out_and_the_course_page_still_shows(tool, lms, odd):
    """The roster comes from the platform after the launch: a member of another shape was a 500 on the course page."""
    context = f"course-odd-{abs(hash(str(odd)))}"
    lms.members[context] = [odd, {"user_id": "uma", "name": "Uma Waiting", "roles": [LEARNER], "status": "Active"},
                            {"user_id": "val", "name": "Val One-Role", "roles": "Learner", "status": "Active"}]
    page = launch(requests.Session(), lms, instructor(f"teach-{context}", context=context))
    assert page.status_code == 200, page.text[-800:]
    assert "<li>Uma Waiting</li>" in page.text  # the well-formed learners are listed
    assert "<li>Val One-Role</li>" in page.text  # roles as one string, not read letter by letter
    assert "<li>zed</li>" not in page.text


def test_only_a_learner_with_a_user_id_counts_as_not_started():
    from app.lti.views import _learner

    assert _learner({"user_id": "a", "roles": [LEARNER]}) and _learner({"user_id": "a", "roles": "Learner"})
    for member in ("just-a-string", None, {"user_id": "a", "roles": [INSTRUCTOR]}, {"user_id": 5, "roles": [LEARNER]},
                   {"user_id": "a", "roles": {"r": LEARNER}}, {"user_id": "a"}):
        assert not _learner(member), member


def test_course_pages_are_never_cached_and_the_key_set_may_be(tool, lms):
    """They show learners' names, scores and answer keys, as the instructor area does (no-store)."""
    student = requests.Session()
    launch(student, lms, learner("cache-ann", context="course-cache"))
    answer_all(student, tool, RIGHT)
    teacher = requests.Session()
    page = launch(teacher, lms, instructor("cache-teacher", context="course-cache"))
    assert page.status_code == 200 and page.headers["Cache-Control"] == "no-store"
    attempt = re.search(r'href="(/lti/course/attempts/[^"]+)"', page.text).group(1)
    review = teacher.get(tool.url + attempt)
    assert review.status_code == 200 and review.headers["Cache-Control"] == "no-store"
    assert teacher.get(tool.url + "/lti/course").headers["Cache-Control"] == "no-store"
    assert "no-store" not in requests.get(tool.url + "/lti/jwks").headers.get("Cache-Control", "")


def test_the_course_page_opens_each_of_its_attempts_and_no_other_courses(tool, lms):
    nia = requests.Session()
    launch(nia, lms, learner("nia", context="course-r"))
    answer_all(nia, tool, RIGHT)
    outsider = requests.Session()
    launch(outsider, lms, learner("oto", context="course-r-other"))
    answer_all(outsider, tool, RIGHT)
    teacher = requests.Session()
    page = launch(teacher, lms, instructor(context="course-r"))
    links = re.findall(r'href="(/lti/course/attempts/[0-9a-f]+)">Student nia<', page.text)
    assert len(links) == 1
    review = teacher.get(tool.url + links[0])
    assert review.status_code == 200 and "Student nia's attempt" in review.text
    assert "Their answer" in review.text and "Correct answer" in review.text and "2 / 2" in review.text
    assert 'href="/lti/course">Course course-r</a>' in review.text  # back to the course page, not /instructor
    assert "/instructor/" not in review.text.split("<footer", 1)[0]
    # Another course's attempt, and an unknown one, are not this course's: 404.
    assert teacher.get(f"{tool.url}/lti/course/attempts/{'0' * 32}").status_code == 404
    teacher_elsewhere = requests.Session()
    other_page = launch(teacher_elsewhere, lms, instructor(context="course-r-other"))
    (other_link,) = re.findall(r'href="(/lti/course/attempts/[0-9a-f]+)">Student oto<', other_page.text)
    assert teacher.get(tool.url + other_link).status_code == 404
    # A learner gets no review, even of their own attempt.
    assert nia.get(tool.url + links[0]).status_code == 403


def test_a_learner_cannot_open_the_course_page_or_send_grades(tool, lms):
    student = requests.Session()
    page = launch(student, lms, learner("lee", context="course-m"))
    assert student.get(f"{tool.url}/lti/course").status_code == 403
    token = re.search(r'name="csrf_token" value="([^"]+)"', student.get(f"{tool.url}/quiz/demo/heads").text).group(1)
    assert student.post(f"{tool.url}/lti/course/grades", data={"csrf_token": token}).status_code == 403
    assert page.status_code == 200


def test_an_instructor_session_of_one_course_does_not_open_another(tool, lms):
    teacher = requests.Session()
    launch(teacher, lms, instructor(context="course-m"))
    student = requests.Session()
    launch(student, lms, learner("mo", context="course-m"))  # a learner launch in the same browser would reset it
    page = teacher.get(f"{tool.url}/lti/course")
    assert "Course course-m" in page.text and "course-other" not in page.text


def test_a_learner_cannot_change_another_learners_grade_or_see_another_course(tool, lms):
    eve = requests.Session()
    launch(eve, lms, learner("eve", context="course-x", link="link-x"))
    answer_all(eve, tool, RIGHT)
    eve_attempt = finish(tool, "course-x", "link-x", "eve")

    mallory = requests.Session()  # a learner of another course that links the same quiz
    launch(mallory, lms, learner("mallory", context="course-y", link="link-y"))
    pages = [mallory.get(f"{tool.url}/quiz/demo/").text, mallory.get(f"{tool.url}/quiz/demo/heads").text]
    assert not any(eve_attempt in page or "Student eve" in page for page in pages)  # nothing of eve's is shown
    # Even with eve's attempt id, which no page of hers shows, nothing changes: eve's questions are closed.
    posted = mallory.post(f"{tool.url}/api/banks/demo/attempts/{eve_attempt}/questions/heads/answer",
                          json={"answer": 3})
    assert posted.status_code == 400 and "Nothing was stored" in posted.text, posted.text[:300]
    # A session cookie naming eve's attempt is refused: the cookie is signed with the server's key.
    jar = mallory.cookies.get_dict()
    forged = requests.Session()
    forged.cookies.set("session", jar.get("session", "")[:-3] + "abc", domain="127.0.0.1")
    assert "Student eve" not in forged.get(f"{tool.url}/quiz/demo/summary").text
    answer_all(mallory, tool, WRONG)
    finish(tool, "course-y", "link-y", "mallory")

    eve_book, mallory_book = lms.gradebook("course-x"), lms.gradebook("course-y")
    assert {user: score["scoreGiven"] for column in eve_book.values() for user, score in column.items()} \
        == {"eve": 2.0}
    assert {user: score["scoreGiven"] for column in mallory_book.values() for user, score in column.items()} \
        == {"mallory": 0.0}
    teacher = requests.Session()
    course = launch(teacher, lms, instructor(context="course-y", link="link-y"))
    assert "Student mallory" in course.text and "Student eve" not in course.text


def _segments(token: str) -> list[str]:
    return token.split(".")


def _b64(data: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()


def _payload(token: str) -> dict:
    part = _segments(token)[1]
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))


def test_a_replayed_launch_is_refused(tool, lms):
    person = requests.Session()
    page = person.get(lms.start_url(learner("nia")))
    form = only_form(page.text)
    first = person.post(form["action"], data=form["fields"])
    assert first.status_code == 200
    replay = person.post(form["action"], data=form["fields"])
    assert replay.status_code == 400 and "nonce was already used" in replay.text
    assert "Start again from the course page." in replay.text and "administrator" not in replay.text  # its own step


@pytest.mark.parametrize("pending, words", [
    (learner("oz", extra_claims={"aud": "some-other-tool"}), "audience"),
    (learner("oz", extra_claims={"aud": ["quiz-tool-client", "some-other-tool"], "azp": None}), "no azp claim"),
    (learner("oz", extra_claims={"azp": "some-other-tool"}), "azp"),
    (learner("oz", expires_in=-60), "Signature has expired"),
    (learner("oz", deployment_id="unknown-deployment"), "deployment id is not registered"),
    (learner("oz", link="x" * 256), "resource link id must be at most 255 characters long"),
], ids=["wrong-audience", "several-audiences-no-azp", "wrong-azp", "expired", "unknown-deployment", "long-id"])
def test_bad_launches_are_refused_with_what_failed(tool, lms, pending, words):
    refused = launch(requests.Session(), lms, pending)
    assert refused.status_code == 400, refused.text[:300]
    assert "LTI launch refused" in refused.text and words in refused.text, refused.text[-1200:]
    # the integration's to fix, so the learner who sees it is told what to do
    assert "open the link there again; if it is refused again, show this page to the LMS&#39;s administrator" in \
        refused.text


AGS = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
NRPS = "https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice"
CLAIM = "https://purl.imsglobal.org/spec/lti/claim/"


@pytest.mark.parametrize("claims, words", [
    ({CLAIM + "roles": LEARNER}, "its roles claim must be a list of strings"),
    ({CLAIM + "roles": [5]}, "its roles claim must be a list of strings"),
    ({CLAIM + "context": "course-a"}, "its context claim must be a JSON object"),
    ({CLAIM + "custom": ["bank"]}, "its custom claim must be a JSON object"),
    ({CLAIM + "context": {"id": ["course-a"]}}, "its context id must be a string"),
    ({CLAIM + "resource_link": {"id": 5}}, "its resource link id must be a string"),
    ({"sub": "oz\x00"}, "its user id (sub) must be text, without control characters or lone surrogates"),
    ({"sub": "oz\ud800"}, "its user id (sub) must be text, without control characters or lone surrogates"),
    ({AGS: "https://lms/lineitems"}, "its grade service (AGS) claim must be a JSON object"),
    ({AGS: {"scope": [5], "lineitems": ["x"]}}, "its grade service scope must be a list of strings"),
    ({AGS: {"scope": [], "lineitem": {"id": 1}}}, "its grade service lineitem must be a URL (a string)"),
    ({NRPS: {"context_memberships_url": 5}}, "its roster service context_memberships_url must be a URL (a string)"),
    ({CLAIM + "message_type": "LtiDeepLinkingRequest",
      "https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings": {
          "deep_link_return_url": 5, "accept_types": ["ltiResourceLink"],
          "accept_presentation_document_targets": ["iframe"]}},
     "its deep_link_return_url must be a URL (a string)"),
    ({CLAIM + "message_type": "LtiDeepLinkingRequest",  # pylti1p3 checks only that the settings are not empty
      "https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings": {
          "accept_types": ["ltiResourceLink"], "accept_presentation_document_targets": ["iframe"]}},
     "its deep_link_return_url must be the http(s) URL the chosen quiz is sent back to"),
    ({CLAIM + "message_type": "LtiDeepLinkingRequest",
      "https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings": {
          "deep_link_return_url": "javascript:alert(1)//", "accept_types": ["ltiResourceLink"],
          "accept_presentation_document_targets": ["iframe"]}},
     "its deep_link_return_url must be the http(s) URL the chosen quiz is sent back to"),
    ({CLAIM + "message_type": "LtiDeepLinkingRequest",  # its origin goes into the return page's CSP
      "https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings": {
          "deep_link_return_url": "https://lms.example; script-src *", "accept_types": ["ltiResourceLink"],
          "accept_presentation_document_targets": ["iframe"]}},
     "its deep_link_return_url must be the http(s) URL the chosen quiz is sent back to"),
], ids=lambda value: None if isinstance(value, dict) else value.split(" must")[0].removeprefix("its "))
@pytest.mark.parametrize("person", [learner, instructor])
def test_a_signed_launch_with_claims_of_another_shape_is_refused_naming_the_claim(tool, lms, claims, words, person):
    """A platform's mistake (or a platform key in the wrong hands) is a sentence, never a 500 further in."""
    refused = launch(requests.Session(), lms, person("oz", extra_claims=claims))
    assert refused.status_code == 400 and "LTI launch refused" in refused.text, refused.text[-1200:]
    assert html.escape(words) in refused.text, refused.text[-1200:]


@pytest.mark.parametrize("claims, shown", [
    ({"name": ["Ann", "Lee"]}, None),
    ({"name": None, "given_name": ["Ann"], "family_name": "Lee"}, "Lee"),
    ({"name": "\ud800Ann\x00 Lee"}, "Ann Lee"),
    ({"name": "\ud800"}, None),
], ids=["list", "given-name-a-list", "surrogate-and-nul", "only-a-surrogate"])
def test_a_name_or_title_of_another_shape_is_read_without_its_bad_part(tool, lms, claims, shown):
    """Names and titles are only shown, so the launch goes on with what can be read of them."""
    titled = {CLAIM + "context": {"id": "course-a", "title": "\ud800Course\x00 A"}, **claims}
    page = launch(requests.Session(), lms, learner(f"named-{shown}-{len(str(claims))}", extra_claims=titled))
    assert page.status_code == 200, page.text[-1200:]
    words = " ".join(page.text.split())
    assert (f"from your course as {shown}:" if shown else "You opened this quiz from your course:") in words
    teacher = launch(requests.Session(), lms, instructor("oz-teacher", extra_claims=titled))
    assert teacher.status_code == 200 and "<h1>Course A</h1>" in teacher.text, teacher.text[:1500]


def test_a_link_that_names_no_quiz_is_refused_with_what_to_do(tool, lms):
    refused = launch(requests.Session(), lms, learner("una", link="unconfigured", custom={}))
    assert refused.status_code == 400 and "does not say which quiz to open" in refused.text
    unknown = launch(requests.Session(), lms, learner("una", link="unconfigured", custom={"bank": "nope"}))
    assert unknown.status_code == 404 and "There is no quiz called &#39;nope&#39;" in unknown.text


def test_a_tampered_token_is_refused(tool, lms):
    def as_someone_else(token):
        header, _, signature = _segments(token)
        return ".".join([header, _b64({**_payload(token), "sub": "alice"}), signature])

    refused = launch(requests.Session(), lms, learner("pat"), tamper=as_someone_else)
    assert refused.status_code == 400 and "Signature verification failed" in refused.text


@pytest.mark.parametrize("token", ["not-a-token", "a.b.c", _b64({"kid": 1}) + "." + _b64([]) + ".x"])
def test_a_malformed_token_is_a_400_not_a_500(tool, lms, token):
    person = requests.Session()
    page = person.get(lms.start_url(learner("quin")))
    fields = only_form(page.text)["fields"]
    refused = person.post(f"{tool.url}/lti/launch", data={**fields, "id_token": token})
    assert refused.status_code == 400 and "LTI launch refused" in refused.text


def test_a_launch_without_the_login_cookie_is_refused(tool, lms):
    page = requests.Session().get(lms.start_url(learner("rue")))
    form = only_form(page.text)
    refused = requests.post(form["action"], data=form["fields"])  # another browser: no state cookie
    assert refused.status_code == 400 and "state does not match" in refused.text


def test_a_login_for_an_unregistered_platform_is_refused(tool):
    refused = requests.get(f"{tool.url}/lti/login", params={
        "iss": "https://lms.example.org", "login_hint": "u", "target_link_uri": f"{tool.url}/lti/launch"})
    assert refused.status_code == 400 and "No platform is registered for issuer" in refused.text


def test_a_flood_of_logins_from_one_address_is_refused_before_it_stores_anything(lms, tmp_path):
    """Each login stores a nonce row, and the issuer and client id are no secret (every student's browser carries
    them): logins count against the address's attempt starts, their rows live 10 minutes, and the sweep of expired
    rows goes through an index, at most once a minute."""
    from sqlalchemy import func, inspect, select

    shared_tool = lms.tool_url  # the module's tool, which the platform launches again after this test
    try:
        with serve_tool(lms, tmp_path, "demo.yaml", BANK, RATE_LIMIT_ATTEMPTS_PER_ADDRESS="4 per minute") as server:
            params = {"iss": lms.issuer, "client_id": lms.client_id, "login_hint": "u",
                      "target_link_uri": f"{server.url}/lti/launch"}
            codes = [requests.get(f"{server.url}/lti/login", params=params, allow_redirects=False).status_code
                     for _ in range(6)]
            assert codes == [302] * 4 + [429] * 2
            refused = requests.get(f"{server.url}/lti/login", params=params, allow_redirects=False)
            assert int(refused.headers["Retry-After"]) >= 1
            assert "opened the quiz from the LMS more often" in refused.text
            with server.app.app_context():
                with db.engine().connect() as connection:
                    rows, latest = connection.execute(
                        select(func.count(), func.max(store.launch_data.c.expires_at))).one()
                    indexed = [i["column_names"] for i in inspect(connection).get_indexes("lti_launch_data")]
            assert 4 <= rows <= 8  # the four logins' nonces and states; nothing for the refused ones
            latest = latest if latest.tzinfo else latest.replace(tzinfo=timezone.utc)
            assert latest - datetime.now(timezone.utc) <= timedelta(seconds=600)
            assert ["expires_at"] in indexed
    finally:
        lms.tool_url = shared_tool


def test_the_jwks_publishes_the_key_the_platform_verified(tool, lms):
    keys = requests.get(f"{tool.url}/lti/jwks").json()["keys"]
    assert len(keys) == 1 and keys[0]["kty"] == "RSA" and keys[0]["alg"] == "RS256" and "d" not in keys[0]


def test_after_a_key_rotation_grades_still_reach_the_platform(tool, lms):
    runner = tool.app.test_cli_runner()
    assert runner.invoke(args=["lti", "rotate-key"]).exit_code == 0
    keys = requests.get(f"{tool.url}/lti/jwks").json()["keys"]
    assert len(keys) == 2  # the platform may still hold the old key: both are published
    sam = requests.Session()
    launch(sam, lms, learner("sam", context="course-k"))
    answer_all(sam, tool, RIGHT)
    finish(tool, "course-k", "link-1", "sam")  # the token request is signed with the new key
    assert lms.gradebook("course-k")["Quiz link link-1"]["sam"]["scoreGiven"] == 2.0
    assert "retired 1 old key(s)" in runner.invoke(args=["lti", "retire-keys"]).output


def test_an_instructor_launch_from_a_link_without_a_quiz_opens_the_course_page(tool, lms):
    launch(requests.Session(), lms, learner("xia", context="course-n"))
    teacher = requests.Session()  # e.g. Canvas's course navigation entry: no bank, a link never seen
    page = launch(teacher, lms, PendingLaunch(user="teacher", roles=[INSTRUCTOR], context="course-n",
                                              resource_link="course-nav", custom={}))
    assert page.status_code == 200 and page.url == f"{tool.url}/lti/course" and "Student xia" in page.text


POOLED_BANK = """\
id: pooled
title: Pooled bank
pools:
  - {id: sums, draw: 1, questions: [sum-a, sum-b, sum-c]}
questions:
""" + "".join(f"""\
  - id: {name}
    type: numeric
    prompt: {name}?
    explanation: Two.
    answer: 2
""" for name in ("first", "sum-a", "sum-b", "sum-c"))


def test_a_pooled_banks_grade_column_is_out_of_the_questions_an_attempt_has(lms, tmp_path):
    """Each attempt draws 1 of the pool's 3: the line item deep linking creates is out of 2, not the bank's 4."""
    shared_tool = lms.tool_url
    try:
        with serve_tool(lms, tmp_path, "pooled.yaml", POOLED_BANK) as server:
            teacher = requests.Session()
            picker = launch(teacher, lms, PendingLaunch(user="teacher", roles=[INSTRUCTOR], context="course-p",
                                                        resource_link=None, deep_link=True))
            assert "Pooled bank (2 questions per attempt, of 4)" in " ".join(picker.text.split())
            form = only_form(picker.text)
            step = teacher.post(server.url + form["action"], data=form["fields"])
            assert "2 questions per attempt, drawn from 4." in " ".join(step.text.split())
            form = only_form(step.text)
            chosen = teacher.post(server.url + form["action"], data=form["fields"])
            assert "(2 questions per attempt, of 4)" in " ".join(chosen.text.split())
            back = only_form(chosen.text)
            assert teacher.post(back["action"], data=back["fields"]).text == "added 1 item(s)"
            item = lms.deep_link_items[-1][0]
            assert item["custom"]["bank"] == "pooled" and item["lineItem"]["scoreMaximum"] == 2
    finally:
        lms.tool_url = shared_tool
