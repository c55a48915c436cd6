"""app/ uses matplotlib's public API only: no private module, name or attribute (one that starts with `_`),
which any minor release may change, and no pyplot, whose global state does not belong in a server."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

APP = Path(__file__).resolve().parent.parent / "app"


def _private(name: str) -> bool:
    """`_name`, not a dunder and not the throwaway `_`."""
    return name.startswith("_") and name.strip("_") != "" and not (name.startswith("__") and name.endswith("__"))


def _matplotlib_path(module: str | None) -> bool:
    return module is not None and module.split(".")[0] == "matplotlib"


def _defined_names(statement: ast.stmt) -> list[str]:
    """The names a class-body statement defines: a method, or the targets of an assignment."""
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return [statement.name]
    targets = statement.targets if isinstance(statement, ast.Assign) else [getattr(statement, "target", None)]
    return [target.id for target in targets if isinstance(target, ast.Name)]


def private_uses(source: str) -> list[str]:
    """Each private matplotlib name `source` touches, as "line: what".

    - An import of a private matplotlib module or name (`matplotlib._api`, `from matplotlib.text import _x`).
    - In a module that imports matplotlib, where any object may be a matplotlib one: an attribute
      `x._name` on anything but `self`/`cls` (the module's own objects), and `getattr(x, "_name")`.
    - In a class derived from a matplotlib class, any `_name` it defines or reaches through `self`/`cls`:
      it cannot be told apart from a private hook or attribute of the base class, so such classes
      keep to public names.
    """
    tree = ast.parse(source)
    found = []
    matplotlib_names: set[str] = set()  # names bound by matplotlib imports
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if _matplotlib_path(alias.name):
                    matplotlib_names.add((alias.asname or alias.name).split(".")[0])
                    if any(map(_private, alias.name.split("."))):
                        found.append(f"{node.lineno}: import {alias.name}")
        elif isinstance(node, ast.ImportFrom) and _matplotlib_path(node.module):
            if any(map(_private, node.module.split("."))):
                found.append(f"{node.lineno}: from {node.module} import ...")
            for alias in node.names:
                matplotlib_names.add(alias.asname or alias.name)
                if _private(alias.name):
                    found.append(f"{node.lineno}: from {node.module} import {alias.name}")
    if not matplotlib_names:
        return found  # no matplotlib object is made here: `_` names are the module's own
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            if not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                found.append(f"{node.lineno}: {ast.unparse(node)}")
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id in ("getattr", "hasattr", "setattr", "delattr") and len(node.args) >= 2
              and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)
              and _private(node.args[1].value)):
            found.append(f"{node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.ClassDef) and any(
                isinstance(base, (ast.Name, ast.Attribute))
                and ast.unparse(base).split(".")[0] in matplotlib_names for base in node.bases):
            for statement in node.body:  # the class's own methods and attributes
                found += [f"{statement.lineno}: {node.name}.{name} (defined)"
                          for name in _defined_names(statement) if _private(name)]
            for inner in ast.walk(node):
                if (isinstance(inner, ast.Attribute) and _private(inner.attr)
                        and isinstance(inner.value, ast.Name) and inner.value.id in ("self", "cls")):
                    found.append(f"{inner.lineno}: {node.name}: {ast.unparse(inner)}")
    return sorted(set(found), key=lambda use: int(use.split(":")[0]))


def pyplot_imports(source: str) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(source)):
        names = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                 else [f"{node.module}.{alias.name}" for alias in node.names]
                 if isinstance(node, ast.ImportFrom) and node.module else [])
        found += [f"{node.lineno}: {name}" for name in names if name.startswith(("matplotlib.pyplot", "pylab"))]
    return found


def app_modules() -> list[Path]:
    return sorted(APP.rglob("*.py"))


def test_app_touches_no_private_matplotlib_name():
    offences = [f"{path.relative_to(APP.parent)}:{use}"
                for path in app_modules() for use in private_uses(path.read_text(encoding="utf-8"))]
    assert not offences, "private matplotlib names (use the public API):\n" + "\n".join(offences)


def test_app_never_imports_pyplot():
    offences = [f"{path.relative_to(APP.parent)}:{use}"
                for path in app_modules() for use in pyplot_imports(path.read_text(encoding="utf-8"))]
    assert not offences, "pyplot keeps global state; use matplotlib.figure.Figure:\n" + "\n".join(offences)


@pytest.mark.parametrize("source", [
    "from matplotlib.figure import Figure\ndef f(ax):\n    return ax.xaxis._update_ticks()",
    "from matplotlib.figure import Figure\nfig = Figure()\nfig._supxlabel",
    "import matplotlib\nfont = None\nfont._render_glyph(1)",
    "from matplotlib._api import check_isinstance",
    "import matplotlib._layoutgrid",
    "from matplotlib.text import _get_textbox",
    "def f(ax):\n    from matplotlib.ticker import MaxNLocator\n    return getattr(ax, '_colorbar_info', None)",
    "from matplotlib.backends.backend_agg import RendererAgg\nclass R(RendererAgg):\n"
    "    def _get_font_height_metrics(self, prop):\n        return None",
    "from matplotlib.layout_engine import LayoutEngine\nclass L(LayoutEngine):\n    _adjust_compatible = False",
    "import matplotlib.backends.backend_agg as agg\nclass R(agg.RendererAgg):\n"
    "    def draw_text(self, *a):\n        self._draw_text_glyphs_and_boxes(*a)",
], ids=["tick update", "figure attribute", "font method", "private module", "private submodule",
        "private function", "getattr string", "overridden hook", "class attribute", "inherited method"])
def test_the_check_finds_private_uses(source):
    assert private_uses(source)


@pytest.mark.parametrize("source", [
    "import threading\nclass Cache:\n    def __init__(self):\n        self._lock = threading.Lock()\n"
    "def f(cache):\n    return cache._lock",  # no matplotlib: the app's own private names
    "from matplotlib.figure import Figure\nclass Plot:\n    def __init__(self):\n        self._figure = Figure()\n"
    "    def _draw(self):\n        return self._figure.__class__",
    "from matplotlib.figure import Figure\n_CACHE = {}\ndef _helper():\n    return _CACHE",
], ids=["own private attribute", "own class", "own module names"])
def test_the_check_allows_the_apps_own_names(source):
    assert not private_uses(source)


def test_the_check_finds_pyplot():
    assert pyplot_imports("import matplotlib.pyplot as plt")
    assert pyplot_imports("from matplotlib import pyplot")
    assert not pyplot_imports("from matplotlib.figure import Figure")
