"""The contract every visual kind keeps, tested on every registered kind.

Kind-specific claims (what a kind's alt text says, what its figure shows) live in tests/visuals/.
Each kind's default figure is rendered once per session (the `default_renders` fixture in conftest.py);
a second render is made only to show that the bytes repeat. Extreme parameters are derived from each
kind's Field bounds, so a kind that is rewritten or added is covered without editing this file.
"""

from __future__ import annotations

import pkgutil
import re
import types
import typing
from collections import Counter

import pytest
from pydantic import Field, ValidationError, model_validator

import app.visuals.kinds
from app.visuals import KINDS, VisualKind, VisualParams, check_visual, get_kind
from app.visuals.base import DPI, NARROW_WIDTH, WIDTH
from app.visuals.service import VisualInputError, parse_query, query_values
from app.visuals.model import fits_the_model
from app.visuals.toy import MAX_TOKENS
from conftest import PNG_SIGNATURE, image_size, run_python

get_kind("soft-lookup")  # registers every kind
KIND_NAMES = sorted(KINDS)

# Words for the text fields at the extremes: the longest sentence a field takes (up to MAX_TOKENS
# words, with a repeated word and one the toy lexicon lacks), and the shortest (an unknown word,
# then a repeat, for fields that need two words).
LONG_WORDS = "the quick brown fox jumped over the lazy dog and the zorblax".split()
SHORT_WORDS = "zorblax cat cat the".split()
assert len(LONG_WORDS) == MAX_TOKENS


# --- reading a kind's params -------------------------------------------------------------------------


def bound(field, name: str):
    """The field's ge/le bound (or gt/lt), or None."""
    strict = {"ge": "gt", "le": "lt"}[name]
    for item in field.metadata:
        for attribute in (name, strict):
            if getattr(item, attribute, None) is not None:
                return getattr(item, attribute)
    return None


def max_length(field):
    return next((item.max_length for item in field.metadata if getattr(item, "max_length", None)), None)


def choices(field) -> tuple:
    return typing.get_args(field.annotation) if typing.get_origin(field.annotation) is typing.Literal else ()


def field_kind(field) -> str:
    if choices(field):
        return "choice"
    if field.annotation is bool:
        return "bool"
    annotation = field.annotation
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):  # int | None: a number, or none given
        (annotation,) = (part for part in typing.get_args(annotation) if part is not type(None))
    return {int: "int", float: "float", str: "text"}[annotation]


def extreme_params(kind: VisualKind, largest: bool) -> VisualParams:
    """The kind's params with each field, in order, moved to its largest (or smallest) value where the
    params still validate: numbers to their bounds, text to the longest (shortest) sentence it takes,
    choices to the last (first) choice. Cross-field rules (a distance within the range plotted, heads
    that divide the width) keep a field at its earlier value."""
    values = kind.parse({}).model_dump()
    for _ in range(2):  # a second pass moves fields an earlier field's rule held back (height after row)
        _move_to_extremes(kind, values, largest)
    return kind.parse(values)


def _move_to_extremes(kind: VisualKind, values: dict, largest: bool) -> None:
    for name, field in kind.Params.model_fields.items():
        sort = field_kind(field)
        if sort in ("int", "float"):
            candidates = [bound(field, "le" if largest else "ge")]
        elif sort == "text":
            lengths = range(len(LONG_WORDS), 0, -1) if largest else range(1, len(SHORT_WORDS) + 1)
            candidates = [" ".join((LONG_WORDS if largest else SHORT_WORDS)[:n]) for n in lengths]
        elif sort == "choice":
            candidates = [choices(field)[-1 if largest else 0]]
        else:
            candidates = [largest]
        for candidate in candidates:
            try:
                kind.parse({**values, name: candidate})
            except ValidationError:
                continue
            values[name] = candidate
            break


EXTREMES = [(name, largest) for name in KIND_NAMES for largest in (True, False)]


def clean_words(text: str | None) -> list[str]:
    """Number spellings an alt text or caption must never show."""
    return re.findall(r"\bnan\b|\binf\b|-0\.0*(?![0-9]*[1-9])\b", text or "", flags=re.IGNORECASE)


# --- registration and the one sequence -----------------------------------------------------------------


def test_every_kind_module_registers_its_kind():
    modules = {module.name for module in pkgutil.iter_modules(app.visuals.kinds.__path__)}
    assert {type(kind).__module__.rsplit(".", 1)[-1] for kind in KINDS.values()} == modules
    assert len(KINDS) == len(modules)


@pytest.mark.parametrize("name", KIND_NAMES)
def test_kind_declares_its_name_title_learn_link_format_and_params(name):
    kind = KINDS[name]
    assert kind.name == name and re.fullmatch(r"[a-z]+(-[a-z]+)*", name)
    assert kind.title and kind.title.strip() == kind.title
    assert kind.learn.startswith("/learn/")
    assert kind.format in ("png", "svg")
    assert kind.mimetype == {"png": "image/png", "svg": "image/svg+xml"}[kind.format]
    assert issubclass(kind.Params, VisualParams)
    kind.parse({})  # every field has a default
    # The base class writes the sequence once: no kind overrides it.
    for method in ("parse", "describe", "picture", "render", "size"):
        assert getattr(type(kind), method) is getattr(VisualKind, method), f"{name} overrides {method}"


@pytest.mark.parametrize("name", KIND_NAMES)
def test_every_number_field_is_bounded_and_controls_match_the_fields(name):
    kind = KINDS[name]
    fields = kind.Params.model_fields
    for field_name, field in fields.items():
        if field_kind(field) in ("int", "float"):
            assert bound(field, "ge") is not None and bound(field, "le") is not None, f"{field_name} is unbounded"
        if field_kind(field) == "text":
            assert max_length(field), f"{field_name} has no max_length"
    assert kind.controls, "a kind without controls cannot be explored"
    assert len({control.name for control in kind.controls}) == len(kind.controls)
    for control in kind.controls:
        assert control.name in fields, control.name
        assert control.label, control.name
        field = fields[control.name]
        assert control.type == field_kind(field), control.name
        if control.type in ("int", "float"):
            assert (control.min, control.max) == (bound(field, "ge"), bound(field, "le")), control.name
            assert control.step and control.step > 0, control.name
            if control.type == "int":
                assert control.step == int(control.step), control.name
        elif control.type == "text":
            assert control.max_length == max_length(field), control.name
        else:
            assert tuple(value for value, _ in control.choices) == choices(field), control.name
            assert all(label for _, label in control.choices), control.name


# --- the default figure ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", KIND_NAMES)
def test_default_figure_is_a_well_formed_image_with_words(name, default_renders):
    rendered = default_renders[name].rendered
    assert rendered.mimetype == KINDS[name].mimetype
    if KINDS[name].format == "png":
        assert rendered.image.startswith(PNG_SIGNATURE)
    else:
        assert rendered.image.startswith(b"<?xml") and b"<svg" in rendered.image[:500]
    assert rendered.alt and rendered.alt.strip() == rendered.alt and rendered.alt.endswith(".")
    assert rendered.caption is None or rendered.caption.endswith(".")
    assert clean_words(rendered.alt) == [] and clean_words(rendered.caption) == []


@pytest.mark.parametrize("name", KIND_NAMES)
def test_render_computes_once_draws_once_and_repeats_its_bytes(name, default_renders, monkeypatch):
    kind = KINDS[name]
    calls = Counter()
    real_compute, real_draw = type(kind).compute, type(kind).draw

    def compute(self, params):
        calls["compute"] += 1
        return real_compute(self, params)

    def draw(self, params, result, inches):
        calls["draw"] += 1
        return real_draw(self, params, result, inches)

    monkeypatch.setattr(type(kind), "compute", compute)
    monkeypatch.setattr(type(kind), "draw", draw)
    again = kind.render(kind.parse({}))
    assert calls == {"compute": 1, "draw": 1}  # the words and the image come from one result
    assert again.image == default_renders[name].rendered.image  # the same bytes, to the byte
    assert again == default_renders[name].rendered


@pytest.mark.parametrize("name", KIND_NAMES)
def test_describe_gives_exactly_the_alt_text_and_caption_render_gives(name, default_renders):
    default = default_renders[name]
    described = default.kind.describe(default.params)
    assert (described.alt, described.caption) == (default.rendered.alt, default.rendered.caption)


@pytest.mark.parametrize("name", KIND_NAMES)
def test_image_has_the_size_the_kind_states_before_drawing(name, default_renders):
    default = default_renders[name]
    kind, params, rendered = default.kind, default.params, default.rendered
    width, height = kind.size(params)
    assert image_size(rendered.image) == (width, height)
    assert kind.figure_inches(params)[0] == WIDTH  # every visual is as wide as the others
    if kind.format == "png":
        assert width == round(WIDTH * DPI)
        sharp = kind.render(params, scale=2)
        assert image_size(sharp.image) == (2 * width, 2 * height)
        assert (sharp.alt, sharp.caption) == (rendered.alt, rendered.caption)
    if kind.has_narrow_layout:
        assert kind.figure_inches(params, "narrow")[0] == NARROW_WIDTH
        narrow = kind.render(params, layout="narrow")
        assert image_size(narrow.image) == kind.size(params, "narrow")
        assert (narrow.alt, narrow.caption) == (rendered.alt, rendered.caption)
    else:
        assert kind.size(params, "narrow") == (width, height)  # the phone gets the wide image


# --- extreme params -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "largest"), EXTREMES,
                         ids=[f"{name}-{'largest' if largest else 'smallest'}" for name, largest in EXTREMES])
def test_extreme_params_compute_and_render_at_their_stated_size(name, largest):
    kind = KINDS[name]
    params = extreme_params(kind, largest)
    assert check_visual(name, params.model_dump(mode="json")) == []
    rendered = kind.render(params)
    assert image_size(rendered.image) == kind.size(params)
    assert kind.figure_inches(params)[0] == WIDTH
    assert rendered.alt and clean_words(rendered.alt) == [] and clean_words(rendered.caption) == []
    if kind.has_narrow_layout:
        narrow = kind.render(params, layout="narrow")
        assert image_size(narrow.image) == kind.size(params, "narrow")


class _Bounded(VisualParams):
    """Params with a cross-field rule, like a pixel that must lie inside its image."""

    size: int = Field(default=4, ge=2, le=9)
    index: int = Field(default=3, ge=0, le=8)
    temperature: float = Field(default=1.0, ge=0.05, le=20.0)
    words: str = Field(default="cat", min_length=1, max_length=80)
    pair: str = Field(default="cat dog", min_length=1, max_length=80)
    mode: typing.Literal["a", "b", "c"] = "b"

    @model_validator(mode="after")
    def _inside(self):
        if self.index >= self.size:
            raise ValueError("index must be below size")
        if len(self.pair.split()) < 2 or len(self.words.split()) > 6:
            raise ValueError("pair needs two words and words at most six")
        return self


class _BoundedKind(VisualKind):  # not registered: only its params are used
    name = "bounded"
    Params = _Bounded


def test_the_extremes_reach_the_bounds_a_cross_field_rule_allows():
    kind = _BoundedKind()
    assert extreme_params(kind, True).model_dump() == {
        "size": 9, "index": 8, "temperature": 20.0, "words": " ".join(LONG_WORDS[:6]),
        "pair": " ".join(LONG_WORDS), "mode": "c"}
    # The first pass cannot shrink size below index 3; the second pass can, once index is 0.
    assert extreme_params(kind, False).model_dump() == {
        "size": 2, "index": 0, "temperature": 0.05, "words": "zorblax", "pair": "zorblax cat", "mode": "a"}


# --- validation ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", KIND_NAMES)
def test_check_visual_accepts_the_defaults_and_names_an_unknown_param(name):
    assert check_visual(name, {}) == []
    assert check_visual(name, KINDS[name].parse({}).model_dump(mode="json")) == []
    assert check_visual(name, {"colour": "red"}) == [(("params", "colour"), "unknown parameter 'colour'")]


def test_check_visual_names_the_kinds_for_an_unknown_kind():
    ((path, message),) = check_visual("no-such-kind", {})
    assert path == ("kind",) and "'no-such-kind'" in message
    assert all(name in message for name in KIND_NAMES)


def takes_words(kind: VisualKind, field_name: str) -> bool:
    """Whether a text field holds words of a sentence (rather than, say, a list of option ids)."""
    try:
        kind.parse({field_name: "cat dog"})
    except ValidationError:
        return False
    return True


def invalid_values(kind: VisualKind, field_name: str, field) -> list[tuple[object, str]]:
    """(value, what the sentence must say) for values of one field that must be refused."""
    sort = field_kind(field)
    if sort == "text" and any(getattr(item, "func", None) is fits_the_model for item in field.metadata):
        # A sentence for the real model: any script, bounded by its WordPiece tokens.
        return [("x" * (max_length(field) + 1), f"{field_name} must be at most {max_length(field)} characters"),
                ("a\x00b", "the control character U+0000"), ("cat " * 70, "tokens long after WordPiece")]
    if sort == "text" and not takes_words(kind, field_name):
        return [("x" * (max_length(field) + 1), field_name)]
    if sort == "int":
        ge, le = bound(field, "ge"), bound(field, "le")
        return [(le + 1, f"{field_name} must be at most {le}"), (ge - 1, f"{field_name} must be at least {ge}"),
                ("many", f"{field_name} must be a whole number"), ("2.5", f"{field_name} must be a whole number")]
    if sort == "float":
        ge, le = bound(field, "ge"), bound(field, "le")
        return [(le * 2, f"{field_name} must be at most {le:g}"), (ge - 1, f"{field_name} must be at least {ge:g}"),
                ("hot", f"{field_name} must be a number"), ("nan", f"{field_name} must be a number")]
    if sort == "text":
        return [("x" * (max_length(field) + 1), f"{field_name} must be at most {max_length(field)} characters"),
                ("?!", "has 0 words"), (" ".join(["cat"] * (MAX_TOKENS + 1)), f"has {MAX_TOKENS + 1} words; use at most")]
    if sort == "choice":
        return [("bogus", f"{field_name} must be one of")]
    return []


@pytest.mark.parametrize("name", KIND_NAMES)
def test_invalid_params_are_refused_with_a_sentence_that_names_the_field(name):
    kind = KINDS[name]
    failures = []
    for field_name, field in kind.Params.model_fields.items():
        for value, expected in invalid_values(kind, field_name, field):
            with pytest.raises(ValidationError):
                kind.parse({field_name: value})
            problems = check_visual(name, {field_name: value})
            if len(problems) != 1 or problems[0][0] != ("params", field_name) or expected not in problems[0][1]:
                failures.append((field_name, value, problems))
                continue
            with pytest.raises(VisualInputError) as error:  # a query string says the same, as a sentence
                parse_query(kind, {field_name: [str(value)]})
            message = str(error.value)
            if expected not in message or not message.endswith("."):
                failures.append((field_name, value, message))
    assert not failures, failures


@pytest.mark.parametrize("name", KIND_NAMES)
def test_a_parameter_given_twice_is_refused(name):
    kind = KINDS[name]
    field_name = next(iter(kind.Params.model_fields))
    value = query_values(kind.parse({}))[field_name]
    with pytest.raises(VisualInputError, match=f"The parameter '{field_name}' is given 2 times; give it once."):
        parse_query(kind, {field_name: [value, value]})


@pytest.mark.parametrize("name", KIND_NAMES)
def test_query_strings_coerce_to_the_same_params(name):
    kind = KINDS[name]
    for params in (kind.parse({}), extreme_params(kind, True), extreme_params(kind, False)):
        as_query = {field: [value] for field, value in query_values(params).items()}
        assert all(isinstance(value, str) for (value,) in as_query.values())
        assert parse_query(kind, as_query) == params
        # Spaces a student types around a number or a sentence do not matter.
        typed = {field: [f" {value} " if field_kind(kind.Params.model_fields[field]) in ("int", "float", "text")
                         else value] for field, (value,) in as_query.items()}
        assert parse_query(kind, typed) == params
    # YAML 1.1 reads an unquoted on/off as a boolean: a bank may write `causal: true`.
    for field_name, field in kind.Params.model_fields.items():
        if choices(field) == ("off", "on"):
            assert getattr(kind.parse({field_name: True}), field_name) == "on"
            assert getattr(kind.parse({field_name: False}), field_name) == "off"


# --- matplotlib loads only to draw --------------------------------------------------------------------


@pytest.mark.slow
def test_registering_validating_computing_and_describing_import_no_matplotlib():
    out = run_python("""
        import sys
        from app.visuals import KINDS, check_visual, get_kind

        get_kind("soft-lookup")
        for name, kind in sorted(KINDS.items()):
            params = kind.parse({})
            assert check_visual(name, {}) == [] and check_visual(name, {"no_such_param": 1}), name
            assert kind.describe(params).alt, name
            kind.size(params), kind.size(params, "narrow")
        loaded = sorted(m for m in sys.modules if m.split(".")[0] == "matplotlib")
        kind = get_kind("long-range")
        image = kind.render(kind.parse({})).image
        print(len(KINDS), loaded, "matplotlib" in sys.modules, image[:8] == b"\\x89PNG\\r\\n\\x1a\\n")
    """)
    assert out == f"{len(KINDS)} [] True True"
