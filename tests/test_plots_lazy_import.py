"""Registering the visual kinds must not import matplotlib: it costs about a second of cold start,
and only drawing a figure needs it."""

from __future__ import annotations

from conftest import run_python


def test_kinds_register_validate_and_describe_their_controls_without_matplotlib():
    out = run_python("""
        import sys
        import app.visuals.kinds
        from app.visuals import KINDS, check_visual, get_kind

        assert len(KINDS) == 10, sorted(KINDS)
        for name, kind in KINDS.items():
            kind.parse({})  # default params
            assert check_visual(name, {}) == []
            assert check_visual(name, {"no_such_param": 1})  # a validation error, described
            assert kind.controls and kind.title
        print(sorted(m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")))
    """)
    assert out == "[]"


def test_rendering_still_imports_matplotlib_and_draws():
    out = run_python("""
        import sys
        from app.visuals import get_kind

        kind = get_kind("long-range")
        assert "matplotlib" not in sys.modules
        rendered = kind.render(kind.parse({}))
        print("matplotlib" in sys.modules, rendered.image[:8] == b"\\x89PNG\\r\\n\\x1a\\n")
    """)
    assert out == "True True"
