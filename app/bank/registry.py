"""The set of banks the server is serving, loaded from a directory of YAML files.

A broken file is logged with every error and skipped; the good banks are still served.
"""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import NotFound
from .loader import BankError, LoadResult, VisualChecker, load_bank_file
from .schema import Bank, Question

log = logging.getLogger(__name__)

BANK_SUFFIXES = (".yaml", ".yml")
# How often the hot-reload thread looks at the quiz folder: a scandir and a stat per bank file.
RELOAD_INTERVAL_S = 1.0


def bank_files(path: Path) -> list[Path]:
    """The bank files at `path`: the file itself, or every *.yaml / *.yml directly in the folder (and every
    link named so, even one to no file, so that a link out of the folder is reported rather than skipped)."""
    if path.is_dir():
        return sorted(p for p in path.iterdir() if p.suffix in BANK_SUFFIXES and (p.is_file() or p.is_symlink())
                      and not p.name.startswith("."))
    return [path]


def leaves_folder(file: Path, folder: Path) -> bool:
    """True when `file`, in `folder`, is a symbolic link to somewhere outside it (a link inside it is fine)."""
    return file.is_symlink() and not file.resolve().is_relative_to(folder.resolve())


def display_name(path: Path) -> str:
    """A path relative to the working directory when that is shorter, as editors and CI expect."""
    try:
        relative = os.path.relpath(path)
    except ValueError:
        return str(path)
    return relative if not relative.startswith("..") else str(path)


def load_file(file: Path, folder: Path | None, visual_checker: VisualChecker | None = None) -> LoadResult:
    """Load one bank file; `folder` is the quiz folder it was found in (None: named on its own)."""
    if folder is not None and leaves_folder(file, folder):
        # Refused unread: the target may be any file this process can read (a key, a password file).
        error = BankError(display_name(file), 1, 1, "", "this is a symbolic link to a file outside the "
                          "quiz folder, which is refused; copy the bank into the folder instead")
        return LoadResult(error.file, None, (error,))
    return load_bank_file(file, display_name(file), visual_checker)


def refuse_reused_ids(results: list[LoadResult]) -> list[LoadResult]:
    """`results` in order, with a bank id used twice made an error in the later file."""
    checked: list[LoadResult] = []
    owners: dict[str, str] = {}
    for result in results:
        if result.bank is not None and result.bank.id in owners:
            error = BankError(result.file, *result.id_at, "id", f"bank id {result.bank.id!r} is already used by "
                              f"{owners[result.bank.id]}; give this bank another id")
            result = LoadResult(result.file, None, (error,))
        elif result.bank is not None:
            owners[result.bank.id] = result.file
        checked.append(result)
    return checked


def load_paths(paths: list[Path], visual_checker: VisualChecker | None = None) -> list[LoadResult]:
    """Load every bank file under `paths`; a bank id used twice is an error in the later file."""
    results: list[LoadResult] = []
    for path in paths:
        files = bank_files(path)
        if not files and path.is_dir():
            log.warning("no *.yaml banks in %s", path)
        results += [load_file(file, path if path.is_dir() else None, visual_checker) for file in files]
    return refuse_reused_ids(results)


def _signature(file: Path) -> tuple[int, int]:
    """(mtime, size) of the file, or of the link itself when it leads nowhere (a dangling link is an error
    to report, not a reason to stop)."""
    try:
        stat = file.stat()
    except OSError:
        try:
            stat = file.lstat()
        except OSError:  # removed since the folder was listed: the next look sees it gone
            return (0, -1)
    return stat.st_mtime_ns, stat.st_size


@dataclass
class BankRegistry:
    """The banks being served.

    Hot reload (`watch`) re-reads only the bank files that were added, changed or removed, in a
    background thread, while the previous banks keep serving. A bank that stops validating keeps
    serving its last good version, with its errors kept in `errors` and its id in `stale`, so
    students are never cut off by an instructor's typo.
    """

    directory: Path
    visual_checker: VisualChecker | None = None
    banks: dict[str, Bank] = field(default_factory=dict)
    errors: dict[str, tuple[BankError, ...]] = field(default_factory=dict)
    stale: dict[str, str] = field(default_factory=dict)  # bank id -> the file whose new version is broken
    _loaded: dict[Path, tuple[tuple[int, int], LoadResult]] = field(default_factory=dict, repr=False)
    _last_good: dict[str, Bank] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _watcher: threading.Thread | None = field(default=None, repr=False)
    _stop: threading.Event = field(default_factory=threading.Event, repr=False)

    def load(self) -> None:
        """Read every bank file again (at start-up), logging every error."""
        with self._lock:
            self._loaded.clear()
            self._refresh(everything=True)

    def refresh_if_changed(self) -> bool:
        """Re-read the bank files added or changed since the last look, and forget removed ones; True if
        anything changed. Until it returns, the previous banks are served."""
        with self._lock:
            return self._refresh(everything=False)

    def _refresh(self, everything: bool) -> bool:
        if self.directory.is_dir():
            files = {file: _signature(file) for file in bank_files(self.directory)}
            if everything and not files:
                log.warning("no *.yaml banks in %s", self.directory)
        else:
            files = {}
            if everything or self._loaded:
                log.error("QUIZ_DIR %s is not a directory; no banks are served", self.directory)
        changed = [file for file, signature in files.items() if self._loaded.get(file, (None,))[0] != signature]
        removed = [file for file in self._loaded if file not in files]
        for file in removed:
            self._last_good.pop(self._loaded.pop(file)[1].file, None)
        for file in changed:  # the signature from before the read: an edit during the read is seen next time
            self._loaded[file] = files[file], load_file(file, self.directory, self.visual_checker)
        if everything or changed or removed:
            self._publish(log_all=everything)
        return bool(changed or removed)

    def _publish(self, log_all: bool) -> None:
        """Build the served banks from each file's latest result and swap them in; log the errors that are
        new (every error when `log_all`)."""
        results = refuse_reused_ids([self._loaded[file][1] for file in sorted(self._loaded)])
        banks: dict[str, Bank] = {}
        errors: dict[str, tuple[BankError, ...]] = {}
        stale: dict[str, str] = {}
        for result in results:
            if result.bank is not None:
                banks[result.bank.id] = result.bank
                self._last_good[result.file] = result.bank
        for result in results:
            if result.bank is None:
                errors[result.file] = result.errors
                previous = self._last_good.get(result.file)
                if previous is not None and previous.id not in banks:
                    banks[previous.id] = previous
                    stale[previous.id] = result.file
                if log_all or self.errors.get(result.file) != result.errors:
                    log.error("%s bank %s: %d error(s)\n%s",
                              "keeping the last good version of" if previous else "skipping",
                              result.file, len(result.errors), "\n".join(str(e) for e in result.errors))
        self.banks, self.errors, self.stale = banks, errors, stale
        log.info("serving %d bank(s) from %s", len(banks), self.directory)

    def watch(self) -> None:
        """Start this process's hot-reload thread unless it runs. Called on a request, so it starts in
        each gunicorn worker after the fork (a thread of the preloaded master would not survive it)."""
        if self._watcher is not None and self._watcher.is_alive():
            return
        with self._lock:
            if self._watcher is None or not self._watcher.is_alive():
                self._stop.clear()
                self._watcher = threading.Thread(target=self._watch, name=f"bank-hot-reload {self.directory}",
                                                 daemon=True)
                self._watcher.start()

    def stop_watching(self) -> None:
        self._stop.set()
        if self._watcher is not None:
            self._watcher.join()
        self._watcher = None

    def _watch(self) -> None:
        while not self._stop.wait(RELOAD_INTERVAL_S):
            try:
                self.refresh_if_changed()
            except Exception:  # keep watching, and keep serving what was loaded before
                log.exception("hot reload of %s failed", self.directory)

    def get(self, bank_id: str) -> Bank:
        bank = self.banks.get(bank_id)
        if bank is None:
            raise NotFound(f"There is no quiz called {bank_id[:80]!r}. Pick one from the home page.")
        return bank

    def question(self, bank_id: str, question_id: str) -> tuple[Bank, Question]:
        bank = self.get(bank_id)
        question = bank.question(question_id)
        if question is None:
            raise NotFound(f"The quiz {bank.title!r} has no question {question_id[:80]!r}.")
        return bank, question
