"""``collections tail -n N`` of a bucketed collection prints at most N changes in all: the
newest by the clocks the buckets' logs record, or with ``--since`` the first N in bucket
order with the cut to go on after them (pure: no Redis)."""

from __future__ import annotations

from collection_manager.cli.tail_since import at_most
from collection_manager.cli.tail_views import cut_tail_table
from collection_manager.core.cut import Cut
from collection_manager.core.specs import CollectionSpec
from collection_manager.core.stepped_read import Change
from collection_manager.storage.log_clock import newest_of_logs
from collection_manager.storage.reads import CutChanges


def _change(time: int, n: int = 0) -> Change[tuple[object, ...]]:
    return Change(time, ("r1", n), 1)


def test_the_newest_of_several_logs_are_chosen_by_clock_in_log_order() -> None:
    logs = [
        [(100, "a1"), (300, "a2"), (500, "a3")],
        [(200, "b1"), (400, "b2"), (600, "b3")],
        [(None, "c1")],  # written before the log recorded clocks: older than any
    ]
    assert newest_of_logs(logs, 4) == [(0, "a2"), (0, "a3"), (1, "b2"), (1, "b3")]
    assert newest_of_logs(logs, 1) == [(1, "b3")]
    assert newest_of_logs(logs, 0) == []
    assert len(newest_of_logs(logs, 99)) == 7


def test_equal_clocks_keep_the_later_changes_of_a_log() -> None:
    # One entry holds many changes of one time: they share its clock.
    logs = [[(100, "a1"), (100, "a2"), (100, "a3")]]
    assert newest_of_logs(logs, 2) == [(0, "a2"), (0, "a3")]


def test_since_keeps_at_most_n_and_the_cut_stops_before_the_first_left_out() -> None:
    # Bucket 0: times 5 (three changes) and 6; bucket 1: time 3. Read from cut 4,2 to 6,3.
    found = CutChanges(
        [
            (0, _change(5, 0)),
            (0, _change(5, 1)),
            (0, _change(5, 2)),
            (0, _change(6)),
            (1, _change(3)),
        ],
        Cut((6, 3)),
    )
    kept = at_most(found, 4)
    assert kept.changes == found.changes[:4] and kept.cut == Cut((6, 2))
    # Time 5 cut short: the cut stays before it, so going on reads time 5 again whole.
    kept = at_most(found, 2)
    assert kept.changes == found.changes[:2] and kept.cut == Cut((4, 2))
    assert at_most(found, 5) is found


def test_a_first_time_longer_than_n_says_to_raise_n_not_to_go_on() -> None:
    schema = {
        "type": "record",
        "name": "t",
        "fields": [{"name": "replica_id", "type": "string"}, {"name": "n", "type": "long"}],
    }
    spec = CollectionSpec("t", schema, ("replica_id",), buckets=2)
    found = CutChanges([(0, _change(5, n)) for n in range(3)], Cut((5, 2)))
    stuck = at_most(found, 2)
    assert stuck.cut == Cut((4, 2))
    title = cut_tail_table(spec, stuck, Cut((4, 2)), 2).title
    assert title.endswith("(the first 2 of a time; raise -n for more)")
