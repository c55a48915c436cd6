"""Grade passback (LTI Assignment and Grade Services) and the course roster (Names and Role Provisioning).

A finished attempt queues its user's grade; a send computes the best (or latest) score from the database,
posts it to the link's line item (created once per link), and a failure stays queued with a growing delay.
"""

from __future__ import annotations

import logging
from datetime import timedelta

import requests
from pylti1p3.assignments_grades import AssignmentsGradesService
from pylti1p3.exception import LtiException
from pylti1p3.grade import Grade
from pylti1p3.lineitem import LineItem
from pylti1p3.names_roles import NamesRolesProvisioningService
from pylti1p3.service_connector import ServiceConnector

from .. import db
from . import store
from .tool import http_session, registration

log = logging.getLogger(__name__)

SCORE_POLICIES = ("best", "latest")
FIRST_RETRY_SECONDS = 30
MAX_RETRY_SECONDS = 3600  # a platform down for a day is tried again every hour, and the grade is never dropped
TOOL_TAG = "attention-quiz"


def retry_delay(tries: int) -> timedelta:
    """30 s after the first failure, doubling, at most an hour."""
    return timedelta(seconds=min(FIRST_RETRY_SECONDS * 2 ** max(tries - 1, 0), MAX_RETRY_SECONDS))


def score_to_send(link: store.Link, user_sub: str):
    """(score, maximum) by the link's policy over the user's finished attempts, or None if none is finished."""
    finished = [a for a in store.user_attempts(link.id, user_sub) if a.finished_at is not None]
    if not finished:
        return None
    if link.score_policy == "latest":
        chosen = max(finished, key=lambda a: a.finished_at)
    else:
        chosen = max(finished, key=lambda a: (a.total_score / a.max_score if a.max_score else 0.0))
    return float(chosen.total_score), float(chosen.max_score)


def _service(link: store.Link) -> AssignmentsGradesService:
    platform = store.platform_by_id(link.platform_id)
    if platform is None:
        raise LtiException("the platform of this link is no longer registered")
    connector = ServiceConnector(registration(platform), http_session())
    claim = {"scope": link.ags_scopes or [], "lineitems": link.lineitems_url, "lineitem": link.lineitem_url}
    return AssignmentsGradesService(connector, {k: v for k, v in claim.items() if v})


def _lineitem_url(link: store.Link, ags: AssignmentsGradesService, maximum: float) -> str:
    """The link's line item, created at most once: one worker claims the creation, and first looks for an item
    it made before (a crash between creating and saving must not leave a duplicate column)."""
    if link.lineitem_url:
        return link.lineitem_url
    if not link.lineitems_url:
        raise LtiException("the platform gave this link neither a line item nor a line items URL")
    if not store.claim_lineitem_creation(link.id):
        raise LtiException("another worker is creating this link's grade column; retrying shortly")
    try:
        found = ags.find_lineitem_by_resource_link_id(link.resource_link_id) if ags.can_read_lineitem() else None
        if found is None:
            label = link.resource_title or f"Quiz: {link.bank_id}"
            found = ags.find_or_create_lineitem(
                LineItem().set_label(label).set_score_maximum(maximum).set_resource_id(link.bank_id)
                .set_resource_link_id(link.resource_link_id).set_tag(f"{TOOL_TAG}:{link.resource_link_id}"))
    except BaseException:
        store.set_lineitem(link.id, None)  # release the claim
        raise
    store.set_lineitem(link.id, found.get_id())
    return found.get_id()


def send(row) -> bool:
    """Send one queued grade; True if it reached the platform. Failures are stored with the next try's time."""
    link = store.link_by_id(row.link_id)
    try:
        if link is None or not link.ags_scopes:
            raise LtiException("the platform offers no grade service for this link")
        result = score_to_send(link, row.user_sub)
        if result is None:
            raise LtiException("the user has no finished attempt in this link")
        score, maximum = result
        ags = _service(link)
        url = _lineitem_url(link, ags, maximum)
        grade = (Grade().set_score_given(score).set_score_maximum(maximum).set_user_id(row.user_sub)
                 .set_timestamp(db.now().isoformat(timespec="milliseconds"))
                 .set_activity_progress("Completed").set_grading_progress("FullyGraded"))
        ags.put_grade(grade, LineItem({"id": url}))
    except Exception as error:  # noqa: BLE001 - whatever the platform answered, the grade stays queued
        tries = row.tries + 1
        store.grade_failed(row.id, tries, db.now() + retry_delay(tries), str(error) or repr(error))
        expected = isinstance(error, (LtiException, requests.RequestException, ValueError))
        (log.warning if expected else log.exception)("LTI grade for link %s not sent (try %d): %s",
                                                     row.link_id, tries, error)
        return False
    store.grade_sent(row.id, score, row.updated_at)
    return True


def send_due(limit: int = 50, stop_at_failure: bool = False, **where) -> tuple[int, int]:
    """Send queued grades whose time has come; (sent, failed). With stop_at_failure, none after the first failure."""
    sent = failed = 0
    for row in store.due_grades(limit, **where):
        if send(row):
            sent += 1
        else:
            failed += 1
            if stop_at_failure:
                break
    return sent, failed


def roster(platform_id: int, memberships_url: str | None) -> list[dict] | None:
    """The course's members from NRPS, or None when the platform does not offer it."""
    platform = store.platform_by_id(platform_id)
    if not memberships_url or platform is None:
        return None
    service = NamesRolesProvisioningService(ServiceConnector(registration(platform), http_session()),
                                            {"context_memberships_url": memberships_url})
    return service.get_members()
