"""An answer page describes its figure without drawing it: each kind's describe step gives exactly the
alt text and caption its render gives, and a page of the seed bank never imports matplotlib."""

from __future__ import annotations

import pytest

from app.visuals import KINDS, get_kind
from conftest import run_python

get_kind("soft-lookup")  # registers every kind

# Defaults, plus non-default params that change the alt text's branches (ties, unknown words, masks,
# grouped heads, the last pixel, positions beyond training).
CASES = {
    "soft-lookup": [{}, {"queries": "zebra", "keys": "cat cat dog", "temperature": 0.05},
                    {"queries": "kitten truck sky", "keys": "car tree", "temperature": 20}],
    "multi-head": [{}, {"sentence": "the dog ran", "num_heads": 4, "d_model": 8, "temperature": 0.3},
                   {"sentence": "blorp the mat", "num_heads": 1, "d_model": 4}],
    "attention-playground": [{}, {"causal": "on", "num_heads": 4, "d_model": 16},
                             {"sentence": "xyzzy sat", "temperature": 5}],
    "order-blindness": [{}, {"positional": "on", "permutation": "rotate"}, {"sentence": "cat", "permutation": "swap-ends"}],
    "qkv-projections": [{}, {"d_model": 16, "d_k": 9, "seed": 7}, {"sentence": "the wug", "d_model": 2, "d_k": 1}],
    "long-range": [{}, {"max_distance": 2, "distance": 1}, {"max_distance": 512, "distance": 300}],
    "position-encoding": [{}, {"length": 2, "d_model": 2, "train_length": 2}, {"length": 200, "d_model": 64, "train_length": 17}],
    "head-split": [{}, {"d_model": 1, "num_heads": 1}, {"d_model": 4096, "num_heads": 64}],
    "autoregressive-pixels": [{}, {"height": 2, "width": 2, "row": 0, "col": 0},
                              {"height": 16, "width": 3, "row": 15, "col": 2}],
}


def test_every_kind_that_describes_without_drawing_is_tested():
    describing = {name for name, kind in KINDS.items() if kind.describes_without_drawing}
    assert describing == set(CASES)
    # Complexity's alt text quotes wall times measured while drawing: only its render can describe it.
    assert not KINDS["complexity"].describes_without_drawing


@pytest.mark.parametrize(("name", "values"), [(name, values) for name, cases in CASES.items() for values in cases])
def test_describe_gives_exactly_the_rendered_alt_text_and_caption(name, values):
    kind = get_kind(name)
    params = kind.parse(values)
    described, rendered = kind.describe(params), kind.render(params)
    assert described.alt == rendered.alt
    assert described.caption == rendered.caption
    assert described.alt  # a real sentence, not two empty strings that agree


def test_answer_pages_and_plot_descriptions_never_import_matplotlib():
    out = run_python("""
        import re, sys, tempfile
        from app import create_app

        folder = tempfile.mkdtemp()
        app = create_app({"TESTING": True, "SECRET_KEY": "test-secret-key",
                          "DATABASE_URL": f"sqlite:///{folder}/test.sqlite3"})
        client = app.test_client()
        client.set_cookie("seen", "1")
        bank = "attention-transformers"
        pages = []
        for question in app.extensions["banks"].banks[bank].questions:
            if question.visual is None or question.visual.kind == "complexity":
                continue  # complexity draws to describe its live timings
            page = client.get(f"/quiz/{bank}/{question.id}").get_data(as_text=True)
            token = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)
            inputs = re.findall(r'<input[^>]*name="answer"[^>]*>', page)
            choices = [re.search(r'value="([^"]*)"', tag) for tag in inputs if 'type="number"' not in tag]
            answer = [choices[0].group(1)] if choices and choices[0] else ["1"]  # a choice, else a number
            answered = client.post(f"/quiz/{bank}/{question.id}", data={"csrf_token": token, "answer": answer})
            assert answered.status_code == 303, (question.id, answered.status_code)
            answer = client.get(f"/quiz/{bank}/{question.id}/answer")
            text = answer.get_data(as_text=True)
            assert answer.status_code == 200, (question.id, answer.status_code)
            assert 'class="visual-alt"' in text, question.id
            pages.append(question.visual.kind)
        # A student's own values, and the live controls' JSON, describe without drawing too.
        overridden = client.get(f"/quiz/{bank}/head-dimension/answer?v=head-split&d_model=96&num_heads=3")
        assert overridden.status_code == 200 and "d_model = 96" in overridden.get_data(as_text=True)
        described = client.get("/plots/soft-lookup.json?temperature=0.5")
        assert described.status_code == 200 and described.get_json()["alt"]
        print(len(pages), sorted(m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")))
    """)
    count, modules = out.split(" ", 1)
    assert int(count) >= 8
    assert modules == "[]"


def test_a_cached_figure_supplies_the_page_text_and_descriptions_are_kept(tmp_path):
    from app.visuals.service import RenderCache

    kind = get_kind("head-split")
    params = kind.parse({"d_model": 96, "num_heads": 3})
    cache = RenderCache(4, max_descriptions=2)
    assert cache.peek(kind, params) is None
    first = cache.describe(kind, params)
    assert cache.misses == 0 and len(cache) == 0  # described, not drawn
    assert cache.describe(kind, params) is first  # from the description LRU
    entry = cache.get_or_render(kind, params)
    assert cache.peek(kind, params) is entry
    assert (first.alt, first.caption) == (entry.rendered.alt, entry.rendered.caption)
    for heads in (1, 2, 4):
        cache.describe(kind, kind.parse({"d_model": 96, "num_heads": heads}))
    assert len(cache._descriptions) == 2  # bounded
