"""``sinks create|list|show|drop|run``: a collection's changes published to a Kafka topic of
its own, exactly once and in order (docs/concepts/sinks.md).

``create`` checks the collection and the topic and records the sink; ``run`` is the sink's
process (``collection_manager/sinks``), until SIGTERM or SIGINT; ``drop`` forgets it and
leaves its topics to the operator, whose readers may still need them.
"""

from __future__ import annotations

import argparse
import threading
import time
from typing import Any

from collection_manager import devservices
from collection_manager.cli.confirm import add_confirmation, stop_before
from collection_manager.cli.output import TableView, add_format_option, show
from collection_manager.cli.signals import stop_on_signals
from collection_manager.config import InfraConfig, SinkConfig, from_env
from collection_manager.config.errors import UsageError
from collection_manager.core.sinks.spec import FORMATS, MAX_SINKS, SinkSpec
from collection_manager.core.specs import CollectionSpec
from collection_manager.observability.endpoint import serve
from collection_manager.observability.health import Health, recent
from collection_manager.reading.sinks import sink_summary
from collection_manager.sinks import metrics
from collection_manager.sinks.kafka_side import prepare_topics
from collection_manager.sinks.process import SinkProcess
from collection_manager.sinks.records import envelope_schema
from collection_manager.storage.catalog import Catalog
from collection_manager.storage.client import connected_client
from collection_manager.storage.heartbeats import SINK, Heartbeat, Liveness, read_liveness
from collection_manager.storage.sinks import SinkCatalog

MAX_PARTITIONS = 1024
_SETTING = "CM_SINK_METRICS_ADDRESS"
EXAMPLE = SinkSpec("frontiers-out", "compute_frontiers", "cm.frontiers", "json", 1735732800000)


def register(commands: Any) -> None:
    """Adds ``sinks``."""
    sinks = commands.add_parser(
        "sinks", help="publish a collection's changes to a Kafka topic of its own"
    )
    actions = sinks.add_subparsers(dest="action", required=True)
    _add_create(actions)
    listing = actions.add_parser("list", help=f"every sink (at most {MAX_SINKS})")
    add_format_option(listing, {"sinks list": [EXAMPLE.record()]})
    listing.set_defaults(run=run_list)
    shown = actions.add_parser("show", help="one sink: its topics, state and value schema")
    shown.add_argument("name", help="the sink")
    add_format_option(shown, {})
    shown.set_defaults(run=run_show)
    drop = actions.add_parser("drop", help="forget a sink (its topics stay)")
    drop.add_argument("name", help="the sink")
    add_confirmation(drop)
    drop.set_defaults(run=run_drop)
    _add_run(actions)


def _add_create(actions: Any) -> None:
    create = actions.add_parser("create", help="record a sink (and make its topics)")
    create.add_argument("name", help="the sink's name (the rule of collection names)")
    create.add_argument("--collection", required=True, help="the collection it publishes")
    create.add_argument("--topic", required=True, help="its topic: new, or empty")
    create.add_argument(
        "--value-format",
        choices=FORMATS,
        default="json",
        help="the values' encoding: a JSON object, or Avro single-object encoding (default json)",
    )
    create.add_argument(
        "--partitions",
        type=int,
        default=1,
        help=f"the topic's partitions when it is made (1 to {MAX_PARTITIONS}, default 1; a "
        "row's changes stay in one, in order)",
    )
    create.set_defaults(run=run_create)


def _add_run(actions: Any) -> None:
    running = actions.add_parser("run", help="publish a sink's changes until SIGTERM")
    running.add_argument("name", help="the sink")
    running.add_argument(
        "--duration",
        type=float,
        default=None,
        help="stop after this many seconds (default: run until SIGTERM or SIGINT)",
    )
    running.set_defaults(run=run_sink)


def _endpoints(needs: tuple[str, ...] = ("redis",)) -> Any:
    return devservices.running(from_env(InfraConfig), needs=needs)


def run_create(args: argparse.Namespace) -> int:
    """Checks the collection and the topic, makes the topics and records the sink."""
    if not 1 <= args.partitions <= MAX_PARTITIONS:
        raise UsageError(f"--partitions {args.partitions}: give 1 to {MAX_PARTITIONS}")
    endpoints = _endpoints(("redis", "kafka"))
    client = connected_client(endpoints.redis_url)
    try:
        collection = Catalog(client).spec(args.collection)
        spec = SinkSpec(
            args.name, collection.name, args.topic, args.value_format, int(time.time() * 1000)
        )
        prepare_topics(endpoints.kafka_bootstrap, spec, args.partitions)
        SinkCatalog(client).create(spec)
    finally:
        client.close()
    print(
        f"sink {spec.name}: {spec.collection}'s changes to topic {spec.topic} ({spec.format}); "
        f"`sinks run {spec.name}` publishes them"
    )
    return 0


def _table(specs: list[SinkSpec]) -> TableView:
    return TableView(
        title=f"sinks: {len(specs)}",
        columns=["sink", "collection", "topic", "format"],
        rows=[(s.name, s.collection, s.topic, s.format) for s in specs],
        empty="no sinks; `sinks create NAME --collection C --topic T` makes one",
    )


def run_list(args: argparse.Namespace) -> int:
    client = connected_client(_endpoints().redis_url)
    try:
        specs = SinkCatalog(client).all()
    finally:
        client.close()
    show(args.format, [s.record() for s in specs], _table(specs), headers=not args.no_headers)
    return 0


def shown_json(spec: SinkSpec, collection: CollectionSpec, liveness: Liveness) -> dict[str, Any]:
    """What ``sinks show --format json`` prints: the sink, its progress topic, its process'
    state, position and lag as ``status`` shows them, and an avro sink's value schema."""
    return {
        **spec.record(),
        "progress_topic": spec.progress_topic,
        **sink_summary(spec, liveness),
        "value_schema": envelope_schema(collection) if spec.format == "avro" else None,
    }


def run_show(args: argparse.Namespace) -> int:
    client = connected_client(_endpoints().redis_url)
    try:
        spec = SinkCatalog(client).get(args.name)
        collection = Catalog(client).spec(spec.collection)
        document = shown_json(spec, collection, read_liveness(client, SINK, spec.name))
    finally:
        client.close()
    table = TableView(
        title=f"sink {spec.name}",
        columns=["field", "value"],
        rows=[(k, v) for k, v in document.items() if k != "value_schema"],
        empty="",
        null="-",
    )
    show(args.format, document, table, headers=not args.no_headers)
    return 0


def run_drop(args: argparse.Namespace) -> int:
    what = f"forget sink {args.name} (its topics stay in Kafka)"
    if (code := stop_before(args, what)) is not None:
        return code
    client = connected_client(_endpoints().redis_url)
    try:
        dropped = SinkCatalog(client).drop(args.name)
    finally:
        client.close()
    print(f"dropped sink {args.name}" if dropped else f"no sink {args.name}: nothing to drop")
    return 0


def run_sink(args: argparse.Namespace) -> int:
    """The sink's process: publishes until SIGTERM/SIGINT (or ``--duration``)."""
    config = from_env(SinkConfig)
    endpoints = _endpoints(("redis", "kafka"))
    client = connected_client(endpoints.redis_url)
    try:
        _run_sink(args, config, endpoints, client)
    finally:
        client.close()
    return 0


def _run_sink(args: argparse.Namespace, config: SinkConfig, endpoints: Any, client: Any) -> None:
    spec = SinkCatalog(client).get(args.name)
    process = SinkProcess(spec, client, endpoints.kafka_bootstrap, config)
    health = Health()
    health.watch_loop("sink", max_age_s=60.0)
    health.add_check("sink", recent("publish round", lambda: process.last_round_ms, 60.0))
    endpoint = serve(config.sink_metrics_address, _SETTING, metrics.REGISTRY, health)
    stop = stop_on_signals()
    # A timer, not a check between rounds: --duration holds during an outage too.
    timer = threading.Timer(args.duration or 0, stop.set)
    if args.duration is not None:
        timer.start()
    where = "" if endpoint is None else f"; metrics and health at {endpoint.url}"
    print(f"sink {spec.name}: {spec.collection} to topic {spec.topic}{where}", flush=True)
    heartbeat = Heartbeat(
        endpoints.redis_url,
        SINK,
        spec.name,
        lambda: {
            "position": None if process.position is None else process.position.text(),
            "behind": process.behind,
        },
    ).start()
    try:
        process.run(stop, lambda: health.beat("sink"))
    finally:
        timer.cancel()
        heartbeat.stop()
        if endpoint is not None:
            endpoint.close()
