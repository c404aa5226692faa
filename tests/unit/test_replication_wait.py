"""The replication barrier's WAIT ends before its connection's socket timeout."""

from __future__ import annotations

import types

from collection_manager.storage.replication import _within_socket_timeout


def node(socket_timeout: float | None) -> object:
    pool = types.SimpleNamespace(connection_kwargs={"socket_timeout": socket_timeout})
    return types.SimpleNamespace(connection_pool=pool)


def test_a_wait_outlasting_the_socket_timeout_is_shortened() -> None:
    # The controller's client: 10 s socket timeout, the default WAIT of 10 s.
    assert _within_socket_timeout(node(10.0), 10_000) == 8_000  # type: ignore[arg-type]
    assert _within_socket_timeout(node(10.0), 2_000) == 2_000  # type: ignore[arg-type]
    assert _within_socket_timeout(node(None), 10_000) == 10_000  # type: ignore[arg-type]
    assert _within_socket_timeout(node(0.001), 10_000) == 1  # type: ignore[arg-type]
