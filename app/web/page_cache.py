"""A small bounded LRU of rendered pages for one process, for pages that are a pure function of a key.

The answer page is the costliest page students load (its template, its plot's URL and grading), and
a class loads the same few versions of it; caching the HTML makes a repeat cost about a question page.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any


class PageCache:
    """(key -> value) LRU; an entry also remembers the bank it was made from, and is used only while
    that very bank object is served (a reloaded bank is a new object, so its pages are made again)."""

    MAX_VALUE_CHARS = 200_000  # a page bigger than this is not kept

    def __init__(self, max_entries: int = 256):
        self.max_entries = max_entries
        self._entries: OrderedDict[tuple, tuple[Any, Any]] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0

    def get(self, key: tuple, bank) -> Any | None:
        with self._lock:
            found = self._entries.get(key)
            if found is None or found[0] is not bank:
                return None
            self._entries.move_to_end(key)
            self.hits += 1
            return found[1]

    def put(self, key: tuple, bank, value) -> None:
        if self.max_entries <= 0 or len(str(value[0])) > self.MAX_VALUE_CHARS:
            return
        with self._lock:
            self._entries[key] = (bank, value)
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)
