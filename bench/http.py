"""HTTP: answer pages under 64 connections, worker memory, and the cold start, through the image's nginx and
gunicorn as the container runs them.

The server is launched the way the image launches it: `docker/entrypoint.sh gunicorn --config
docker/gunicorn.conf.py "app:create_app()"`, with the runtime stage's ENV lines of the Dockerfile
(read from it: 2 workers x 8 threads, one BLAS thread per worker, auto-migration off, the entrypoint's
`flask init-db` first), gunicorn on a unix socket behind nginx with docker/nginx.conf (as docker/serve.sh
runs them), except that nginx listens on 127.0.0.1 only and everything keeps its files in a temporary
instance folder. Load comes from Debian's wrk at 64 connections. Everything runs against 127.0.0.1,
with bounded durations, and every server is stopped by this process.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import secrets
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlencode

from .timing import ROOT

BANK = "attention-transformers"
# The real model's bank: with it, the master loads the model and runs it on each variant's sentence while validating
# the banks. Its server goals are issue 13's (bench/model.py: RSS < 250 MB, the first model figure < 3 s); this
# section's goals (issue 11's) were set for the app on its own engine, so its servers serve every other bundled bank.
MODEL_BANK = "real-attention-heads"
CSRF_INPUT = re.compile(r'name="csrf_token" value="([^"]+)"')
PLOT_URL = re.compile(r'(/plots/[^"\s,]+\.(?:png|svg)[^"\s,]*)')  # the images, not /plots/<kind>.json
CONNECTIONS = 64
WRK_THREADS = 2
STATIC_PATH = "/static/style.css"  # the baseline: a file served by Flask's own static route, same server
P99_GOAL_MS = 150
RSS_GOAL_MB = 150
COLD_START_GOAL_S = 2.0
THINK_MS = 1000  # the goal's runs: after each response a connection waits a random time with this mean (reading)
# The bench lifts the per-session rate limits: 64 connections from one machine are the load, not abuse.
SERVER_ENV = {
    "FLASK_RATE_LIMIT_SUBMIT": "1000000 per minute",
    "FLASK_RATE_LIMIT_PLOTS": "1000000 per minute",
}
# Runtime ENV lines of the Dockerfile that name places inside the image; the bench has its own.
IMAGE_PATHS = {"PATH", "FLASK_INSTANCE_PATH", "FLASK_QUIZ_DIR", "MPLCONFIGDIR", "PORT"}


def engine_banks(folder: Path) -> Path:
    """`folder`/quizzes holding a copy of every bundled bank but the real model's, for FLASK_QUIZ_DIR (copies: the
    app does not follow a symbolic link out of its quiz folder)."""
    from app.paths import resource_dir

    banks = folder / "quizzes"
    banks.mkdir(parents=True, exist_ok=True)
    for path in sorted(resource_dir("quizzes").glob("*.yaml")):
        if path.stem != MODEL_BANK:
            shutil.copyfile(path, banks / path.name)
    return banks


def compile_bytecode() -> None:
    """Compile the app's modules, as the image's `pip install` of the wheel does. The image sets
    PYTHONDONTWRITEBYTECODE=1, and so does the bench's server: without this, a launch from the source tree
    compiles every module of app/ again (about 0.3 s of a cold start, measured) where the image reads them."""
    import compileall

    if not compileall.compile_dir(ROOT / "app", quiet=1):
        raise RuntimeError("compileall could not compile app/")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def dockerfile_env(dockerfile: Path = ROOT / "Dockerfile") -> dict[str, str]:
    """The ENV settings of the Dockerfile's last stage (the runtime image), as a dict."""
    text = dockerfile.read_text().replace("\\\n", " ")
    stage = text.rsplit("\nFROM ", 1)[-1]
    env: dict[str, str] = {}
    for line in stage.splitlines():
        if line.startswith("ENV "):
            for pair in line[4:].split():
                if "=" in pair:
                    name, value = pair.split("=", 1)
                    env[name] = value.strip('"')
    return env


# --- a tiny HTTP client with one session cookie ------------------------------------------------


class Student:
    """One browser: its own connection and session cookie."""

    def __init__(self, port: int, timeout: float = 30.0):
        self.port = port
        self.timeout = timeout
        self.cookie: str | None = None
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)

    def request(self, method: str, path: str, body: str | None = None) -> tuple[int, dict, bytes]:
        headers = {}
        if self.cookie:
            headers["Cookie"] = self.cookie
        if body is not None:
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        for attempt in range(2):
            try:
                self.connection.request(method, path, body=body, headers=headers)
                response = self.connection.getresponse()
                data = response.read()
                break
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                if attempt:
                    raise
                self.reconnect()
        set_cookie = response.getheader("Set-Cookie")
        if set_cookie and set_cookie.startswith("session="):
            self.cookie = set_cookie.split(";", 1)[0]
        return response.status, dict(response.getheaders()), data

    def reconnect(self) -> None:
        self.connection.close()
        self.connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)

    def answer(self, question_id: str, value: str, bank: str = BANK) -> int:
        """Open the question page and post an answer with its CSRF token; the POST's status."""
        status, _, page = self.request("GET", f"/quiz/{bank}/{question_id}")
        if status == 303:  # already answered in this attempt
            return 303
        match = CSRF_INPUT.search(page.decode())
        if status != 200 or not match:
            return status or 599
        status, _, _ = self.request("POST", f"/quiz/{bank}/{question_id}",
                                    urlencode({"csrf_token": match.group(1), "answer": value}))
        return status

    def close(self) -> None:
        self.connection.close()


def seed_questions(bank: str = BANK) -> list[tuple[str, str]]:
    """(question id, an answer value the form accepts) for each question of a bundled bank."""
    from app.bank.loader import load_bank_file
    from app.paths import resource_dir
    from app.visuals import check_visual

    result = load_bank_file(resource_dir("quizzes") / f"{bank}.yaml", bank, check_visual)
    answers = []
    for question in result.bank.questions:
        if question.type == "true_false":
            value = "true"
        elif question.options:
            value = question.options[0].id
        else:
            value = "1"
        answers.append((question.id, value))
    return answers


def answered_student(port: int, bank: str = BANK) -> tuple[Student, list[str], dict[str, list[str]]]:
    """A student who answered every question of `bank` and opened each answer page once.

    Returns (student, answer-page paths, {answer-page path: the image URLs it shows: src, srcset, narrow}).
    """
    student = Student(port)
    answer_paths, images = [], {}
    for question_id, value in seed_questions(bank):
        status = student.answer(question_id, value, bank)
        if status != 303:
            raise RuntimeError(f"answering {question_id} gave {status}")
        path = f"/quiz/{bank}/{question_id}/answer"
        status, _, page = student.request("GET", path)
        if status != 200:
            raise RuntimeError(f"{path} gave {status}")
        answer_paths.append(path)
        images[path] = list(dict.fromkeys(url.replace("&amp;", "&") for url in PLOT_URL.findall(page.decode())))
    return student, answer_paths, images


# --- gunicorn ----------------------------------------------------------------------------------


@dataclass
class Server:
    """gunicorn as the container runs it, on 127.0.0.1, in its own instance folder.

    `entrypoint` launches it through docker/entrypoint.sh (the secret-key check and `flask init-db`,
    then exec gunicorn), as the image does; otherwise gunicorn is launched directly (the baseline).
    """

    app_spec: str = "app:create_app()"
    entrypoint: bool = True
    instance: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="aq-bench-")))
    secret_key: str = field(default_factory=lambda: secrets.token_hex(32))
    port: int = 0
    front: bool = True  # nginx in front, with the image's docker/nginx.conf; False: gunicorn on `port` itself
    quiz_dir: Path | None = None  # FLASK_QUIZ_DIR; None: every bundled bank, as the image has them
    process: subprocess.Popen | None = None
    nginx: subprocess.Popen | None = None
    started_at: float = 0.0
    exec_at: float | None = None  # when the entrypoint exec'd gunicorn

    @property
    def env(self) -> dict[str, str]:
        image = {k: v for k, v in dockerfile_env().items() if k not in IMAGE_PATHS}
        env = {**os.environ, **image, **SERVER_ENV,
               "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
               "FLASK_INSTANCE_PATH": str(self.instance),
               "FLASK_SECRET_KEY": self.secret_key,
               "FLASK_DATABASE_URL": f"sqlite:///{self.instance / 'bench.sqlite3'}"}
        env.pop("FLASK_DEBUG", None)
        env.pop("FLASK_QUIZ_DIR", None)  # the bundled banks, which the image copies to /quizzes
        if self.quiz_dir:
            env["FLASK_QUIZ_DIR"] = str(self.quiz_dir)
        return env

    @property
    def workers(self) -> int:
        return int(self.env.get("GUNICORN_WORKERS", "2"))

    def command(self) -> list[str]:
        bind = f"unix:{self.instance / 'run' / 'gunicorn.sock'}" if self.front else f"127.0.0.1:{self.port}"
        gunicorn = [str(Path(sys.executable).parent / "gunicorn"), "--config", str(ROOT / "docker" / "gunicorn.conf.py"),
                    "--bind", bind, self.app_spec]
        return ["sh", str(ROOT / "docker" / "entrypoint.sh"), *gunicorn] if self.entrypoint else gunicorn

    def start(self) -> None:
        self.port = free_port()
        log = open(self.instance / "gunicorn.log", "ab")  # the access log (stdout) and the error log
        self.exec_at = None
        self.started_at = time.perf_counter()
        self.process = subprocess.Popen(self.command(), cwd=ROOT, env=self.env, stdout=log, stderr=log)
        log.close()
        if self.entrypoint:
            threading.Thread(target=self._watch_exec, daemon=True).start()
        if self.front:
            self._start_nginx()

    def _start_nginx(self) -> None:
        """nginx with the image's docker/nginx.conf; only its places differ (the image's /tmp/attention-quiz is the
        instance folder's run/, it listens on 127.0.0.1:port, its access log goes to a file). Until gunicorn's
        socket exists it answers 502, which wait_until polls through, as a probe of the container would."""
        run = self.instance / "run"
        (run / "nginx").mkdir(parents=True, exist_ok=True)
        conf = ((ROOT / "docker" / "nginx.conf").read_text().replace("/tmp/attention-quiz", str(run))
                .replace("listen 8000", f"listen 127.0.0.1:{self.port}")
                .replace("access_log /dev/stdout", f"access_log {self.instance / 'nginx-access.log'}"))
        (run / "nginx.conf").write_text(conf)
        # As root (CI), nginx's workers would switch to nobody, who cannot enter the private instance folder.
        user = " user root root;" if os.geteuid() == 0 else ""
        with open(self.instance / "nginx.log", "ab") as log:
            self.nginx = subprocess.Popen(["nginx", "-c", str(run / "nginx.conf"), "-e", "stderr",
                                           "-g", f"daemon off;{user}"], stdout=log, stderr=log)

    def _watch_exec(self) -> None:
        """Note when the entrypoint's shell becomes gunicorn (same pid, new command line)."""
        path = Path(f"/proc/{self.process.pid}/cmdline")
        while self.process.poll() is None:
            try:
                argv0 = path.read_bytes().split(b"\0", 1)[0]
            except OSError:
                return
            if not argv0.endswith(b"sh"):
                self.exec_at = time.perf_counter()
                return
            time.sleep(0.002)

    def wait_until(self, student: Student, path: str, timeout: float = 60.0) -> float:
        """Seconds from start() to the first 200 for `path` (polling every 10 ms)."""
        deadline = time.perf_counter() + timeout
        while time.perf_counter() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"gunicorn exited with {self.process.returncode}: {self.log_tail()}")
            try:
                status, _, _ = student.request("GET", path)
                if status == 200:
                    return time.perf_counter() - self.started_at
            except OSError:
                student.reconnect()
            time.sleep(0.01)
        raise RuntimeError(f"gunicorn did not serve {path} within {timeout} s: {self.log_tail()}")

    def log_tail(self) -> str:
        try:
            return (self.instance / "gunicorn.log").read_text(errors="replace")[-2000:]
        except OSError:
            return "(no log)"

    def cpu_seconds(self) -> dict:
        """CPU time (user + system) the master and each worker have used so far (/proc/PID/stat)."""
        tick = os.sysconf("SC_CLK_TCK")

        def used(pid: int) -> float:
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                return 0.0
            return (int(fields[11]) + int(fields[12])) / tick  # utime, stime

        return {"master": used(self.process.pid), "workers": [used(pid) for pid in self.worker_pids()]}

    def worker_pids(self) -> list[int]:
        out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(self.process.pid)],
                             capture_output=True, text=True).stdout
        return [int(pid) for pid in out.split()]

    def worker_memory_mb(self) -> dict:
        """VmRSS and VmHWM (peak RSS) of each worker, in MB, and the largest of each."""
        rss, hwm, files, private, model = [], [], [], [], []
        for pid in self.worker_pids():
            try:  # a worker that has just exited is skipped
                status = Path(f"/proc/{pid}/status").read_text()
                maps = Path(f"/proc/{pid}/maps").read_text()
            except OSError:
                continue
            values = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
            rss.append(int(values["VmRSS"].split()[0]) / 1024)
            hwm.append(int(values["VmHWM"].split()[0]) / 1024)
            files.append(int(values["RssFile"].split()[0]) / 1024)  # mapped files: libraries, the model's weights
            private.append(int(values["RssAnon"].split()[0]) / 1024)  # the heap: what a worker holds of its own
            model.append("model.safetensors" in maps)
        return {"rss_mb": max(rss, default=0.0), "peak_mb": max(hwm, default=0.0), "workers": len(rss),
                "each_rss_mb": rss, "each_peak_mb": hwm, "file_mb": max(files, default=0.0),
                "anon_mb": max(private, default=0.0), "model_mapped": any(model)}

    def stop(self) -> None:
        if self.nginx and self.nginx.poll() is None:
            self.nginx.send_signal(signal.SIGQUIT)  # graceful, as docker/serve.sh stops it
            try:
                self.nginx.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.nginx.kill()
                self.nginx.wait()
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)  # the master stops its own workers
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def cleanup(self) -> None:
        self.stop()
        shutil.rmtree(self.instance, ignore_errors=True)


# --- wrk ---------------------------------------------------------------------------------------


def wrk(port: int, requests: list[tuple[str, str]], seconds: int, workdir: Path, think_ms: int = 0) -> dict:
    """wrk -c64 over `requests` ((cookie, path) pairs, cycled); the done() summary as a dict.

    think_ms > 0: after each response a connection waits a random, exponentially distributed time with
    that mean before its next request; 0: it sends the next at once (the server saturated).
    """
    paths_file = workdir / f"wrk-paths-{time.monotonic_ns()}.txt"
    paths_file.write_text("".join(f"{cookie}|{path}\n" for cookie, path in requests))
    command = ["wrk", f"-t{WRK_THREADS}", f"-c{CONNECTIONS}", f"-d{seconds}s", "--timeout", "10s",
               "-s", str(Path(__file__).with_name("wrk_report.lua")), f"http://127.0.0.1:{port}"]
    env = {**os.environ, "WRK_PATHS": str(paths_file), "WRK_THINK_MS": str(think_ms)}
    out = subprocess.run(command, capture_output=True, text=True, env=env, timeout=seconds + 60)
    line = next((l for l in out.stdout.splitlines() if l.startswith("WRKJSON ")), None)
    if line is None:
        raise RuntimeError(f"wrk printed no summary:\n{out.stdout}\n{out.stderr}")
    summary = json.loads(line[len("WRKJSON "):])
    summary["errors"] = sum(summary[k] for k in ("connect", "read", "write", "status", "timeout"))
    summary["rps"] = summary["requests"] / (summary["duration_us"] / 1e6)
    return summary


# --- the goals ---------------------------------------------------------------------------------


def load(seconds: int, rounds: int = 3) -> dict:
    """Answer pages against a static file at 64 connections (ABAB rounds), then worker memory.

    Before wrk starts, the bench's student answers every question and opens each answer page once, and 8
    connections open every page once more, so that both workers hold each page's visual.
    Then `rounds` rounds, each one wrk run of answer pages and one of the static file, the order
    flipping every round. Then every image the answer pages show (1x, 2x, the phone layout) is
    fetched by several connections (fetch_figures), so both workers draw all of them, and the
    workers' memory is read. The server serves every bundled bank but the real model's (MODEL_BANK).
    """
    compile_bytecode()
    server = Server()
    server.quiz_dir = engine_banks(server.instance)
    server.start()
    results: dict = {"seconds": seconds, "rounds": rounds, "connections": CONNECTIONS,
                     "gunicorn": {k: server.env.get(k) for k in ("GUNICORN_WORKERS", "GUNICORN_THREADS",
                                                                  "GUNICORN_TIMEOUT", "OPENBLAS_NUM_THREADS")}}
    try:
        server.wait_until(Student(server.port), "/healthz")
        _wait_for_workers(server)
        results["memory_booted"] = server.worker_memory_mb()
        student, answer_paths, images = answered_student(server.port)
        # Both workers compute each page's visual (its words and image sizes) once, before the timed runs: the goal
        # is the pages served warm. Unwarmed, the worker that had not seen a page stalled about 1 s on all nine of
        # them in the first run's first second, which alone made the p99.
        results["warm"] = fetch_figures(server.port, answer_paths, cookie=student.cookie)
        pages = [(student.cookie, path) for path in answer_paths]
        results["answer_paths"] = answer_paths
        results |= pages_against_static(server, pages, seconds, rounds)
        results["memory_after_pages"] = server.worker_memory_mb()
        results["figures"] = fetch_figures(server.port, [url for urls in images.values() for url in urls])
        results["memory"] = server.worker_memory_mb()
        results["cache_entries"] = _cache_entries()
    finally:
        server.cleanup()
    return results


def pages_against_static(server: Server, pages: list[tuple[str, str]], seconds: int, rounds: int) -> dict:
    """`rounds` ABAB rounds of paced wrk runs (readers' think time) over `pages` and over the static file, the
    order flipping every round; then each once saturated: the capacity, not a goal."""
    scenarios = {"answer pages": pages, "static file": [("", STATIC_PATH)]}
    out: dict = {name: [] for name in scenarios}
    names = list(scenarios)
    for index in range(rounds):
        for name in names if index % 2 == 0 else names[::-1]:
            out[name].append(wrk(server.port, scenarios[name], seconds, server.instance, think_ms=THINK_MS))
            time.sleep(1)
    # The capacity: the same 64 connections, each sending its next request at once.
    for name in names:
        out[f"{name}, saturated"] = wrk(server.port, scenarios[name], seconds, server.instance)
        time.sleep(1)
    return out


def fetch_figures(port: int, urls: list[str], connections: int = 8, cookie: str | None = None) -> dict:
    """Each of `connections` keep-alive connections fetches every URL once, in its own order (with `cookie`).

    A connection sticks to the worker that accepted it, so with 8 connections both workers (with
    probability 1 - 2^-7) get every figure, and draw it on their first request for it.
    """
    import random

    errors, latencies, sizes, retried = [], [], {}, []
    lock = threading.Lock()

    def fetch_all(index: int) -> None:
        client = Student(port, timeout=60)
        client.cookie = cookie
        order = urls[:]
        random.Random(index).shuffle(order)
        try:
            for url in order:
                start = time.perf_counter()
                for _ in range(10):  # a 503 (every render slot taken) says when to ask again: a client that
                    try:             # honours Retry-After gets its figure; the retries are counted
                        status, headers, body = client.request("GET", url)
                    except OSError as error:
                        status, headers, body = type(error).__name__, {}, b""
                        client.reconnect()
                    if status != 503:
                        break
                    with lock:
                        retried.append(url)
                    time.sleep(float(headers.get("Retry-After", "1")))
                with lock:
                    latencies.append(time.perf_counter() - start)
                    if status != 200:
                        errors.append(str(status))
                    else:
                        sizes[url] = len(body)
        finally:
            client.close()

    threads = [threading.Thread(target=fetch_all, args=(i,)) for i in range(connections)]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return {"urls": len(urls), "requests": len(latencies), "errors": len(errors), "error_kinds": sorted(set(errors)),
            "seconds": time.perf_counter() - start, "max_s": max(latencies, default=0.0), "retried_503": len(retried),
            "image_bytes": sum(sizes.values()), "visuals": len({url.split("?")[0] + _kind_params(url) for url in sizes})}


def _kind_params(url: str) -> str:
    """A figure URL's kind params without the variant (scale, layout): one cache entry per value."""
    from urllib.parse import parse_qsl

    query = url.split("?", 1)[1] if "?" in url else ""
    return "?" + urlencode(sorted((k, v) for k, v in parse_qsl(query) if k not in ("scale", "layout")))


def _cache_entries() -> int:
    from app import DEFAULTS

    return int(os.environ.get("FLASK_PLOT_CACHE_ENTRIES", DEFAULTS["PLOT_CACHE_ENTRIES"]))


def _wait_for_workers(server: Server, timeout: float = 30.0) -> None:
    """Until every worker has loaded the app (each answers; ps shows them all), then a second more."""
    deadline = time.perf_counter() + timeout
    while len(server.worker_pids()) < server.workers and time.perf_counter() < deadline:
        time.sleep(0.05)
    probes = [Student(server.port) for _ in range(2 * server.workers)]
    for probe in probes:  # a few parallel connections: gunicorn hands them to whichever worker is free
        server.wait_until(probe, "/healthz")
        probe.close()
    time.sleep(1.0)


def cold_start(rounds: int = 3) -> dict:
    """Seconds from launch to the first served answer page, against a bare gunicorn's first response.

    A student answers every question on a first server, which is then stopped. Then, `rounds` times
    and alternating with the baseline: the entrypoint is launched on the same instance folder (its
    database and secret key), and a student's answer page (the multi-head one) is polled every
    10 ms until it is served (200); then that page's figure is fetched once. The goal's time runs
    from the moment the entrypoint exec's gunicorn (the secret-key check and init-db come before;
    their time is reported too). The baseline launches gunicorn with the same settings on a WSGI
    app that imports nothing (bench.wsgi) and times its first 200. The app's modules are compiled first, as
    in the image, and the server serves every bundled bank but the real model's (MODEL_BANK).
    """
    compile_bytecode()
    first = Server()
    first.quiz_dir = engine_banks(first.instance)
    first.start()
    try:
        first.wait_until(Student(first.port), "/healthz")
        student, answer_paths, images = answered_student(first.port)
        cookie = student.cookie
        student.close()
    finally:
        first.stop()
    path = next((p for p in answer_paths if any("/plots/multi-head." in url for url in images[p])), answer_paths[0])
    image = images[path][0]
    launches = {"app": [], "bare gunicorn": []}
    try:
        for index in range(rounds):
            for name in ("app", "bare gunicorn") if index % 2 == 0 else ("bare gunicorn", "app"):
                if name == "app":
                    launches[name].append(_launch_app(first, cookie, path, image))
                else:
                    launches[name].append(_launch_bare())
    finally:
        first.cleanup()
    return {"path": path, "image": image, "launches": launches, "rounds": rounds}


def _launch_app(first: Server, cookie: str, path: str, image: str) -> dict:
    server = Server(instance=first.instance, secret_key=first.secret_key, quiz_dir=first.quiz_dir)
    server.start()
    try:
        page = Student(server.port)
        page.cookie = cookie
        answer_s = server.wait_until(page, path)
        cpu = server.cpu_seconds()
        status, _, _ = page.request("GET", image)
        image_s = time.perf_counter() - server.started_at
        exec_s = (server.exec_at - server.started_at) if server.exec_at else 0.0
        return {"entrypoint_to_answer_page_s": answer_s, "preamble_s": exec_s, "answer_page_s": answer_s - exec_s,
                "image_s": image_s - exec_s, "image_status": status, "cpu_s": cpu,
                # What the launch needs on idle cores: the master, then the workers booting side by side.
                "cpu_bound_s": cpu["master"] + max(cpu["workers"], default=0.0)}
    finally:
        server.stop()


def _launch_bare() -> dict:
    server = Server(app_spec="bench.wsgi:app", entrypoint=False)
    server.start()
    try:
        return {"first_response_s": server.wait_until(Student(server.port), "/")}
    finally:
        server.cleanup()


def explain(load_results: dict | None, cold: dict | None, always: bool = False) -> dict:
    """For each server goal not met (or all, with `always`): bench.why's measurement of it."""
    from . import why

    summary = summarise(load_results, cold)
    out = {}
    if load_results and (always or summary["p99_ms"] >= P99_GOAL_MS or summary["errors"]):
        out["answer_page"] = why.run("answer_page")
    if load_results and (always or summary["peak_mb"] >= RSS_GOAL_MB):
        out["memory"] = why.run("memory")
    if cold and (always or summary["cold_start_s"] >= COLD_START_GOAL_S):
        out["create_app"] = why.run("create_app")
    return out


def summarise(load_results: dict | None, cold: dict | None) -> dict:
    """The goal figures from the raw runs (medians over rounds; errors summed)."""
    out: dict = {}
    if load_results:
        pages, static = load_results["answer pages"], load_results["static file"]
        out["p99_ms"] = statistics.median(r["p99_us"] for r in pages) / 1e3
        out["p99_worst_ms"] = max(r["p99_us"] for r in pages) / 1e3
        out["p99_vs_static"] = statistics.median(a["p99_us"] / s["p99_us"] for a, s in zip(pages, static))
        every_run = pages + [load_results[k] for k in ("answer pages, saturated",) if k in load_results]
        out["errors"] = sum(r["errors"] for r in every_run) + load_results.get("warm", {}).get("errors", 0)
        out["page_requests"] = sum(r["requests"] for r in every_run)
        out["rps"] = statistics.median(r["rps"] for r in pages)
        saturated = load_results.get("answer pages, saturated"), load_results.get("static file, saturated")
        if all(saturated):  # the capacity: pages per second with every connection busy
            out["capacity_rps"] = saturated[0]["rps"]
            out["capacity_vs_static"] = saturated[0]["rps"] / saturated[1]["rps"]
        memory = load_results["memory"]
        out["peak_mb"] = memory["peak_mb"]
        out["peak_vs_booted"] = memory["peak_mb"] / max(load_results["memory_booted"]["rss_mb"], 1e-9)
    if cold:
        app, bare = cold["launches"]["app"], cold["launches"]["bare gunicorn"]
        out["cold_start_s"] = statistics.median(r["answer_page_s"] for r in app)
        out["cold_start_worst_s"] = max(r["answer_page_s"] for r in app)
        out["cold_start_vs_bare"] = statistics.median(
            a["answer_page_s"] / b["first_response_s"] for a, b in zip(app, bare))
        out["bare_s"] = statistics.median(r["first_response_s"] for r in bare)
        out["preamble_s"] = statistics.median(r["preamble_s"] for r in app)
        out["image_s"] = statistics.median(r["image_s"] for r in app)
        out["cpu_bound_s"] = statistics.median(r.get("cpu_bound_s", 0.0) for r in app)
    return out
