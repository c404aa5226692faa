"""The connections of one Spark Python worker process, made once and reused by its tasks.

Spark reuses a Python worker process for task after task (``spark.python.worker.reuse``,
on by default, and the consumer leaves it on), and a micro-batch runs several tasks. So
the store, the Redis clients and the dead-letter producer the applier uses live as long as
the process, in the one :data:`RESOURCES` below, and a micro-batch pays no connection
set-up. Each is kept under the settings it was made from.

Nothing clears them after a fork, and nothing needs to: PySpark's daemon
(``worker_daemon.py``) never imports the applier, so a worker it forks starts with none
and makes its own. :meth:`ExecutorResources.reset` forgets them all, as a new worker
process would start: for tests.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import redis

from collection_manager.kafka.producer import KafkaProducer
from collection_manager.storage.client import connected_client, redis_client
from collection_manager.storage.dead_letters import DeadLetterLedger
from collection_manager.storage.epochs import IssuedEpochs
from collection_manager.storage.progress import guarded_client
from collection_manager.storage.replicas import ReplicaRecord
from collection_manager.storage.writes import StoreWriter
from spark_consumers.dead_letter_producer import dead_letter_producer

if TYPE_CHECKING:  # for annotations only: the applier imports this module
    from spark_consumers.applier import ExecutorSettings

_ProducerKey = tuple[str, int, tuple[tuple[str, str], ...]]


class ExecutorResources:
    """What one worker process has connected to, each made on first use and then reused.

    Never closes anything: what it forgets (a store of earlier settings, everything on
    :meth:`reset`) is left to the garbage collector, as a worker process leaves all of it
    when it exits.
    """

    def __init__(self) -> None:
        self._stores: dict[ExecutorSettings, StoreWriter] = {}
        self._producers: dict[_ProducerKey, KafkaProducer] = {}
        self._clients: dict[str, redis.Redis] = {}
        self._replica_records: dict[tuple[str, str], ReplicaRecord] = {}
        self._ledgers: dict[str, DeadLetterLedger] = {}
        self._issued_epochs: dict[tuple[str, str], IssuedEpochs] = {}

    def reset(self) -> None:
        """Forgets everything made so far, as a new worker process starts (for tests)."""
        self._stores.clear()
        self._producers.clear()
        self._clients.clear()
        self._replica_records.clear()
        self._ledgers.clear()
        self._issued_epochs.clear()

    def store(self, settings: ExecutorSettings) -> StoreWriter:
        """The store the requests are applied to, one (the latest settings') at a time."""
        if settings not in self._stores:
            self._stores.clear()  # a store of an earlier start talks to a Redis process now gone
            self._stores[settings] = StoreWriter(
                _store_client(settings), log_max_length=settings.log_max_length
            )
        return self._stores[settings]

    def _client(self, redis_url: str) -> redis.Redis:
        # One client (one connection pool) per Redis for the replica record, the issued epochs
        # and the dead-letter ledger of this worker, rather than one each.
        if redis_url not in self._clients:
            self._clients[redis_url] = redis_client(redis_url, socket_connect_timeout=5)
        return self._clients[redis_url]

    def replica_record(self, settings: ExecutorSettings) -> ReplicaRecord:
        """Where the applier records the replicas' sightings and log times."""
        place = (settings.redis_url, settings.replica_namespace)
        if place not in self._replica_records:
            self._replica_records[place] = ReplicaRecord(
                self._client(settings.redis_url), settings.replica_namespace
            )
        return self._replica_records[place]

    def issued_epochs(self, settings: ExecutorSettings) -> IssuedEpochs:
        """The epochs the controller issued, which requests must carry to be applied."""
        place = (settings.redis_url, settings.replica_namespace)
        if place not in self._issued_epochs:
            self._issued_epochs[place] = IssuedEpochs(
                self._client(settings.redis_url), settings.replica_namespace
            )
        return self._issued_epochs[place]

    def dead_letter_producer(self, settings: ExecutorSettings) -> KafkaProducer:
        """The producer of the dead-letter topic."""
        key = (settings.kafka_bootstrap, settings.dead_letter_max_bytes, settings.kafka_security)
        if key not in self._producers:
            self._producers[key] = dead_letter_producer(
                settings.kafka_bootstrap,
                settings.dead_letter_max_bytes,
                client_id="collection-manager-dead-letters",
                security=dict(settings.kafka_security),
            )
        return self._producers[key]

    def ledger(self, settings: ExecutorSettings) -> DeadLetterLedger:
        """The record of the dead letters handled, and of those left unpublished."""
        if settings.redis_url not in self._ledgers:
            self._ledgers[settings.redis_url] = DeadLetterLedger(self._client(settings.redis_url))
        return self._ledgers[settings.redis_url]


def _store_client(settings: ExecutorSettings) -> redis.Redis:
    if settings.redis_run_id:
        # Never applies to a restarted Redis: it may have lost its tail, and applying newer
        # offsets above that gap would make the watermarks skip it for good.
        return guarded_client(settings.redis_url, settings.redis_run_id, socket_connect_timeout=5)
    return connected_client(settings.redis_url)


# This process's one owner of them (see the module's docstring for why process-wide).
RESOURCES = ExecutorResources()
