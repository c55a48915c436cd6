"""`flask lti ...`: register platforms and deployments, print the tool's URLs, rotate its key, send queued grades."""

from __future__ import annotations

from urllib.parse import urlsplit

import click
from flask import current_app, url_for
from flask.cli import AppGroup, with_appcontext

from .. import db
from . import store


def _url(value: str, option: str) -> str:
    parts = urlsplit(value)
    if parts.scheme not in ("https", "http") or not parts.netloc:
        raise click.BadParameter(f"{value!r} is not an http(s) URL", param_hint=option)
    return value


@click.group("lti", cls=AppGroup)
@with_appcontext
def lti_group() -> None:
    """LTI 1.3: platforms (LMSs) this tool trusts, its signing key, and grade passback."""
    db.schema_ready()  # every lti command reads or writes the database


@lti_group.command("add-platform")
@click.option("--issuer", required=True, help="The platform's issuer (iss), e.g. https://canvas.instructure.com")
@click.option("--client-id", required=True, help="The client id the platform gave this tool")
@click.option("--auth-url", required=True, help="The platform's OIDC authorization (auth login) URL")
@click.option("--token-url", required=True, help="The platform's OAuth2 access token URL")
@click.option("--jwks-url", required=True, help="The platform's public keyset (JWKS) URL")
@click.option("--deployment-id", "deployment_ids", multiple=True, required=True,
              help="A deployment id the platform assigned (repeat the option for several)")
@click.option("--audience", default=None, help="The token endpoint's audience, if not its URL (rare)")
def add_platform(issuer, client_id, auth_url, token_url, jwks_url, deployment_ids, audience) -> None:
    """Register a platform, or add deployments (and update URLs) of one already registered."""
    platform, added = store.add_platform(
        issuer.strip(), client_id.strip(), _url(auth_url, "--auth-url"), _url(token_url, "--token-url"),
        _url(jwks_url, "--jwks-url"), [d.strip() for d in deployment_ids if d.strip()], audience)
    click.echo(f"registered {platform.issuer} (client id {platform.client_id}); deployments: "
               f"{', '.join(platform.deployment_ids)}" + (f" (new: {', '.join(added)})" if added else ""))


@lti_group.command("list-platforms")
def list_platforms() -> None:
    """List the registered platforms with their URLs and deployments."""
    listed = store.list_platforms()
    if not listed:
        click.echo("no platform is registered; add one with `flask --app app lti add-platform`")
    for p in listed:
        click.echo(f"{p.issuer}  client id {p.client_id}\n  auth {p.auth_login_url}\n  token {p.auth_token_url}"
                   f"\n  jwks {p.key_set_url}\n  deployments {', '.join(p.deployment_ids) or '(none)'}")


@lti_group.command("remove-platform")
@click.option("--issuer", required=True)
@click.option("--client-id", required=True)
@click.option("--deployment-id", "deployment_ids", multiple=True,
              help="Remove only these deployments (repeatable); without it the whole registration goes")
def remove_platform(issuer, client_id, deployment_ids) -> None:
    """Remove a registration (its links, LTI attempts' mapping and queued grades go with it) or some deployments."""
    done = store.remove_platform(issuer, client_id, list(deployment_ids))
    if done is None:
        raise click.ClickException(f"nothing registered matches issuer {issuer!r}, client id {client_id!r}"
                                   + (f", deployments {', '.join(deployment_ids)}" if deployment_ids else ""))
    click.echo(done)


@lti_group.command("tool-info")
@click.option("--base-url", required=True, help="The public address of this app, e.g. https://quiz.example.org")
def tool_info(base_url) -> None:
    """Print the URLs and public key to enter on the platform's side."""
    base = _url(base_url.rstrip("/"), "--base-url")
    parts = urlsplit(base)
    with current_app.test_request_context(base_url=base, environ_overrides={"wsgi.url_scheme": parts.scheme}):
        for label, endpoint in (("OIDC login (initiate login) URL", "lti.login"),
                                ("Launch / redirect URL", "lti.launch"),
                                ("Deep linking URL", "lti.launch"),
                                ("Public keyset (JWKS) URL", "lti.jwks")):
            click.echo(f"{label}: {url_for(endpoint, _external=True)}")
    kid, _ = store.current_key()
    click.echo(f"Current key id (kid): {kid}")


@lti_group.command("rotate-key")
def rotate_key() -> None:
    """Sign with a new RSA key from now on; the old one stays in the JWKS until `retire-keys`."""
    click.echo(f"new signing key {store.rotate_key()}; keep the old key published until every platform has "
               "fetched the JWKS again (a day is safe), then run `flask --app app lti retire-keys`")


@lti_group.command("retire-keys")
def retire_keys() -> None:
    """Remove every key but the current one from the JWKS."""
    click.echo(f"retired {store.retire_keys()} old key(s)")


@lti_group.command("send-grades")
@click.option("--limit", default=500, show_default=True, help="At most this many queued grades")
def send_grades(limit) -> None:
    """Close the attempts whose time limit has ended, then send the queued grades whose retry time has come (run
    it from cron, e.g. every 5 minutes)."""
    from ..bank import banks
    from ..web import progress
    from .grades import send_due  # pylti1p3 and requests, for this command only (see app.lti)

    closed = sum(progress.close_overdue(bank) for bank in banks().banks.values())
    if closed:
        click.echo(f"closed {closed} attempt(s) whose time limit had ended")
    sent, failed = send_due(limit=limit)
    click.echo(f"sent {sent} grade(s), {failed} failed and stay queued")
