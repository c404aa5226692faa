"""The ``openmetrics`` source: a real replica's ``/metrics``, scraped once per step.

Almost every fleet member already serves its state in Prometheus' text exposition format
(Redis, Kafka and node exporters, JVMs, Python services, this product's own processes).
Each step scrapes the target once (:mod:`producers.sources.scrape`) and publishes:

- ``metric_samples``: one row per sample, keyed by (metric, labels as canonical text), with
  its value as a double. A changed value is the retraction of the old row and the
  insertion of the new one, as every keyed collection here is updated.
- ``scrape_status``: one row saying whether the last scrape worked, why not, how long it
  took and when the last good one was. It carries the row TTL, so it expires on its own
  when the agent dies, long before the lease ends.

A bad target is weather: a scrape that fails (refused, hung past the timeout, HTTP error,
malformed text, over a bound) changes only the status row. The last good samples stay,
with ``last_success_ms`` saying how old they are, until a scrape works again or the
replica's lease ends.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Mapping

from collection_manager.config.errors import ConfigError
from collection_manager.config.settings import redact_url
from producers.simulated import Row, Update
from producers.sources import scrape_metrics
from producers.sources.plugin import SourceCollection, SourceContext, field
from producers.sources.scrape import Filters, SampleKey, Scrape, scrape
from producers.sources.scrape_fetch import ScrapeLimits, check_target
from producers.sources.shared import SharedSource
from producers.subscribe import Source

METRIC_SAMPLES = "metric_samples"
SCRAPE_STATUS = "scrape_status"

COLLECTIONS: tuple[SourceCollection, ...] = (
    SourceCollection(
        METRIC_SAMPLES,
        (
            field("metric", "string", "Sample name, e.g. redis_commands_processed_total."),
            field("labels", "string", 'Labels as canonical text: sorted, a="1",b="x".'),
            field("value", "double", "The sample's value at the last good scrape."),
        ),
        "One sample of a replica's /metrics (the openmetrics source).",
    ),
    SourceCollection(
        SCRAPE_STATUS,
        (
            field("target", "string", "The URL scraped."),
            field("up", "boolean", "Whether the last scrape worked."),
            field("error", "string?", "Why the last scrape failed; null when it worked."),
            field("duration_ms", "long", "How long the last scrape took."),
            field("samples", "long", "Samples the last good scrape kept."),
            field("non_finite", "long", "Samples it dropped as NaN or infinite."),
            field("last_success_ms", "long?", "When the last good scrape was (epoch ms)."),
        ),
        "Whether the openmetrics source can scrape its replica; expires with the agent.",
        expires=True,
    ),
)

Scraper = Callable[[str, Filters, ScrapeLimits], Scrape]


class OpenMetricsSource:
    """The samples and scrape status of one target, from one scrape per step.

    Args:
        replica_id: the replica, for the source's metrics (:mod:`scrape_metrics`).
        target: the URL of the replica's ``/metrics``.
        filters: which metric families are kept.
        limits: the scrape's timeout and bounds.
        scraper: scrapes once; tests pass a scripted one.
        clock: ms since the Unix epoch, for ``last_success_ms``.
    """

    def __init__(
        self,
        replica_id: str,
        target: str,
        filters: Filters,
        limits: ScrapeLimits,
        scraper: Scraper = scrape,
        clock: Callable[[], int] = lambda: int(time.time() * 1000),
    ) -> None:
        self._target = target
        self._labels = (replica_id, redact_url(target))
        self._filters = filters
        self._limits = limits
        self._scraper = scraper
        self._clock = clock
        self._samples: dict[SampleKey, float] = {}
        self._status: Row | None = None
        self._last_success_ms: int | None = None

    def snapshot(self) -> dict[str, list[Update]]:
        """The first scrape, as insertions."""
        return self.step()

    def step(self) -> dict[str, list[Update]]:
        """Scrapes once; the changed samples and the new status row."""
        result = self._scraper(self._target, self._filters, self._limits)
        scrape_metrics.SCRAPES.labels(
            *self._labels, "ok" if result.error is None else "failed"
        ).inc()
        scrape_metrics.SCRAPE_DURATION.labels(*self._labels).set(result.duration_ms / 1000)
        samples: list[Update] = []
        if result.samples is not None:
            samples = sample_changes(self._samples, result.samples)
            self._samples = dict(result.samples)
            self._last_success_ms = self._clock()
            scrape_metrics.SCRAPE_SAMPLES.labels(*self._labels).set(len(self._samples))
        status: Row = (
            self._target,
            result.error is None,
            result.error,
            result.duration_ms,
            len(self._samples),
            result.non_finite,
            self._last_success_ms,
        )
        old, self._status = self._status, status
        if old == status:  # nothing new to say (its TTL is refreshed all the same)
            return {METRIC_SAMPLES: samples, SCRAPE_STATUS: []}
        changes: list[Update] = [] if old is None else [(old, -1)]
        return {METRIC_SAMPLES: samples, SCRAPE_STATUS: [*changes, (status, 1)]}


def sample_changes(old: Mapping[SampleKey, float], new: Mapping[SampleKey, float]) -> list[Update]:
    """The differential updates from one scrape's samples to the next's (rows keyed)."""
    updates: list[Update] = []
    for key, value in old.items():
        if new.get(key) != value:
            updates.append(((*key, value), -1))
    for key, value in new.items():
        if old.get(key) != value:
            updates.append(((*key, value), 1))
    return updates


class OpenMetricsPlugin:
    """Scrapes one target's ``/metrics`` each step."""

    name = "openmetrics"
    summary = (
        "a real replica's Prometheus /metrics, scraped each step into metric_samples, with "
        "its scrape_status"
    )
    collections = COLLECTIONS
    collectors = scrape_metrics.COLLECTORS

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """The target, the family filters and the scrape's bounds."""
        _add_target_options(parser)
        _add_bound_options(parser)

    def create(self, options: argparse.Namespace, context: SourceContext) -> Mapping[str, Source]:
        """One scrape per step, shared by the two collections.

        Raises:
            ConfigError: for a bad target, filter or bound, no row TTL, or a timeout that
                would let a hanging target stop the agent.
        """
        target = check_target(options.target)
        timeout_s = options.scrape_timeout
        if timeout_s is None:
            timeout_s = context.step_interval_ms / 1000
        check_timeout(timeout_s, context)
        limits = ScrapeLimits(
            timeout_s=timeout_s,
            max_bytes=options.max_bytes,
            max_samples=options.max_samples,
            max_labels_chars=options.max_labels_chars,
        )
        filters = Filters.of(options.include, options.exclude)
        source = OpenMetricsSource(context.replica_id, target, filters, limits)
        return SharedSource(source, [METRIC_SAMPLES, SCRAPE_STATUS]).views()


def _add_target_options(parser: argparse.ArgumentParser) -> None:
    """What is scraped: ``--target``, and the families kept (``--include``, ``--exclude``)."""
    parser.add_argument(
        "--target",
        required=True,
        help="URL of the replica's metrics, http(s)://host:port/metrics",
    )
    parser.add_argument(
        "--include",
        action="append",
        default=[],
        metavar="REGEX",
        help="keep only metric families whose name matches one (repeatable; default: all)",
    )
    parser.add_argument(
        "--exclude",
        action="append",
        default=[],
        metavar="REGEX",
        help="drop metric families whose name matches one (repeatable; wins over "
        "--include; default: none)",
    )


def _add_bound_options(parser: argparse.ArgumentParser) -> None:
    """What a scrape may cost: the sizes default to :class:`ScrapeLimits`'s, the timeout to
    one step interval (see ``create``)."""
    limits = ScrapeLimits()
    parser.add_argument(
        "--max-samples",
        type=int,
        default=limits.max_samples,
        help=f"a scrape with more samples fails (default {limits.max_samples})",
    )
    parser.add_argument(
        "--max-bytes",
        type=int,
        default=limits.max_bytes,
        help=f"a scrape whose answer is longer fails (default {limits.max_bytes})",
    )
    parser.add_argument(
        "--max-labels-chars",
        type=int,
        default=limits.max_labels_chars,
        help="a scrape with a longer label text in one sample fails "
        f"(default {limits.max_labels_chars})",
    )
    parser.add_argument(
        "--scrape-timeout",
        type=float,
        metavar="SECONDS",
        help="a scrape not done by then fails (default: one step interval)",
    )


def check_timeout(timeout_s: float, context: SourceContext) -> None:
    """Refuses a scrape timeout that lets a hanging target silence the status row.

    A subscribe with a row TTL stops its agent when it was silent for half the TTL
    (:mod:`producers.subscribe`); one step is a wait of an interval and a scrape.
    """
    if context.row_ttl_ms <= 0:
        raise ConfigError(
            "--source openmetrics needs a row TTL (CM_ROW_TTL_MS > 0): its scrape_status "
            "row must expire when the agent dies"
        )
    step_ms = timeout_s * 1000 + context.step_interval_ms
    if not timeout_s > 0 or step_ms >= context.row_ttl_ms / 2:
        raise ConfigError(
            f"--scrape-timeout {timeout_s:g} s: must be over 0, and with the step interval "
            f"({context.step_interval_ms} ms) under half the row TTL (CM_ROW_TTL_MS="
            f"{context.row_ttl_ms}), or a hanging target would stop the agent"
        )


PLUGIN = OpenMetricsPlugin()
