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


def test_the_playground_switches_to_the_real_model_in_place(client):
    query = "/learn/attention?v=attention-playground&model=real&sentence=the+cat+sat+on+the+mat&layer=5&head=6"
    response = client.get(query)
    assert response.status_code == 200
    page = html.unescape(response.get_data(as_text=True))
    playground = page[page.index('id="playground"'):]
    playground = playground[:playground.index("</section>")]
    assert "all-MiniLM-L6-v2, layer 5 head 6" in playground and "Constructed" not in playground
    assert '<option value="real" selected>' in playground  # the form keeps the switch for the next update
    for label in ("Number of heads (toy model only", "Layer (real model only", "Head (real model only"):
        assert label in playground
    images = re.findall(r'srcset="([^"]+)"', playground)
    assert images and all("model=real" in srcset for srcset in images)  # wide and narrow, 1x and 2x
    url = images[0].split(" ")[0]
    figure = client.get(url)
    assert figure.status_code == 200 and figure.mimetype == "image/png"


def test_the_playground_refuses_a_bad_model_with_a_sentence(client):
    response = client.get("/learn/attention?v=attention-playground&model=real&layer=9")
    assert response.status_code == 400
    page = html.unescape(response.get_data(as_text=True))
    assert "layer must be at most" in page
    # A tutorial page has no question: the figure falls back to its default values.
    assert "The plot shows the default values instead: change the marked value to draw yours." in page


def test_the_real_model_counts_in_the_text_are_the_engines(client):
    """The playground's "{n} of layer 5's 12 heads park on [CLS]" is counted on its own default sentence (11 on
    "the cat sat on the mat"), and the real-model section's 9 on the longer sentence it names."""
    from app.visuals.kinds.attention_playground import AttentionPlaygroundParams
    from app.visuals.model import heads_on

    text = " ".join(html.unescape(client.get("/learn/attention").get_data(as_text=True)).split())
    playground = AttentionPlaygroundParams().sentence
    parked = heads_on(playground, 5, "cls")
    assert f"on the default sentence {parked} of layer 5's 12 heads park their weight on [CLS]" in text
    assert parked == 11
    assert "on that sentence, 9 of the 12 putting most of their weight on [CLS]" in text
    assert heads_on("the cat sat on the mat because it was tired", 5, "cls") == 9


def test_a_learn_pages_later_figures_load_lazily_and_an_answer_pages_figure_at_once(client):
    """Eight figures at 2x are megabytes on a phone, and a just-started server draws a few at a time: the first
    figure of a page loads with it, the others as the reader nears them."""
    page = client.get("/learn/attention").get_data(as_text=True)
    images = re.findall(r'<img class="visual-image"[^>]*>', page)
    assert len(images) == 8
    assert 'loading="lazy"' not in images[0] and all('loading="lazy"' in image for image in images[1:])
