"""Where the app finds its templates, static files and bundled quiz banks.

A source checkout keeps them at the repository's top level; a built wheel ships them inside the
package as `app/templates`, `app/static` and `app/quizzes` (see pyproject.toml), so both layouts work.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent


def resource_dir(name: str) -> Path:
    """Return the directory `name` ('templates', 'static' or 'quizzes') for this installation."""
    packaged = _PACKAGE_DIR / name
    if packaged.is_dir():
        return packaged
    return _PACKAGE_DIR.parent / name
