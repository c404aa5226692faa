"""``collections tail``: a collection's change log, the newest changes by default.

As Unix ``tail``: the newest ``-n`` changes (default 10), oldest to newest; ``--since``
the changes from a time on (of a bucketed collection, after a cut), at most ``-n``, to go
on from where the last read stopped, or those applied in the last duration (``5m``: the
log records Redis's clock at each time, ``storage/log_clock.py``); ``-f`` goes on printing
new changes as they come. Every Redis call is bounded: the log is read through its reader
(``storage/change_log.py``) a few entries a call, the newest backwards from its end
(``ChangeLog.newest``), never the whole log.

A bucketed collection has a time per bucket and no order across them: its newest ``-n``
changes are the newest by the clocks the logs record, printed with their bucket and the
cut the read went through (``as_of``), which ``--since`` takes back to go on after it; with
``--since``, the first ``-n`` in bucket order (``at_most``).

Beside this module: ``cli/tail_since.py`` takes ``--since`` apart and cuts a bucketed read
back to ``-n``, ``cli/tail_follow.py`` follows (``-f``), ``cli/tail_views.py`` renders.
"""

from __future__ import annotations

import argparse
from typing import Any

from collection_manager.cli.deprecated import add_deprecated_option
from collection_manager.cli.output import add_format_option, collection_spec, show
from collection_manager.cli.stores import store_from_env
from collection_manager.cli.tail_follow import FOLLOW_POLL_S, follow, follow_cut
from collection_manager.cli.tail_since import (
    at_least,
    at_most,
    duration_ms,
    parse_since,
    since_argument,
)
from collection_manager.cli.tail_views import (
    cut_tail_json,
    cut_tail_table,
    newest_table,
    tail_json,
    tail_table,
)
from collection_manager.core.cut import Cut
from collection_manager.core.names import check_collection_name
from collection_manager.core.specs import CollectionSpec
from collection_manager.storage.reads import CutChanges
from collection_manager.storage.store import LogEntry, RedisStore

DEFAULT_COUNT = 10
EXAMPLE_BUCKETED = "frontiers_by_replica"
EXAMPLE_LOG = [
    LogEntry(41, ("r1", "u1", 0, 40), -1),
    LogEntry(41, ("r1", "u1", 0, 41), 1),
]
EXAMPLE_CUT_LOG = CutChanges([(1, entry) for entry in EXAMPLE_LOG], Cut((12, 41, 7, 9)))


def count_argument(text: str) -> int:
    """An argparse type: a count of changes, 0 or more."""
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {value}")
    return value


def add_tail(actions: Any, spec: CollectionSpec, bucketed: CollectionSpec, help_: str) -> None:
    """Adds ``collections tail`` to the ``collections`` group's ``actions``."""
    tail = actions.add_parser(
        "tail",
        help="a collection's newest changes (time, row, diff), or those since a time",
    )
    tail.add_argument("collection", help=help_)
    _add_count_and_since(tail)
    tail.add_argument(
        "-f",
        "--follow",
        action="store_true",
        help="then print new changes as they come, one per line (JSON lines with --format "
        f"json), asking Redis every {FOLLOW_POLL_S:g} s, until Ctrl-C or SIGTERM (exit 0)",
    )
    add_deprecated_option(tail, "collections tail --limit", "count", type=count_argument)
    add_format_option(
        tail,
        {
            "collections tail compute_frontiers --since 41": tail_json(spec, EXAMPLE_LOG),
            f"collections tail {EXAMPLE_BUCKETED} --since 12,40,7,9": cut_tail_json(
                bucketed, EXAMPLE_CUT_LOG
            ),
        },
    )
    tail.set_defaults(run=run_tail)


def _add_count_and_since(tail: argparse.ArgumentParser) -> None:
    """``-n`` and ``--since``: which changes are printed, or printed before following."""
    tail.add_argument(
        "-n",
        dest="count",
        type=count_argument,
        default=DEFAULT_COUNT,
        metavar="N",
        help=f"at most this many changes in all (default {DEFAULT_COUNT}): the newest, or "
        "with --since the first at or after it; of a bucketed collection, the newest by "
        "Redis's clock, or with --since the first in bucket order (going on from the as_of "
        "printed reads a time cut short again whole); with -f, what is printed before "
        "following (0: only new ones)",
    )
    tail.add_argument(
        "--since",
        type=since_argument,
        metavar="T",
        help="the changes at this time or later, oldest first (default: the newest -n); of "
        "a bucketed collection, a cut as as_of prints it (12,40,7): the changes after it; "
        "or a duration, a whole number of s, m, h or d (30s, 5m, 2h, 1d): the changes "
        "applied in the last one, by Redis's clock; with -f, every change from there on",
    )


def _store() -> RedisStore:
    return store_from_env()


def run_tail(args: argparse.Namespace) -> int:
    """Prints the newest changes, or those since ``--since``, oldest first; with ``-f``
    goes on with the new ones."""
    check_collection_name(args.collection)
    store = _store()
    spec = collection_spec(store, args.collection)
    within = None if args.since is None else duration_ms(args.since)
    if within is not None:  # where the last duration begins: then as --since that time/cut
        given: int | Cut | None = store.reader.since_clock(spec.name, within)
    else:
        given = parse_since(args.since, spec)
    headers = not args.no_headers
    if spec.buckets > 1:  # changes between consistent cuts, each with its bucket
        assert not isinstance(given, int)
        return _tail_cut(store, spec, given, args, headers)
    assert not isinstance(given, Cut)
    if args.follow:
        if given is None:
            entries, latest = store.reader.newest(spec.name, args.count)
            return follow(store, spec, latest + 1, args.format, headers, entries)
        return follow(store, spec, given, args.format, headers)
    if given is None:
        entries, latest = store.reader.newest(spec.name, args.count)
        table = newest_table(spec, entries, latest)
    else:
        entries = store.reader.tail(spec.name, given, args.count) if args.count else []
        _, latest = store.size(spec.name)
        table = tail_table(spec, entries, given, max(args.count, 1), latest)
    show(args.format, tail_json(spec, entries), table, headers=headers)
    return 0


def _tail_cut(
    store: RedisStore,
    spec: CollectionSpec,
    given: Cut | None,
    args: argparse.Namespace,
    headers: bool,
) -> int:
    if given is None:
        changes = store.reader.newest_buckets(spec.name, args.count)
    elif args.follow:
        return follow_cut(store, spec, given, args.format, headers)
    elif args.count:
        found = store.tail_buckets(spec.name, given, args.count)
        changes = at_least(at_most(found, args.count), given)
    else:
        changes = CutChanges([], given)
    if args.follow:
        return follow_cut(store, spec, changes.cut, args.format, headers, changes)
    table = cut_tail_table(spec, changes, given, max(args.count, 1))
    show(args.format, cut_tail_json(spec, changes), table, headers=headers)
    return 0
