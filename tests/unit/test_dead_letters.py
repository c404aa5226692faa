"""Dead letters without services: bounded headers, delivery outcomes, replays skipped."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from collection_manager.kafka.producer import KafkaProducer, ProducerConfig
from collection_manager.storage.dead_letters import (
    REASON_MAX_BYTES,
    DeadLetterLedger,
    UnpublishedLetter,
    bounded,
)
from spark_consumers.dead_letter_producer import (
    HEADER_ALLOWANCE,
    PRODUCER_MAX_BYTES_CEILING,
    producer_max_bytes,
)
from spark_consumers.dead_letters import (
    NOT_ACKNOWLEDGED,
    dead_letter_headers,
    publish,
    send_dead_letters,
)
from spark_consumers.decode import DeadLetter, KafkaRecord


def _letter(offset: int, reason: str = "bad", partition: int = 0) -> DeadLetter:
    record = KafkaRecord("req", partition, offset, b"key", b"value-%d" % offset)
    return DeadLetter(record, "SerializationError", reason)


# Bounding


def test_short_text_is_kept_as_it_is() -> None:
    assert bounded("why") == b"why"
    assert bounded("x" * REASON_MAX_BYTES) == b"x" * REASON_MAX_BYTES


def test_long_text_is_cut_to_the_bound_with_a_marker_saying_how_much() -> None:
    cut = bounded("x" * 5000)
    assert len(cut) <= REASON_MAX_BYTES
    kept = cut.index(b" ")
    assert cut[:kept] == b"x" * kept
    assert cut.decode().endswith(f"…[truncated {5000 - kept} bytes]")


def test_a_cut_never_splits_a_character() -> None:
    for text in ("é" * 2000, "x" + "€" * 2000, "🙂" * 700):
        cut = bounded(text, 100)
        assert len(cut) <= 100
        assert cut.decode().startswith(text[:5])  # valid UTF-8, starts with the text


def test_a_bound_too_small_for_the_marker_cuts_alone() -> None:
    assert bounded("abcdefgh", 3) == b"abc"


def test_headers_carry_the_source_and_a_bounded_reason() -> None:
    headers = dict(dead_letter_headers(_letter(7, reason="r" * 100_000)))
    assert list(headers) == ["source.topic", "source.partition", "source.offset", "error", "reason"]
    assert headers["source.topic"] == b"req"
    assert (headers["source.partition"], headers["source.offset"]) == (b"0", b"7")
    assert headers["error"] == b"SerializationError"
    assert len(headers["reason"]) <= REASON_MAX_BYTES
    assert b"truncated" in headers["reason"]


def test_the_producer_accepts_what_the_request_topic_holds() -> None:
    assert producer_max_bytes(2_000_000) == 2_000_000 + HEADER_ALLOWANCE
    assert producer_max_bytes(None) == PRODUCER_MAX_BYTES_CEILING
    assert producer_max_bytes(PRODUCER_MAX_BYTES_CEILING) == PRODUCER_MAX_BYTES_CEILING


def test_unpublished_records_round_trip_with_bounded_reasons() -> None:
    letter = UnpublishedLetter("t", 1, 2, "E", "y" * 9000, "MSG_SIZE_TOO_LARGE", "z", 5)
    back = UnpublishedLetter.from_json(letter.to_json())
    assert letter.field == "t:1:2"
    assert len(back.reason.encode()) <= REASON_MAX_BYTES
    assert (back.offset, back.publish_error, back.publish_reason) == (2, "MSG_SIZE_TOO_LARGE", "z")
    assert UnpublishedLetter.from_json(letter.to_json()[:-1] + ', "later": 1}') == back


# Delivery outcomes, with a stand-in for confluent_kafka.Producer


class _Message:
    def topic(self) -> str:
        return "dlq"

    def partition(self) -> int:
        return 0


class FakeProducer:
    """Acknowledges, fails or never reports each message by its value; refuses some."""

    def __init__(self, outcomes: dict[bytes, KafkaError | str | None]) -> None:
        self.outcomes = outcomes
        self.pending: list[tuple[Callable[..., None], KafkaError | None]] = []
        self.sent: list[tuple[bytes, bytes, Sequence[tuple[str, bytes]]]] = []

    def produce(self, topic: str, value: bytes, key: bytes, on_delivery: Any, headers: Any) -> None:
        outcome = self.outcomes.get(value)
        # isinstance first: comparing a KafkaError with a str raises inside confluent_kafka.
        if isinstance(outcome, str) and outcome == "refuse":
            raise KafkaException(KafkaError(KafkaError.MSG_SIZE_TOO_LARGE, "too large"))
        self.sent.append((key, value, headers))
        if not (isinstance(outcome, str) and outcome == "silent"):
            self.pending.append((on_delivery, outcome if isinstance(outcome, KafkaError) else None))

    def poll(self, _timeout: float = 0) -> int:
        return 0

    def flush(self, _timeout: float = 0) -> int:
        served, self.pending = self.pending, []
        for callback, err in served:
            callback(err, _Message())
        return 0

    def __len__(self) -> int:
        return len(self.pending)


def _producer(fake: FakeProducer) -> KafkaProducer:
    return KafkaProducer(ProducerConfig("unused:9092"), factory=lambda _options: fake)  # type: ignore[arg-type,return-value]


def test_publish_accounts_for_every_letter_and_never_raises() -> None:
    fake = FakeProducer(
        {
            b"value-1": KafkaError(KafkaError.MSG_SIZE_TOO_LARGE, "Broker: Message size too large"),
            b"value-2": "refuse",
            b"value-3": "silent",
        }
    )
    letters = [_letter(i) for i in range(4)]
    delivery = publish(_producer(fake), "dlq", letters, timeout_s=0)
    assert [letter.record.offset for letter in delivery.published] == [0]
    failed = {letter.record.offset: kind for letter, kind, _ in delivery.failed}
    assert failed == {1: "MSG_SIZE_TOO_LARGE", 2: "MSG_SIZE_TOO_LARGE", 3: NOT_ACKNOWLEDGED}
    key, value, _ = fake.sent[0]
    assert (key, value) == (b"key", b"value-0")  # the original bytes, unchanged


class MemoryLedger(DeadLetterLedger):
    """The ledger's contract in memory: a mark per partition that only moves up."""

    def __init__(self) -> None:
        self.marks: dict[tuple[str, int], int] = {}
        self.unpublished: list[UnpublishedLetter] = []
        self.published = 0

    def done(self, topic: str, partition: int) -> int:
        return self.marks.get((topic, partition), -1)

    def record(
        self,
        topic: str,
        partition: int,
        last_offset: int,
        published: int,
        unpublished: Sequence[UnpublishedLetter] = (),
    ) -> bool:
        if last_offset <= self.done(topic, partition):
            return False
        self.marks[(topic, partition)] = last_offset
        self.published += published
        self.unpublished += unpublished
        return True


def test_a_replayed_batch_publishes_and_counts_nothing_again() -> None:
    fake = FakeProducer({b"value-5": KafkaError(KafkaError.MSG_SIZE_TOO_LARGE, "too large")})
    ledger = MemoryLedger()
    batch = [_letter(3), _letter(5), _letter(4, partition=1)]
    assert send_dead_letters(_producer(fake), ledger, "dlq", batch) == 3
    assert ledger.marks == {("req", 0): 5, ("req", 1): 4}
    assert (ledger.published, [u.offset for u in ledger.unpublished]) == (2, [5])
    assert send_dead_letters(_producer(fake), ledger, "dlq", batch) == 0  # the replay
    assert send_dead_letters(_producer(fake), ledger, "dlq", [*batch, _letter(6)]) == 1
    assert len(fake.sent) == 4
    assert ledger.marks[("req", 0)] == 6


@pytest.mark.parametrize("dead", [[], [_letter(1)]])
def test_nothing_to_publish_when_all_were_handled(dead: list[DeadLetter]) -> None:
    fake = FakeProducer({})
    ledger = MemoryLedger()
    ledger.marks[("req", 0)] = 1
    assert send_dead_letters(_producer(fake), ledger, "dlq", dead) == 0
    assert fake.sent == []
