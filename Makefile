# The two commands a newcomer needs:  `make run`  and  `make test`.
# Each sets up everything it needs on a fresh Debian machine (a venv in .venv; Chromium and PostgreSQL
# for the tests, which start a private PostgreSQL server of their own).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
HOST   ?= 127.0.0.1
PORT   ?= 5000

.PHONY: run test venv system-deps clean

$(BIN)/.installed: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[test]"
	touch $@

venv: $(BIN)/.installed

run: venv
	$(BIN)/flask --app app run --host $(HOST) --port $(PORT)

system-deps:
	PYTHON=$(PYTHON) ./scripts/ensure-test-deps

test: system-deps venv
	$(BIN)/python -m pytest $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) build dist *.egg-info
