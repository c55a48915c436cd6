"""Resolving a visual for a page or an image request: merge a question's params with a student's
overrides, validate them, and render through a bounded in-process cache (LRU, thread-safe).
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass

from pydantic import ValidationError

from . import get_kind
from .base import Rendered, VisualKind, VisualParams, describe_validation_error

MAX_QUERY_BYTES = 2048


class VisualInputError(ValueError):
    """Parameters a student or a URL supplied that cannot be used; the message says what to fix."""


@dataclass(frozen=True)
class CachedRender:
    rendered: Rendered
    etag: str


class RenderCache:
    """A bounded LRU of rendered figures keyed by (kind, canonical params).

    Concurrent requests for a figure that is not cached yet render it once: the first one
    renders and the others wait for its result (a class of students opening the same answer
    page at once would otherwise render the same figure once per request).
    """

    def __init__(self, max_entries: int = 256):
        self.max_entries = max_entries
        self._entries: OrderedDict[tuple[str, str], CachedRender] = OrderedDict()
        self._in_flight: dict[tuple[str, str], threading.Event] = {}
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get_or_render(self, kind: VisualKind, params: VisualParams) -> CachedRender:
        key = (kind.name, canonical(params))
        while True:
            with self._lock:
                found = self._entries.get(key)
                if found is not None:
                    self._entries.move_to_end(key)
                    self.hits += 1
                    return found
                rendering = self._in_flight.get(key)
                if rendering is None:
                    self._in_flight[key] = threading.Event()
                    break
            rendering.wait()  # another thread is rendering this figure; then look again
        try:
            rendered = kind.render(params)  # outside the lock: other figures may render meanwhile
            entry = CachedRender(rendered, '"' + hashlib.sha256(rendered.image).hexdigest()[:32] + '"')
            with self._lock:
                self.misses += 1
                self._entries[key] = entry
                self._entries.move_to_end(key)
                while len(self._entries) > self.max_entries:
                    self._entries.popitem(last=False)
        finally:
            with self._lock:
                self._in_flight.pop(key).set()  # on failure a waiting request renders (and fails) itself
        return entry

    def __contains__(self, key: tuple[str, str]) -> bool:
        with self._lock:
            return key in self._entries

    def __len__(self) -> int:
        return len(self._entries)


def bank_visuals(banks) -> list[tuple[VisualKind, VisualParams]]:
    """Each distinct visual that a question of `banks` shows with its own params, once.

    A question whose params are drawn per student (a variant) is skipped: its figures differ
    per student, so there is no one figure to prepare.
    """
    seen: set[tuple[str, str]] = set()
    visuals = []
    for bank in banks:
        for question in bank.questions:
            if question.visual is None or question.params:
                continue
            kind = get_kind(question.visual.kind)
            if kind is None:
                continue
            try:
                params = kind.parse(dict(question.visual.params or {}))
            except ValidationError:
                continue
            key = (kind.name, canonical(params))
            if key not in seen:
                seen.add(key)
                visuals.append((kind, params))
    return visuals


def prerender(cache: RenderCache, visuals, log=None) -> int:
    """Render each (kind, params) into `cache`; returns how many were rendered. Never raises."""
    rendered = 0
    for kind, params in visuals:
        try:
            cache.get_or_render(kind, params)
            rendered += 1
        except Exception:  # a figure that fails here fails again, visibly, when a page asks for it
            if log is not None:
                log.exception("pre-rendering the %s visual failed", kind.name)
    return rendered


def start_prerender(app) -> threading.Thread:
    """Pre-render the default visual of every question of the loaded banks, in a background thread.

    create_app arranges for it on the first request (when PLOT_PRERENDER is true and not testing),
    so CLI commands never start it. The first student to open an
    answer page then gets a cached figure instead of waiting for a render. In a pre-forking server without --preload each worker
    process builds its own app and so pre-renders for its own cache.
    """
    import logging

    log = logging.getLogger(__name__)
    cache: RenderCache = app.extensions["render_cache"]
    visuals = bank_visuals(app.extensions["banks"].banks.values())
    # Not a daemon: interpreter shutdown waits for it (a few seconds) rather than killing it mid-render.
    thread = threading.Thread(target=prerender, args=(cache, visuals, log), name="plot-prerender", daemon=False)
    thread.start()
    return thread


def canonical(params: VisualParams) -> str:
    return json.dumps(params.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))


def query_values(params: VisualParams) -> dict[str, str]:
    """Params as query-string values, in field order (so URLs are stable and readable)."""
    return {name: str(value) for name, value in params.model_dump(mode="json").items()}


def kind_or_error(name: str) -> VisualKind:
    kind = get_kind(name)
    if kind is None:
        raise LookupError(name)
    return kind


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
        sentences = [message for _, message in describe_validation_error(error)]
        raise VisualInputError(_sentence("; ".join(sentences))) from None


def _sentence(text: str) -> str:
    # Not capitalised: messages often start with a parameter name (d_model=130 ...), which must stay exact.
    return text.strip().rstrip(".") + "."
