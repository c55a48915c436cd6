"""The contract every visual kind fulfils: bounded parameters, the controls a student may change,
and a render step that returns image bytes and alt text built from the same engine numbers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
)

from app.plots.sizes import pixel_size


def _fits_the_tokenizer(text: str) -> str:
    from app.engine.toy import MAX_TOKENS, tokenize

    tokenize(text, MAX_TOKENS)  # raises ValueError with a sentence when there are too many words
    return text


def _on_off(value: Any) -> Any:
    # A bank may write `causal: true`; the controls send "on"/"off".
    if isinstance(value, bool):
        return "on" if value else "off"
    return value


# A sentence of the toy vocabulary's words (at most MAX_TOKENS) and an on/off switch, shared by kinds.
Sentence = Annotated[str, Field(min_length=1, max_length=80), AfterValidator(_fits_the_tokenizer)]
OnOff = Annotated[Literal["off", "on"], BeforeValidator(_on_off)]


class VisualParams(BaseModel):
    """Base for a kind's parameters. Every field that sizes a computation must carry bounds (ge/le)."""

    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True)


@dataclass(frozen=True)
class Control:
    """An HTML control on the answer page bound to one parameter.

    `type` is "int"/"float" (a number input with min/max/step), "choice" (a select of `choices`,
    each a (value, label) pair) or "text" (a text input, up to `max_length` characters).
    """

    name: str
    label: str
    type: Literal["int", "float", "choice", "text"]
    min: float | None = None
    max: float | None = None
    step: float | None = None
    choices: tuple[tuple[str, str], ...] = ()
    max_length: int | None = None
    help: str | None = None


@dataclass(frozen=True)
class Rendered:
    """A rendered figure: image bytes, their media type, and alt text made from the same numbers."""

    image: bytes
    mimetype: str
    alt: str
    caption: str | None = None  # an optional longer explanation shown under the figure
    extras: dict[str, Any] = field(default_factory=dict)

    @property
    def description(self) -> "Description":
        return Description(alt=self.alt, caption=self.caption)


@dataclass(frozen=True)
class Description:
    """What a page shows of a figure besides the image: its alt text and caption, as `render` builds them."""

    alt: str
    caption: str | None = None


class VisualKind:
    """One kind of visual. Subclasses set the class attributes and implement `render`, and `describe`
    when they can build the alt text and caption without drawing (that is, without matplotlib)."""

    name: ClassVar[str]  # the URL slug, e.g. "soft-lookup"
    title: ClassVar[str]
    Params: ClassVar[type[VisualParams]]
    controls: ClassVar[tuple[Control, ...]] = ()
    learn: ClassVar[str] = ""  # a path + anchor under /learn, e.g. "/learn/attention#soft-lookup"
    format: ClassVar[Literal["png", "svg"]] = "png"
    inches: ClassVar[tuple[float, float]]  # the figure's (width, height), from app.plots.sizes, as drawn

    def figure_inches(self, params: VisualParams) -> tuple[float, float]:
        """The (width, height) in inches of the figure `render(params)` draws. A kind whose size depends
        on its params overrides this with the function of app.plots.sizes its draw function calls."""
        return self.inches

    def size(self, params: VisualParams) -> tuple[int, int]:
        """The image's (width, height) in CSS pixels, for the page's <img> tag, without drawing."""
        return pixel_size(self.figure_inches(params), self.format)

    def parse(self, values: dict[str, Any]) -> VisualParams:
        """Validate params from YAML or a query string (strings are coerced). Raises ValidationError."""
        return self.Params.model_validate(values)

    def render(self, params: VisualParams) -> Rendered:  # pragma: no cover - interface
        raise NotImplementedError

    def describe(self, params: VisualParams) -> Description:
        """The alt text and caption `render(params)` gives, exactly. This fallback draws the figure; a kind
        overrides it to build them from the engine result through the same functions `render` uses."""
        return self.render(params).description

    @property
    def describes_without_drawing(self) -> bool:
        return type(self).describe is not VisualKind.describe


def describe_validation_error(error: ValidationError) -> list[tuple[tuple, str]]:
    """(path, sentence) pairs for a bank author or a student who typed an out-of-range value."""
    problems: list[tuple[tuple, str]] = []
    for item in error.errors(include_url=False):
        loc = tuple(item["loc"])
        kind, ctx, value = item["type"], item.get("ctx") or {}, item.get("input")
        name = str(loc[0]) if loc else "params"
        if kind == "extra_forbidden":
            message = f"unknown parameter '{name}'"
        elif kind == "missing":
            message = f"the parameter '{name}' is required"
        elif kind in ("greater_than_equal", "greater_than"):
            bound = ctx.get("ge", ctx.get("gt"))
            message = f"{name} must be at least {bound}" if kind == "greater_than_equal" else f"{name} must be greater than {bound}"
            message += f", got {value!r}"
        elif kind in ("less_than_equal", "less_than"):
            bound = ctx.get("le", ctx.get("lt"))
            message = f"{name} must be at most {bound}, got {value!r}"
        elif kind in ("int_parsing", "int_type", "int_from_float"):
            message = f"{name} must be a whole number, got {value!r}"
        elif kind in ("float_parsing", "float_type", "finite_number"):
            message = f"{name} must be a number, got {value!r}"
        elif kind in ("literal_error", "enum"):
            message = f"{name} must be one of {ctx.get('expected')}, got {value!r}"
        elif kind in ("string_too_long",):
            message = f"{name} must be at most {ctx.get('max_length')} characters"
        elif kind in ("string_too_short",):
            message = f"{name} must not be empty"
        elif kind == "value_error":
            message = str(ctx.get("error", item["msg"]))
        else:
            message = f"{name}: {item['msg']}"
        problems.append((("params",) + loc, message))
    return problems
