"""Epoch authority: only epochs the controller issued may fence, renew or announce, and
no request of a collected incarnation is applied (docs/concepts/epochs-and-fences.md,
docs/concepts/leases-and-retention.md).

The controller records per replica the range of epochs it may claim, ``(floor,
highest]``: ``highest`` is its latest epoch; epochs up to ``floor`` belonged to
incarnations that were removed and then *collected* (their control state deleted after
the retention). A replica with no record has none issued; the namespace's ``collected``
epoch, the highest of every collected incarnation, is then its floor, and the floor of
its next record: a replica added again after its collection starts above it.

A control request or fence that claims an epoch above ``highest`` (or of a replica with
no record) was forged or corrupted: applied, a fence with it would kill every future
incarnation, and a heartbeat with it would hide the real incarnation's heartbeats. An
append or control request at or below the floor comes from a collected incarnation, whose
fences are gone too: the fuse can no longer drop it, so it is refused here. A delete
fenced at or below the floor still applies (its retractions are due; its fence kills
nothing alive). Appends above the floor are judged by the fuse.

Pure: the consumer reads the authority for the replicas a partition's requests name
(``storage/epochs.py``) and passes it in. The in-memory model knows no issued epochs and
trusts every epoch; only the consumer's validation step checks them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping

from collection_manager.core.errors import EpochError
from collection_manager.core.requests import Append, Delete, Request, epoch_claims


@dataclasses.dataclass(frozen=True)
class Issued:
    """The epochs one replica may claim: ``floor < epoch <= highest``."""

    highest: int
    floor: int = 0


@dataclasses.dataclass(frozen=True)
class EpochAuthority:
    """What the controller issued, for the replicas of some requests.

    Attributes:
        issued: replica id -> its range; a replica missing here has none issued.
        collected: the highest epoch of any collected incarnation in the namespace (0:
            none was collected); the floor of a replica with no record.
    """

    issued: Mapping[str, Issued]
    collected: int = 0


def claimed_replicas(requests: Iterable[Request]) -> set[str]:
    """The replicas whose issued epochs are needed to check ``requests``."""
    claimed = {replica for r in requests for replica, _ in epoch_claims(r)}
    return claimed | {r.replica_id for r in requests if isinstance(r, Append)}


def _collected(replica_id: str, epoch: int) -> EpochError:
    return EpochError(
        f"epoch {epoch} of replica {replica_id} belongs to an incarnation that was removed "
        f"and collected after the retention (CM_REPLICA_RETENTION_MS), or was never issued"
    )


def check_issued(request: Request, authority: EpochAuthority) -> None:
    """Refuses a claimed epoch the controller never issued, and any request of a
    collected incarnation.

    Args:
        request: a request that passed ``validate_request``.
        authority: the issued epochs of (at least) the replicas ``request`` names.

    Raises:
        EpochError: e.g. "epoch 4611686018427387904 of replica r1 was never issued
            (highest issued: 3)".
    """
    for replica_id, epoch in epoch_claims(request):
        issued = authority.issued.get(replica_id)
        if epoch <= (authority.collected if issued is None else issued.floor):
            if isinstance(request, Delete):
                # Its retractions still apply, in their partition's order, and a fence of
                # a collected incarnation kills nothing alive.
                continue
            raise _collected(replica_id, epoch)
        if issued is None or epoch > issued.highest:
            shown = "none" if issued is None else str(issued.highest)
            raise EpochError(
                f"epoch {epoch} of replica {replica_id} was never issued (highest issued: {shown})"
            )
    if isinstance(request, Append):
        issued = authority.issued.get(request.replica_id)
        floor = authority.collected if issued is None else issued.floor
        if request.epoch <= floor:
            raise _collected(request.replica_id, request.epoch)
