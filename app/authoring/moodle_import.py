"""Import a Moodle XML file as a bank: the question types the app has, written as YAML to go on editing.

Moodle's true/false, multiple choice (one answer or several) and numerical questions come across with their
text, per-answer feedback, general feedback (the explanation), tags and first hint. A numerical question's
wrong answers that have feedback become its misconceptions. HTML becomes Markdown (markdownify), and maths
written \\( \\) or \\[ \\] becomes $ $ and $$ $$. What has no place in a bank is left out, and each such thing is
reported as an ImportWarning: other question types, images, partial credit, units with a multiplier.
"""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass

import yaml
from markdownify import markdownify

from ..bank.schema import MAX_OPTIONS

SUPPORTED = ("truefalse", "multichoice", "numerical")
MAX_INPUT_BYTES = 20 * 1024 * 1024  # a Moodle export of a few thousand questions, without images
# \( \) inline, and \[ \] or $$ $$ on their own, as Moodle's MathJax filter reads them.
MATH = re.compile(r"\\\((?P<inline>.+?)\\\)|\\\[(?P<display>.+?)\\\]|\$\$(?P<dollars>.+?)\$\$", re.S)


@dataclass(frozen=True)
class ImportWarning:
    """Something in the Moodle file that the bank cannot carry, or carries differently."""

    number: int  # the question's position in the file, from 1 (categories included)
    name: str
    message: str

    def __str__(self) -> str:
        return f"question {self.number} ({self.name}): {self.message}"


@dataclass(frozen=True)
class Imported:
    text: str  # the bank's YAML
    questions: int
    skipped: int  # questions of types the app does not have
    warnings: tuple[ImportWarning, ...]


class ImportFailed(Exception):
    """The file is not Moodle XML the importer can read; the message says why."""


# --- text ------------------------------------------------------------------------------------------

def to_markdown(element: ElementTree.Element | None) -> tuple[str, bool]:
    """The Markdown of a Moodle text field (<questiontext>, <feedback>, ...), and whether it had images (left out)."""
    if element is None:
        return "", False
    raw = element.findtext("text") or ""
    text_format = element.get("format", "html")
    if text_format in ("markdown", "plain_text", "moodle_auto_format"):
        return raw.strip(), False
    maths: list[str] = []

    def hold(match: re.Match) -> str:  # maths out of markdownify's way, which would escape its _ and *
        latex = match.group("inline") or match.group("display") or match.group("dollars")
        display = match.group("inline") is None  # \[ \] and $$ $$ are display maths in MathJax
        maths.append(f"$${latex.strip()}$$" if display else f"${latex.strip()}$")
        return f"MOODLEMATH{len(maths) - 1}X"

    images = bool(re.search(r"<img\b", raw, re.I))
    markdown = markdownify(MATH.sub(hold, raw), heading_style="ATX", bullets="-", strip=["img"])
    markdown = re.sub(r"MOODLEMATH(\d+)X", lambda m: maths[int(m.group(1))], markdown)
    markdown = re.sub(r"[ \t]+\n", "\n", markdown)
    return re.sub(r"\n{3,}", "\n\n", markdown).strip(), images


def as_id(name: str) -> str:
    """A name as id characters: lower case, [a-z0-9_-], at most 56 of them ("" when none is left)."""
    return re.sub(r"[^a-z0-9_-]+", "-", name.lower()).strip("-_")[:56].strip("-_")


def slug(name: str, taken: set[str], fallback: str) -> str:
    """A bank id from a Moodle question name: lower case, [a-z0-9_-], at most 64 characters, not yet taken."""
    base = as_id(name) or fallback
    candidate, n = base, 2
    while candidate in taken:
        candidate, n = f"{base}-{n}", n + 1
    taken.add(candidate)
    return candidate


def _fraction(answer: ElementTree.Element) -> float:
    try:
        value = float(answer.get("fraction", "0"))
    except ValueError:
        return 0.0
    return value if math.isfinite(value) else 0.0


def _number(text: str | None) -> float | None:
    try:
        value = float((text or "").strip())
    except ValueError:
        return None
    return value if math.isfinite(value) else None


# --- questions -------------------------------------------------------------------------------------

class _Question:
    """One Moodle question being turned into a bank question (a dict in the bank's field order)."""

    def __init__(self, element: ElementTree.Element, number: int, taken: set[str], warnings: list[ImportWarning]):
        self.element, self.number, self.warnings = element, number, warnings
        self.name = (element.findtext("name/text") or "").strip() or f"question {number}"
        self.id = slug(self.name, taken, f"question-{number}")

    def warn(self, message: str) -> None:
        self.warnings.append(ImportWarning(self.number, self.name, message))

    def text(self, element: ElementTree.Element | None, what: str) -> str:
        markdown, images = to_markdown(element)
        if images:
            self.warn(f"the {what} had images, which were left out: add them to the prompt as a link, or draw the "
                      "idea with a visual")
        return markdown

    def build(self) -> dict | None:
        kind = self.element.get("type")
        question = {"id": self.id, "type": None, "prompt": self.text(self.element.find("questiontext"), "question text")}
        if not question["prompt"]:
            self.warn("it has no question text, so it was left out")
            return None
        body = {"truefalse": self._true_false, "multichoice": self._choices, "numerical": self._numerical}[kind]()
        if body is None:
            return None
        question.update(body)
        explanation = self.text(self.element.find("generalfeedback"), "general feedback")
        if not explanation:
            self.warn("it has no general feedback, which the bank's explanation comes from: write one "
                      "(validate-quizzes points at it)")
        question["explanation"] = explanation
        tags = [as_id(e.text or "") for e in self.element.iterfind("tags/tag/text")]
        if any(tags):  # a tag of no id characters (日本) is left out
            question["tags"] = list(dict.fromkeys(t for t in tags if t))
        hints = [self.text(h, "hint") for h in self.element.iterfind("hint")]
        hints = [h for h in hints if h]
        if hints:
            question["hint"] = hints[0]
            if len(set(hints)) > 1:
                self.warn(f"it has {len(set(hints))} different hints; a bank question has one, so only the first "
                          "was kept")
        return question

    def _answers(self) -> list[ElementTree.Element]:
        return self.element.findall("answer")

    def _feedback(self, answer: ElementTree.Element) -> str:
        return self.text(answer.find("feedback"), "feedback of an answer")

    def _true_false(self) -> dict | None:
        options, key = [], None
        for answer in self._answers():
            value = (answer.findtext("text") or "").strip().lower()
            if value not in ("true", "false"):
                continue
            option = {"id": value, "text": value.capitalize()}
            if feedback := self._feedback(answer):
                option["feedback"] = feedback
            options.append(option)
            if _fraction(answer) >= 100 - 1e-6:
                key = value == "true"
        if key is None or len(options) != 2:
            self.warn("its answers are not one true and one false, one of them worth 100 %, so it was left out")
            return None
        options.sort(key=lambda o: o["id"] != "true")
        if not any("feedback" in o for o in options):
            return {"type": "true_false", "answer": key}
        for option in options:
            option["correct"] = (option["id"] == "true") == key
        return {"type": "true_false", "options": options}

    def _choices(self) -> dict | None:
        single = (self.element.findtext("single") or "true").strip().lower() in ("true", "1")
        answers = self._answers()
        if not 2 <= len(answers) <= MAX_OPTIONS:
            self.warn(f"it has {len(answers)} answers; a bank question has 2 to {MAX_OPTIONS} options, so it was "
                      "left out")
            return None
        fractions = [_fraction(a) for a in answers]
        options = []
        for index, (answer, fraction) in enumerate(zip(answers, fractions)):
            text = self.text(answer, "text of an answer")
            if not text:
                self.warn(f"answer {index + 1} has no text, so the question was left out")
                return None
            option = {"id": chr(ord("a") + index) if index < 26 else f"option-{index + 1}", "text": text,
                      "correct": fraction > 0 if not single else fraction >= 100 - 1e-6}
            if feedback := self._feedback(answer):
                option["feedback"] = feedback
            options.append(option)
        partial = [f for f in fractions if 0 < f < 100 - 1e-6]
        if single:
            if not any(o["correct"] for o in options):
                self.warn("no answer is worth 100 %, so it was left out")
                return None
            if partial:
                self.warn("answers worth part of the grade count as wrong: a single-choice question here has right "
                          "options (the point) and wrong ones (0)")
            return {"type": "single_choice", "options": options}
        if not any(o["correct"] for o in options):
            self.warn("no answer has a positive grade, so it was left out")
            return None
        negative = any(f < 0 for f in fractions)
        scoring = "net_correct" if negative else "per_option"
        self.warn(f"Moodle adds up the grades of the answers picked; here it is scored {scoring} (each right pick "
                  + ("earns a share, each wrong pick takes one away" if negative else
                     "or wrong option left earns a share") + "): check that this is what you want")
        return {"type": "multiple_choice", "scoring": scoring, "options": options}

    def _numerical(self) -> dict | None:
        right, misconceptions = None, []
        for answer in self._answers():
            value, fraction = _number(answer.findtext("text")), _fraction(answer)
            tolerance = abs(_number(answer.findtext("tolerance")) or 0.0)
            if value is None:
                if (answer.findtext("text") or "").strip() != "*":
                    self.warn(f"the answer {answer.findtext('text')!r} is not a number, so it was left out")
                continue
            if fraction >= 100 - 1e-6 and right is None:
                right = (value, tolerance)
            elif fraction <= 1e-6 and (feedback := self._feedback(answer)):
                misconceptions.append({"id": f"slip-{len(misconceptions) + 1}",
                                       "answer": value, "feedback": feedback})
            elif fraction > 1e-6:
                self.warn(f"the answer {value:g} is worth {fraction:g} % of the grade; a numeric question here is "
                          "right or wrong, so it was left out")
        if right is None:
            self.warn("no numeric answer is worth 100 %, so it was left out")
            return None
        body = {"type": "numeric", "answer": right[0], "tolerance": {"abs": right[1]}}
        units = [(u.findtext("unit_name") or "").strip() for u in self.element.iterfind("units/unit")
                 if _number(u.findtext("multiplier")) == 1.0]
        if units and units[0]:
            body["unit"] = units[0]
        if len(self.element.findall("units/unit")) > len(units[:1]):
            self.warn("units other than the first with multiplier 1 were left out (the app takes one unit)")
        if misconceptions:
            body["misconceptions"] = misconceptions[:20]
            if len(misconceptions) > 20:
                self.warn(f"{len(misconceptions)} wrong answers have feedback; the first 20 became misconceptions")
        return body


# --- the bank --------------------------------------------------------------------------------------

class _Dumper(yaml.SafeDumper):
    """Multi-line text as YAML block literals (|), as a person writes a prompt."""


def _text(dumper: yaml.SafeDumper, value: str):
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _text)


def import_moodle_xml(raw: bytes, bank_id: str, title: str | None = None) -> Imported:
    """The bank of a Moodle XML file's supported questions, as YAML with the id `bank_id`."""
    if len(raw) > MAX_INPUT_BYTES:
        raise ImportFailed(f"the file is {len(raw):,} bytes; at most {MAX_INPUT_BYTES:,} are read (export the "
                           "questions without their images, or a category at a time)")
    if b"<!DOCTYPE" in raw[:4096].upper():
        raise ImportFailed("the file declares a DOCTYPE, which Moodle's exports never have; it is not read")
    try:
        root = ElementTree.fromstring(raw)
    except ElementTree.ParseError as error:
        line, column = error.position
        raise ImportFailed(f"not well-formed XML at line {line}, column {column + 1}: {error}") from None
    if root.tag != "quiz":
        raise ImportFailed(f"the root element is <{root.tag}>; Moodle XML's is <quiz>")
    warnings: list[ImportWarning] = []
    questions, taken, skipped, category = [], set(), 0, None
    for number, element in enumerate(root.iterfind("question"), start=1):
        kind = element.get("type", "")
        if kind == "category":
            category = (element.findtext("category/text") or "").strip().split("/")[-1] or category
            continue
        if kind not in SUPPORTED:
            skipped += 1
            name = (element.findtext("name/text") or "").strip() or f"question {number}"
            warnings.append(ImportWarning(number, name, f"Moodle's {kind or 'untyped'} questions have no "
                                          "counterpart here (true/false, multiple choice and numerical do); left out"))
            continue
        built = _Question(element, number, taken, warnings).build()
        if built is None:
            skipped += 1
        else:
            questions.append(built)
    if not questions:
        raise ImportFailed(f"no question could be imported ({skipped} left out)"
                           + "".join(f"\n  {w}" for w in warnings))
    bank = {"id": bank_id, "title": title or category or bank_id, "questions": questions}
    header = "# Imported from Moodle XML by `flask --app app import-moodle`. Check it with validate-quizzes.\n"
    text = header + yaml.dump(bank, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=110)
    return Imported(text, len(questions), skipped, tuple(warnings))
