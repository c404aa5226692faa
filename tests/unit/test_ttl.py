"""Example-based tests of the TTL states, replaying SPARK-50302's examples."""

from __future__ import annotations

import pytest

from collection_manager.core.errors import CollectionManagerError
from collection_manager.core.expiry_indexes import (
    AppendOnlyTtlIndex,
    CleanupStats,
    ExpiryIndex,
    KeyedTtlState,
    OneToManyTtl,
    OneToOneTtl,
    expiry_for,
)


def test_value_updated_twice_keeps_one_index_entry() -> None:
    state = OneToOneTtl[str, str]()

    state.put("foo", "v1", now_ms=100, ttl_ms=500)
    state.put("foo", "v2", now_ms=200, ttl_ms=500)

    assert state.index_entries() == [(700, "foo")]
    assert state.index_size == 1
    assert state.primary_size == 1


def test_value_updated_twice_cleanup_reads_no_stale_entry() -> None:
    state = OneToOneTtl[str, str]()
    state.put("foo", "v1", now_ms=100, ttl_ms=500)
    state.put("foo", "v2", now_ms=200, ttl_ms=500)

    assert state.expire(now_ms=800) == [("foo", "v2")]

    # The index was exhausted, so no peek at an unexpired entry: one read, the live one.
    assert state.entries_examined == 1
    assert state.index_size == 0
    assert state.primary_size == 0


def test_append_only_baseline_reads_the_stale_entry_in_the_same_example() -> None:
    state = AppendOnlyTtlIndex[str, str]()
    state.put("foo", "v1", now_ms=100, ttl_ms=500)
    state.put("foo", "v2", now_ms=200, ttl_ms=500)
    assert state.index_size == 2

    assert state.expire(now_ms=800) == [("foo", "v2")]

    assert state.entries_examined == 2
    assert state.index_size == 0


def test_list_cleanup_walks_the_key_once_and_reindexes_the_new_minimum() -> None:
    state = OneToManyTtl[str, str]()
    state.append("foo", "v1", now_ms=100, ttl_ms=500)
    state.append("foo", "v2", now_ms=200, ttl_ms=500)
    state.append("foo", "v3", now_ms=400, ttl_ms=500)
    assert state.index_entries() == [(600, "foo")]

    assert state.expire(now_ms=800) == [("foo", "v1"), ("foo", "v2")]

    assert state.last_cleanup == CleanupStats(
        index_entries_examined=2, keys_walked=1, elements_examined=3, expired=2
    )
    assert state.index_entries() == [(900, "foo")]
    assert state.elements("foo", now_ms=800) == ["v3"]


def test_one_to_one_get_hides_expired_value_before_cleanup() -> None:
    state = OneToOneTtl[str, int]()
    state.put("replica-1", 1, now_ms=0, ttl_ms=100)

    assert state.get("replica-1", now_ms=99) == 1
    assert state.get("replica-1", now_ms=100) is None
    assert state.get("missing", now_ms=0) is None
    assert state.primary_size == 1
    assert state.expires_at("replica-1") == 100
    assert state.expires_at("missing") is None


def test_one_to_one_heartbeat_renews_the_lease() -> None:
    leases = OneToOneTtl[str, str]()
    leases.put("replica-1", "lease", now_ms=0, ttl_ms=100)
    leases.put("replica-2", "lease", now_ms=0, ttl_ms=100)
    leases.put("replica-1", "lease", now_ms=90, ttl_ms=100)

    assert leases.expire(now_ms=150) == [("replica-2", "lease")]
    assert leases.entries_examined == 2
    assert leases.index_entries() == [(190, "replica-1")]


def test_one_to_one_remove_deletes_the_index_entry() -> None:
    state = OneToOneTtl[str, str]()
    state.put("foo", "v1", now_ms=0, ttl_ms=100)

    assert state.remove("foo") is True
    assert state.remove("foo") is False
    assert state.index_size == 0


def test_one_to_one_removed_and_readded_key_is_not_evicted_at_old_expiry() -> None:
    state = OneToOneTtl[str, str]()
    state.put("foo", "v1", now_ms=0, ttl_ms=100)
    state.remove("foo")
    state.put("foo", "v2", now_ms=50, ttl_ms=100)

    assert state.expire(now_ms=100) == []
    assert state.get("foo", now_ms=100) == "v2"
    assert state.expire(now_ms=150) == [("foo", "v2")]


def test_one_to_one_expire_returns_earliest_first_and_stops_at_first_live() -> None:
    state = OneToOneTtl[str, int]()
    for position, key in enumerate(["c", "a", "b", "d"]):
        state.put(key, position, now_ms=0, ttl_ms=10 * (position + 1))

    assert state.expire(now_ms=30) == [("c", 0), ("a", 1), ("b", 2)]
    assert state.entries_examined == 4
    assert state.expire(now_ms=30) == []
    assert state.entries_examined == 1


def test_one_to_one_earliest_expiry_follows_renewals_removals_and_expiry() -> None:
    state = OneToOneTtl[str, int]()
    assert state.earliest_expiry() is None
    state.put("a", 1, now_ms=0, ttl_ms=100)
    state.put("b", 2, now_ms=0, ttl_ms=50)
    assert state.earliest_expiry() == 50
    state.put("b", 2, now_ms=100, ttl_ms=50)  # renewed past "a"
    assert state.earliest_expiry() == 100
    assert state.expire(now_ms=120) == [("a", 1)]
    assert state.earliest_expiry() == 150
    state.remove("b")
    assert state.earliest_expiry() is None


def test_one_to_many_remove_key_leaves_no_orphan_index_row() -> None:
    state = OneToManyTtl[str, str]()
    state.append("foo", "old", now_ms=0, ttl_ms=100)

    assert state.remove_key("foo") is True
    assert state.remove_key("foo") is False
    assert state.index_size == 0

    state.append("foo", "new", now_ms=50, ttl_ms=100)
    assert state.index_entries() == [(150, "foo")]
    assert state.expire(now_ms=100) == []
    assert state.elements("foo", now_ms=100) == ["new"]


def test_one_to_many_append_with_earlier_expiry_lowers_the_minimum() -> None:
    state = OneToManyTtl[str, str]()
    state.append("foo", "long", now_ms=0, ttl_ms=1000)
    state.append("foo", "short", now_ms=0, ttl_ms=10)
    state.append("foo", "middle", now_ms=0, ttl_ms=500)

    assert state.index_entries() == [(10, "foo")]
    assert state.element_count == 3
    assert state.key_count == state.primary_size == 1


def test_one_to_many_key_with_everything_expired_is_dropped() -> None:
    state = OneToManyTtl[str, int]()
    state.append("a", 1, now_ms=0, ttl_ms=10)
    state.append("a", 2, now_ms=5, ttl_ms=10)
    state.append("b", 3, now_ms=0, ttl_ms=12)

    assert state.expire(now_ms=20) == [("a", 1), ("a", 2), ("b", 3)]
    assert state.key_count == 0
    assert state.index_size == 0
    assert state.elements("a", now_ms=0) == []
    assert state.entries_examined == 2


def test_one_to_many_elements_hides_expired_before_cleanup() -> None:
    state = OneToManyTtl[str, int]()
    state.append("a", 1, now_ms=0, ttl_ms=10)
    state.append("a", 2, now_ms=0, ttl_ms=20)

    assert state.elements("a", now_ms=10) == [2]
    assert state.element_count == 2


def test_append_only_baseline_index_outgrows_the_primary() -> None:
    state = AppendOnlyTtlIndex[str, int]()
    for now_ms in range(0, 1000, 10):
        state.put("foo", now_ms, now_ms=now_ms, ttl_ms=500)

    assert state.primary_size == 1
    assert state.index_size == 100
    assert state.get("foo", now_ms=990) == 990


def test_tight_index_stays_at_primary_size_under_the_same_writes() -> None:
    state = OneToOneTtl[str, int]()
    for now_ms in range(0, 1000, 10):
        state.put("foo", now_ms, now_ms=now_ms, ttl_ms=500)

    assert state.index_size == state.primary_size == 1


def test_append_only_baseline_remove_leaves_entries_that_cleanup_skips() -> None:
    state = AppendOnlyTtlIndex[str, int]()
    state.put("foo", 1, now_ms=0, ttl_ms=100)
    state.put("bar", 2, now_ms=0, ttl_ms=300)

    assert state.remove("foo") is True
    assert state.remove("foo") is False
    assert state.index_size == 2
    assert state.get("bar", now_ms=299) == 2
    assert state.get("bar", now_ms=300) is None
    assert state.get("foo", now_ms=0) is None

    assert state.expire(now_ms=200) == []
    assert state.entries_examined == 2
    assert state.index_size == 1


@pytest.mark.parametrize("ttl_ms", [0, -1])
def test_non_positive_ttl_is_rejected(ttl_ms: int) -> None:
    with pytest.raises(CollectionManagerError, match="ttl_ms must be positive"):
        expiry_for(0, ttl_ms)
    with pytest.raises(CollectionManagerError):
        OneToOneTtl[str, int]().put("k", 1, now_ms=0, ttl_ms=ttl_ms)
    with pytest.raises(CollectionManagerError):
        OneToManyTtl[str, int]().append("k", 1, now_ms=0, ttl_ms=ttl_ms)
    with pytest.raises(CollectionManagerError):
        AppendOnlyTtlIndex[str, int]().put("k", 1, now_ms=0, ttl_ms=ttl_ms)


def test_expiry_index_orders_ties_by_write_and_replaces_entries() -> None:
    index = ExpiryIndex[object]()
    # Keys that cannot be ordered against each other: ties must not compare them.
    first, second = object(), object()
    index.set(first, 5)
    index.set(second, 5)
    index.set("later", 9)
    index.set("later", 7)

    assert list(index) == [(5, first), (5, second), (7, "later")]
    assert len(index) == 3
    assert "later" in index
    assert index.expiry_of("later") == 7
    assert index.expiry_of("missing") is None
    assert index.peek() == (5, first)
    assert index.pop() == (5, first)
    assert index.discard(second) is True
    assert index.discard(second) is False
    assert list(index) == [(7, "later")]


def test_expiry_index_empty() -> None:
    index = ExpiryIndex[str]()

    assert index.peek() is None
    with pytest.raises(IndexError):
        index.pop()


def test_both_one_to_one_states_satisfy_the_protocol() -> None:
    states: list[KeyedTtlState[str, int]] = [OneToOneTtl(), AppendOnlyTtlIndex()]
    for state in states:
        state.put("k", 1, now_ms=0, ttl_ms=10)
        assert state.get("k", now_ms=5) == 1
        assert state.expire(now_ms=10) == [("k", 1)]
        assert state.last_cleanup.expired == 1
        assert state.index_size == state.primary_size == 0
