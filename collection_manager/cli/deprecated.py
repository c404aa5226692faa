"""The old spellings of the command line, kept for one release (issue 45, "One command grammar").

:data:`ALIASES` is the one table of old spelling -> new spelling: the command line
rewrites an old command before it parses it (so argparse, and every ``--help``, knows only
the new ones), and the docs checker imports the table to refuse old spellings in the docs.
An entry whose last word is an option (``demo --timeout``) is an option of that command,
taken by :class:`DeprecatedOption`. Each old spelling used prints one line to stderr:

    collection-manager: 'consume' is deprecated; use 'consumer run'
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

PROG = "collection-manager"

# Old spelling -> new spelling, words as typed. Removed in the release after the next.
ALIASES: dict[str, str] = {
    "consume": "consumer run",
    "serve": "server run",
    "query": "collections query",
    "tail": "collections tail",
    "collections describe": "collections show",
    "replicas": "replicas list",
    "replica run": "replicas run",
    "replica sources": "replicas sources",
    "replica remove": "replicas remove",
    "bench all": "bench run",
    "collections tail --limit": "collections tail -n",
    "demo --timeout": "demo --within",
}

# Options that were the top level's, given before the command; now each reading command's.
MOVED_OPTIONS = ("--format", "--no-headers")

# The verbs of a noun whose old spelling was the noun alone: `replicas` listed them.
_VERBS = {"replicas": ("list", "run", "sources", "remove")}
_HELP = ("-h", "--help")
# Top-level options before the command: those that take a value.
_TAKES_VALUE = ("--format",)


def notice(old: str) -> str:
    """The one line an old spelling prints."""
    return f"{PROG}: '{old}' is deprecated; use '{ALIASES[old]}'"


def _commands() -> list[tuple[list[str], list[str]]]:
    """The old commands (not options), longest first, as word lists."""
    pairs = [
        (old.split(), new.split())
        for old, new in ALIASES.items()
        if not old.split()[-1].startswith("-")
    ]
    return sorted(pairs, key=lambda pair: -len(pair[0]))


def _command_start(argv: Sequence[str]) -> tuple[int, list[str]]:
    """Where the command's first word is, and the moved options given before it."""
    position, moved = 0, list[str]()
    while position < len(argv) and argv[position].startswith("-"):
        word = argv[position]
        name = word.split("=", 1)[0]
        if name in MOVED_OPTIONS:
            takes = name in _TAKES_VALUE and "=" not in word and position + 1 < len(argv)
            moved += argv[position : position + 1 + takes]
            position += 1 + takes
            continue
        position += 1
    return position, moved


def rewrite(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """``argv`` in the new spellings, and the deprecation lines to print (one per old one).

    Options before the command that are now the command's (``--format``) go after it.
    """
    start, moved = _command_start(argv)
    leading = [word for word in argv[:start] if word not in moved]
    rest = list(argv[start:])
    lines = []
    if moved:
        lines.append(
            f"{PROG}: '{moved[0].split('=')[0]}' before the command is deprecated; "
            "give it after the command"
        )
    for old, new in _commands():
        if rest[: len(old)] != old:
            continue
        following = rest[len(old) : len(old) + 1]
        verbs = _VERBS.get(" ".join(old))
        if verbs and following and following[0] in (*verbs, *_HELP):
            break  # the new spelling, or help, of a noun that was a command of its own
        lines.append(notice(" ".join(old)))
        rest = [*new, *_old_defaults(old, rest[len(old) :])]
        break
    return [*leading, *rest, *moved], lines


def _old_defaults(old: list[str], rest: list[str]) -> list[str]:
    """The arguments of an old command, with what it did by default made explicit where the
    new one's default differs: the old ``tail`` printed from time 0, at most 100 changes,
    and with ``-f`` only new ones."""
    if old != ["tail"]:
        return rest
    # Its --limit is part of the old spelling: one line for the two.
    rest = ["-n" if word == "--limit" else word for word in rest]
    rest = [f"-n={word[8:]}" if word.startswith("--limit=") else word for word in rest]
    given = {word.split("=", 1)[0] for word in rest}
    follow = bool(given & {"-f", "--follow"})
    since = "--since" in given
    counted = bool(given & {"-n", "--limit"})
    added: list[str] = []
    if not since and not follow:
        added += ["--since", "0"]
    if not counted:
        added += ["-n", "0" if follow and not since else "100"]
    return [*rest, *added]


class DeprecatedOption(argparse.Action):
    """An old option's name (``help`` hidden): prints its line, then stores as the new one."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        self.old = kwargs.pop("old")
        kwargs["help"] = argparse.SUPPRESS
        kwargs.setdefault("default", argparse.SUPPRESS)
        super().__init__(option_strings, dest, **kwargs)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        print(notice(self.old), file=sys.stderr)
        setattr(namespace, self.dest, values)


def add_deprecated_option(
    parser: argparse.ArgumentParser, old: str, dest: str, **kwargs: Any
) -> None:
    """Adds the old option of the :data:`ALIASES` entry ``old`` (``demo --timeout``),
    storing into the new option's ``dest``; hidden from ``--help``."""
    parser.add_argument(old.split()[-1], action=DeprecatedOption, dest=dest, old=old, **kwargs)
