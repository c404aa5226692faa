"""The configuration reference of ``docs/operations.md``, rendered from the config classes.

Every user-facing setting is a field of a config dataclass read with
:func:`~collection_manager.config.settings.from_env`, declared with its default and a help text.
:func:`render_reference` turns those classes into one markdown table per class; the docs
hold that text between two marker comments, and a unit test fails when it differs.

Regenerate the docs after changing a setting::

    .venv/bin/python -m collection_manager.config.reference --write docs/operations.md

``--check FILE`` exits 1 when the reference in ``FILE`` is out of date; without options the
reference is printed.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import sys
import types
import typing
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from collection_manager.config import (
    ConsumerConfig,
    HttpConfig,
    InfraConfig,
    ReplicaConfig,
    SparkConfig,
    env_name,
)
from collection_manager.core.errors import CollectionManagerError

# The classes whose fields are CM_* settings, in the order the reference shows them.
# Plain dataclasses built in code (AgentConfig, ProducerConfig) are not settings.
CONFIG_CLASSES: tuple[type[Any], ...] = (
    InfraConfig,
    SparkConfig,
    ConsumerConfig,
    ReplicaConfig,
    HttpConfig,
)

START_MARKER = "<!-- config-reference:start -->"
END_MARKER = "<!-- config-reference:end -->"
REGENERATE = "python -m collection_manager.config.reference --write docs/operations.md"

# Defaults computed from the environment (the home directory, XDG_* variables) are
# evaluated for this home and no XDG_* variables, then shown under ``~``, so the reference
# reads the same on every machine.
_REFERENCE_HOME = Path("/nonexistent-home-of-the-config-reference")

_TYPE_NAMES: dict[Any, str] = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    Path: "path",
}


@contextlib.contextmanager
def _reference_environment() -> Iterator[Path]:
    """Sets HOME to the reference home and hides XDG_* for the duration; restores both."""
    names = ["HOME", *(name for name in os.environ if name.startswith("XDG_"))]
    saved = {name: os.environ.get(name) for name in names}
    try:
        for name in names:
            os.environ.pop(name, None)
        os.environ["HOME"] = str(_REFERENCE_HOME)
        yield _REFERENCE_HOME
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def type_name(kind: Any) -> str:
    """A reader's name for a setting's type: ``integer``, ``path, optional``, ..."""
    if isinstance(kind, types.UnionType) or typing.get_origin(kind) is typing.Union:
        inner = [arg for arg in typing.get_args(kind) if arg is not type(None)]
        return f"{type_name(inner[0])}, optional"
    return _TYPE_NAMES.get(kind, getattr(kind, "__name__", str(kind)))


def default_text(value: object, home: Path) -> str:
    """A default as the reference shows it: ``unset``, ``empty``, or the value in backticks.

    Paths under ``home`` are shown relative to ``~``; booleans as the variable spells them.
    """
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, Path):
        if value.is_relative_to(home):
            return f"`{Path('~') / value.relative_to(home)}`"
        return f"`{value}`"
    if value == "":
        return "empty"
    return f"`{value}`"


def _default(field: dataclasses.Field[Any], home: Path) -> str:
    if field.default is not dataclasses.MISSING:
        return default_text(field.default, home)
    if field.default_factory is not dataclasses.MISSING:
        return default_text(field.default_factory(), home)
    return "required"


def _cell(text: str) -> str:
    # A table cell ends at "|", also inside backticks; GFM reads a backslash-escaped one as "|".
    return text.replace("|", "\\|")


def _escape(text: str) -> str:
    # Outside backticks, "<word>" would be taken for an HTML tag and vanish.
    return _cell(text).replace("<", "\\<").replace(">", "\\>")


def help_text(field: dataclasses.Field[Any]) -> str:
    """The help text a field was declared with (empty when it has none)."""
    return str(field.metadata.get("help", "")).strip()


def _section(cls: type[Any], home: Path) -> list[str]:
    hints = typing.get_type_hints(cls)
    lines = [f"### `{cls.__name__}`", ""]
    if cls.__doc__:
        lines += [cls.__doc__.strip().splitlines()[0], ""]
    lines += ["| Variable | Type | Default | Description |", "| --- | --- | --- | --- |"]
    for field in dataclasses.fields(cls):
        cells = (
            f"`{env_name(field.name)}`",
            type_name(hints[field.name]),
            _cell(_default(field, home)),
            _escape(help_text(field)),
        )
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def render_reference(classes: Sequence[type[Any]] = CONFIG_CLASSES) -> str:
    """The markdown reference of ``classes``: one table per class, in order.

    The same on every machine: it depends on the classes only, not on the environment.
    """
    lines = [
        f"<!-- Generated from collection_manager/config/settings.py by `{REGENERATE}`; "
        "do not edit by hand. -->"
    ]
    with _reference_environment() as home:
        for cls in classes:
            lines += ["", *_section(cls, home)]
    # The blank line ends the last table before the end marker.
    return "\n".join(lines) + "\n\n"


def _bounds(document: str, markers: tuple[str, str]) -> tuple[int, int]:
    begin, finish = markers
    start = document.find(begin)
    end = document.find(finish)
    if start < 0 or end < start:
        raise CollectionManagerError(
            f"the document has no {begin} ... {finish} section, in that order"
        )
    return start + len(begin), end


def extract_reference(document: str, markers: tuple[str, str] = (START_MARKER, END_MARKER)) -> str:
    """The text between the markers, without the newline after the start marker.

    Raises:
        CollectionManagerError: when the markers are missing or out of order.
    """
    start, end = _bounds(document, markers)
    return document[start:end].removeprefix("\n")


def replace_reference(
    document: str, reference: str, markers: tuple[str, str] = (START_MARKER, END_MARKER)
) -> str:
    """``document`` with the text between the markers replaced by ``reference``.

    Raises:
        CollectionManagerError: when the markers are missing or out of order.
    """
    start, end = _bounds(document, markers)
    return document[:start] + "\n" + reference + document[end:]


def main(argv: Sequence[str] | None = None) -> int:
    """Prints the reference, writes it into a document, or checks a document against it."""
    parser = argparse.ArgumentParser(
        prog="python -m collection_manager.config.reference", description=__doc__.split("\n")[0]
    )
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--write", type=Path, metavar="FILE", help="update FILE's reference")
    action.add_argument("--check", type=Path, metavar="FILE", help="exit 1 if FILE's differs")
    args = parser.parse_args(argv)
    reference = render_reference()
    try:
        if args.write is not None:
            document = args.write.read_text()
            args.write.write_text(replace_reference(document, reference))
        elif args.check is not None and extract_reference(args.check.read_text()) != reference:
            sys.stderr.write(f"{args.check}: the configuration reference is out of date; run\n")
            sys.stderr.write(f"  {REGENERATE}\n")
            return 1
        elif args.check is None:
            sys.stdout.write(reference)
    except (OSError, CollectionManagerError) as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
