"""``sinks run``: the loop that publishes one sink's changes (docs/concepts/sinks.md).

At its start the sink makes its transactional producer (fencing any older process of the
same sink) and reads the position of its last committed transaction. Without one it
publishes the collection's rows at one consistent time first, as changes whose diff is
each row's multiplicity: its topic then adds up to the collection from the first
transaction on. Then, round after round, it reads how far the change log is readable
whole, and publishes the changes from its position to there (``core/sinks/steps.py``
cuts them into transactions), each transaction with the position it reaches.

A Redis or Kafka outage is waited out: the open transaction is aborted, and once both
answer the sink starts again from its committed position, so nothing is lost or doubled.
What waiting cannot mend stops the sink with one line: its collection dropped or made
again, its position trimmed from the change log, a bucketed step too large.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Iterator

import redis
from confluent_kafka import KafkaException

from collection_manager.config import SinkConfig
from collection_manager.core.buckets import bucket_of
from collection_manager.core.cut import Cut
from collection_manager.core.errors import LogTrimmedError
from collection_manager.core.outages import OutageLog
from collection_manager.core.sinks.spec import SinkError, SinkSpec
from collection_manager.core.sinks.steps import Placed, transactions
from collection_manager.core.specs import CollectionSpec, Row
from collection_manager.core.stepped_read import Change
from collection_manager.sinks import metrics
from collection_manager.sinks.kafka_side import Publisher, Record, committed_position
from collection_manager.sinks.records import CUT_HEADER, Encoder, key_of
from collection_manager.storage.client import REDIS_FAULTS
from collection_manager.storage.reads import StoreReader
from collection_manager.storage.sinks import changes_between, check_held, readable_cut

logger = logging.getLogger(__name__)

_BACKOFF_S = (0.5, 10.0)  # first and longest wait while Kafka or Redis is away
# What an outage raises: waited out. Anything else is the sink's own problem, said once.
_OUTAGES: tuple[type[Exception], ...] = (KafkaException, *REDIS_FAULTS)


class SinkProcess:
    """Publishes ``spec``'s changes until stopped.

    Args:
        spec: the sink.
        client: the pipeline's Redis.
        bootstrap: the Kafka cluster of the sink's topics.
        config: the poll interval and the transactions' bound.
    """

    def __init__(
        self, spec: SinkSpec, client: redis.Redis, bootstrap: str, config: SinkConfig
    ) -> None:
        self.spec, self._client, self._bootstrap, self._config = spec, client, bootstrap, config
        self._store = StoreReader(client)
        self._outage = OutageLog(logger, f"sink {spec.name}")
        self.position: Cut | None = None
        self.behind: int | None = None
        self.last_round_ms: int | None = None
        self._delay = _BACKOFF_S[0]

    def run(self, stop: threading.Event, went_round: Callable[[], None] = lambda: None) -> None:
        """Publishes until ``stop`` is set, waiting out outages.

        Raises:
            SinkError, CollectionManagerError: what waiting cannot mend, said in one line.
        """
        while not stop.is_set():
            try:
                self._publish_until(stop, went_round)
            except _OUTAGES as exc:
                self._outage.failed(exc)
                metrics.OUTAGE.labels(self.spec.name).set(1)
                stop.wait(self._delay)
                self._delay = min(self._delay * 2, _BACKOFF_S[1])
                continue
            return

    def _publish_until(self, stop: threading.Event, went_round: Callable[[], None]) -> None:
        collection = self._store.spec(self.spec.collection)
        publisher = Publisher(self._bootstrap, self.spec)
        session = _Session(publisher, collection, Encoder(collection, self.spec.format))
        try:
            position = committed_position(self._bootstrap, self.spec, collection.buckets)
            if position is None:
                position = self._publish_snapshot(session)
            self._went_well(position, went_round)
            while not stop.is_set():
                reached = self._publish_step(session, position)
                self._went_well(reached, went_round)
                if reached == position:
                    stop.wait(self._config.sink_poll_interval_ms / 1000)
                position = reached
        except BaseException:
            if publisher.abort():
                metrics.ABORTS.labels(self.spec.name).inc()
            raise

    def _went_well(self, position: Cut, went_round: Callable[[], None]) -> None:
        self.position, self.last_round_ms = position, int(time.time() * 1000)
        self._delay = _BACKOFF_S[0]
        if self._outage.ongoing:
            self._outage.succeeded()
        metrics.OUTAGE.labels(self.spec.name).set(0)
        went_round()

    def _publish_snapshot(self, session: _Session) -> Cut:
        """The collection's rows at one consistent time, in one transaction."""
        collection = session.collection
        snapshot = self._store.stepped_snapshot(collection.name)
        position = snapshot.cut if snapshot.cut is not None else Cut((snapshot.as_of,))
        placed: list[Placed[Row]] = []
        for row, count in snapshot.rows.items():
            bucket = None
            if collection.buckets > 1:
                bucket = bucket_of(row[collection.bucket_position], collection.buckets)
            placed.append((bucket, Change(position.times[bucket or 0], row, count)))
        self._commit(session, placed, position)
        logger.info(
            "sink %s: published %s's %d rows at %s, then follows its changes",
            self.spec.name,
            collection.name,
            len(placed),
            position.text(),
        )
        return position

    def _publish_step(self, session: _Session, position: Cut) -> Cut:
        """The changes from ``position`` to where the log is readable whole now; the
        position reached (``position`` itself when there was nothing to publish)."""
        collection = session.collection
        if self._store.spec(collection.name) != collection:
            raise SinkError(
                f"sink {self.spec.name}: collection {collection.name} was dropped or made "
                "again; drop the sink and create it again (its topic starts anew)"
            )
        until = readable_cut(self._client, collection)
        self._set_behind(until, position)
        if until == position or any(
            u < p for u, p in zip(until.times, position.times, strict=True)
        ):
            return position  # nothing new (or a delete's time still being written)
        changes = changes_between(self._client, collection, position, until)
        bound = self._config.sink_max_transaction_changes
        for batch, reached in transactions(changes, until, collection.buckets > 1, bound):
            self._check_kept(collection, position)
            self._commit(session, batch, reached)
            position = reached
            self._set_behind(until, position)
        return position

    def _set_behind(self, until: Cut, position: Cut) -> None:
        self.behind = max(0, until.total - position.total)
        metrics.BEHIND.labels(self.spec.name).set(self.behind)

    def _check_kept(self, collection: CollectionSpec, position: Cut) -> None:
        """Every change after ``position`` is still in the log (so the read just made got
        them all: trimming only takes the oldest)."""
        try:
            check_held(self._client, collection, position)
        except LogTrimmedError as exc:
            raise SinkError(
                f"sink {self.spec.name} fell behind the change log's retention: {exc}. Its "
                "topic cannot go on without a gap: drop the sink and create one with a new "
                "topic, which starts with the collection's rows (docs/concepts/sinks.md)"
            ) from None

    def _commit(self, session: _Session, placed: list[Placed[Row]], position: Cut) -> None:
        records = _records(session.encoder, placed, position.text())
        count = session.publisher.publish(records, position, session.collection.name)
        metrics.CHANGES.labels(self.spec.name).inc(count)
        metrics.TRANSACTIONS.labels(self.spec.name).inc()
        metrics.LAST_COMMIT.labels(self.spec.name).set(time.time())


@dataclasses.dataclass(frozen=True)
class _Session:
    """What one producer's life publishes with: it, the collection as it was read at its
    start (a change of it stops the sink), and the collection's encoder."""

    publisher: Publisher
    collection: CollectionSpec
    encoder: Encoder


def _records(encoder: Encoder, placed: list[Placed[Row]], cut: str) -> Iterator[Record]:
    headers = [(CUT_HEADER, cut.encode())]
    for bucket, change in placed:
        value = encoder.value(change.row, change.diff, change.time, bucket, cut)
        yield key_of(change.row), value, headers
