# Two commands do all set-up from a fresh clone:
#   make demo   - venv, install, `collection-manager setup` (jars, redis-server), then the main job
#   make test   - the same set-up and the tests' own (tests/setup.py: prometheus, chromium),
#                 then ruff, mypy, the import-layer contract, the docs site (make docs) and
#                 pytest:
#                 everything on local processes (three xdist workers), then the tests marked
#                 `containers` (the pipeline, a fault, the agents) on the project's images
#                 (CM_TEST_SERVICES=containers; skipped where no engine can run); the tests
#                 marked `slow` are left out (make test-slow)
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: release setup test-setup demo test test-processes test-images test-slow test-containers soak lint docs unit bench infra-up infra-down infra-status clean distclean

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11) and "Python >= 3.11 is needed (set PYTHON=...)")'
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --disable-pip-version-check --no-compile -e '.[dev]'
	@# Compiled here once, on every core: where PYTHONDONTWRITEBYTECODE is set, Python never
	@# writes what it compiles, so each process (a command, a consumer, each Python worker of
	@# Spark's) compiled pyspark, pandas and pyarrow again, and a Spark worker has a fixed
	@# 10 s to connect back.
	$(BIN)/python -m compileall -q -j 0 $(VENV)/lib collection_manager producers spark_consumers schemas > /dev/null
	@touch $(STAMP)

# Idempotent: resolves jars and installs redis-server only when they are missing.
setup: $(STAMP)
	$(BIN)/collection-manager setup

# What only the tests use (a browser, Prometheus): tests/setup.py, idempotent as setup is.
test-setup: setup
	$(BIN)/python -m tests.setup

demo: setup
	$(BIN)/collection-manager demo

# Every benchmark, then docs/benchmarks.md and its plots: 42 minutes on 2 cores
# (2026-12-04: 2,538 s, the curves 491 s of it; bench/all.py).
bench: setup
	$(BIN)/collection-manager bench run

# The release of pyproject.toml's version from its tag: dist/X.Y.Z/ (sdist and wheel,
# twine-checked) and the images tagged X.Y.Z where an engine answers (CHANGELOG.md).
release: $(STAMP)
	docker/release.sh

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports

# The documentation site (mkdocs.yml), built strict: a link to a page or an anchor that is
# not there, or a page left out of the nav, fails it. Built into a temporary directory,
# removed after; seconds.
docs: $(STAMP)
	@site=$$(mktemp -d) && trap 'rm -rf "$$site"' EXIT && \
		NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet --site-dir "$$site"

unit: $(STAMP)
	$(BIN)/pytest tests/unit

# The passes one after the other: run at once, they took as long (15m28s against 15m18s
# here: the two cores are busy either way) and printed nothing until each ended.
test: test-setup lint docs
	@$(MAKE) --no-print-directory test-processes
	@$(MAKE) --no-print-directory test-images

# Every test on local processes but those marked `containers`, which test-images runs on
# the images (with CM_TEST_CONTAINERS=off, which skips those, they run here instead), and
# those marked `slow` (test-slow).
# Files go to the xdist workers whole (--dist loadfile), so a module's fixtures start
# once. The processes pass takes three on two cores: its tests mostly wait on services
# (Spark's start, a restart, a lease), and with two the cores were busy 40% of the time.
XDIST := -n 2 --dist loadfile --durations=15
ON_PROCESSES := -m "$(if $(filter off,$(CM_TEST_CONTAINERS)),,not containers and )not slow"
test-processes: test-setup
	$(BIN)/pytest $(XDIST) -n 3 $(ON_PROCESSES)

# The tests marked `slow` (minutes each, on services of their own: the rolling restart
# of three brokers, the two-minute chaos run), left out of make test to keep it under 15
# minutes; .ci/run runs them after make test.
test-slow: test-setup
	$(BIN)/pytest $(XDIST) -m slow

# The chaos run for SECONDS seconds of faults (tests/integration/chaos_run.py: the
# replicated deployment under load, a seeded nemesis; CM_CHAOS_SEED=N repeats a schedule).
# Prints the seed, the faults survived by kind and the mismatches; exit 1 unless none.
SECONDS ?= 600
soak: test-setup
	$(BIN)/python -m tests.integration.chaos_run --seconds $(SECONDS)

# The tests marked `containers` with Kafka and Redis as testcontainers of the project's
# images: the images run the pipeline, a fault and the agents.
test-images: test-setup
	CM_TEST_SERVICES=containers $(BIN)/pytest $(XDIST) -m containers tests/integration

# The whole integration suite on the project's images (not part of make test: about
# 25 minutes; the compose test already runs on them in make test).
test-containers: test-setup
	CM_TEST_SERVICES=containers $(BIN)/pytest $(XDIST) tests/integration --ignore=tests/integration/test_compose.py

infra-up infra-down infra-status: setup
	$(BIN)/collection-manager infra $(subst infra-,,$@)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache

# clean, and the local services stopped, and the state and cache directories removed
# (the directories the settings name: CM_STATE_DIR, CM_CACHE_DIR or their XDG defaults).
distclean:
	@if test -x $(BIN)/collection-manager; then \
		$(BIN)/collection-manager infra down; \
		rm -rf "$$($(BIN)/python -c 'from collection_manager.config import InfraConfig, from_env; print(from_env(InfraConfig).state_dir)')" \
		       "$$($(BIN)/python -c 'from collection_manager.config import InfraConfig, from_env; print(from_env(InfraConfig).cache_dir)')"; \
	fi
	@$(MAKE) --no-print-directory clean
