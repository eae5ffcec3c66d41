# Two commands for a fresh machine: `make demo` and `make test`.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMPS := .stamps
BUNDLE := tb_pipeline_plugin/static/index.js
FRONTEND_SRC := $(shell find frontend/src -type f 2>/dev/null) frontend/package.json frontend/package-lock.json
PORT ?= 6006

.PHONY: demo test test-py test-js setup frontend samples chromium bench clean api

setup: $(STAMPS)/venv $(BUNDLE)

$(STAMPS)/deps: requirements-dev.txt
	@mkdir -p $(STAMPS)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements-dev.txt
	@touch $@

# After the bundle (order only): setup.py builds the frontend itself when the bundle is missing (npm ci in
# frontend/), which would race the bundle's own npm ci when `make test` installs side by side.
$(STAMPS)/venv: $(STAMPS)/deps setup.py tb_pipeline_plugin/trace/_scan.c tb_pipeline_plugin/trace/_nest.c | $(BUNDLE)
	$(PY) -m pip install -q --no-deps --no-build-isolation -e .
	@touch $@

$(STAMPS)/npm: frontend/package.json frontend/package-lock.json
	@mkdir -p $(STAMPS)
	cd frontend && npm ci --no-audit --no-fund
	@touch $@

$(STAMPS)/codegen: frontend/codegen/package.json frontend/codegen/package-lock.json
	@mkdir -p $(STAMPS)
	cd frontend/codegen && npm ci --no-audit --no-fund
	@touch $@

# The one contract: Python Structs -> docs/openapi.json -> frontend/src/generated/api.ts;
# and the report of `tb-pipeline diff --format json` -> docs/report.schema.json.
api: $(STAMPS)/venv $(STAMPS)/codegen
	$(PY) -m tb_pipeline_plugin.server.openapi
	$(PY) -m tb_pipeline_plugin.report.schema
	cd frontend/codegen && npm run gen

$(BUNDLE): $(STAMPS)/npm $(FRONTEND_SRC)
	cd frontend && npm run build

frontend: $(BUNDLE)

# The demo pair, recorded as users record: samples/train_demo.py through
# `tb-pipeline record --profile` and diagnostic mode (samples/record_demo.py).
samples/runs/.recorded: $(STAMPS)/venv samples/record_demo.py samples/train_demo.py
	rm -rf samples/runs
	$(PY) samples/record_demo.py --out samples/runs --quiet
	@touch $@

samples: samples/runs/.recorded

# Debian's chromium drives the browser tests (never `playwright install`).
chromium:
	@command -v chromium >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

demo: setup samples
	@echo "Open http://localhost:$(PORT)/#tb_pipeline (baseline vs experimental are preselected; Ctrl+C stops)"
	$(VENV)/bin/tensorboard --logdir samples/runs --port $(PORT) --bind_all

test-js: $(STAMPS)/npm $(STAMPS)/codegen
	cd frontend/codegen && npm run check
	cd frontend && npm run typecheck && npm test

# Every recording the tests read, made once and alone (the one-core ones two at a time, a core each;
# tests/support/recordings.py: a cache under
# ~/.cache/tb_pipeline_plugin/test-recordings, shared by every clone, keyed by what records them), by the serial half's process before its first test; then
# the modules marked `timing` alone, and every other module on two workers (tests/conftest.py); both halves
# always run. Bytecode is written (git-ignored __pycache__/) even where the environment says
# PYTHONDONTWRITEBYTECODE: each pytest process would otherwise compile and assertion-rewrite every test module
# again, ~4 s of CPU each.
test-py: setup chromium
	unset PYTHONDONTWRITEBYTECODE; \
	$(PY) -m pytest -q --durations=15 --build-recordings -m timing tests; serial=$$?; \
	$(PY) -m pytest -q --durations=15 -m "not timing" -n 2 --dist loadfile --no-loadscope-reorder tests; parallel=$$?; \
	exit $$(( serial || parallel ))

# The installs side by side (pip; npm and the bundle; the codegen's npm; chromium): 85 s -> 55 s from a fresh
# clone on this 2-core machine. Then the JS tests, then the Python halves, one after another whatever -j says.
test:
	@$(MAKE) --no-print-directory -j4 --output-sync=target setup chromium $(STAMPS)/codegen
	@$(MAKE) --no-print-directory -j1 test-js test-py

bench: setup chromium
	$(PY) benchmarks/bench_load.py --keep
	$(PY) benchmarks/bench_diff.py --keep
	$(PY) benchmarks/bench_frontend.py

clean:
	rm -rf $(VENV) $(STAMPS) frontend/node_modules frontend/codegen/node_modules $(BUNDLE) samples/runs
