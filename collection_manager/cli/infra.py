"""``collection-manager setup`` and ``infra up|down|status``: what development needs locally."""

from __future__ import annotations

import argparse
import dataclasses
import os
import shlex
from typing import Any

from collection_manager import devservices
from collection_manager.cli.confirm import add_confirmation, stop_before
from collection_manager.cli.faults import FAILED
from collection_manager.cli.output import FORMAT_HELP, TableView, add_output_options, show
from collection_manager.config import InfraConfig, from_env, redact_url
from collection_manager.config.errors import UsageError
from collection_manager.devservices import UNIDENTIFIED
from collection_manager.devservices.kafka_cluster import MIN_IN_SYNC, REPLICATION_FACTOR
from collection_manager.devservices.processes import GONE, REPLACED, STILL_RUNNING, STOPPED
from collection_manager.devservices.purge import purge, purge_targets
from collection_manager.devservices.replicated_layout import (
    PRIMARIES,
    REPLICAS_PER_PRIMARY,
    settings,
)
from collection_manager.storage.client import connected_client
from collection_manager.storage.library import install


def register(commands: Any) -> None:
    """Adds the ``setup`` and ``infra`` subcommands."""
    setup = commands.add_parser(
        "setup",
        help="install what the installed roles need once: jars, redis-server",
        description="Resolves the Kafka broker's jars (infra up) and, where the consumer "
        "role is installed, Spark's Kafka connector jars from Maven Central into the cache "
        "and, as root, installs Debian's redis-server when missing. Idempotent: a second run "
        "changes nothing and needs no network.",
    )
    setup.set_defaults(run=run_setup)
    parser = commands.add_parser("infra", help="local Kafka and Redis: up, down, status")
    actions = parser.add_subparsers(dest="action", required=True)
    _add_up(actions)
    _add_down(actions)
    status = actions.add_parser("status", help="each service: where it is, whether it answers")
    add_output_options(status, FORMAT_HELP)
    status.set_defaults(run=run)


def _add_up(actions: Any) -> None:
    up = actions.add_parser(
        "up",
        help="start a local Kafka and Redis where CM_KAFKA_BOOTSTRAP / CM_REDIS_URL name "
        "none (idempotent: running ones are reused)",
        description="Starts a local Kafka and Redis where CM_KAFKA_BOOTSTRAP / CM_REDIS_URL "
        "name none (idempotent: running ones are reused). With --replicated: three KRaft "
        "brokers (replication factor 3, min.insync.replicas 2) and a Redis Cluster of three "
        "primaries with two replicas each (AOF with appendfsync always, "
        "cluster-allow-replica-migration no, cluster-replica-validity-factor 0), on free "
        "loopback ports kept for the next start, with the store's functions loaded; it "
        "prints the settings every process that uses it needs, as export lines: "
        'eval "$(collection-manager infra up --replicated)". `infra down` stops them too.',
    )
    up.add_argument(
        "--replicated",
        action="store_true",
        help="start the replicated deployment instead (docs/howto/deploy-replicated.md); "
        "refused while CM_KAFKA_BOOTSTRAP or CM_REDIS_URL names other services",
    )
    up.set_defaults(run=run)


def _add_down(actions: Any) -> None:
    down = actions.add_parser(
        "down", help="stop the services `infra up` started (the replicated deployment's too)"
    )
    down.add_argument(
        "--purge",
        action="store_true",
        help="then delete what they, the demo and the consumer left in the state directory "
        "(CM_STATE_DIR: data, logs, checkpoints), for a clean start; the jar cache "
        "(CM_CACHE_DIR) stays",
    )
    add_confirmation(down)
    down.set_defaults(run=run)


def run_setup(_args: argparse.Namespace) -> int:
    """Runs ``setup``: prints where each needed piece is."""
    from collection_manager.devservices.setup import prepare

    for line in prepare(from_env(InfraConfig)):
        print(line)
    return 0


def _load_functions(redis_url: str) -> None:
    client = connected_client(redis_url)
    try:
        install(client)
    finally:
        client.close()


def run(args: argparse.Namespace) -> int:
    """Runs ``infra up``, ``down`` or ``status``."""
    config = from_env(InfraConfig)
    if args.action == "up" and args.replicated:
        replicated = devservices.up_replicated(config, os.environ)
        if any(name.startswith("redis-") for name in replicated.started):
            _load_functions(replicated.layout.redis_url)
        print("\n".join(replicated_lines(replicated)))
        return 0
    if args.action == "up":
        endpoints = devservices.up(config)
        if "redis" in endpoints.started:  # a Redis of its own: ready for readers at once
            _load_functions(endpoints.redis_url)
        print(f"kafka {endpoints.kafka_bootstrap}\nredis {redact_url(endpoints.redis_url)}")
        if endpoints.started:
            started = ", ".join(endpoints.started)
            print(f"started: {started} (stop with: collection-manager infra down)")
        return 0
    if args.action == "down":
        return _down(args, config)
    # A configured URL may hold a password: never print it.
    statuses = [
        dataclasses.replace(r, address=redact_url(r.address)) for r in devservices.status(config)
    ]
    rows = [
        (r.name, r.source, r.address, r.pid, "yes" if r.answers else "no", r.log) for r in statuses
    ]
    columns = ["service", "source", "address", "pid", "answers", "log"]
    table = TableView("services", columns, rows, empty="no services")
    show(
        args.format,
        [dataclasses.asdict(row) for row in statuses],
        table,
        headers=not args.no_headers,
    )
    return 0


def replicated_lines(replicated: devservices.Replicated) -> list[str]:
    """What ``infra up --replicated`` prints: comments, then the settings as ``export``
    lines, so that ``eval "$(collection-manager infra up --replicated)"`` sets them."""
    layout = replicated.layout
    lines = [
        f"# kafka: {len(layout.brokers)} brokers, replication factor {REPLICATION_FACTOR}, "
        f"min.insync.replicas {MIN_IN_SYNC}",
        f"# redis: a Redis Cluster of {PRIMARIES} primaries with {REPLICAS_PER_PRIMARY} "
        "replicas each",
    ]
    if replicated.started:
        started = ", ".join(replicated.started)
        lines.append(f"# started: {started} (stop with: collection-manager infra down)")
    lines.append(
        "# every process that uses it needs these settings "
        '(eval "$(collection-manager infra up --replicated)" sets them):'
    )
    lines += [f"export {name}={shlex.quote(value)}" for name, value in settings(layout).items()]
    return lines


# What ``infra down`` says of a recorded service it did not stop.
_NOT_STOPPED = {
    GONE: "{name} (pid {pid}) was not running any more; its record is removed",
    REPLACED: "{name} was not running any more: pid {pid} is another process now, which "
    "was not signalled; the record is removed",
    STILL_RUNNING: "{name} (pid {pid}) did not exit after SIGKILL; it stays recorded",
    UNIDENTIFIED: "{name}: pid {pid} was recorded by an older version without its start "
    "time, so it cannot be told from a process that reused the pid; it was not signalled "
    "and stays recorded: stop it by pid if it is {name}, then run `infra down` again",
}


def _down(args: argparse.Namespace, config: InfraConfig) -> int:
    """``infra down``; with ``--purge``, once every service stopped, the state directory's
    contents go too (asked first, as every command that cannot be undone)."""
    if not args.purge:
        if args.yes or args.dry_run:  # a dry run that stopped the services would surprise
            raise UsageError("--yes and --dry-run go with `infra down --purge`")
        return _report_down(devservices.down(config))
    names = ", ".join(t.name for t in purge_targets(config)) or "nothing yet"
    what = (
        f"stop the local services and delete {names} in {config.state_dir} (their data and "
        f"logs, the consumer's checkpoints); the jar cache {config.cache_dir} stays"
    )
    if (stopped := stop_before(args, what)) is not None:
        return stopped
    if _report_down(devservices.down(config)) != 0:
        print(f"nothing deleted: a service may still run on its data in {config.state_dir}")
        return FAILED
    targets = purge_targets(config)
    purge(targets)
    removed = ", ".join(t.name for t in targets) or "nothing"
    print(f"deleted: {removed} in {config.state_dir}; kept: the jar cache {config.cache_dir}")
    return 0


def _report_down(stops: list[devservices.Stop]) -> int:
    stopped = [f"{s.name} (pid {s.pid})" for s in stops if s.outcome == STOPPED]
    print(f"stopped: {', '.join(stopped) or 'nothing was running'}")
    for stop in stops:
        if stop.outcome != STOPPED:
            print(_NOT_STOPPED[stop.outcome].format(name=stop.name, pid=stop.pid))
    # A service that may still run is a failure to stop it: scripts must notice.
    return 1 if any(s.outcome in (STILL_RUNNING, UNIDENTIFIED) for s in stops) else 0
