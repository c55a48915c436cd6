"""Pages state each image's width and height before it is drawn, so the browser reserves its space and
nothing shifts when the image arrives: the sizes on the <img> tags equal those of the images served."""

from __future__ import annotations

import html
import re

import pytest

from app.instructor.charts import CountChart, render_png
from app.visuals import KINDS, get_kind
from app.visuals.kinds import complexity  # importing app.visuals.kinds registers every kind, for CASES
from conftest import SEED_BANK, answer_via_form, image_size

VISUAL_IMAGE = re.compile(r'<img class="visual-image" src="([^"]+)" width="(\d+)" height="(\d+)" alt="[^"]+">')

# Every kind with its defaults, then params that change what is drawn (and, for the heads, the size).
CASES = [(name, {}) for name in sorted(KINDS)] + [
    ("multi-head", {"num_heads": 4}),  # two rows of heads: a taller figure
    ("multi-head", {"num_heads": 1, "d_model": 2, "sentence": "cat"}),
    ("attention-playground", {"num_heads": 8, "d_model": 16, "causal": "on"}),
    ("attention-playground", {"num_heads": 3, "d_model": 12, "temperature": 0.05}),
    ("head-split", {"d_model": 4096, "num_heads": 64}),
    ("autoregressive-pixels", {"height": 16, "width": 2, "row": 15, "col": 1}),
    ("position-encoding", {"length": 512, "d_model": 256, "train_length": 1}),
    ("qkv-projections", {"d_model": 16, "d_k": 1, "sentence": "a b"}),
    ("soft-lookup", {"queries": "kitten", "keys": "cat dog car tree sky", "temperature": 0.05}),
    ("long-range", {"max_distance": 512, "distance": 512}),
    ("order-blindness", {"permutation": "rotate", "positional": "on"}),
    ("complexity", {"d": 256, "l": 1, "max_n": 16}),
]


@pytest.fixture
def stub_timing(monkeypatch):
    """The complexity kind times the engine live; its figure's size does not depend on the times."""
    monkeypatch.setattr(complexity, "measure_attention_seconds", lambda sizes, d, l: [1e-6 * n * n for n in sizes])


@pytest.mark.parametrize(("kind_name", "values"), CASES)
def test_each_kind_states_the_size_of_the_image_it_draws(kind_name, values, stub_timing):
    kind = get_kind(kind_name)
    params = kind.parse(values)
    assert kind.size(params) == image_size(kind.render(params).image)


def test_more_heads_make_a_taller_multi_head_figure_and_the_stated_size_follows():
    kind = get_kind("multi-head")
    one_row, two_rows = kind.size(kind.parse({"num_heads": 2})), kind.size(kind.parse({"num_heads": 4}))
    assert one_row[0] == two_rows[0] and one_row[1] < two_rows[1]


def _visual_images(page_html: str) -> list[tuple[str, int, int]]:
    return [(html.unescape(src), int(width), int(height)) for src, width, height in VISUAL_IMAGE.findall(page_html)]


def test_an_answer_page_sizes_its_image_for_the_students_values_also_when_served_from_the_page_cache(app, client):
    location = answer_via_form(client, SEED_BANK, "multi-head-subspaces", "true").location
    pages = app.extensions["answer_pages"]
    for _ in range(2):  # drawn, then served from the answer-page cache
        for query, height in (("", 390), ("?v=multi-head&num_heads=4", 600), ("?v=multi-head&num_heads=2", 390)):
            images = _visual_images(client.get(location + query).get_data(as_text=True))
            assert len(images) == 1
            src, width, stated_height = images[0]
            assert (width, stated_height) == (760, height)
            assert image_size(client.get(src).data) == (width, stated_height)
    assert pages.hits >= 3


def test_the_live_controls_get_the_new_images_size(client):
    for query in ("num_heads=2", "num_heads=8"):
        body = client.get(f"/plots/multi-head.json?{query}").get_json()
        assert image_size(client.get(body["src"]).data) == (body["width"], body["height"])
    body = client.get("/plots/head-split.json?d_model=96&num_heads=3").get_json()
    assert image_size(client.get(body["src"]).data) == (body["width"], body["height"])


@pytest.mark.parametrize("page", ["attention", "position-encoding", "complexity"])
def test_learn_pages_state_each_images_size(client, page):
    images = _visual_images(client.get(f"/learn/{page}").get_data(as_text=True))
    assert images
    for src, width, height in images:
        name = src.split("?")[0].rsplit("/", 1)[-1].rsplit(".", 1)[0]
        kind = get_kind(name)
        assert (width, height) == kind.size(kind.parse({})), src  # the learn pages show the defaults


@pytest.mark.parametrize("bars", [0, 1, 2, 5, 7, 8, 9, 12])
def test_an_instructor_chart_states_the_size_of_its_png(bars):
    chart = CountChart(title="t", subject="answers", category_title="option", labels=tuple(f"o{i}" for i in range(bars)),
                       counts=tuple(range(bars)), highlighted=tuple(i == 0 for i in range(bars)))
    assert chart.size == image_size(render_png(chart))
