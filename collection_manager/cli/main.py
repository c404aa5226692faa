"""The ``collection-manager`` command line: one module per group of subcommands beside this one."""

from __future__ import annotations

import argparse
import contextlib
import functools
import logging
import os
import signal
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from collection_manager import release
from collection_manager.cli import (
    bench,
    collections,
    controller,
    functions,
    infra,
    pipeline,
    progress,
    replicas,
    serve,
    sinks,
    status,
)
from collection_manager.cli.deprecated import rewrite
from collection_manager.cli.faults import (
    FAILED,
    INTERRUPTED,
    PIPE_CLOSED,
    SERVICE_FAULTS,
    USAGE,
    causes,
    describe,
)
from collection_manager.cli.output import output_format
from collection_manager.config import LogConfig, from_env
from collection_manager.config.errors import ConfigError, UsageError
from collection_manager.config.roles import RoleNotInstalled
from collection_manager.kafka.producer import LIBRDKAFKA_LOGGER
from collection_manager.observability import logs
from collection_manager.observability.logs import json_line

SUBCOMMANDS = (
    infra,
    collections,
    pipeline,
    progress,
    status,
    replicas,
    controller,
    sinks,
    serve,
    functions,
    bench,
)


DESCRIPTION = (
    "Introspection data of a fleet of compute replicas, in one place: run the Spark "
    "consumer and the replica agents, and read the storage collections in Redis."
)


class _Parser(argparse.ArgumentParser):
    """Bad arguments get one ``error:`` line naming the command's ``--help``, not a usage dump.

    Every command's parser takes ``-v``, so it works before or after the command (as git's
    flags do); the value is only set where it is given (the top level's default is False).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.register("action", "parsers", _Commands)
        self.add_argument(
            "-v",
            "--verbose",
            action="store_true",
            default=argparse.SUPPRESS,
            help="log progress; errors show their causes",
        )

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"error: {message}\nsee: {self.prog} --help\n")


class _Commands(argparse._SubParsersAction):
    """Subcommands (nouns, and their verbs) whose ``--help`` opens with their one-line help,
    and that know their whole command line (``collection-manager collections tail``) for
    the line an error ends with."""

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser:
        kwargs.setdefault("description", kwargs.get("help"))
        parser: argparse.ArgumentParser = super().add_parser(name, **kwargs)
        parser.set_defaults(command_prog=parser.prog)
        return parser


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every subcommand."""
    parser = _Parser(prog="collection-manager", description=DESCRIPTION)
    parser.set_defaults(verbose=False)
    parser.add_argument("--version", action="version", version=f"%(prog)s {release.describe()}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for module in SUBCOMMANDS:
        module.register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script."""
    args = _parse_args(sys.argv[1:] if argv is None else argv)
    try:
        log_format = from_env(LogConfig).log_format
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return USAGE
    _configure_logs(args.verbose, log_format)
    say = functools.partial(_say, json_lines=log_format == "json")
    try:
        return int(args.run(args))
    except BrokenPipeError:  # an OSError, but no fault: entry() ends quietly
        raise
    except UsageError as exc:
        say(f"error: {exc}", f"see: {args.command_prog} --help")
        return USAGE
    except RoleNotInstalled as exc:
        say(f"error: {exc}")
        return FAILED
    except SERVICE_FAULTS as exc:
        say(f"error: {describe(exc)}", *(f"  {c}" for c in causes(exc) if args.verbose))
        return FAILED
    except KeyboardInterrupt:
        say("interrupted", level="WARNING")
        return INTERRUPTED


def _parse_args(argv: Sequence[str]) -> argparse.Namespace:
    """The command's arguments, with what every command reads set even where it takes none
    (``source_args``, ``format``, ``no_headers``)."""
    parser = build_parser()
    # Old spellings (cli/deprecated.py) become new ones, each saying so once on stderr.
    argv, notices = rewrite(argv)
    for line in notices:
        print(line, file=sys.stderr)
    # Unknown options are a source's own (`replicas run --source NAME ...`), parsed by it.
    args, rest = parser.parse_known_args(argv)
    if rest and not getattr(args, "takes_source_options", False):
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    args.source_args = rest
    # Given, or not (then: by where stdout goes); only the commands that print rows take it.
    args.format = output_format(getattr(args, "format", None))
    args.no_headers = getattr(args, "no_headers", False)
    return args


def _configure_logs(verbose: bool, log_format: str) -> None:
    logs.configure(logging.INFO if verbose else logging.WARNING, log_format)
    # librdkafka logs every failed connection attempt, dozens a second while a broker is
    # down; the commands say once what is unreachable, so its own lines are for -v.
    logging.getLogger(LIBRDKAFKA_LOGGER.name).setLevel(
        logging.INFO if verbose else logging.CRITICAL
    )


def _say(*lines: str, json_lines: bool, level: str = "ERROR") -> None:
    """What a command ends with on stderr: its lines, or with CM_LOG_FORMAT=json one JSON
    line holding them, as the log records before it are."""
    if json_lines:
        sys.stderr.buffer.write(json_line("\n".join(lines), "collection_manager.cli", level))
        sys.stderr.flush()
    else:
        print("\n".join(lines), file=sys.stderr)


def _reader_gone() -> int:
    """The reader of stdout went away (``| head -1``): no error, as for git or coreutils.

    As Python's documentation of SIGPIPE advises, stdout then points at /dev/null, so the
    flush at interpreter exit does not fail a second time with what is still buffered.
    """
    with contextlib.suppress(OSError, ValueError):  # ValueError: stdout is no real file
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    return PIPE_CLOSED


def entry() -> NoReturn:
    """The console script: :func:`main`, then exit with its code.

    Once ``main`` returned, the command's work is done: a Ctrl-C that lands while the
    interpreter shuts down would kill it with SIGINT instead of its exit code. stdout is
    flushed here, not at interpreter exit, so that a reader gone before the last lines is
    seen (and after argparse's exit too: ``--help | head -1``).
    """
    try:
        try:
            code = main()
        finally:
            sys.stdout.flush()
    except BrokenPipeError:
        code = _reader_gone()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    sys.exit(code)


if __name__ == "__main__":
    entry()
