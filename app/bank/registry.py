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


def load_paths(paths: list[Path], visual_checker: VisualChecker | None = None) -> list[LoadResult]:
    """Load every bank file under `paths`; a bank id used twice is an error in the later file."""
    results: list[LoadResult] = []
    owners: dict[str, str] = {}
    for path in paths:
        files = bank_files(path)
        if not files and path.is_dir():
            log.warning("no *.yaml banks in %s", path)
        for file in files:
            if path.is_dir() and leaves_folder(file, path):
                # Refused unread: the target may be any file this process can read (a key, a password file).
                error = BankError(display_name(file), 1, 1, "", "this is a symbolic link to a file outside the "
                                  "quiz folder, which is refused; copy the bank into the folder instead")
                results.append(LoadResult(error.file, None, (error,)))
                continue
            result = load_bank_file(file, display_name(file), visual_checker)
            if result.bank is not None and result.bank.id in owners:
                error = BankError(result.file, 1, 1, "id",
                                  f"bank id {result.bank.id!r} is already used by {owners[result.bank.id]}; "
                                  "give this bank another id")
                result = LoadResult(result.file, None, (error,))
            elif result.bank is not None:
                owners[result.bank.id] = result.file
            results.append(result)
    return results


def _signature(entry: os.DirEntry) -> tuple[int, int]:
    """(mtime, size) of the file, or of the link itself when it leads nowhere (a dangling link is an error
    to report, not a reason to stop)."""
    try:
        stat = entry.stat()
    except OSError:
        stat = entry.stat(follow_symlinks=False)
    return stat.st_mtime_ns, stat.st_size


@dataclass
class BankRegistry:
    """The banks being served. `refresh_if_changed` (hot reload) re-reads the folder when a file
    changed; a bank that stops validating keeps serving its last good version, with its errors kept
    in `errors` and its id in `stale`, so students are never cut off by an instructor's typo."""

    directory: Path
    visual_checker: VisualChecker | None = None
    banks: dict[str, Bank] = field(default_factory=dict)
    errors: dict[str, tuple[BankError, ...]] = field(default_factory=dict)
    stale: dict[str, str] = field(default_factory=dict)  # bank id -> the file whose new version is broken
    _last_good: dict[str, Bank] = field(default_factory=dict, repr=False)
    _snapshot: dict[str, tuple[int, int]] | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def _files_snapshot(self) -> dict[str, tuple[int, int]]:
        try:
            entries = os.scandir(self.directory)
        except OSError:
            return {}
        with entries:
            return {e.name: _signature(e) for e in entries
                    if e.name.endswith(BANK_SUFFIXES) and not e.name.startswith(".")}

    def load(self) -> None:
        snapshot = self._files_snapshot()
        banks: dict[str, Bank] = {}
        errors: dict[str, tuple[BankError, ...]] = {}
        stale: dict[str, str] = {}
        if not self.directory.is_dir():
            log.error("QUIZ_DIR %s is not a directory; no banks are served", self.directory)
        else:
            results = load_paths([self.directory], self.visual_checker)
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
                    log.error("%s bank %s: %d error(s)\n%s",
                              "keeping the last good version of" if previous else "skipping",
                              result.file, len(result.errors), "\n".join(str(e) for e in result.errors))
        self.banks, self.errors, self.stale, self._snapshot = banks, errors, stale, snapshot
        log.info("serving %d bank(s) from %s", len(banks), self.directory)

    def refresh_if_changed(self) -> bool:
        """Reload when a bank file was added, removed or modified; True if it reloaded."""
        if self._files_snapshot() == self._snapshot:
            return False
        with self._lock:
            if self._files_snapshot() == self._snapshot:
                return False  # another thread reloaded meanwhile
            self.load()
        return True

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
