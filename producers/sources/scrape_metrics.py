"""The ``openmetrics`` source's own metrics, served by ``replicas run`` beside the agent's.

Whether an agent can reach its replica is the first thing an operator asks of it, so the
scrapes are counted by result here as well as stated in the ``scrape_status`` row: the row
tells a reader of the collections, these tell Prometheus and its alerts.
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge

_LABELS = ("replica", "target")

SCRAPES = Counter(
    "cm_agent_scrapes",
    "Scrapes of the openmetrics source's target, by result: ok or failed.",
    [*_LABELS, "result"],
    registry=None,
)
SCRAPE_DURATION = Gauge(
    "cm_agent_scrape_duration_seconds",
    "How long the last scrape of the target took, failed or not.",
    _LABELS,
    registry=None,
)
SCRAPE_SAMPLES = Gauge(
    "cm_agent_scrape_samples",
    "Samples the last good scrape kept (what metric_samples holds of the replica).",
    _LABELS,
    registry=None,
)

COLLECTORS = (SCRAPES, SCRAPE_DURATION, SCRAPE_SAMPLES)
