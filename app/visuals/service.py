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
    """A bounded LRU of rendered figures keyed by (kind, canonical params)."""

    def __init__(self, max_entries: int = 256):
        self.max_entries = max_entries
        self._entries: OrderedDict[tuple[str, str], CachedRender] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get_or_render(self, kind: VisualKind, params: VisualParams) -> CachedRender:
        key = (kind.name, canonical(params))
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
                self.hits += 1
                return found
        rendered = kind.render(params)  # outside the lock: other kinds may render meanwhile
        entry = CachedRender(rendered, '"' + hashlib.sha256(rendered.image).hexdigest()[:32] + '"')
        with self._lock:
            self.misses += 1
            self._entries[key] = entry
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)
        return entry

    def __len__(self) -> int:
        return len(self._entries)


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
