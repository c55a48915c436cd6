"""Resolving a visual for a page or an image request: a student's overrides merged over a question's
params and validated, then computed and drawn through one bounded, thread-safe in-memory LRU.

An entry holds a kind's computed result (alt text, caption) and the images drawn from it, so a page's
words and the image it loads come from one computation, and a figure that many students open at once
is computed and drawn once (single flight).
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple, TypeVar

from pydantic import ValidationError

from app.bank.messages import describe_pydantic_error

from .base import LAYOUTS, SCALES, Computed, VisualKind, VisualParams

MAX_QUERY_BYTES = 2048
# The query parameters of an image URL that are not the kind's: the pixel density and the layout.
SCALE_PARAM, LAYOUT_PARAM = "scale", "layout"
T = TypeVar("T")


class VisualInputError(ValueError):
    """Parameters a student or a URL supplied that cannot be used; the message says what to fix, and `fields`
    maps each param a sentence is about to that sentence (for marking the control that holds it)."""

    def __init__(self, message: str, fields: dict[str, str] | None = None, unplaced: list[str] | None = None,
                 across: dict[str, str] | None = None):
        super().__init__(message)
        self.fields = fields or {}
        # The sentences that `fields` holds none of (a rule across fields, a second problem with one field).
        self.unplaced = [message] if fields is None and unplaced is None else (unplaced or [])
        # Each param a rule across fields is about, to its sentence (one of `unplaced`): marked, not repeated.
        self.across = across or {}


class RenderGateFull(RuntimeError):
    """Every render slot of this process, or every slot one client or one address may hold, is taken."""


class RenderClient(NamedTuple):
    """Whom the render gate counts a request for: `own`, a student's attempt (or else the address), and the
    `address` it came from, which all of that address's sessions share."""

    own: str
    address: str


class RenderGate:
    """At most `slots` visuals computed or drawn at once in a process, at most `per_client` of them for one
    client and `per_address` for one address, whatever sessions it makes up; past that, RenderGateFull at once.
    A queue without a bound would hold every server thread, and pages that need no drawing would wait behind it;
    this leaves threads free for them (docs/deploy.md). Drawing itself is one at a time per process
    (RENDER_LOCK), so the slots are one drawing and a queue.
    """

    # Six of gunicorn's 8 threads per worker (docker/gunicorn.conf.py), leaving two for pages. Four for one
    # client: a browser opening a page of several new figures (a /learn page on a cold server) asks for them
    # over up to 6 connections, shared by the workers. Five for one address: a classroom behind one NAT address
    # shares them, and one address that floods from many sessions still leaves a slot for every other address.
    def __init__(self, slots: int = 6, per_client: int = 4, per_address: int = 5):
        self.slots, self.per_client, self.per_address = slots, per_client, per_address
        self._held: dict[str, int] = {}  # slots held, by client
        self._by_address: dict[str, int] = {}  # slots held, by address
        self._lock = threading.Lock()

    def run(self, client: RenderClient, work: Callable[[], T]) -> T:
        with self._lock:
            if (sum(self._held.values()) >= self.slots or self._held.get(client.own, 0) >= self.per_client
                    or self._by_address.get(client.address, 0) >= self.per_address):
                raise RenderGateFull(client.own)
            _count(self._held, client.own, 1)
            _count(self._by_address, client.address, 1)
        try:
            return work()
        finally:
            with self._lock:
                _count(self._held, client.own, -1)
                _count(self._by_address, client.address, -1)


def _count(held: dict[str, int], key: str, change: int) -> None:
    held[key] = held.get(key, 0) + change
    if not held[key]:
        del held[key]


@dataclass(frozen=True)
class Image:
    data: bytes
    mimetype: str
    etag: str  # a strong validator: the image's SHA-256, shortened


@dataclass
class Entry:
    computed: Computed
    images: dict[tuple[int, str], Image] = field(default_factory=dict)  # by (scale, layout)


class VisualCache:
    """Computed visuals and their images, keyed by (kind, canonical params), least recently used out.

    Work is done once however many requests ask at the same time: the first computes (or draws) and
    the others wait for its result. `before_compute` runs only when a visual is about to be computed
    (a rate limit); if it raises, nothing is computed. Drawing a computed visual's image is not
    charged again: each visual has at most len(SCALES) · len(LAYOUTS) images. Work asked for by a
    `client` passes the render gate first, which may refuse it (RenderGateFull).

    Two bounds, whichever comes first: `max_entries` visuals, and `max_image_bytes` of images in all
    (a visual's four images are about 0.4 MB, so the entry count alone would not bound the memory).
    """

    def __init__(self, max_entries: int = 256, max_image_bytes: int = 32 * 2**20, gate: RenderGate | None = None):
        self.max_entries = max_entries
        self.gate = gate or RenderGate()
        self.max_image_bytes = max_image_bytes
        self.image_bytes = 0  # the images' bytes now held
        self._entries: OrderedDict[tuple[str, str], Entry] = OrderedDict()
        self._in_flight: dict[tuple, threading.Event] = {}
        self._lock = threading.Lock()
        self.computed = 0  # how many visuals this process computed
        self.drawn = 0  # how many images it drew

    def visual(self, kind: VisualKind, params: VisualParams,
               before_compute: Callable[[], None] | None = None, client: RenderClient | None = None) -> Computed:
        """The computed visual, from the cache or computed now."""
        return self._entry(kind, params, before_compute, client).computed

    def image(self, kind: VisualKind, params: VisualParams, scale: int = 1, layout: str = "wide",
              before_compute: Callable[[], None] | None = None, client: RenderClient | None = None) -> Image:
        """The image at `scale` in `layout`, from the cache or drawn now (computing the visual first if needed)."""
        key = (kind.name, canonical(params))
        entry = self._entry(kind, params, before_compute, client)
        if not kind.has_narrow_layout:
            layout = "wide"
        variant = (scale, layout)

        def draw() -> Image:
            data = kind.picture(params, entry.computed, scale, layout)
            self.drawn += 1
            return Image(data, kind.mimetype, hashlib.sha256(data).hexdigest()[:32])

        def keep(image: Image) -> None:
            entry.images[variant] = image
            if self._entries.get(key) is entry:  # else it was dropped meanwhile, and its images with it
                self.image_bytes += len(image.data)
                self._evict()

        return self._once((key, variant), lambda: entry.images.get(variant), self._gated(client, draw), keep)

    def _gated(self, client: RenderClient | None, work: Callable[[], T]) -> Callable[[], T]:
        return work if client is None else lambda: self.gate.run(client, work)

    def _entry(self, kind: VisualKind, params: VisualParams, before_compute,
               client: RenderClient | None = None) -> Entry:
        key = (kind.name, canonical(params))

        def compute() -> Entry:
            if before_compute is not None:
                before_compute()
            computed = kind.describe(params)
            self.computed += 1
            return Entry(computed)

        def keep(entry: Entry) -> None:
            self._entries[key] = entry
            self._evict()

        return self._once(key, lambda: self._recent(key), self._gated(client, compute), keep)

    def _evict(self) -> None:
        """Drop least recently used visuals until both bounds hold (under the lock). The newest stays."""
        while len(self._entries) > 1 and (len(self._entries) > self.max_entries
                                          or self.image_bytes > self.max_image_bytes):
            _, dropped = self._entries.popitem(last=False)
            self.image_bytes -= sum(len(image.data) for image in dropped.images.values())

    def _recent(self, key) -> Entry | None:
        entry = self._entries.get(key)
        if entry is not None:
            self._entries.move_to_end(key)
        return entry

    def _once(self, flight, find, make, keep):
        """find() under the lock; else make() once, outside the lock, while other callers wait for it."""
        while True:
            with self._lock:
                found = find()
                if found is not None:
                    return found
                waiting = self._in_flight.get(flight)
                if waiting is None:
                    self._in_flight[flight] = threading.Event()
                    break
            waiting.wait()  # someone else is making it; then look again (on their failure, make it here)
        try:
            made = make()
            with self._lock:
                keep(made)
            return made
        finally:
            with self._lock:
                self._in_flight.pop(flight).set()

    def __len__(self) -> int:
        return len(self._entries)


def canonical(params: VisualParams) -> str:
    return json.dumps(params.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))


def query_values(params: VisualParams) -> dict[str, str]:
    """Params as query-string values, in field order (so URLs are stable and readable).

    An empty value (a choice param with nothing chosen, whose default is empty; a number not given) is left out.
    """
    return {name: str(value) for name, value in params.model_dump(mode="json").items() if value not in ("", None)}


def parse_query(kind: VisualKind, args: Mapping[str, list[str]], base: dict | None = None,
                only_controls: bool = False) -> VisualParams:
    """Validate query-string params over `base`. Raises VisualInputError with sentences."""
    overrides: dict[str, str] = {}
    allowed = {c.name for c in kind.controls} if only_controls else None
    for name, values in args.items():
        if allowed is not None and name not in allowed:
            continue
        if len(values) != 1:
            raise VisualInputError(f"The parameter '{name}' is given {len(values)} times; give it once.")
        overrides[name] = values[0]
    try:
        return kind.parse({**(base or {}), **overrides})
    except ValidationError as error:
        problems = describe_validation_error(error)
        fields: dict[str, str] = {}
        unplaced: list[str] = []
        across: dict[str, str] = {}
        for item, (path, message) in zip(error.errors(include_url=False), problems):
            # path: ("params", name, ...), or ("params",) for a rule across fields (AcrossFields names them)
            about = getattr(item.get("ctx", {}).get("error"), "fields", ()) if len(path) == 1 else ()
            name = str(path[1]) if len(path) > 1 else about[0] if len(about) == 1 else None
            if name is not None and name not in fields:
                fields[name] = _sentence(message)
            else:
                unplaced.append(_sentence(message))
                across.update(dict.fromkeys((f for f in about if f not in across), _sentence(message)))
        raise VisualInputError(_sentence("; ".join(message for _, message in problems)), fields, unplaced,
                               across) from None


def parse_variant(args: dict[str, list[str]]) -> tuple[int, str]:
    """(scale, layout) of an image URL, taken out of `args`: (1, "wide") when absent."""
    scale, layout = args.pop(SCALE_PARAM, ["1"]), args.pop(LAYOUT_PARAM, ["wide"])
    if len(scale) != 1 or scale[0] not in {str(value) for value in SCALES}:
        raise VisualInputError(f"scale must be one of {', '.join(map(str, SCALES))}.")
    if len(layout) != 1 or layout[0] not in LAYOUTS:
        raise VisualInputError(f"layout must be one of {', '.join(LAYOUTS)}.")
    return int(scale[0]), layout[0]


def _sentence(text: str) -> str:
    # Not capitalised: messages often start with a parameter name (d_model=130 ...), which must stay exact.
    return text.strip().rstrip(".") + "."


def describe_validation_error(error: ValidationError) -> list[tuple[tuple, str]]:
    """(path, sentence) pairs for a bank author or a student who typed an out-of-range value."""
    return [(("params",) + tuple(item["loc"]),
             describe_pydantic_error(item, name=str(item["loc"][0]) if item["loc"] else "params"))
            for item in error.errors(include_url=False)]
