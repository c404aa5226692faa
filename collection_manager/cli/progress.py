"""``progress reset``: consume a topic from its start again, on purpose.

The consumer stops when the progress in Redis was written for another Kafka cluster
(``spark_consumers/startup.py``) and names this command.
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path
from typing import Any

from collection_manager import devservices
from collection_manager.cli.confirm import add_confirmation, stop_before
from collection_manager.config import ConsumerConfig, InfraConfig, from_env
from collection_manager.storage.client import connected_client
from collection_manager.storage.progress import ProgressRecord
from spark_consumers.checkpoint import SPARK_ENTRIES


def register(commands: Any) -> None:
    """Adds ``progress reset``."""
    progress = commands.add_parser("progress", help="the consumer's progress in Redis")
    actions = progress.add_subparsers(dest="action", required=True)
    reset = actions.add_parser(
        "reset",
        help="forget the progress on CM_TOPIC: its progress record, its watermarks in every "
        "collection, its dead-letter marks and the consumer's checkpoint; the next `consume` "
        "reads the topic from its start and applies it again",
    )
    add_confirmation(reset)
    reset.set_defaults(run=run_reset)


def run_reset(args: argparse.Namespace) -> int:
    """Clears the progress of ``CM_TOPIC``; stop ``consume`` first."""
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
            f"at {config.checkpoint_dir}): the next `consume` applies the whole topic again, "
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
        cleared = f"the checkpoint at {where} is cleared by the next `consume`"
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
        "The next `consume` reads the topic from its start."
    )
    return 0
