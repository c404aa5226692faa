"""The demo's run opened: its clients, the collections and the topic it needs, the rows of
earlier runs retracted, and the children's environment; each client is closed when the
run's ``ExitStack`` unwinds."""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Sequence
from pathlib import Path

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from collection_manager import devservices
from collection_manager.config import ConsumerConfig, InfraConfig, ReplicaConfig, env_name, from_env
from collection_manager.control.controller import Controller
from collection_manager.core.filters import eq
from collection_manager.core.requests import Delete
from collection_manager.core.specs import CollectionSpec
from collection_manager.demo.children import Children
from collection_manager.demo.frames import Plan
from collection_manager.demo.observe import Observer
from collection_manager.demo.options import DemoOptions
from collection_manager.demo.phases import DemoError, DemoRun, Reporter
from collection_manager.kafka.producer import KafkaProducer, ProducerConfig
from collection_manager.kafka.security import from_environment
from collection_manager.storage.client import redis_client
from collection_manager.storage.replication import Durability
from collection_manager.storage.store import RedisStore
from producers.routing import messages_for
from schemas.introspection import introspection_specs


def open_run(
    stack: contextlib.ExitStack,
    options: DemoOptions,
    plan: Plan,
    reporter: Reporter,
    infra_config: InfraConfig,
    endpoints: devservices.Endpoints,
    started: float,
) -> DemoRun:
    """The clients and the run's state; each is closed when ``stack`` unwinds."""
    consumer_config = _consumer_config(infra_config)
    replica_config = options.replica_config()
    # Its views read before the consumer it starts has loaded this version's functions.
    store = RedisStore.connect(endpoints.redis_url, load_functions=True)
    controller, producer = _open_controller(stack, endpoints, consumer_config, replica_config)
    _ensure_collections(store, replica_config.collection_suffix)
    _ensure_topic(endpoints.kafka_bootstrap, consumer_config.topic)
    specs = controller.collection_specs(controller.collections)
    _clear_earlier_runs(producer, consumer_config.topic, list(specs.values()), plan)
    observer = _open_observer(stack, store, controller, endpoints, consumer_config)
    children = _open_children(stack, endpoints, consumer_config, replica_config, infra_config)
    return DemoRun(plan, reporter, observer, controller, children, options.timeout_s, started)


def _consumer_config(infra_config: InfraConfig) -> ConsumerConfig:
    # Its own checkpoint even when CM_CHECKPOINT_DIR is set: never an operator's consumer's.
    return dataclasses.replace(from_env(ConsumerConfig), checkpoint_dir=None).with_checkpoint(
        infra_config, query="demo"
    )


def _open_controller(
    stack: contextlib.ExitStack,
    endpoints: devservices.Endpoints,
    consumer_config: ConsumerConfig,
    replica_config: ReplicaConfig,
) -> tuple[Controller, KafkaProducer]:
    """The demo's controller and the producer it publishes with."""
    producer = KafkaProducer(ProducerConfig(endpoints.kafka_bootstrap, "cm-demo-controller"))
    client = redis_client(endpoints.redis_url, socket_connect_timeout=5)
    # The consumer's barrier for its epochs and member records too (CM_REDIS_REPLICA_ACKS):
    # on a Redis with replicas, a failover must not hand out one epoch twice.
    durability = Durability.of(consumer_config)
    controller = Controller(
        producer, client, consumer_config.topic, replica_config, durability=durability
    )
    stack.callback(_close_controller, controller, producer)
    return controller, producer


def _close_controller(controller: Controller, producer: KafkaProducer) -> None:
    controller.close()  # flushes
    # Frees the librdkafka client now: alive until collected, it would print failed
    # reconnects to the broker the demo stops next.
    producer.producer.close()


def _open_observer(
    stack: contextlib.ExitStack,
    store: RedisStore,
    controller: Controller,
    endpoints: devservices.Endpoints,
    consumer_config: ConsumerConfig,
) -> Observer:
    assert consumer_config.checkpoint_dir is not None  # with_checkpoint set it
    observer = Observer(
        store,
        controller,
        endpoints.redis_url,
        endpoints.kafka_bootstrap,
        consumer_config.topic,
        Path(consumer_config.checkpoint_dir),
        controller.collections,
    )
    stack.callback(observer.close)
    return observer


def _open_children(
    stack: contextlib.ExitStack,
    endpoints: devservices.Endpoints,
    consumer_config: ConsumerConfig,
    replica_config: ReplicaConfig,
    infra_config: InfraConfig,
) -> Children:
    env = _child_env(endpoints, consumer_config, replica_config)
    env[env_name("state_dir")] = str(infra_config.state_dir)  # the children's scratch too
    children = Children(infra_config.state_dir / "logs", env)
    # Stopped before the services go down: the agents say goodbye through Kafka.
    stack.callback(children.stop)
    return children


def _ensure_collections(store: RedisStore, suffix: str) -> None:
    existing = set(store.collections())
    for spec in introspection_specs():
        if spec.name + suffix not in existing:
            store.create_collection(dataclasses.replace(spec, name=spec.name + suffix))


def _ensure_topic(bootstrap: str, topic: str) -> None:
    """Creates the requests topic with the broker's defaults unless it exists.

    The consumer fails on a topic that does not exist yet, and the agents may start after it.
    """
    # Warnings and errors only: its informational lines would print across the live view.
    admin = AdminClient({**from_environment().client_settings(bootstrap), "log_level": 4})
    try:
        admin.create_topics([NewTopic(topic)])[topic].result(30)
    except KafkaException as exc:
        if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
            raise DemoError(f"cannot create the topic: {exc}", topic=topic) from exc


def _clear_earlier_runs(
    producer: KafkaProducer, topic: str, collections: Sequence[CollectionSpec], plan: Plan
) -> None:
    """Retracts rows the demo's replica ids hold from before, whoever published them.

    The controller retracts an incarnation it knows when the replica is added again, but
    rows published without it (an older demo, a test) would stay and fail the comparison.
    Keyed by their unit (the collection, or in one bucketed by ``replica_id`` the replica's
    bucket) and sent to its partition, these deletes precede every append of this run there.
    """
    for replica in plan.fates:
        for spec in collections:
            delete = Delete(spec.name, eq("replica_id", replica), "demo: rows of an earlier run")
            for message in messages_for(delete, spec):
                producer.produce(topic, message.key, message.value, partition=message.partition)
    if producer.flush(30):
        raise DemoError("the demo's clean-up deletes were not acknowledged", topic=topic)


def _child_env(
    endpoints: devservices.Endpoints, consumer: ConsumerConfig, replicas: ReplicaConfig
) -> dict[str, str]:
    """The environment of every child: the demo's services and exactly its settings."""
    env = dict(os.environ)
    env[env_name("kafka_bootstrap")] = endpoints.kafka_bootstrap
    env[env_name("redis_url")] = endpoints.redis_url
    for config in (consumer, replicas):
        for name, value in dataclasses.asdict(config).items():
            env[env_name(name)] = "" if value is None else str(value)
    return env
