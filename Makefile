# Two commands do all set-up: `make eval` and `make test`. Both build .venv when it is missing.
# Every pip call goes through constraints.txt (PIP_CONSTRAINT), which pins the CPU torch.

SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
export PIP_CONSTRAINT := $(CURDIR)/constraints.txt
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export PIP_DISABLE_PIP_VERSION_CHECK := 1

DATA ?= data/sample
OUT ?= runs/eval
EVAL_ARGS ?=

.PHONY: help venv chromium test check lint typecheck pytest eval lab bench clean

help:
	@echo "make eval   - build .venv if missing, run the strategy comparison, write a report"
	@echo "make test   - build .venv if missing, ruff + mypy + pytest (what CI runs)"
	@echo "make lab    - start JupyterLab on the notebooks"
	@echo "make bench  - run the benchmarks under eval/ (JSON in runs/bench)"

$(STAMP): pyproject.toml constraints.txt
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	@touch $(STAMP)

venv: $(STAMP)

# The browser test drives Debian's chromium through Playwright; never `playwright install`.
chromium:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "installing Debian's chromium for the browser test"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
	  || { echo "could not install chromium (apt-get)"; exit 1; }; }

lint: venv
	$(VENV)/bin/ruff check convlab eval tests
	$(VENV)/bin/ruff format --check convlab eval tests

typecheck: venv
	$(VENV)/bin/mypy

pytest: venv chromium
	$(VENV)/bin/pytest

test: lint typecheck pytest

check: test

eval: venv
	$(PY) -m eval.run --data $(DATA) --out $(OUT) $(EVAL_ARGS)

bench: venv
	$(PY) -m eval.bench_load --out runs/bench
	$(PY) -m eval.bench_embed --out runs/bench
	$(PY) -m eval.bench_search --out runs/bench
	$(PY) -m eval.bench_index --out runs/bench

lab: venv
	$(VENV)/bin/jupyter lab notebooks $(if $(filter 0,$(shell id -u)),--allow-root,)

clean:
	rm -rf runs .pytest_cache .mypy_cache .ruff_cache
