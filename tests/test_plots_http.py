"""Visuals over HTTP: /plots/<kind>.<ext> and .json, bounds, caching headers, and the answer pages."""

from __future__ import annotations

import html
import re

import pytest

from app.visuals import KINDS, get_kind
from conftest import SEED_BANK, answer_via_form, image_size
from test_seed import EXPECTED

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _first_answer(key):
    if isinstance(key, bool):
        return "true" if key else "false"
    return key


@pytest.fixture
def seed(app):
    return app.extensions["banks"].get(SEED_BANK)


def test_every_seed_question_has_a_visual_of_a_known_kind(seed):
    assert all(q.visual is not None for q in seed.questions)
    assert len({q.visual.kind for q in seed.questions}) == 9
    for question in seed.questions:
        assert get_kind(question.visual.kind) is not None


@pytest.mark.parametrize("kind_name", sorted(["soft-lookup", "long-range", "qkv-projections", "multi-head",
                                              "head-split", "order-blindness", "position-encoding",
                                              "autoregressive-pixels", "complexity", "attention-playground"]))
def test_default_image_renders_with_cache_headers(client, kind_name):
    kind = get_kind(kind_name)
    response = client.get(f"/plots/{kind_name}.{kind.format}")
    assert response.status_code == 200
    assert response.mimetype == ("image/png" if kind.format == "png" else "image/svg+xml")
    if kind.format == "png":
        assert response.data.startswith(PNG_SIGNATURE)
    assert response.headers["ETag"]
    assert "max-age" in response.headers["Cache-Control"]
    # A conditional request is answered from the cache without a body.
    again = client.get(f"/plots/{kind_name}.{kind.format}", headers={"If-None-Match": response.headers["ETag"]})
    assert again.status_code == 304


def test_a_repeat_request_is_served_from_the_cache(app, client):
    cache = app.extensions["render_cache"]
    client.get("/plots/head-split.svg?d_model=256&num_heads=8")
    misses = cache.misses
    client.get("/plots/head-split.svg?d_model=256&num_heads=8")
    assert cache.misses == misses and cache.hits >= 1


def test_cache_is_bounded(app, client):
    cache = app.extensions["render_cache"]
    cache.max_entries = 3
    for heads in (1, 2, 4, 8, 16):
        assert client.get(f"/plots/head-split.svg?d_model=128&num_heads={heads}").status_code == 200
    assert len(cache) == 3


def test_json_describes_the_image_with_alt_text_from_the_same_numbers(client):
    body = client.get("/plots/head-split.json?d_model=96&num_heads=3").get_json()
    assert body["src"].startswith("/plots/head-split.svg?")
    assert "d_model=96" in body["src"] and "num_heads=3" in body["src"]
    assert "96" in body["alt"] and "32" in body["alt"]
    assert body["params"] == {"d_model": 96, "num_heads": 3}


@pytest.mark.parametrize("url, fragment", [
    ("/plots/head-split.svg?d_model=130&num_heads=4", "divisible"),
    ("/plots/head-split.svg?d_model=99999999&num_heads=4", "at most"),
    ("/plots/head-split.svg?d_model=-5", "at least"),
    ("/plots/head-split.svg?d_model=abc", "whole number"),
    ("/plots/head-split.svg?bogus=1", "unknown parameter 'bogus'"),
    ("/plots/head-split.svg?d_model=8&d_model=16", "given 2 times"),
    ("/plots/multi-head.png?num_heads=1000", "at most"),
    ("/plots/position-encoding.png?length=100000", "at most"),
    ("/plots/complexity.png?max_n=10000000", "at most"),
    ("/plots/soft-lookup.png?temperature=0", "at least"),
    ("/plots/soft-lookup.png?temperature=nan", "temperature"),
    ("/plots/autoregressive-pixels.png?height=4&width=4&row=9&col=0", "outside the 4 × 4 image"),
    ("/plots/multi-head.png?sentence=" + "+".join(["word"] * 40), "sentence"),
])
def test_out_of_range_or_malformed_params_are_400_with_a_sentence(client, url, fragment):
    response = client.get(url)
    assert response.status_code == 400, response.status_code
    assert fragment.lower() in html.unescape(response.get_data(as_text=True)).lower()
    json_url = re.sub(r"\.(png|svg)\?", ".json?", url)
    body = client.get(json_url)
    assert body.status_code == 400
    assert fragment.lower() in body.get_json()["error"]["message"].lower()


def test_overlong_query_string_is_refused(client):
    assert client.get("/plots/head-split.svg?sentence=" + "a" * 5000).status_code == 400


def test_unknown_kind_or_wrong_extension_is_404(client):
    assert client.get("/plots/nope.png").status_code == 404
    assert client.get("/plots/head-split.png").status_code == 404  # it is an SVG
    assert client.get("/plots/nope.json").get_json()["error"]["status"] == 404


@pytest.mark.parametrize("question_id", list(EXPECTED))
def test_each_answer_page_shows_its_visual_with_alt_text_and_controls(client, question_id):
    response = answer_via_form(client, SEED_BANK, question_id, _first_answer(EXPECTED[question_id][0]))
    html = client.get(response.location).get_data(as_text=True)
    image = re.search(r'<img class="visual-image" src="([^"]+)" width="(\d+)" height="(\d+)" alt="([^"]+)">', html)
    assert image, "no visual on the answer page"
    src, alt = image.group(1).replace("&amp;", "&"), image.group(4)
    served = client.get(src)
    assert served.status_code == 200
    assert image_size(served.data) == (int(image.group(2)), int(image.group(3)))  # its space is kept for it
    assert f'<p class="visual-alt">{alt}</p>' in html  # the alt text is also shown under the figure
    assert '<form class="visual-controls" method="get"' in html
    assert re.search(r'<label for="visual-[a-z_]+">', html)
    assert 'href="/learn/' in html  # the tutorial section


def test_answer_page_controls_rerender_without_javascript(client):
    response = answer_via_form(client, SEED_BANK, "head-dimension", "32")
    default = client.get(response.location).get_data(as_text=True)
    assert "split into 4 heads of 32" in default
    changed = client.get(response.location + "?v=head-split&d_model=128&num_heads=8").get_data(as_text=True)
    assert "split into 8 heads of 16" in changed
    assert 'value="8"' in changed


def test_answer_page_with_a_bad_control_value_explains_and_keeps_working(client):
    response = answer_via_form(client, SEED_BANK, "head-dimension", "32")
    page = client.get(response.location + "?v=head-split&num_heads=3")
    assert page.status_code == 400
    html = page.get_data(as_text=True)
    assert "divisible" in html and "question&#39;s own values" in html
    assert '<h1 id="verdict">Correct</h1>' in html  # the answer is still there
    assert "split into 4 heads of 32" in html


@pytest.mark.parametrize("page", ["attention", "position-encoding", "complexity"])
def test_learn_pages_have_their_sections_and_visuals(client, page):
    response = client.get(f"/learn/{page}")
    assert response.status_code == 200
    html = response.get_data(as_text=True)
    assert html.count('class="visual-image"') >= 1
    assert "<math" in html  # maths rendered server-side


def test_every_kind_links_to_an_existing_learn_anchor(client):
    for kind in KINDS.values():
        path, _, anchor = kind.learn.partition("#")
        html = client.get(path).get_data(as_text=True)
        assert client.get(path).status_code == 200, kind.learn
        if anchor:
            assert f'id="{anchor}"' in html, kind.learn


def test_playground_applies_overrides_only_to_its_own_section(client):
    html = client.get("/learn/attention?v=attention-playground&causal=on&num_heads=1&d_model=8").get_data(as_text=True)
    assert "causal mask on" in html.lower()
    assert client.get("/learn/nope").status_code == 404


def test_concurrent_requests_for_a_new_figure_render_it_once(app):
    import threading

    from app.visuals.service import RenderCache

    kind = get_kind("head-split")
    params = kind.parse({"d_model": 512, "num_heads": 16})
    calls = []
    real_render = kind.render

    def counting_render(p):
        calls.append(p)
        return real_render(p)

    cache = RenderCache(8)
    kind.render = counting_render  # instance attribute shadows the method for this test only
    try:
        threads = [threading.Thread(target=cache.get_or_render, args=(kind, params)) for _ in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        del kind.render
    assert len(calls) == 1 and cache.hits == 5


def test_prerender_covers_fixed_visuals_and_skips_per_student_variants(app):
    from app.visuals.service import bank_visuals

    visuals = bank_visuals(app.extensions["banks"].banks.values())
    assert sorted(k.name for k, _ in visuals) == sorted(q.visual.kind for q in app.extensions["banks"].get(SEED_BANK).questions)
