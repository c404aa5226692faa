"""The state file a replica agent writes for the demo: what it holds, read back exactly."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from producers.agent import load_state, save_state


def test_state_round_trips_with_every_column_type(tmp_path: Path) -> None:
    state = {
        "hydration_status": Counter({("r1", "u0", True, None): 1, ("r1", "u1", False, 12): 1}),
        "replica_metrics": Counter({("r1", 0.125, 1 << 40): 1}),
        "error_counts": Counter(),
    }
    path = tmp_path / "r1.state.json"

    save_state(path, state)

    assert load_state(path) == state
    assert not list(tmp_path.glob("*.tmp"))
