"""The cluster client places a function call by its keys without asking a node (no
services: the client is built without connecting)."""

from __future__ import annotations

from typing import Any

import pytest
import redis
from redis.crc import key_slot

from collection_manager.storage.client import FunctionCluster


def _client() -> FunctionCluster:
    client = FunctionCluster.__new__(FunctionCluster)  # no nodes: nothing may be asked
    client.keyslot = lambda key: key_slot(str(key).encode())  # type: ignore[method-assign]

    def no_node() -> Any:
        raise AssertionError("a node was asked for the command's keys")

    client.get_default_node = no_node  # type: ignore[method-assign]
    return client


@pytest.mark.parametrize("command", ["FCALL", "fcall", "FCALL_RO"])
def test_a_function_call_goes_to_its_keys_slot(command: str) -> None:
    keys = ["cm:{c#3.7}:time", "cm:{c#3.7}:pending"]
    slot = _client().determine_slot(command, "cm_1_cut", 2, *keys, 0, "10001")
    assert slot == key_slot(b"c#3.7")


def test_anything_else_is_placed_by_redis_py(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[tuple[Any, ...]] = []

    def placed(_self: Any, *args: Any) -> int:
        asked.append(args)
        return 7

    monkeypatch.setattr(redis.RedisCluster, "determine_slot", placed)
    client = _client()
    assert client.determine_slot("GET", "k") == 7
    assert client.determine_slot("FCALL", "f", 2, "{a}x", "{b}y") == 7  # two slots: refused
    assert client.determine_slot("FCALL", "f", 0) == 7  # no keys: any node
    assert [args[0] for args in asked] == ["GET", "FCALL", "FCALL"]
