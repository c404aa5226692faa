"""Real services for the whole run: Kafka, Redis, the Docker engine, and Spark.

``CM_TEST_SERVICES`` chooses how Kafka and Redis are provided:

- ``processes`` (the default): configured services (``CM_KAFKA_BOOTSTRAP``,
  ``CM_REDIS_URL``) are used as they are; else the ones a developer started with
  ``collection-manager infra up`` are reused; else local processes are started for this
  run and stopped at its end.
- ``containers``: testcontainers of the project's images on a Docker engine
  (``tests/integration/engine.py``), removed at the run's end.

Kafka, Redis and the engine are shared by the run's xdist workers (``shared.py``); each
worker has a Spark session of its own. Services of a test's own (``own_service``) are of
the same kind as the run's.
"""

from __future__ import annotations

import dataclasses
import uuid
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis as redis_lib
from confluent_kafka.admin import AdminClient, NewTopic

from collection_manager import devservices
from collection_manager.config import InfraConfig, SparkConfig, from_env
from collection_manager.core.specs import CollectionSpec
from collection_manager.kafka.errors import TopicConfigError
from collection_manager.kafka.identity import topic_identity
from collection_manager.storage.client import redis_client
from collection_manager.storage.library import install
from collection_manager.storage.store import RedisStore
from tests.integration import engine as docker_engine_lib
from tests.integration import shared as shared_lib
from tests.integration.consumer_process import stop_leftovers
from tests.integration.own_services import OwnService, services_kind, start_own_service
from tests.integration.service_containers import ServiceContainer
from tests.integration.workload import create_specs
from tests.support import assert_eventually
from tests.unit.strategies import FRONTIERS

INTEGRATION_DIR = Path(__file__).parent
SERVICE_KINDS = ("processes", "containers")


def pytest_configure(config: pytest.Config) -> None:
    if services_kind() not in SERVICE_KINDS:
        raise pytest.UsageError(
            f"CM_TEST_SERVICES={services_kind()!r}: expected one of {', '.join(SERVICE_KINDS)}"
        )


def pytest_report_header() -> str:
    return f"services: {services_kind()} (CM_TEST_SERVICES)"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if INTEGRATION_DIR in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.integration)


@pytest.fixture(autouse=True)
def no_consumer_outlives_its_test() -> Iterator[None]:
    """A test's ``consume`` processes are stopped when it ends, whatever it forgot: a
    consumer left running would apply the next tests' requests and stay behind after CI."""
    yield
    left = stop_leftovers()
    if left:
        warnings.warn(f"{left} consume process(es) outlived the test; killed", stacklevel=1)


@pytest.fixture(scope="session")
def infra_config() -> InfraConfig:
    return from_env(InfraConfig)


@pytest.fixture(scope="session")
def run_dir(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Path:
    """The directory the xdist workers of this run share (``tests/integration/shared.py``)."""
    return shared_lib.run_dir(tmp_path_factory, worker_id)


@pytest.fixture(scope="session")
def docker_engine(infra_config: InfraConfig) -> Iterator[docker_engine_lib.Engine]:
    """A Docker engine with the project's images; testcontainers find it (no Ryuk: its
    image is on a registry, and every container here is removed by its fixture)."""
    with (
        shared_lib.shared(
            "docker-engine",
            infra_config.state_dir / "docker",  # shared by runs that overlap
            lambda: dataclasses.asdict(docker_engine_lib.prepare(infra_config.state_dir)),
            lambda engine: docker_engine_lib.release(docker_engine_lib.Engine(**engine)),
        ) as engine,
        pytest.MonkeyPatch.context() as patch,
    ):
        patch.setenv("DOCKER_HOST", engine["env"]["DOCKER_HOST"])
        patch.setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
        yield docker_engine_lib.Engine(**engine)


def _start_services(infra_config: InfraConfig) -> dict[str, Any]:
    """Kafka and Redis of this run's kind, as JSON: addresses and how to stop them."""
    if services_kind() == "containers":
        kafka = ServiceContainer.kafka()
        try:
            redis = ServiceContainer.redis()
        except BaseException:
            kafka.remove()
            raise
        return {"kafka": kafka.address, "redis": redis.address, "containers": [kafka.id, redis.id]}
    found = devservices.up(infra_config)
    return {"kafka": found.kafka_bootstrap, "redis": found.redis_url, "started": found.started}


def _stop_services(infra_config: InfraConfig, services: dict[str, Any]) -> None:
    for container in services.get("containers", []):
        ServiceContainer.remove_by_id(container)
    devservices.down(infra_config, tuple(services.get("started", ())))


@pytest.fixture(scope="session")
def endpoints(
    infra_config: InfraConfig, run_dir: Path, request: pytest.FixtureRequest
) -> Iterator[devservices.Endpoints]:
    """Kafka and Redis, started once per run and shared by every worker; local processes
    are shared with runs that overlap too (they are recorded in the state directory, where
    ``infra up`` finds them, so one run must not stop them under the other)."""
    containers = services_kind() == "containers"
    if containers:
        request.getfixturevalue("docker_engine")
    with shared_lib.shared(
        "test-services",  # not services.json, the record of `infra up` beside it
        run_dir if containers else infra_config.state_dir,
        lambda: _start_services(infra_config),
        lambda services: _stop_services(infra_config, services),
    ) as services:
        yield devservices.Endpoints(services["kafka"], services["redis"])


@pytest.fixture(scope="module")
def module_redis(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[OwnService]:
    """A Redis of the module's own, for tests that no other test may touch at the same
    moment (in the other xdist worker): some replace what all tests share (the functions
    library), or run with the defaults other tests' processes use too (the demo)."""
    server = start_own_service("redis", request, tmp_path_factory.mktemp("module-redis"))
    yield server
    server.stop()


@pytest.fixture(scope="module")
def module_redis_client(module_redis: OwnService) -> Iterator[redis_lib.Redis]:
    client = redis_client(module_redis.address)
    yield client
    client.close()


@pytest.fixture
def own_service(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[Callable[[str], OwnService]]:
    """Starts a ``redis`` or ``kafka`` of the test's own, of the session's kind; stops it after."""
    started: list[OwnService] = []

    def start(kind: str) -> OwnService:
        started.append(start_own_service(kind, request, tmp_path))
        return started[-1]

    yield start
    for service in started:
        service.stop()


@pytest.fixture(scope="session")
def kafka(endpoints: devservices.Endpoints) -> str:
    """Bootstrap servers of a real broker."""
    return endpoints.kafka_bootstrap


@pytest.fixture(scope="session")
def redis(endpoints: devservices.Endpoints) -> Iterator[redis_lib.Redis]:
    """A client of a real Redis, with this version's store functions loaded (as ``consume``
    loads them; reads never do)."""
    client = redis_client(endpoints.redis_url)
    install(client)
    yield client
    client.close()


@pytest.fixture(scope="session")
def spark(infra_config: InfraConfig) -> Iterator[Any]:
    """A real SparkSession with Spark's Kafka source."""
    from spark_consumers.session import build_spark_session

    session = build_spark_session(from_env(SparkConfig), infra_config, "collection-manager-tests")
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture
def unique(request: pytest.FixtureRequest) -> str:
    """A name no other test uses: for topic names and key prefixes."""
    return f"{request.node.name[:40]}-{uuid.uuid4().hex[:8]}".replace("[", "-").replace("]", "")


@pytest.fixture
def topic(kafka: str, unique: str) -> Iterator[str]:
    """A fresh topic with 4 partitions, deleted after the test."""
    admin = AdminClient({"bootstrap.servers": kafka})
    name = f"t-{unique}"
    admin.create_topics([NewTopic(name, num_partitions=4, replication_factor=1)])[name].result(30)
    # Created is not yet described: a consumer started at once (as tests start the query)
    # met "unknown topic or partition" while the broker's metadata caught up.
    assert_eventually(lambda: _described(admin, name), timeout=30)
    yield name
    admin.delete_topics([name])[name].result(30)


def _described(admin: AdminClient, topic: str) -> None:
    try:
        topic_identity(admin, topic)
    except TopicConfigError as exc:
        raise AssertionError(str(exc)) from exc


@pytest.fixture
def frontiers_spec(redis: redis_lib.Redis, unique: str) -> Iterator[CollectionSpec]:
    """A collection of the unit tests' ``FRONTIERS`` schema of this test only."""
    made = dataclasses.replace(FRONTIERS, name=f"frontiers-{unique}")
    store = RedisStore(redis)
    store.create_collection(made)
    yield made
    store.drop_collection(made.name)


@pytest.fixture
def workload_specs(redis: redis_lib.Redis, unique: str) -> Iterator[list[CollectionSpec]]:
    """The collections of ``tests/integration/workload.py``, dropped after the test."""
    store = RedisStore(redis)
    made = create_specs(store, unique)
    yield made
    for spec in made:
        store.drop_collection(spec.name)
