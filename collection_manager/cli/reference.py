"""The command-line reference, ``docs/reference/cli.md``, rendered from the parser itself.

Every command (``NOUN VERB``, or one of the few top-level ones), its one-line help, and a
table of its arguments and options with their defaults, walked from
:func:`~collection_manager.cli.main.build_parser` as ``--help`` shows them; then the old
spellings that still work for one release (:data:`~collection_manager.cli.deprecated.ALIASES`).
A unit test fails when the page differs. Regenerate it after changing a command::

    .venv/bin/python -m collection_manager.cli.reference --write docs/reference/cli.md
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator, Sequence

from collection_manager.cli.deprecated import ALIASES
from collection_manager.cli.main import build_parser
from collection_manager.config.generated_page import page_command

PAGE = "docs/reference/cli.md"
REGENERATE = f"python -m collection_manager.cli.reference --write {PAGE}"

_INTRO = """\
# Command line

Every command is `collection-manager NOUN VERB [ARGUMENTS]`, but for `setup`, `status` and
`demo`. Each takes `-v`/`--verbose` (log progress; errors show their causes) before or
after the command, and `-h`/`--help`. The commands that print rows take `--format
table|tsv|json` (table on a terminal, tsv when piped) and `--no-headers`; the ones that
cannot be undone ask first on a terminal, refuse elsewhere without `--yes`, and say what
they would do with `--dry-run`. This page is generated from the parser; a unit test fails
when it differs.
"""

_OLD = """\
## Old spellings

These still work for one release: each prints one line to stderr naming its new spelling,
and none shows in `--help`.

| Old | New |
|---|---|
"""

_COMMON = ("-h", "-v")


def parsers(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every parser, groups included, with the words that reach it, the top level first."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from parsers(sub, (*path, name))


def is_group(parser: argparse.ArgumentParser) -> bool:
    """Whether the parser only chooses among commands (``collections``) rather than runs one."""
    return any(isinstance(a, argparse._SubParsersAction) for a in parser._actions)


def commands(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser, str]]:
    """Every command that runs (no group), with its words and its one-line help."""
    for action in parser._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue
        helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
        for name, sub in action.choices.items():
            if is_group(sub):
                yield from commands(sub, (*path, name))
            else:
                yield (*path, name), sub, helps.get(name, "")


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def default_text(action: argparse.Action) -> str:
    """How the table shows an option's default: ``-`` for none."""
    if action.required:
        return "required"
    default = action.default
    if isinstance(action, argparse._StoreTrueAction):
        return "off"
    if default is None or default is argparse.SUPPRESS or default == []:
        return "-"
    return f"`{default}`"


def _name(action: argparse.Action) -> str:
    if not action.option_strings:
        return f"`{action.metavar or action.dest}`"
    names = ", ".join(action.option_strings)
    if action.nargs == 0:
        return f"`{names}`"
    value = action.metavar
    if value is None and action.choices is not None:
        value = "{" + ",".join(map(str, action.choices)) + "}"
    return f"`{names} {value or action.dest.upper()}`"


def _section(path: Sequence[str], parser: argparse.ArgumentParser, summary: str) -> str:
    formatter = parser._get_formatter()
    lines = [f"## `{' '.join(path)}`", "", _cell(summary), ""]
    rows = [
        action
        for action in parser._actions
        if action.help is not argparse.SUPPRESS and not set(action.option_strings) & set(_COMMON)
    ]
    if rows:
        lines += ["| Argument | Default | Meaning |", "|---|---|---|"]
        for action in rows:
            meaning = _cell(formatter._expand_help(action))
            lines.append(f"| {_name(action)} | {default_text(action)} | {meaning} |")
        lines.append("")
    if path == ("replicas", "run"):
        lines += [
            "A source's own options follow `--source NAME`: `replicas sources` lists them.",
            "",
        ]
    return "\n".join(lines)


def render_reference() -> str:
    """The markdown of every command, then the old spellings."""
    sections = [_section(path, sub, summary) for path, sub, summary in commands(build_parser())]
    old = [f"| `{before}` | `{after}` |" for before, after in ALIASES.items()]
    return "\n".join(sections) + "\n" + _OLD + "\n".join(old) + "\n"


def render_page() -> str:
    """The whole page: the generated-page mark, the title, then the commands."""
    return f"<!-- generated by {REGENERATE}; do not edit -->\n\n{_INTRO}\n{render_reference()}"


def main(argv: Sequence[str] | None = None) -> int:
    """Prints the page, writes it to a file, or checks a file against it."""
    return page_command(
        argv,
        prog="python -m collection_manager.cli.reference",
        description=__doc__.split("\n")[0],
        render=render_page,
        regenerate=REGENERATE,
    )


if __name__ == "__main__":
    sys.exit(main())
