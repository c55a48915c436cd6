"""The /learn pages: the attention page lists the toy lexicon's words, grouped by category."""

from __future__ import annotations

import html
import re

from app.visuals.toy import LEXICON


def vocabulary_section(page: str) -> str:
    match = re.search(r'<section class="learn-section" id="vocabulary".*?</section>', page, re.DOTALL)
    assert match, "the attention page has a vocabulary section"
    return html.unescape(match.group(0))


def test_the_attention_page_lists_the_toy_vocabulary_by_category(client):
    response = client.get("/learn/attention")
    assert response.status_code == 200
    section = vocabulary_section(response.get_data(as_text=True))
    assert "The toy vocabulary" in section and "pseudo-random" in section and "hashed" in section
    groups = dict(re.findall(r"<dt>(.*?)</dt>\s*<dd>(.*?)</dd>", section))
    assert {"Nouns", "Verbs", "Adjectives", "Determiners", "Pronouns", "Prepositions"} <= set(groups)
    assert {"kitten", "puppy", "queen", "truck"} <= set(groups["Nouns"].split(", "))
    assert {"chased", "sat"} <= set(groups["Verbs"].split(", "))
    assert "under" in groups["Prepositions"].split(", ") and "kitten" not in groups["Verbs"]
    listed = [word for words in groups.values() for word in words.split(", ")]
    assert sorted(listed) == sorted(LEXICON)  # every known word, once
    for heading, words in groups.items():  # each under its own category
        assert len({LEXICON[word].category for word in words.split(", ")}) == 1, heading


def test_the_playground_text_links_to_the_vocabulary(client):
    page = client.get("/learn/attention").get_data(as_text=True)
    assert 'href="#vocabulary"' in page and 'id="vocabulary"' in page
