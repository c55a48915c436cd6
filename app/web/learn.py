"""The tutorial pages under /learn that the quiz explanations point to ("See Tutorial", "See Notes").

Each section pairs a short text with a live visual; its anchor is the one answer pages link to.
"""

from __future__ import annotations

from flask import Blueprint, render_template, request

from ..errors import NotFound
from ..visuals.kinds.attention_playground import AttentionPlaygroundParams
from ..visuals.model import heads_on
from ..visuals.toy import LEXICON
from .visual_views import visual_view

bp = Blueprint("learn", __name__, url_prefix="/learn")

# page -> (title, [(section anchor, visual kind)]); the anchors match each kind's `learn` link.
PAGES: dict[str, tuple[str, list[tuple[str, str]]]] = {
    "attention": ("Attention, step by step", [
        ("soft-lookup", "soft-lookup"),
        ("projections", "qkv-projections"),
        ("multi-head", "multi-head"),
        ("head-split", "head-split"),
        ("long-range", "long-range"),
        ("autoregressive", "autoregressive-pixels"),
        ("playground", "attention-playground"),
        ("real-model", "model-heads"),
    ]),
    "position-encoding": ("Position encodings", [
        ("order", "order-blindness"),
        ("sinusoidal", "position-encoding"),
    ]),
    "complexity": ("The cost of attention", [
        ("cost", "complexity"),
    ]),
}


# How the /learn attention page names each category of the toy lexicon.
CATEGORY_NAMES = {"noun": "Nouns", "verb": "Verbs", "adjective": "Adjectives", "determiner": "Determiners",
                  "pronoun": "Pronouns", "preposition": "Prepositions", "connective": "Connectives (no features)"}


def toy_vocabulary() -> list[tuple[str, list[str]]]:
    """(category heading, its words in lexicon order) for every category of the toy lexicon."""
    groups: dict[str, list[str]] = {}
    for word, info in LEXICON.items():
        groups.setdefault(info.category, []).append(word)
    order = [category for category in CATEGORY_NAMES if category in groups]
    order += sorted(set(groups) - set(order))
    return [(CATEGORY_NAMES.get(category, category.capitalize()), groups[category]) for category in order]


@bp.get("/")
def index():
    return render_template("learn/index.html")


@bp.get("/<page>")
def page(page: str):
    if page not in PAGES:
        raise NotFound(f"There is no tutorial page {page[:60]!r}; the topics are listed at /learn.")
    title, sections = PAGES[page]
    args = request.args.to_dict(flat=False)
    visuals = {anchor: visual_view(kind, {}, args, own="the default values") for anchor, kind in sections}
    shown = [v for v in visuals.values() if v is not None]
    status = max((v.status for v in shown), default=200)  # 400 for refused values, 429/503 when too busy
    retry_after = max((v.retry_after for v in shown if v.retry_after), default=None)
    extra = {}
    if page == "attention":
        # The playground's text says how many of layer 5's heads park on [CLS] for its default sentence.
        default_sentence = AttentionPlaygroundParams().sentence
        extra = {"vocabulary": toy_vocabulary(), "parked": heads_on(default_sentence, 5, "cls")}
    return render_template(f"learn/{page}.html", title=title, visuals=visuals, pages=PAGES, page=page,
                           **extra), status, {"Retry-After": str(retry_after)} if retry_after else {}
