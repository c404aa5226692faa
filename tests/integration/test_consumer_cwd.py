"""``consume`` started in any directory imports the product, never the working directory.

PySpark starts its Python workers with ``python -m pyspark.daemon`` in the JVM's working
directory; without PYTHONSAFEPATH that directory comes first on the workers' sys.path, and
a ``schemas`` package there turned every valid request into a dead letter.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis as redis_lib

from collection_manager.core.requests import Append, Request
from collection_manager.core.specs import CollectionSpec
from collection_manager.kafka.producer import KafkaProducer, ProducerConfig
from collection_manager.storage.store import RedisStore
from schemas.codec import encode_request
from schemas.introspection import introspection_spec
from tests.integration.consumer_process import consumer_env
from tests.model.model import ModelStore
from tests.support import assert_eventually

SHADOW = 'raise ImportError("the schemas package of the working directory was imported")\n'


@pytest.fixture
def spec(redis: redis_lib.Redis, unique: str) -> Iterator[CollectionSpec]:
    store = RedisStore(redis)
    made = dataclasses.replace(introspection_spec("error_counts"), name=f"errors-{unique}")
    store.create_collection(made)
    yield made
    store.drop_collection(made.name)


@pytest.fixture
def hostile_cwd(tmp_path: Path) -> Path:
    """A directory whose ``schemas`` package shadows the product's when imported from there."""
    where = tmp_path / "cwd"
    (where / "schemas").mkdir(parents=True)
    (where / "schemas" / "__init__.py").write_text(SHADOW)
    (where / "spark_consumers").mkdir()
    (where / "spark_consumers" / "__init__.py").write_text(SHADOW)
    return where


def _requests(spec: CollectionSpec) -> list[Request]:
    def row(i: int) -> tuple[Any, ...]:
        return ("r1", f"e{i % 3}", i)

    return [Append(spec.name, "r1", 1, ((row(i), 1 + i % 2),), 0) for i in range(20)]


@pytest.mark.slow  # about a minute: make test-slow, not make test
def test_consume_in_a_directory_with_a_schemas_package_applies_everything(
    kafka: str,
    endpoints: Any,
    redis: redis_lib.Redis,
    topic: str,
    tmp_path: Path,
    spec: CollectionSpec,
    hostile_cwd: Path,
) -> None:
    requests = _requests(spec)
    producer = KafkaProducer(ProducerConfig(kafka, client_id="cwd-test"))
    for request in requests:
        producer.produce(topic, spec.name.encode(), encode_request(request))
    assert producer.close(30) == 0
    env = consumer_env(kafka, endpoints.redis_url, topic, tmp_path)
    env.pop("PYTHONSAFEPATH", None)  # the test process may have it from its own session
    # The installed command, as an operator runs it: its own directory, not the working
    # directory, is first on the driver's sys.path; the workers are what is tested here.
    command = [str(Path(sys.executable).parent / "collection-manager"), "consumer", "run"]
    log = tmp_path / "consumer.log"
    with open(log, "ab") as out:
        consumer = subprocess.Popen(
            command,
            cwd=hostile_cwd,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    model = ModelStore([spec])
    model.apply_all(requests)
    store = RedisStore(redis)
    try:

        def applied() -> None:
            assert consumer.poll() is None, log.read_text()[-3000:]
            assert store.snapshot(spec.name).rows == model.collection(spec.name).snapshot()[0]

        assert_eventually(applied, timeout=180, interval=1)
        assert store.stats(spec.name)["requests"] == len(requests)
        assert "was imported" not in log.read_text()
    finally:
        if consumer.poll() is None:
            os.killpg(consumer.pid, signal.SIGTERM)
            try:
                consumer.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(consumer.pid, signal.SIGKILL)
                consumer.wait(30)
