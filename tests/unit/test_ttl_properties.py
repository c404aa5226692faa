"""Property tests: the TTL states against a plain dict model over random operations.

Each operation is ``(kind, key, ttl_ms, step_ms)``: the clock moves by ``step_ms`` first
(mostly forward, sometimes a little back, never below zero), then ``kind`` runs. Few keys,
so keys are often rewritten, removed and re-added before their old expiry.
"""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from collection_manager.core.expiry_indexes import (
    AppendOnlyTtlIndex,
    KeyedTtlState,
    OneToManyTtl,
    OneToOneTtl,
)

Operation = tuple[str, int, int, int]

KEYS = range(4)

_SETTINGS = settings(max_examples=200, deadline=None)


def _operations(kinds: list[str]) -> st.SearchStrategy[list[Operation]]:
    operation = st.tuples(
        st.sampled_from(kinds),
        st.sampled_from(KEYS),
        st.integers(min_value=1, max_value=400),
        st.integers(min_value=-30, max_value=150),
    )
    return st.lists(operation, max_size=60)


ONE_TO_ONE_OPERATIONS = _operations(["put", "put", "get", "remove", "expire", "expire"])
ONE_TO_MANY_OPERATIONS = _operations(["append", "append", "elements", "remove_key", "expire"])


def _replay_one_to_one(state: KeyedTtlState[int, int], operations: list[Operation]) -> None:
    """Run ``operations`` on ``state`` and on a model, checking reads and expiry agree."""
    model: dict[int, tuple[int, int]] = {}  # key -> (value, expires_at)
    now = 0
    for write, (kind, key, ttl_ms, step_ms) in enumerate(operations):
        now = max(0, now + step_ms)
        if kind == "put":
            state.put(key, write, now, ttl_ms)
            model[key] = (write, now + ttl_ms)
        elif kind == "remove":
            assert state.remove(key) == (model.pop(key, None) is not None)
        elif kind == "expire":
            expired = state.expire(now)
            due = {k: v for k, (v, expires_at) in model.items() if expires_at <= now}
            assert dict(expired) == due
            assert len(expired) == len(due)
            assert state.last_cleanup.expired == len(due)
            for k in due:
                del model[k]
        for k in KEYS:
            value, expires_at = model.get(k, (None, now))
            assert state.get(k, now) == (value if expires_at > now else None)
        assert state.primary_size == len(model)


@_SETTINGS
@given(ONE_TO_ONE_OPERATIONS)
def test_one_to_one_agrees_with_model(operations: list[Operation]) -> None:
    _replay_one_to_one(OneToOneTtl(), operations)


@_SETTINGS
@given(ONE_TO_ONE_OPERATIONS)
def test_append_only_baseline_agrees_with_model(operations: list[Operation]) -> None:
    _replay_one_to_one(AppendOnlyTtlIndex(), operations)


@_SETTINGS
@given(ONE_TO_ONE_OPERATIONS)
def test_one_to_one_index_is_tight_and_cleanup_costs_what_expires(
    operations: list[Operation],
) -> None:
    state = OneToOneTtl[int, int]()
    now = 0
    for write, (kind, key, ttl_ms, step_ms) in enumerate(operations):
        now = max(0, now + step_ms)
        if kind == "put":
            state.put(key, write, now, ttl_ms)
        elif kind == "remove":
            state.remove(key)
        elif kind == "expire":
            expired = state.expire(now)
            assert state.entries_examined <= len(expired) + 1
            assert all(expires_at > now for expires_at, _ in state.index_entries())
        assert state.index_size == state.primary_size
        indexed = state.index_entries()
        assert [expires_at for expires_at, _ in indexed] == sorted(e for e, _ in indexed)
        assert {k: e for e, k in indexed} == {k: state.expires_at(k) for _, k in indexed}


@_SETTINGS
@given(ONE_TO_ONE_OPERATIONS)
def test_append_only_baseline_index_never_smaller_than_primary(
    operations: list[Operation],
) -> None:
    state = AppendOnlyTtlIndex[int, int]()
    now = 0
    for write, (kind, key, ttl_ms, step_ms) in enumerate(operations):
        now = max(0, now + step_ms)
        if kind == "put":
            state.put(key, write, now, ttl_ms)
        elif kind == "remove":
            state.remove(key)
        elif kind == "expire":
            state.expire(now)
        assert state.index_size >= state.primary_size


@_SETTINGS
@given(ONE_TO_MANY_OPERATIONS)
def test_one_to_many_agrees_with_model(operations: list[Operation]) -> None:
    state = OneToManyTtl[int, int]()
    model: dict[int, list[tuple[int, int]]] = {}  # key -> [(element, expires_at)]
    now = 0
    for write, (kind, key, ttl_ms, step_ms) in enumerate(operations):
        now = max(0, now + step_ms)
        if kind == "append":
            state.append(key, write, now, ttl_ms)
            model.setdefault(key, []).append((write, now + ttl_ms))
        elif kind == "remove_key":
            assert state.remove_key(key) == (model.pop(key, None) is not None)
        elif kind == "expire":
            _check_one_to_many_expire(state, model, now)
        for k in KEYS:
            live = [element for element, expires_at in model.get(k, []) if expires_at > now]
            assert state.elements(k, now) == live
        _check_one_to_many_index(state, model)


def _check_one_to_many_expire(
    state: OneToManyTtl[int, int], model: dict[int, list[tuple[int, int]]], now: int
) -> None:
    """Expire at ``now`` on both, check the result and the work, update the model."""
    due_keys = [k for k, stored in model.items() if any(e <= now for _, e in stored)]
    walked_elements = sum(len(model[k]) for k in due_keys)

    expired = state.expire(now)

    due = [(k, element) for k in due_keys for element, e in model[k] if e <= now]
    assert Counter(expired) == Counter(due)
    stats = state.last_cleanup
    assert stats.expired == len(due)
    assert stats.keys_walked == len(due_keys)  # each key walked once per cleanup
    assert stats.elements_examined == walked_elements
    assert stats.index_entries_examined <= len(due) + 1
    for k in due_keys:
        kept = [(element, e) for element, e in model[k] if e > now]
        if kept:
            model[k] = kept
        else:
            del model[k]


def _check_one_to_many_index(
    state: OneToManyTtl[int, int], model: dict[int, list[tuple[int, int]]]
) -> None:
    """The index holds exactly one entry per key: its minimum expiry."""
    assert state.key_count == len(model)
    assert state.element_count == sum(len(stored) for stored in model.values())
    assert state.index_size <= state.key_count
    expected = sorted((min(e for _, e in stored), k) for k, stored in model.items())
    assert sorted(state.index_entries()) == expected
