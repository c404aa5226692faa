"""Sources as plugins: what a source declares, and how one is found by name.

A third party adds a source without forking: a package that declares an entry point in
the group ``collection_manager.sources`` whose object is a :class:`SourcePlugin`, e.g. in
its ``pyproject.toml``::

    [project.entry-points."collection_manager.sources"]
    mysource = "my_package.source:PLUGIN"

``replicas run --source mysource`` then loads it. The plugin declares the collections it
publishes (so the agent creates missing ones, and refuses to publish into one of another
shape) and adds its own command-line options. The built-in sources are known without
their entry points, so they work from a plain checkout too.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import logging
from collections.abc import Mapping, Sequence
from importlib.metadata import entry_points
from typing import Any, Protocol

from collection_manager.config.errors import ConfigError, UsageError
from collection_manager.core.specs import CollectionSpec
from producers.subscribe import Source
from schemas.introspection import REPLICA_COLUMN

logger = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "collection_manager.sources"

BUILT_IN = {
    "simulated": "producers.sources.simulated:PLUGIN",
    "openmetrics": "producers.sources.openmetrics:PLUGIN",
}
"""Built-in source name -> ``module:attribute`` of its plugin (also its entry point)."""

ROW_NAMESPACE = "collection_manager.rows"


@dataclasses.dataclass(frozen=True)
class SourceCollection:
    """One collection a source publishes.

    Attributes:
        name: the collection (the agent appends its collection suffix, if any).
        fields: the Avro fields of its rows after ``replica_id``, which the agent prepends
            to every row and which is the collection's indexed column.
        doc: what a row is, for the row schema.
        expires: whether its rows carry the agent's row TTL (``CM_ROW_TTL_MS``), so that
            they vanish when the agent goes silent, not only when its lease ends.
    """

    name: str
    fields: tuple[Mapping[str, Any], ...]
    doc: str = ""
    expires: bool = False

    def spec(self, suffix: str = "") -> CollectionSpec:
        """The collection's definition, as published with ``suffix``.

        Raises:
            InvalidNameError, SchemaError: for a bad name or field.
        """
        name = self.name + suffix
        schema = {
            "type": "record",
            "name": name,
            "namespace": ROW_NAMESPACE,
            "doc": self.doc,
            "fields": [{"name": REPLICA_COLUMN, "type": "string"}, *map(dict, self.fields)],
        }
        return CollectionSpec(name, schema, (REPLICA_COLUMN,))


@dataclasses.dataclass(frozen=True)
class SourceContext:
    """What a source learns of the agent it runs in.

    Attributes:
        replica_id: the replica (the agent prepends it to every row).
        step_interval_ms: time between two steps.
        row_ttl_ms: the TTL of the rows of expiring collections; 0 for none.
    """

    replica_id: str
    step_interval_ms: int
    row_ttl_ms: int


def field(name: str, avro_type: str, doc: str = "") -> dict[str, Any]:
    """An Avro field; a type ending in ``?`` is nullable (``"long?"``)."""
    kind: Any = ["null", avro_type[:-1]] if avro_type.endswith("?") else avro_type
    return {"name": name, "type": kind, "doc": doc} if doc else {"name": name, "type": kind}


class SourcePlugin(Protocol):
    """What an entry point of ``collection_manager.sources`` names.

    Attributes:
        name: the name ``--source`` takes.
        summary: one line for ``replicas sources``.
        collections: what it publishes.

    A plugin may also have ``collectors``: prometheus_client collectors of its own
    (unregistered), which ``replicas run`` serves beside the agent's metrics.
    """

    name: str
    summary: str
    collections: tuple[SourceCollection, ...]

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """Adds the source's own options (each with a help line showing its default)."""
        ...

    def create(self, options: argparse.Namespace, context: SourceContext) -> Mapping[str, Source]:
        """The sources of one agent, by collection name (before the suffix).

        Each collection gets its own :class:`~producers.subscribe.Source` object, stepped
        from that collection's thread; sources that read once for all collections share
        the read through :class:`~producers.sources.shared.SharedSource`. Options are
        checked here: bad ones raise ``ConfigError`` before the replica is added.
        """
        ...


def source_names() -> list[str]:
    """Every source that can be named: the built-in ones and the installed plugins."""
    found = {ep.name for ep in entry_points(group=ENTRY_POINT_GROUP)}
    return sorted(found | set(BUILT_IN))


def load_source(name: str) -> SourcePlugin:
    """The plugin ``--source name`` names.

    Raises:
        ConfigError: when no source has that name, its module fails to import, or what
            it names is no source plugin.
    """
    if name in BUILT_IN:
        target = BUILT_IN[name]
    else:
        matches = [ep for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.name == name]
        if not matches:
            raise ConfigError(
                f"--source {name}: no such source; known: {', '.join(source_names())} "
                f"(plugins register in the entry-point group {ENTRY_POINT_GROUP})"
            )
        target = matches[0].value
    plugin = _import(name, target)
    missing = [
        attribute
        for attribute in ("name", "summary", "collections", "add_arguments", "create")
        if not hasattr(plugin, attribute)
    ]
    if missing:
        raise ConfigError(
            f"--source {name}: {target} is no source plugin (it lacks {', '.join(missing)})"
        )
    return plugin


def _import(name: str, target: str) -> Any:
    module_name, _, attribute = target.partition(":")
    try:
        value: Any = importlib.import_module(module_name)
        for part in attribute.split(".") if attribute else ():
            value = getattr(value, part)
    except Exception as exc:  # a broken plugin is a clear error, never a traceback
        raise ConfigError(f"--source {name}: loading {target} failed: {exc!r}") from exc
    return value


def parse_options(plugin: SourcePlugin, args: Sequence[str], prog: str) -> argparse.Namespace:
    """Parses the source's own options from ``args`` (what the ``replicas run`` options left).

    Raises:
        UsageError: for an option the source does not know, or a bad value.
    """
    parser = _OptionParser(prog=f"{prog} --source {plugin.name}", add_help=False)
    plugin.add_arguments(parser)
    return parser.parse_args(list(args))


class _OptionParser(argparse.ArgumentParser):
    """Turns argparse's exit into a ``UsageError`` that the command reports (exit 2)."""

    def error(self, message: str) -> Any:
        raise UsageError(f"{self.prog}: {message}")


def options_help(plugin: SourcePlugin, prog: str) -> str:
    """The help text of a source's own options."""
    parser = argparse.ArgumentParser(
        prog=f"{prog} --source {plugin.name}",
        description=plugin.summary,
        add_help=False,
    )
    plugin.add_arguments(parser)
    return parser.format_help()


def options_section(plugin: SourcePlugin, title: str) -> str:
    """The source's own options as one help section headed ``title``, without a usage."""
    parser = argparse.ArgumentParser(usage=argparse.SUPPRESS, add_help=False)
    parser._optionals.title = title  # argparse's only handle on the section's heading
    plugin.add_arguments(parser)
    return parser.format_help()
