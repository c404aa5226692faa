"""The Lua scripts of the store, with the shared filter code prepended."""

from __future__ import annotations

from functools import cache
from importlib import resources


def _source(name: str) -> str:
    return resources.files(__package__).joinpath(name).read_text()


@cache
def apply_script() -> str:
    """Applies a chunk of planned operations to one collection (see apply.lua)."""
    return _source("filter.lua") + _source("apply.lua")


@cache
def read_script() -> str:
    """Reads a filtered snapshot of one collection (see read.lua)."""
    return _source("filter.lua") + _source("read.lua")
