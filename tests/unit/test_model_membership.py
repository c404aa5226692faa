"""The fence table and replica membership."""

from __future__ import annotations

from tests.model.membership import ModelFences, ModelMembership, ModelReplica


def test_fences_only_move_up() -> None:
    table = ModelFences({"r1": 2})
    assert table.is_fenced("r1", 1) and table.is_fenced("r1", 2)
    assert not table.is_fenced("r1", 3)
    assert not table.is_fenced("r2", 0)
    assert table.fence("r1", 1) is False
    assert table.fence("r1", 2) is False
    assert table.dead_epoch("r1") == 2
    assert table.fence("r1", 5) is True
    assert table.fence("r2", 0) is True
    assert table.as_dict() == {"r1": 5, "r2": 0}
    assert "r2" in table and "r3" not in table
    assert sorted(table) == ["r1", "r2"] and len(table) == 2
    assert table.dead_epoch("r3") is None
    assert table == ModelFences({"r2": 0, "r1": 5}) != {"r1": 5}
    assert repr(ModelFences({"r": 1})) == "ModelFences({'r': 1})"


def test_membership_follows_epochs_and_ignores_stale_requests() -> None:
    members = ModelMembership()
    members.added("r1", 1)
    members.heartbeat("r1", 1, 100)
    members.heartbeat("r1", 1, None)
    assert members.status("r1") == ModelReplica(1, alive=True, last_heartbeat=100)
    members.removed("r1", 1)
    members.heartbeat("r1", 1, 200)  # a dead incarnation's late heartbeat
    assert members.status("r1") == ModelReplica(1, alive=False)
    members.added("r1", 2)
    members.removed("r1", 1)  # stale: the replica was re-added since
    members.heartbeat("r1", 1, 300)
    assert members.stale == 2
    assert members.live() == {"r1": 2}
    members.heartbeat("r2", 4, 10)  # an unknown replica's heartbeat counts as added
    assert members.live() == {"r1": 2, "r2": 4}
    assert members.status("r3") is None
