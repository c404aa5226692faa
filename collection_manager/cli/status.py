"""``collection-manager status``: what the consumer did and where each collection stands.

Its tables are in ``cli/status_views.py``; here are the command and its help's examples.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from typing import Any

from collection_manager import devservices
from collection_manager.answers.models import BucketRows
from collection_manager.cli.argtypes import seconds_argument
from collection_manager.cli.output import add_format_option, show
from collection_manager.cli.status_views import status_tables
from collection_manager.config import ConsumerConfig, InfraConfig, ReplicaConfig, from_env
from collection_manager.core.partitions import assign
from collection_manager.reading.catalog import CollectionInfo

# The collections' part of status is in reading/catalog.py, which the HTTP API answers
# from too; named here as well, where the CLI's modules and tests have always found it.
from collection_manager.reading.catalog import collection_info as collection_info
from collection_manager.reading.catalog import collection_infos as collection_infos
from collection_manager.reading.readiness import wait_until_ready
from collection_manager.reading.status import (
    consumer_summary,
    controller_summary,
    read_status,
    status_json,
    unpublished_summary,
)
from collection_manager.storage.client import connected_client
from collection_manager.storage.consumer_status import ConsumerRecord
from collection_manager.storage.counters import SHOWN_COUNTERS
from collection_manager.storage.dead_letters import UnpublishedLetter
from collection_manager.storage.heartbeats import Liveness
from schemas.introspection import introspection_spec

# The consumer's first start (Spark's JVM, the Kafka source) takes up to a minute on two
# busy cores; --wait allows twice that.
WAIT_TIMEOUT_S = 120.0


EXAMPLE_CONSUMER = consumer_summary(
    ConsumerRecord(
        recorded=True,
        batches=12,
        dead_letters=1,
        control_requests=4,
        progress={
            "batch_id": 11,
            "processed_rows_per_s": 250.0,
            "timestamp": "2025-01-01T12:00:00.000Z",
            "lag": {"cm.requests:0": 3, "cm.requests:1": 0},
        },
    )
)
EXAMPLE_UNPUBLISHED = unpublished_summary(
    1,
    [
        UnpublishedLetter(
            "cm.requests",
            0,
            1234,
            "OversizedRequestError",
            "request of 1500000 bytes exceeds the limit of 1048576 bytes",
            "MSG_SIZE_TOO_LARGE",
            "Broker: Message size too large",
            1_735_732_800_000,
        )
    ],
)


EXAMPLE_CONTROLLER = controller_summary(
    "cm:replicas",
    Liveness(
        True,
        {
            "at_ms": 1_735_732_801_000,
            "last_check_ms": 1_735_732_800_500,
            "pid": 4242,
            "host": "ops-1",
        },
    ),
)


def example_bucketed(counters: dict[str, int]) -> CollectionInfo:
    """The help's example of a collection of four buckets by ``replica_id`` on a topic of 16
    partitions, its two rows in bucket 1 (the times those of ``collections query``'s
    example cut)."""
    name = "frontiers_by_replica"
    spec = dataclasses.replace(
        introspection_spec("compute_frontiers"),
        name=name,
        buckets=4,
        partitioning=assign(name, 4, 16, "cm.requests"),
    )
    times = (12, 40, 7, 9)
    buckets = tuple(BucketRows(b, 2 if b == 1 else 0, t) for b, t in enumerate(times))
    return CollectionInfo(spec, 2, sum(times), counters, buckets=buckets)


def register(commands: Any) -> None:
    """Adds ``status``."""
    parser = commands.add_parser("status", help="consumer progress, lag and collection counters")
    counters = dict.fromkeys(SHOWN_COUNTERS, 0) | {"requests": 3, "updates": 4}
    infos = [
        CollectionInfo(introspection_spec("compute_frontiers"), 2, 42, counters),
        example_bucketed(counters),
    ]
    example = status_json(EXAMPLE_CONSUMER, EXAMPLE_UNPUBLISHED, infos, (), EXAMPLE_CONTROLLER)
    add_format_option(parser, {"status": example})
    parser.add_argument(
        "--topic",
        help="the consumer of this request topic (default CM_TOPIC); consumers of other "
        "topics in the same Redis are listed under other_topics",
    )
    parser.add_argument(
        "--wait",
        action="store_true",
        help="first wait until the pipeline is ready: the consumer applies, every active "
        "replica's heartbeat was applied, and what was published until then is applied "
        "(for scripts that start the pipeline in the background, then read)",
    )
    parser.add_argument(
        "--timeout",
        type=seconds_argument,
        default=WAIT_TIMEOUT_S,
        metavar="SECONDS",
        help=f"how long --wait waits before it fails, naming what it waited for "
        f"(default {WAIT_TIMEOUT_S:g})",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Prints the consumer's progress and lag, the dead letters it could not publish, and
    each collection's counters. Needs only Redis: with Kafka down the lag is unknown."""
    infra = from_env(InfraConfig)
    endpoints = devservices.running(infra, needs=("redis",))
    topic = args.topic or from_env(ConsumerConfig).topic
    namespace = from_env(ReplicaConfig).replica_namespace
    client = connected_client(endpoints.redis_url)
    try:
        if args.wait:
            wait_until_ready(
                client,
                endpoints.kafka_bootstrap,
                topic,
                namespace,
                args.timeout,
                lambda reason: print(f"waiting for {reason}", file=sys.stderr, flush=True),
            )
        report = read_status(
            client, endpoints.kafka_bootstrap, topic, namespace, infra.services_file
        )
    finally:
        client.close()
    show(
        args.format,
        report.json(),
        *status_tables(
            report.consumer,
            report.infos,
            report.record.recorded,
            report.unpublished,
            report.others,
            report.controller,
            report.sinks,
        ),
        headers=not args.no_headers,
    )
    return 0
