"""Resolving a visual for a page or an image request: merge a question's params with a student's
overrides, validate them, and render through a bounded in-process cache (LRU, thread-safe), backed by
an optional on-disk cache that gunicorn's workers share and that survives restarts.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from pydantic import ValidationError

from . import get_kind
from .base import Description, Rendered, VisualKind, VisualParams, describe_validation_error

try:
    import fcntl
except ImportError:  # not on Windows: the disk cache then works without the cross-process lock
    fcntl = None

MAX_QUERY_BYTES = 2048
log = logging.getLogger(__name__)


class VisualInputError(ValueError):
    """Parameters a student or a URL supplied that cannot be used; the message says what to fix."""


@dataclass(frozen=True)
class CachedRender:
    rendered: Rendered
    etag: str


def _entry(rendered: Rendered) -> CachedRender:
    return CachedRender(rendered, '"' + hashlib.sha256(rendered.image).hexdigest()[:32] + '"')


# What changes the bytes of a figure: the code that computes and draws it, and the libraries it draws
# with. A change to any of them starts a new folder of the disk cache (the old one is pruned away).
_STAMP_DISTRIBUTIONS = ("attention-quiz", "matplotlib", "numpy", "pillow", "pydantic", "contourpy", "kiwisolver")
_STAMP_SOURCES = ("engine", "plots", "visuals")  # subpackages of `app`


def version_stamp() -> str:
    """A short hash of the app's drawing code and the versions of the libraries that draw."""
    digest = hashlib.sha256(f"python {sys.version_info[0]}.{sys.version_info[1]}\n".encode())
    for name in _STAMP_DISTRIBUTIONS:
        try:
            version = metadata.version(name)
        except metadata.PackageNotFoundError:
            version = "-"
        digest.update(f"{name} {version}\n".encode())
    package = Path(__file__).resolve().parent.parent
    for folder in _STAMP_SOURCES:
        for path in sorted((package / folder).rglob("*.py")):
            digest.update(path.relative_to(package).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


class DiskCache:
    """Rendered figures as files, shared by every process that points at the same folder.

    One file per figure, `<dir>/<version stamp>/<sha256 of kind and params>.plot`: a header (JSON: the
    key, media type, alt text, caption, image length and SHA-256) and the image. Files are written to
    a temporary name and renamed into place (atomic), and a file whose header, length or checksum does
    not match is treated as missing (it is drawn again and replaced). The folder is kept under
    `max_bytes` by deleting the least recently used files. A folder that cannot be written turns the
    disk cache off with one warning: figures are then kept in memory only, never an error for a page.
    """

    MAGIC = b"AQPLOT1\n"
    LOCK_STRIPES = 256  # lock files, chosen by key hash: two figures rarely share one
    LOCK_TIMEOUT = 60.0  # seconds to wait for another process's render before drawing anyway

    def __init__(self, root: str | os.PathLike, max_bytes: int, stamp: str | None = None):
        self.root = Path(root)
        self.max_bytes = max_bytes
        self.stamp = stamp or version_stamp()
        self.dir = self.root / self.stamp
        self.enabled = True
        self._written_since_prune = 0
        self._warned = False
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            (self.root / "locks").mkdir(exist_ok=True)
            probe = self.dir / f".probe.{os.getpid()}.{threading.get_ident()}"
            probe.write_bytes(b"")
            probe.unlink()
        except OSError as error:
            self._disable(f"the plot cache folder {self.root} cannot be written ({error.strerror or error})")

    def _disable(self, reason: str) -> None:
        self.enabled = False
        if not self._warned:
            self._warned = True
            log.warning("%s; rendered plots are kept in memory only. Set FLASK_PLOT_CACHE_DIR to a writable "
                        "folder, or to false to turn the disk cache off without this warning.", reason)

    @staticmethod
    def _digest(key: tuple[str, str]) -> str:
        return hashlib.sha256(f"{key[0]}\0{key[1]}".encode()).hexdigest()

    def path(self, key: tuple[str, str]) -> Path:
        return self.dir / (self._digest(key) + ".plot")

    def read(self, key: tuple[str, str]) -> CachedRender | None:
        """The stored figure, or None when there is none or it is damaged (never raises)."""
        if not self.enabled:
            return None
        path = self.path(key)
        try:
            data = path.read_bytes()
        except OSError:
            return None
        try:
            if not data.startswith(self.MAGIC):
                raise ValueError("bad magic")
            start = len(self.MAGIC) + 4
            header_length = int.from_bytes(data[len(self.MAGIC):start], "big")
            header = json.loads(data[start:start + header_length])
            image = data[start + header_length:]
            if header["key"] != list(key) or header["size"] != len(image):
                raise ValueError("key or length mismatch")
            checksum = hashlib.sha256(image).hexdigest()
            if checksum != header["sha256"]:
                raise ValueError("checksum mismatch")
            rendered = Rendered(image=image, mimetype=header["mimetype"], alt=header["alt"],
                                caption=header.get("caption"), extras=header.get("extras") or {})
        except (ValueError, KeyError, TypeError):
            log.info("ignoring a damaged plot cache file %s; drawing it again", path.name)
            return None
        with contextlib.suppress(OSError):
            os.utime(path)  # recently used: pruned last
        return CachedRender(rendered, '"' + checksum[:32] + '"')

    def write(self, key: tuple[str, str], entry: CachedRender) -> None:
        """Store a figure atomically; on any failure the disk cache turns itself off (one warning)."""
        if not self.enabled:
            return
        rendered = entry.rendered
        try:
            header = json.dumps({"key": list(key), "mimetype": rendered.mimetype, "alt": rendered.alt,
                                 "caption": rendered.caption, "extras": rendered.extras or {},
                                 "size": len(rendered.image),
                                 "sha256": hashlib.sha256(rendered.image).hexdigest()}).encode()
        except (TypeError, ValueError):
            return  # extras that JSON cannot hold: this figure stays in memory only
        blob = self.MAGIC + len(header).to_bytes(4, "big") + header + rendered.image
        path = self.path(key)
        temporary = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        try:
            temporary.write_bytes(blob)
            os.replace(temporary, path)
        except OSError as error:
            with contextlib.suppress(OSError):
                temporary.unlink()
            self._disable(f"writing to the plot cache folder {self.root} failed ({error.strerror or error})")
            return
        self._written_since_prune += len(blob)
        if self._written_since_prune > self.max_bytes // 8:
            self.prune()

    def prune(self) -> int:
        """Delete the least recently used files (any version stamp) until the folder holds at most 3/4 of
        max_bytes, and temporary files left by a crash. Returns the number of files deleted."""
        self._written_since_prune = 0
        files = []
        now = time.time()
        deleted = 0
        try:
            stamps = [entry for entry in os.scandir(self.root) if entry.is_dir() and entry.name != "locks"]
            for stamp in stamps:
                for entry in os.scandir(stamp.path):
                    try:
                        info = entry.stat()
                    except OSError:
                        continue
                    if entry.name.endswith(".tmp"):
                        if now - info.st_mtime > 3600:
                            with contextlib.suppress(OSError):
                                os.unlink(entry.path)
                                deleted += 1
                    elif entry.name.endswith(".plot"):
                        files.append((info.st_mtime, info.st_size, entry.path))
        except OSError:
            return deleted
        total = sum(size for _, size, _ in files)
        if total <= self.max_bytes:
            return deleted
        files.sort()
        for _, size, path in files:
            if total <= self.max_bytes * 3 // 4:
                break
            with contextlib.suppress(OSError):
                os.unlink(path)
                deleted += 1
            total -= size
        return deleted

    @contextlib.contextmanager
    def render_lock(self, key: tuple[str, str]):
        """Across processes: one draws a figure while the others wait, then read its file."""
        if not self.enabled or fcntl is None:
            yield
            return
        stripe = int(self._digest(key)[:8], 16) % self.LOCK_STRIPES
        try:
            descriptor = os.open(self.root / "locks" / f"{stripe:03d}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        except OSError:
            yield
            return
        try:
            deadline = time.monotonic() + self.LOCK_TIMEOUT
            while True:
                try:
                    fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        break  # a stuck holder must not stall pages: draw it here as well
                    time.sleep(0.01)
                except OSError:
                    break
            yield
        finally:
            os.close(descriptor)  # also releases the lock


def _lru_put(entries: OrderedDict, key, value, max_entries: int) -> None:
    """Put `value` at the recent end of `entries`, dropping the least recently used beyond max_entries."""
    entries[key] = value
    entries.move_to_end(key)
    while len(entries) > max_entries:
        entries.popitem(last=False)


class RenderCache:
    """A bounded LRU of rendered figures keyed by (kind, canonical params), over an optional DiskCache.

    Concurrent requests for a figure that is not cached yet render it once: the first one
    renders and the others wait for its result (a class of students opening the same answer
    page at once would otherwise render the same figure once per request). With a disk cache,
    a figure is looked up on disk before it is drawn, and gunicorn's workers draw each figure once
    between them (a lock file per figure), not once each.
    """

    def __init__(self, max_entries: int = 256, disk: DiskCache | None = None, max_descriptions: int = 1024):
        self.max_entries = max_entries
        self.max_descriptions = max_descriptions
        self.disk = disk
        self._entries: OrderedDict[tuple[str, str], CachedRender] = OrderedDict()
        self._descriptions: OrderedDict[tuple[str, str], Description] = OrderedDict()  # alt text and captions
        self._in_flight: dict[tuple[str, str], threading.Event] = {}
        self._lock = threading.Lock()
        self.hits = 0
        self.disk_hits = 0
        self.misses = 0  # figures drawn by this process

    def get_or_render(self, kind: VisualKind, params: VisualParams,
                      before_render: Callable[[], None] | None = None) -> CachedRender:
        """The figure from memory, from disk, or drawn now. `before_render` runs only when this call is
        about to draw (a rate limit on renders); if it raises, nothing is drawn."""
        return self._get(kind, params, before_render, render=True)

    def load(self, kind: VisualKind, params: VisualParams) -> CachedRender | None:
        """The figure from memory or disk, never drawn."""
        return self._get(kind, params, None, render=False)

    def peek(self, kind: VisualKind, params: VisualParams) -> CachedRender | None:
        """The figure from memory or disk, never drawn, and without waiting for a render in progress."""
        key = (kind.name, canonical(params))
        with self._lock:
            found = self._memory_hit(key)
        if found is not None:
            return found
        entry = self.disk.read(key) if self.disk is not None else None
        if entry is not None:
            self.disk_hits += 1
            self._keep(key, entry)
        return entry

    def describe(self, kind: VisualKind, params: VisualParams,
                 before_render: Callable[[], None] | None = None,
                 on_miss: Callable[[], None] | None = None) -> Description:
        """A figure's alt text and caption, drawing nothing when the kind can describe without drawing.

        From the cached figure when there is one, else from a bounded LRU of descriptions, else from
        `kind.describe`. A kind that must draw to describe itself (its numbers are measured live) has
        its figure drawn and cached here, so that the page's text and the image it loads agree;
        `before_render` runs only then, as for get_or_render. `on_miss` runs when no figure is cached,
        before anything is described (a check that there is room for the render the page's image will
        ask for); if it raises, nothing is described or drawn.
        """
        entry = self.peek(kind, params)
        if entry is not None:
            return entry.rendered.description
        if on_miss is not None:
            on_miss()
        if not kind.describes_without_drawing:
            return self.get_or_render(kind, params, before_render).rendered.description
        key = (kind.name, canonical(params))
        with self._lock:
            found = self._descriptions.get(key)
            if found is not None:
                self._descriptions.move_to_end(key)
                return found
        description = kind.describe(params)  # outside the lock: cheap, but it runs the engine
        with self._lock:
            _lru_put(self._descriptions, key, description, self.max_descriptions)
        return description

    def _keep(self, key: tuple[str, str], entry: CachedRender) -> None:
        with self._lock:
            _lru_put(self._entries, key, entry, self.max_entries)

    def _memory_hit(self, key: tuple[str, str]) -> CachedRender | None:
        """The figure kept in memory, marked as recently used; call with the lock held."""
        found = self._entries.get(key)
        if found is not None:
            self._entries.move_to_end(key)
            self.hits += 1
        return found

    def _get(self, kind, params, before_render, render: bool) -> CachedRender | None:
        key = (kind.name, canonical(params))
        while True:
            with self._lock:
                found = self._memory_hit(key)
                if found is not None:
                    return found
                rendering = self._in_flight.get(key)
                if rendering is None:
                    self._in_flight[key] = threading.Event()
                    break
            rendering.wait()  # another thread is rendering this figure; then look again
        try:
            entry = self.disk.read(key) if self.disk is not None else None
            if entry is not None:
                self.disk_hits += 1
            elif render:
                entry = self._render(key, kind, params, before_render)
            if entry is not None:
                self._keep(key, entry)
        finally:
            with self._lock:
                self._in_flight.pop(key).set()  # on failure a waiting request renders (and fails) itself
        return entry

    def _render(self, key, kind, params, before_render) -> CachedRender:
        if self.disk is None:
            if before_render is not None:
                before_render()
            entry = _entry(kind.render(params))  # outside the lock: other figures may render meanwhile
            self.misses += 1
            return entry
        with self.disk.render_lock(key):
            entry = self.disk.read(key)  # drawn by another process while this one waited?
            if entry is not None:
                self.disk_hits += 1
                return entry
            if before_render is not None:
                before_render()
            entry = _entry(kind.render(params))
            self.misses += 1
            self.disk.write(key, entry)
            return entry

    def __contains__(self, key: tuple[str, str]) -> bool:
        with self._lock:
            return key in self._entries

    def __len__(self) -> int:
        return len(self._entries)


def disk_cache_for(app) -> DiskCache | None:
    """The disk cache PLOT_CACHE_DIR asks for: None (the default) means `<instance folder>/plot-cache`
    (but off under TESTING, so tests share nothing by accident); false or "" turn it off."""
    folder = app.config.get("PLOT_CACHE_DIR")
    if folder is None:
        if app.testing:
            return None
        folder = os.path.join(app.instance_path, "plot-cache")
    if folder is False or (isinstance(folder, str) and folder.strip().lower() in ("", "false", "off", "0", "none")):
        return None
    megabytes = float(app.config.get("PLOT_CACHE_DISK_MB") or 0)
    if megabytes <= 0:
        return None
    return DiskCache(folder, int(megabytes * 1024 * 1024))


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


def prerender(cache: RenderCache, visuals, log=None, pause: float = 0.0) -> int:
    """Bring each (kind, params) into `cache`; returns how many are cached at the end. Never raises.

    Figures already on disk (drawn by another worker, or before a restart) are loaded first, which is
    cheap; the rest are drawn after that, with a `pause` between figures so that requests being served
    meanwhile get the CPU and the interpreter lock between two renders.
    """
    began = time.perf_counter()
    drawn_before = cache.misses
    cached, missing = 0, []
    for kind, params in visuals:
        try:
            if cache.load(kind, params) is not None:
                cached += 1
            else:
                missing.append((kind, params))
        except Exception:
            missing.append((kind, params))
    for kind, params in missing:
        try:
            cache.get_or_render(kind, params)
            cached += 1
        except Exception:  # a figure that fails here fails again, visibly, when a page asks for it
            if log is not None:
                log.exception("pre-rendering the %s visual failed", kind.name)
        if pause:
            time.sleep(pause)
    if cache.disk is not None:
        cache.disk.prune()
    if log is not None:
        log.info("pre-render: %d of %d figures cached (%d drawn by this process) in %.1f s", cached, len(visuals),
                 cache.misses - drawn_before, time.perf_counter() - began)
    return cached


PRERENDER_PAUSE = 0.02  # seconds between two pre-rendered figures


def start_prerender(app) -> threading.Thread:
    """Pre-render the default visual of every question of the loaded banks, in a background thread.

    create_app arranges for it after the first response has been sent (when PLOT_PRERENDER is true and
    not testing), so CLI commands never start it and it does not delay the first page. The first
    student to open an answer page then gets a cached figure instead of waiting for a render. Each
    gunicorn worker runs it for its own memory cache, but with the disk cache the workers draw each
    figure once between them and load the others' files.
    """
    cache: RenderCache = app.extensions["render_cache"]
    visuals = bank_visuals(app.extensions["banks"].banks.values())
    # Not a daemon: interpreter shutdown waits for it (a few seconds) rather than killing it mid-render.
    thread = threading.Thread(target=prerender, args=(cache, visuals, log, PRERENDER_PAUSE),
                              name="plot-prerender", daemon=False)
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
