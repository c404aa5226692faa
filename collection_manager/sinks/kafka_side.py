"""A sink's Kafka side: its topics, its transactional producer, and the position its last
committed transaction recorded.

Every transaction holds a step's changes and one record of the progress topic (key: the
sink's name; value: the position reached), so the position is committed exactly when the
changes are: a reader with ``isolation.level=read_committed`` sees both or neither, and a
sink that starts again reads the last committed position and goes on from there. The
producer's transactional id is the sink's: ``init_transactions`` of a new process fences
an old one still running and aborts what it left open.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterable
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import NewTopic

from collection_manager.core.cut import Cut, CutError
from collection_manager.core.sinks.spec import SinkError, SinkSpec
from collection_manager.kafka.producer import LIBRDKAFKA_LOGGER
from collection_manager.kafka.security import from_environment
from collection_manager.kafka.topics import admin_client

logger = logging.getLogger(__name__)

Record = tuple[bytes, bytes, list[tuple[str, bytes]]]  # key, value, headers
_TIMEOUT_S = 30.0
# How many of the progress topic's last offsets a start reads first: a committed
# position is among them unless that many aborted records and markers came after it.
_FIRST_WINDOW = 64
# The progress topic keeps the newest record of each key: one per sink, however long it runs.
_PROGRESS_CONFIG = {"cleanup.policy": "compact", "segment.ms": "3600000"}


def _client_settings(bootstrap: str) -> dict[str, Any]:
    return {**from_environment().client_settings(bootstrap), "logger": LIBRDKAFKA_LOGGER}


def prepare_topics(bootstrap: str, spec: SinkSpec, partitions: int) -> None:
    """Creates the sink's topic (``partitions`` of them) and its progress topic.

    Raises:
        SinkError: when the sink's topic exists and holds records (a sink needs a topic
            of its own), or Kafka refuses.
    """
    admin = admin_client(bootstrap)
    try:
        topics = admin.list_topics(timeout=_TIMEOUT_S).topics
    except KafkaException as exc:
        raise SinkError(f"Kafka at {bootstrap} does not answer: {exc}") from None
    if spec.topic in topics:
        held = _records_held(bootstrap, spec.topic, len(topics[spec.topic].partitions))
        if held:
            raise SinkError(
                f"topic {spec.topic} exists and holds {held} records: a sink writes a topic "
                "of its own (give a new name, or delete the topic)"
            )
    wanted = [NewTopic(spec.topic, num_partitions=partitions)]
    if spec.progress_topic not in topics:
        wanted.append(NewTopic(spec.progress_topic, num_partitions=1, config=_PROGRESS_CONFIG))
    wanted = [topic for topic in wanted if topic.topic not in topics]
    for topic, future in admin.create_topics(wanted).items() if wanted else ():
        try:
            future.result(timeout=_TIMEOUT_S)
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise SinkError(f"Kafka did not create topic {topic}: {exc}") from None


def _records_held(bootstrap: str, topic: str, partitions: int) -> int:
    consumer = Consumer({**_client_settings(bootstrap), "group.id": "cm-sink-check"})
    try:
        held = 0
        for partition in range(partitions):
            low, high = consumer.get_watermark_offsets(
                TopicPartition(topic, partition), timeout=_TIMEOUT_S, cached=False
            )
            held += high - low
        return held
    finally:
        consumer.close()


class Publisher:
    """The sink's transactional producer.

    Raises:
        KafkaException: from any call, when Kafka fails it (the caller aborts, makes a new
            publisher and reads the committed position again).
    """

    def __init__(self, bootstrap: str, spec: SinkSpec) -> None:
        self.spec = spec
        self._producer = Producer(
            {
                **_client_settings(bootstrap),
                "transactional.id": spec.transactional_id,
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 5,
                "transaction.timeout.ms": 120_000,
            }
        )
        self._producer.init_transactions(_TIMEOUT_S)
        self._open = False

    def publish(self, records: Iterable[Record], position: Cut, collection: str) -> int:
        """One transaction: ``records`` and the progress record of ``position``; the
        number of records once it is committed."""
        self._producer.begin_transaction()
        self._open, count = True, 0
        for key, value, headers in records:
            self._produce(self.spec.topic, key, value, headers)
            count += 1
        progress = {"position": position.text(), "collection": collection, "ms": _now_ms()}
        self._produce(
            self.spec.progress_topic, self.spec.name.encode(), json.dumps(progress).encode(), []
        )
        self._producer.commit_transaction(_TIMEOUT_S)
        self._open = False
        return count

    def _produce(self, topic: str, key: bytes, value: bytes, headers: list[Any]) -> None:
        while True:
            try:
                self._producer.produce(topic, key=key, value=value, headers=headers)
                return
            except BufferError:  # the local queue is full: let it drain
                self._producer.poll(0.1)

    def abort(self) -> bool:
        """Aborts the open transaction, if any, and if Kafka still can (the next
        publisher's start aborts it otherwise); whether there was one."""
        if not self._open:
            return False
        self._open = False
        try:
            self._producer.abort_transaction(10)
        except KafkaException as exc:
            logger.info("sink %s: abort did not complete: %s", self.spec.name, exc)
        return True


def _now_ms() -> int:
    return int(time.time() * 1000)


def committed_position(bootstrap: str, spec: SinkSpec, buckets: int) -> Cut | None:
    """The position of the sink's last committed transaction; None before the first.

    Call it after a :class:`Publisher` started (its ``init_transactions`` closed what a
    predecessor left open, so every record up to the end of the topic is decided).

    Raises:
        KafkaException: when Kafka does not answer.
        SinkError: when the recorded position is no position of the collection (it was
            dropped and made again with other buckets).
    """
    consumer = Consumer(
        {
            **_client_settings(bootstrap),
            "group.id": f"cm-sink-{spec.name}",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
    )
    try:
        found = _last_value(consumer, spec)
    finally:
        consumer.close()
    if found is None:
        return None
    text = str(json.loads(found)["position"])
    try:
        return Cut.parse(text, buckets)
    except CutError as exc:
        raise SinkError(f"sink {spec.name}: its recorded position {text!r}: {exc}") from None


def _last_value(consumer: Consumer, spec: SinkSpec) -> bytes | None:
    partition = TopicPartition(spec.progress_topic, 0)
    low, high = consumer.get_watermark_offsets(partition, timeout=_TIMEOUT_S, cached=False)
    window = _FIRST_WINDOW
    while high > low:
        start = max(low, high - window)
        consumer.assign([TopicPartition(spec.progress_topic, 0, start)])
        found = _read_to_end(consumer, spec.name.encode())
        if found is not None or start == low:
            return found
        window *= 4
    return None


def _read_to_end(consumer: Consumer, key: bytes) -> bytes | None:
    """The value of the last committed record of ``key`` up to the partition's end."""
    found, deadline = None, time.monotonic() + _TIMEOUT_S
    while time.monotonic() < deadline:
        message = consumer.poll(1.0)
        if message is None:
            continue
        error = message.error()
        if error is not None:
            if error.code() == KafkaError._PARTITION_EOF:
                return found
            raise KafkaException(error)
        if message.key() == key:
            found = message.value()
    raise KafkaException(KafkaError(KafkaError._TIMED_OUT, "reading the progress topic"))
