"""One chunk through ``PartitionApplier.apply``, its collaborators faked: the steps in their
order (epochs, dead letters, the apply, the refused appends, the sightings) and the summary
rows the driver's metrics read."""

from __future__ import annotations

import json
from collections import Counter
from types import SimpleNamespace
from typing import Any

import pytest

from collection_manager.core.epochs import EpochAuthority
from spark_consumers import applier
from spark_consumers.applier import ExecutorSettings, PartitionApplier
from spark_consumers.dead_letters import REFUSED_KIND
from spark_consumers.decode import DeadLetter, Decoded, KafkaRecord
from spark_consumers.steps import EXECUTOR_STEPS, step_column

SETTINGS = ExecutorSettings(
    kafka_bootstrap="kafka:9092",
    redis_url="redis://one:6379",
    dead_letter_topic="dead",
    max_request_bytes=1000,
    log_max_length=10,
    dead_letter_max_bytes=2000,
    replica_namespace="cm:replicas",
)
RECORDS = [KafkaRecord("cm.requests", 3, offset, None, b"x") for offset in (10, 11, 12, 13)]
APPEND: Any = SimpleNamespace(collection="c")  # a collection's request
TICK: Any = SimpleNamespace()  # a control request: no collection


class Fakes:
    """The applier's collaborators, each noting its call in ``calls``."""

    def __init__(self, refused: int) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.refused = refused
        self.authority = EpochAuthority({"r1": SimpleNamespace(highest=7)})  # type: ignore[dict-item]
        self.catalog = SimpleNamespace(specs=lambda: {})

    # The store
    def apply_requests(self, topic: str, partition: int, requests: Any, validated: bool) -> Any:
        self.calls.append(("apply", (topic, partition, list(requests), validated)))
        return {"c": {"requests": 2, "refused": self.refused}, "d": {"requests": 1}}

    # RESOURCES
    def issued_epochs(self, settings: ExecutorSettings) -> Any:
        return SimpleNamespace(authority=self._authority)

    def _authority(self, replicas: Any) -> EpochAuthority:
        self.calls.append(("epochs", replicas))
        return self.authority

    def dead_letter_producer(self, settings: ExecutorSettings) -> str:
        return "producer"

    def ledger(self, settings: ExecutorSettings) -> str:
        return "ledger"

    def replica_record(self, settings: ExecutorSettings) -> Any:
        return SimpleNamespace(record=lambda *args: self.calls.append(("sightings", args)))


@pytest.fixture
def fakes(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> Fakes:
    fakes = Fakes(refused=getattr(request, "param", 0))
    bad = DeadLetter(RECORDS[1], "SchemaError", "bad")

    def decode_records(records: Any, specs: Any, max_bytes: int) -> Decoded:
        fakes.calls.append(("decode", max_bytes))
        return Decoded([(10, APPEND), (11, TICK), (12, APPEND)], [bad])

    def refuse_unissued(decoded: Decoded, records: Any, authority: Any) -> Decoded:
        return Decoded(decoded.requests[:2], [*decoded.dead_letters, bad])

    def send_dead_letters(
        producer: str, ledger: str, topic: str, dead: list[Any], kinds: Counter[str]
    ) -> int:
        fakes.calls.append(("dead_letters", (producer, ledger, topic, len(dead))))
        kinds["SchemaError"] += len(dead)
        return len(dead)

    def send_refused(
        producer: str, topic: str, store: Any, collections: list[str], records: Any
    ) -> int:
        fakes.calls.append(("refused", (producer, topic, collections)))
        return fakes.refused

    for name, fake in [
        ("decode_records", decode_records),
        ("refuse_unissued", refuse_unissued),
        ("claimed_replicas", lambda requests: {"r1"}),
        ("send_dead_letters", send_dead_letters),
        ("send_refused", send_refused),
        ("RESOURCES", fakes),
    ]:
        monkeypatch.setattr(applier, name, fake)
    return fakes


def test_a_chunk_is_applied_step_by_step_and_summed_up(fakes: Fakes) -> None:
    rows = PartitionApplier(SETTINGS).apply(fakes, RECORDS, oldest_ms=5)  # type: ignore[arg-type]

    assert [name for name, _ in fakes.calls] == [
        "decode",
        "epochs",
        "dead_letters",
        "apply",
        "sightings",
    ]
    calls = dict(fakes.calls)
    assert calls["decode"] == 1000
    assert calls["dead_letters"] == ("producer", "ledger", "dead", 2)
    assert calls["apply"] == ("cm.requests", 3, [(10, APPEND), (11, TICK)], True)
    topic, partition, requests, seen_at, issued = calls["sightings"]
    assert (topic, partition, requests, issued) == (
        "cm.requests",
        3,
        [(10, APPEND), (11, TICK)],
        {"r1": 7},
    )
    assert seen_at > 0
    assert [(r["collection"], r["requests"], r["last_offset"]) for r in rows[:2]] == [
        ("c", 2, 13),
        ("d", 1, 13),
    ]
    last = rows[-1]
    assert last["collection"] == "" and last["last_offset"] == 13
    assert (last["dead_letters"], last["control"], last["oldest_timestamp_ms"]) == (2, 1, 5)
    assert json.loads(last["dead_letter_kinds"]) == {"SchemaError": 2}
    assert all(step_column(step) in last for step in EXECUTOR_STEPS)


@pytest.mark.parametrize("fakes", [3], indirect=True)
def test_the_appends_the_store_refused_are_dead_letters_too(fakes: Fakes) -> None:
    rows = PartitionApplier(SETTINGS).apply(fakes, RECORDS)  # type: ignore[arg-type]

    assert [name for name, _ in fakes.calls][-2:] == ["refused", "sightings"]
    assert dict(fakes.calls)["refused"] == ("producer", "dead", ["c"])
    assert rows[-1]["dead_letters"] == 2 + 3
    assert json.loads(rows[-1]["dead_letter_kinds"]) == {"SchemaError": 2, REFUSED_KIND: 3}
