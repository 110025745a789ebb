# rocketq: two commands from a fresh clone.
#   make demo  - set everything up, run the main job on the embedded default
#   make test  - set everything up, lint, type-check and run the test suite
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: demo test lint typecheck pytest bench clean venv interop-deps

NODE_STAMP := tests/interop/node_modules/.installed

venv: $(STAMP)

# The interop tests drive rocketq with ali-ons, a real third-party RocketMQ client (Node 20).
interop-deps: $(NODE_STAMP)

$(NODE_STAMP): tests/interop/package.json tests/interop/package-lock.json
	cd tests/interop && npm ci --no-audit --no-fund --loglevel=error
	touch $(NODE_STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: venv
	$(VENV)/bin/rocketq demo

lint: venv
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/ruff format --check src tests benchmarks

typecheck: venv
	$(VENV)/bin/mypy

pytest: venv interop-deps
	$(PY) -m pytest -q

test: lint typecheck pytest

bench: venv
	$(PY) benchmarks/codec_bench.py

clean:
	rm -rf $(VENV) build dist .mypy_cache .pytest_cache .ruff_cache tests/interop/node_modules
