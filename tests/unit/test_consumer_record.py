"""The consumer's status record read typed (``storage/consumer_status.ConsumerRecord``):
each field from its own hash field, a counter never counted as 0, a JSON field that is no
JSON object (another version's) as ``{}``."""

from __future__ import annotations

import json

from collection_manager.storage import consumer_status as fields
from collection_manager.storage.consumer_status import ConsumerRecord


def test_nothing_recorded_reads_as_the_empty_record() -> None:
    assert ConsumerRecord.parse({}) == ConsumerRecord()
    assert not ConsumerRecord.parse({}).recorded


def test_each_field_is_read_from_its_own() -> None:
    progress = {"batch_id": 4, "read": {"t:0": "12", "t:1": 7}}
    record = ConsumerRecord.parse(
        {
            fields.BATCHES: "5",
            fields.DEAD_LETTERS: "2",
            fields.CONTROL_REQUESTS: "3",
            fields.REWINDS: "1",
            fields.TOPIC_RECREATIONS: "4",
            fields.PROGRESS: json.dumps(progress),
            fields.HEALTH: json.dumps({"state": "running"}),
            fields.LAST_REWIND: json.dumps({"why": "lost"}),
            fields.LAST_BATCH: json.dumps({"batch_id": 4}),
        }
    )
    assert record == ConsumerRecord(
        recorded=True,
        batches=5,
        dead_letters=2,
        control_requests=3,
        rewinds=1,
        topic_recreations=4,
        last_batch={"batch_id": 4},
        progress=progress,
        health={"state": "running"},
        last_rewind={"why": "lost"},
    )
    assert record.read_offsets() == {"t:0": 12, "t:1": 7}


def test_a_json_field_another_version_wrote_reads_as_empty() -> None:
    record = ConsumerRecord.parse({fields.PROGRESS: "not json", fields.HEALTH: "[1, 2]"})
    assert (record.recorded, record.progress, record.health) == (True, {}, {})
    assert record.read_offsets() == {}
