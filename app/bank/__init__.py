"""Question banks: the YAML format (schema), its loader with file:line:col errors, and the registry.

`init_app` loads every bank in QUIZ_DIR at start-up, registers the `validate-quizzes` command and, with
QUIZ_HOT_RELOAD, re-reads changed bank files in the background.
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
        # An edited bank file is re-read by a background thread, without a restart; requests never wait
        # for it (a 5,000-question bank takes seconds to validate). Started on a request, so in the worker.
        @app.before_request
        def watch_bank_files() -> None:
            registry.watch()


def banks() -> BankRegistry:
    return current_app.extensions["banks"]
