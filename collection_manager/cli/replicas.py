"""Replicas: ``replicas list|run|sources|remove``.

What ``replicas run`` does is in ``cli/replica_agent.py``; the controller these commands
connect, and its own ``controller run``, in ``cli/controller.py``.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from collection_manager import devservices
from collection_manager.answers import to_json
from collection_manager.cli.confirm import add_confirmation, stop_before
from collection_manager.cli.controller import connect_controller
from collection_manager.cli.output import TableView, add_format_option, moment, plural, show
from collection_manager.cli.replica_agent import run_replica
from collection_manager.cli.source_options import (
    DEFAULT_SOURCE,
    HelpWithSources,
    run_sources,
)
from collection_manager.config import InfraConfig, from_env
from collection_manager.control.controller import ReplicaStatus, now_ms
from collection_manager.control.errors import NotAMemberError
from collection_manager.control.members import REMOVED
from collection_manager.reading.replicas import replicas_of


def register(commands: Any) -> None:
    """Adds ``replicas``."""
    replicas = commands.add_parser(
        "replicas", help="list replicas, run a replica agent, or remove a replica"
    )
    actions = replicas.add_subparsers(dest="action", required=True)
    listing = actions.add_parser("list", help="replicas, epochs, leases, heartbeats")
    add_format_option(listing, {"replicas list": replicas_json(EXAMPLE_REPLICAS, EXAMPLE_NOW)})
    listing.add_argument(
        "--all",
        action="store_true",
        help="also the removed replicas still within the retention (CM_REPLICA_RETENTION_MS)",
    )
    listing.set_defaults(run=run_replicas)
    _add_run(actions)
    sources = actions.add_parser(
        "sources", help="the sources `replicas run --source` can name, with their options"
    )
    sources.set_defaults(run=run_sources)
    remove = actions.add_parser("remove", help="retract a replica's rows and fence its epoch")
    remove.add_argument("replica_id", help="the replica's id")
    remove.add_argument(
        "--reason",
        default="removed by an operator",
        help="recorded with the removal (default: removed by an operator)",
    )
    add_confirmation(remove)
    remove.set_defaults(run=run_remove)


def _add_run(actions: Any) -> None:
    run = actions.add_parser(
        "run", help="add a replica and run its agent until SIGTERM", add_help=False
    )
    run.add_argument(
        "-h",
        "--help",
        action=HelpWithSources,
        help="show this help, then each source's own options, and exit",
    )
    run.add_argument("--id", required=True, dest="replica_id", help="the replica id")
    run.add_argument(
        "--source",
        default=DEFAULT_SOURCE,
        help=f"what to introspect (default {DEFAULT_SOURCE}); its own options follow it "
        "(below, and in `collection-manager replicas sources`)",
    )
    _add_pace(run)
    run.add_argument(
        "--replace",
        action="store_true",
        help="when an agent still runs under this id (a live member), fence its epoch and "
        "run this one instead (default: refuse)",
    )
    run.add_argument(
        "--state-file",
        type=Path,
        help="with --steps: once they are all acknowledged, write the agent's rows there "
        "(JSON; default: none)",
    )
    run.set_defaults(run=run_replica, takes_source_options=True)


def _add_pace(run: argparse.ArgumentParser) -> None:
    """``replicas run``'s --rate, --steps and --duration: how fast its agent steps, and
    when it stops."""
    run.add_argument(
        "--rate",
        type=float,
        help="steps per second (default: one per CM_STEP_INTERVAL_MS, 1,000 ms: 1)",
    )
    run.add_argument(
        "--steps", type=int, help="stop changing after this many steps (default: never)"
    )
    run.add_argument(
        "--duration", type=float, help="stop after this many seconds (default: until stopped)"
    )


def run_remove(args: argparse.Namespace) -> int:
    """Removes a replica, once confirmed: retracts its rows everywhere and fences its epoch."""
    controller = connect_controller(devservices.running(from_env(InfraConfig)))
    try:
        what = (
            f"remove replica {args.replica_id}: retract its rows from every collection and "
            "fence its epoch (an agent still running under it stops)"
        )
        if (code := stop_before(args, what)) is not None:
            return code
        epoch = controller.remove_replica(args.replica_id, args.reason)
    finally:
        controller.close()
    if epoch is None:
        raise NotAMemberError(args.replica_id)
    print(f"removed replica {args.replica_id}: epoch {epoch} fenced, its rows retracted")
    return 0


def replicas_table(rows: Sequence[ReplicaStatus], now_ms: int) -> TableView:
    """One line per replica, or how to start the first one."""
    columns = ["id", "epoch", "state", "lease expires", "last heartbeat", "added", "reason"]
    cells = [
        (
            r.replica_id,
            r.epoch,
            r.state,
            moment(r.lease_expires_at, now_ms),
            moment(r.last_heartbeat_at, now_ms),
            moment(r.added_at, now_ms),
            r.reason,
        )
        for r in rows
    ]
    empty = "no live replicas; start one with `collection-manager replicas run --id r1`"
    return TableView(plural(len(rows), "replica"), columns, cells, empty, null="-")


EXAMPLE_REPLICAS = [
    ReplicaStatus("r1", 3, "active", 1735732810000, 1735732800500, 1735732000000, ""),
    ReplicaStatus("r2", 1, "removed", None, None, 1735731000000, "lease expired"),
]
EXAMPLE_NOW = 1735732805000


def replicas_json(rows: Sequence[ReplicaStatus], now: int) -> list[dict[str, Any]]:
    """Each replica as the API's ``/api/v1/replicas`` holds it (answers.models.Replica),
    its lease left by this machine's clock."""
    return [to_json(replica) for replica in replicas_of(rows, now)]


def run_replicas(args: argparse.Namespace) -> int:
    """Prints the live replicas (with ``--all`` the removed ones the retention keeps too),
    each with its epoch, state, lease expiry and last heartbeat."""
    controller = connect_controller(devservices.running(from_env(InfraConfig), needs=("redis",)))
    try:
        rows = [r for r in controller.replicas() if args.all or r.state != REMOVED]
    finally:
        controller.close()
    now = now_ms()
    show(
        args.format,
        replicas_json(rows, now),
        replicas_table(rows, now),
        headers=not args.no_headers,
    )
    return 0
