"""A course link's assessment settings: attempts, time limit, opens/closes and shuffle, overriding the bank's for
that one placement. They come from the deep-linking form and then from every launch's platform-signed custom
parameters, and are validated by the bank's own schema, with the wording of its YAML fields.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from pydantic import ValidationError

from ..bank.loader import check_window
from ..bank.messages import describe_pydantic_error
from ..bank.schema import Bank, BankHeader, Shuffle

# The custom parameters, written as in a bank file (attempts: 3, time_limit: 20m, opens: 2026-03-02T09:00+01:00),
# except that shuffle: {questions: true, options: true} becomes two flat parameters.
PARAMETERS = ("attempts", "time_limit", "opens", "closes", "shuffle_questions", "shuffle_options")
WHOLE_NUMBER = re.compile(r"[+-]?\d{1,30}")  # longer: text, not a number (int() refuses 4300+ digits)


def _as_yaml_reads(name: str, value: object) -> object:
    """A parameter's text as YAML reads it in a bank (custom parameters and form fields are always text)."""
    if not isinstance(value, str):
        return value
    if name == "attempts" and WHOLE_NUMBER.fullmatch(value):
        return int(value)
    if name.startswith("shuffle_") and value in ("true", "false"):
        return value == "true"
    return value


def given(values: Mapping[str, object]) -> dict[str, str]:
    """The settings parameters among `values` (a form, a custom claim) that are not blank, as text."""
    return {name: str(values[name]).strip() for name in PARAMETERS
            if values.get(name) is not None and str(values[name]).strip()}


def apply(bank: Bank, settings: Mapping[str, str]) -> tuple[Bank, dict[str, str]]:
    """`bank` with the link's settings in place of its own, and the message of each refused parameter (the
    refused ones keep the bank's value)."""
    typed = {name: _as_yaml_reads(name, value) for name, value in settings.items()}
    fields = {name: value for name, value in typed.items() if not name.startswith("shuffle_")}
    shuffle = {name.removeprefix("shuffle_"): value for name, value in typed.items() if name.startswith("shuffle_")}
    if shuffle:
        fields["shuffle"] = (bank.shuffle or Shuffle()).model_dump() | shuffle
    update, problems = {}, {}
    for field, value in fields.items():
        try:
            header = BankHeader.model_validate({"id": bank.id, "title": bank.title, field: value})
        except ValidationError as error:
            for item in error.errors(include_url=False):
                name = f"shuffle_{item['loc'][1]}" if field == "shuffle" and len(item["loc"]) > 1 else field
                problems.setdefault(name, describe_pydantic_error(item))
            continue
        update[field] = getattr(header, field)
    effective = bank.model_copy(update=update)
    for _, message in check_window(effective):  # the link's window, or its opens/closes against the bank's
        problems.setdefault("opens" if "opens" in update and "closes" not in update else "closes", message)
    return effective, problems


def with_settings(bank: Bank, settings: Mapping[str, str]) -> Bank:
    """The bank as an attempt from an LMS link sees it: with the link's settings (none: the bank as it is)."""
    return apply(bank, settings)[0] if settings else bank
