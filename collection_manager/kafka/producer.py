"""A thin wrapper over ``confluent_kafka.Producer`` for the replica agent (STYLE 6).

It enforces what correctness rests on (idempotence, ``acks=all``, Java-compatible key
partitioning: docs/concepts/requests-and-ordering.md), counts every delivery outcome
(``deliveries.py``), and purges its local queue when a subscribe is cancelled
(docs/concepts/epochs-and-fences.md), after which it accepts no more messages. ``purge()`` is
producer-wide: give each subscribe its own ``KafkaProducer``.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Message, Producer

from collection_manager.core.shutdown import Cancelled
from collection_manager.kafka.deliveries import DeliveryOutcomes, DeliveryStats, broker_outage
from collection_manager.kafka.errors import ProducerError, ProducerQueueFullError
from collection_manager.kafka.security import from_environment

logger = logging.getLogger(__name__)
# The logger that receives librdkafka's own log lines (every client of this project).
LIBRDKAFKA_LOGGER = logging.getLogger("librdkafka")

DeliveryCallback = Callable[[KafkaError | None, Message], None]
OptionValue = str | int | float | bool

# Applied last, over anything the caller passed: ordering and exactly-once rest on them.
ENFORCED: Mapping[str, str] = MappingProxyType(
    {"enable.idempotence": "true", "acks": "all", "partitioner": "murmur2_random"}
)
_SECRET_WORDS = ("password", "secret", "token", "key")


@dataclasses.dataclass(frozen=True)
class ProducerConfig:
    """How the agent's producer connects and batches.

    Attributes:
        bootstrap: Kafka bootstrap servers.
        client_id: client id shown in broker logs and metrics.
        linger_ms: how long librdkafka waits to fill a batch.
        batch_size: maximum bytes of one batch.
        queue_max_messages: local queue limit (messages); beyond it ``produce`` retries.
        queue_max_kbytes: local queue limit (KiB).
        buffer_full_retries: how often ``produce`` retries on a full queue before failing.
        buffer_full_poll_s: how long each retry serves delivery reports to free space.
        extra: further librdkafka options; they override the fields above, but never
            ``ENFORCED``. Not shown by ``repr`` since it may hold credentials.
        security: TLS and SASL options (``collection_manager/kafka/security.py``); by
            default this process's settings. Not shown by ``repr``.
    """

    bootstrap: str
    client_id: str = "collection-manager-agent"
    linger_ms: int = 5
    batch_size: int = 1_000_000
    queue_max_messages: int = 100_000
    queue_max_kbytes: int = 1_048_576
    buffer_full_retries: int = 1000
    buffer_full_poll_s: float = 0.01
    extra: Mapping[str, OptionValue] = dataclasses.field(default_factory=dict, repr=False)
    security: Mapping[str, str] = dataclasses.field(
        default_factory=lambda: from_environment().settings, repr=False
    )

    def __post_init__(self) -> None:
        # A private read-only copy: the caller mutating its dict must not change us.
        object.__setattr__(self, "extra", MappingProxyType(dict(self.extra)))
        object.__setattr__(self, "security", MappingProxyType(dict(self.security)))

    def to_librdkafka(self) -> dict[str, OptionValue]:
        """The librdkafka option dict: defaults < ``extra`` < ``ENFORCED``."""
        for name, value in ENFORCED.items():
            given = self.extra.get(name)
            if given is not None and str(given).lower() != value:
                logger.warning("producer option %s=%r ignored: enforced %s", name, given, value)
        return self._merged()

    def _merged(self) -> dict[str, OptionValue]:
        merged: dict[str, OptionValue] = {
            "bootstrap.servers": self.bootstrap,
            "client.id": self.client_id,
            "linger.ms": self.linger_ms,
            "batch.size": self.batch_size,
            "queue.buffering.max.messages": self.queue_max_messages,
            "queue.buffering.max.kbytes": self.queue_max_kbytes,
            # After a broker restart, reconnect within a second (librdkafka waits up to
            # 10 s): queued heartbeats then reach the log about as soon as the
            # controller's ticks, which otherwise could pass a lease's TTL first.
            "reconnect.backoff.max.ms": 1000,
        }
        return {**merged, **self.security, **self.extra, **ENFORCED}

    def redacted(self) -> dict[str, OptionValue]:
        """The librdkafka options with credentials masked, for logs."""
        return {
            name: "***" if any(word in name for word in _SECRET_WORDS) else value
            for name, value in self._merged().items()
        }


class KafkaProducer:
    """The agent's producer: lazy, idempotent, counting, purgeable.

    Args:
        config: connection and batching settings.
        factory: builds the underlying producer from the librdkafka dict (tests swap it).
    """

    def __init__(
        self, config: ProducerConfig, factory: Callable[[dict[str, Any]], Producer] = Producer
    ) -> None:
        self.config = config
        self._factory = factory
        self._producer: Producer | None = None
        self._outage = broker_outage(config.bootstrap)
        self._outcomes = DeliveryOutcomes(self._outage)
        # Held around producer creation, each single produce() call and purge(), so no
        # message can enter the queue between a purge and the fuse it sets.
        self._lock = threading.Lock()
        self._fused: str | None = None
        self._fatal: KafkaError | None = None

    def __len__(self) -> int:
        """Messages queued locally or in flight, and delivery reports not yet served."""
        return 0 if self._producer is None else len(self._producer)

    @property
    def producer(self) -> Producer:
        """The underlying ``confluent_kafka.Producer``, created on first use."""
        with self._lock:
            return self._ensure()

    def _ensure(self) -> Producer:
        if self._producer is None:
            options: dict[str, Any] = dict(self.config.to_librdkafka())
            options["error_cb"] = self._on_error
            # librdkafka's own log lines go through Python logging, never raw to stderr.
            options["logger"] = LIBRDKAFKA_LOGGER
            logger.info("creating producer %s", self.config.redacted())
            try:
                self._producer = self._factory(options)
            except KafkaException as exc:
                raise ProducerError(f"invalid producer configuration: {exc}") from exc
        return self._producer

    def _on_error(self, err: KafkaError) -> None:
        # Most client errors are transient and retried by librdkafka; a fatal one (e.g. the
        # idempotent producer lost its sequence) makes every later produce() fail loudly.
        if err.fatal():
            self._fatal = err
            logger.error("fatal producer error: %s", err.str())
        else:
            self._outage.failed(err.str())

    def stats(self) -> DeliveryStats:
        """Delivery outcome counts so far."""
        return self._outcomes.snapshot()

    def produce(
        self,
        topic: str,
        key: bytes,
        value: bytes,
        on_delivery: DeliveryCallback | None = None,
        headers: Sequence[tuple[str, bytes]] = (),
        partition: int | None = None,
    ) -> None:
        """Queues one message, then serves delivery reports; on a full queue it serves reports
        for ``buffer_full_poll_s`` and tries again, at most ``buffer_full_retries`` times.

        Args:
            topic: destination topic.
            key: message key (the collection id: one collection, one partition).
            value: encoded request.
            on_delivery: called with ``(err, msg)`` after the outcome was counted.
            headers: message headers (the dead-letter path carries its context in them).
            partition: the partition, for a message that must reach one (the controller's
                ticks); None lets the key choose.

        Raises:
            Cancelled: the producer was purged; it accepts no more messages.
            ProducerQueueFullError: the queue stayed full through every retry.
            ProducerError: librdkafka refused the message or failed fatally.
        """
        callback = self._callback(on_delivery)
        for _attempt in range(self.config.buffer_full_retries + 1):
            with self._lock:
                producer = self._check_usable(topic)
                queued = self._try_produce(
                    producer, topic, (key, value, partition), callback, headers
                )
            # Outside the lock: a delivery callback may itself produce.
            if queued:
                producer.poll(0)
                return
            producer.poll(self.config.buffer_full_poll_s)
        raise ProducerQueueFullError(topic, len(producer), self.config.buffer_full_retries)

    def _try_produce(
        self,
        producer: Producer,
        topic: str,
        message: tuple[bytes, bytes, int | None],
        callback: DeliveryCallback,
        headers: Sequence[tuple[str, bytes]],
    ) -> bool:
        key, value, partition = message
        options: dict[str, Any] = {"on_delivery": callback, "headers": list(headers) or None}
        if partition is not None:  # else the partitioner picks one by key
            options["partition"] = partition
        try:
            producer.produce(topic, value=value, key=key, **options)
        except BufferError:
            return False
        except KafkaException as exc:
            raise ProducerError(f"produce to {topic!r} refused: {exc}", topic=topic) from exc
        self._outcomes.produced += 1  # only ever under self._lock
        return True

    def _check_usable(self, topic: str) -> Producer:
        if self._fused is not None:
            raise Cancelled(self._fused, token=f"producer to {topic}")
        if self._fatal is not None:
            raise ProducerError(f"producer failed fatally: {self._fatal.str()}", topic=topic)
        return self._ensure()

    def _callback(self, user: DeliveryCallback | None) -> DeliveryCallback:
        if user is None:
            return self._outcomes.record

        def both(err: KafkaError | None, msg: Message) -> None:
            self._outcomes.record(err, msg)
            user(err, msg)

        return both

    def poll(self, timeout: float = 0) -> int:
        """Serves delivery reports for up to ``timeout`` seconds; returns how many."""
        return 0 if self._producer is None else int(self._producer.poll(timeout))

    def flush(self, timeout: float | None = None) -> int:
        """Waits for queued messages to be delivered; returns how many are still queued."""
        if self._producer is None:
            return 0
        return int(self._producer.flush(-1 if timeout is None else timeout))

    def purge(self, reason: str = "purged") -> int:
        """Drops the messages still in the local queue and fuses the producer.

        Uses ``purge(in_queue=True, in_flight=False, blocking=True)``: queued messages were
        never sent, so dropping them is safe and stops them for good. In-flight messages
        are on the wire already; purging them would not unsend them, only void their
        acknowledgements (we could no longer count them), so they finish and are counted as
        delivered or failed; the consumer's fence drops them if the replica is gone.
        ``blocking`` waits until librdkafka's broker threads dropped their queues too.

        Args:
            reason: why; raised (as :class:`Cancelled`) by every later :meth:`produce`.

        Returns:
            Messages purged so far (reports served by another polling thread included).
        """
        with self._lock:
            self._fused = self._fused or reason
            if self._producer is None:
                return 0
            self._producer.purge(in_queue=True, in_flight=False, blocking=True)
        # The purged messages' reports arrive as a few batched events, not always all at
        # once: serve until none is ready. Reports arriving later still reach stats().
        while self._producer.poll(0):
            pass
        purged = self.stats().purged
        logger.info("purged %d queued messages (%s); %d still in flight", purged, reason, len(self))
        return purged

    def close(self, timeout: float = 30.0) -> int:
        """Flushes; returns (and logs) how many messages were still queued at the timeout."""
        remaining = self.flush(timeout)
        stats = self.stats()
        log = logger.error if remaining or stats.failed else logger.info
        log("producer closed: %s, %d undelivered at close", stats, remaining)
        return remaining
