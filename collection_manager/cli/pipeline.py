"""Running the pipeline: ``consumer run`` (the Spark consumer) and ``demo``."""

from __future__ import annotations

import argparse
import dataclasses
import signal
import sys
from collections.abc import Callable
from types import FrameType
from typing import Any, TypeVar

from collection_manager import devservices
from collection_manager.cli.deprecated import add_deprecated_option
from collection_manager.config import (
    ConsumerConfig,
    InfraConfig,
    ReplicaConfig,
    SparkConfig,
    from_env,
    redact_url,
    roles,
)

N = TypeVar("N", int, float)


def register(commands: Any) -> None:
    """Adds ``consumer run`` and ``demo``."""
    _add_consumer(commands)
    _add_demo(commands)


def _add_consumer(commands: Any) -> None:
    consumer = commands.add_parser("consumer", help="the Spark consumer")
    runs = consumer.add_subparsers(dest="action", required=True)
    consume = runs.add_parser("run", help="run the Spark consumer until SIGTERM")
    consume.add_argument("--master", help="Spark master (default CM_SPARK_MASTER or local[*])")
    consume.add_argument(
        "--duration", type=float, help="stop after this many seconds (default: until stopped)"
    )
    consume.set_defaults(run=run_consume)


def _add_demo(commands: Any) -> None:
    demo = commands.add_parser(
        "demo", help="replica agents, the controller and the Spark consumer, end to end"
    )
    demo.add_argument(
        "--duration",
        type=_at_least(10.0, float),
        default=30.0,
        help="seconds the replicas publish changes (default 30, at least 10)",
    )
    demo.add_argument(
        "--scale",
        type=_at_least(1, int),
        default=1,
        help="rows per replica grow with it: 8 x N dataflows on 4 workers (default 1)",
    )
    demo.add_argument(
        "--replicas",
        type=_at_least(3, int),
        default=3,
        help="replica agents (default 3, at least 3): one is removed, one killed",
    )
    demo.add_argument(
        "--within",
        type=float,
        default=120.0,
        metavar="SECONDS",
        help="seconds any one wait may take, e.g. for the consumer to start (default 120)",
    )
    demo.add_argument(
        "--keep",
        action="store_true",
        help="after the verdict, keep every process and the console running until Ctrl-C "
        "(default: stop them at once)",
    )
    add_deprecated_option(demo, "demo --timeout", "within", type=float)
    demo.set_defaults(run=run_demo)


def run_consume(args: argparse.Namespace) -> int:
    """Runs the consumer; exits 0 after a clean stop."""
    roles.require("consumer run", "consumer")
    from spark_consumers.run import run_consumer

    spark_config = from_env(SparkConfig)
    if args.master:
        spark_config = dataclasses.replace(spark_config, spark_master=args.master)
    infra_config = from_env(InfraConfig)
    endpoints = devservices.running(infra_config)
    # The controller's namespace: the consumer reads its epoch counters
    # (docs/concepts/epochs-and-fences.md).
    namespace = from_env(ReplicaConfig).replica_namespace
    config = from_env(ConsumerConfig)
    ready = _ready_line(config.topic, endpoints)
    run_consumer(config, spark_config, infra_config, endpoints, namespace, args.duration, ready)
    return 0


def _ready_line(topic: str, endpoints: devservices.Endpoints) -> Callable[[str | None], None]:
    """Prints the line that says the consumer runs, as ``controller run`` and ``replicas
    run`` do: with the listener's real address (the port 0 of a setting picks any)."""

    def ready(url: str | None) -> None:
        at = "" if url is None else f"; metrics and health at {url}"
        redis = redact_url(endpoints.redis_url)
        print(f"consumer running: {topic} from {endpoints.kafka_bootstrap} into {redis}{at}")
        sys.stdout.flush()  # a reader of a pipe (a supervisor, a test) sees it now

    return ready


def run_demo(args: argparse.Namespace) -> int:
    """Runs the demonstration; exits 1 unless Redis holds exactly what it must."""
    roles.require("demo", "consumer", "server")  # it runs a consumer, and the console
    from rich.console import Console

    from collection_manager.demo.runner import DemoOptions, Keep
    from collection_manager.demo.runner import run_demo as demo
    from collection_manager.demo.view import LiveReporter, PlainReporter, render_summary

    options = DemoOptions(args.duration, args.scale, args.replicas, args.within)
    console = Console()
    summary = console if console.is_terminal else Console(width=10_000)  # piped: never wrap
    # --keep: the verdict is printed before the wait, above a live view that goes on.
    keep = Keep(lambda r: summary.print(render_summary(r.verification))) if args.keep else None
    # SIGTERM unwinds like Ctrl-C, so the demo stops what it started either way.
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        if console.is_terminal:
            with LiveReporter(console) as live:
                result = demo(options, live, keep)
        else:
            result = demo(options, PlainReporter(), keep)
    except KeyboardInterrupt:
        print("interrupted; the demo stopped what it had started", file=sys.stderr)
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)
    if keep is None:
        summary.print(render_summary(result.verification))
    return 0 if result.verified else 1


def _interrupt(_signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def _at_least(minimum: N, kind: Callable[[str], N]) -> Callable[[str], N]:
    """An argparse type: ``kind`` of the text, at least ``minimum``."""

    def parse(text: str) -> N:
        value = kind(text)
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, not {text}")
        return value

    parse.__name__ = kind.__name__  # argparse names it in "invalid float value: 'x'"
    return parse
