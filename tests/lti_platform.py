"""An LMS for the LTI tests: the `lti1p3platform` library (written by others, from PyPI) behind a small Flask app,
served on 127.0.0.1 as its own HTTP server. It starts logins, signs id_tokens, issues access tokens, keeps a
grade book (AGS), a roster (NRPS), and accepts deep-linking responses, all through the library's classes.

Only the web glue (routes, request/response adapters, in-memory storage) is written here, as a platform
integrating the library must write it.
"""

from __future__ import annotations

import html
import itertools
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from flask import Flask, jsonify, redirect, request
from jwcrypto.jwk import JWK
from lti1p3platform.exceptions import LtiException, LtiServiceException, PreflightRequestValidationException
from lti1p3platform.ltiplatform import LTI1P3PlatformConfAbstract
from lti1p3platform.membership import Context
from lti1p3platform.message_launch import LTIAdvantageMessageLaunchAbstract
from lti1p3platform.oidc_login import OIDCLoginAbstract
from lti1p3platform.registration import Registration
from lti1p3platform.request import Request
from lti1p3platform.score import UpdateScoreStatus
from lti1p3platform.service_connector import AssignmentsGradesService, NamesRoleProvisioningService

from conftest import LiveServer

LEARNER = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"
INSTRUCTOR = "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"


@dataclass
class PendingLaunch:
    user: str
    roles: list[str]
    context: str
    resource_link: str | None
    name: str | None = None
    deep_link: bool = False
    custom: dict | None = None
    extra_claims: dict = field(default_factory=dict)  # e.g. a wrong "aud", to test the tool refuses it
    expires_in: int = 300
    deployment_id: str | None = None
    lineitem: str | None = None  # a line item the platform made for this link (as after deep linking)
    ags: bool = True
    nrps: bool = True


class FlaskPlatformRequest(Request):
    def build_metadata(self, flask_request) -> dict:
        return {"method": flask_request.method, "form_data": flask_request.form.to_dict(),
                "get_data": flask_request.args.to_dict(), "headers": flask_request.headers,
                "content_type": flask_request.content_type, "path": flask_request.path,
                "json": flask_request.get_json(silent=True)}


class Platform:
    """The LMS's state, and the registration of one tool (as an LMS administrator would enter it)."""

    def __init__(self, issuer_suffix: str = ""):
        key = JWK.generate(kty="RSA", size=2048)
        self.private_pem = key.export_to_pem(private_key=True, password=None).decode()
        self.public_pem = key.export_to_pem().decode()
        self.client_id = "quiz-tool-client"
        self.deployment_id = "deployment-1"
        self.issuer_suffix = issuer_suffix
        self.url = ""  # set when served
        self.tool_url = ""  # the tool's base URL, set by the test
        self.pending: dict[str, PendingLaunch] = {}
        self.lineitems: dict[str, dict[str, dict]] = {}  # context -> line item number -> line item
        self.scores: dict[str, dict[str, dict]] = {}  # line item id (URL) -> user -> the last score posted
        self.members: dict[str, list[dict]] = {}  # context -> NRPS members
        self.deep_link_items: list[list[dict]] = []
        self.refuse_scores = False  # the grade service is down (503)
        self.token_delay = 0.0  # seconds the token endpoint takes to answer (a slow platform)
        self.score_posts = 0
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    @property
    def issuer(self) -> str:
        return self.url + self.issuer_suffix

    def registration(self) -> Registration:
        tool = self.tool_url
        return (Registration().set_iss(self.issuer).set_client_id(self.client_id)
                .set_deployment_id(self.deployment_id).set_oidc_login_url(f"{tool}/lti/login")
                .set_launch_url(f"{tool}/lti/launch").set_deeplink_launch_url(f"{tool}/lti/launch")
                .set_tool_key_set_url(f"{tool}/lti/jwks").set_platform_public_key(self.public_pem)
                .set_platform_private_key(self.private_pem))

    def start_url(self, launch: PendingLaunch) -> str:
        """The link a user clicks in the course; the launch's details wait here under an opaque hint."""
        hint = f"launch-{next(self._ids)}"
        self.pending[hint] = launch
        return f"{self.url}/start/{hint}"

    def gradebook(self, context: str) -> dict[str, dict[str, dict]]:
        """Line item label -> user -> score, for one course."""
        return {item["label"]: self.scores.get(item["id"], {}) for item in self.lineitems.get(context, {}).values()}

    def score_of(self, context: str, label: str, user: str, given: float, seconds: float = 20) -> dict:
        """The user's score in that line item once its scoreGiven is `given`: the tool sends a grade after the
        response that finished the attempt, so it arrives a moment later."""
        deadline = time.monotonic() + seconds
        while True:
            score = self.gradebook(context).get(label, {}).get(user)
            if (score and score["scoreGiven"] == given) or time.monotonic() > deadline:
                assert score and score["scoreGiven"] == given, (given, self.gradebook(context))
                return score
            time.sleep(0.05)


class Config(LTI1P3PlatformConfAbstract):
    def init_platform_config(self, **kwargs: Any) -> None:
        self.platform: Platform = kwargs["platform"]
        self.deployment_id = kwargs.get("deployment_id")

    def get_registration_by_params(self, **kwargs: Any) -> Registration:
        registration = self.platform.registration()
        if self.deployment_id:
            registration.set_deployment_id(self.deployment_id)
        return registration


class Login(OIDCLoginAbstract):
    def set_lti_message_hint(self, **kwargs: Any) -> None:
        self._lti_message_hint = kwargs["hint"]

    def get_redirect(self, url: str):
        return redirect(url)


class Launch(LTIAdvantageMessageLaunchAbstract):
    def render_launch_form(self, launch_data: dict, **kwargs: Any):
        # The library's own template needs pkg_resources; this is the same auto-posting form.
        e = html.escape
        return (f'<!doctype html><form method="POST" action="{e(launch_data["launch_url"])}">'
                f'<input type="hidden" name="id_token" value="{e(launch_data["id_token"])}">'
                f'<input type="hidden" name="state" value="{e(launch_data["state"])}"></form>'
                "<script>document.forms[0].submit();</script>")


class Grades(AssignmentsGradesService):
    def __init__(self, platform: Platform, context: str, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.platform, self.context = platform, context

    def _items(self) -> dict[str, dict]:
        return self.platform.lineitems.setdefault(self.context, {})

    def find_lineitems(self, page=1, limit=None, line_item_id=None, resource_link_id=None, resource_id=None,
                       tag=None):
        items = [i for i in self._items().values()
                 if (resource_link_id is None or i.get("resourceLinkId") == resource_link_id)
                 and (resource_id is None or i.get("resourceId") == resource_id)
                 and (tag is None or i.get("tag") == tag)]
        return {"content": items, "has_next": False, "next": None}

    def find_lineitem(self, line_item_id):
        return self._items()[line_item_id]

    def create_lineitem(self, creation_data):
        with self.platform._lock:
            number = str(len(self._items()) + 1)
            item = {**creation_data, "id": f"{self.ags.lineitems_url}/{number}"}
            self._items()[number] = item
        return item

    def update_lineitem(self, update_data):
        raise LtiServiceException("not used by these tests", 405)

    def delete_lineitem(self, line_item_id):
        raise LtiServiceException("not used by these tests", 405)

    def update_score(self, line_item_id, score):
        item = self._items()[line_item_id]
        self.platform.scores.setdefault(item["id"], {})[score["userId"]] = score
        self.platform.score_posts += 1
        return UpdateScoreStatus.SUCCESS

    def get_results(self, line_item_id, page=1, limit=None, user_id=None):
        item = self._items()[line_item_id]
        results = [{"userId": u, "resultScore": s["scoreGiven"], "resultMaximum": s["scoreMaximum"]}
                   for u, s in self.platform.scores.get(item["id"], {}).items()]
        return {"content": results, "has_next": False, "next": None}


class Roster(NamesRoleProvisioningService):
    def __init__(self, platform: Platform, context: str, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.platform, self.context = platform, context

    def get_member_data_page(self, page=1, limit=None, role=None, since=None):
        return {"content": [dict(m) for m in self.platform.members.get(self.context, [])], "has_next": False}

    def get_context_by_id(self):
        return Context(id=self.context, label=self.context, title=f"Course {self.context}")


def _json(response):
    """The library's Response as HTTP, as its Django adapter does it."""
    if 200 <= response.code < 300:
        data = response.result["content"] if isinstance(response.result, dict) and "content" in response.result \
            else response.result
        reply = jsonify(data)
        reply.status_code = response.code
        reply.content_type = response.media_type
        return reply
    return jsonify({"error": response.message}), response.code


def make_app(platform: Platform) -> Flask:
    app = Flask("lti-test-platform")
    app.config["SESSION_COOKIE_NAME"] = "platform_session"  # never sent: this app keeps no session

    def config(deployment_id=None) -> Config:
        conf = Config(platform=platform, deployment_id=deployment_id)
        conf.get_registration()
        return conf

    @app.get("/start/<hint>")
    def start(hint):
        launch = platform.pending[hint]
        login = Login(FlaskPlatformRequest(request), config(launch.deployment_id))
        login.set_lti_message_hint(hint=hint)
        if launch.deep_link:
            login.set_deeplinking_launch_url()
        return login.initiate_login(launch.user)

    @app.get("/authorize")
    def authorize():
        hint = request.args.get("lti_message_hint", "")
        launch = platform.pending.get(hint)
        if launch is None or request.args.get("login_hint") != launch.user:
            return "unknown login", 400
        registration = platform.registration()
        if request.args.get("redirect_uri") != registration.get_launch_url():
            return "redirect_uri is not the registered launch URL", 400
        message = Launch(FlaskPlatformRequest(request), config(launch.deployment_id))
        message.set_user_data(launch.user, launch.roles, full_name=launch.name)
        message.set_launch_context_claim(launch.context, context_title=f"Course {launch.context}")
        if launch.resource_link:
            message.set_resource_link_claim(launch.resource_link, title=f"Quiz link {launch.resource_link}")
        if launch.custom:
            message.set_custom_parameters_claim(launch.custom)
        if launch.ags:
            message.set_ags(f"{platform.url}/contexts/{launch.context}/lineitems", launch.lineitem)
        if launch.nrps:
            message.set_nrps(f"{platform.url}/contexts/{launch.context}/memberships")
        if launch.deep_link:
            message.set_dl(f"{platform.url}/deep-link-return", title="Add a quiz", accept_types={"ltiResourceLink"})
        message.set_id_token_expiration(launch.expires_in)
        message.set_extra_claims(launch.extra_claims)
        try:
            return message.lti_launch()
        except PreflightRequestValidationException:
            return "bad authorization request", 400

    @app.get("/jwks")
    def jwks():
        return jsonify(config().get_jwks())

    @app.post("/token")
    def token():
        time.sleep(platform.token_delay)
        try:
            return jsonify(config().get_access_token(request.form.to_dict()))
        except Exception as error:  # noqa: BLE001 - any refusal is a 400 for the tool, as in an LMS
            return jsonify({"error": "invalid_client", "detail": repr(error)}), 400

    def grades(context):
        lineitems = f"{platform.url}/contexts/{context}/lineitems"
        return Grades(platform, context, FlaskPlatformRequest(request), config(), lineitems)

    @app.route("/contexts/<context>/lineitems", methods=["GET", "POST"])
    def lineitems(context):
        service = grades(context)
        handler = service.handle_get_lineitems if request.method == "GET" else service.handle_create_lineitem
        return _json(service.handle_resp(handler))

    @app.get("/contexts/<context>/lineitems/<number>")
    def lineitem(context, number):
        service = grades(context)
        return _json(service.handle_resp(service.handle_get_lineitem, line_item_id=number))

    @app.post("/contexts/<context>/lineitems/<number>/scores")
    def scores(context, number):
        if platform.refuse_scores:
            return jsonify({"error": "grade service unavailable"}), 503
        service = grades(context)
        return _json(service.handle_resp(service.handle_update_score, line_item_id=number))

    @app.get("/contexts/<context>/memberships")
    def memberships(context):
        service = Roster(platform, context, FlaskPlatformRequest(request), config(),
                         f"{platform.url}/contexts/{context}/memberships")
        return _json(service.handle_resp(service.handle_get_members))

    @app.post("/deep-link-return")
    def deep_link_return():
        try:
            items = config().validate_deeplinking_resp({"JWT": request.form.get("JWT", "")})
        except LtiException as error:
            return f"deep linking response refused: {error}", 400
        platform.deep_link_items.append(items)
        return f"added {len(items)} item(s)"

    return app


class PlatformServer(LiveServer):
    """The platform on a live server of its own, on 127.0.0.1."""

    def __init__(self, platform: Platform):
        super().__init__(make_app(platform))
        self.platform = platform
        platform.url = self.url
