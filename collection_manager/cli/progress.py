"""``progress show|reset``: the consumer's progress in Redis; consume a topic again, on purpose.

``show`` prints, per partition of the request topic, the highest offset whose every record
the consumer handled (``storage/progress.py``, the truth it starts from) and the lag its last
batch reported, and which Kafka cluster and topic the progress was written for. ``reset``
forgets it: the consumer stops when the progress in Redis was written for another Kafka
cluster (``spark_consumers/startup.py``) and names this command.
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path
from typing import Any

from collection_manager import devservices
from collection_manager.cli.confirm import add_confirmation, stop_before
from collection_manager.cli.output import TableView, add_format_option, show
from collection_manager.config import ConsumerConfig, InfraConfig, from_env
from collection_manager.reading.status import consumer_summary
from collection_manager.storage.client import connected_client
from collection_manager.storage.consumer_status import ConsumerStatusRecord
from collection_manager.storage.progress import Binding, Progress, ProgressRecord
from spark_consumers.checkpoint import SPARK_ENTRIES


def register(commands: Any) -> None:
    """Adds ``progress show`` and ``progress reset``."""
    progress = commands.add_parser("progress", help="the consumer's progress in Redis")
    actions = progress.add_subparsers(dest="action", required=True)
    shown = actions.add_parser(
        "show",
        help="per partition of CM_TOPIC: the highest offset the consumer handled, and the "
        "lag its last batch reported",
    )
    shown.add_argument("--topic", help="the request topic (default CM_TOPIC)")
    add_format_option(shown, {"progress show": progress_json(EXAMPLE_TOPIC, EXAMPLE, EXAMPLE_LAG)})
    shown.set_defaults(run=run_show)
    reset = actions.add_parser(
        "reset",
        help="forget the progress on CM_TOPIC: its progress record, its watermarks in every "
        "collection, its dead-letter marks and the consumer's checkpoint; the next `consumer run` "
        "reads the topic from its start and applies it again",
    )
    add_confirmation(reset)
    reset.set_defaults(run=run_reset)


EXAMPLE_TOPIC = "cm.requests"
EXAMPLE = Progress({0: 1041, 1: 998}, Binding("q1Sh-9_ISia_zwGINzRvyQ", "dzBqTnOvS4Ot8xDlCHmX3g"))
EXAMPLE_LAG = {0: 3, 1: 0}


def progress_json(topic: str, progress: Progress, lag: dict[int, int]) -> dict[str, Any]:
    """``{"topic", "cluster_id", "topic_id", "partitions": [{"partition", "offset",
    "lag"}]}``: the binding is null before the consumer's first batch; ``lag`` is what
    its last batch reported (null: none reported)."""
    binding = progress.binding
    return {
        "topic": topic,
        "cluster_id": None if binding is None else binding.cluster_id,
        "topic_id": None if binding is None else binding.topic_id,
        "partitions": [
            {"partition": p, "offset": offset, "lag": lag.get(p)}
            for p, offset in sorted(progress.offsets.items())
        ],
    }


def progress_table(topic: str, progress: Progress, lag: dict[int, int]) -> TableView:
    """A line per partition, under the binding; a line when nothing was recorded."""
    binding = progress.binding
    bound = (
        "" if binding is None else f" (cluster {binding.cluster_id}, topic id {binding.topic_id})"
    )
    return TableView(
        title=f"progress on {topic}{bound}",
        columns=["partition", "handled offset", "lag"],
        rows=[(p, offset, lag.get(p)) for p, offset in sorted(progress.offsets.items())],
        empty=f"no progress recorded on {topic}: the consumer has handled none of it yet",
        null="-",
    )


def run_show(args: argparse.Namespace) -> int:
    """Prints the progress of ``--topic`` (default ``CM_TOPIC``); needs only Redis."""
    topic = args.topic or from_env(ConsumerConfig).topic
    endpoints = devservices.running(from_env(InfraConfig), needs=("redis",))
    client = connected_client(endpoints.redis_url)
    try:
        progress = ProgressRecord(client, topic).read()
        record = ConsumerStatusRecord(client, topic).read()
    finally:
        client.close()
    reported = consumer_summary(record, topic=topic)["lag"] or []
    lag = {entry["partition"]: entry["lag"] for entry in reported if entry["topic"] == topic}
    table = progress_table(topic, progress, lag)
    show(args.format, progress_json(topic, progress, lag), table, headers=not args.no_headers)
    return 0


def run_reset(args: argparse.Namespace) -> int:
    """Clears the progress of ``CM_TOPIC``; stop ``consumer run`` first."""
    infra = from_env(InfraConfig)
    config = from_env(ConsumerConfig).with_checkpoint(infra)
    endpoints = devservices.running(infra, needs=("redis",))
    client = connected_client(endpoints.redis_url)
    try:
        record = ProgressRecord(client, config.topic)
        counted = record.forget_topic(dry_run=True)
        what = (
            f"forget the progress on topic {config.topic} ({counted.watermarks} watermarks "
            f"in {counted.collections} collections, its dead-letter marks and the checkpoint "
            f"at {config.checkpoint_dir}): the next `consumer run` applies the whole topic again, "
            "on top of what the collections hold"
        )
        if (code := stop_before(args, what)) is not None:
            return code
        forgotten = record.forget_topic()
    finally:
        client.close()
    where = str(config.checkpoint_dir)
    if "://" in where:
        # The next start finds no progress in Redis and clears it through Spark's Hadoop.
        cleared = f"the checkpoint at {where} is cleared by the next `consumer run`"
    else:
        for name in SPARK_ENTRIES:  # Spark's entries only, never the whole directory
            entry = Path(where) / name
            if entry.is_dir():
                shutil.rmtree(entry)
            elif entry.exists():
                entry.unlink()
        cleared = f"cleared the checkpoint at {where}"
    print(
        f"forgot the progress on topic {config.topic}: {forgotten.watermarks} watermarks in "
        f"{forgotten.collections} collections and its dead-letter marks; {cleared}. "
        "The next `consumer run` reads the topic from its start."
    )
    return 0
