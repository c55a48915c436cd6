"""Visuals over HTTP and their one cache: the in-memory LRU with single flight (app.visuals.service),
/plots/<kind>.<ext> and .json, HTTP caching, the rate limit on new visuals, and the pages that show them.

A page's words and the image it loads come from one computation: the cache's `computed` and `drawn`
counters say how often the engine ran and how often matplotlib drew.
"""

from __future__ import annotations

import html
import re
import threading
import time
from html.parser import HTMLParser
from urllib.parse import parse_qs, urlsplit

import pytest
from sqlalchemy import event

from app import create_app
from app.visuals import KINDS, get_kind
from app.visuals.service import VisualCache, query_values
from conftest import PNG_SIGNATURE, SEED_BANK, answer_via_form, image_size, run_python
from test_seed import EXPECTED

get_kind("soft-lookup")  # registers every kind
KIND_NAMES = sorted(KINDS)
# The HTTP and cache tests use one kind's params and pages: autoregressive-pixels (cheap to compute, params
# of plain bounded integers with a cross-field rule). Its question on the seed bank:
PIXELS = "autoregressive-pixels"
PIXELS_QUESTION = "transformers-for-images"
ONE_DAY = 86400


def _app(tmp_path, **config):
    return create_app({"TESTING": True, "SECRET_KEY": "test-secret-key",
                       "DATABASE_URL": f"sqlite:///{tmp_path / 'test.sqlite3'}", **config})


def _browser(app):
    client = app.test_client()
    client.set_cookie("seen", "1")  # a browser with cookies: the limits are per session, not per address
    return client


@pytest.fixture(scope="module")
def shared_app(tmp_path_factory):
    """One app for the tests that only read: the figures they draw are drawn once for all of them.

    Generous limits rather than RATELIMIT_ENABLED=False: the Limiter is one object shared by every app,
    and an app created with it disabled disables it for the apps created after it."""
    return _app(tmp_path_factory.mktemp("shared"), RATE_LIMIT_PLOTS="100000 per minute",
                RATE_LIMIT_SUBMIT="100000 per minute")


@pytest.fixture
def shared_client(shared_app):
    return shared_app.test_client()


class VisualTags(HTMLParser):
    """Each visual on a page: its <img class="visual-image">, its <source class="visual-narrow"> if any,
    and the texts of its p.visual-alt and p.visual-caption (entities decoded)."""

    def __init__(self, page: str):
        super().__init__(convert_charrefs=True)
        self.visuals: list[dict] = []
        self._text: str | None = None
        self.feed(page)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        classes = (attrs.get("class") or "").split()
        if tag == "section" and "visual" in classes:
            self.visuals.append({"kind": attrs.get("data-visual"), "json": attrs.get("data-json"), "source": None})
        elif tag == "img" and "visual-image" in classes:
            self.visuals[-1]["img"] = attrs
        elif tag == "source" and "visual-narrow" in classes:
            self.visuals[-1]["source"] = attrs
        elif tag == "p" and ({"visual-alt", "visual-caption"} & set(classes)):
            self._text = "alt" if "visual-alt" in classes else "caption"
            self.visuals[-1][self._text] = ""

    def handle_data(self, data):
        if self._text:
            self.visuals[-1][self._text] += data

    def handle_endtag(self, tag):
        if tag == "p":
            self._text = None


def visuals_on(page: str) -> list[dict]:
    return VisualTags(page).visuals


def srcset_urls(srcset: str) -> dict[str, str]:
    """{"1x": url, "2x": url} of a srcset attribute. A URL runs to the next space (it may hold commas, as
    a query value listing a student's options does), then comes its density and a comma."""
    candidates = re.findall(r"\s*(\S+)\s+(\d+x)\s*(?:,|$)", srcset)
    assert candidates and ", ".join(f"{url} {density}" for url, density in candidates) == srcset.strip(), srcset
    return {density: url for url, density in candidates}


def query_of(url: str) -> dict[str, list[str]]:
    return parse_qs(urlsplit(url).query, keep_blank_values=True)


def open_answer_page(client, question_id: str, query: str = "") -> str:
    """The question's answer page for this client (answering it first, with its keyed answer, if need be)."""
    location = f"/quiz/{SEED_BANK}/{question_id}/answer"
    page = client.get(location + query)
    if page.status_code != 200:
        answer = EXPECTED[question_id][0]
        answer = ("true" if answer else "false") if isinstance(answer, bool) else answer
        response = answer_via_form(client, SEED_BANK, question_id, answer)
        assert response.status_code == 303 and response.location == location, response.status_code
        page = client.get(location + query)
    assert page.status_code == 200, page.status_code
    return page.get_data(as_text=True)


# --- the cache -----------------------------------------------------------------------------------------


def _pixels(col: int):
    kind = get_kind(PIXELS)
    return kind, kind.parse({"height": 16, "width": 16, "row": 15, "col": col})


def test_the_cache_is_bounded_least_recently_used_first_out():
    cache = VisualCache(max_entries=3)
    for col in (1, 2, 3):
        cache.visual(*_pixels(col))
    cache.visual(*_pixels(1))  # used again: now the most recent
    cache.visual(*_pixels(4))  # evicts col 2, the least recently used
    assert len(cache) == 3 and cache.computed == 4
    cache.visual(*_pixels(1))
    cache.visual(*_pixels(3))
    cache.visual(*_pixels(4))
    assert cache.computed == 4  # all three kept
    cache.visual(*_pixels(2))
    assert cache.computed == 5 and len(cache) == 3  # computed again


def test_the_images_are_bounded_in_bytes_too():
    cache = VisualCache(max_entries=100, max_image_bytes=1)  # fits no image: only the newest visual stays
    first = cache.image(*_pixels(1))
    assert cache.image_bytes == len(first.data) and len(cache) == 1
    second = cache.image(*_pixels(2))
    assert len(cache) == 1 and cache.image_bytes == len(second.data)  # col 1 and its image were dropped
    roomy = VisualCache(max_entries=100, max_image_bytes=len(first.data) + len(second.data))
    roomy.image(*_pixels(1))
    roomy.image(*_pixels(2))
    assert len(roomy) == 2 and roomy.image_bytes == len(first.data) + len(second.data)
    roomy.image(*_pixels(1), scale=2)  # a bigger image of col 1: col 2, now the least recently used, goes
    assert len(roomy) == 1 and roomy.drawn == 3
    assert roomy.image_bytes == len(first.data) + len(roomy.image(*_pixels(1), scale=2).data)


def test_the_apps_cache_takes_its_bounds_from_the_settings(tmp_path):
    cache = _app(tmp_path, PLOT_CACHE_ENTRIES=7, PLOT_CACHE_MB=3).extensions["visual_cache"]
    assert (cache.max_entries, cache.max_image_bytes) == (7, 3 * 2**20)


def test_an_entry_holds_its_words_and_each_image_drawn_from_them():
    cache = VisualCache(8)
    kind, params = _pixels(5)
    computed = cache.visual(kind, params)
    assert cache.visual(kind, params) is computed
    assert computed.alt == kind.describe(params).alt
    first = cache.image(kind, params)
    assert cache.image(kind, params) is first and (cache.computed, cache.drawn) == (1, 1)
    sharp = cache.image(kind, params, scale=2)
    assert image_size(sharp.data) == tuple(2 * side for side in image_size(first.data))
    assert sharp.etag != first.etag and (cache.computed, cache.drawn) == (1, 2)
    if not kind.has_narrow_layout:  # a phone asks for the narrow layout and gets the wide image
        assert cache.image(kind, params, layout="narrow") is first and cache.drawn == 2


def test_before_compute_runs_only_for_a_new_visual_and_can_refuse_it():
    cache = VisualCache(8)
    charges = []
    kind, params = _pixels(6)
    cache.visual(kind, params, before_compute=lambda: charges.append(1))
    cache.visual(kind, params, before_compute=lambda: charges.append(1))
    cache.image(kind, params, before_compute=lambda: charges.append(1))  # drawing is not charged
    assert charges == [1]

    def refuse():
        raise RuntimeError("over the limit")

    with pytest.raises(RuntimeError, match="over the limit"):
        cache.visual(*_pixels(7), before_compute=refuse)
    assert cache.computed == 1 and len(cache) == 1  # nothing computed, nothing kept
    cache.visual(*_pixels(7))
    assert cache.computed == 2


def test_a_failed_computation_is_not_kept_and_the_next_caller_computes_again(monkeypatch):
    cache = VisualCache(8)
    kind, params = _pixels(8)
    real = type(kind).compute
    failures = iter([True])

    def flaky(self, p):
        if next(failures, False):
            raise ValueError("engine failed")
        return real(self, p)

    monkeypatch.setattr(type(kind), "compute", flaky)
    with pytest.raises(ValueError, match="engine failed"):
        cache.visual(kind, params)
    assert len(cache) == 0 and cache.computed == 0
    assert cache.visual(kind, params).alt
    assert cache.computed == 1


def test_concurrent_callers_wait_for_one_computation_and_one_drawing(monkeypatch):
    cache = VisualCache(8)
    kind, params = _pixels(9)
    real = type(kind).compute

    def slow(self, p):
        time.sleep(0.2)  # long enough that every caller arrives while it runs
        return real(self, p)

    monkeypatch.setattr(type(kind), "compute", slow)
    start = threading.Barrier(6)
    images = []

    def ask():
        start.wait()
        images.append(cache.image(kind, params))

    threads = [threading.Thread(target=ask) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert len(images) == 6 and all(image is images[0] for image in images)
    assert (cache.computed, cache.drawn) == (1, 1)


def test_concurrent_requests_for_a_new_figure_compute_and_draw_it_once(tmp_path, monkeypatch):
    app = _app(tmp_path)
    kind = get_kind(PIXELS)
    real = type(kind).compute

    def slow(self, p):
        time.sleep(0.2)
        return real(self, p)

    monkeypatch.setattr(type(kind), "compute", slow)
    start = threading.Barrier(6)
    responses = []

    def request():
        client = app.test_client()
        start.wait()
        responses.append(client.get(f"/plots/{PIXELS}.png?height=12&width=12&row=5&col=5"))

    threads = [threading.Thread(target=request) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert [response.status_code for response in responses] == [200] * 6
    assert len({response.headers["ETag"] for response in responses}) == 1
    cache = app.extensions["visual_cache"]
    assert (cache.computed, cache.drawn) == (1, 1)


# --- one computation per figure -------------------------------------------------------------------------


def test_an_answer_page_and_its_image_come_from_one_computation(tmp_path):
    app = _app(tmp_path)
    client = _browser(app)
    cache = app.extensions["visual_cache"]
    page = open_answer_page(client, PIXELS_QUESTION)
    assert (cache.computed, cache.drawn) == (1, 0)  # the page's words; nothing drawn yet
    (visual,) = visuals_on(page)
    image = client.get(visual["img"]["src"])
    assert image.status_code == 200 and image.data.startswith(PNG_SIGNATURE)
    assert (cache.computed, cache.drawn) == (1, 1)
    assert client.get(srcset_urls(visual["img"]["srcset"])["2x"]).status_code == 200
    assert (cache.computed, cache.drawn) == (1, 2)
    # The live controls' description of the same figure, and the page again: no new computation.
    described = client.get(f"/plots/{PIXELS}.json?" + urlsplit(visual["img"]["src"]).query).get_json()
    assert described["alt"] == visual["img"]["alt"] == visual["alt"]
    open_answer_page(client, PIXELS_QUESTION)
    assert (cache.computed, cache.drawn) == (1, 2)
    # A student's own values: computed once for the page, drawn once for its image.
    page = open_answer_page(client, PIXELS_QUESTION, "?v=autoregressive-pixels&col=0")
    (visual,) = visuals_on(page)
    assert query_of(visual["img"]["src"])["col"] == ["0"]
    assert cache.computed == 2
    assert client.get(visual["img"]["src"]).status_code == 200
    assert (cache.computed, cache.drawn) == (2, 3)


# --- HTTP: images and their descriptions ------------------------------------------------------------------


@pytest.mark.parametrize("name", KIND_NAMES)
def test_json_describes_the_default_image_which_is_served_with_cache_headers(name, shared_client):
    kind = KINDS[name]
    params = kind.parse({})
    body = shared_client.get(f"/plots/{name}.json").get_json()
    assert set(body) == {"kind", "src", "srcset", "width", "height", "narrow", "alt", "caption", "params"}
    assert body["kind"] == name and body["params"] == params.model_dump(mode="json")
    assert urlsplit(body["src"]).path == f"/plots/{name}.{kind.format}"
    assert {key: value for key, (value,) in query_of(body["src"]).items()} == query_values(params)
    assert (body["width"], body["height"]) == kind.size(params)
    assert body["alt"] and (body["caption"] is None or isinstance(body["caption"], str))
    densities = srcset_urls(body["srcset"])
    assert densities["1x"] == body["src"]
    if kind.format == "png":
        assert densities["2x"] == body["src"] + "&scale=2"
    else:
        assert set(densities) == {"1x"}  # an SVG is sharp at any scale
    if kind.has_narrow_layout:
        narrow = body["narrow"]
        assert (narrow["width"], narrow["height"]) == kind.size(params, "narrow")
        assert srcset_urls(narrow["srcset"])["1x"] == body["src"] + "&layout=narrow"
    else:
        assert body["narrow"] is None

    response = shared_client.get(body["src"])
    assert response.status_code == 200 and response.mimetype == kind.mimetype
    assert image_size(response.data) == (body["width"], body["height"])  # the page keeps its space
    assert response.headers["ETag"]
    assert response.cache_control.public and response.cache_control.max_age == ONE_DAY
    again = shared_client.get(body["src"], headers={"If-None-Match": response.headers["ETag"]})
    assert again.status_code == 304 and again.data == b""
    other = shared_client.get(body["src"], headers={"If-None-Match": '"not-this-one"'})
    assert other.status_code == 200 and other.data == response.data


def test_scale_and_layout_choose_the_image(shared_client):
    base = f"/plots/{PIXELS}.png?height=5&width=5&row=1&col=1"
    wide = shared_client.get(base)
    sharp = shared_client.get(base + "&scale=2")
    assert image_size(sharp.data) == tuple(2 * side for side in image_size(wide.data))
    assert sharp.headers["ETag"] != wide.headers["ETag"]
    assert shared_client.get(base + "&scale=1").data == wide.data
    narrow = shared_client.get(base + "&layout=narrow")
    assert narrow.status_code == 200
    if not get_kind(PIXELS).has_narrow_layout:
        assert narrow.data == wide.data
    assert shared_client.get(base + "&layout=wide").data == wide.data


@pytest.mark.parametrize(("query", "sentence"), [
    ("scale=3", "scale must be one of 1, 2."),
    ("scale=abc", "scale must be one of 1, 2."),
    ("scale=2&scale=2", "scale must be one of 1, 2."),
    ("layout=tall", "layout must be one of wide, narrow."),
    ("layout=", "layout must be one of wide, narrow."),
])
def test_an_invalid_scale_or_layout_is_400_with_a_sentence(shared_client, query, sentence):
    for ext in ("png", "json"):
        response = shared_client.get(f"/plots/{PIXELS}.{ext}?{query}")
        assert response.status_code == 400
        text = response.get_json()["error"]["message"] if ext == "json" else html.unescape(response.get_data(as_text=True))
        assert sentence in text


@pytest.mark.parametrize(("url", "fragment"), [
    (f"/plots/{PIXELS}.png?height=4&width=4&row=9&col=0", "outside the 4 × 4 image"),
    (f"/plots/{PIXELS}.png?height=99999999", "at most"),
    (f"/plots/{PIXELS}.png?row=-5", "at least"),
    (f"/plots/{PIXELS}.png?row=abc", "whole number"),
    (f"/plots/{PIXELS}.png?row=2.5", "whole number"),
    (f"/plots/{PIXELS}.png?bogus=1", "unknown parameter 'bogus'"),
    (f"/plots/{PIXELS}.png?row=1&row=2", "given 2 times"),
    ("/plots/qkv-projections.png?d_k=17", "at most"),
    ("/plots/attention-playground.png?temperature=0", "at least"),
    ("/plots/attention-playground.png?temperature=nan", "temperature"),
    ("/plots/order-blindness.png?sentence=" + "+".join(["word"] * 40), "sentence"),
])
def test_out_of_range_or_malformed_params_are_400_with_a_sentence(shared_client, url, fragment):
    response = shared_client.get(url)
    assert response.status_code == 400, response.status_code
    assert fragment.lower() in html.unescape(response.get_data(as_text=True)).lower()
    body = shared_client.get(url.replace(".png?", ".json?"))
    assert body.status_code == 400
    assert fragment.lower() in body.get_json()["error"]["message"].lower()


@pytest.mark.parametrize("name", KIND_NAMES)
def test_every_kind_refuses_an_unknown_parameter_and_an_out_of_range_one_over_http(name, shared_client):
    kind = KINDS[name]
    bounded = [(field_name, le) for field_name, field in kind.Params.model_fields.items()
               for le in [next((item.le for item in field.metadata if getattr(item, "le", None) is not None), None)]
               if le is not None and field.annotation is int]
    queries = [("colour=red", "unknown parameter 'colour'")]
    queries += [(f"{field_name}={le + 1}", f"{field_name} must be at most {le}") for field_name, le in bounded[:1]]
    for query, sentence in queries:
        for ext in (kind.format, "json"):
            response = shared_client.get(f"/plots/{name}.{ext}?{query}")
            assert response.status_code == 400
            assert sentence in html.unescape(response.get_data(as_text=True))


def test_overlong_query_string_is_refused(shared_client):
    assert shared_client.get(f"/plots/{PIXELS}.png?sentence=" + "a" * 5000).status_code == 400


def test_unknown_kind_or_wrong_extension_is_404(shared_client):
    assert shared_client.get("/plots/nope.png").status_code == 404
    for kind in KINDS.values():
        wrong = "svg" if kind.format == "png" else "png"
        assert shared_client.get(f"/plots/{kind.name}.{wrong}").status_code == 404
    assert shared_client.get("/plots/nope.json").get_json()["error"]["status"] == 404


# --- the rate limit on new visuals ------------------------------------------------------------------------


def test_cached_visuals_are_not_limited_but_new_ones_are(tmp_path):
    app = _app(tmp_path, RATE_LIMIT_PLOTS="3 per minute")
    client = _browser(app)
    pixel = "/plots/autoregressive-pixels.{ext}?height=8&width=8&row=7&col={col}"
    url = pixel.format(ext="json", col=0)
    assert client.get(url).status_code == 200  # one computation
    for _ in range(40):  # many cached hits: no limit
        assert client.get(url).status_code == 200
    assert client.get(pixel.format(ext="png", col=0)).status_code == 200  # drawing it: free
    codes = [client.get(pixel.format(ext="json", col=col)).status_code for col in (1, 2, 3)]
    assert codes == [200, 200, 429]
    refused = client.get(pixel.format(ext="png", col=4))
    assert refused.status_code == 429
    text = refused.get_data(as_text=True)
    assert "new plots" in text and "3 per minute" in text and "Wait" in text
    assert int(refused.headers["Retry-After"]) >= 1
    assert client.get(url).status_code == 200  # the visuals already computed still load
    assert client.get(pixel.format(ext="png", col=1)).status_code == 200  # and draw
    body = client.get(pixel.format(ext="json", col=5)).get_json()
    assert body["error"]["status"] == 429 and "new plots" in body["error"]["message"]
    assert app.extensions["visual_cache"].computed == 3


def test_refused_parameters_count_against_the_limit(tmp_path):
    app = _app(tmp_path, RATE_LIMIT_PLOTS="3 per minute")
    client = _browser(app)
    assert client.get("/plots/autoregressive-pixels.png?row=600").status_code == 400
    assert client.get("/plots/no-such-kind.png").status_code == 404
    assert client.get("/plots/autoregressive-pixels.png?scale=9").status_code == 400
    assert client.get("/plots/autoregressive-pixels.png?row=601").status_code == 429
    assert app.extensions["visual_cache"].computed == 0


def test_limits_are_per_session(tmp_path):
    app = _app(tmp_path, RATE_LIMIT_PLOTS="1 per minute")
    first, second = _browser(app), _browser(app)
    assert first.get("/plots/autoregressive-pixels.json?col=0").status_code == 200
    assert first.get("/plots/autoregressive-pixels.json?col=1").status_code == 429
    assert second.get("/plots/autoregressive-pixels.json?col=3").status_code == 200


def test_answer_page_overrides_beyond_the_limit_fall_back_to_the_question_figure(tmp_path):
    app = _app(tmp_path, RATE_LIMIT_PLOTS="1 per minute")
    client = _browser(app)
    base = open_answer_page(client, PIXELS_QUESTION)  # the question's own figure is never limited
    location = f"/quiz/{SEED_BANK}/{PIXELS_QUESTION}/answer"
    own = client.get(location + f"?v={PIXELS}&col=0")  # the student's values: the one computation
    assert own.status_code == 200
    (visual,) = visuals_on(own.get_data(as_text=True))
    assert query_of(visual["img"]["src"])["col"] == ["0"]
    assert client.get(location + f"?v={PIXELS}&col=0").status_code == 200  # cached: free
    assert client.get(visual["img"]["src"]).status_code == 200  # its image: drawn, not charged
    page = client.get(location + f"?v={PIXELS}&col=1")
    assert page.status_code == 429
    text = page.get_data(as_text=True)
    assert "new plots" in html.unescape(text) and "question's own values" in html.unescape(text)
    (fallback,) = visuals_on(text)
    (question,) = visuals_on(base)
    assert fallback["img"]["src"] == question["img"]["src"]  # the question's figure, as on its own page
    assert fallback["img"]["alt"] == question["img"]["alt"]
    assert client.get(visual["img"]["src"].replace("col=0", "col=1")).status_code == 429
    assert client.get(location).status_code == 200


# --- the pages ---------------------------------------------------------------------------------------------


def test_every_seed_question_has_a_visual_of_a_known_kind(shared_app):
    seed = shared_app.extensions["banks"].get(SEED_BANK)
    assert [question.id for question in seed.questions] == list(EXPECTED)
    for question in seed.questions:
        assert question.visual is not None and get_kind(question.visual.kind) is not None, question.id


@pytest.mark.parametrize("question_id", list(EXPECTED))
def test_each_answer_page_shows_its_visual_sized_with_alt_text_and_controls(shared_app, question_id):
    client = shared_app.test_client()
    page = open_answer_page(client, question_id)
    question = shared_app.extensions["banks"].get(SEED_BANK).question(question_id)
    kind = get_kind(question.visual.kind)
    (visual,) = visuals_on(page)
    img = visual["img"]
    assert visual["kind"] == kind.name
    # The question's params, with whatever the page adds for this student (e.g. the options they chose).
    params = kind.parse({key: value for key, (value,) in query_of(img["src"]).items()})
    assert (int(img["width"]), int(img["height"])) == kind.size(params)
    densities = srcset_urls(img["srcset"])
    assert densities["1x"] == img["src"]
    assert ("2x" in densities) == (kind.format == "png")
    served = client.get(img["src"])
    assert served.status_code == 200
    assert image_size(served.data) == (int(img["width"]), int(img["height"]))  # its space is kept for it
    assert img["alt"] and visual["alt"].strip() == img["alt"]  # the alt text is also shown on request
    if kind.describe(params).alt == kind.describe(params).alt:  # not for words from live timings
        assert img["alt"] == kind.describe(params).alt
    if kind.has_narrow_layout:
        source = visual["source"]
        assert (int(source["width"]), int(source["height"])) == kind.size(params, "narrow")
        assert query_of(srcset_urls(source["srcset"])["1x"])["layout"] == ["narrow"]
    else:
        assert visual["source"] is None
    assert '<form class="visual-controls" method="get"' in page
    assert 'for="visual-' in page
    assert f'href="{kind.learn}"' in page or 'href="/learn/' in page


def test_answer_page_controls_redraw_without_javascript(shared_app):
    client = shared_app.test_client()
    (default,) = visuals_on(open_answer_page(client, PIXELS_QUESTION))
    changed_page = open_answer_page(client, PIXELS_QUESTION, f"?v={PIXELS}&row=1&col=4")
    (changed,) = visuals_on(changed_page)
    assert query_of(changed["img"]["src"])["row"] == ["1"] and query_of(changed["img"]["src"])["col"] == ["4"]
    assert changed["img"]["alt"] != default["img"]["alt"]
    kind = get_kind(PIXELS)  # the words are those of the params in the image's URL (with the student's answer)
    params = kind.parse({key: value for key, (value,) in query_of(changed["img"]["src"]).items()})
    assert (params.row, params.col) == (1, 4) and changed["img"]["alt"] == kind.describe(params).alt
    assert 'name="col" type="number" value="4"' in changed_page
    # Another kind's name in `v` leaves this figure alone.
    (other,) = visuals_on(open_answer_page(client, PIXELS_QUESTION, "?v=complexity&row=1&col=4"))
    assert other["img"]["src"] == default["img"]["src"]


def test_answer_page_with_a_bad_control_value_explains_and_keeps_working(shared_app):
    client = shared_app.test_client()
    (default,) = visuals_on(open_answer_page(client, PIXELS_QUESTION))
    page = client.get(f"/quiz/{SEED_BANK}/{PIXELS_QUESTION}/answer?v={PIXELS}&row=99")
    assert page.status_code == 400
    text = html.unescape(page.get_data(as_text=True))
    assert "row must be at most" in text and "question's own values" in text
    assert 'id="verdict"' in text  # the answer is still there
    (shown,) = visuals_on(page.get_data(as_text=True))
    assert shown["img"]["src"] == default["img"]["src"]


def test_an_answer_page_reads_the_database_once(app, client):
    open_answer_page(client, PIXELS_QUESTION)
    statements = []
    engine = app.extensions["db_engine"]

    def count(conn, cursor, statement, *args):
        if statement.lstrip().upper().startswith("SELECT"):
            statements.append(statement)

    event.listen(engine, "before_cursor_execute", count)
    try:
        assert client.get(f"/quiz/{SEED_BANK}/{PIXELS_QUESTION}/answer").status_code == 200
    finally:
        event.remove(engine, "before_cursor_execute", count)
    assert len(statements) == 1, statements


@pytest.mark.parametrize("page", ["attention", "position-encoding", "complexity"])
def test_learn_pages_show_each_image_at_its_stated_size(shared_client, page):
    response = shared_client.get(f"/learn/{page}")
    assert response.status_code == 200
    text = response.get_data(as_text=True)
    assert "<math" in text  # maths rendered server-side
    visuals = visuals_on(text)
    assert visuals
    for visual in visuals:
        kind = get_kind(visual["kind"])
        params = kind.parse({})  # the learn pages show the defaults
        img = visual["img"]
        assert (int(img["width"]), int(img["height"])) == kind.size(params), img["src"]
        assert urlsplit(img["src"]).path == f"/plots/{kind.name}.{kind.format}"
        assert srcset_urls(img["srcset"])["1x"] == img["src"]
        assert img["alt"] and visual["alt"].strip() == img["alt"]
        if kind.has_narrow_layout:
            assert (int(visual["source"]["width"]), int(visual["source"]["height"])) == kind.size(params, "narrow")


def test_learn_page_images_are_served_at_their_stated_size(shared_client):
    for visual in visuals_on(shared_client.get("/learn/position-encoding").get_data(as_text=True)):
        img = visual["img"]
        assert image_size(shared_client.get(img["src"]).data) == (int(img["width"]), int(img["height"]))


def test_every_kind_links_to_an_existing_learn_anchor(shared_client):
    for kind in KINDS.values():
        path, _, anchor = kind.learn.partition("#")
        response = shared_client.get(path)
        assert response.status_code == 200, kind.learn
        if anchor:
            assert f'id="{anchor}"' in response.get_data(as_text=True), kind.learn


def test_learn_page_overrides_apply_only_to_their_own_section(shared_client):
    text = shared_client.get("/learn/attention?v=attention-playground&causal=on&num_heads=1&d_model=8"
                             ).get_data(as_text=True)
    visuals = {visual["kind"]: visual for visual in visuals_on(text)}
    playground = visuals["attention-playground"]
    assert query_of(playground["img"]["src"])["causal"] == ["on"]
    assert "causal mask on" in playground["alt"].lower()
    for name, visual in visuals.items():
        if name != "attention-playground":
            kind = get_kind(name)
            assert {key: value for key, (value,) in query_of(visual["img"]["src"]).items()} == query_values(
                kind.parse({})), name
    assert shared_client.get("/learn/nope").status_code == 404


# --- matplotlib loads only to draw --------------------------------------------------------------------------


@pytest.mark.slow
def test_start_up_pages_and_descriptions_import_no_matplotlib():
    """Workers boot, and serve every question's answer page and the live controls' descriptions, without
    matplotlib (about a second of import): it loads with the first image that must be drawn."""
    out = run_python(f"""
        import re, sys, tempfile
        from app import create_app
        from test_seed import EXPECTED

        folder = tempfile.mkdtemp()
        app = create_app({{"TESTING": True, "SECRET_KEY": "test-secret-key",
                          "DATABASE_URL": f"sqlite:///{{folder}}/test.sqlite3"}})
        booted = sorted(m for m in sys.modules if m.split(".")[0] == "matplotlib")
        client = app.test_client()
        client.set_cookie("seen", "1")
        for question_id, (answer, _) in EXPECTED.items():
            answer = ("true" if answer else "false") if isinstance(answer, bool) else answer
            page = client.get("/quiz/{SEED_BANK}/" + question_id).get_data(as_text=True)
            token = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)
            answered = client.post("/quiz/{SEED_BANK}/" + question_id, data={{"csrf_token": token, "answer": answer}})
            assert answered.status_code == 303, (question_id, answered.status_code)
            shown = client.get(answered.location)
            assert shown.status_code == 200 and 'class="visual-image"' in shown.get_data(as_text=True), question_id
        mine = client.get("/quiz/{SEED_BANK}/{PIXELS_QUESTION}/answer?v={PIXELS}&col=0")
        assert mine.status_code == 200 and "col=0" in mine.get_data(as_text=True)
        described = client.get("/plots/{PIXELS}.json?col=4")
        assert described.status_code == 200 and described.get_json()["alt"]
        served = sorted(m for m in sys.modules if m.split(".")[0] == "matplotlib")
        drawn = client.get(described.get_json()["src"])
        print(booted, served, drawn.status_code, "matplotlib" in sys.modules)
    """, env={"PYTHONPATH": "tests"})
    assert out == "[] [] 200 True"
