"""Markdown with `$...$` / `$$...$$` maths rendered to safe HTML on the server.

markdown-it-py (CommonMark, raw HTML disabled, unsafe link schemes refused) plus latex2mathml, so the
browser needs no maths library and no CDN.
"""

from __future__ import annotations

import functools
import html

import latex2mathml.converter
from markdown_it import MarkdownIt
from markupsafe import Markup
from mdit_py_plugins.dollarmath import dollarmath_plugin


def _render_math(latex: str, options: dict) -> str:
    display = "block" if options.get("display_mode") else "inline"
    try:
        return latex2mathml.converter.convert(latex, display=display)
    except Exception:  # latex2mathml raises many kinds; show the source rather than fail the page
        return f'<code class="math-error">{html.escape(latex)}</code>'


@functools.cache
def _markdown() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "typographer": False})
    md.enable("table")
    dollarmath_plugin(md, allow_digits=False, double_inline=True, renderer=_render_math)
    return md


@functools.lru_cache(maxsize=4096)
def render_markdown(text: str) -> Markup:
    """Render a block of Markdown (paragraphs, lists, maths) to HTML that is safe to insert."""
    return Markup(_markdown().render(text))


@functools.lru_cache(maxsize=4096)
def render_inline(text: str) -> Markup:
    """Render a short Markdown snippet (an option, a feedback line) without a wrapping <p>."""
    return Markup(_markdown().renderInline(text))
