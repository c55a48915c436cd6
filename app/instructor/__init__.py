"""The instructor area: a password-protected dashboard with item analysis, charts and a CSV export.

`init_app` registers the blueprint and the `hash-password` and `regrade` commands, and logs a misconfigured hash.
"""

from __future__ import annotations

import logging

import click
from flask import Flask
from werkzeug.security import generate_password_hash

# regrade defines the regrades table on app.db.metadata before db.init_app's migrate runs.
from . import auth, regrade

log = logging.getLogger(__name__)

MIN_PASSWORD_LENGTH = 8


@click.command("hash-password")
def hash_password_command() -> None:
    """Print a hash of an instructor password for FLASK_INSTRUCTOR_PASSWORD_HASH (the password is prompted)."""
    password = click.prompt("Instructor password", hide_input=True, confirmation_prompt=True, err=True)
    if len(password) < MIN_PASSWORD_LENGTH:
        raise click.UsageError(f"Use at least {MIN_PASSWORD_LENGTH} characters.")
    click.echo(generate_password_hash(password))
    click.echo(f"Set it in single quotes (the hash contains '$'): export {auth.ENV_VAR}='<the line above>'",
               err=True)


def init_app(app: Flask) -> None:
    from . import preview  # noqa: F401  (adds the preview routes to the blueprint)
    from .views import bp

    app.config.setdefault(auth.CONFIG_KEY, None)
    app.register_blueprint(bp)
    app.cli.add_command(hash_password_command)
    app.cli.add_command(regrade.regrade_command)
    value = app.config.get(auth.CONFIG_KEY)
    problem = auth.hash_problem(value.strip() if isinstance(value, str) and value.strip() else None)
    if problem:
        log.warning("instructor sign-in is disabled: %s", problem)
