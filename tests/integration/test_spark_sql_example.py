"""The Spark SQL examples of docs/operations.md as a user runs them: one script, beside the
Redis that ``infra up`` recorded, with no ``redis.url`` option and no ``CM_REDIS_URL``, and
without Spark's notices of nothing wrong (its loopback hostname, a stream's clean stop).

The stream example must wait for its stream (a script that only calls ``start()`` ends
before the first batch) and write its checkpoint where any user can. The Redis is the
test's own, so the built-in collections it writes to are no other test's; its record in
a state directory of the test names the test's own process, as alive as ``infra up``'s.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from collection_manager.config import InfraConfig
from collection_manager.config.services import Service, save_services, start_time
from collection_manager.core.requests import Append
from collection_manager.storage.client import redis_client
from collection_manager.storage.store import RedisStore
from spark_consumers.run import ensure_introspection_collections
from tests.examples.markdown import examples
from tests.examples.pages import ROOT
from tests.integration.own_services import OwnService

PAGE = "docs/operations.md"
ROW = ("r1", 7, 0, 10, 2, 4096)  # arrangement_sizes: replica, operator, worker, sizes


def _spark_sql_example() -> str:
    found, _ = examples(PAGE, (ROOT / PAGE).read_text())
    (code,) = [e.code for e in found if 'readStream.format("collection_changes")' in e.code]
    return code


def _record_redis(state: Path, url: str) -> None:
    pid = os.getpid()
    service = Service("redis", pid, url, "redis.log", "redis-server", start_time(pid))
    save_services(InfraConfig(state_dir=state).services_file, {"redis": service})


def test_the_spark_sql_examples_run_as_a_script_beside_infra_up(
    own_service: Callable[[str], OwnService], tmp_path: Path
) -> None:
    redis = own_service("redis")
    store = RedisStore(redis_client(redis.address))
    ensure_introspection_collections(store)
    store.apply_requests("t-example", 0, [(0, Append("arrangement_sizes", "r1", 1, [(ROW, 1)], 0))])
    _record_redis(tmp_path / "state", redis.address)
    env = {k: v for k, v in os.environ.items() if k != "CM_REDIS_URL"}
    env.update(CM_STATE_DIR=str(tmp_path / "state"), PYSPARK_PYTHON=sys.executable)
    done = subprocess.run(
        [sys.executable, "-c", _spark_sql_example()],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Batch: 0" in done.stdout, done.stdout[-3000:]  # the stream printed its changes
    # (time, replica_id, operator_id, worker_id, records, batches, size_bytes, diff)
    assert re.search(r"\|\s*\d+\|\s*r1\|\s*7\|\s*0\|\s*10\|\s*2\|\s*4096\|\s*1\|", done.stdout)
    for noise in ("Traceback", "resolves to a loopback address", "Failed to cancel job group"):
        assert noise not in done.stderr, done.stderr[-3000:]
