"""The LTI endpoints: OIDC login, the id_token launch, the tool's JWKS, deep linking, and the course page an
Instructor launch opens (that course's attempts, grade sync and roster only).
"""

from __future__ import annotations

import time
from urllib.parse import urlsplit

from flask import current_app, jsonify, redirect, render_template, request, session, url_for
from pylti1p3.deep_link_resource import DeepLinkResource
from pylti1p3.exception import LtiException
from pylti1p3.lineitem import LineItem
from sqlalchemy.exc import IntegrityError

from ..bank import banks
from ..errors import AppError, BadInput, NotFound
from ..web import CONTENT_SECURITY_POLICY, progress
from ..web.progress import MAX_DISPLAY_NAME
from . import grades, settings, store
from .tool import (AGS, CLAIM, DEEP_LINKING_REQUEST, DEEP_LINKING_SETTINGS, NRPS, launch_from_cache, login_redirect,
                   validate_launch)

COURSE = "lti_course"  # session key: the course an Instructor launch opened
DEEP_LINK = "lti_deep_link"  # session key: the deep-linking launch this browser may answer


class NotAllowed(AppError):
    status = 403
    title = "Not allowed"


def login():
    return login_redirect()


def launch():
    message = validate_launch()
    body = message.get_launch_data()
    is_teacher = (message.check_teacher_access() or message.check_teaching_assistant_access()
                  or message.check_designer_access())
    if body.get(CLAIM + "message_type") == DEEP_LINKING_REQUEST:
        if not is_teacher:
            raise NotAllowed("Only an instructor of this course can choose which quiz a link opens.")
        session.clear()
        session[DEEP_LINK] = message.get_launch_id()
        listed = sorted(banks().banks.values(), key=lambda b: b.title.lower())
        return render_template("lti/deep_link.html", banks=listed, launch_id=message.get_launch_id())
    platform = store.find_platform(body["iss"], message.get_client_id())
    link = _save_link(platform, body, need_bank=not is_teacher)
    if is_teacher:
        return _open_course(platform, body)
    if message.check_student_access() and link is not None:
        return _open_attempt(link, body)
    raise NotAllowed("Your role in this course is neither a learner's nor an instructor's, so this tool has "
                     "nothing to show you.")


def _claim(body: dict, name: str) -> dict:
    return body.get(CLAIM + name, {})  # an object, as validate_launch checked


def _save_link(platform: store.Platform, body: dict, need_bank: bool) -> store.Link | None:
    """The link this launch came from, created or updated; None for an instructor's launch from a link that names
    no quiz (a course navigation entry, say), which opens the course page all the same."""
    custom = _claim(body, "custom")
    context = _claim(body, "context")
    resource = _claim(body, "resource_link")
    key = (platform.id, body[CLAIM + "deployment_id"], context.get("id", ""), resource["id"])
    bank_id = custom.get("bank")
    if bank_id is not None:
        banks().get(str(bank_id))  # a clear 404 for a bank this server does not have
    policy = custom.get("score_policy")
    if policy is not None and policy not in grades.SCORE_POLICIES:
        raise BadInput(f"The link's custom parameter score_policy={policy!r} must be one of "
                       f"{', '.join(grades.SCORE_POLICIES)}.")
    if bank_id is None:
        known = store.find_link(*key)
        if known is None and not need_bank:
            return None
        if known is None:
            raise BadInput("This course link does not say which quiz to open. Add it again through the tool's "
                           "content selection (deep linking), or set the custom parameter bank=<quiz id>.")
        bank_id = known.bank_id
    chosen = settings.given(custom)
    problems = settings.apply(banks().get(str(bank_id)), chosen)[1]
    if problems:
        raise BadInput(" ".join(f"The link's custom parameter {name} is refused: {message}."
                                for name, message in problems.items())
                       + " Correct it in the link's custom parameters, or add the quiz again through the tool's "
                         "content selection.")
    ags = body.get(AGS, {})
    values = dict(context_title=_text(context.get("title")), resource_title=_text(resource.get("title")),
                  score_policy=policy, ags_scopes=ags.get("scope") or None, lineitems_url=ags.get("lineitems"),
                  lineitem_url=ags.get("lineitem"), settings=chosen)
    return store.save_link(*key, bank_id=str(bank_id), **values)


def _text(value, limit: int = 255) -> str | None:
    """A title or name the platform sent, as one line of at most `limit` characters; None if it sent no text."""
    return progress.single_line(value)[:limit] or None if isinstance(value, str) else None


def _user_name(body: dict) -> str | None:
    """The learner's name from the OpenID claims; one that is not a string (a platform's mistake) is ignored."""
    name = body.get("name")
    if not isinstance(name, str) or not name.strip():
        name = " ".join(part for part in (body.get("given_name"), body.get("family_name")) if isinstance(part, str))
    return _text(name, MAX_DISPLAY_NAME)


def _open_attempt(link: store.Link, body: dict):
    """A learner's launch: a new identity (nothing of the browser's previous user carries over), then their
    attempt in this link."""
    session.clear()
    return _next_attempt(link, body["sub"], _user_name(body))


def retake_in_course(bank, attempt_id: str):
    """The quiz's Retake in a session an LMS launch opened (`attempt_id`: the attempt it opened): the learner's next
    attempt in the same link, graded and under the link's settings and its `attempts:`, as a new launch would start
    it. Refused while the session's attempt is unfinished: the course counts finished attempts."""
    owner = store.attempt_owner(attempt_id)
    link = store.link_by_id(owner.link_id) if owner is not None else None
    if link is None or link.bank_id != bank.id:
        raise BadInput(f"The link to {bank.title!r} in your course has changed since you opened it, so no attempt was "
                       "started here. Open the quiz from your course again.")
    current = progress.current(bank)
    still_open = current is not None and current.id == attempt_id and not current.finished
    if still_open and not progress.close_if_over(current):  # a time limit that has passed closes it now
        raise BadInput("This attempt is not finished yet, and your course counts finished attempts, so no new one "
                       "was started. Answer its remaining questions first; then you can retake the quiz.")
    return _next_attempt(link, owner.user_sub, owner.user_name)


def _next_attempt(link: store.Link, user_sub: str, name: str | None):
    """Resume the learner's unfinished attempt in this link, or start a new one that is theirs, under the link's
    settings; `attempts:` counts this LMS user's attempts in this link, from any browser."""
    bank = settings.apply(banks().get(link.bank_id), link.settings)[0]
    every = store.user_attempts(link.id, user_sub)  # at any bank this link has opened
    taken = [a for a in every if a.bank_id == bank.id]  # a re-pointed link: afresh
    progress.count_started(bank, len(taken))
    unfinished = [a for a in taken if a.finished_at is None]
    if unfinished:
        progress.adopt(bank, unfinished[0].id, in_course=True)
    elif bank.attempts is not None and len(taken) >= bank.attempts:
        progress.adopt(bank, taken[0].id, in_course=True)  # the latest: its results stay on the quiz's pages
        raise progress.NoAttemptsLeft(_no_attempts_left(link, user_sub, bank),
                                      link=("See your results", url_for("quiz.summary", bank_id=bank.id)))
    else:
        number = 1 + max((a.attempt_number or 0 for a in every), default=0)  # past any gap a deletion left
        try:
            progress.start(bank, display_name=name, owner=store.owner(link.id, user_sub, name, number))
        except IntegrityError:  # this learner's launch from another browser, at the same moment, started it first
            return _next_attempt(link, user_sub, name)  # counted again: that attempt is theirs to resume
    return redirect(url_for("quiz.start", bank_id=bank.id), 303)


def _no_attempts_left(link: store.Link, user_sub: str, bank) -> str:
    allowed = ("1 attempt, and you have used it" if bank.attempts == 1
               else f"{bank.attempts} attempts, and you have used all of them")
    sentence = f"This course's link to {bank.title!r} allows {allowed}, so no new attempt was started."
    score = grades.score_to_send(link, user_sub)
    if score is not None:
        counted = "best score" if link.score_policy == "best" else "latest attempt's score"
        sentence += f" Your {counted}, {score[0]:g} / {score[1]:g}, is the one that goes to the course's grade book."
    return sentence + " Your results stay on the quiz's page."


def _open_course(platform: store.Platform, body: dict):
    context = _claim(body, "context")
    nrps = body.get(NRPS, {})
    context_id = context.get("id", "")
    session.clear()
    session[COURSE] = {"platform": platform.id, "deployment": body[CLAIM + "deployment_id"], "context": context_id,
                       "title": _text(context.get("title")) or context_id or "This course",
                       "nrps": nrps.get("context_memberships_url"),
                       "until": time.time() + float(current_app.config["INSTRUCTOR_IDLE_TIMEOUT"])}
    return redirect(url_for(".course"), 303)


def _course() -> dict:
    course = session.get(COURSE)
    until = course.get("until") if isinstance(course, dict) else None
    if (not isinstance(until, (int, float)) or isinstance(until, bool) or until < time.time()
            or not all(isinstance(course.get(key), str) for key in ("deployment", "context", "title"))
            or not isinstance(course.get("platform"), int)):  # a value signed with a leaked key, of the wrong shape
        raise NotAllowed("This page is for a course's instructors: open the tool from your course in the LMS "
                         "(an instructor's launch signs you in for that course only).")
    return course


def course():
    scope = _course()
    where = (scope["platform"], scope["deployment"], scope["context"])
    attempts = store.course_attempts(*where)
    sync = store.course_grade_rows(*where)
    members, roster_error = None, None
    try:
        members = grades.roster(scope["platform"], scope.get("nrps"))
    except (LtiException, OSError) as error:
        roster_error = str(error)[:300]
    not_started = None
    if members is not None:
        started = {a.user_sub for a in attempts}
        not_started = [m for m in members if _learner(m) and m.get("status", "Active") == "Active"
                       and m["user_id"] not in started]
    return render_template("lti/course.html", course=scope, attempts=attempts, sync=sync,
                           not_started=not_started, roster_error=roster_error,
                           placements=[_placement(link) for link in store.course_links(*where)])


def _learner(member) -> bool:
    """A roster member (NRPS) who is a learner, with a user id: one of another shape, from a platform's mistake,
    is left out rather than failing the course page. A role may come as one string instead of a list."""
    if not isinstance(member, dict) or not isinstance(member.get("user_id"), str):
        return False
    roles = member.get("roles", [])
    roles = [roles] if isinstance(roles, str) else roles if isinstance(roles, list) else []
    return any(isinstance(r, str) and (r.endswith("#Learner") or r == "Learner") for r in roles)


def course_attempt(attempt_id: str):
    """An attempt made from one of the course's links, question by question, as the instructor area shows it."""
    from ..instructor.views import attempt_review

    scope = _course()
    owner = store.attempt_owner(attempt_id)  # the link it was made from, if an LMS launch made it
    link = next((link for link in store.course_links(scope["platform"], scope["deployment"], scope["context"])
                 if owner is not None and link.id == owner.link_id), None)
    if link is None:
        raise NotFound("This course has no such attempt. The course page links each attempt made from its links.")
    return attempt_review(banks().get(link.bank_id), attempt_id, course=scope)


def _placement(link: store.Link) -> dict:
    """A link of the course, with the settings its attempts run under: the link's own where it sets them."""
    try:
        bank = settings.apply(banks().get(link.bank_id), link.settings)[0]
    except NotFound:
        return {"link": link, "quiz": f"{link.bank_id} (no longer on this server)",
                "settings": [(name, "", False) for name in ("Attempts", "Time limit", "Opens", "Closes", "Shuffled")]}
    own = set(link.settings)
    shuffled = [part for part in ("questions", "options") if bank.shuffle and getattr(bank.shuffle, part)]
    values = [
        ("Attempts", str(bank.attempts) if bank.attempts else "no limit", "attempts" in own),
        ("Time limit", progress.duration(bank.time_limit) if bank.time_limit else "none", "time_limit" in own),
        ("Opens", progress.when(bank.opens) if bank.opens else "from the start", "opens" in own),
        ("Closes", progress.when(bank.closes) if bank.closes else "never", "closes" in own),
        ("Shuffled", " and ".join(shuffled) or "nothing", bool(own & {"shuffle_questions", "shuffle_options"})),
    ]
    return {"link": link, "quiz": bank.title, "settings": values}


def send_grades():
    scope = _course()
    for row in store.course_grade_rows(scope["platform"], scope["deployment"], scope["context"]):
        if row.status != "sent":
            grades.send(row)
    return redirect(url_for(".course"), 303)


def deep_link():
    """The instructor's two steps: the quiz (from the launch's page), then its settings in this course; the item
    goes back to the LMS once every setting is valid."""
    launch_id = request.form.get("launch_id", "")
    if not launch_id or session.get(DEEP_LINK) != launch_id:
        raise NotAllowed("This content selection was not started in this browser, or was already sent. Start "
                         "it again from the course.")
    message = launch_from_cache(launch_id)
    bank = banks().get(request.form.get("bank", ""))
    chosen = settings.given(request.form)
    placed, problems = settings.apply(bank, chosen)
    policy = request.form.get("score_policy", "best")
    if policy not in grades.SCORE_POLICIES:
        problems["score_policy"] = f"choose which score counts: {' or '.join(grades.SCORE_POLICIES)}"
    if request.form.get("step") != "settings" or problems:
        return render_template("lti/deep_link_settings.html", bank=bank, launch_id=launch_id, values=request.form,
                               problems=problems, policies=grades.SCORE_POLICIES, when=progress.when,
                               duration=progress.duration), 400 if problems else 200
    item = (DeepLinkResource().set_url(url_for(".launch", _external=True)).set_title(bank.title)
            .set_custom_params({"bank": bank.id, "score_policy": policy, **chosen})
            .set_lineitem(LineItem().set_label(bank.title).set_score_maximum(bank.per_attempt)
                          .set_resource_id(bank.id).set_tag(grades.TOOL_TAG)))
    deep = message.get_deep_link()
    token = deep.get_response_jwt([item])
    return_url = message.get_launch_data()[DEEP_LINKING_SETTINGS]["deep_link_return_url"]
    session.pop(DEEP_LINK, None)
    parts = urlsplit(return_url)
    page = render_template("lti/deep_link_return.html", bank=placed, policy=policy, chosen=chosen,
                           return_url=return_url, jwt=token, when=progress.when, duration=progress.duration)
    # The form goes back to the LMS: this one page's form-action allows the LMS's origin besides 'self'.
    csp = CONTENT_SECURITY_POLICY.replace("form-action 'self'", f"form-action 'self' {parts.scheme}://{parts.netloc}")
    return page, 200, {"Content-Security-Policy": csp}


def jwks():
    return jsonify(store.public_jwks())

