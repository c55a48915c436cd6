"""Issue 15, items 2 and 5: limits a client cannot reset (its address, not its cookies), a render gate that
refuses new plots at once rather than letting them take every server thread, and counters in the app's
database that hold across gunicorn workers. The gunicorn tests send traffic only to 127.0.0.1 and stop by
themselves within about 30 s each."""

from __future__ import annotations

import html
import os
import re
import secrets
import statistics
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import pytest
from conftest import SEED_BANK, answer_via_form
from httpclient import CSRF, Browser
from pgserver import _free_port, wait_for_http

from app import create_app

ROOT = Path(__file__).resolve().parent.parent
LOOKUP_QUESTION = "soft-dictionary-lookup"  # its answer page shows a soft-lookup visual with a temperature control
IMAGE = re.compile(r'<img class="visual-image" src="([^"]+)"')


def _image_url(page: str) -> str | None:
    match = IMAGE.search(page)
    return html.unescape(match.group(1)) if match else None


def _app(tmp_path, **config):
    return create_app({"TESTING": True, "SECRET_KEY": "test-secret-key",
                       "DATABASE_URL": f"sqlite:///{tmp_path / 'test.sqlite3'}", **config})


def _retry_after(response) -> int:
    value = response.headers.get("Retry-After")
    assert value is not None and value.isdigit() and int(value) >= 1, value
    return int(value)


# -- keyed on the address ---------------------------------------------------------------------------------


def test_junk_cookies_and_no_cookies_share_one_address_budget_for_new_plots(tmp_path):
    app = _app(tmp_path, RATE_LIMIT_PLOTS_PER_ADDRESS="3 per minute", RATE_LIMIT_PLOTS="1000 per minute")
    statuses = []
    for index in range(6):
        client = app.test_client()  # a new client every time: no session survives
        if index % 2:
            client.set_cookie("junk", str(index))  # used to earn a fresh session, and a fresh budget
        response = client.get(f"/plots/complexity.json?n={100 + index}")
        statuses.append(response.status_code)
    assert statuses == [200, 200, 200, 429, 429, 429]
    _retry_after(response)
    message = response.get_json()["error"]["message"]
    assert message.startswith("This address") and "Wait" in message and "3 per minute" in message
    png = app.test_client().get("/plots/complexity.png?n=999")  # an image request gets the HTML page
    assert png.status_code == 429 and png.mimetype == "text/html"
    _retry_after(png)
    assert "plots already drawn still load" in png.get_data(as_text=True)
    cached = app.test_client().get("/plots/complexity.json?n=100")  # cached visuals are never limited
    assert cached.status_code == 200


def test_each_address_behind_the_proxy_has_its_own_budget(tmp_path):
    app = _app(tmp_path, PROXY_FIX=1, RATE_LIMIT_PLOTS_PER_ADDRESS="2 per minute", RATE_LIMIT_PLOTS="1000 per minute")

    def new_plot(address: str, n: int) -> int:
        return app.test_client().get(f"/plots/complexity.json?n={n}",
                                     headers={"X-Forwarded-For": address}).status_code

    assert [new_plot("203.0.113.7", n) for n in (10, 11, 12)] == [200, 200, 429]
    assert new_plot("198.51.100.9", 13) == 200  # another school is not refused for the first one's plots


def test_fresh_sessions_share_one_address_budget_for_posts(tmp_path):
    app = _app(tmp_path, RATE_LIMIT_SUBMIT_PER_ADDRESS="3 per minute")
    # A new browser session for every answer (one request without cookies mints one, with its CSRF token).
    statuses = [answer_via_form(app.test_client(), SEED_BANK, "head-dimension", "32") for _ in range(4)]
    assert [r.status_code for r in statuses] == [303, 303, 303, 429]
    _retry_after(statuses[3])
    assert "Wait a moment and try again" in statuses[3].get_data(as_text=True)


# -- the render gate --------------------------------------------------------------------------------------


@contextmanager
def _held_slots(gate, clients):
    """Hold one slot of `gate` per entry of `clients` until the block ends, as renders in progress do."""
    release, holding = threading.Event(), threading.Barrier(len(clients) + 1)

    def hold(client):
        gate.run(client, lambda: (holding.wait(5), release.wait(10)))

    threads = [threading.Thread(target=hold, args=(client,)) for client in clients]
    for thread in threads:
        thread.start()
    holding.wait(5)
    try:
        yield
    finally:
        release.set()
        for thread in threads:
            thread.join(10)


def test_render_gate_bounds_all_clients_and_each_client():
    from app.visuals.service import RenderClient, RenderGate, RenderGateFull

    a, b, c = (RenderClient(f"addr:{n}", f"addr:{n}") for n in "abc")
    gate = RenderGate(slots=3, per_client=2, per_address=3)
    with _held_slots(gate, [a, a]):
        with pytest.raises(RenderGateFull):
            gate.run(a, lambda: "a third for one client")
        with _held_slots(gate, [b]), pytest.raises(RenderGateFull):  # another client got the last slot
            gate.run(c, lambda: "a fourth in all")
    assert gate.run(a, lambda: "free again") == "free again"


def test_one_address_leaves_a_slot_for_every_other_address_however_many_sessions_it_makes_up():
    """Each attempt is a client of its own (a classroom behind one NAT address is not one client), so an address
    that starts attempts in several sessions once held every slot: other addresses got 503 on all their plots."""
    from app.visuals.service import RenderClient, RenderGate, RenderGateFull

    gate = RenderGate()  # the server's: 6 slots, 4 per client, 5 per address
    flood = [RenderClient(f"attempt:{n}", "addr:203.0.113.9") for n in range(3)]
    with _held_slots(gate, [flood[0]] * 2 + [flood[1]] * 2 + [flood[2]]):  # five slots, from three sessions
        with pytest.raises(RenderGateFull):
            gate.run(flood[2], lambda: "a sixth for the flooding address")
        with pytest.raises(RenderGateFull):
            gate.run(RenderClient("attempt:new", "addr:203.0.113.9"), lambda: "nor from a fresh session")
        assert gate.run(RenderClient("attempt:x", "addr:198.51.100.7"), lambda: "drawn") == "drawn"


def test_a_full_gate_refuses_new_plots_at_once_and_pages_keep_working(tmp_path):
    app = _app(tmp_path, RATE_LIMIT_PLOTS="1000 per minute", RATE_LIMIT_SUBMIT="1000 per minute")
    cache = app.extensions["visual_cache"]
    student = app.test_client()
    assert answer_via_form(student, SEED_BANK, LOOKUP_QUESTION, "true").status_code == 303
    answer_page = f"/quiz/{SEED_BANK}/{LOOKUP_QUESTION}/answer"
    assert student.get(answer_page).status_code == 200  # the question's own figure, now cached
    from app.visuals.service import RenderClient

    others = [RenderClient(f"addr:198.51.100.{n}", f"addr:198.51.100.{n}") for n in range(cache.gate.slots)]
    with _held_slots(cache.gate, others):
        started = time.perf_counter()
        image = student.get("/plots/soft-lookup.png?temperature=3.5")
        json = student.get("/plots/soft-lookup.json?temperature=3.5")
        refused_in = time.perf_counter() - started
        page = student.get(answer_page + "?v=soft-lookup&temperature=3.5")
        cached = student.get(answer_page)
    assert image.status_code == 503 and json.status_code == 503
    assert refused_in < 1.0  # refused, not queued
    for response in (image, json, page):
        _retry_after(response)
    assert "drawing as many new plots as it can" in json.get_json()["error"]["message"]
    assert page.status_code == 503
    text = page.get_data(as_text=True)
    assert "drawing as many new plots as it can" in text and "question&#39;s own values" in text
    assert "temperature=1.0" in text and "temperature=3.5" not in text  # the question's own figure
    assert re.search(r'name="temperature"[^>]*value="3.5"', text)  # what the student typed stays, to send again
    assert cached.status_code == 200
    # With the slots free again the student's own values are drawn.
    assert student.get("/plots/soft-lookup.png?temperature=3.5").status_code == 200


def test_past_the_plot_limit_the_controls_keep_what_the_student_typed(tmp_path):
    """Without JavaScript the controls are a form: a 429 showed the page's own values in them, so the sentence and
    the number of heads the student typed were lost (a 400 kept them)."""
    app = _app(tmp_path, RATE_LIMIT_PLOTS="1 per minute")
    student = app.test_client()
    assert student.get("/learn/attention?v=attention-playground&sentence=one+two&num_heads=2").status_code == 200
    page = student.get("/learn/attention?v=attention-playground&sentence=a+dog+sat+near+the+red+car&num_heads=4")
    assert page.status_code == 429
    text = page.get_data(as_text=True)
    assert re.search(r'name="sentence"[^>]*value="a dog sat near the red car"', text), text
    assert re.search(r'name="num_heads"[^>]*value="4"', text)


# -- the database store -----------------------------------------------------------------------------------


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.slow)])
def database_url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'test.sqlite3'}"
    return request.getfixturevalue("postgres").create_database("limits_" + secrets.token_hex(4))


def test_database_counters_are_atomic_and_shared_by_apps_on_one_database(database_url):
    from limits import parse

    from app.web.limit_store import DatabaseStorage
    from app.web.limits import limiter

    first, second = (create_app({"TESTING": True, "SECRET_KEY": "test-secret-key", "DATABASE_URL": database_url,
                                 "RATELIMIT_STORAGE_URI": "database://"}) for _ in range(2))
    assert isinstance(limiter.limiter.storage, DatabaseStorage)
    storage = limiter.limiter.storage
    item = parse("100000 per hour")
    key = item.key_for("test", "k")

    def hit(app, times: int) -> None:
        with app.app_context():
            for _ in range(times):
                storage.incr(key, item.get_expiry())

    try:
        threads = [threading.Thread(target=hit, args=(app, 50)) for app in (first, second) * 3]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        with first.app_context():
            assert storage.get(key) == 300  # six threads, two apps, one database: no hit lost
            assert storage.get_expiry(key) > time.time() + 3500
            storage.clear(key)
            assert storage.get(key) == 0
            assert storage.incr(key, 1) == 1  # a window that ended starts again at the next hit
            time.sleep(1.1)
            assert storage.get(key) == 0
            assert storage.incr(key, 60) == 1
    finally:
        for app in (first, second):
            app.extensions["db_engine"].dispose()


# -- real servers -----------------------------------------------------------------------------------------


@contextmanager
def _gunicorn(tmp_path, workers: int, **env_extra):
    """gunicorn with the container's settings (docker/gunicorn.conf.py: gthread, 4 threads, preload) on
    127.0.0.1, over a fresh SQLite database; stopped on exit."""
    env = {**os.environ, "FLASK_SECRET_KEY": secrets.token_hex(32),
           "FLASK_DATABASE_URL": f"sqlite:///{tmp_path / 'limits.sqlite3'}", "OPENBLAS_NUM_THREADS": "1",
           "MPLCONFIGDIR": str(tmp_path / "mpl"), "GUNICORN_WORKERS": str(workers), **env_extra}
    bin_dir = Path(sys.executable).parent
    port = _free_port()
    with open(tmp_path / "gunicorn.log", "w") as log:
        server = subprocess.Popen([str(bin_dir / "gunicorn"), "-c", str(ROOT / "docker" / "gunicorn.conf.py"),
                                   "--bind", f"127.0.0.1:{port}", "--access-logfile", "/dev/null",
                                   "--worker-tmp-dir", str(tmp_path), "app:create_app()"],
                                  env=env, stdout=log, stderr=subprocess.STDOUT, cwd=tmp_path)
        try:
            base = f"http://127.0.0.1:{port}"
            wait_for_http(base + "/healthz", timeout=60)
            yield base
        finally:
            server.terminate()
            server.wait(20)


def _as(browser: Browser, address: str) -> Browser:
    """Requests from `address`, as a proxy in front of the app (FLASK_PROXY_FIX=1) would report it."""
    browser.opener.addheaders = browser.plain.addheaders = [("X-Forwarded-For", address)]
    return browser


def _load_image(browser: Browser, path: str) -> int:
    """What a browser does for an <img>: GET it with the page's cookies; the status."""
    try:
        with browser.opener.open(browser.base_url + path, timeout=30) as response:
            assert response.read(8) in (b"\x89PNG\r\n\x1a\n", b"<?xml ve")
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def _fetch(url: str, headers: dict[str, str]) -> tuple[int, float]:
    started = time.perf_counter()
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            response.read()
            status = response.status
    except urllib.error.HTTPError as error:
        error.read()
        status = error.code
    return status, time.perf_counter() - started


@pytest.mark.slow
def test_the_login_limit_holds_across_three_workers(tmp_path):
    with _gunicorn(tmp_path, workers=3, FLASK_INSTRUCTOR_PASSWORD_HASH="pbkdf2:sha256:1$salt$" + "0" * 64) as base:
        def attempt(_):
            browser = Browser(base)  # a session of its own: concurrent requests of one would race for its cookie
            page = browser.get("/instructor/login")[2]
            token = CSRF.search(page).group(1)
            return browser.post_form("/instructor/login", {"csrf_token": token, "password": "guess"})[0]

        with ThreadPoolExecutor(max_workers=6) as pool:  # at once, so every worker takes some
            statuses = list(pool.map(attempt, range(30)))
    # The documented 10 per minute per address, not 10 per worker.
    assert statuses.count(401) == 10, statuses
    assert statuses.count(429) == 20, statuses


@pytest.mark.slow
def test_a_render_flood_leaves_a_students_cached_page_served(tmp_path):
    """24 connections from one address ask for a new figure each, 48 a second in all: 16 times the 3 a second
    that saturated both CPUs before the render gate. The gate refuses most of them at once, and the student's
    cached page and own control changes are served all along. How fast that page stays (p99 < 250 ms) is a
    speed goal, measured by `python -m bench.hostile` beside its baseline, not timed here. (A flood of cheap
    requests of any kind, as fast as the server answers, is the front proxy's to refuse: docs/deploy.md.)"""
    flood_seconds, attackers, per_connection = 15, 24, 2.0  # requests per second of each connection
    with _gunicorn(tmp_path, workers=2, FLASK_PROXY_FIX="1") as base:
        student = _as(Browser(base), "10.0.0.2")
        assert student.answer(SEED_BANK, LOOKUP_QUESTION, "true") == 303
        answer_page = f"/quiz/{SEED_BANK}/{LOOKUP_QUESTION}/answer"
        for _ in range(6):  # warm: each worker has computed the question's own figure
            assert student.get(answer_page)[0] == 200
        stop = threading.Event()
        attack_statuses: list[int] = []

        def attack(index: int) -> None:
            # One address, any cookies: none, or junk that used to earn a new session and a new budget.
            headers = {"X-Forwarded-For": "10.0.0.1"}
            n = 0
            while not stop.wait(1 / per_connection):
                n += 1
                if n % 2:
                    headers["Cookie"] = f"junk={index}-{n}"
                else:
                    headers.pop("Cookie", None)
                temperature = 0.05 + (index * 10007 + n) % 19000 / 1000  # a new figure every time
                url = f"{base}/plots/soft-lookup.png?temperature={temperature:.3f}"
                attack_statuses.append(_fetch(url, headers)[0])

        own: list[tuple[int, int, float]] = []

        def control_changes() -> None:  # the student tries the temperature control now and then
            while not stop.wait(2):
                temperature = 7 + len(own) / 4
                started = time.perf_counter()
                status, _, text = _as(Browser(base, student.jar), "10.0.0.2").get(
                    f"{answer_page}?v=soft-lookup&temperature={temperature}")
                image = _image_url(text)
                assert f"temperature={temperature}" in image
                own.append((status, _load_image(student, image), time.perf_counter() - started))

        threads = [threading.Thread(target=attack, args=(index,)) for index in range(attackers)]
        threads.append(threading.Thread(target=control_changes))
        for thread in threads:
            thread.start()
        page_times = []
        try:
            deadline = time.monotonic() + flood_seconds
            time.sleep(1)  # the flood is under way
            while time.monotonic() < deadline:
                started = time.perf_counter()
                status, _, _ = student.get(answer_page)
                page_times.append(time.perf_counter() - started)
                assert status == 200
                time.sleep(0.05)
        finally:
            stop.set()
            for thread in threads:
                thread.join(60)
    page_times.sort()
    p99 = page_times[int(0.99 * (len(page_times) - 1))]
    print(f"\ncached answer page under a flood of {attackers} connections: {len(page_times)} loads, "
          f"median {statistics.median(page_times) * 1e3:.0f} ms, p99 {p99 * 1e3:.0f} ms; attacker statuses "
          f"{ {code: attack_statuses.count(code) for code in sorted(set(attack_statuses))} }; "
          f"own control changes {[(s, i, round(t, 2)) for s, i, t in own]}")
    assert len(page_times) >= 20  # the page kept answering through the flood (a hang would time out at 30 s)
    assert attack_statuses.count(503) > attack_statuses.count(200)  # the gate said no, early
    assert own and all(status == 200 and image == 200 for status, image, _ in own)


@pytest.mark.slow
def test_sixty_students_behind_one_address_are_not_throttled(tmp_path):
    """A class at its busiest: 60 browsers on one address (its NAT), each answering a question every 10 s (a
    fast student) and loading its answer page and figure; half of them try the temperature control on the
    first answer page at some moment of those 30 s (one new figure a second for the class)."""
    from test_seed import EXPECTED

    questions = list(EXPECTED)[:3]
    assert questions[0] == LOOKUP_QUESTION
    with _gunicorn(tmp_path, workers=2) as base:
        def student(index: int) -> list[tuple[str, int]]:
            browser, seen = Browser(base), []
            time.sleep(index % 10)  # the class does not click in step
            for number, question in enumerate(questions):
                started = time.monotonic()
                key = EXPECTED[question][0]
                value = ("true" if key else "false") if isinstance(key, bool) else key
                seen.append(("answer", browser.answer(SEED_BANK, question, value)))
                status, _, page = browser.get(f"/quiz/{SEED_BANK}/{question}/answer")
                seen.append(("page", status))
                if _image_url(page):
                    seen.append(("image", _load_image(browser, _image_url(page))))
                if index % 2 == 0 and number == index // 2 % 3:  # a new visual and its image, on that page
                    time.sleep(index // 6 % 5)
                    status, _, page = browser.get(f"/quiz/{SEED_BANK}/{questions[0]}/answer"
                                                  f"?v=soft-lookup&temperature={0.5 + index / 10}")
                    seen.append(("control", status))
                    seen.append(("control image", _load_image(browser, _image_url(page))))
                if number < len(questions) - 1:
                    time.sleep(max(0.0, 10 - (time.monotonic() - started)))
            return seen

        with ThreadPoolExecutor(max_workers=60) as pool:
            results = [item for seen in pool.map(student, range(60)) for item in seen]
    refused = [item for item in results if item[1] not in (200, 303)]
    print("\nrefused", len(refused), "of", len(results), {w: sum(1 for x in refused if x[0] == w) for w, _ in refused})
    assert not refused, refused
    assert sum(1 for what, _ in results if what == "control image") == 30

