"""One replica's lifecycle, which ``replicas run`` and the embedded API both run.

Declare its collections, read their definitions from the catalog, add the replica (a new
epoch), start its agent; at the end stop the agent, wait for it, and remove the replica,
which retracts its rows and fences its epoch (docs/concepts/epochs-and-fences.md).
"""

from __future__ import annotations

from collections.abc import Sequence

from collection_manager.control.controller import Controller
from collection_manager.core.specs import CollectionSpec
from producers.agent import ReplicaAgent

# How long a stop waits for the agent's threads before it removes the replica anyway.
JOIN_TIMEOUT_S = 10.0


class ReplicaProcess:
    """The lifecycle of replica ``replica_id`` whose ``agent`` publishes ``specs``.

    Args:
        controller: the membership the replica joins (closed by the caller).
        replica_id: the replica.
        agent: its agent, not started yet.
        specs: the collections its sources publish.
        source: what declares them, as errors name it.
    """

    def __init__(
        self,
        controller: Controller,
        replica_id: str,
        agent: ReplicaAgent,
        specs: Sequence[CollectionSpec],
        source: str,
    ) -> None:
        self.controller, self.replica_id, self.agent = controller, replica_id, agent
        self._specs, self._source = tuple(specs), source
        self.epoch: int | None = None

    def declare(self) -> None:
        """Creates its missing collections and records them for the replica's removals."""
        self.controller.declare_collections(self._specs, self._source)

    def start(self) -> int:
        """Adds the replica and starts the agent; the new epoch.

        The catalog's definitions (with their buckets: a declared collection may exist
        bucketed) are read once, before the replica is added, since a live collection's
        buckets never change.
        """
        catalog = self.controller.collection_specs([spec.name for spec in self._specs])
        self.epoch = self.controller.add_replica(self.replica_id)
        self.agent.start(self.epoch, catalog)
        return self.epoch

    def stop(self, reason: str, removal: str | None = None) -> str | None:
        """Stops the agent, waits for it and removes the replica (a no-op when the
        controller removed this epoch already); why the agent had stopped on its own, if it
        had. The removal's reason is that one, else ``removal`` (default ``reason``)."""
        on_its_own = self.agent.reason if self.agent.stopped else None
        self.agent.stop(reason)
        self.agent.join(JOIN_TIMEOUT_S)
        if self.epoch is not None:
            why = on_its_own or removal or reason
            self.controller.remove_replica(self.replica_id, why, epoch=self.epoch)
        return on_its_own

    def abandon(self, reason: str) -> None:
        """After a failure: stops the agent if it runs (its threads would heartbeat, and
        keep its lease, forever); removes nothing."""
        if not self.agent.stopped:
            self.agent.stop(reason)
            self.agent.join(JOIN_TIMEOUT_S)
