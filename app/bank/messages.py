"""The one translator from pydantic's validation errors to sentences that say what to fix.

The bank loader prints them after a field path (`questions[4].options[1].correct: expected a boolean ...`);
a visual's parameters name themselves (`d_model must be at most 64, got 100`), on a page as in a bank.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from typing import Any

MAX_SHOWN = 40  # characters of a bad value quoted back


def describe_value(value: Any) -> str:
    """A value as a bank author wrote it: YAML's words for true/false/null, short quoted text."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "nothing (null)"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        shown = value if len(value) <= MAX_SHOWN else value[:MAX_SHOWN - 3] + "..."
        return repr(shown)
    if isinstance(value, int) and abs(value) >= 10**MAX_SHOWN:  # and repr() refuses 4300+ digits
        return f"a number of more than {MAX_SHOWN} digits"
    return repr(value)


# What a value had to be, by pydantic error type: "expected <this>" after a path, "<name> must be <this>".
_EXPECTED = {
    "bool_type": "a boolean (true or false)", "bool_parsing": "a boolean (true or false)",
    "string_type": "text",
    "int_type": "a whole number", "int_parsing": "a whole number", "int_from_float": "a whole number",
    "float_type": "a number", "float_parsing": "a number", "finite_number": "a finite number",
    "literal_error": None, "enum": None,  # one of the ctx's expected values
    "dict_type": "a mapping of fields (key: value lines)", "model_type": "a mapping of fields (key: value lines)",
    "model_attributes_type": "a mapping of fields (key: value lines)",
    "list_type": "a list (lines starting with '- ')", "tuple_type": "a list (lines starting with '- ')",
}
_BOUNDS = {"greater_than_equal": ("ge", "at least"), "greater_than": ("gt", "greater than"),
           "less_than_equal": ("le", "at most"), "less_than": ("lt", "less than")}
_YAML_1_1_BOOLEANS = {"yes", "no", "on", "off", "y", "n"}


def closest(unknown: str, allowed: Sequence[str]) -> str | None:
    """The allowed name an unknown one is most likely a misspelling of, if any is close."""
    return next(iter(difflib.get_close_matches(unknown, allowed, n=1)), None)


def describe_pydantic_error(item: dict, *, name: str | None = None, allowed: Sequence[str] = ()) -> str:
    """One sentence for one item of `ValidationError.errors()`.

    Without `name` it follows a field path; with `name` (a visual's parameter) it starts with that
    name and stands alone. `allowed` lists the valid field names, for an unknown field's hint.
    """
    kind, value, ctx, loc = item["type"], item.get("input"), item.get("ctx") or {}, tuple(item["loc"])
    got = describe_value(value)
    subject = f"{name} " if name else ""
    if kind == "missing":
        return f"the parameter '{name}' is required" if name else "this required field is missing; add it"
    if kind == "extra_forbidden":
        unknown = str(loc[-1]) if loc else ""
        message = f"unknown {'parameter' if name else 'field'} '{unknown}'"
        close = closest(unknown, allowed)
        if close:
            message += f"; did you mean '{close}'?"
        return message + (f" (allowed: {', '.join(allowed)})" if allowed else "")
    if kind == "finite_number" and name:
        return f"{name} must be a number, got {got}"  # a student typed "nan" into a control
    if kind in _EXPECTED:
        expected = _EXPECTED[kind] or f"one of {ctx.get('expected')}"
        message = f"{name} must be {expected}, got {got}" if name else f"expected {expected}, got {got}"
        if kind == "string_type":
            message += "; put it in quotes"
        if kind == "bool_type" and isinstance(value, str) and value.lower() in _YAML_1_1_BOOLEANS:
            message += "; banks are read as YAML 1.2, where this word is text, so write true or false"
        return message
    if kind in _BOUNDS:
        bound, relation = _BOUNDS[kind]
        return f"{subject}must be {relation} {ctx.get(bound)}, got {got}"
    if kind == "string_too_long":
        return f"{subject}must be at most {ctx.get('max_length')} characters"
    if kind == "string_too_short" or (kind == "too_short" and isinstance(value, str)):
        return f"{name} must not be empty" if name else \
            "must not be empty; write the text, or remove the field if it is optional"
    if kind == "too_short":
        return f"{subject}must have at least {ctx.get('min_length')} item(s)"
    if kind == "too_long":
        return f"{subject}must have at most {ctx.get('max_length')} item(s), got {ctx.get('actual_length')}"
    if kind == "string_pattern_mismatch" and not name:
        return _pattern_message(loc, value)
    if kind == "value_error":  # a validator's own sentence
        return str(ctx.get("error", item["msg"]))
    return f"{name}: {item['msg']}" if name else item["msg"]


def _pattern_message(loc: tuple, value: Any) -> str:
    if loc and loc[-1] == "learn":
        return (f"{describe_value(value)} is not a link this app will follow: use a site path like "
                "'/learn/attention#soft-lookup' or an http(s):// URL")
    if "params" in loc:
        shown = loc[-2] if loc[-1] == "[key]" else value
        return (f"{describe_value(shown)} is not a valid param name: use lowercase letters, "
                "digits and '_' (at most 32 characters), starting with a letter or '_'")
    return (f"{describe_value(value)} is not a valid id: use lowercase letters, digits, '-' and '_' "
            "(at most 64 characters), starting with a letter or digit")
