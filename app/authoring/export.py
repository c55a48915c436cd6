"""Export a question bank for Moodle, as Moodle XML or GIFT text, and report what could not be carried.

Moodle XML keeps HTML, per-option feedback, tags and the visual (embedded as a file). GIFT is plain
text, so it leaves out visuals, units, tags and links, and reports each one as an ExportWarning.
Neither has a grid: a cells question becomes a multiple-choice list of its cells, a matrix question a
Moodle cloze table of numerical blanks (GIFT cannot carry it), each with a warning.
"""

from __future__ import annotations

import base64
import functools
import html
import math
import re
import xml.etree.ElementTree as ElementTree
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from markdown_it import MarkdownIt
from markupsafe import Markup

from ..bank.schema import Bank, Option, Question, Tolerance
from ..bank.variants import VariantError, has_params, instantiate
from ..markup import build_markdown, render_inline, render_markdown
from ..visuals import get_kind
from ..visuals.base import Rendered, VisualKind, VisualParams

FORMATS = ("gift", "moodle-xml")
MATH_MODES = ("tex", "mathml")
VISUAL_PLACEMENTS = ("feedback", "question", "none")

Renderer = Callable[[VisualKind, VisualParams], Rendered]

MOODLE_TYPES = {"true_false": "truefalse", "single_choice": "multichoice", "multiple_choice": "multichoice",
                "numeric": "numerical", "matrix": "cloze"}

# The grades Moodle accepts for an answer, in percent, and their negatives. On import each fraction must
# lie within 1e-5 of one of question_bank::fraction_options_full() (0.3333333 = 33.33333 %), or the
# question is refused.
MOODLE_PERCENTS = (100.0, 90.0, 83.33333, 80.0, 75.0, 70.0, 66.66667, 60.0, 50.0, 40.0, 33.33333, 30.0,
                   25.0, 20.0, 16.66667, 14.28571, 12.5, 11.11111, 10.0, 5.0)


@dataclass(frozen=True)
class ExportWarning:
    """Something in a question that the target format cannot carry, or carries only approximately."""

    index: int | None  # the question's position in the bank, as in the loader's `questions[i]` paths; None: the bank
    question_id: str | None
    message: str

    def __str__(self) -> str:
        if self.index is None:
            return f"bank: {self.message}"
        return f"questions[{self.index}] {self.question_id}: {self.message}"


@dataclass(frozen=True)
class Export:
    text: str
    questions: int  # how many questions were written (variants count separately)
    warnings: tuple[ExportWarning, ...]
    visuals: int  # how many of them have a visual: Moodle XML draws a figure for each unless visual="none"


@dataclass(frozen=True)
class _Item:
    """One question to write: a bank question, concrete for one seed, under a unique name."""

    index: int
    name: str
    question: Question
    notes: tuple[str, ...] = ()  # what the export changed, written as a comment beside it and as a warning


@dataclass
class _Warnings:
    items: list[ExportWarning] = field(default_factory=list)

    def add(self, index: int, question_id: str, message: str) -> None:
        self.items.append(ExportWarning(index, question_id, message))

    def about(self, item: _Item, message: str) -> None:
        self.add(item.index, item.name, message)


def _moodle_penalty(bank: Bank) -> float | None:
    """A try_again bank's Moodle <penalty>: the share of the point a wrong first try costs (Moodle takes it off
    for each wrong try)."""
    return round(1 - bank.penalty[1], 7) if bank.feedback == "try_again" else None


def bank_notes(bank: Bank, output_format: str) -> list[str]:
    """What a question file cannot carry of the bank's settings: Moodle sets these on the quiz, not the question."""
    notes = []
    if bank.feedback == "try_again":
        schedule = ", ".join(f"{factor:g}" for factor in bank.penalty)
        if output_format == "moodle-xml":
            linear = all(math.isclose(factor, max(0.0, 1 - k * _moodle_penalty(bank)), abs_tol=1e-6)
                         for k, factor in enumerate(bank.penalty))
            notes.append(f"feedback: try_again ({bank.tries} tries, penalty [{schedule}]) is a Moodle quiz setting: "
                         "choose the question behaviour 'Interactive with multiple tries' and allow "
                         f"{bank.tries} tries. Each question's <penalty> is {_moodle_penalty(bank):g}, which Moodle "
                         "takes off for every wrong try" + ("" if linear else
                         f"; that is not this bank's schedule [{schedule}] after the second try"))
        else:
            notes.append(f"feedback: try_again ({bank.tries} tries, penalty [{schedule}]) cannot be carried by GIFT; "
                         "set the tries and the penalty in the Moodle quiz ('Interactive with multiple tries')")
    elif bank.feedback == "deferred":
        notes.append("feedback: deferred is a Moodle quiz setting: choose the question behaviour 'Deferred feedback'")
    if bank.mode == "graded":
        notes.append("mode: graded has no counterpart in a question file; set the Moodle quiz's attempts and "
                     "review options so answers are shown only as intended")
    settings = [("time_limit", bank.time_limit is not None, "Timing: Time limit"),
                ("opens/closes", bank.opens is not None or bank.closes is not None, "Timing: Open and Close the quiz"),
                ("attempts", bank.attempts is not None, "Grade: Attempts allowed"),
                ("shuffle.questions", bank.shuffle is not None and bank.shuffle.questions,
                 "Question behaviour / Layout: Shuffle"),
                ("shuffle.options", bank.shuffle is not None and bank.shuffle.options and output_format == "gift",
                 "Question behaviour: Shuffle within questions")]
    if bank.pools:
        notes.append("pools cannot be carried by a question file: every question is exported; to draw some of them "
                     "per attempt, put each pool's questions in a Moodle question category and add a random "
                     "question from it to the quiz")
    for name, present, where in settings:
        if present:
            notes.append(f"{name} is a Moodle quiz setting that a question file cannot carry: set it in the quiz's "
                         f"'{where}'")
    return notes


# --- Moodle's grades ---------------------------------------------------------------------------------


def nearest_percent(value: float) -> float:
    """The Moodle grade closest to `value` percent, with the same sign (0 stays 0)."""
    if value == 0:
        return 0.0
    return math.copysign(min(MOODLE_PERCENTS, key=lambda allowed: abs(allowed - abs(value))), value)


def right_percents(count: int) -> list[float] | None:
    """Grades for `count` right options that Moodle accepts and that sum to 100 (within 0.01).

    100/k is on Moodle's list for k = 1..10 (33.33333 x 3 = 99.99999, which Moodle rounds to 100);
    11..20 right options get a mix of 10 and 5 (unequal, so reported); more than 20 cannot sum to 100.
    """
    if 1 <= count <= 10:
        share = round(100 / count, 5)
        assert share in MOODLE_PERCENTS, share
        return [share] * count
    if 10 < count <= 20:
        return [10.0] * (20 - count) + [5.0] * (2 * count - 20)
    return None


@dataclass(frozen=True)
class MultiSelectGrades:
    right: tuple[float, ...]  # one per right option, in option order
    wrong: float  # each wrong option
    notes: tuple[str, ...]  # where Moodle's grading differs from the app's (empty when it is exact)


def multi_select_grades(question: Question) -> MultiSelectGrades | None:
    """Moodle grades for a multiple_choice question. Moodle sums the grades of the ticked options and
    clamps to 0..100 %, so net_correct maps exactly (+100/k right, -100/k wrong, for k <= 10 right
    options); all_or_nothing and per_option have no exact equivalent, which the notes say."""
    right_count = len(question.correct_option_ids)
    wrong_count = len(question.options) - right_count
    rights = right_percents(right_count)
    if rights is None:
        return None
    notes: list[str] = []
    if right_count > 10:
        notes.append(f"Moodle's grades cannot split 100% equally among {right_count} right options; "
                     "they get 10% or 5% each")
    scheme = question.scoring or "all_or_nothing"
    if scheme == "net_correct":
        wrong = nearest_percent(-100 / right_count)
        if abs(wrong + 100 / right_count) > 1e-3:
            notes.append(f"net_correct: a wrong tick costs {_percent_text(-wrong)}% in Moodle, not 1/{right_count} "
                         "of the mark")
    elif scheme == "per_option":
        wrong = nearest_percent(-100 / wrong_count) if wrong_count else 0.0
        if wrong_count:
            notes.append(f"per_option has no Moodle equivalent (Moodle cannot credit a wrong option left "
                         f"unticked); exported as {_percent_text(rights[0])}% per right tick and "
                         f"{_percent_text(wrong)}% per wrong tick")
    else:
        wrong = -100.0
        if right_count > 1:
            notes.append("all_or_nothing has no Moodle equivalent: Moodle gives partial credit for some of the "
                         "right options; exported with -100% per wrong option, so any wrong tick still scores 0")
    return MultiSelectGrades(tuple(rights), wrong, tuple(notes))


def _percent_text(value: float) -> str:
    return format(value, ".7g")  # 33.33333, 100, -50, 12.5


def _number_text(value: float) -> str:
    return format(value, ".15g")  # 32, 0.125, 1e-05: all numeric to Moodle (PHP is_numeric)


def absolute_tolerance(question: Question, value: float | None = None) -> float:
    """Moodle's numerical tolerance is absolute: max(abs, rel * |answer|), the app's own rule (around
    `value`, the key unless given)."""
    tolerance = question.tolerance or Tolerance()
    return max(tolerance.abs, tolerance.rel * abs(question.answer if value is None else value))


def _cloze_table(question: Question) -> str:
    """The matrix key as a table of Moodle cloze NUMERICAL blanks, {1:NUMERICAL:=value:tolerance}."""
    def blank(value: float) -> str:
        return f"<td>{{1:NUMERICAL:={_number_text(value)}:{_number_text(absolute_tolerance(question, value))}}}</td>"

    rows = "".join("<tr>" + "".join(blank(value) for value in row) + "</tr>" for row in question.answer)
    return f"<table>{rows}</table>"


# --- Questions and variants --------------------------------------------------------------------------


def _items(bank: Bank, seed: int, variants: int, warnings: _Warnings) -> Iterator[_Item]:
    for index, question in enumerate(bank.questions):
        parameterised = has_params(question)
        seeds = range(seed, seed + variants) if parameterised else range(seed, seed + 1)
        if parameterised and variants == 1:
            warnings.add(index, question.id, f"has params; only its variant for seed {seed} was exported "
                                             "(--seed picks another, --variants K exports K of them)")
        for variant_seed in seeds:
            try:
                concrete = instantiate(question, variant_seed)
            except VariantError as error:
                warnings.add(index, question.id, f"its variant for seed {variant_seed} cannot be made ({error}); "
                                                 "it was left out")
                continue
            name = f"{question.id}-seed{variant_seed}" if parameterised and variants > 1 else question.id
            notes: tuple[str, ...] = ()
            if concrete.type == "cells":
                concrete = _cells_as_choices(concrete)
                notes = (f"Moodle has no grid of cells; exported as a multiple-choice list of its "
                         f"{len(concrete.options)} cells",)
            elif concrete.type == "matrix":
                notes = ("exported as a Moodle cloze question with one numerical blank per entry; Moodle gives "
                         "credit per entry, the app only for the whole matrix",)
                if concrete.misconceptions:
                    notes += (f"its misconceptions ({', '.join(m.id for m in concrete.misconceptions)}) cannot be "
                              "carried by a cloze question; they were left out",)
            concrete, linked = _without_site_links(concrete)
            if linked:
                notes += (f"its links to this app's pages ({', '.join(linked)}) lead nowhere from Moodle; "
                          "each was reduced to its words",)
            yield _Item(index, name, concrete, notes)


# A Markdown link to a path on this app's own site, e.g. [See Tutorial](/learn/attention#soft-lookup-text).
SITE_LINK = re.compile(r"\[([^\]\n]+)\]\((/[^)\s]*)\)")


def _without_site_links(question: Question) -> tuple[Question, list[str]]:
    """The question with every Markdown link to a site path replaced by its words, and those paths."""
    linked: list[str] = []

    def words(text: str | None) -> str | None:
        if text is None:
            return None
        linked.extend(match.group(2) for match in SITE_LINK.finditer(text))
        return SITE_LINK.sub(r"\1", text)

    update = {"prompt": words(question.prompt), "explanation": words(question.explanation),
              "options": [o.model_copy(update={"text": words(o.text), "feedback": words(o.feedback)})
                          for o in question.options]}
    if question.misconceptions:
        update["misconceptions"] = [m.model_copy(update={"feedback": words(m.feedback)})
                                    for m in question.misconceptions]
    return question.model_copy(update=update), list(dict.fromkeys(linked))


def _cells_as_choices(question: Question) -> Question:
    """A cells question as the multiple_choice question it grades like: one option per cell, row by row."""
    key = {tuple(cell) for cell in question.answer}
    def text(i: int, j: int) -> str:  # a word the sentence holds twice is named with its position
        query, key_word = question.grid.names(i, j)
        return f"query {query} → key {key_word}"
    options = [Option(id=f"cell-{i}-{j}", text=text(i, j), correct=(i, j) in key)
               for i in range(len(question.grid.rows)) for j in range(len(question.grid.cols))]
    return question.model_copy(update={"type": "multiple_choice", "options": options, "grid": None, "answer": None})



def _grades_of(item: _Item, warnings: _Warnings) -> tuple[bool, MultiSelectGrades | None]:
    """(whether the question can be exported, its multi-select grades if it is multiple_choice)."""
    if item.question.type != "multiple_choice":
        return True, None
    grades = multi_select_grades(item.question)
    if grades is None:
        warnings.about(item, f"has {len(item.question.correct_option_ids)} right options; Moodle's grades "
                             "cannot sum to 100% over more than 20, so the question was left out")
        return False, None
    return True, grades


def _render_visual(question: Question, render: Renderer | None) -> Rendered:
    kind = get_kind(question.visual.kind)
    if kind is None:
        raise LookupError(f"unknown visual kind {question.visual.kind!r}")
    params = kind.parse(dict(question.visual.params))
    return (render or (lambda k, p: k.render(p)))(kind, params)


# --- Moodle XML --------------------------------------------------------------------------------------


@functools.cache
def _tex_markdown() -> MarkdownIt:
    # app.markup's dialect, but the maths stays TeX in \( \) and \[ \] for Moodle's MathJax filter:
    # Moodle's HTML cleaner strips MathML from question text.
    return build_markdown(_tex_math)


def _tex_math(latex: str, options: dict) -> str:
    if options.get("display_mode"):
        return f"\\[{html.escape(latex)}\\]"
    return f"\\({html.escape(latex)}\\)"


def to_html(text: str, *, inline: bool, math_mode: str = "tex") -> str:
    """Markdown to HTML for Moodle: maths as TeX for MathJax ("tex") or as the app's MathML ("mathml")."""
    if math_mode == "mathml":
        return str(render_inline(text) if inline else render_markdown(text))
    return _tex_markdown().renderInline(text) if inline else _tex_markdown().render(text)


def _text_field(parent: ElementTree.Element, tag: str, text: str, text_format: str = "html",
                files: tuple[tuple[str, bytes], ...] = ()) -> ElementTree.Element:
    element = ElementTree.SubElement(parent, tag, format=text_format)
    ElementTree.SubElement(element, "text").text = text
    for name, data in files:
        file = ElementTree.SubElement(element, "file", name=name, path="/", encoding="base64")
        file.text = base64.b64encode(data).decode("ascii")
    return element


def _figure_html(file_name: str, rendered: Rendered) -> str:
    figure = Markup('<p><img src="@@PLUGINFILE@@/{}" alt="{}"></p>').format(file_name, rendered.alt)
    if rendered.caption:
        figure += Markup("<p>{}</p>").format(rendered.caption)
    return str(figure)


def _xml_comment(text: str) -> ElementTree.Element:
    return ElementTree.Comment(" " + text.replace("--", "- -") + " ")  # "--" may not appear in a comment


def moodle_category(bank: Bank, question_id: str | None = None) -> str:
    """The question-bank category an export puts questions in: $course$/top/<the bank's title>, and, for the variants
    of a parameterised question (--variants K), a category of its own under it, named after the question, from which
    a Moodle quiz draws one at random. A slash in a name is doubled, as Moodle's category paths escape it."""
    names = [bank.title, *([question_id] if question_id else [])]
    return "$course$/top/" + "/".join(name.replace("/", "//") for name in names)


def _category_of(bank: Bank, item: _Item, variants: int) -> str:
    template = bank.questions[item.index]
    return moodle_category(bank, template.id if variants > 1 and has_params(template) else None)


def _bank_info_html(bank: Bank, math_mode: str) -> str:
    """The bank's description and source, for its Moodle category's description."""
    parts = [to_html(bank.description, inline=False, math_mode=math_mode)] if bank.description else []
    if bank.source:
        parts.append(str(Markup("<p>{}</p>").format(bank.source)))
    return "".join(parts)


def _moodle_category(quiz: ElementTree.Element, path: str, info_html: str) -> None:
    element = ElementTree.SubElement(quiz, "question", type="category")
    ElementTree.SubElement(ElementTree.SubElement(element, "category"), "text").text = path
    _text_field(element, "info", info_html)


def to_moodle_xml(bank: Bank, *, seed: int = 0, variants: int = 1, math_mode: str = "tex",
                  visual: str = "feedback", render: Renderer | None = None) -> Export:
    """The bank as Moodle XML (question/format/xml): one <question> per question (or per variant).

    `visual` puts the rendered figure in the general feedback (after answering, as the app shows it), in
    the question text, or nowhere ("none").
    """
    warnings = _Warnings()
    quiz = ElementTree.Element("quiz")
    quiz.append(_xml_comment(f"attention-quiz bank {bank.id}, exported with seed {seed}"))
    for note in bank_notes(bank, "moodle-xml"):
        quiz.append(_xml_comment(note))
        warnings.items.append(ExportWarning(None, None, note))
    count, visuals, category = 0, 0, None
    for item in _items(bank, seed, variants, warnings):
        question = item.question
        exportable, grades = _grades_of(item, warnings)
        if not exportable:
            continue
        visuals += question.visual is not None
        if (target := _category_of(bank, item, variants)) != category:  # Moodle files the questions after it there
            category = target
            _moodle_category(quiz, category, _bank_info_html(bank, math_mode) if category == moodle_category(bank)
                             else f"<p>Variants of question {html.escape(bank.questions[item.index].id)}: a quiz "
                                  "draws one of them at random.</p>")
        for note in item.notes + (grades.notes if grades else ()):
            quiz.append(_xml_comment(f"{item.name}: {note}"))
            warnings.about(item, note)

        prompt_html = to_html(question.prompt, inline=False, math_mode=math_mode)
        feedback_html = to_html(question.explanation, inline=False, math_mode=math_mode)
        files: tuple[tuple[str, bytes], ...] = ()
        if question.visual is not None and visual != "none":
            try:
                rendered = _render_visual(question, render)
            except Exception as error:  # reported, so one broken figure does not stop the export
                warnings.about(item, f"the visual {question.visual.kind!r} could not be rendered "
                                     f"({type(error).__name__}: {error}); it was left out")
            else:
                extension = "svg" if rendered.mimetype == "image/svg+xml" else "png"
                files = ((f"{item.name}.{extension}", rendered.image),)
                if visual == "question":
                    prompt_html += _figure_html(files[0][0], rendered)
                else:
                    feedback_html += _figure_html(files[0][0], rendered)
        if question.learn:
            if question.learn.startswith(("http://", "https://")):
                feedback_html += str(Markup('<p><a href="{}">Read more</a></p>').format(question.learn))
            else:
                warnings.about(item, f"the learn link {question.learn!r} is a path on this app's site, "
                                     "which Moodle cannot follow; it was left out")

        if question.type == "matrix":
            prompt_html += _cloze_table(question)
        element = ElementTree.SubElement(quiz, "question", type=MOODLE_TYPES[question.type])
        ElementTree.SubElement(ElementTree.SubElement(element, "name"), "text").text = item.name
        _text_field(element, "questiontext", prompt_html, files=files if visual == "question" else ())
        _text_field(element, "generalfeedback", feedback_html, files=files if visual == "feedback" else ())
        ElementTree.SubElement(element, "defaultgrade").text = "1"
        if _moodle_penalty(bank) is not None:
            ElementTree.SubElement(element, "penalty").text = _number_text(_moodle_penalty(bank))
        if question.hint and bank.feedback == "try_again":  # Moodle's interactive mode shows one after each wrong try
            for _ in range(bank.tries - 1):
                _text_field(element, "hint", to_html(question.hint, inline=False, math_mode=math_mode))
        if question.tags:
            tags = ElementTree.SubElement(element, "tags")
            for tag in question.tags:
                ElementTree.SubElement(ElementTree.SubElement(tags, "tag"), "text").text = tag
        if question.type != "matrix":  # a cloze question's blanks are in its text
            # The bank's shuffle.options, for the choice questions the app shuffles (not true/false, nor cells'
            # row-by-row list); Moodle shuffles only where the quiz's "Shuffle within questions" is on too.
            shuffled = (bank.shuffle is not None and bank.shuffle.options
                        and bank.questions[item.index].type in ("single_choice", "multiple_choice"))
            _moodle_answers(element, question, grades, math_mode, shuffled)
        count += 1
    ElementTree.indent(quiz)
    text = '<?xml version="1.0" encoding="UTF-8"?>\n' + ElementTree.tostring(quiz, encoding="unicode") + "\n"
    return Export(text, count, tuple(warnings.items), visuals)


def _moodle_answers(element: ElementTree.Element, question: Question, grades: MultiSelectGrades | None,
                    math_mode: str, shuffled: bool = False) -> None:
    def feedback_of(option) -> str:
        return to_html(option.feedback, inline=True, math_mode=math_mode) if option.feedback else ""

    if question.type == "true_false":
        key = bool(question.option("true").correct)
        for option_id in ("true", "false"):
            option = question.option(option_id)
            fraction = "100" if (option_id == "true") == key else "0"
            answer = ElementTree.SubElement(element, "answer", fraction=fraction, format="moodle_auto_format")
            ElementTree.SubElement(answer, "text").text = option_id  # Moodle matches these two words
            _text_field(answer, "feedback", feedback_of(option))
        return
    if question.type == "numeric":
        # Moodle grades by the first answer within its tolerance: the key, then each misconception (0%).
        answers = [(question.answer, "100", "")] + [(m.answer, "0", to_html(m.feedback, inline=False, math_mode=math_mode))
                                                    for m in question.misconceptions or ()]
        for value, fraction, feedback in answers:
            answer = ElementTree.SubElement(element, "answer", fraction=fraction, format="moodle_auto_format")
            ElementTree.SubElement(answer, "text").text = _number_text(value)
            ElementTree.SubElement(answer, "tolerance").text = _number_text(absolute_tolerance(question, value))
            _text_field(answer, "feedback", feedback)
        if question.unit:
            unit = ElementTree.SubElement(ElementTree.SubElement(element, "units"), "unit")
            ElementTree.SubElement(unit, "multiplier").text = "1"
            ElementTree.SubElement(unit, "unit_name").text = question.unit
        return
    single = question.type == "single_choice"
    ElementTree.SubElement(element, "single").text = "true" if single else "false"
    ElementTree.SubElement(element, "shuffleanswers").text = "true" if shuffled else "false"
    ElementTree.SubElement(element, "answernumbering").text = "abc"
    rights = iter(grades.right if grades else ())
    for option in question.options:
        if single:
            percent = 100.0 if option.correct else 0.0
        else:
            percent = next(rights) if option.correct else grades.wrong
        answer = ElementTree.SubElement(element, "answer", fraction=_percent_text(percent), format="html")
        ElementTree.SubElement(answer, "text").text = to_html(option.text, inline=True, math_mode=math_mode)
        _text_field(answer, "feedback", feedback_of(option))


# --- GIFT --------------------------------------------------------------------------------------------

# Moodle's GIFT reader (question/format/gift/format.php) treats these as syntax unless escaped with a
# backslash; a newline is written as \n, since a blank line ends a question.
GIFT_SPECIAL = "\\~=#{}:"


def gift_escape(text: str) -> str:
    """Escape text for GIFT. Line endings are normalised to \\n first (GIFT has no escape for \\r)."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return "".join("\\" + char if char in GIFT_SPECIAL else "\\n" if char == "\n" else char for char in text)


def _gift_text(text: str) -> str:
    return gift_escape(text.strip())


def to_gift(bank: Bank, *, seed: int = 0, variants: int = 1) -> Export:
    """The bank as GIFT text. Texts are Markdown ([markdown]); maths stays as $...$ LaTeX source."""
    warnings = _Warnings()
    blocks = [f"// attention-quiz bank {bank.id}, exported with seed {seed}\n"
              "// Texts are Markdown; maths is LaTeX source between $ signs (GIFT does not render it)."]
    for note in bank_notes(bank, "gift"):
        blocks[0] += f"\n// {note}"
        warnings.items.append(ExportWarning(None, None, note))
    if bank.description or bank.source:
        note = "the bank's description and source cannot be carried by GIFT; they are comments at the top"
        blocks[0] += "".join(f"\n// {line}" for line in f"{bank.description or ''}\n{bank.source or ''}".splitlines()
                             if line.strip())
        warnings.items.append(ExportWarning(None, None, note))
    count, visuals, category = 0, 0, None
    for item in _items(bank, seed, variants, warnings):
        question = item.question
        if question.type == "matrix":
            message = "GIFT has no matrix or cloze answers, so the question was left out (moodle-xml carries it)"
            warnings.about(item, message)
            blocks.append(f"// questions[{item.index}] {item.name}: {message}")
            continue
        exportable, grades = _grades_of(item, warnings)
        if not exportable:
            continue
        visuals += question.visual is not None
        if (target := _category_of(bank, item, variants)) != category:  # Moodle files the questions after it there
            category = target
            blocks.append(f"$CATEGORY: {category}")
        lines = [f"// questions[{item.index}] {item.name}"]
        for note in item.notes + (grades.notes if grades else ()):
            lines.append(f"// {note}")
            warnings.about(item, note)
        for dropped in _gift_dropped(question):
            warnings.about(item, dropped)
        lines.append(f"::{gift_escape(item.name)}::[markdown]{_gift_text(question.prompt)}"
                     + _gift_answers(question, grades, "####" + _gift_text(question.explanation)))
        blocks.append("\n".join(lines))
        count += 1
    return Export("\n\n".join(blocks) + "\n", count, tuple(warnings.items), visuals)


def _gift_dropped(question: Question) -> Iterator[str]:
    if question.visual is not None:
        yield f"the visual {question.visual.kind!r} cannot be carried by GIFT; it was left out"
    if question.unit:
        yield f"the unit {question.unit!r} cannot be carried by GIFT; it was left out"
    if question.tags:
        yield f"the tags ({', '.join(question.tags)}) cannot be carried by GIFT; they were left out"
    if question.learn:
        yield f"the learn link {question.learn!r} cannot be carried by GIFT; it was left out"
    if question.hint:
        yield "the hint cannot be carried by GIFT; it was left out"


def _gift_answers(question: Question, grades: MultiSelectGrades | None, general: str) -> str:
    def with_feedback(text: str, option) -> str:
        return text + ("#" + _gift_text(option.feedback) if option.feedback else "")

    if question.type == "true_false":
        key = bool(question.option("true").correct)
        right, wrong = (question.option("true"), question.option("false"))[:: 1 if key else -1]
        # {TRUE#feedback for a wrong answer#feedback for a right answer}; Moodle splits on the first two #
        wrong_text, right_text = (_gift_text(o.feedback) if o.feedback else "" for o in (wrong, right))
        feedback = "#" + wrong_text + "#" + right_text if right_text else "#" + wrong_text if wrong_text else ""
        return "{" + ("TRUE" if key else "FALSE") + feedback + general + "}"
    if question.type == "numeric":
        key = "=" + _number_text(question.answer) + ":" + _number_text(absolute_tolerance(question))
        if not question.misconceptions:
            return "{#" + key[1:] + general + "}"
        slips = [f"=%0%{_number_text(m.answer)}:{_number_text(absolute_tolerance(question, m.answer))}"
                 f"#{_gift_text(m.feedback)}" for m in question.misconceptions]  # Moodle takes the first match
        return "{#\n\t" + "\n\t".join([key, *slips]) + "\n\t" + general + "\n}"
    lines = []
    rights = iter(grades.right if grades else ())
    for option in question.options:
        text = _gift_text(option.text)
        if question.type == "single_choice":
            marker = "=" if option.correct else "~"
        else:  # no "=" at all, or Moodle makes it single-answer
            marker = f"~%{_percent_text(next(rights) if option.correct else grades.wrong)}%"
        lines.append("\t" + with_feedback(marker + text, option))
    return "{\n" + "\n".join(lines) + "\n\t" + general + "\n}"


def export_bank(bank: Bank, output_format: str, *, seed: int = 0, variants: int = 1, math_mode: str = "tex",
                visual: str = "feedback", render: Renderer | None = None) -> Export:
    if output_format == "gift":
        return to_gift(bank, seed=seed, variants=variants)
    if output_format == "moodle-xml":
        return to_moodle_xml(bank, seed=seed, variants=variants, math_mode=math_mode, visual=visual, render=render)
    raise ValueError(f"unknown export format {output_format!r}; use one of {', '.join(FORMATS)}")
