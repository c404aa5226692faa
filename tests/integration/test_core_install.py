"""The core install, as a replica's host or a reader gets it: ``pip install collection-manager``
with no extra, from the wheel of this tree, in a fresh virtual environment.

It holds none of Spark, pandas, Arrow or the test harness; its agent publishes to a running
pipeline (the consumer is the full install's), each reading command answers there as the
full install does, and its client reads the rows the query reads (over a server of the full
install). The roles it lacks refuse with one line naming their extra. About a
minute: the wheel's build and install take most of it (pip's cache holds the dependencies
after the first run).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import venv
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis as redis_lib

from collection_manager.config import ReplicaConfig
from collection_manager.storage.store import RedisStore
from schemas.introspection import introspection_specs
from tests.integration.consumer_process import consumer_env, kill, start_consumer
from tests.integration.http_service import served
from tests.releases import ROOT
from tests.support import assert_eventually

pytestmark = pytest.mark.integration

# What the core install must not hold: the consumer's and the server's libraries.
HEAVY = ("pyspark", "pandas", "pyarrow", "numpy", "py4j")
# A command's JSON is compared whole, but for what moves by itself between two reads: the
# heartbeats' times and leases, and the consumer's batches (heartbeats go through it).
MOVING_SUFFIXES = ("_ms", "_per_s")
MOVING = {"batches", "last_batch_id", "control_requests", "lag", "lag_total", "retries"}


@pytest.fixture(scope="module")
def core_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The ``bin`` of a fresh venv with the core wheel of this work tree installed."""
    root = tmp_path_factory.mktemp("core-install")
    wheel = _build_wheel(root)
    with zipfile.ZipFile(wheel) as built:
        names = built.namelist()
    assert not [n for n in names if n.startswith(("tests/", "collection_manager/testing/"))]
    venv.create(root / "venv", with_pip=True)
    python = root / "venv" / "bin" / "python"
    _run([python, "-m", "pip", "install", "-q", "--disable-pip-version-check", wheel])
    return python.parent


def _build_wheel(root: Path) -> Path:
    """The wheel of the work tree as it is (uncommitted changes too), built in a copy so
    that the checkout gets no build/ or egg-info."""
    source = root / "source"
    listed = _run(["git", "-C", ROOT, "ls-files", "-co", "--exclude-standard"]).stdout
    for name in listed.split("\n"):
        if name and (ROOT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    _run([sys.executable, "-m", "build", "--wheel", "--outdir", root / "dist", source])
    (wheel,) = (root / "dist").glob("*.whl")
    return wheel


def _run(argv: list[Any], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [str(a) for a in argv], capture_output=True, text=True, timeout=600, **kwargs
    )
    assert done.returncode == 0, f"{argv}: {done.stdout[-2000:]}{done.stderr[-3000:]}"
    return done


def test_the_core_install_holds_no_spark_pandas_or_arrow(core_bin: Path) -> None:
    probe = "import importlib.util as u, sys; print([m for m in sys.argv[1:] if u.find_spec(m)])"
    found = _run([core_bin / "python", "-c", probe, *HEAVY]).stdout.strip()
    assert found == "[]"


@pytest.mark.parametrize(
    ("command", "extra"),
    [
        (["consumer", "run"], "consumer"),
        (["server", "run"], "server"),
        (["demo"], "consumer,server"),
    ],
)
def test_a_role_not_installed_refuses_with_one_line_naming_its_extra(
    core_bin: Path, command: list[str], extra: str
) -> None:
    done = subprocess.run(
        [core_bin / "collection-manager", *command], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1
    assert done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert line.endswith(f"pip install 'collection-manager[{extra}]'"), line


@pytest.fixture
def pipeline(
    kafka: str,
    redis: redis_lib.Redis,
    endpoints: Any,
    topic: str,
    unique: str,
    tmp_path: Path,
) -> Iterator[dict[str, str]]:
    """The full install's consumer on the test's topic; the environment of every command."""
    config = ReplicaConfig()
    env = consumer_env(kafka, endpoints.redis_url, topic, tmp_path) | {
        "CM_COLLECTION_SUFFIX": f"-{unique}",
        "CM_REPLICA_NAMESPACE": f"cm:replicas:{unique}",
        "CM_STATE_DIR": str(tmp_path / "state"),
        "CM_HEARTBEAT_INTERVAL_MS": "300",
        "CM_STEP_INTERVAL_MS": "200",
        "CM_REPLICA_TTL_MS": str(max(config.replica_ttl_ms, 10_000)),
        # The paused agent's rows must not expire between two reads of the comparison.
        "CM_ROW_TTL_MS": "3600000",
    }
    full = [sys.executable, "-m", "collection_manager.cli.main"]
    _run([*full, "collections", "create-introspection"], env=env)
    consumer = start_consumer(env, tmp_path / "consumer.log")
    try:
        yield env
    finally:
        kill(consumer)
        store = RedisStore(redis)
        for spec in introspection_specs():
            store.drop_collection(spec.name + env["CM_COLLECTION_SUFFIX"])


def test_the_core_agent_publishes_and_every_reading_command_agrees_with_the_full_install(
    core_bin: Path, pipeline: dict[str, str], unique: str, tmp_path: Path
) -> None:
    core = [core_bin / "collection-manager"]
    full = [sys.executable, "-m", "collection_manager.cli.main"]
    # From a neutral directory: the core install must not find this checkout's modules.
    where = {"env": pipeline, "cwd": tmp_path}
    state = tmp_path / "agent-rows.json"
    agent = subprocess.Popen(
        [
            *map(str, core),
            "replicas",
            "run",
            "--id",
            f"core-{unique}",
            "--steps",
            "3",
            "--state-file",
            str(state),
            "--duration",
            "600",
        ],
        env=pipeline,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        assert_eventually(lambda: _agent_done(agent, state), timeout=240, interval=0.5)
        # Paused, the agent changes nothing more (no controller runs here to expire its
        # lease): each command reads the same state from both installs.
        os.killpg(agent.pid, signal.SIGSTOP)
        _run([*full, "status", "--wait", "--timeout", "180"], **where)
        frontiers = f"compute_frontiers-{unique}"
        commands = [
            ["collections", "list"],
            ["collections", "show", frontiers],
            ["collections", "query", frontiers],
            ["collections", "query", frontiers, "--where", f"replica_id=core-{unique}"],
            ["collections", "tail", frontiers, "-n", "5"],
            ["replicas", "list"],
            ["status"],
            ["progress", "show"],
        ]
        for command in commands:
            argv = [*command, "--format", "json"]
            ours = json.loads(_run([*core, *argv], **where).stdout)
            theirs = json.loads(_run([*full, *argv], **where).stdout)
            assert _still(ours, unique) == _still(theirs, unique), command
        rows = _run([*core, "collections", "query", frontiers, "--format", "json"], **where)
        assert json.loads(rows.stdout), "the core agent's rows are in the collection"
        # The libraries in Redis: other tests' processes come and go, so only that it runs.
        _run([*core, "functions", "list", "--format", "json"], **where)
        # The client of the core install reads what the query reads, over a server of the
        # full install; Arrow, which needs pyarrow, says so before it asks.
        with served(pipeline["CM_REDIS_URL"], pipeline["CM_KAFKA_BOOTSTRAP"]) as service:
            program = CLIENT_PROGRAM.format(url=service.url, name=frontiers)
            read = json.loads(_run([core_bin / "python", "-c", program], **where).stdout)
        queried = json.loads(
            _run([*full, "collections", "query", frontiers, "--format", "json"], **where).stdout
        )
        assert read["as_of"] == queried["as_of"]
        assert _by_value(read["rows"]) == _by_value(queried["rows"])
        assert (
            read["arrow"].startswith("MissingDependency") and "pip install pyarrow" in read["arrow"]
        )
    finally:
        os.killpg(agent.pid, signal.SIGKILL)
        agent.wait(60)


# Run by the core install's python: the rows as `collections query --format json` has them,
# and what asking for Arrow without pyarrow raises.
CLIENT_PROGRAM = """
import json
from collection_manager.client import Client
with Client("{url}") as client:
    with client.rows("{name}") as rows:
        listed = [{{"row": row.values, "count": row.count}} for row in rows]
        as_of = rows.as_of
    try:
        client.rows_arrow("{name}")
        arrow = "no error"
    except Exception as exc:
        arrow = f"{{type(exc).__name__}}: {{exc}}"
print(json.dumps({{"as_of": as_of, "rows": listed, "arrow": arrow}}))
"""


def _by_value(rows: list[Any]) -> list[Any]:
    return sorted(rows, key=lambda r: json.dumps(r, sort_keys=True))


def _agent_done(agent: subprocess.Popen[bytes], state: Path) -> None:
    assert agent.poll() is None, agent.stdout.read().decode() if agent.stdout else ""
    assert state.exists()


def _still(tree: Any, unique: str) -> Any:
    """``tree`` without what moves between two reads (``MOVING``), and without the
    collections of other tests (their names lack ``unique``), which run beside this one."""
    if isinstance(tree, dict):
        return {
            k: _still(v, unique)
            for k, v in tree.items()
            if k not in MOVING and not k.endswith(MOVING_SUFFIXES)
        }
    if isinstance(tree, list):
        return [_still(v, unique) for v in tree if _of_this_test(v, unique)]
    return tree


def _of_this_test(item: Any, unique: str) -> bool:
    name = item.get("name") if isinstance(item, dict) else None
    return not isinstance(name, str) or unique in name
