# Two commands do all set-up from a fresh clone:
#   make demo   - venv, install, local Kafka/Redis/Spark as needed, then the main job
#   make test   - the same set-up, then ruff, mypy and pytest (unit + integration)
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: demo test lint unit bench infra-up infra-down infra-status clean

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11) and "Python >= 3.11 is needed (set PYTHON=...)")'
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --disable-pip-version-check -e '.[dev]'
	@touch $(STAMP)

demo: $(STAMP)
	$(BIN)/collection-manager demo

# Every benchmark (under 15 minutes on 2 cores), then docs/benchmarks.md and its plots.
bench: $(STAMP)
	$(BIN)/collection-manager bench all

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

unit: $(STAMP)
	$(BIN)/pytest tests/unit

test: lint
	$(BIN)/pytest

infra-up infra-down infra-status: $(STAMP)
	$(BIN)/collection-manager infra $(subst infra-,,$@)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
