"""A non-editable install must carry the templates, static files and bundled banks inside the wheel."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # pip builds the wheel in its own process

ROOT = Path(__file__).resolve().parent.parent


def test_wheel_ships_templates_static_and_quizzes(tmp_path):
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp_path), str(ROOT)],
        check=True, capture_output=True,
    )
    wheel = next(tmp_path.glob("attention_quiz-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    for required in ["app/templates/base.html", "app/templates/quiz/answer.html", "app/templates/errors/404.html",
                     "app/static/style.css", "app/quizzes/attention-transformers.yaml", "app/bank/loader.py"]:
        assert required in names, f"{required} is missing from the wheel"
    for source in ROOT.glob("templates/**/*.html"):
        assert f"app/templates/{source.relative_to(ROOT / 'templates').as_posix()}" in names
