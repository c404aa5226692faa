"""The consumer's pure validation step: decode, then refuse epochs never issued."""

from __future__ import annotations

from collection_manager.core.epochs import EpochAuthority, Issued
from collection_manager.core.filters import eq
from collection_manager.core.requests import Append, Delete, Fence, Heartbeat, Request
from schemas.codec import encode_request
from spark_consumers.decode import KafkaRecord, decode_records, refuse_unissued
from tests.unit.strategies import FRONTIERS

SPECS = {FRONTIERS.name: FRONTIERS}
FORGED = 2**62


def _records(requests: list[Request]) -> list[KafkaRecord]:
    return [KafkaRecord("t", 0, 10 + i, b"k", encode_request(r)) for i, r in enumerate(requests)]


def test_forged_epochs_become_dead_letters_in_offset_order() -> None:
    fence = Delete(FRONTIERS.name, eq("replica_id", "r1"), "x", Fence("r1", FORGED))
    requests: list[Request] = [
        Heartbeat("r1", 3),
        Heartbeat("r1", FORGED),
        Append("a*", "r1", 1, (), 0),  # refused by decode_records already
        fence,
        Append(FRONTIERS.name, "r1", 3, ((("r1", "a", 0, 1), 1),), 0),
        Heartbeat("r2", 1),  # never added
    ]
    records = _records(requests)
    decoded = refuse_unissued(
        decode_records(records, SPECS, 1 << 20), records, EpochAuthority({"r1": Issued(3)})
    )
    assert [offset for offset, _ in decoded.requests] == [10, 14]
    letters = decoded.dead_letters
    assert [letter.record.offset for letter in letters] == [11, 12, 13, 15]
    assert [letter.kind for letter in letters] == [
        "EpochError",
        "InvalidNameError",
        "EpochError",
        "EpochError",
    ]
    assert letters[0].reason == f"epoch {FORGED} of replica r1 was never issued (highest issued: 3)"
    assert letters[3].reason == "epoch 1 of replica r2 was never issued (highest issued: none)"
    assert letters[1].record.value == records[2].value
