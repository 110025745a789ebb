# rocketq: two commands from a fresh clone.
#   make demo  - set everything up, run the main job on the embedded default
#   make test  - set everything up, lint, type-check and run the test suite
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: demo test lint typecheck pytest bench clean venv interop-deps browser

NODE_STAMP := tests/interop/node_modules/.installed

venv: $(STAMP)

# The interop tests drive rocketq with ali-ons, a real third-party RocketMQ client (Node 20).
interop-deps: $(NODE_STAMP)

$(NODE_STAMP): tests/interop/package.json tests/interop/package-lock.json
	cd tests/interop && npm ci --no-audit --no-fund --loglevel=error
	touch $(NODE_STAMP)

# The dashboard's browser tests drive Debian's chromium (headless) with Playwright; Playwright's
# own browser download is never used. Where chromium cannot be installed the tests skip LOUDLY.
browser:
	@if ! command -v chromium >/dev/null && ! test -x /usr/bin/chromium; then \
		if command -v apt-get >/dev/null; then \
			$(SUDO) apt-get update -qq && \
			$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null || \
			echo "!!! browser: could not install chromium; the dashboard browser tests will be SKIPPED !!!"; \
		else \
			echo "!!! browser: no apt-get here; install chromium by hand or the dashboard browser tests are SKIPPED !!!"; \
		fi; \
	fi

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev,spark]'
	touch $(STAMP)

demo: venv
	$(VENV)/bin/rocketq demo

lint: venv
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/ruff format --check src tests benchmarks

typecheck: venv
	$(VENV)/bin/mypy

pytest: venv interop-deps browser
	$(PY) -m pytest -q

test: lint typecheck pytest

# Side-by-side benchmarks (issue #9): rocketq vs Redis Streams vs NATS JetStream, ~9 min, then
# workload 7 (the Spark connector vs Parquet, 1 M rows, ~3 min; MISSING without Java 17+).
# Installs Debian's redis-server and nats-server if missing (a peer that still cannot be found
# is reported as MISSING in the output and in the report, and the target fails), the peers'
# Python clients, matplotlib and py-spy into the venv; writes benchmarks/results/REPORT.md.
BENCH_APT  := redis-server nats-server
BENCH_PIP  := 'redis[hiredis]' nats-py matplotlib py-spy
SUDO       := $(shell [ "$$(id -u)" = 0 ] || { command -v sudo >/dev/null && echo sudo; })

bench: venv
	@if ! command -v redis-server >/dev/null || ! { command -v nats-server >/dev/null || test -x /usr/sbin/nats-server; }; then \
		if command -v apt-get >/dev/null; then \
			$(SUDO) apt-get update -qq && \
			$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(BENCH_APT) || \
			echo "bench: could not install $(BENCH_APT); the suite will report them as missing"; \
		else \
			echo "bench: no apt-get here; install $(BENCH_APT) by hand or the suite reports them as missing"; \
		fi; \
	fi
	$(PY) -m pip install --quiet $(BENCH_PIP)
	$(PY) benchmarks/run_suite.py

clean:
	rm -rf $(VENV) build dist .mypy_cache .pytest_cache .ruff_cache tests/interop/node_modules
