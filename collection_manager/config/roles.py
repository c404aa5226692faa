"""Which of the product's roles this install can run, and the one line when it cannot.

``pip install collection-manager`` is what a replica's agent, the controller, the reading and
administering commands and the client run: Kafka, Avro and Redis clients, 50 MB. The
roles that need Spark or Arrow are extras (pyproject.toml), so that a fleet of agents never
carries a JVM's worth of libraries it does not start:

- ``consumer``: the Spark consumer (pyspark, and pandas and pyarrow for its batches);
- ``sql``: the Spark data sources of ``collection_manager.sql`` (the same three);
- ``server``: the HTTP API and the console (Starlette on uvicorn, and pyarrow for its Arrow
  answers).

A command of a role that is not installed stops before it imports anything of it, with
:class:`RoleNotInstalled` naming the extra. Only whether a module can be found is checked:
importing pyspark to see takes seconds.
"""

from __future__ import annotations

import importlib.util

from collection_manager.core.errors import CollectionManagerError

# Each role's modules beyond the core install, as pyproject.toml's extras install them.
ROLES: dict[str, tuple[str, ...]] = {
    "consumer": ("pyspark", "pandas", "pyarrow"),
    "sql": ("pyspark", "pandas", "pyarrow"),
    "server": ("pyarrow", "starlette", "uvicorn", "anyio"),
}


class RoleNotInstalled(CollectionManagerError):
    """A command of a role whose extra is not installed (the CLI prints one line)."""


def missing(role: str) -> list[str]:
    """The modules of ``role`` that this install lacks (none when it can run it)."""
    return [name for name in ROLES[role] if importlib.util.find_spec(name) is None]


def installed(role: str) -> bool:
    """Whether this install can run ``role``."""
    return not missing(role)


def require(what: str, *roles: str) -> None:
    """Raises :class:`RoleNotInstalled` naming the extras when any of ``roles`` is missing.

    Args:
        what: what needs them, for the message (``consumer run``).
        roles: keys of :data:`ROLES`.
    """
    lacking = {role: gaps for role in roles if (gaps := missing(role))}
    if lacking:
        names = " and ".join(lacking)
        modules = sorted({module for found in lacking.values() for module in found})
        raise RoleNotInstalled(
            f"{what} needs the {names} role{'s' if len(lacking) > 1 else ''}, which this "
            f"install lacks (no {', '.join(modules)}): "
            f"pip install 'collection-manager[{','.join(lacking)}]'"
        )
