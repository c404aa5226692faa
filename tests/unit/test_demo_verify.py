"""The demo's verdict: Redis against the surviving agents, and nothing left of the others."""

from __future__ import annotations

from collections import Counter

from collection_manager.demo.verify import summary_table, verify

FRONTIERS = "compute_frontiers"
ERRORS = "error_counts"


def _held() -> dict[str, dict[str, Counter[tuple[object, ...]]]]:
    return {
        "r1": {
            FRONTIERS: Counter({("r1", "u0", 0, 7): 1, ("r1", "u0", 1, 9): 1}),
            ERRORS: Counter({("r1", "u0", 2): 1}),
        }
    }


def _stored_as_held() -> dict[str, dict[str, Counter[tuple[object, ...]]]]:
    gone: dict[str, Counter[tuple[object, ...]]] = {FRONTIERS: Counter(), ERRORS: Counter()}
    return {"r1": {c: Counter(rows) for c, rows in _held()["r1"].items()}, "r2": gone, "r3": gone}


def test_redis_equal_to_the_survivors_and_nothing_of_the_others_is_verified() -> None:
    verification = verify(_stored_as_held(), _held(), ["r2", "r3"])

    assert verification.ok
    assert [(c.collection, c.redis_rows, c.agent_rows) for c in verification.checks] == [
        (FRONTIERS, 2, 2),
        (ERRORS, 1, 1),
    ]
    assert all(c.left == {"r2": 0, "r3": 0} for c in verification.checks)


def test_same_count_but_other_rows_is_a_mismatch() -> None:
    stored = _stored_as_held()
    stored["r1"][FRONTIERS] = Counter({("r1", "u0", 0, 7): 1, ("r1", "u0", 1, 8): 1})

    verification = verify(stored, _held(), ["r2", "r3"])

    frontiers = next(c for c in verification.checks if c.collection == FRONTIERS)
    assert (frontiers.redis_rows, frontiers.agent_rows, frontiers.same_rows) == (2, 2, False)
    assert not verification.ok


def test_another_multiplicity_is_a_mismatch() -> None:
    stored = _stored_as_held()
    stored["r1"][ERRORS] = Counter({("r1", "u0", 2): 2})

    assert not verify(stored, _held(), ["r2", "r3"]).ok


def test_a_row_left_of_a_removed_replica_is_a_mismatch() -> None:
    stored = _stored_as_held()
    stored["r3"] = {FRONTIERS: Counter({("r3", "u0", 0, 7): 1}), ERRORS: Counter()}

    verification = verify(stored, _held(), ["r2", "r3"])

    frontiers = next(c for c in verification.checks if c.collection == FRONTIERS)
    assert frontiers.same_rows
    assert frontiers.left == {"r2": 0, "r3": 1}
    assert not verification.ok


def test_a_negative_row_counts_and_never_cancels_a_positive_one() -> None:
    stored = _stored_as_held()
    stored["r2"] = {ERRORS: Counter({("r2", "u0", 1): 1, ("r2", "u1", 1): -1})}

    verification = verify(stored, _held(), ["r2", "r3"])

    errors = next(c for c in verification.checks if c.collection == ERRORS)
    assert errors.left["r2"] == 2
    assert not verification.ok


def test_zero_counts_are_no_rows() -> None:
    stored = _stored_as_held()
    stored["r1"][ERRORS][("r1", "u9", 1)] = 0
    stored["r2"] = {FRONTIERS: Counter({("r2", "u0", 0, 1): 0})}

    assert verify(stored, _held(), ["r2", "r3"]).ok


def test_a_collection_missing_in_redis_is_a_mismatch() -> None:
    stored = _stored_as_held()
    del stored["r1"][ERRORS]

    assert not verify(stored, _held(), ["r2", "r3"]).ok


def test_nothing_to_compare_verifies_nothing() -> None:
    empty: dict[str, Counter[tuple[object, ...]]] = {FRONTIERS: Counter()}

    assert not verify({"r1": empty}, {"r1": empty}, []).ok
    assert not verify({}, {}, []).ok


def test_the_summary_has_a_line_per_collection_and_a_column_per_gone_replica() -> None:
    stored = _stored_as_held()
    stored["r2"] = {FRONTIERS: Counter({("r2", "u0", 0, 1): 1})}

    headers, lines = summary_table(verify(stored, _held(), ["r2", "r3"]))

    assert headers == ["collection", "Redis", "agents", "same", "r2", "r3", "ok"]
    assert lines == [
        [FRONTIERS, "2", "2", "yes", "1", "0", "MISMATCH"],
        [ERRORS, "1", "1", "yes", "0", "0", "ok"],
    ]
