"""Shutdown tokens stop emission at the next element, across threads and token trees."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator

import pytest

from collection_manager.core.errors import CollectionManagerError
from collection_manager.core.shutdown import Cancelled, ShutdownToken, guard


def test_a_new_token_is_live() -> None:
    token = ShutdownToken("s")
    assert not token.cancelled
    assert token.reason is None
    token.raise_if_cancelled()


def test_cancel_is_one_way_and_the_first_reason_wins() -> None:
    token = ShutdownToken("s")
    assert token.cancel("dropped")
    assert not token.cancel("again")
    assert token.cancelled
    assert token.reason == "dropped"
    with pytest.raises(Cancelled) as raised:
        token.raise_if_cancelled()
    assert raised.value.reason == "dropped"
    assert raised.value.token == "s"
    assert isinstance(raised.value, CollectionManagerError)


def test_cancelling_a_parent_cancels_its_children() -> None:
    agent = ShutdownToken("agent")
    subscribes = [agent.child(f"sub{i}") for i in range(3)]
    agent.cancel("agent stopping")
    assert all(sub.cancelled for sub in subscribes)
    assert all("agent stopping" in (sub.reason or "") for sub in subscribes)


def test_cancelling_a_child_leaves_parent_and_siblings() -> None:
    agent = ShutdownToken("agent")
    first, second = agent.child("a"), agent.child("b")
    first.cancel("dropped")
    assert not agent.cancelled
    assert not second.cancelled


def test_child_of_a_cancelled_token_is_born_cancelled() -> None:
    agent = ShutdownToken("agent")
    agent.cancel("gone")
    assert agent.child("late").cancelled


def test_grandchildren_are_cancelled() -> None:
    root = ShutdownToken("root")
    leaf = root.child("mid").child("leaf")
    root.cancel("stop")
    assert leaf.cancelled


def test_a_parent_does_not_keep_finished_children_alive() -> None:
    agent = ShutdownToken("agent")
    for i in range(100):
        agent.child(f"sub{i}")
    gc.collect()
    assert len(agent._children) == 0


def test_wait_wakes_on_cancel_from_another_thread() -> None:
    token = ShutdownToken("s")
    thread = threading.Thread(target=token.cancel, args=("from thread",))
    thread.start()
    assert token.wait(timeout=30)
    thread.join()


def test_guard_passes_everything_while_live() -> None:
    assert list(guard(range(5), ShutdownToken())) == [0, 1, 2, 3, 4]


def test_guard_stops_at_the_next_element() -> None:
    token = ShutdownToken("s")
    seen = []
    with pytest.raises(Cancelled):
        for element in guard(range(1_000_000), token):
            seen.append(element)
            if element == 41:
                token.cancel("dropped mid-snapshot")
    assert seen == list(range(42))


def test_guard_emits_nothing_from_a_cancelled_token() -> None:
    token = ShutdownToken()
    token.cancel()
    pulled = []

    def source() -> Iterator[int]:
        pulled.append(1)
        yield 1

    with pytest.raises(Cancelled):
        next(guard(source(), token))
    assert pulled == []


def test_guard_drops_an_element_pulled_before_a_cancel_made_while_pulling() -> None:
    token = ShutdownToken()

    def slow_source() -> Iterator[int]:
        yield 1
        token.cancel("cancelled while the source was working")
        yield 2

    emitted = []
    with pytest.raises(Cancelled):
        for element in guard(slow_source(), token):
            emitted.append(element)
    assert emitted == [1]


def test_guard_closes_the_source() -> None:
    token = ShutdownToken()
    closed = []

    def source() -> Iterator[int]:
        try:
            yield from range(10)
        finally:
            closed.append(True)

    with pytest.raises(Cancelled):
        for element in guard(source(), token):
            if element == 3:
                token.cancel()
    assert closed == [True]


def test_guard_stops_a_thread_emitting_a_large_snapshot() -> None:
    token = ShutdownToken("s")
    started = threading.Event()
    outcome: list[BaseException] = []

    def emit() -> None:
        try:
            for _ in guard(iter(int, 1), token):  # endless
                started.set()
        except Cancelled as exc:
            outcome.append(exc)

    thread = threading.Thread(target=emit)
    thread.start()
    assert started.wait(30)
    token.cancel("stop")
    thread.join(30)
    assert not thread.is_alive()
    assert len(outcome) == 1
