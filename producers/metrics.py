"""A replica agent's Prometheus metrics, read from the agent at each scrape (served by
``replicas run``, see ``collection_manager/observability``).

The agent's producers already count every request's outcome (``DeliveryStats``); a
collector turns those counts into metrics when Prometheus asks, so the publishing paths
carry no metric code.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from producers.agent import ReplicaAgent

_PER_COLLECTION = ("replica", "collection")

# (type, exposed name, labels, help) of each family, in the order they are collected.
AGENT_FAMILIES: list[tuple[str, str, Sequence[str], str]] = [
    ("counter", "cm_agent_requests_produced_total", _PER_COLLECTION,
     "Requests handed to the producer."),
    ("counter", "cm_agent_requests_delivered_total", _PER_COLLECTION,
     "Requests the broker acknowledged."),
    ("counter", "cm_agent_delivery_failures_total", (*_PER_COLLECTION, "error"),
     "Requests that failed for good, by librdkafka error name."),
    ("counter", "cm_agent_requests_purged_total", _PER_COLLECTION,
     "Requests dropped from the queue when the agent was cancelled."),
    ("gauge", "cm_agent_queue_depth", _PER_COLLECTION,
     "Requests whose outcome is not known yet."),
    ("counter", "cm_agent_updates_delivered_total", _PER_COLLECTION,
     "Non-zero row updates in requests the broker acknowledged (refreshes not counted)."),
    ("counter", "cm_agent_stops_total", ("replica", "cause"),
     "1 once the agent stopped, by cause: removed (no longer a member), silent (stopped "
     "for too long to trust its rows' TTLs) or cancelled (told to stop)."),
    ("gauge", "cm_agent_active", ("replica",),
     "1 while the agent publishes as its epoch; 0 once it stopped (removed, cancelled or "
     "silenced)."),
    ("gauge", "cm_agent_epoch", ("replica",), "The epoch the agent publishes as."),
]  # fmt: skip


def _family(
    kind: str, name: str, labels: Sequence[str], help_text: str
) -> CounterMetricFamily | GaugeMetricFamily:
    if kind == "counter":
        return CounterMetricFamily(name.removesuffix("_total"), help_text, labels=labels)
    return GaugeMetricFamily(name, help_text, labels=labels)


class AgentCollector(Collector):
    """The metrics of ``agent``, per collection it publishes."""

    def __init__(self, agent: ReplicaAgent) -> None:
        self._agent = agent

    def collect(self) -> Iterator[Metric]:
        produced, delivered, failed, purged, queued, updates, stops, active, epoch = (
            _family(*spec) for spec in AGENT_FAMILIES
        )
        replica = self._agent.replica_id
        for collection, stats in sorted(self._agent.stats().items()):
            labels = [replica, collection]
            produced.add_metric(labels, stats.produced)
            delivered.add_metric(labels, stats.delivered)
            purged.add_metric(labels, stats.purged)
            queued.add_metric(labels, stats.pending)
            for error, count in sorted(stats.failures.items()):
                failed.add_metric([*labels, error], count)
        for collection, count in sorted(self._agent.updates_delivered().items()):
            updates.add_metric([replica, collection], count)
        cause = stop_cause(self._agent.reason) if self._agent.stopped else None
        for each in STOP_CAUSES:
            stops.add_metric([replica, each], 1 if each == cause else 0)
        active.add_metric([replica], 0 if self._agent.stopped else 1)
        epoch.add_metric([replica], self._agent.epoch or 0)
        yield from (produced, delivered, failed, purged, queued, updates, stops, active, epoch)


STOP_CAUSES = ("removed", "silent", "cancelled")


def stop_cause(reason: str | None) -> str:
    """Why an agent stopped, from its reason: one of ``STOP_CAUSES``."""
    text = reason or ""
    if "no longer a member" in text:
        return "removed"
    if " was silent for " in text:
        return "silent"
    return "cancelled"
