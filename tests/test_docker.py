"""The Docker image, built and run for real: health check, non-root user, a question taken over HTTP,
answers kept across containers by the /data volume, and refusal of a development SECRET_KEY.

The engine, first found first used: ATTENTION_QUIZ_DOCKER (a docker-compatible command); `docker` when
`docker info` answers; `../shared/tools/podman-here` beside the repository (these machines have no Docker
engine and reach no registry; it needs root); `podman` when `podman info` answers. With none the tests
skip and say how to run them, except under CI (CI set), where a missing engine is a failure.
ATTENTION_QUIZ_TEST_IMAGE names an image already built from this tree, to test it without a rebuild.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shlex
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from http.cookiejar import CookieJar
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
PODMAN_HERE = ROOT.parent / "shared" / "tools" / "podman-here"
IMAGE = "localhost/attention-quiz:test"
BANK, QUESTION = "attention-transformers", "head-dimension"
QUESTION_PATH = f"/quiz/{BANK}/{QUESTION}"
CSRF_INPUT = re.compile(r'name="csrf_token" value="([^"]+)"')
VERDICT = re.compile(r'<h1 id="verdict">\s*([^<]+?)\s*</h1>')
VISUAL_IMAGE = re.compile(r'<img class="visual-image" src="([^"]+)"')
SECRET_KEY = secrets.token_hex(32)  # one key for the whole module, as on a real server
STARTUP_SECONDS = 120


ENGINE_SECONDS = 10  # for `docker info` to answer; a CLI without a running engine fails or hangs
HOW_TO_RUN = ("Install Docker or podman, put shared/tools/podman-here beside the repository (as on the "
              "project's machines; run as root), or set ATTENTION_QUIZ_DOCKER to a docker-compatible command.")

pytestmark = pytest.mark.slow


def unavailable(reason: str):
    """Skip with `reason`; under CI, where every test must run, fail instead."""
    if os.environ.get("CI"):
        pytest.fail(f"{reason} CI is set, so the Docker tests must run. {HOW_TO_RUN}")
    pytest.skip(f"{reason} {HOW_TO_RUN}")


def engine_problem(command: list[str]) -> str | None:
    """Why `command` cannot run the tests, or None: `info` must answer (the docker CLI alone, with no
    daemon, does not) and a container from an image already there must start (a podman this kernel
    cannot start containers with does not)."""
    if not shutil.which(command[0]):
        return f"{command[0]} is not on PATH"
    try:
        info = subprocess.run([*command, "info"], capture_output=True, text=True, timeout=ENGINE_SECONDS)
        if info.returncode != 0:
            return f"`{command[0]} info` failed: {info.stderr.strip()[-300:]}"
        images = subprocess.run([*command, "images", "-q"], capture_output=True, text=True,
                                timeout=ENGINE_SECONDS).stdout.split()
        if images:
            started = subprocess.run([*command, "run", "--rm", "--network=none", images[0], "true"],
                                     capture_output=True, text=True, timeout=60)
            if started.returncode != 0:
                return f"{command[0]} cannot start a container: {started.stderr.strip()[-300:]}"
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"`{command[0]} info` did not answer: {error}"
    return None


def docker_command() -> list[str]:
    override = os.environ.get("ATTENTION_QUIZ_DOCKER")
    if override:
        command = shlex.split(override)
        if not shutil.which(command[0]):
            pytest.fail(f"ATTENTION_QUIZ_DOCKER={override!r}: {command[0]} is not on PATH")
        return command
    docker_problem = engine_problem(["docker"])
    if docker_problem is None:
        return ["docker"]
    # Before a podman on PATH: podman-here installs podman, which cannot start containers here on its own.
    if PODMAN_HERE.is_file():
        if os.geteuid() != 0:
            unavailable(f"{PODMAN_HERE} runs rootful podman (and installs it with apt-get on first use), "
                        "but the tests do not run as root.")
        return [str(PODMAN_HERE)]
    podman_problem = engine_problem(["podman"])
    if podman_problem is None:
        return ["podman"]
    unavailable(f"No container engine works here ({docker_problem}; {podman_problem}), and {PODMAN_HERE} "
                "is missing.")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class Docker:
    command: list[str]
    image: str = IMAGE  # what start() runs: build_image() sets it
    containers: list[str] = field(default_factory=list)
    volumes: list[str] = field(default_factory=list)

    def __call__(self, *args: str, timeout: float = 120, check: bool = True) -> subprocess.CompletedProcess:
        result = subprocess.run([*self.command, *args], capture_output=True, text=True, timeout=timeout,
                                env={**os.environ, "PODMAN_HERE_QUIET": "1"})
        if check and result.returncode != 0:
            pytest.fail(f"`docker {' '.join(args)}` exited {result.returncode}:\n"
                        f"{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
        return result

    def healthcheck(self, name: str) -> subprocess.CompletedProcess:
        """Run the container's HEALTHCHECK now: podman has a command for it; with Docker, exec its test."""
        if "podman" in self("--version").stdout.lower():
            return self("healthcheck", "run", name, check=False)
        test = json.loads(self("inspect", "--format", "{{json .Config.Healthcheck.Test}}", name).stdout)
        assert test and test[0] in ("CMD", "CMD-SHELL"), f"the image has no HEALTHCHECK: {test}"
        command = test[1:] if test[0] == "CMD" else ["/bin/sh", "-c", test[1]]
        return self("exec", name, *command, check=False)

    def volume(self) -> str:
        name = f"attention-quiz-test-{secrets.token_hex(4)}"
        self.volumes.append(name)
        self("volume", "create", name)
        return name

    def start(self, env: dict[str, str], data_volume: str | None = None, *command: str) -> Container:
        """Start a detached container published on a free port of 127.0.0.1 (removed at teardown)."""
        name = f"attention-quiz-test-{secrets.token_hex(4)}"
        port = free_port()
        args = ["run", "-d", "--name", name, "-p", f"127.0.0.1:{port}:8000"]
        for key, value in env.items():
            args += ["-e", f"{key}={value}"]
        if data_volume:
            args += ["-v", f"{data_volume}:/data"]
        self.containers.append(name)
        self(*args, self.image, *command)
        return Container(self, name, f"http://127.0.0.1:{port}")

    def clean_up(self) -> None:
        for name in reversed(self.containers):
            self("rm", "-f", "-v", name, check=False)  # -v: its anonymous volumes too
        for name in self.volumes:
            self("volume", "rm", "-f", name, check=False)


@dataclass
class Container:
    docker: Docker
    name: str
    url: str

    def logs(self) -> str:
        result = self.docker("logs", self.name, check=False)
        return result.stdout + result.stderr

    def state(self) -> dict:
        return json.loads(self.docker("inspect", "--format", "{{json .State}}", self.name).stdout)

    def wait_until_healthy(self) -> dict:
        """Poll /healthz until it answers 200; fail with the logs if the container exits or never answers."""
        deadline = time.monotonic() + STARTUP_SECONDS
        while time.monotonic() < deadline:
            state = self.state()
            if not state["Running"]:
                pytest.fail(f"container {self.name} exited with {state['ExitCode']}:\n{self.logs()}")
            try:
                status, _, body = Browser(self.url).get("/healthz")
                if status == 200:
                    return json.loads(body)
            except OSError:
                pass  # not listening yet
            time.sleep(0.5)
        pytest.fail(f"container {self.name} did not answer /healthz within {STARTUP_SECONDS}s:\n{self.logs()}")

    def processes(self) -> dict[int, tuple[int, str]]:
        """Every process in the container: pid -> (uid, command line). The image has no ps; /proc has it all."""
        listing = self.docker("exec", self.name, "sh", "-c",
                              'for d in /proc/[0-9]*; do printf "%s %s " "${d#/proc/}" '
                              '"$(sed -n "s/^Uid:[[:space:]]*\\([0-9]*\\).*/\\1/p" $d/status)"; '
                              'tr "\\0" " " < $d/cmdline; echo; done').stdout
        found = {}
        for line in listing.splitlines():
            pid, uid, *command = line.split(" ", 2) + [""]
            if uid.isdigit():
                found[int(pid)] = (int(uid), " ".join(command).strip())
        return found


class Browser:
    """A cookie-keeping HTTP client on the standard library, following redirects like a browser."""

    def __init__(self, base_url: str, cookies: CookieJar | None = None):
        self.base_url = base_url
        self.cookies = cookies if cookies is not None else CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.cookies))

    def request(self, path: str, data: dict | None = None) -> tuple[int, str, bytes]:
        body = urllib.parse.urlencode(data).encode() if data is not None else None
        try:
            with self.opener.open(self.base_url + path, data=body, timeout=30) as response:
                return response.status, response.url, response.read()
        except urllib.error.HTTPError as error:
            with error:
                return error.code, error.url, error.read()

    def get(self, path: str) -> tuple[int, str, bytes]:
        return self.request(path)

    def post(self, path: str, data: dict) -> tuple[int, str, bytes]:
        return self.request(path, data)


def answer_head_dimension(browser: Browser) -> str:
    """Open the question page, post "32" with the form's CSRF token, and return the answer page's HTML."""
    status, _, page = browser.get(QUESTION_PATH)
    assert status == 200, page[:500]
    token = CSRF_INPUT.search(page.decode())
    assert token, "the question page has no CSRF token"
    status, final_url, page = browser.post(QUESTION_PATH, {"csrf_token": token.group(1), "answer": "32"})
    assert status == 200, page[:500]
    assert final_url.endswith(QUESTION_PATH + "/answer"), final_url
    return page.decode()


def verdict(html: str) -> str:
    match = VERDICT.search(html)
    assert match, "the answer page has no verdict"
    return match.group(1)


@pytest.fixture(scope="module")
def docker():
    engine = Docker(docker_command())
    yield engine
    engine.clean_up()


_built: set[str] = set()  # images built by this test process


def dockerfile_for(docker: Docker) -> list[str]:
    """`-f` arguments for the build: the Dockerfile itself, except under podman-here.

    The Dockerfile names Docker Hub's python:3.11-slim by digest. podman-here reaches no registry and stands in for
    a base image by tagging a local one with the FROM name, which podman cannot do for a digest ("tag by digest
    not supported"). So there the build reads a copy whose FROM lines name the tag; every other line is the same.
    """
    if Path(docker.command[0]).name != "podman-here":
        return []
    copy = Path(tempfile.mkdtemp(prefix="attention-quiz-dockerfile-")) / "Dockerfile"
    text = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    copy.write_text(re.sub(r"^(FROM \S+?)@sha256:[0-9a-f]{64}", r"\1", text, flags=re.M), encoding="utf-8")
    return ["-f", str(copy)]


def build_image(docker: Docker) -> str:
    """Build the image once per test process, for this module and tests/test_slow_clients.py (the first
    podman-here build also makes its base image)."""
    prebuilt = os.environ.get("ATTENTION_QUIZ_TEST_IMAGE")  # an image built from this tree already: no rebuild
    if prebuilt:
        docker.image = prebuilt
        return prebuilt
    if IMAGE not in _built:
        # --no-cache: podman's layer cache here has served a stale `COPY app` layer (the old code, in an image
        # tagged new); a test must build what is in the tree. It costs about 3 minutes on 2 CPUs.
        docker("build", "--no-cache", "-t", IMAGE, *dockerfile_for(docker), str(ROOT), timeout=1800)
        _built.add(IMAGE)
    return IMAGE


@pytest.fixture(scope="module")
def image(docker):
    return build_image(docker)


@pytest.fixture(scope="module")
def server(docker, image):
    container = docker.start({"FLASK_SECRET_KEY": SECRET_KEY, "GUNICORN_WORKERS": "3"})
    container.health = container.wait_until_healthy()
    return container


def test_container_becomes_healthy_and_serves_as_a_non_root_user(docker, server):
    assert server.health["status"] == "ok" and server.health["database"] is True, server.health
    assert server.health["banks"] >= 1, "the bundled banks in /quizzes were not loaded"
    # The image's own HEALTHCHECK, as Docker runs it.
    result = docker.healthcheck(server.name)
    assert result.returncode == 0, result.stdout + result.stderr
    processes = server.processes()
    assert all(uid != 0 for uid, _ in processes.values()), f"a process runs as root: {processes}"
    # The entrypoint exec'd the image's server, which runs nginx in front of gunicorn.
    assert "attention-quiz-serve" in processes[1][1], f"PID 1 is not the image's server: {processes}"
    commands = " | ".join(command for _, command in processes.values())
    assert "nginx: master process" in commands and "gunicorn" in commands, commands
    logs = server.logs()
    assert logs.count("Booting worker") == 3, "GUNICORN_WORKERS=3 did not start three workers:\n" + logs
    # gunicorn listens on a unix socket only: every request goes through nginx, which answers and logs it.
    assert "Listening at: unix:/tmp/attention-quiz/gunicorn.sock" in logs, logs
    assert "nginx" in urllib.request.urlopen(server.url + "/healthz", timeout=10).headers.get("Server", "")
    assert "building the font cache" not in logs, "matplotlib's font cache was not built into the image"


def test_a_student_answers_a_question_over_http(server):
    browser = Browser(server.url)
    html = answer_head_dimension(browser)
    assert verdict(html) == "Correct"
    # The answer page's figure is rendered by matplotlib inside the container.
    src = VISUAL_IMAGE.search(html)
    assert src, "the answer page has no figure"
    source = src.group(1).replace("&amp;", "&")
    if source.startswith("data:"):
        with urllib.request.urlopen(source) as inline:
            figure = inline.read()
    else:
        status, _, figure = browser.get(source)
        assert status == 200, figure[:500]
    assert figure.startswith(b"\x89PNG") or b"<svg" in figure[:500], figure[:100]
    # Its request shows in the access log on stdout.
    assert f"POST {QUESTION_PATH}" in server.logs()


def test_docker_stop_ends_nginx_and_gunicorn_gracefully(docker, image):
    container = docker.start({"FLASK_SECRET_KEY": SECRET_KEY})
    container.wait_until_healthy()
    started = time.monotonic()
    docker("stop", "--time", "30", container.name, timeout=60)  # SIGTERM, then SIGKILL after 30 s
    stopped_in = time.monotonic() - started
    state = container.state()
    logs = container.logs()
    assert state["ExitCode"] == 0 and stopped_in < 25, f"exit {state['ExitCode']} after {stopped_in:.1f} s:\n{logs}"
    assert "attention-quiz: stopping" in logs and "Shutting down: Master" in logs, logs[-3000:]


def test_the_model_loads_in_the_image_without_network_and_without_pandas_or_duckdb(docker, image):
    # The weights package is installed with --no-deps: its declared pyduck-janitor (duckdb, pandas) is left out.
    # The image's forward pass must give the numbers this tree's engine gives.
    sentence = "the cat sat on the mat because it was tired"
    script = ("import importlib.util, json\n"
              "from app.engine.pretrained import load_model\n"
              f"run = load_model().run({sentence!r})\n"
              "print(json.dumps([run.tokens, run.attentions.round(5).tolist()]))\n"
              "print([name for name in ('pandas', 'duckdb', 'pyduck_janitor') if importlib.util.find_spec(name)])\n")
    result = docker("run", "--rm", "--network=none", image, "python", "-c", script, timeout=120)
    numbers, missing = result.stdout.splitlines()
    tokens, attentions = json.loads(numbers)
    from app.engine.pretrained import load_model

    expected = load_model().run(sentence)
    assert tokens == expected.tokens
    assert abs(np.array(attentions) - expected.attentions).max() < 1e-4
    assert missing == "[]", f"installed, though the app never imports them: {missing}"


def test_answers_survive_a_new_container_on_the_same_data_volume(docker, image):
    volume = docker.volume()
    first = docker.start({"FLASK_SECRET_KEY": SECRET_KEY}, volume)
    first.wait_until_healthy()
    browser = Browser(first.url)
    assert verdict(answer_head_dimension(browser)) == "Correct"
    docker("rm", "-f", "-v", first.name)  # -v: its anonymous /quizzes volume; the named one stays

    second = docker.start({"FLASK_SECRET_KEY": SECRET_KEY}, volume)
    second.wait_until_healthy()
    # Same cookie, new container: the answer is read back from the SQLite database in /data.
    status, final_url, page = Browser(second.url, browser.cookies).get(QUESTION_PATH + "/answer")
    assert status == 200 and final_url.endswith("/answer"), f"the stored answer was lost ({final_url})"
    html = page.decode()
    assert verdict(html) == "Correct"
    assert "Your choice" in html


def test_refuses_to_start_with_the_development_secret_key(docker, image):
    container = docker.start({"FLASK_SECRET_KEY": "dev"})
    docker("wait", container.name, timeout=60)
    state = container.state()
    assert not state["Running"] and state["ExitCode"] != 0, state
    logs = container.logs()
    assert "refusing to start: FLASK_SECRET_KEY is the well-known development value 'dev'" in logs, logs
    assert "Booting worker" not in logs


@pytest.mark.parametrize("env, problem", [
    ({}, "FLASK_SECRET_KEY is not set"),
    ({"FLASK_SECRET_KEY": ""}, "FLASK_SECRET_KEY is empty"),
    ({"FLASK_SECRET_KEY": "x" * 31}, "only 31 characters long"),
    ({"FLASK_SECRET_KEY": "a" * 40}, "one character repeated 40 times"),
    ({"FLASK_SECRET_KEY": "please-change-me-to-a-long-random-string"}, "is a placeholder"),
    ({"FLASK_SECRET_KEY": "CHANGE-ME"}, "well-known development value"),
])
def test_refuses_missing_short_or_placeholder_secret_keys(docker, image, env, problem):
    args = [arg for key, value in env.items() for arg in ("-e", f"{key}={value}")]
    result = docker("run", "--rm", *args, image, check=False, timeout=60)
    assert result.returncode != 0
    assert problem in result.stderr, result.stderr
    assert "ATTENTION_QUIZ_INSECURE_DEMO=1" in result.stderr, "the message should name the demo opt-in"


@pytest.mark.parametrize("env, problem", [
    ({}, "FLASK_SECRET_KEY is not set"),
    ({"FLASK_SECRET_KEY": "short"}, "FLASK_SECRET_KEY is only 5 characters long"),
])
def test_the_demo_opt_in_starts_without_a_proper_secret_key(docker, image, env, problem):
    # `gunicorn --version` goes through the same checks and init-db as the server, then exits.
    args = [arg for key, value in env.items() for arg in ("-e", f"{key}={value}")]
    result = docker("run", "--rm", "-e", "ATTENTION_QUIZ_INSECURE_DEMO=1", *args, image, "gunicorn", "--version",
                    check=False, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"WARNING: {problem}" in result.stderr
    assert "using a random key kept in /data/secret_key instead" in result.stderr
    assert "database ready" in result.stdout
