"""The shipped Grafana dashboard (docker/grafana/collection-manager.json).

Its structure as Grafana imports it: unique panel ids, every panel on the ``${datasource}``
variable (no datasource uid of anybody's Grafana), a title and description each, places on
the grid that do not overlap; every metric it names is one the processes serve
(docs/reference/metrics.md, generated from the code). And every query of every panel,
with Grafana's variables filled in as Grafana would, answers a real Prometheus scraping a
live pipeline (``watched_pipeline.py``) with data: a finite value at least, and every
metric it names has series there.
"""

from __future__ import annotations

import json
import math
import re
import urllib.error
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from collection_manager import devservices
from tests.integration.local_prometheus import LocalPrometheus
from tests.integration.watched_pipeline import WatchedPipeline, watched_pipeline
from tests.support import assert_eventually

ROOT = Path(__file__).parents[2]
DASHBOARD = ROOT / "docker" / "grafana" / "collection-manager.json"
REFERENCE = ROOT / "docs" / "reference" / "metrics.md"
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
GRID_WIDTH = 24
# Grafana's own variables, as it fills them in for a Prometheus scraped every few seconds.
BUILT_IN = {"__rate_interval": "1m", "__interval": "15s", "__range": "1h"}
# Metrics whose first series comes only with an event a test cannot wait for; their
# panels answer 0 until then (``or on() vector(0)``), which is checked instead.
RARE = {
    "cm_consumer_cut_groups_given_up_total": "a group given up: a part missing for 300 s",
}
# ``$name``, ``${name}``, ``${name:format}``, ``[[name]]``; not a regex group's ``$1``.
_VARIABLE = re.compile(r"\$\{([A-Za-z_]\w*)(?::\w+)?\}|\$([A-Za-z_]\w*)|\[\[(\w+)\]\]")
_METRIC = re.compile(r"\b(cm_\w+)")
_HISTOGRAM_SERIES = ("_bucket", "_count", "_sum")
# Panels answer within a few scrapes of the readers' first requests; the rest is load.
ANSWER_S = 120.0


def _dashboard() -> dict[str, Any]:
    return dict(json.loads(DASHBOARD.read_text()))


def _panels(dashboard: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every panel, the rows and those inside a collapsed row too."""
    for panel in dashboard["panels"]:
        yield panel
        yield from panel.get("panels", [])


def _queries(dashboard: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(panel title, refId, expression) of every target of every panel."""
    return [
        (panel["title"], target["refId"], target["expr"])
        for panel in _panels(dashboard)
        for target in panel.get("targets", [])
    ]


def _plain(expression: str, dashboard: dict[str, Any]) -> str:
    """``expression`` as Prometheus gets it: Grafana's variables filled in, a template
    variable of the dashboard's as its "All" value (its ``allValue``, else ``.*``)."""
    values = dict(BUILT_IN)
    for variable in dashboard["templating"]["list"]:
        values.setdefault(variable["name"], variable.get("allValue") or ".*")

    def fill(match: re.Match[str]) -> str:
        name = next(group for group in match.groups() if group)
        assert name in values, f"{name!r} is no variable of the dashboard's: {expression}"
        return str(values[name])

    return _VARIABLE.sub(fill, expression)


def _reference() -> dict[str, str]:
    """Every metric the processes serve, by name: its type, from the metric reference."""
    rows = re.findall(r"^\| `(cm_\w+)` \| (\w+) \|", REFERENCE.read_text(), re.MULTILINE)
    return dict(rows)


def _served_name(series: str, reference: dict[str, str]) -> str | None:
    """The metric a series name belongs to (a histogram's ``_bucket`` to the histogram)."""
    if series in reference:
        return series
    for suffix in _HISTOGRAM_SERIES:
        base = series.removesuffix(suffix)
        if base != series and reference.get(base) == "histogram":
            return base
    return None


def _datasources(node: Any) -> Iterator[Any]:
    """Every ``datasource`` value anywhere in the dashboard."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "datasource":
                yield value
            yield from _datasources(value)
    elif isinstance(node, list):
        for item in node:
            yield from _datasources(item)


def test_the_dashboard_imports_on_any_prometheus_datasource() -> None:
    dashboard = _dashboard()
    assert isinstance(dashboard["schemaVersion"], int) and dashboard["schemaVersion"] >= 39
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert (variables["datasource"]["type"], variables["datasource"]["query"]) == (
        "datasource",
        "prometheus",
    )
    datasources = list(_datasources(dashboard))
    assert datasources and [ds for ds in datasources if ds != DATASOURCE] == []
    panels = list(_panels(dashboard))
    ids = [panel["id"] for panel in panels]
    assert len(ids) == len(set(ids)), ids
    cells: dict[tuple[int, int], str] = {}
    for panel in panels:
        grid = panel["gridPos"]
        assert all(isinstance(grid[k], int) for k in "xywh"), panel["title"]
        assert grid["x"] >= 0 and grid["w"] > 0 and grid["h"] > 0, panel["title"]
        assert grid["x"] + grid["w"] <= GRID_WIDTH, panel["title"]
        for x in range(grid["x"], grid["x"] + grid["w"]):
            for y in range(grid["y"], grid["y"] + grid["h"]):
                other = cells.setdefault((x, y), panel["title"])
                assert other == panel["title"], f"{panel['title']!r} overlaps {other!r}"
        assert panel["title"].strip(), panel["id"]
        if panel["type"] == "row":
            continue
        assert panel["datasource"] == DATASOURCE, panel["title"]
        assert panel.get("description", "").strip(), f"{panel['title']!r} has no description"
        refs = [target["refId"] for target in panel["targets"]]
        assert refs and len(refs) == len(set(refs)), panel["title"]


def test_every_query_names_only_metrics_the_processes_serve() -> None:
    dashboard, reference = _dashboard(), _reference()
    assert reference, REFERENCE
    for title, ref, expression in _queries(dashboard):
        plain = _plain(expression, dashboard)
        assert _VARIABLE.search(plain) is None, f"{title} [{ref}]: {plain}"
        for series in _METRIC.findall(expression):
            served = _served_name(series, reference)
            assert served is not None, f"panel {title!r} [{ref}] names {series}, not served"
            if served in RARE:
                assert expression.endswith(" or on() vector(0)"), f"{title} [{ref}]"


def _unanswered(prometheus: LocalPrometheus, dashboard: dict[str, Any]) -> list[str]:
    """Each query that has no finite value yet, or names a metric with no series, named by
    its panel."""
    reference, missing = _reference(), []
    for title, ref, expression in _queries(dashboard):
        plain = _plain(expression, dashboard)
        try:
            result = prometheus.query(plain)
        except urllib.error.HTTPError as exc:  # a query Prometheus refuses never answers
            pytest.fail(f"panel {title!r} [{ref}]: {plain}: {exc.read().decode()}")
        if not any(math.isfinite(float(r["value"][1])) for r in result):
            missing.append(f"panel {title!r} [{ref}]: {plain} -> {result or 'no data'}")
        for series in sorted(set(_METRIC.findall(expression))):
            if _served_name(series, reference) not in RARE and not prometheus.query(series):
                missing.append(f"panel {title!r} [{ref}]: no series of {series}")
    return missing


def test_every_panel_answers_from_a_live_pipeline(
    kafka: str, endpoints: devservices.Endpoints, topic: str, unique: str, tmp_path: Path
) -> None:
    """Consumer, controller, two agents and ``server run``, a bucketed collection, a dead
    letter, streamed reads and an open change stream: every panel's every query answers
    (the agents' leases give the least lease left, the bucketed collection its cut trail)."""
    dashboard = _dashboard()
    with watched_pipeline(kafka, endpoints.redis_url, topic, unique, tmp_path) as pipeline:

        def answered() -> None:
            missing = _unanswered(pipeline.prometheus, dashboard)
            assert missing == [], "\n".join(missing)

        try:
            assert_eventually(answered, timeout=ANSWER_S, interval=1)
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{pipeline.log_tails()}") from None
        _the_pipeline_was_what_the_test_says(pipeline, topic)


def _the_pipeline_was_what_the_test_says(pipeline: WatchedPipeline, topic: str) -> None:
    prometheus = pipeline.prometheus
    assert prometheus.value("sum(cm_http_streams_open)") == 1  # the change stream
    assert (prometheus.value('cm_controller_replicas{state="active"}') or 0) >= 1
    left = prometheus.value("cm_controller_lease_left_min_seconds")  # the agents' leases
    assert left is not None and 0 < left < math.inf, left
    dead_letters = f'sum(cm_consumer_dead_letters_by_kind_total{{topic="{topic}"}})'
    assert (prometheus.value(dead_letters) or 0) >= 1
    units = f'cm_consumer_steps_total{{collection=~"{pipeline.bucketed}#.*"}}'
    assert len(prometheus.query(units)) >= 2, units  # the group's buckets at least
    assert (prometheus.value(f'sum(cm_consumer_cut_settles_total{{topic="{topic}"}})') or 0) > 0
    trail = f'cm_consumer_cut_trail_seconds{{topic="{topic}", collection="{pipeline.bucketed}"}}'
    behind = prometheus.value(trail)
    assert behind is not None and 0 <= behind < 300, (trail, behind)  # below a give-up's 300 s
