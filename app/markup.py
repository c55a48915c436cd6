"""Markdown with `$...$` / `$$...$$` maths rendered to safe HTML on the server.

markdown-it-py (CommonMark, raw HTML disabled, unsafe link schemes refused) plus latex2mathml, so the
browser needs no maths library and no CDN.
"""

from __future__ import annotations

import functools
import html
import xml.etree.ElementTree as ElementTree

import latex2mathml.converter
from markdown_it import MarkdownIt
from markupsafe import Markup
from mdit_py_plugins.dollarmath import dollarmath_plugin


MATHML_NS = "http://www.w3.org/1998/Math/MathML"
ElementTree.register_namespace("", MATHML_NS)

# latex2mathml copies \text{...} verbatim and turns \href into an href attribute, so its output is
# re-built from a whitelist: MathML presentation elements and layout attributes only.
_MATHML_ELEMENTS = frozenset(
    "math mrow mi mn mo ms mtext mspace msup msub msubsup mfrac msqrt mroot mstyle merror mpadded "
    "mphantom mfenced menclose munder mover munderover mtable mtr mtd mlabeledtr semantics annotation "
    "mmultiscripts mprescripts none".split()
)
_MATHML_ATTRIBUTES = frozenset(
    "display mathvariant stretchy fence separator accent accentunder lspace rspace width height depth "
    "linethickness columnalign rowalign columnspacing rowspacing columnlines rowlines frame framespacing "
    "equalrows equalcolumns displaystyle scriptlevel minsize maxsize movablelimits largeop symmetric form "
    "notation open close separators align".split()
)


def _safe_mathml(markup: str, source: str) -> str | None:
    """The MathML with every element and attribute outside the whitelist removed, and its LaTeX `source` as its
    text alternative (`alttext`, and `aria-label`: browsers leave MathML out of the name they build for a label
    or a link, so a radio labelled "$O(n^2)$" would be read with no name); None if unparsable."""
    try:
        root = ElementTree.fromstring(markup)
    except ElementTree.ParseError:
        return None
    for element in root.iter():
        namespace, _, local = element.tag.rpartition("}")
        if namespace.lstrip("{") != MATHML_NS or local not in _MATHML_ELEMENTS:
            return None
        for name in list(element.attrib):
            if name not in _MATHML_ATTRIBUTES:
                del element.attrib[name]
    label = " ".join(source.split())  # ElementTree escapes it as an attribute value
    root.set("alttext", label)
    root.set("aria-label", label)
    return ElementTree.tostring(root, encoding="unicode", short_empty_elements=True)


def _render_math(latex: str, options: dict) -> str:
    display = "block" if options.get("display_mode") else "inline"
    try:
        converted = latex2mathml.converter.convert(latex, display=display)
    except Exception:  # latex2mathml raises many kinds; show the source rather than fail the page
        converted = None
    safe = _safe_mathml(converted, latex) if converted else None
    if safe is None:
        return f'<code class="math-error">{html.escape(latex)}</code>'
    return safe


def build_markdown(math_renderer) -> MarkdownIt:
    """The app's one Markdown dialect (CommonMark, raw HTML off, tables, $-maths), with maths drawn by
    `math_renderer(latex, options)`; exporters reuse it so their parsing never drifts from the pages'."""
    md = MarkdownIt("commonmark", {"html": False, "typographer": False})
    md.enable("table")
    # No equation labels: `$$y$$ (verdict)` would make an element with id="verdict", a second one on a page
    # that has its own (and an author's text can never be a page's id). The "(verdict)" stays as text.
    dollarmath_plugin(md, allow_labels=False, allow_digits=False, double_inline=True, renderer=math_renderer)
    return md


@functools.cache
def _markdown() -> MarkdownIt:
    """The pages' dialect for blocks of text: a displayed formula's box, which scrolls sideways when the formula is
    wider than the column (MathML does not wrap), is a tab stop, so the keyboard can scroll it too (WCAG 2.1.1).
    Not in a snippet (render_inline): that is an option's label or a link, whose own focus is the one to keep."""
    md = build_markdown(_render_math)

    def displayed(classes: str, around: str):
        def render(_renderer, tokens, idx, _options, _env) -> str:
            formula = _render_math(tokens[idx].content.strip(), {"display_mode": True})
            return f'<div class="{classes}" tabindex="0">{around}{formula}{around}</div>{around}'
        return render

    md.add_render_rule("math_block", displayed("math block", "\n"))  # as mdit-py-plugins writes them, plus tabindex
    md.add_render_rule("math_inline_double", displayed("math inline", ""))
    return md


@functools.lru_cache(maxsize=4096)
def render_markdown(text: str) -> Markup:
    """Render a block of Markdown (paragraphs, lists, maths) to HTML that is safe to insert."""
    return Markup(_markdown().render(text))


@functools.cache
def _snippets() -> MarkdownIt:
    return build_markdown(_render_math)


@functools.lru_cache(maxsize=4096)
def render_inline(text: str) -> Markup:
    """Render a short Markdown snippet (an option, a feedback line) without a wrapping <p>."""
    return Markup(_snippets().renderInline(text))
