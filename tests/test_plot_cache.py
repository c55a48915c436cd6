"""The plot caches: renders limited (cached figures free), the disk cache that gunicorn's workers share,
and one database read per answer page."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from sqlalchemy import event

from app import create_app
from app.visuals import get_kind
from app.visuals.service import DiskCache, RenderCache, bank_visuals, canonical, prerender
from conftest import SEED_BANK, answer_via_form, run_python

ROOT = Path(__file__).resolve().parent.parent


def _app(tmp_path, **config):
    return create_app({"TESTING": True, "SECRET_KEY": "test-secret-key",
                       "DATABASE_URL": f"sqlite:///{tmp_path / 'test.sqlite3'}", **config})


def _browser(app):
    client = app.test_client()
    client.set_cookie("seen", "1")  # a browser with cookies: the limits are per session, not per address
    return client


# --- rate limits: renders, not cache hits -------------------------------------------------------


def test_cached_plots_are_not_limited_but_new_renders_are(tmp_path):
    app = _app(tmp_path, RATE_LIMIT_PLOTS="3 per minute")
    client = _browser(app)
    url = "/plots/head-split.svg?d_model=96&num_heads=3"
    assert client.get(url).status_code == 200  # one render
    for _ in range(40):  # many cached hits: no limit
        assert client.get(url).status_code == 200
    assert client.get("/plots/head-split.json?d_model=96&num_heads=3").status_code == 200  # cached too
    codes = [client.get(f"/plots/head-split.svg?d_model=128&num_heads={h}").status_code for h in (1, 2, 4)]
    assert codes == [200, 200, 429]
    refused = client.get("/plots/head-split.svg?d_model=128&num_heads=8")
    assert refused.status_code == 429
    text = refused.get_data(as_text=True)
    assert "new plots" in text and "3 per minute" in text and "Wait" in text
    assert int(refused.headers["Retry-After"]) >= 1
    assert client.get(url).status_code == 200  # the figures already drawn still load
    body = client.get("/plots/head-split.json?d_model=64&num_heads=8").get_json()
    assert body["error"]["status"] == 429 and "new plots" in body["error"]["message"]


def test_refused_parameters_count_against_the_limit(tmp_path):
    app = _app(tmp_path, RATE_LIMIT_PLOTS="2 per minute")
    client = _browser(app)
    assert client.get("/plots/head-split.svg?d_model=130").status_code == 400
    assert client.get("/plots/no-such-kind.svg").status_code == 404
    assert client.get("/plots/head-split.svg?d_model=131").status_code == 429


def test_limits_are_per_session(tmp_path):
    app = _app(tmp_path, RATE_LIMIT_PLOTS="1 per minute")
    first, second = _browser(app), _browser(app)
    assert first.get("/plots/head-split.svg?d_model=64&num_heads=2").status_code == 200
    assert first.get("/plots/head-split.svg?d_model=64&num_heads=4").status_code == 429
    assert second.get("/plots/head-split.svg?d_model=64&num_heads=8").status_code == 200


def test_answer_page_overrides_beyond_the_limit_fall_back_to_the_question_figure(tmp_path):
    app = _app(tmp_path, RATE_LIMIT_PLOTS="1 per minute")
    client = _browser(app)
    assert answer_via_form(client, SEED_BANK, "head-dimension", "32").status_code == 303
    base = f"/quiz/{SEED_BANK}/head-dimension/answer"
    assert client.get(base).status_code == 200  # the question's own figure is never limited
    # A page draws nothing and is not charged: the image it points at draws, and is charged.
    assert client.get(base + "?v=head-split&num_heads=2").status_code == 200
    assert client.get(base + "?v=head-split&num_heads=2").status_code == 200
    assert client.get("/plots/head-split.svg?d_model=128&num_heads=2").status_code == 200  # the one render
    page = client.get(base + "?v=head-split&num_heads=8")
    assert page.status_code == 429
    assert client.get("/plots/head-split.svg?d_model=128&num_heads=8").status_code == 429
    text = page.get_data(as_text=True)
    assert "new plots" in text and "question&#39;s own values" in text
    assert client.get(base).status_code == 200


# --- the disk cache -------------------------------------------------------------------------------


def _head_split(d_model=128, heads=4):
    kind = get_kind("head-split")
    return kind, kind.parse({"d_model": d_model, "num_heads": heads})


def test_two_apps_sharing_a_folder_draw_a_figure_once(tmp_path):
    folder = tmp_path / "plots"
    first = _app(tmp_path, PLOT_CACHE_DIR=str(folder))
    second = _app(tmp_path, PLOT_CACHE_DIR=str(folder))
    one = first.test_client().get("/plots/multi-head.png")
    two = second.test_client().get("/plots/multi-head.png")
    assert one.status_code == two.status_code == 200
    assert one.data == two.data and one.headers["ETag"] == two.headers["ETag"]
    assert first.extensions["render_cache"].misses == 1
    assert second.extensions["render_cache"].misses == 0 and second.extensions["render_cache"].disk_hits == 1
    assert len(list(folder.glob("*/*.plot"))) == 1


def test_a_restart_reads_figures_and_alt_text_from_disk(tmp_path):
    kind, params = _head_split()
    before = RenderCache(8, DiskCache(tmp_path, 10**7)).get_or_render(kind, params)
    restarted = RenderCache(8, DiskCache(tmp_path, 10**7))
    after = restarted.get_or_render(kind, params)
    assert restarted.misses == 0
    assert after == before  # image, media type, alt text, caption and ETag


@pytest.mark.parametrize("damage", ["truncate", "garbage", "flip", "empty"])
def test_a_damaged_file_is_ignored_and_drawn_again(tmp_path, damage):
    kind, params = _head_split()
    good = RenderCache(8, DiskCache(tmp_path, 10**7)).get_or_render(kind, params)
    path = DiskCache(tmp_path, 10**7).path((kind.name, canonical(params)))
    data = path.read_bytes()
    path.write_bytes({"truncate": data[: len(data) - 10], "garbage": os.urandom(300),
                      "flip": data[:-1] + bytes([data[-1] ^ 1]), "empty": b""}[damage])
    cache = RenderCache(8, DiskCache(tmp_path, 10**7))
    assert cache.get_or_render(kind, params) == good
    assert cache.misses == 1
    assert path.read_bytes() == data  # repaired


def test_a_new_version_stamp_draws_again(tmp_path, monkeypatch):
    from app.visuals import service

    kind, params = _head_split()
    old = RenderCache(8, DiskCache(tmp_path, 10**7))
    old.get_or_render(kind, params)
    real_version = service.metadata.version
    monkeypatch.setattr(service.metadata, "version",
                        lambda name: "99.0" if name == "matplotlib" else real_version(name))
    cache = RenderCache(8, DiskCache(tmp_path, 10**7))
    assert cache.disk.stamp != old.disk.stamp
    cache.get_or_render(kind, params)
    assert cache.misses == 1
    assert len(list(tmp_path.glob("*/*.plot"))) == 2


def test_the_folder_is_pruned_to_its_bound_least_recently_used_first(tmp_path):
    disk = DiskCache(tmp_path, 10**7)
    cache = RenderCache(64, disk)
    keys = []
    for heads in (1, 2, 4, 8, 16):
        kind, params = _head_split(128, heads)
        cache.get_or_render(kind, params)
        keys.append(disk.path((kind.name, canonical(params))))
    sizes = [path.stat().st_size for path in keys]
    for age, path in enumerate(keys):  # oldest first
        os.utime(path, (1_000_000 + age, 1_000_000 + age))
    disk.max_bytes = sum(sizes) - 1
    assert disk.prune() >= 1
    left = [path.exists() for path in keys]
    assert left[-1] and not left[0]
    assert sum(path.stat().st_size for path in keys if path.exists()) <= disk.max_bytes


def test_an_unwritable_folder_degrades_to_memory_with_one_warning(tmp_path, caplog):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with caplog.at_level(logging.WARNING, logger="app.visuals.service"):
        app = _app(tmp_path, PLOT_CACHE_DIR=str(blocker / "plots"))
        client = app.test_client()
        for heads in (1, 2, 4):
            assert client.get(f"/plots/head-split.svg?d_model=64&num_heads={heads}").status_code == 200
    warnings = [r for r in caplog.records if r.name == "app.visuals.service" and r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "memory only" in warnings[0].getMessage()
    assert app.extensions["render_cache"].disk.enabled is False


def test_a_write_failure_later_degrades_to_memory(tmp_path, caplog, monkeypatch):
    disk = DiskCache(tmp_path, 10**7)
    cache = RenderCache(8, disk)

    def full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Path, "write_bytes", full)
    with caplog.at_level(logging.WARNING, logger="app.visuals.service"):
        for heads in (1, 2):
            cache.get_or_render(*_head_split(64, heads))
    assert not disk.enabled and cache.misses == 2
    assert sum("memory only" in r.getMessage() for r in caplog.records) == 1
    assert not list(tmp_path.glob("*/*.tmp"))


@pytest.mark.parametrize("setting", [False, "", "false"])
def test_the_disk_cache_can_be_turned_off(tmp_path, setting):
    app = _app(tmp_path, PLOT_CACHE_DIR=setting)
    assert app.extensions["render_cache"].disk is None


def test_by_default_it_lives_in_the_instance_folder_but_not_under_testing(tmp_path, monkeypatch):
    monkeypatch.setenv("FLASK_INSTANCE_PATH", str(tmp_path / "instance"))
    assert _app(tmp_path).extensions["render_cache"].disk is None
    served = create_app({"SECRET_KEY": "x" * 40, "DATABASE_URL": f"sqlite:///{tmp_path / 'p.sqlite3'}"})
    assert served.extensions["render_cache"].disk.root == tmp_path / "instance" / "plot-cache"


def test_prerender_costs_one_worker(tmp_path, app):
    visuals = bank_visuals(app.extensions["banks"].banks.values())[:3]
    first = RenderCache(64, DiskCache(tmp_path, 10**8))
    second = RenderCache(64, DiskCache(tmp_path, 10**8))
    assert prerender(first, visuals) == len(visuals) and first.misses == len(visuals)
    assert prerender(second, visuals) == len(visuals)
    assert second.misses == 0 and second.disk_hits == len(visuals)


_WORKER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from app.visuals import get_kind
    from app.visuals.service import DiskCache, RenderCache
    folder, go = Path(sys.argv[1]), Path(sys.argv[2])
    kind = get_kind("multi-head")
    params = kind.parse({"num_heads": 4})
    cache = RenderCache(8, DiskCache(folder, 10**8))
    print("ready", flush=True)
    while not go.exists():
        time.sleep(0.005)
    entry = cache.get_or_render(kind, params)
    print(cache.misses, cache.disk_hits, entry.etag, flush=True)
""")


def test_two_processes_asking_at_once_draw_the_figure_once(tmp_path):
    go = tmp_path / "go"
    workers = [subprocess.Popen([sys.executable, "-c", _WORKER, str(tmp_path / "plots"), str(go)], cwd=ROOT,
                                stdout=subprocess.PIPE, text=True) for _ in range(2)]
    try:
        for worker in workers:
            assert worker.stdout.readline().strip() == "ready"
        go.touch()
        results = [worker.communicate(timeout=120)[0].split() for worker in workers]
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
    assert all(worker.returncode == 0 for worker in workers)
    assert sorted(int(misses) for misses, _, _ in results) == [0, 1]  # one drew, the other read its file
    assert results[0][2] == results[1][2]


# --- the answer page ------------------------------------------------------------------------------


def test_an_answer_page_reads_the_database_once(app, client):
    assert answer_via_form(client, SEED_BANK, "head-dimension", "32").status_code == 303
    statements = []
    engine = app.extensions["db_engine"]

    def count(conn, cursor, statement, *args):
        if statement.lstrip().upper().startswith("SELECT"):
            statements.append(statement)

    event.listen(engine, "before_cursor_execute", count)
    try:
        assert client.get(f"/quiz/{SEED_BANK}/head-dimension/answer").status_code == 200
    finally:
        event.remove(engine, "before_cursor_execute", count)
    assert len(statements) == 1, statements


# --- start-up -------------------------------------------------------------------------------------


def test_create_app_does_not_import_matplotlib(tmp_path):
    """Workers boot without matplotlib; it loads with the first figure that must be drawn."""
    code = ("import sys; from app import create_app; "
            f"create_app({{'SECRET_KEY': 'x' * 40, 'DATABASE_URL': 'sqlite:///{tmp_path / 'm.sqlite3'}'}}); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'matplotlib')[:5])")
    assert run_python(code, env={"FLASK_INSTANCE_PATH": str(tmp_path / "instance")}) == "[]"


def test_answer_pages_are_cached_per_answer_and_follow_the_student(app):
    first, second = app.test_client(), app.test_client()
    assert answer_via_form(first, SEED_BANK, "head-dimension", "32").status_code == 303
    assert answer_via_form(second, SEED_BANK, "head-dimension", "64").status_code == 303
    url = f"/quiz/{SEED_BANK}/head-dimension/answer"
    pages = app.extensions["answer_pages"]
    one = first.get(url).get_data(as_text=True)
    assert first.get(url).get_data(as_text=True) == one and pages.hits == 1
    other = second.get(url).get_data(as_text=True)
    assert other != one and pages.hits == 1  # another answer: its own page
    assert "Correct" in one and "Not quite" in other
    # Progress shown on the page follows the student: a second answer makes a new page.
    assert answer_via_form(first, SEED_BANK, "soft-dictionary-lookup", "true").status_code == 303
    assert first.get(url).get_data(as_text=True) != one
    # Plot controls in the query string make their own page; a bad value is never cached.
    changed = first.get(url + "?v=head-split&num_heads=8")
    assert changed.status_code == 200 and "num_heads=8" in changed.get_data(as_text=True)
    assert first.get(url + "?v=head-split&num_heads=3").status_code == 400
    assert first.get(url + "?v=head-split&num_heads=3").status_code == 400


# Names whose value differs between students or requests, which the answer-page cache key does not hold.
PER_STUDENT_NAMES = {"session", "request", "g", "current_user", "csrf_token", "get_flashed_messages", "config"}


def test_the_answer_page_template_reads_nothing_the_page_cache_key_leaves_out(app):
    # Answer pages are cached under _answer_page_key (app/web/quiz.py). Were the template (or anything it
    # extends, includes or imports) to read the session, the request, a CSRF token or flashed messages,
    # one student's cached page would be served to another. Such a change must extend the key first.
    from jinja2 import meta, nodes

    env = app.jinja_env
    seen, todo, found = set(), ["quiz/answer.html"], {}
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        tree = env.parse(env.loader.get_source(env, name)[0])
        for node in tree.find_all(nodes.Name):
            if node.ctx == "load" and node.name in PER_STUDENT_NAMES:
                found.setdefault(name, set()).add(node.name)
        todo += [ref for ref in meta.find_referenced_templates(tree) if ref]
    assert {"quiz/answer.html", "base.html", "_visual.html", "quiz/_progress.html"} <= seen
    assert not found, (f"{found}: add what these read to _answer_page_key in app/web/quiz.py "
                       "(or stop caching answer pages) before the template uses it")


def test_an_answer_page_with_the_students_values_looks_for_its_figure_once(tmp_path, monkeypatch):
    app = _app(tmp_path, PLOT_CACHE_DIR=str(tmp_path / "plots"))
    client = _browser(app)
    assert answer_via_form(client, SEED_BANK, "head-dimension", "32").status_code == 303
    reads = []
    real_read = DiskCache.read
    monkeypatch.setattr(DiskCache, "read", lambda self, key: reads.append(key) or real_read(self, key))
    page = client.get(f"/quiz/{SEED_BANK}/head-dimension/answer?v=head-split&num_heads=2")
    assert page.status_code == 200 and "num_heads=2" in page.get_data(as_text=True)
    assert len(reads) == 1, reads  # one look at the disk on a miss, not one per layer
    described = client.get("/plots/head-split.json?d_model=128&num_heads=8")  # the live controls' request
    assert described.status_code == 200 and described.get_json()["src"].endswith("num_heads=8")
    assert len(reads) == 2, reads
