"""The set of banks the server is serving, loaded from a directory of YAML files.

A broken file is logged with every error and skipped; the good banks are still served.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import NotFound
from .loader import BankError, LoadResult, VisualChecker, load_bank_file
from .schema import Bank, Question

log = logging.getLogger(__name__)

BANK_SUFFIXES = (".yaml", ".yml")


def bank_files(path: Path) -> list[Path]:
    """The bank files at `path`: the file itself, or every *.yaml / *.yml directly in the folder."""
    if path.is_dir():
        return sorted(p for p in path.iterdir() if p.suffix in BANK_SUFFIXES and p.is_file()
                      and not p.name.startswith("."))
    return [path]


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


@dataclass
class BankRegistry:
    directory: Path
    visual_checker: VisualChecker | None = None
    banks: dict[str, Bank] = field(default_factory=dict)
    errors: dict[str, tuple[BankError, ...]] = field(default_factory=dict)

    def load(self) -> None:
        banks: dict[str, Bank] = {}
        errors: dict[str, tuple[BankError, ...]] = {}
        if not self.directory.is_dir():
            log.error("QUIZ_DIR %s is not a directory; no banks are served", self.directory)
        else:
            for result in load_paths([self.directory], self.visual_checker):
                if result.bank is None:
                    errors[result.file] = result.errors
                    log.error("skipping bank %s: %d error(s)\n%s", result.file, len(result.errors),
                              "\n".join(str(e) for e in result.errors))
                else:
                    banks[result.bank.id] = result.bank
        self.banks, self.errors = banks, errors
        log.info("serving %d bank(s) from %s", len(banks), self.directory)

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
