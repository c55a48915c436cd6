"""pylti1p3 wired to this app: the tool configuration read from the database, launch data and single-use
nonces in the database (every worker sees them), and the checks pylti1p3 leaves to the tool (aud/azp, exp/iat).
"""

from __future__ import annotations

import logging
import re
from functools import lru_cache
from urllib.parse import urlsplit

import requests
from cryptography.hazmat.primitives import serialization
from pylti1p3.contrib.flask import FlaskMessageLaunch, FlaskOIDCLogin, FlaskRequest
from pylti1p3.deployment import Deployment
from pylti1p3.exception import LtiException, OIDCException
from pylti1p3.launch_data_storage.base import LaunchDataStorage
from pylti1p3.registration import Registration
from pylti1p3.session import SessionService
from pylti1p3.tool_config import ToolConfAbstract

from ..errors import AppError
from ..web.limits import charge_lti_login
from ..web.progress import storable
from . import store

log = logging.getLogger(__name__)

HTTP_TIMEOUT_SECONDS = 10  # a platform that does not answer must not hold a worker forever
LAUNCH_DATA_SECONDS = 3600  # a deep-linking instructor has an hour to pick a bank
LOGIN_DATA_SECONDS = 600  # a login's nonce and state, used by the launch that follows it (the state cookie: 300 s)
CLAIM = "https://purl.imsglobal.org/spec/lti/claim/"
AGS = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
NRPS = "https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice"
DEEP_LINKING_SETTINGS = "https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings"
MAX_ID_LENGTH = 255  # LTI 1.3 caps its ids at 255 characters
RESOURCE_LINK_REQUEST = "LtiResourceLinkRequest"
DEEP_LINKING_REQUEST = "LtiDeepLinkingRequest"


class LaunchRefused(AppError):
    """A login or launch that failed validation: the sentence says which check failed, then (unless it says what to
    do itself) what the learner who sees it can do, since most of these checks are the integration's to fix."""

    status = 400
    title = "LTI launch refused"
    NEXT_STEP = ("If you came from your course, open the link there again; if it is refused again, show this page "
                 "to the LMS's administrator.")

    def __init__(self, message: str, says_what_to_do: bool = False):
        super().__init__(message if says_what_to_do else f"{message} {self.NEXT_STEP}")


class TimeoutSession(requests.Session):
    """requests has no default timeout; pylti1p3 calls get/post without one."""

    def request(self, method, url, **kwargs):
        kwargs.setdefault("timeout", HTTP_TIMEOUT_SECONDS)
        return super().request(method, url, **kwargs)


def http_session() -> requests.Session:
    session = TimeoutSession()
    session.headers["User-Agent"] = "attention-quiz LTI tool"
    return session


def registration(platform: store.Platform) -> Registration:
    private_key, public_pem = _signing_key(*store.current_key())
    return (Registration().set_issuer(platform.issuer).set_client_id(platform.client_id)
            .set_auth_login_url(platform.auth_login_url).set_auth_token_url(platform.auth_token_url)
            .set_key_set_url(platform.key_set_url).set_auth_audience(platform.auth_audience)
            .set_tool_private_key(private_key).set_tool_public_key(public_pem))


@lru_cache(maxsize=4)
def _signing_key(kid: str, private_pem: str):
    """The loaded private key and its public PEM, once per key: loading a 2048-bit RSA key checks it, which
    took 0.29 s here, and a launch builds a registration several times. pylti1p3 hands the key to PyJWT's
    jwt.encode, which takes a loaded key as well as a PEM string."""
    private_key = serialization.load_pem_private_key(private_pem.encode(), password=None)
    public_pem = private_key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    return private_key, public_pem


class DatabaseToolConf(ToolConfAbstract):
    """Registrations from `flask lti add-platform`: one issuer may have several client ids."""

    def check_iss_has_one_client(self, iss: str) -> bool:
        return False

    def check_iss_has_many_clients(self, iss: str) -> bool:
        return True

    def find_registration_by_issuer(self, iss, *args, **kwargs):
        return self.find_registration_by_params(iss, None)

    def find_registration_by_params(self, iss, client_id, *args, **kwargs):
        platform = store.find_platform(iss, client_id)
        return registration(platform) if platform else None

    def find_deployment(self, iss, deployment_id):
        return self.find_deployment_by_params(iss, deployment_id, None)

    def find_deployment_by_params(self, iss, deployment_id, client_id, *args, **kwargs):
        platform = store.find_platform(iss, client_id)
        if platform is None or deployment_id not in platform.deployment_ids:
            return None
        return Deployment().set_deployment_id(deployment_id)


class DatabaseLaunchData(LaunchDataStorage):
    """Keys are global (no per-browser prefix): the OIDC state cookie ties a launch to its browser."""

    def get_session_cookie_name(self):
        return None

    def can_set_keys_expiration(self) -> bool:
        return True

    def get_value(self, key):
        return store.get_value(self._prepare_key(key))

    def set_value(self, key, value, exp=None):
        store.put_value(self._prepare_key(key), value, exp or LAUNCH_DATA_SECONDS)

    def check_value(self, key) -> bool:
        return store.get_value(self._prepare_key(key)) is not None

    def take(self, key) -> bool:
        return store.take_value(self._prepare_key(key))


class DatabaseSessionService(SessionService):
    def __init__(self, flask_request):
        super().__init__(flask_request)
        self.set_data_storage(DatabaseLaunchData())
        self.data_storage.set_request(flask_request)

    def use_nonce(self, nonce: str) -> bool:
        """Consume the nonce: True once, for the first launch that presents it."""
        return self.data_storage.take(self._get_key("nonce", nonce))


def _services():
    flask_request = FlaskRequest()
    return flask_request, DatabaseSessionService(flask_request)


def login_redirect():
    """The OIDC third-party-initiated login: checks the issuer and client, and redirects to the platform."""
    flask_request, sessions = _services()
    target = flask_request.get_param("target_link_uri")
    if not target:
        raise LaunchRefused("The login request has no target_link_uri: the platform must send where to launch.")
    launch_url = _launch_url()
    if target.split("?")[0] != launch_url:
        raise LaunchRefused(f"The login asks to launch {target!r}, which is not this tool's launch URL "
                            f"({launch_url}). Set the platform's redirect URI and target link to it.")
    charge_lti_login()  # before anything is stored
    oidc = FlaskOIDCLogin(flask_request, DatabaseToolConf(), session_service=sessions)
    oidc.set_launch_data_lifetime(LOGIN_DATA_SECONDS)
    try:
        return oidc.redirect(launch_url)
    except OIDCException as error:
        raise LaunchRefused(_login_message(str(error), flask_request)) from None


def _login_message(reason: str, flask_request) -> str:
    if reason == "Could not find registration details":
        return (f"No platform is registered for issuer {flask_request.get_param('iss')!r} and client id "
                f"{flask_request.get_param('client_id')!r}. Register it with `flask --app app lti add-platform`.")
    return f"The login request was refused: {reason}."


def _launch_url() -> str:
    from flask import url_for

    return url_for("lti.launch", _external=True)


def validate_launch():
    """The validated launch, or LaunchRefused saying what failed. The nonce is used up only by a launch that
    passed every check, so a forged token cannot burn a real one."""
    flask_request, sessions = _services()
    launch = FlaskMessageLaunch(flask_request, DatabaseToolConf(), session_service=sessions,
                                requests_session=http_session())
    launch.set_launch_data_lifetime(LAUNCH_DATA_SECONDS)
    # exp and iat are required (PyJWT then checks exp is in the future and iat not); aud is checked below
    # against the registration pylti1p3 finds, since pylti1p3 does not pass an audience to PyJWT.
    launch.set_jwt_verify_options({"verify_aud": False, "require": ["exp", "iat"]})
    try:
        launch.validate()
        body = launch.get_launch_data()
        _check_audience(body, launch.get_client_id())
        _check_claims(body)
        message_type = body.get(CLAIM + "message_type")
        if message_type not in (RESOURCE_LINK_REQUEST, DEEP_LINKING_REQUEST):
            raise LtiException(f"message type {message_type!r} is not supported by this tool")
    except (LtiException, OIDCException) as error:
        raise LaunchRefused(_launch_message(str(error)), says_what_to_do=str(error) in _STATE_MESSAGES) from None
    except (ValueError, TypeError, KeyError, AttributeError) as error:
        # A token whose parts are well-formed base64 and JSON but not the shapes pylti1p3 expects.
        log.warning("malformed LTI launch: %r", error)
        raise LaunchRefused("The launch's id_token is malformed and could not be read.") from None
    if not sessions.use_nonce(body["nonce"]):
        raise LaunchRefused("This launch's nonce was already used: a launch can be used only once. Start again "
                            "from the course page.", says_what_to_do=True)
    return launch


def _check_audience(body: dict, client_id: str) -> None:
    audience = body.get("aud")
    audiences = audience if isinstance(audience, list) else [audience]
    if client_id not in audiences:
        raise LtiException(f"the id_token's audience {audience!r} does not include this tool's client id")
    azp = body.get("azp")
    if len(audiences) > 1 and azp is None:
        raise LtiException("the id_token has several audiences but no azp claim")
    if azp is not None and azp != client_id:
        raise LtiException(f"the id_token's azp {azp!r} is not this tool's client id")


def _check_claims(body: dict) -> None:
    """The shapes of the claims this tool reads, checked here once, so that a platform's mistake is refused with a
    sentence that names the claim rather than failing further in. Ids are stored as given, so one that no database
    can store (a control character, a lone surrogate) or longer than LTI's 255 characters is refused too."""
    def require(valid: bool, claim: str, shape: str) -> None:
        if not valid:
            raise LtiException(f"its {claim} must be {shape}")

    def strings(value) -> bool:
        return isinstance(value, list) and all(isinstance(item, str) for item in value)

    objects = {"context claim": CLAIM + "context", "resource_link claim": CLAIM + "resource_link",
               "custom claim": CLAIM + "custom", "grade service (AGS) claim": AGS, "roster service (NRPS) claim": NRPS,
               "deep_linking_settings claim": DEEP_LINKING_SETTINGS}
    for name, claim in objects.items():
        require(isinstance(body.get(claim, {}), dict), name, "a JSON object")
    require(strings(body.get(CLAIM + "roles", [])), "roles claim", "a list of strings")
    ags, nrps, deep_linking = body.get(AGS, {}), body.get(NRPS, {}), body.get(DEEP_LINKING_SETTINGS, {})
    require(strings(ags.get("scope", [])), "grade service scope", "a list of strings")
    for name, value in (("grade service lineitems", ags.get("lineitems")),
                        ("grade service lineitem", ags.get("lineitem")),
                        ("roster service context_memberships_url", nrps.get("context_memberships_url")),
                        ("deep_link_return_url", deep_linking.get("deep_link_return_url"))):
        require(value is None or isinstance(value, str), name, "a URL (a string)")
    if body.get(CLAIM + "message_type") == "LtiDeepLinkingRequest":  # the chosen quiz goes back to this URL
        require(web_url(deep_linking.get("deep_link_return_url")), "deep_link_return_url",
                "the http(s) URL the chosen quiz is sent back to")
    for name, value in (("user id (sub)", body.get("sub")), ("deployment id", body.get(CLAIM + "deployment_id")),
                        ("context id", body.get(CLAIM + "context", {}).get("id")),
                        ("resource link id", body.get(CLAIM + "resource_link", {}).get("id"))):
        require(value is None or isinstance(value, str), name, "a string")
        require(value is None or len(value) <= MAX_ID_LENGTH, name, f"at most {MAX_ID_LENGTH} characters long")
        require(value is None or all(map(storable, value)), name,
                "text, without control characters or lone surrogates")


def web_url(value) -> bool:
    """An http(s) URL with a host and nothing a Content-Security-Policy source could not hold (the deep linking
    return page allows its origin as a form-action)."""
    if not isinstance(value, str):
        return False
    parts = urlsplit(value)
    return parts.scheme in ("http", "https") and re.fullmatch(r"[A-Za-z0-9.\-]+(:\d{1,5})?|\[[0-9A-Fa-f:.]+\](:\d{1,5})?",
                                                               parts.netloc) is not None


_STATE_MESSAGES = {  # these say what to do themselves
    "Missing state param": "The launch has no state: start it from the course page, not from a bookmark.",
    "State not found": ("The launch's state does not match this browser's login (its cookie is missing or "
                        "different). Open the link again from the course; if the tool is in a frame, let "
                        "this site's cookies through or open the tool in a new window."),
}
_LAUNCH_MESSAGES = {
    **_STATE_MESSAGES,
    "Invalid Nonce": "The launch's nonce is unknown or expired: it was not issued by this tool's login.",
    "Unable to find deployment": "This deployment id is not registered for the platform.",
    "Registration not found.": ("No platform is registered for this issuer with the id_token's audience (aud) as "
                                "its client id."),
    "Client id not registered for this issuer": "The id_token's audience is not this tool's client id.",
}


def _launch_message(reason: str) -> str:
    if reason in _LAUNCH_MESSAGES:
        return _LAUNCH_MESSAGES[reason]
    if reason.startswith("Can't decode id_token: "):
        detail = reason.removeprefix("Can't decode id_token: ")
        return f"The id_token failed verification against the platform's keys: {detail}."
    return f"The launch was refused: {reason}."


def launch_from_cache(launch_id: str):
    """A launch stored by validate_launch (for the deep-linking form, posted later by the same instructor)."""
    flask_request, sessions = _services()
    try:
        return FlaskMessageLaunch.from_cache(launch_id, flask_request, DatabaseToolConf(),
                                             session_service=sessions, requests_session=http_session())
    except LtiException:
        raise LaunchRefused("This deep-linking request has expired or is unknown. Start it again from the "
                            "course.", says_what_to_do=True) from None
