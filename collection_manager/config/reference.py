"""The configuration reference, ``docs/reference/settings.md``, rendered from the config classes.

Every user-facing setting is a field of a config dataclass read with
:func:`~collection_manager.config.settings.from_env`, declared with its default and a help text.
:func:`render_page` turns those classes into the whole page, one markdown table per class;
a unit test fails when the page differs.

Regenerate the page after changing a setting::

    .venv/bin/python -m collection_manager.config.reference --write docs/reference/settings.md

``--check FILE`` exits 1 when ``FILE`` is out of date; without options the page is printed.
"""

from __future__ import annotations

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
    LogConfig,
    ReplicaConfig,
    SinkConfig,
    SparkConfig,
    env_name,
)
from collection_manager.config.generated_page import page_command

# The classes whose fields are CM_* settings, in the order the reference shows them.
# Plain dataclasses built in code (AgentConfig, ProducerConfig) are not settings.
CONFIG_CLASSES: tuple[type[Any], ...] = (
    InfraConfig,
    SparkConfig,
    ConsumerConfig,
    ReplicaConfig,
    HttpConfig,
    SinkConfig,
    LogConfig,
)

PAGE = "docs/reference/settings.md"
REGENERATE = f"python -m collection_manager.config.reference --write {PAGE}"

_INTRO = """\
# Settings

Every setting is an environment variable `CM_<FIELD>`, read when a command starts; an unset
variable keeps the default. Booleans accept `1`/`true`/`yes` and `0`/`false`/`no`; an empty
value unsets an optional setting; `~` in a path is expanded. Defaults under `~` follow
`XDG_CACHE_HOME` and `XDG_STATE_HOME` when those are set. This page is generated from the
classes of `collection_manager/config/`; a unit test fails when it differs.
"""

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
    lines = [f"## `{cls.__name__}`", ""]
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
    """The markdown tables of ``classes``: one per class, in order.

    The same on every machine: it depends on the classes only, not on the environment.
    """
    lines: list[str] = []
    with _reference_environment() as home:
        for cls in classes:
            lines += ["", *_section(cls, home)]
    return "\n".join(lines) + "\n"


def render_page(classes: Sequence[type[Any]] = CONFIG_CLASSES) -> str:
    """The whole page: the generated-page mark, the title and rules, then the tables."""
    return f"<!-- generated by {REGENERATE}; do not edit -->\n\n{_INTRO}{render_reference(classes)}"


def main(argv: Sequence[str] | None = None) -> int:
    """Prints the page, writes it to a file, or checks a file against it."""
    return page_command(
        argv,
        prog="python -m collection_manager.config.reference",
        description=__doc__.split("\n")[0],
        render=render_page,
        regenerate=REGENERATE,
    )


if __name__ == "__main__":
    sys.exit(main())
