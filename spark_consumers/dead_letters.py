"""Publishing dead letters: bounded headers, every outcome recorded, never a stop.

A dead letter keeps the record's key and value bytes unchanged; its context travels in
headers, each bounded to ``HEADER_MAX_BYTES``. The producer accepts anything the request
topic can hold (``producer_max_bytes`` in ``dead_letter_producer.py``). A dead letter the
broker does not acknowledge (missing topic, too large for the dead-letter topic, refused,
timed out) is recorded in Redis as unpublished (``collection_manager/storage/dead_letters.py``)
and the partition moves on. Per ``(topic, partition)`` the ledger's mark, written after the
acknowledgement, makes a replayed micro-batch skip what was handled. A crash between the
acknowledgement and that write publishes one batch's dead letters again; their
``source.*`` headers tell a reader which ones are duplicates.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from functools import partial

from confluent_kafka import KafkaError, KafkaException, Message

from collection_manager.kafka.errors import ProducerError
from collection_manager.kafka.producer import KafkaProducer
from collection_manager.storage.dead_letters import (
    REASON_MAX_BYTES,
    DeadLetterLedger,
    UnpublishedLetter,
    bounded,
    bounded_text,
)
from collection_manager.storage.writes import StoreWriter
from spark_consumers.dead_letter_producer import DELIVERY_TIMEOUT_MS
from spark_consumers.decode import DeadLetter, KafkaRecord

logger = logging.getLogger(__name__)

HEADER_MAX_BYTES = REASON_MAX_BYTES
# A flush a little longer than the producer's DELIVERY_TIMEOUT_MS sees every outcome.
_FLUSH_GRACE_S = 5.0
NOT_ACKNOWLEDGED = "NOT_ACKNOWLEDGED"


def dead_letter_headers(letter: DeadLetter) -> list[tuple[str, bytes]]:
    """Where the record came from and why it is a dead letter; each value bounded."""
    record = letter.record
    values = [
        ("source.topic", record.topic),
        ("source.partition", str(record.partition)),
        ("source.offset", str(record.offset)),
        ("error", letter.kind),
        ("reason", letter.reason),
    ]
    return [(name, bounded(value, HEADER_MAX_BYTES)) for name, value in values]


@dataclasses.dataclass
class Delivery:
    """The outcome of publishing dead letters: acknowledged, or failed with why."""

    published: list[DeadLetter] = dataclasses.field(default_factory=list)
    failed: list[tuple[DeadLetter, str, str]] = dataclasses.field(default_factory=list)


def _refusal(exc: ProducerError) -> str:
    # The librdkafka error name (e.g. MSG_SIZE_TOO_LARGE) when the client refused it.
    cause = exc.__cause__
    if isinstance(cause, KafkaException) and cause.args and isinstance(cause.args[0], KafkaError):
        return str(cause.args[0].name())
    return type(exc).__name__


def publish(
    producer: KafkaProducer, topic: str, letters: list[DeadLetter], timeout_s: float
) -> Delivery:
    """Publishes ``letters`` and waits up to ``timeout_s`` for each outcome; never raises
    for a delivery: a letter not acknowledged by then counts as failed."""
    reports: dict[int, KafkaError | None] = {}

    def on_delivery(index: int, err: KafkaError | None, _msg: Message) -> None:
        reports[index] = err

    refused: dict[int, tuple[str, str]] = {}
    for index, letter in enumerate(letters):
        record = letter.record
        try:
            producer.produce(
                topic,
                record.key or b"",
                record.value or b"",
                on_delivery=partial(on_delivery, index),
                headers=dead_letter_headers(letter),
            )
        except ProducerError as exc:  # named reason: recorded as unpublished below
            refused[index] = (_refusal(exc), str(exc))
    if len(refused) < len(letters):
        producer.flush(timeout_s)
    out = Delivery()
    for index, letter in enumerate(letters):
        if index in refused:
            out.failed.append((letter, *refused[index]))
        elif index not in reports:
            out.failed.append((letter, NOT_ACKNOWLEDGED, f"no acknowledgement in {timeout_s}s"))
        elif (err := reports[index]) is not None:
            out.failed.append((letter, str(err.name()), str(err.str())))
        else:
            out.published.append(letter)
    return out


def _unpublished(
    topic: str, failed: Iterable[tuple[DeadLetter, str, str]]
) -> list[UnpublishedLetter]:
    now = int(time.time() * 1000)
    out = []
    for letter, kind, reason in failed:
        r = letter.record
        out.append(
            UnpublishedLetter(
                r.topic, r.partition, r.offset, letter.kind, letter.reason, kind, reason, now
            )
        )
        logger.error(
            "dead letter %s[%d]@%d (%s) could not be published to %s (%s: %s); "
            "recorded in Redis as unpublished",
            r.topic, r.partition, r.offset, letter.kind, topic, kind, bounded_text(reason),
        )  # fmt: skip
    return out


def send_dead_letters(
    producer: KafkaProducer,
    ledger: DeadLetterLedger,
    topic: str,
    dead: list[DeadLetter],
    kinds: Counter[str] | None = None,
) -> int:
    """Publishes the dead letters not handled before and records each outcome.

    Per ``(topic, partition)`` of the source records: dead letters at or below the
    ledger's mark are skipped (a replay); the rest are published and waited for, then
    the mark moves to the last of them, together with the record of those that failed.
    ``kinds`` (when given) counts those handled now by error kind, for the metrics.

    Returns:
        How many dead letters were handled now (the skipped ones not included).
    """
    handled = 0
    for (source, partition), letters in _by_partition(dead).items():
        done = ledger.done(source, partition)
        fresh = [letter for letter in letters if letter.record.offset > done]
        if not fresh:
            continue
        for letter in fresh:
            r = letter.record
            logger.warning(
                "dead letter %s[%d]@%d: %s: %s",
                r.topic, r.partition, r.offset, letter.kind, bounded_text(letter.reason),
            )  # fmt: skip
        delivery = publish(producer, topic, fresh, DELIVERY_TIMEOUT_MS / 1000 + _FLUSH_GRACE_S)
        last = max(letter.record.offset for letter in fresh)
        unpublished = _unpublished(topic, delivery.failed)
        ledger.record(source, partition, last, len(delivery.published), unpublished)
        handled += len(fresh)
        if kinds is not None:
            kinds.update(letter.kind for letter in fresh)
    return handled


def _by_partition(dead: Iterable[DeadLetter]) -> dict[tuple[str, int], list[DeadLetter]]:
    grouped: dict[tuple[str, int], list[DeadLetter]] = {}
    for letter in dead:
        grouped.setdefault((letter.record.topic, letter.record.partition), []).append(letter)
    return grouped


# The error kind of an append the store refused whole (see StoreWriter.apply).
REFUSED_KIND = "MultiplicityOverflowError"


def send_refused(
    producer: KafkaProducer,
    topic: str,
    store: StoreWriter,
    collections: Iterable[str],
    records: Sequence[KafkaRecord],
) -> int:
    """Publishes the dead letters of appends the store refused in ``collections``.

    The store recorded each refusal in the same call that refused it and passed the
    watermark over it, so each is recorded once; here each is published and, once
    acknowledged, forgotten. One that is not acknowledged stays recorded and is sent again
    the next time its collection refuses an append (a duplicate is told by its
    ``source.*`` headers). Returns how many were published.
    """
    by_position = {(r.topic, r.partition, r.offset): r for r in records}
    published = 0
    for name in collections:
        refused = store.take_refused(name)
        letters = [_refused_letter(field, why, by_position) for field, why in refused.items()]
        if not letters:
            continue
        delivery = publish(producer, topic, letters, DELIVERY_TIMEOUT_MS / 1000 + _FLUSH_GRACE_S)
        done = {_refused_field(letter.record) for letter in delivery.published}
        store.forget_refused(name, sorted(done))
        for letter, kind, reason in delivery.failed:
            logger.error(
                "refused append %s could not be published to %s (%s: %s); kept for a retry",
                _refused_field(letter.record), topic, kind, bounded_text(reason),
            )  # fmt: skip
        published += len(done)
    return published


def _refused_field(record: KafkaRecord) -> str:
    return f"{record.topic}:{record.partition}:{record.offset}"


def _refused_letter(
    field: str, why: str, by_position: dict[tuple[str, int, int], KafkaRecord]
) -> DeadLetter:
    source, partition, offset = field.rsplit(":", 2)
    position = (source, int(partition), int(offset))
    # The record's bytes are at hand unless it was refused by an earlier, crashed run.
    record = by_position.get(position) or KafkaRecord(*position, None, None)
    return DeadLetter(record, REFUSED_KIND, why)
