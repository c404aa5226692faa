"""The store's libraries of every version in Redis: which are loaded, which are in use,
and removing one no live process uses (docs/concepts/upgrades.md).

A process that calls its library for as long as it runs (the consumer) marks it in use
with each heartbeat: ``cm:library-in-use:<library>`` expires a few missed beats after the
last, so a SIGKILLed consumer stops holding its library within ``ALIVE_EXPIRY_S``. One key
per library, never per process or per replica: bounded by the versions loaded.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import redis

from collection_manager.storage.client import as_text, on_every_primary, primaries
from collection_manager.storage.errors import StorageError
from collection_manager.storage.library import LIBRARY_PREFIX, library_name

# 0.1.0's library, named before names carried the version.
FIRST_LIBRARY = "cm"
_VERSIONED = re.compile(f"{LIBRARY_PREFIX}[0-9a-f]{{16}}")


def in_use_key(library: str) -> str:
    """The expiring key that exists while a live process uses ``library``."""
    return f"cm:library-in-use:{library}"


@dataclasses.dataclass(frozen=True)
class LoadedLibrary:
    """One of the store's libraries in Redis.

    Attributes:
        name: ``cm_<version>`` (``cm`` for 0.1.0's).
        primaries: how many primaries hold it (all of them, but while a load is under way).
        user: what uses it (``consumer:<topic>``), or None when no live process does.
        current: whether it is this version's.
    """

    name: str
    primaries: int
    user: str | None
    current: bool


def _is_store_library(name: str) -> bool:
    """``cm``, or ``cm_`` and a version (16 hex digits): never another program's library."""
    return (
        name == FIRST_LIBRARY or re.fullmatch(f"{LIBRARY_PREFIX}[0-9a-f]{{16}}", name) is not None
    )


def _library_name(entry: Any) -> str:
    """The name in one entry of ``FUNCTION LIST``: a dict (RESP3, or redis-py's parsing of
    RESP2) or the flat list of a raw RESP2 reply."""
    fields = entry if isinstance(entry, dict) else dict(zip(entry[::2], entry[1::2], strict=True))
    return as_text(fields.get(b"library_name") or fields["library_name"])


def loaded_libraries(client: redis.Redis) -> list[LoadedLibrary]:
    """The store's libraries every primary holds, by name."""
    counts: dict[str, int] = {}
    for reply in on_every_primary(client, "FUNCTION", "LIST"):
        for entry in reply:
            name = _library_name(entry)
            if _is_store_library(name):
                counts[name] = counts.get(name, 0) + 1
    users = {name: client.get(in_use_key(name)) for name in counts}
    return [
        LoadedLibrary(name, count, _text(users[name]), name == library_name())
        for name, count in sorted(counts.items())
    ]


def _text(raw: bytes | str | None) -> str | None:
    return None if raw is None else as_text(raw)


def remove_library(client: redis.Redis, name: str) -> None:
    """Deletes the store's library ``name`` from every primary, unless a live process uses it.

    Raises:
        StorageError: when ``name`` is no library of the store, or is in use.
    """
    if not _is_store_library(name):
        raise StorageError(
            f"{name!r} is no library of the store (cm, or cm_ and 16 hex digits of a version)"
        )
    user = client.get(in_use_key(name))
    if user is not None:
        raise StorageError(
            f"library {name} is in use by the live {as_text(user)}: upgrade or stop it first"
        )
    for node in primaries(client):
        try:
            node(["FUNCTION", "DELETE", name])
        except redis.ResponseError as exc:  # a primary that never got it (a load cut short)
            if "library not found" not in str(exc).lower():
                raise StorageError(f"removing library {name} failed: {exc}") from exc
