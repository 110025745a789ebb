# rocketq: two commands from a fresh clone.
#   make demo  - set everything up, run the main job on the embedded default
#   make test  - set everything up, lint, type-check and run the test suite
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

# The compiled build (README "Compiled build"): `make` compiles rocketq._build.HOT_MODULES with mypyc
# in place (extensions next to the sources, C and objects under build/). The stamp depends on every
# source of the package (mypyc inlines constants and checks types across modules), so an edit triggers
# a rebuild, never a stale extension; a hot module that stops compiling fails the target loudly.
# COMPILE=0 skips it (extensions already built stay in use: ROCKETQ_PURE_PYTHON=1 or make clean for pure);
# MYPYC_OPT_LEVEL is the C optimisation level.
COMPILE         ?= 1
MYPYC_OPT_LEVEL ?= 2
COMPILED        := $(VENV)/.compiled
SRC_PY          := $(shell find src/rocketq -name '*.py')
# `make test` then runs a fast subset again with ROCKETQ_PURE_PYTHON=1 (the pure fallback), and
# every test marked pure_python outside it (the compiled pass skips those: they replace a method
# of a compiled class), so each of them runs in one pass or the other.
PURE_TESTS      := tests/unit tests/golden tests/component/test_build.py tests/component/test_remoting_client.py \
                   tests/component/test_remoting_client_sync_io.py tests/component/test_remoting_server.py \
                   tests/component/test_remoting_shared_io.py tests/component/test_sync_flush_ack.py
PURE_MARKED     := tests --ignore=tests/unit --ignore=tests/golden --ignore=tests/component/test_sync_flush_ack.py

.PHONY: demo test lint typecheck pytest bench clean venv interop-deps browser

NODE_STAMP := tests/interop/node_modules/.installed

ifeq ($(COMPILE),1)
venv: $(STAMP) $(COMPILED)
else
venv: $(STAMP)
endif

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
	$(PY) -m pip install --quiet --upgrade pip 'setuptools>=77'
	$(PY) -m pip install --quiet -e '.[dev,spark,speed]'
	touch $(STAMP)

$(COMPILED): $(STAMP) setup.py $(SRC_PY)
	@echo "compiling the hot set with mypyc (MYPYC_OPT_LEVEL=$(MYPYC_OPT_LEVEL)) ..."
	@mkdir -p build; start=$$(date +%s); \
	ROCKETQ_COMPILE=require MYPYC_OPT_LEVEL=$(MYPYC_OPT_LEVEL) $(PY) setup.py --quiet build_ext --inplace \
		--build-temp build/temp > build/mypyc-build.log 2>&1 || { tail -40 build/mypyc-build.log; \
		echo "!!! the mypyc build FAILED: a hot module (rocketq._build.HOT_MODULES) no longer compiles; see build/mypyc-build.log !!!"; exit 1; }; \
	echo "compiled in $$(( $$(date +%s) - start )) s"
	$(PY) -c "from rocketq import _build; s = _build.state(); print(s.describe()); assert s.compiled, s.reason"
	touch $(COMPILED)

demo: venv
	$(VENV)/bin/rocketq demo

lint: venv
	$(VENV)/bin/ruff check src tests benchmarks setup.py build_backend
	$(VENV)/bin/ruff format --check src tests benchmarks setup.py build_backend

typecheck: venv
	$(VENV)/bin/mypy

# Compiled: the whole suite on the extensions, then the pure pass; tests/component/test_build.py
# checks each pass loaded the build it expects (ROCKETQ_EXPECT_BUILD).
pytest: venv interop-deps browser
ifeq ($(COMPILE),1)
	ROCKETQ_EXPECT_BUILD=compiled $(PY) -m pytest -q
	ROCKETQ_PURE_PYTHON=1 ROCKETQ_EXPECT_BUILD=pure $(PY) -m pytest -q $(PURE_TESTS)
	ROCKETQ_PURE_PYTHON=1 ROCKETQ_EXPECT_BUILD=pure $(PY) -m pytest -q -m pure_python $(PURE_MARKED)
else
	$(PY) -m pytest -q
endif

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

# The pure fallback without deleting anything: ROCKETQ_PURE_PYTHON=1 (see README).
clean:
	rm -rf $(VENV) build dist .mypy_cache .pytest_cache .ruff_cache tests/interop/node_modules
	find src -name '*.so' -delete
	rm -f src/rocketq/_compiled_manifest.json
