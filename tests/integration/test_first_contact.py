"""A first contact: the README's "A five-minute tour", typed as a new user would, from an
empty state directory: ``infra up``, ``consumer run``, two agents, a query, ``tail -f`` into
``head``, ``status``, ``replicas remove``, ``infra down``.

It checks what the user sees: each command's exit status, each long-running command's
ready line, no traceback or error line anywhere and no WARNING while all is well. It starts
its own Kafka, Redis and Spark consumer (a fresh state directory is the point): about 40 s
here, so it stays in ``make test``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.examples.pages import ROOT
from tests.integration.user_session import Started, UserSession
from tests.support import assert_eventually, http_get

CM = ".venv/bin/collection-manager"
# consume's ready line names where its metrics and health are, as the agents' do: the
# listener's real address, also when the setting's port is 0 (any free one).
CONSUME_READY = re.compile(
    r"^consumer running: (\S+) from (\S+) into (\S+); metrics and health at (http://\S+)$",
    re.MULTILINE,
)
# Spark's notices of nothing wrong: its hostname resolving to loopback, a clean stop's
# "Failed to cancel job group".
SPARK_NOISE = ("resolves to a loopback address", "Failed to cancel job group")
# Spark's start-up on two busy cores, then the first micro-batches.
START_S = 180.0


@pytest.fixture
def session(tmp_path: Path) -> Iterator[UserSession]:
    """A new user's shell: an empty state directory, no service configured."""
    env = {k: v for k, v in os.environ.items() if k not in ("CM_KAFKA_BOOTSTRAP", "CM_REDIS_URL")}
    env["PATH"] = f"{ROOT / '.venv' / 'bin'}{os.pathsep}{env['PATH']}"
    # As short as a user's ~/.local/state: under pytest's long tmp_path, Spark's Unix
    # sockets would not fit and consume would rightly warn about it.
    state = Path(tempfile.mkdtemp(prefix="cm-first-"))
    env["CM_STATE_DIR"] = str(state / "state")
    env["CM_CONSUMER_METRICS_ADDRESS"] = "127.0.0.1:0"
    user = UserSession(env, tmp_path / "logs")
    try:
        yield user
    finally:
        user.close()
        user.run(f"{CM} infra down")  # whatever the test left running
        shutil.rmtree(state, ignore_errors=True)


def _ready(started: Started, line: re.Pattern[str]) -> re.Match[str]:
    def check() -> re.Match[str]:
        assert started.process.poll() is None, started.output()
        found = line.search(started.output())
        assert found is not None, started.output()
        return found

    return assert_eventually(check, timeout=START_S, interval=0.5)


def _ok(session: UserSession, command: str) -> str:
    done = session.run(command)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def _rows_of_r1(session: UserSession) -> list[dict[str, object]]:
    rows = json.loads(
        _ok(
            session, f"{CM} collections query compute_frontiers --where replica_id=r1 --format json"
        )
    )
    assert rows["rows"], rows
    return rows["rows"]


# Two minutes on a loaded run: make test-slow. In make test, the second session
# (test_second_session.py) starts from an empty state directory too.
@pytest.mark.slow
def test_a_first_session_from_an_empty_state_directory(session: UserSession) -> None:
    assert "started: kafka, redis" in _ok(session, f"{CM} infra up")
    # As the README's tour lists them: the consumer, then the agents, without waiting between
    # (the agents' first requests create the request topic the consumer waits for).
    consume = session.start("consume", f"{CM} consumer run")
    agents = {n: session.start(n, f"{CM} replicas run --id {n}") for n in ("r1", "r2")}
    for name, agent in agents.items():
        _ready(agent, re.compile(rf"^replica {name} running at epoch \d+", re.MULTILINE))
    url = _ready(consume, CONSUME_READY).group(4)
    assert not url.endswith(":0"), url
    assert http_get(f"{url}/healthz")[0] == 200

    assert_eventually(lambda: _rows_of_r1(session), timeout=START_S, interval=1.0)
    changes = _ok(
        session, f"{CM} collections tail error_counts -f --format json | head -5"
    ).splitlines()
    assert len(changes) == 5 and all(json.loads(change) for change in changes), changes
    assert _ok(session, f"{CM} status").splitlines()[1].startswith("running")  # the consumer
    assert "removed replica r1" in _ok(session, f"{CM} replicas remove r1 --yes")

    # Removed by an operator, the agent stops on its own: exit status 1, as documented.
    assert agents["r1"].process.wait(60) == 1, agents["r1"].output()
    assert session.stop(agents["r2"]) == 0, agents["r2"].output()
    assert session.stop(consume) == 0, consume.output()
    assert len(CONSUME_READY.findall(consume.output())) == 1
    assert "stopped: kafka" in _ok(session, f"{CM} infra down")
    _nothing_alarming(session)


def _nothing_alarming(session: UserSession) -> None:
    """No traceback or error line in any output, no WARNING line from a healthy start."""
    outputs = {**session.outputs, **{s.name: s.output() for s in session.started}}
    for name, output in outputs.items():
        assert "Traceback" not in output, f"{name}:\n{output}"
        assert not re.search(r"^error:", output, re.MULTILINE), f"{name}:\n{output}"
        warnings = [line for line in output.splitlines() if " WARNING " in line]
        assert warnings == [], f"{name}:\n{output}"
        for notice in SPARK_NOISE:
            assert notice not in output, f"{name}:\n{output}"
