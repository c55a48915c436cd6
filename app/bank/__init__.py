"""Question banks: the YAML format (schema), its loader with file:line:col errors, and the registry.

`init_app` loads every bank in QUIZ_DIR at start-up and registers the `validate-quizzes` command.
"""

from __future__ import annotations

from pathlib import Path

from flask import Flask, current_app

from .cli import validate_command
from .registry import BankRegistry


def init_app(app: Flask) -> None:
    from ..visuals import check_visual

    registry = BankRegistry(Path(app.config["QUIZ_DIR"]), check_visual)
    registry.load()
    app.extensions["banks"] = registry
    app.cli.add_command(validate_command)
    hot_reload = app.config.get("QUIZ_HOT_RELOAD")
    if hot_reload is None:
        hot_reload = app.debug
    if hot_reload:
        # Development: an edited YAML file is picked up on the next request, without a restart.
        @app.before_request
        def reload_changed_banks() -> None:
            registry.refresh_if_changed()


def banks() -> BankRegistry:
    return current_app.extensions["banks"]
