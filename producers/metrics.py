"""A replica agent's Prometheus metrics, read from the agent at each scrape (served by
``replica run``, see ``collection_manager/observability``).

The agent's producers already count every request's outcome (``DeliveryStats``); a
collector turns those counts into metrics when Prometheus asks, so the publishing paths
carry no metric code.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from producers.agent import ReplicaAgent

_LABELS = ["replica", "collection"]


class AgentCollector(Collector):
    """The metrics of ``agent``, per collection it publishes."""

    def __init__(self, agent: ReplicaAgent) -> None:
        self._agent = agent

    def collect(self) -> Iterator[Metric]:
        replica = self._agent.replica_id
        produced = CounterMetricFamily(
            "cm_agent_requests_produced", "Requests handed to the producer.", labels=_LABELS
        )
        delivered = CounterMetricFamily(
            "cm_agent_requests_delivered", "Requests the broker acknowledged.", labels=_LABELS
        )
        failed = CounterMetricFamily(
            "cm_agent_delivery_failures",
            "Requests that failed for good, by librdkafka error name.",
            labels=[*_LABELS, "error"],
        )
        purged = CounterMetricFamily(
            "cm_agent_requests_purged",
            "Requests dropped from the queue when the agent was cancelled.",
            labels=_LABELS,
        )
        queued = GaugeMetricFamily(
            "cm_agent_queue_depth", "Requests whose outcome is not known yet.", labels=_LABELS
        )
        for collection, stats in sorted(self._agent.stats().items()):
            labels = [replica, collection]
            produced.add_metric(labels, stats.produced)
            delivered.add_metric(labels, stats.delivered)
            purged.add_metric(labels, stats.purged)
            queued.add_metric(labels, stats.pending)
            for error, count in sorted(stats.failures.items()):
                failed.add_metric([*labels, error], count)
        active = GaugeMetricFamily(
            "cm_agent_active",
            "1 while the agent publishes as its epoch; 0 once it stopped (removed, cancelled "
            "or silenced).",
            labels=["replica"],
        )
        active.add_metric([replica], 0 if self._agent.stopped else 1)
        epoch = GaugeMetricFamily(
            "cm_agent_epoch", "The epoch the agent publishes as.", labels=["replica"]
        )
        epoch.add_metric([replica], self._agent.epoch or 0)
        yield from (produced, delivered, failed, purged, queued, active, epoch)
