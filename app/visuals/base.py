"""The contract every visual kind fulfils, and the one sequence that turns params into a page's figure.

A kind declares bounded parameters and its controls, computes its engine result once, and builds the
alt text, the caption and the figure from that one result; its drawing sits in app/plots/<kind>.py.
"""

from __future__ import annotations

import gc
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Generic, Literal, TypeVar

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field

DPI = 100  # PNG pixels per inch at scale 1; a PNG pixel is shown as one CSS pixel
CSS_PX_PER_INCH = 96  # how a browser sizes an SVG, whose width and height are in points (1/72 inch)
WIDTH = 7.6  # inches (760 px): every visual has the same width, so they line up on a page
NARROW_WIDTH = 3.4  # inches (340 px): the phone layout, shown at about its own size on a 375 px screen
SCALES = (1, 2)  # 2: twice the pixels, for sharp screens (the <img>'s srcset)
LAYOUTS = ("wide", "narrow")


def _fits_the_tokenizer(text: str) -> str:
    from .toy import MAX_TOKENS, tokenize

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


def option_choice(option_ids: tuple[str, ...], one: bool = False):
    """The type of a kind's choice param: "" or some of `option_ids`, comma-separated, kept in their order; with
    `one` (a true/false question's), at most one of them.

    The answer page passes the student's answer (see VisualKind.choice_param); a bank or a URL may too.
    """
    def canonical(value: Any) -> Any:
        if isinstance(value, bool):
            value = "true" if value else "false"
        if not isinstance(value, str):
            return value
        chosen = {part.strip() for part in value.split(",") if part.strip()}
        unknown = chosen - set(option_ids)
        if unknown:
            raise ValueError(f"choice must name options among {', '.join(option_ids)}; got {', '.join(sorted(unknown))}")
        if one and len(chosen) > 1:
            raise ValueError(f"choice is one answer: {' or '.join(option_ids)}, not {len(chosen)} of them")
        return ",".join(option for option in option_ids if option in chosen)

    return Annotated[str, BeforeValidator(canonical), Field(max_length=200)]


def chosen(choice: str) -> tuple[str, ...]:
    """The option ids of a choice param's value."""
    return tuple(part for part in choice.split(",") if part)


class AcrossFields(ValueError):
    """A rule across a kind's params broken (raised by its model validator); `fields` names the params the
    sentence is about, so the page marks the controls that hold them (the sentence shows once, not beside each)."""

    def __init__(self, message: str, *fields: str):
        super().__init__(message)
        self.fields = fields


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


ResultT = TypeVar("ResultT")


@dataclass(frozen=True)
class Computed(Generic[ResultT]):
    """A kind's engine result for one set of params, with the words a page shows beside its figure and
    the figure's size in CSS pixels per layout ("wide", and "narrow" where the kind has one)."""

    result: ResultT
    alt: str
    caption: str | None
    sizes: dict[str, tuple[int, int]]


@dataclass(frozen=True)
class Rendered:
    """A drawn figure: image bytes and their media type, with the alt text and caption of the same result."""

    image: bytes
    mimetype: str
    alt: str
    caption: str | None


class VisualKind(Generic[ResultT]):
    """One kind of visual. A subclass sets the class attributes and implements compute, alt, draw
    (and caption, figure_inches where they apply); the sequence below is written only here."""

    name: ClassVar[str]  # the URL slug, e.g. "soft-lookup"
    title: ClassVar[str]
    Params: ClassVar[type[VisualParams]]
    controls: ClassVar[tuple[Control, ...]] = ()
    learn: ClassVar[str] = ""  # a path + anchor under /learn, e.g. "/learn/attention#soft-lookup"
    format: ClassVar[Literal["png", "svg"]] = "png"
    inches: ClassVar[tuple[float, float]]  # the figure's (width, height)
    # The param that receives the student's answer on an answer page (option ids, comma-separated), so
    # the visual can mark their choice and answer it; None for a kind that does not use it.
    choice_param: ClassVar[str | None] = None
    # Predict, then reveal: the question types ("cells", "numeric") whose answer the kind draws on an answer
    # page, each with the param that receives the student's answer and the one that receives the key (None
    # where the kind sets the engine's own number beside the prediction). A cells question whose visual's kind
    # lacks cells is refused at load (app.visuals.check_visual).
    predictions: ClassVar[dict[str, tuple[str, str | None]]] = {}
    # The params that fix what a prediction is about (the words of the grid, the head): when a student's
    # control values change one of them, the page draws no prediction on the figure.
    prediction_grid: ClassVar[tuple[str, ...]] = ()

    def figure_grid(self, params: VisualParams) -> tuple[list[str], list[str]] | None:
        """The (rows, columns) labels of the grid a cells prediction is drawn on, in order: a cells question's own
        `grid` must be this one (app.visuals.check_visual). None for a kind that draws no cells."""
        return None

    @property
    def prediction_params(self) -> tuple[str, ...]:
        """Every param a prediction sets, dropped with it (a kind adds any that only a prediction uses)."""
        return tuple(dict.fromkeys(name for pair in self.predictions.values() for name in pair if name))

    # What a kind implements -------------------------------------------------------------------------

    def compute(self, params: VisualParams) -> ResultT:  # pragma: no cover - interface
        """Run the engine once for these params."""
        raise NotImplementedError

    def alt(self, params: VisualParams, result: ResultT) -> str:  # pragma: no cover - interface
        """What the figure shows and its key numbers, for screen readers."""
        raise NotImplementedError

    def caption(self, params: VisualParams, result: ResultT) -> str | None:
        """A longer explanation under the figure, with the numbers to recompute it by hand."""
        return None

    def draw(self, params: VisualParams, result: ResultT, inches: tuple[float, float]):  # pragma: no cover
        """The matplotlib Figure of `result`, `inches` big (drawn by the kind's app/plots module).

        A kind with a narrow layout gets inches[0] == NARROW_WIDTH for it and arranges its panels to fit.
        """
        raise NotImplementedError

    def figure_inches(self, params: VisualParams, layout: str = "wide", result: ResultT | None = None
                      ) -> tuple[float, float]:
        """The (width, height) of the figure. A kind whose size depends on its params (or on its computed
        `result`, which callers pass when they have it), or that has a narrow layout for phones
        (`narrow_inches`), overrides this."""
        if layout == "narrow" and self.has_narrow_layout:
            return self.narrow_inches
        return self.inches

    narrow_inches: ClassVar[tuple[float, float] | None] = None  # the phone layout's size, if the kind has one

    @property
    def has_narrow_layout(self) -> bool:
        return self.narrow_inches is not None

    # The one sequence ------------------------------------------------------------------------------

    def parse(self, values: dict[str, Any]) -> VisualParams:
        """Validate params from YAML or a query string (strings are coerced). Raises ValidationError."""
        return self.Params.model_validate(values)

    def describe(self, params: VisualParams) -> Computed[ResultT]:
        """Compute once, and the alt text, the caption and the image sizes from that result."""
        result = self.compute(params)
        layouts = LAYOUTS if self.has_narrow_layout else ("wide",)
        sizes = {layout: self.size(params, layout, result) for layout in layouts}
        return Computed(result, self.alt(params, result), self.caption(params, result), sizes)

    def picture(self, params: VisualParams, computed: Computed[ResultT], scale: int = 1,
                layout: str = "wide") -> bytes:
        """The image of an already computed result (matplotlib is imported only here)."""
        from app.plots.figure import RENDER_LOCK, to_png, to_svg

        with RENDER_LOCK:  # one figure at a time per process (see RENDER_LOCK)
            # A figure is a web of reference cycles holding megabytes of pixels, which only the garbage
            # collector frees, and its full collections come rarely: dozens of drawn figures piled up in
            # a worker. So the collector waits while the figure is drawn, which keeps all its objects in
            # the youngest generation, and one collection of that generation frees them right after.
            gc.disable()
            try:
                figure = self.draw(params, computed.result, self.figure_inches(params, layout, computed.result))
                image = to_svg(figure) if self.format == "svg" else to_png(figure, dpi=DPI * scale)
                del figure
            finally:
                gc.collect(0)
                gc.enable()
            return image

    def render(self, params: VisualParams, scale: int = 1, layout: str = "wide") -> Rendered:
        """describe, then picture: the figure and its words from one computation."""
        computed = self.describe(params)
        return Rendered(self.picture(params, computed, scale, layout), self.mimetype, computed.alt,
                        computed.caption)

    @property
    def mimetype(self) -> str:
        return "image/svg+xml" if self.format == "svg" else "image/png"

    def size(self, params: VisualParams, layout: str = "wide", result: ResultT | None = None) -> tuple[int, int]:
        """The image's (width, height) in CSS pixels, for the page's <img> tag, without drawing."""
        return pixel_size(self.figure_inches(params, layout, result), self.format)


# Character widths in ems of matplotlib's default font (DejaVu Sans), rounded up, for sizing a figure
# before matplotlib is imported: any other ASCII character counts 0.64, any other character 1.
_EM = {**dict.fromkeys("ijl'.,:;|!", 0.28), "-": 0.36, "f": 0.36, "t": 0.4, "r": 0.44, "m": 1.0, "w": 0.82,
       **dict.fromkeys("MW", 1.0), **dict.fromkeys("−+=×", 0.84), "…": 1.0}


def estimated_width(texts, fontsize: float) -> float:
    """An upper estimate of the widest text's width in inches (plain text, the default font)."""
    return max((sum(_EM.get(ch, 0.64 if ch.isascii() else 1.0) for ch in text) * fontsize / 72
                for text in texts), default=0.0)


def wrap_lines(text: str, width: float, fontsize: float) -> list[str]:
    """`text` broken between words into lines at most `width` inches wide at `fontsize` (by estimated_width)."""
    lines: list[str] = []
    for word in text.split():
        if lines and estimated_width([f"{lines[-1]} {word}"], fontsize) <= width:
            lines[-1] += f" {word}"
        else:
            lines.append(word)
    return lines


def line_height(fontsize: float = 10.0) -> float:
    """A line of text at `fontsize` points, in inches (matplotlib's line spacing: 1.2 × the font size)."""
    return 1.2 * fontsize / 72


def pixel_size(inches: tuple[float, float], image_format: Literal["png", "svg"] = "png") -> tuple[int, int]:
    """The (width, height) in CSS pixels a browser gives the image of a figure this many inches big."""
    width, height = inches
    if image_format == "svg":
        return round(width * CSS_PX_PER_INCH), round(height * CSS_PX_PER_INCH)
    # Agg's canvas is int(inches · dpi) pixels, with a 1e-8 tolerance for floating-point ticks
    # (matplotlib's FigureCanvasBase.get_width_height): 4.14 in is 413.99999999999994 px, drawn as 414.
    return int(width * DPI + 1e-8), int(height * DPI + 1e-8)

