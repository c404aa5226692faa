"""The contract between the Python store and its Redis library, checked without Redis."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import pytest
import redis

from collection_manager.storage.counters import APPLY_COUNTERS, COUNTERS, SHOWN_COUNTERS
from collection_manager.storage.errors import FunctionsNotLoadedError, StorageError
from collection_manager.storage.keys import FUNCTION_KEYS, CollectionKeys
from collection_manager.storage.library import (
    FUNCTIONS,
    PARTS,
    call,
    function_name,
    install,
    library,
    library_name,
    part_source,
)
from tests.model.model import ModelCounters


def code(lua: str) -> str:
    """Lua without its comments (no string of the library holds ``--``)."""
    return re.sub(r"--[^\n]*", "", lua)


LUA = code("\n".join(part_source(name) for name in PARTS))


def test_every_counter_list_is_drawn_from_the_one_tuple() -> None:
    assert len(set(COUNTERS)) == len(COUNTERS)
    for subset in (APPLY_COUNTERS, SHOWN_COUNTERS):
        assert [c for c in COUNTERS if c in subset] == list(subset)
    assert "scheduled_retractions" not in APPLY_COUNTERS  # the timer counts it, not requests


def test_the_oracle_counts_under_the_store_names() -> None:
    assert {f.name for f in dataclasses.fields(ModelCounters)} <= set(COUNTERS)


def test_the_library_counts_exactly_the_python_counters() -> None:
    assert set(re.findall(r"\bcounts\.(\w+)", LUA)) == set(COUNTERS)
    source, _ = library()
    assert f"local COUNTERS = {{'{COUNTERS[0]}', " in source


def test_the_library_registers_every_function_python_calls() -> None:
    registered = re.findall(
        r"register_function\W+(?:function_name\s*=\s*)?PREFIX \.\. '(\w+)'", LUA
    )
    assert sorted(registered) == sorted(FUNCTIONS)
    assert len(re.findall(r"register_function", LUA)) == len(FUNCTIONS)


def test_the_library_names_keys_as_python_does() -> None:
    assert set(FUNCTION_KEYS) <= {name for name in dir(CollectionKeys) if not name.startswith("_")}
    used = set(re.findall(r"\b(?:k|keys)\.(\w+)", LUA))
    assert used and used <= set(FUNCTION_KEYS)


def test_the_library_and_its_functions_are_named_by_the_version() -> None:
    # Named by the version, libraries of several versions live side by side in Redis.
    source, version = library()
    assert re.fullmatch(r"[0-9a-f]{16}", version)
    assert library_name() == f"cm_{version}"
    assert source.startswith(f"#!lua name=cm_{version}\n")
    assert f"local VERSION = '{version}'" in source
    assert f"local PREFIX = 'cm_{version}_'" in source
    assert function_name("apply") == f"cm_{version}_apply"


def test_functions_take_keys_and_arguments_as_parameters() -> None:
    # A function has no KEYS or ARGV globals, and may create no global at all.
    assert not re.search(r"\b(KEYS|ARGV)\b", LUA)
    assigned = re.findall(r"^([A-Za-z_][\w.]*)\s*=", LUA, re.MULTILINE)
    declared = re.findall(r"^local\s+(\w+)\s*$", LUA, re.MULTILINE)
    assert set(assigned) <= set(declared)  # only locals at the top, e.g. a forward declaration


def test_the_top_level_uses_nothing_that_exists_only_while_a_function_runs() -> None:
    # While the library loads, Redis offers register_function but not cjson or redis.call.
    top_level = [line for line in LUA.splitlines() if re.match(r"\S", line)]
    assert not [line for line in top_level if re.search(r"cjson|redis\.call", line)]


class FakeRedis:
    """Answers the library's commands as a Redis older than 7, or one that lost the library."""

    def __init__(self, errors: list[str]) -> None:
        self.errors = errors
        self.loads: list[str] = []
        self.calls: list[str] = []

    def _answer(self, *args: Any) -> Any:
        self.calls.append(args[0])
        if self.errors:
            raise redis.ResponseError(self.errors.pop(0))
        return [b"requests", 1]

    fcall = fcall_ro = _answer

    def set(self, *args: Any, **kwargs: Any) -> None:
        """The layout record (``layout.py``)."""

    def get(self, _key: str) -> None:
        return None

    def function_load(self, source: str, replace: bool = False) -> None:
        if self.errors:
            raise redis.ResponseError(self.errors.pop(0))
        self.loads.append(source)


def test_a_redis_without_functions_is_a_one_line_error_naming_the_version() -> None:
    old = FakeRedis(["unknown command 'FUNCTION'"])
    with pytest.raises(StorageError, match=r"needs Redis 7\.0 or later") as raised:
        install(old)  # type: ignore[arg-type]
    assert "\n" not in str(raised.value)


def test_a_writing_call_reloads_a_lost_library_once() -> None:
    client = FakeRedis(["Function not found"])
    assert call(client, "apply", ["k"], ["a"]) == [b"requests", 1]  # type: ignore[arg-type]
    assert client.loads == [library()[0]]
    assert client.calls == [function_name("apply")] * 2
    with pytest.raises(redis.ResponseError, match="straddles"):
        call(FakeRedis(["straddles the applied offset 5"]), "apply", [], [])  # type: ignore[arg-type]


def test_a_read_never_loads_the_library_and_says_how_to() -> None:
    client = FakeRedis(["Function not found"])
    with pytest.raises(FunctionsNotLoadedError) as raised:
        call(client, "read", ["k"], [], read_only=True)  # type: ignore[arg-type]
    assert client.loads == []
    assert str(raised.value) == (
        f"Redis holds no store functions of this version (library {library_name()}): a "
        "consumer of this version loads them when it starts, or run "
        "`collection-manager functions load`"
    )
