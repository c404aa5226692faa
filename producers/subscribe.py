"""One introspection subscribe of a replica agent: a source, a thread, a token, a producer.

The subscribe publishes its source's snapshot, then its changes at a fixed interval, as
``Append`` requests keyed by their storage unit (so they are applied in order): the
collection, or for a bucketed collection the bucket each part is for (``producers/routing.py``;
by ``replica_id``, all of one agent's rows lie in one bucket), produced to that bucket's
partition when the collection's buckets were assigned partitions. Cancelling it
(:meth:`Subscribe.cancel`, or its parent token) stops emission before the next batch, also
in the middle of a snapshot, and purges what its producer still queues
(docs/concepts/epochs-and-fences.md): that
is why each subscribe owns its producer, since a purge empties the whole producer.

With a TTL (docs/concepts/ttl-and-expiration.md), every request carries it, and every step also
names each current row with a zero diff: a refresh, so the rows expire only once the agent is
silent. They go on after ``max_steps``, until cancelled. A subscribe that itself was silent for half
its TTL (the process was stopped or starved) stops the agent: its rows may have expired meanwhile,
and its next changes would retract rows that are gone. Its lease then expires and the controller
removes it; a new incarnation starts from a snapshot.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Protocol

from confluent_kafka import KafkaError

from collection_manager.core.requests import Append
from collection_manager.core.shutdown import Cancelled, ShutdownToken, guard
from collection_manager.core.specs import CollectionSpec
from collection_manager.kafka.deliveries import PURGE_CODES
from collection_manager.kafka.producer import KafkaProducer
from producers.batching import PublishedState, append_batches, bucket_parts, with_replica
from producers.routing import key_for, partition_for
from producers.simulated import Row, Update, apply_updates
from schemas.codec import encode_request

logger = logging.getLogger(__name__)

_DRAIN_S = 1.0

MIN_TTL_STEPS = 4
"""A TTL spans this many step intervals at least: a subscribe stops the agent when silent
for half its TTL, and a step that is merely late must not do that."""


class Source(Protocol):
    """A source of differential updates, by collection (rows without ``replica_id``)."""

    def snapshot(self) -> Mapping[str, Sequence[Update]]:
        """The current state, as insertions."""
        ...

    def step(self) -> Mapping[str, Sequence[Update]]:
        """The changes since the last snapshot or step."""
        ...


@dataclasses.dataclass(frozen=True)
class Publishing:
    """What every subscribe of one agent incarnation shares.

    Attributes:
        replica_id: prepended to every row; also in every request.
        epoch: the incarnation, in every request (the consumer fences old ones).
        topic: the requests topic.
        batch_rows: at most this many updates per request.
        step_interval_ms: time between two steps.
        max_steps: stop publishing after this many steps (None: until cancelled).
        clock: ms since the Unix epoch, for ``produced_at``.
    """

    replica_id: str
    epoch: int
    topic: str
    batch_rows: int
    step_interval_ms: int
    max_steps: int | None
    clock: Callable[[], int]


class Subscribe:
    """Publishes one collection of one source until cancelled.

    Args:
        collection: the collection it publishes to.
        source: the source; only its ``source_collection`` updates are published.
        source_collection: which of the source's collections.
        publishing: the agent incarnation's settings.
        producer: this subscribe's own producer.
        token: this subscribe's token (a child of the agent's).
        published: where acknowledged requests are recorded.
        on_failure: called with a reason when the source or producer fails.
        ttl_ms: the TTL every request carries, or None.
        monotonic: seconds, for the silence check (tests pass a scripted one).
        spec: the collection's definition in the catalog, read once at start, which routes
            each request to its buckets; None: unbucketed, keyed by the collection.
    """

    def __init__(
        self,
        collection: str,
        source: Source,
        source_collection: str,
        publishing: Publishing,
        producer: KafkaProducer,
        token: ShutdownToken,
        published: PublishedState,
        on_failure: Callable[[str], None],
        ttl_ms: int | None = None,
        monotonic: Callable[[], float] = time.monotonic,
        spec: CollectionSpec | None = None,
    ) -> None:
        self.collection = collection
        self._spec = spec
        self.token = token
        self.producer = producer
        self._source = source
        self._source_collection = source_collection
        self._publishing = publishing
        self._published = published
        self._on_failure = on_failure
        self._ttl_ms = ttl_ms
        self._monotonic = monotonic
        self._idle_since: float | None = None  # when it last handed work to the producer
        self._undelivered: str | None = None  # why a request failed for good, if one did
        self._rows: Counter[Row] = Counter()  # what it published, for refreshes
        self._settled = threading.Event()
        self.steps = 0
        self.updates_delivered = 0  # non-zero updates the broker acknowledged (metrics)
        self._thread = threading.Thread(target=self._run, name=f"subscribe-{collection}")

    def start(self) -> None:
        """Starts publishing in the subscribe's thread."""
        self._thread.start()

    def cancel(self, reason: str) -> None:
        """Stops emission and drops what the producer still queues, from the calling thread."""
        self.token.cancel(reason)
        self.producer.purge(reason)

    def join(self, timeout: float | None = None) -> None:
        """Waits for the thread to end (unless called from it)."""
        if self._thread is not threading.current_thread() and self._thread.is_alive():
            self._thread.join(timeout)

    @property
    def alive(self) -> bool:
        """Whether the thread still runs."""
        return self._thread.is_alive()

    @property
    def settled(self) -> bool:
        """Whether it published its ``max_steps`` and the broker acknowledged them all."""
        return self._settled.is_set()

    def _run(self) -> None:
        try:
            self._publish(self._source.snapshot())
            interval_s = self._publishing.step_interval_ms / 1000
            while not self._done() and not self.token.wait(interval_s):
                self._publish(self._source.step())
                self.steps += 1
            if not self.token.cancelled:
                self.producer.flush()  # every step is out: the state is final
                self._check_delivered()
                self._settled.set()
                self._idle_since = self._monotonic()
            while self._ttl_ms is not None and not self.token.wait(interval_s):
                self._publish({})  # refreshes only: the rows stay while the agent lives
        except Cancelled:
            logger.info("subscribe %s stopped: %s", self.collection, self.token.reason)
        except Exception as exc:  # a failed source must stop the agent, not hide
            logger.exception("subscribe %s failed", self.collection)
            self._on_failure(f"subscribe {self.collection} failed: {exc!r}")
        finally:
            if self.token.cancelled:
                self.producer.purge(self.token.reason or "cancelled")
                # Nothing more leaves; serve the reports of what was already in flight, so
                # the published state counts it and no producer dies with it in transit.
                self.producer.flush(_DRAIN_S)

    def _done(self) -> bool:
        limit = self._publishing.max_steps
        return limit is not None and self.steps >= limit

    def _publish(self, updates: Mapping[str, Sequence[Update]]) -> None:
        settings = self._publishing
        self._check_delivered()
        tagged: Iterable[Update] = with_replica(
            settings.replica_id, updates.get(self._source_collection, ())
        )
        if self._ttl_ms is not None:  # small collections: listed, to add the refreshes
            self._check_silence()
            tagged = self._with_refreshes(list(tagged))
        batches = append_batches(
            self.collection,
            settings.replica_id,
            settings.epoch,
            tagged,
            settings.batch_rows,
            settings.clock(),
            self._ttl_ms,
        )
        for append in guard(batches, self.token):
            # The parts of one append leave together: the token is checked between appends.
            for part in bucket_parts(append, self._spec):
                self.producer.produce(
                    settings.topic,
                    key_for(part),
                    encode_request(part),
                    on_delivery=self._recorder(part),
                    partition=partition_for(part, self._spec),  # its bucket's, when assigned
                )
        if self._ttl_ms is not None:
            self._idle_since = self._monotonic()

    def _check_silence(self) -> None:
        """Stops the agent when the time since it last handed work to the producer is over
        half the TTL. Time blocked in the producer (a broker outage) does not count: the
        producer holds the refreshes, and the consumer expires nothing meanwhile."""
        assert self._ttl_ms is not None
        now, last = self._monotonic(), self._idle_since
        if last is not None and (now - last) * 1000 > self._ttl_ms / 2:
            reason = (
                f"subscribe {self.collection} was silent for {now - last:.1f} s, over half its "
                f"rows' TTL of {self._ttl_ms / 1000:g} s: they may have expired, so this "
                "incarnation stops (its lease ends it; a new one starts from a snapshot)"
            )
            logger.warning(reason)
            self._on_failure(reason)
            raise Cancelled(reason)

    def _with_refreshes(self, changes: list[Update]) -> list[Update]:
        """``changes``, then a zero diff of every other current row: each row is named."""
        named = {row for row, _ in changes}
        apply_updates(self._rows, changes)
        return changes + [(row, 0) for row in self._rows if row not in named]

    def _recorder(self, append: Append) -> Callable[[KafkaError | None, object], None]:
        def delivered(err: KafkaError | None, _msg: object) -> None:
            # Only the producer's polling thread runs this: no lock needed.
            if err is None:
                self._published.add(append)
                self.updates_delivered += sum(1 for _, diff in append.updates if diff)
            elif err.code() not in PURGE_CODES and self._undelivered is None:
                self._undelivered = (
                    f"the broker never acknowledged a request of {self.collection} "
                    f"({err.name()}: {err.str()}); the requests after it would apply to "
                    "rows that lack it, so this incarnation stops (its lease ends it; a new "
                    "one starts from a snapshot)"
                )

        return delivered

    def _check_delivered(self) -> None:
        """Stops the incarnation once a request failed for good (librdkafka retries until
        ``message.timeout.ms``; with idempotence, a leader change or a broker restart
        within it loses nothing and duplicates nothing)."""
        if self._undelivered is not None:
            logger.warning("%s", self._undelivered)
            self._on_failure(self._undelivered)
            raise Cancelled(self._undelivered)
