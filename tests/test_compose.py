"""docker-compose.yml brought up for real (issue 15, item 1 under `docker compose up`): the app becomes healthy on
PostgreSQL, stores a student's answer there, and 50 slow sockets leave health probes and a student's page loads
within 2 s, as tests/test_slow_clients.py requires of `docker run`.

The runner: `docker compose` when the engine is Docker (tests/test_docker.py's docker_command()); else podman-compose
(the test extra) with `--podman-path` set to that engine, e.g. shared/tools/podman-here, so the same podman settings
apply. With neither the tests skip and say how to run them, except under CI, where that is a failure.

What runs is the shipped file with an override, tests/docker/compose.test-images.yml, that changes two images and
nothing else:
- app: the image tests/test_docker.py's build_image() built from this tree (or ATTENTION_QUIZ_TEST_IMAGE), the same
  Dockerfile as the file's `build: .`, to spare a second 3-minute build;
- db: postgres:16-alpine when it is here or can be pulled; where no registry answers, a stand-in built from
  tests/docker/postgres (Debian's PostgreSQL, set up from POSTGRES_DB/USER/PASSWORD as the official image is, with
  pg_isready for the file's health check).
The secrets, a random SECRET_KEY and POSTGRES_PASSWORD, and PORT (a free port) come from a fresh env file, as a `.env`
would give them; the file's named volumes, `${VAR:?...}` checks, ports and health check are used as written.

depends_on is the one part podman cannot honour here: podman-compose ignores `condition: service_healthy` under podman
before 4.6 (it warns; Debian 12 has 4.3), and podman runs health checks on a timer only through systemd. So the test
starts `db` first, runs its health check (the file's pg_isready) until it passes, then starts the rest, as
depends_on would; `docker compose` gets the same two `up` calls.
Bounded: each step has a timeout, traffic goes to 127.0.0.1 only, and `down -v` always runs afterwards.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from test_docker import (
    ROOT,
    SECRET_KEY,
    Browser,
    Container,
    Docker,
    answer_head_dimension,
    build_image,
    docker_command,
    free_port,
    unavailable,
    verdict,
)
from test_slow_clients import holds_under_attack

pytestmark = pytest.mark.slow

OVERRIDE = ROOT / "tests" / "docker" / "compose.test-images.yml"
DB_IMAGE = "postgres:16-alpine"  # docker-compose.yml's
DB_STAND_IN = "localhost/attention-quiz-test-postgres:stand-in"
HEALTHY_SECONDS = 120
# The settings the compose file reads from the environment or .env: the test's env file gives them, not the shell.
COMPOSE_SETTINGS = ("SECRET_KEY", "POSTGRES_PASSWORD", "PORT", "SESSION_COOKIE_SECURE", "GUNICORN_WORKERS",
                    "GUNICORN_THREADS")


def compose_runner(docker: Docker) -> list[str]:
    """`docker compose`, or podman-compose driving the engine the Docker tests use."""
    engine = docker.command
    if Path(engine[0]).name == "docker":
        plugin = subprocess.run([*engine, "compose", "version"], capture_output=True, text=True, timeout=30,
                                check=False)
        if plugin.returncode != 0:
            unavailable(f"`docker compose` is missing ({plugin.stderr.strip()[-200:]}): install Docker's compose "
                        "plugin.")
        return [*engine, "compose"]
    # The test extra's, beside this Python (make test does not put the venv on PATH), else one on PATH.
    podman_compose = shutil.which("podman-compose", path=Path(sys.executable).parent) or shutil.which("podman-compose")
    if not podman_compose:
        unavailable(f"{engine[0]} is podman, and podman-compose is not installed: `pip install -e '.[test]'`.")
    if len(engine) > 1:
        unavailable(f"podman-compose takes one podman command, not {' '.join(engine)!r}.")
    return [podman_compose, "--podman-path", engine[0]]


@pytest.fixture(scope="module")
def db_image(docker):
    """None when the file's postgres:16-alpine is here or can be pulled; else the stand-in, built for this module."""
    here = docker("image", "inspect", DB_IMAGE, check=False).returncode == 0
    if here or docker("pull", f"docker.io/library/{DB_IMAGE}", check=False, timeout=300).returncode == 0:
        yield None
    else:
        # --no-cache for the reason build_image() gives: podman's layer cache has served stale COPY layers.
        docker("build", "--no-cache", "-t", DB_STAND_IN, str(ROOT / "tests" / "docker" / "postgres"), timeout=900)
        yield DB_STAND_IN
        docker("rmi", DB_STAND_IN, check=False)  # each build makes a new one (500 MB): leave none behind


@dataclass
class Project:
    """One compose project: a unique name, its own env file, the runner."""
    docker: Docker
    runner: list[str]
    env_file: Path
    environment: dict[str, str]
    name: str = field(default_factory=lambda: f"attention-quiz-test-{secrets.token_hex(4)}")

    def __call__(self, *args: str, timeout: float = 300, check: bool = True) -> subprocess.CompletedProcess:
        command = [*self.runner, "--env-file", str(self.env_file), "-p", self.name,
                   "-f", str(ROOT / "docker-compose.yml"), "-f", str(OVERRIDE), *args]
        result = subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=ROOT, check=False,
                                env=self.environment)
        if check and result.returncode != 0:
            pytest.fail(f"`compose {' '.join(args)}` exited {result.returncode}:\n"
                        f"{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
        return result

    def container(self, service: str) -> str:
        """The name of the service's container (both runners label it as Docker Compose does)."""
        names = self.docker("ps", "-a", "--filter", f"label=com.docker.compose.project={self.name}",
                            "--filter", f"label=com.docker.compose.service={service}",
                            "--format", "{{.Names}}").stdout.split()
        assert len(names) == 1, f"expected one {service} container in {self.name}, found {names}"
        return names[0]

    def wait_until_db_is_healthy(self) -> None:
        db = self.container("db")
        deadline = time.monotonic() + HEALTHY_SECONDS
        while (check := self.docker.healthcheck(db)).returncode != 0:
            if time.monotonic() > deadline:
                logs = self.docker("logs", db, check=False)
                pytest.fail(f"db's health check did not pass within {HEALTHY_SECONDS} s: {check.stdout}{check.stderr}"
                            f"\n{logs.stdout[-2000:]}{logs.stderr[-2000:]}")
            time.sleep(1)

    def psql(self, query: str) -> str:
        return self.docker("exec", self.container("db"), "psql", "-U", "attention_quiz", "-d", "attention_quiz",
                           "-tAc", query).stdout.strip()


def runner_environment(**images: str | None) -> dict[str, str]:
    environment = {key: value for key, value in os.environ.items() if key not in COMPOSE_SETTINGS}
    environment.update({key: value for key, value in images.items() if value}, PODMAN_HERE_QUIET="1")
    return environment


@pytest.fixture(scope="module")
def docker():
    engine = Docker(docker_command())
    yield engine
    engine.clean_up()


@pytest.fixture(scope="module")
def runner(docker):
    return compose_runner(docker)


@pytest.fixture
def env_file():
    folder = Path(tempfile.mkdtemp(prefix="attention-quiz-compose-"))
    yield folder / "env"
    shutil.rmtree(folder)


@pytest.mark.parametrize("missing", ["SECRET_KEY", "POSTGRES_PASSWORD"])
def test_compose_refuses_to_start_without_a_secret(docker, runner, env_file, missing):
    env_file.write_text("".join(f"{key}={secrets.token_hex(24)}\n"
                                for key in ("SECRET_KEY", "POSTGRES_PASSWORD") if key != missing))
    project = Project(docker, runner, env_file, runner_environment(ATTENTION_QUIZ_TEST_IMAGE="unused"))
    result = project("config", check=False, timeout=60)
    assert result.returncode != 0, result.stdout
    assert f"set {missing} (e.g. in .env)" in result.stdout + result.stderr, result.stdout + result.stderr


def test_compose_up_serves_on_postgresql_and_holds_up_under_fifty_slow_sockets(docker, runner, db_image, env_file):
    app_image = build_image(docker)
    port = free_port()
    env_file.write_text(f"SECRET_KEY={SECRET_KEY}\nPOSTGRES_PASSWORD={secrets.token_hex(24)}\nPORT={port}\n")
    project = Project(docker, runner, env_file,
                      runner_environment(ATTENTION_QUIZ_TEST_IMAGE=app_image, ATTENTION_QUIZ_TEST_DB_IMAGE=db_image))
    try:
        project("up", "-d", "db")
        project.wait_until_db_is_healthy()
        project("up", "-d")
        app = Container(docker, project.container("app"), f"http://127.0.0.1:{port}")
        health = app.wait_until_healthy()
        assert health["database"] is True and health["banks"] >= 1, health

        # The app stores answers in the db service's PostgreSQL, not in a SQLite file of its own.
        before = int(project.psql("SELECT count(*) FROM responses"))
        assert verdict(answer_head_dimension(Browser(app.url))) == "Correct"
        assert int(project.psql("SELECT count(*) FROM responses")) == before + 1

        # The same attack and the same bar as tests/test_slow_clients.py's against `docker run`.
        holds_under_attack(app, "docker compose up")
    finally:
        down = project("down", "-v", check=False, timeout=180)
        assert down.returncode == 0, down.stdout + down.stderr
        label = f"label=com.docker.compose.project={project.name}"
        leftovers = docker("ps", "-a", "-q", "--filter", label).stdout + docker("volume", "ls", "-q", "--filter",
                                                                                 label).stdout
        assert not leftovers.strip(), f"`down -v` left containers or volumes of {project.name} behind: {leftovers}"
