# The two commands of the quick start are `make demo` and `make test`; both set everything up.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-test
DEMO_STAMP := $(VENV)/.installed

.PHONY: demo test test-all lint pytest pytest-all agents node-sdks sandbox system-deps bench clean

$(VENV)/bin/python:
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "backstay needs Python >= 3.11")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(DEMO_STAMP): pyproject.toml | $(VENV)/bin/python
	$(BIN)/python -m pip install --quiet -e '.[demo]'
	@touch $@

$(STAMP): pyproject.toml | $(VENV)/bin/python
	$(BIN)/python -m pip install --quiet -e '.[test]'
	@touch $@ $(DEMO_STAMP)

demo: $(DEMO_STAMP)
	$(BIN)/backstay demo

lint: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/mypy
	$(BIN)/lint-imports

# make test runs every test but those marked slow (soak and scale checks, long real-time
# waits, repeated real-CLI runs); make test-all runs them too. Two test processes, one per
# core: a test module stays in one process, with its servers and CLIs.
PYTEST := $(BIN)/python -m pytest -n 2 --dist loadfile

pytest: $(STAMP)
	$(PYTEST) -m "not slow"

pytest-all: $(STAMP)
	$(PYTEST)

# The real agent CLIs at their pinned versions, in the managed directory (docs/agents/install.md).
# Quick when they are installed already. A CLI that cannot be installed (registry unreachable)
# does not stop the tests: the tests that need it are skipped, with the reason.
agents: $(STAMP)
	@$(BIN)/backstay agents install || echo "make agents: some agent CLIs could not be installed (above); the tests that need them will be skipped"

# The official Node SDKs (@anthropic-ai/sdk, openai) at their pinned versions, for the gateway's
# any-language tests. Quick when installed; without npm or the registry those tests are skipped.
node-sdks:
	@scripts/install-node-sdks

# bubblewrap sandboxes the agent runtime's shell tool (docs/frameworks.md); without it the
# tool refuses to run (unless allow_weak_sandbox), and the tests that need it are skipped.
sandbox:
	@command -v bwrap >/dev/null || (command -v apt-get >/dev/null && \
		(apt-get install -y -q bubblewrap >/dev/null 2>&1 || \
		 (apt-get update -q >/dev/null 2>&1 && apt-get install -y -q bubblewrap >/dev/null 2>&1))) || \
		echo "make sandbox: bubblewrap could not be installed; the tests that need it will be skipped"

# Prometheus and headless Chromium for the observability tests, redis-server for the
# shared-store tests (apt-get, only when missing; a machine that cannot install them skips
# those tests, with the reason).
system-deps: sandbox
	@scripts/install-test-deps

# The checks and the installs run side by side (their output kept whole per step), then pytest.
SETUP := lint agents node-sdks sandbox system-deps

test:
	@$(MAKE) --no-print-directory -j4 --output-sync=target $(SETUP)
	@$(MAKE) --no-print-directory pytest

test-all:
	@$(MAKE) --no-print-directory -j4 --output-sync=target $(SETUP)
	@$(MAKE) --no-print-directory pytest-all

BENCH_STAMP := $(VENV)/.installed-bench

$(BENCH_STAMP): pyproject.toml | $(VENV)/bin/python
	$(BIN)/python -m pip install --quiet -e '.[test,bench]'
	@touch $@ $(STAMP) $(DEMO_STAMP)

bench: $(BENCH_STAMP)
	$(BIN)/python bench/run.py

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis
