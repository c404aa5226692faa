"""operations.md's reader of the dead-letter topic, run as written: it prints what the topic
holds when it starts and ends; with none (an empty topic, or none at all) it says so at once
instead of waiting for letters that do not come."""

from __future__ import annotations

import os
from pathlib import Path

from confluent_kafka import Producer

from tests.examples.pages import ROOT, documented
from tests.examples.runner import Outcome, problems, run

READER = next(e for e in documented()[0] if "dead-letter-inspection" in e.code)


def _read(kafka: str, topic: str, workdir: Path) -> Outcome:
    env = dict(os.environ, CM_KAFKA_BOOTSTRAP=kafka, CM_DEAD_LETTER_TOPIC=topic)
    env["PATH"] = f"{ROOT / '.venv' / 'bin'}{os.pathsep}{env['PATH']}"
    outcome = run(READER, env=env, cwd=ROOT, workdir=workdir, timeout=120)
    assert problems(READER, outcome) == [], outcome.output
    return outcome


def test_a_topic_without_dead_letters_is_said_to_hold_none(
    kafka: str, topic: str, unique: str, tmp_path: Path
) -> None:
    empty = _read(kafka, topic, tmp_path / "empty")
    assert empty.output.splitlines() == [f"no dead letters in {topic}"]
    missing = _read(kafka, f"none-{unique}", tmp_path / "missing")
    assert missing.output.splitlines() == [f"no dead letters in none-{unique}"]


def test_every_dead_letter_the_topic_holds_is_printed_once(
    kafka: str, topic: str, tmp_path: Path
) -> None:
    producer = Producer({"bootstrap.servers": kafka})
    for offset, partition in enumerate((0, 2, 2)):
        headers = {
            "source.topic": "cm.requests",
            "source.partition": str(partition),
            "source.offset": str(offset),
            "error": "UnknownCollectionError",
            "reason": f"no collection c{offset}",
        }
        producer.produce(topic, b"v" * offset, b"k", partition, headers=list(headers.items()))
    assert producer.flush(30) == 0
    lines = _read(kafka, topic, tmp_path / "read").output.splitlines()
    assert sorted(lines) == [
        "cm.requests[0]@0 UnknownCollectionError: no collection c0 (0 bytes)",
        "cm.requests[2]@1 UnknownCollectionError: no collection c1 (1 bytes)",
        "cm.requests[2]@2 UnknownCollectionError: no collection c2 (2 bytes)",
    ]
