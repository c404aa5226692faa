"""The Lua scripts of the store, with the shared filter code prepended."""

from __future__ import annotations

from functools import cache
from importlib import resources


def _source(name: str) -> str:
    return resources.files(__package__).joinpath(name).read_text()


def _collection_script(name: str) -> str:
    return _source("filter.lua") + _source("collection.lua") + _source(name)


@cache
def apply_script() -> str:
    """Applies a chunk of planned operations to one collection (see apply.lua)."""
    return _collection_script("apply.lua")


@cache
def due_script() -> str:
    """Applies the scheduled retractions that are due (see due.lua)."""
    return _collection_script("due.lua")


@cache
def horizon_script() -> str:
    """Sets the expiration and rebuilds the schedule for it (see horizon.lua)."""
    return _collection_script("horizon.lua")


@cache
def read_script() -> str:
    """Reads a filtered snapshot of one collection (see read.lua)."""
    return _source("filter.lua") + _source("read.lua")


@cache
def drop_script() -> str:
    """Deletes one collection's keys, its index sets derived from its rows (see drop.lua)."""
    return _collection_script("drop.lua")
