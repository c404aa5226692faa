"""Every runnable example of README.md and docs/**/*.md, run as written against the run's
services (the convention: ``tests/examples/__init__.py``).

An example runs from the repo root with ``.venv/bin`` first on ``PATH``, as in a reader's
shell after ``collection-manager infra up``: the commands find the services through the
state directory, as the docs say they do. One marked ``fresh-state`` gets an empty state
directory and no configured service, and whatever it left running there is stopped after.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from _pytest.mark import ParameterSet

from collection_manager import devservices
from collection_manager.config import InfraConfig
from collection_manager.core.errors import InfrastructureError
from tests.examples.markdown import Example
from tests.examples.pages import ROOT, documented
from tests.examples.runner import problems, run

# The markings are checked by tests/unit/test_doc_examples.py; the README's tour is the
# start of tests/integration/test_second_session.py, which runs it.
EXAMPLES = [example for example in documented()[0] if not example.session]
BIN = ROOT / ".venv" / "bin"
# Spark's start on two busy cores takes most of it; a command of the docs takes seconds.
TIMEOUT_S = 120.0
_ADDRESSES = ("CM_KAFKA_BOOTSTRAP", "CM_REDIS_URL")


@pytest.fixture(scope="module")
def reader_env(endpoints: devservices.Endpoints, infra_config: InfraConfig) -> dict[str, str]:
    """The environment of a reader's shell with the run's services, and the introspection
    collections the docs' examples read (created by the agents in a real session)."""
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}")
    try:
        recorded = devservices.running(infra_config)
    except InfrastructureError:
        recorded = None
    if recorded != devservices.Endpoints(endpoints.kafka_bootstrap, endpoints.redis_url):
        # Services in containers, or configured: not found through the state directory.
        env.update(zip(_ADDRESSES, (endpoints.kafka_bootstrap, endpoints.redis_url), strict=True))
    _cli(env, "collections", "create-introspection")
    return env


def _cli(env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[str]:
    command = [str(BIN / "collection-manager"), *argv]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def _params(examples: list[Example]) -> list[ParameterSet]:
    """Each example a case; one that starts minutes of services of its own is ``slow``."""
    return [
        pytest.param(e, id=e.location, marks=[pytest.mark.slow] if e.slow else []) for e in examples
    ]


@pytest.mark.parametrize("example", _params(EXAMPLES))
def test_the_example_runs_as_written(
    example: Example, reader_env: dict[str, str], tmp_path: Path
) -> None:
    env = reader_env
    if example.fresh_state:
        env = {k: v for k, v in env.items() if k not in _ADDRESSES}
        env["CM_STATE_DIR"] = str(tmp_path / "state")
    try:
        outcome = run(
            example,
            env=env,
            cwd=ROOT,
            workdir=tmp_path / "example",
            timeout=example.timeout_s or TIMEOUT_S,
        )
    finally:
        if example.fresh_state:  # what a failed example left running in its own state dir
            _cli(env, "infra", "down")
    assert problems(example, outcome) == [], outcome.output[-4000:]
