"""The sources' own options in the CLI: ``replicas sources`` and ``replicas run --help``.

A source's options follow ``--source NAME`` on the ``replicas run`` line and are parsed by
the source itself, so argparse does not know them; both places ask the plugins, and only
when they are shown (loading every plugin would slow each start of the CLI).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from collection_manager.config.errors import ConfigError

RUN_PROG = "collection-manager replicas run"
DEFAULT_SOURCE = "simulated"


def run_sources(_args: argparse.Namespace) -> int:
    """Lists every source with what it publishes and its own options."""
    from producers.sources.plugin import load_source, options_help, source_names

    for name in source_names():
        plugin = load_source(name)
        published = ", ".join(
            c.name + (" (rows expire)" if c.expires else "") for c in plugin.collections
        )
        print(f"{name}: {plugin.summary}\n  publishes: {published}")
        print("  " + options_help(plugin, RUN_PROG).rstrip().replace("\n", "\n  ") + "\n")
    return 0


def sources_sections() -> str:
    """Each source's options as a help section, the default source's first."""
    from producers.sources.plugin import load_source, options_section, source_names

    names = sorted(source_names(), key=lambda name: name != DEFAULT_SOURCE)
    sections = []
    for name in names:
        default = " (the default)" if name == DEFAULT_SOURCE else ""
        try:
            plugin = load_source(name)
        except ConfigError as exc:  # a broken plugin: its line says so, the help goes on
            sections.append(f"options of --source {name}: cannot be shown: {exc}\n")
            continue
        sections.append(options_section(plugin, f"options of --source {name}{default}"))
    return "\n".join(sections)


class HelpWithSources(argparse._HelpAction):
    """``-h``/``--help`` of ``replicas run``: its help, then every source's own options."""

    def __call__(self, parser: argparse.ArgumentParser, *_args: Any, **_kwargs: Any) -> None:
        parser.print_help()
        print(f"\n{sources_sections()}", end="", file=sys.stdout)
        parser.exit()
