"""Epoch authority: only epochs the controller issued may fence, renew or announce (§6).

The controller issues epochs with ``INCR`` of one counter per replica, starting at 1, so
a replica's issued epochs are exactly ``1..highest``. A request that claims a higher
epoch (or any epoch of a replica that was never added) was forged or corrupted: applied,
a fence with it would kill every future incarnation of the replica, and a heartbeat with
it would hide the real incarnation's heartbeats.

Pure: the consumer reads the highest issued epochs of the replicas a partition's requests
name (``storage/epochs.py``) and passes them in. The in-memory model knows no issued
epochs and trusts every epoch; only the consumer's validation step checks them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from collection_manager.core.errors import EpochError
from collection_manager.core.requests import Request, epoch_claims


def claimed_replicas(requests: Iterable[Request]) -> set[str]:
    """The replicas whose issued epochs are needed to check ``requests``."""
    return {replica for r in requests for replica, _ in epoch_claims(r)}


def check_issued(request: Request, issued: Mapping[str, int]) -> None:
    """Refuses a claimed epoch above the highest the controller issued for its replica.

    Args:
        request: a request that passed ``validate_request``.
        issued: replica id -> highest issued epoch; a replica missing here has none.

    Raises:
        EpochError: e.g. "epoch 4611686018427387904 of replica r1 was never issued
            (highest issued: 3)".
    """
    for replica_id, epoch in epoch_claims(request):
        highest = issued.get(replica_id)
        if highest is None or epoch > highest:
            shown = "none" if highest is None else str(highest)
            raise EpochError(
                f"epoch {epoch} of replica {replica_id} was never issued (highest issued: {shown})"
            )
