"""HTTP figures: a cached plot against a static file of the same size, and gunicorn under load.

Everything runs against 127.0.0.1 only, with bounded durations. The server is gunicorn as the
container runs it (2 workers x 4 threads); load comes from Debian's wrk at 64 connections and, for
submissions (which need a CSRF token per session), from a threaded Python client of 64 students.
"""

from __future__ import annotations

import http.client
import json
import os
import re
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

from .timing import ROOT

BANK = "attention-transformers"
CSRF_INPUT = re.compile(r'name="csrf_token" value="([^"]+)"')
IMG_SRC = re.compile(r'<img[^>]+src="(/plots/[^"]+)"')
CONNECTIONS = 64
STATIC_PATH = "/bench-static/plot-sized.png"
# The bench lifts the per-session rate limits: 64 students from one machine are the load, not abuse.
SERVER_ENV = {
    "FLASK_RATE_LIMIT_SUBMIT": "1000000 per minute",
    "FLASK_RATE_LIMIT_PLOTS": "1000000 per minute",
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


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
                self.connection.close()
                self.connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)
        set_cookie = response.getheader("Set-Cookie")
        if set_cookie and set_cookie.startswith("session="):
            self.cookie = set_cookie.split(";", 1)[0]
        return response.status, dict(response.getheaders()), data

    def answer(self, question_id: str, value: str) -> tuple[int, float]:
        """Open the question page, post an answer with its CSRF token; (status of the POST, its seconds)."""
        status, _, page = self.request("GET", f"/quiz/{BANK}/{question_id}")
        if status == 303:  # already answered in this attempt
            return 303, 0.0
        match = CSRF_INPUT.search(page.decode())
        if status != 200 or not match:
            return status or 599, 0.0
        from urllib.parse import urlencode

        body = urlencode({"csrf_token": match.group(1), "answer": value})
        start = time.perf_counter()
        status, _, _ = self.request("POST", f"/quiz/{BANK}/{question_id}", body)
        return status, time.perf_counter() - start

    def close(self) -> None:
        self.connection.close()


def seed_questions() -> list[tuple[str, str]]:
    """(question id, an answer value the form accepts) for each question of the seed bank."""
    from app.bank.loader import load_bank_file
    from app.paths import resource_dir
    from app.visuals import check_visual

    result = load_bank_file(resource_dir("quizzes") / f"{BANK}.yaml", BANK, check_visual)
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


# --- gunicorn ----------------------------------------------------------------------------------


@dataclass
class Server:
    """gunicorn on 127.0.0.1 in its own instance folder; started and stopped by this process only."""

    app_spec: str = "app:create_app()"
    instance: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="aq-bench-")))
    workers: int = 2
    threads: int = 4
    extra_env: dict = field(default_factory=dict)
    port: int = 0
    process: subprocess.Popen | None = None
    started_at: float = 0.0

    def start(self) -> None:
        self.port = free_port()
        env = {**os.environ, **SERVER_ENV, **self.extra_env,
               "FLASK_INSTANCE_PATH": str(self.instance),
               "FLASK_SECRET_KEY": "bench-" + "k" * 40,
               "FLASK_DATABASE_URL": f"sqlite:///{self.instance / 'bench.sqlite3'}"}
        env.pop("FLASK_DEBUG", None)
        # As the README says for several servers, the schema is made once first and auto-migration
        # is off (the workers' start-up then measures serving, not a migration).
        if not (self.instance / "bench.sqlite3").exists():
            subprocess.run([sys.executable, "-m", "flask", "--app", "app", "init-db"],
                           cwd=ROOT, env=env, check=True, capture_output=True)
        env["FLASK_DATABASE_AUTO_MIGRATE"] = "false"
        self.started_at = time.perf_counter()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "--workers", str(self.workers),
             "--threads", str(self.threads), "--bind", f"127.0.0.1:{self.port}", "--timeout", "60",
             "--log-level", "warning", self.app_spec],
            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=open(self.instance / "gunicorn.log", "ab"),
        )

    def wait_until(self, student: Student, path: str, timeout: float = 60.0) -> float:
        """Seconds from start() to the first 200 for `path` (polling every 10 ms)."""
        deadline = time.perf_counter() + timeout
        while time.perf_counter() < deadline:
            try:
                status, _, _ = student.request("GET", path)
                if status == 200:
                    return time.perf_counter() - self.started_at
            except OSError:
                student.close()
                student.connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
            time.sleep(0.01)
        raise RuntimeError(f"gunicorn did not serve {path} within {timeout} s; see {self.instance}/gunicorn.log")

    def worker_pids(self) -> list[int]:
        out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(self.process.pid)],
                             capture_output=True, text=True).stdout
        return [int(pid) for pid in out.split()]

    def worker_memory_mb(self) -> dict[str, float]:
        """Largest VmRSS and VmHWM (peak) over the workers, in MB."""
        rss, hwm = [], []
        for pid in self.worker_pids():
            try:
                status = Path(f"/proc/{pid}/status").read_text()
            except OSError:
                continue
            values = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
            rss.append(int(values["VmRSS"].split()[0]) / 1024)
            hwm.append(int(values["VmHWM"].split()[0]) / 1024)
        return {"rss_mb": max(rss, default=0.0), "peak_mb": max(hwm, default=0.0), "workers": len(rss)}

    def stop(self) -> None:
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


def wrk(port: int, requests: list[tuple[str, str]], seconds: int, workdir: Path) -> dict:
    """wrk -c64 over `requests` ((cookie, path) pairs, cycled); the done() summary as a dict."""
    paths_file = workdir / f"wrk-paths-{time.monotonic_ns()}.txt"
    paths_file.write_text("".join(f"{cookie}|{path}\n" for cookie, path in requests))
    command = ["wrk", "-t2", f"-c{CONNECTIONS}", f"-d{seconds}s", "--timeout", "10s",
               "-s", str(Path(__file__).with_name("wrk_report.lua")), f"http://127.0.0.1:{port}"]
    out = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "WRK_PATHS": str(paths_file)},
                         timeout=seconds + 60)
    line = next((l for l in out.stdout.splitlines() if l.startswith("WRKJSON ")), None)
    if line is None:
        raise RuntimeError(f"wrk printed no summary:\n{out.stdout}\n{out.stderr}")
    summary = json.loads(line[len("WRKJSON "):])
    summary["errors"] = sum(summary[k] for k in ("connect", "read", "write", "status", "timeout"))
    summary["rps"] = summary["requests"] / (summary["duration_us"] / 1e6)
    return summary


# --- submissions -------------------------------------------------------------------------------


def submissions_load(port: int, seconds: float, students: int = CONNECTIONS) -> dict:
    """`students` threads, each a student with its own session, answering questions for `seconds`.

    A student opens a question page (its CSRF token), posts an answer (timed: the POST and its
    303), and after the last question starts a new attempt (POST retake), as a class would.
    """
    questions = seed_questions()
    stop_at = time.perf_counter() + seconds
    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()

    def student_loop(index: int) -> None:
        student = Student(port)
        try:
            position = index % len(questions)
            while time.perf_counter() < stop_at:
                question_id, value = questions[position]
                try:
                    status, took = student.answer(question_id, value)
                except OSError as error:
                    with lock:
                        errors.append(type(error).__name__)
                    continue
                with lock:
                    if status == 303 and took:
                        latencies.append(took)
                    elif status != 303:
                        errors.append(str(status))
                position += 1
                if position == len(questions):
                    position = 0
                    # Start again: the retake form is on the summary page; its token is the session's.
                    status, _, page = student.request("GET", f"/quiz/{BANK}/summary")
                    match = CSRF_INPUT.search(page.decode())
                    if match:
                        student.request("POST", f"/quiz/{BANK}/retake", f"csrf_token={match.group(1)}")
        finally:
            student.close()

    threads = [threading.Thread(target=student_loop, args=(i,)) for i in range(students)]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - start
    latencies.sort()

    def percentile(p: float) -> float:
        return latencies[min(len(latencies) - 1, int(p / 100 * len(latencies)))] if latencies else float("nan")

    return {"requests": len(latencies), "errors": len(errors), "error_kinds": sorted(set(errors))[:5],
            "rps": len(latencies) / elapsed, "p50_us": percentile(50) * 1e6, "p99_us": percentile(99) * 1e6}


# --- scenarios ---------------------------------------------------------------------------------


def answered_student(port: int) -> tuple[Student, list[str], list[str]]:
    """A student who answered every seed question; (student, answer-page paths, plot paths)."""
    student = Student(port)
    answer_paths, plot_paths = [], []
    for question_id, value in seed_questions():
        status, _ = student.answer(question_id, value)
        if status != 303:
            raise RuntimeError(f"answering {question_id} gave {status}")
        path = f"/quiz/{BANK}/{question_id}/answer"
        status, _, page = student.request("GET", path)
        if status != 200:
            raise RuntimeError(f"{path} gave {status}")
        answer_paths.append(path)
        plot_paths += [src.replace("&amp;", "&") for src in IMG_SRC.findall(page.decode())]
    return student, answer_paths, plot_paths


def cold_start(app_spec: str, extra_env: dict | None = None, warm_disk_cache: bool = False) -> dict:
    """Seconds from launching gunicorn to the first served answer page (and to the first /healthz).

    The student answers on a first server; a second server, a fresh process on the same database
    and secret key, is then timed until that student's answer page comes back 200. The first server
    leaves its rendered figures in the instance folder's disk cache: they are deleted before the
    second server starts (a first start, with an empty disk cache) unless `warm_disk_cache` (a restart).
    """
    first = Server(app_spec=app_spec, extra_env=extra_env or {})
    first.start()
    try:
        probe = Student(first.port)
        first.wait_until(probe, "/healthz")
        student, answer_paths, _ = answered_student(first.port)
        cookie = student.cookie
        student.close()
        if warm_disk_cache:
            time.sleep(3)  # let the first server's pre-render finish filling the disk cache
    finally:
        first.stop()
    cache_dir = first.instance / "plot-cache"
    cached_files = len(list(cache_dir.glob("*/*.plot")))
    if not warm_disk_cache:
        shutil.rmtree(cache_dir, ignore_errors=True)
    second = Server(app_spec=app_spec, instance=first.instance, extra_env=extra_env or {})
    second.start()
    try:
        health = Student(second.port)
        healthz_seconds = second.wait_until(health, "/healthz")
        page = Student(second.port)
        page.cookie = cookie
        # The multi-head answer page: its figure is among the slower ones to draw.
        path = next(p for p in answer_paths if "multi-head" in p or "heads" in p) if any(
            "head" in p for p in answer_paths) else answer_paths[0]
        answer_seconds = second.wait_until(page, path)
        return {"healthz_s": healthz_seconds, "answer_page_s": answer_seconds, "path": path,
                "disk_cache_files": cached_files if warm_disk_cache else 0}
    finally:
        second.cleanup()


def load_scenarios(app_spec: str, seconds: int, extra_env: dict | None = None) -> dict:
    """wrk scenarios and the submissions client against one gunicorn; returns every summary."""
    server = Server(app_spec=app_spec, extra_env=extra_env or {})
    server.start()
    results: dict = {"app_spec": app_spec}
    try:
        server.wait_until(Student(server.port), "/healthz")
        student, answer_paths, plot_paths = answered_student(server.port)
        cookie = student.cookie
        questions = [f"/quiz/{BANK}/{q}" for q, _ in seed_questions()]
        # The static baseline: a file of the same size as the multi-head plot, served by the same app.
        plot = next((p for p in plot_paths if "multi-head" in p), plot_paths[0])
        status, headers, body = student.request("GET", plot)
        static_dir = server.instance / "static-bench"
        static_dir.mkdir(exist_ok=True)
        (static_dir / Path(STATIC_PATH).name).write_bytes(os.urandom(len(body)))
        results["plot_bytes"] = len(body)
        workdir = server.instance
        scenarios = {
            "static file": [("", STATIC_PATH)],
            "cached plot": [("", plot)],
            "question pages": [("", q) for q in questions],
            "answer pages": [(cookie, a) for a in answer_paths],
            "plot URLs": [("", p) for p in plot_paths],
            "mix": [("", q) for q in questions] + [(cookie, a) for a in answer_paths] + [("", p) for p in plot_paths],
        }
        for name, requests in scenarios.items():
            results[name] = wrk(server.port, requests, seconds, workdir)
            time.sleep(1)
        results["submissions"] = submissions_load(server.port, seconds)
        results["memory"] = server.worker_memory_mb()
    finally:
        server.cleanup()
    return results


def test_client_cached_vs_static(rounds: int = 15, calls: int = 200) -> dict:
    """In-process (Flask test client): a cached plot against a same-size static file, interleaved."""
    from app import create_app

    instance = Path(tempfile.mkdtemp(prefix="aq-bench-tc-"))
    try:
        # No pre-render thread and no disk cache: only the one cached figure is measured, in memory.
        app = create_app({"SECRET_KEY": "bench-" + "k" * 40, "DATABASE_URL": f"sqlite:///{instance / 'tc.sqlite3'}",
                          "RATE_LIMIT_PLOTS": "1000000 per minute", "PLOT_PRERENDER": False,
                          "PLOT_CACHE_DIR": False})
        add_static_route(app, instance)
        client = app.test_client()
        plot = "/plots/multi-head.png?sentence=the+cat+sat+on+the+mat+while+the+dog+ran&num_heads=2&d_model=16&temperature=1.0"
        body = client.get(plot).data
        (instance / Path(STATIC_PATH).name).write_bytes(os.urandom(len(body)))
        assert client.get(STATIC_PATH).status_code == 200
        times = {"cached plot": [], "static file": []}
        for index in range(rounds):
            order = ("cached plot", "static file") if index % 2 == 0 else ("static file", "cached plot")
            for name in order:
                path = plot if name == "cached plot" else STATIC_PATH
                start = time.perf_counter()
                for _ in range(calls):
                    client.get(path)
                times[name].append((time.perf_counter() - start) / calls)
        ratios = [s / p for p, s in zip(times["cached plot"], times["static file"])]
        return {"ratio": statistics.median(ratios), "plot_us": statistics.median(times["cached plot"]) * 1e6,
                "static_us": statistics.median(times["static file"]) * 1e6, "bytes": len(body)}
    finally:
        shutil.rmtree(instance, ignore_errors=True)


def add_static_route(app, directory: Path) -> None:
    """Serve `directory` at /bench-static/ the way Flask serves /static/ (send_from_directory)."""
    from flask import send_from_directory

    app.add_url_rule("/bench-static/<path:name>", "bench_static",
                     lambda name: send_from_directory(directory, name))
