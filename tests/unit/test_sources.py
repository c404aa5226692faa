"""Sources as plugins: finding them by name, their options, shared reads, the OpenMetrics
source's differential updates, and the push source of the embedded API."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from collection_manager.cli.main import main
from collection_manager.config.errors import ConfigError
from collection_manager.core.errors import CollectionManagerError, SchemaError
from producers.embedded import PushSource
from producers.simulated import Update, apply_updates
from producers.sources import scrape_metrics
from producers.sources.openmetrics import (
    METRIC_SAMPLES,
    SCRAPE_STATUS,
    OpenMetricsSource,
    sample_changes,
)
from producers.sources.openmetrics import (
    PLUGIN as OPENMETRICS,
)
from producers.sources.plugin import (
    SourceCollection,
    SourceContext,
    field,
    load_source,
    parse_options,
    source_names,
)
from producers.sources.scrape import Filters, Scrape
from producers.sources.scrape_fetch import ScrapeLimits
from producers.sources.shared import SharedSource
from producers.sources.simulated import PLUGIN as SIMULATED
from schemas.introspection import introspection_spec

CONTEXT = SourceContext("r1", step_interval_ms=1_000, row_ttl_ms=6_000)


def test_the_built_in_sources_are_found_by_name() -> None:
    assert {"simulated", "openmetrics"} <= set(source_names())
    assert load_source("simulated") is SIMULATED
    assert load_source("openmetrics") is OPENMETRICS


def test_an_unknown_source_is_refused_with_the_known_ones_named() -> None:
    with pytest.raises(ConfigError, match=r"no such source; known: .*openmetrics.*simulated"):
        load_source("nope")


def test_the_simulated_source_declares_the_built_in_row_schemas() -> None:
    for declared in SIMULATED.collections:
        assert declared.spec().columns == introspection_spec(declared.name).columns
    expiring = {c.name for c in SIMULATED.collections if c.expires}
    assert expiring == {"error_counts", "hydration_status"}


def test_a_declared_collection_puts_the_replica_id_first_and_indexes_it() -> None:
    declared = SourceCollection("x", (field("a", "long?"), field("b", "string")))
    spec = declared.spec("_t")
    assert spec.name == "x_t"
    assert spec.column_names == ("replica_id", "a", "b")
    assert spec.indexed_columns == ("replica_id",)
    assert spec.columns[1].nullable


def test_source_options_are_parsed_by_the_source_and_bad_ones_named() -> None:
    options = parse_options(SIMULATED, ["--workers", "2"], "prog")
    assert (options.workers, options.dataflows, options.seed) == (2, 8, None)
    with pytest.raises(ConfigError, match="unrecognized arguments: --bogus"):
        parse_options(SIMULATED, ["--bogus"], "prog")
    with pytest.raises(ConfigError, match="--target"):
        parse_options(OPENMETRICS, [], "prog")


def test_openmetrics_refuses_no_ttl_and_a_timeout_that_would_stop_the_agent() -> None:
    options = parse_options(OPENMETRICS, ["--target", "http://127.0.0.1:1/metrics"], "p")
    with pytest.raises(ConfigError, match="needs a row TTL"):
        OPENMETRICS.create(options, SourceContext("r1", 1_000, 0))
    slow = parse_options(
        OPENMETRICS, ["--target", "http://127.0.0.1:1/m", "--scrape-timeout", "2.5"], "p"
    )
    with pytest.raises(ConfigError, match="under half the row TTL"):
        OPENMETRICS.create(slow, CONTEXT)
    assert set(OPENMETRICS.create(options, CONTEXT)) == {METRIC_SAMPLES, SCRAPE_STATUS}


def test_other_commands_still_refuse_unknown_options(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["replicas", "list", "--workers", "2"])
    assert exit_info.value.code == 2
    assert "unrecognized arguments: --workers 2" in capsys.readouterr().err


class _Counting:
    """A source that reads both collections at once and counts its reads."""

    def __init__(self) -> None:
        self.reads = 0

    def snapshot(self) -> dict[str, list[Update]]:
        return {"a": [(("s",), 1)], "b": [(("s",), 1)]}

    def step(self) -> dict[str, list[Update]]:
        self.reads += 1
        return {"a": [((f"a{self.reads}",), 1)], "b": [((f"b{self.reads}",), 1)]}


def test_a_shared_source_reads_once_per_step_for_all_collections() -> None:
    source = _Counting()
    views = SharedSource(source, ["a", "b"]).views()
    assert views["a"].snapshot() == {"a": [(("s",), 1)]}
    assert views["b"].snapshot() == {"b": [(("s",), 1)]}
    assert views["a"].step() == {"a": [(("a1",), 1)]}
    assert views["b"].step() == {"b": [(("b1",), 1)]}
    assert source.reads == 1
    # One view a step behind gets both reads' updates at once, in order.
    views["a"].step()
    views["a"].step()
    assert views["b"].step() == {"b": [(("b2",), 1), (("b3",), 1)]}
    assert source.reads == 3


samples_strategy = st.dictionaries(
    st.tuples(st.sampled_from(["up", "x_total", "h_bucket"]), st.sampled_from(["", 'a="1"'])),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    max_size=6,
)


@given(st.lists(samples_strategy, min_size=1, max_size=5))
def test_sample_changes_keep_the_published_rows_equal_to_the_last_scrape(
    scrapes: list[dict[tuple[str, str], float]],
) -> None:
    published: Counter[tuple[object, ...]] = Counter()
    previous: dict[tuple[str, str], float] = {}
    for samples in scrapes:
        updates = sample_changes(previous, samples)
        for row, diff in updates:
            assert diff == 1 or published[row] >= 1  # never retracts what is not there
        apply_updates(published, updates)
        assert published == Counter((*key, value) for key, value in samples.items())
        previous = samples


def _scripted(*results: Scrape):  # type: ignore[no-untyped-def]
    answers = list(results)

    def scraper(_url: str, _filters: Filters, _limits: ScrapeLimits) -> Scrape:
        return answers.pop(0)

    return scraper


def test_a_failed_scrape_keeps_the_last_good_samples_and_says_why_in_the_status() -> None:
    good = Scrape({("up", ""): 1.0, ("x_total", 'a="1"'): 5.0}, None, 12)
    changed = Scrape({("up", ""): 1.0, ("x_total", 'a="1"'): 7.0}, None, 9, non_finite=1)
    failed = Scrape(None, "cannot connect to http://t/metrics: refused", 3)
    clock = iter([1_000, 2_000]).__next__
    source = OpenMetricsSource(
        "r1", "http://t/metrics", Filters(), ScrapeLimits(), _scripted(good, changed, failed), clock
    )
    first = source.snapshot()
    assert Counter(row for row, _ in first[METRIC_SAMPLES]) == {
        ("up", "", 1.0): 1,
        ("x_total", 'a="1"', 5.0): 1,
    }
    assert first[SCRAPE_STATUS] == [(("http://t/metrics", True, None, 12, 2, 0, 1_000), 1)]
    second = source.step()
    assert second[METRIC_SAMPLES] == [
        (("x_total", 'a="1"', 5.0), -1),
        (("x_total", 'a="1"', 7.0), 1),
    ]
    assert second[SCRAPE_STATUS][1] == (("http://t/metrics", True, None, 9, 2, 1, 2_000), 1)
    third = source.step()
    assert third[METRIC_SAMPLES] == []
    down = ("http://t/metrics", False, "cannot connect to http://t/metrics: refused", 3, 2, 0)
    assert third[SCRAPE_STATUS] == [
        (second[SCRAPE_STATUS][1][0], -1),
        ((*down, 2_000), 1),
    ]
    labels = ("r1", "http://t/metrics")
    assert _value(scrape_metrics.SCRAPES.labels(*labels, "ok")) == 2
    assert _value(scrape_metrics.SCRAPES.labels(*labels, "failed")) == 1
    assert _value(scrape_metrics.SCRAPE_SAMPLES.labels(*labels)) == 2
    assert _value(scrape_metrics.SCRAPE_DURATION.labels(*labels)) == 0.003


def _value(child: object) -> float:
    return float(child._value.get())  # type: ignore[attr-defined]


SPECS = {"c": SourceCollection("c", (field("k", "string"), field("v", "long"))).spec()}


def test_push_source_publishes_the_difference_of_whole_row_sets() -> None:
    source = PushSource("r1", SPECS)
    source.set_rows("c", [("a", 1), ("b", 2)])
    assert Counter(source.snapshot()["c"]) == {(("a", 1), 1): 1, (("b", 2), 1): 1}
    source.set_rows("c", [("a", 1), ("b", 3)])
    source.publish("c", [(("d", 4), 1)])
    assert source.step()["c"] == [(("b", 3), 1), (("b", 2), -1), (("d", 4), 1)]
    source.set_rows("c", [])
    assert Counter(source.step()["c"]) == {(("a", 1), -1): 1, (("b", 3), -1): 1, (("d", 4), -1): 1}


def test_push_source_refuses_bad_rows_unknown_collections_and_over_the_bound() -> None:
    source = PushSource("r1", SPECS, max_pending=2)
    with pytest.raises(SchemaError, match="column 'v' expects long"):
        source.publish("c", [(("a", "x"), 1)])
    with pytest.raises(CollectionManagerError, match="not declared; declared: \\['c'\\]"):
        source.set_rows("nope", [])
    with pytest.raises(CollectionManagerError, match="more often than it holds it"):
        source.publish("c", [(("a", 1), -1)])
    with pytest.raises(CollectionManagerError, match="over the bound of 2"):
        source.set_rows("c", [("a", 1), ("b", 2), ("c", 3)])
    assert source.step() == {"c": []}  # nothing of a refused call was handed over


THIRD_PARTY = """
import argparse

from producers.sources.plugin import SourceCollection, field


class Plugin:
    name = "lighthouse"
    summary = "the beams of a lighthouse"
    collections = (SourceCollection("beams", (field("angle", "long"),)),)

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--beams", type=int, default=2, help="how many (default 2)")

    def create(self, options, context):
        class Beams:
            def snapshot(self):
                return {"beams": [((a * 90,), 1) for a in range(options.beams)]}

            def step(self):
                return {"beams": []}

        return {"beams": Beams()}


PLUGIN = Plugin()
"""


def third_party_package(root: Path) -> Path:
    """An installed package outside the product: its module and dist-info with an entry
    point, as pip leaves them in a site directory. Returns that directory."""
    site = root / "site"
    site.mkdir()
    (site / "lighthouse_source.py").write_text(textwrap.dedent(THIRD_PARTY))
    info = site / "lighthouse_source-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: lighthouse-source\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[collection_manager.sources]\nlighthouse = lighthouse_source:PLUGIN\n"
    )
    return site


def _python_with(site: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """This Python in a child process that also sees the packages installed in ``site``."""
    env = {"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"}
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, env=env, timeout=60, check=False
    )


def test_a_third_party_source_is_found_by_name_without_changing_the_product(
    tmp_path: Path,
) -> None:
    site = third_party_package(tmp_path)
    code = textwrap.dedent(
        """
        import sys
        from producers.sources.plugin import load_source, parse_options, SourceContext
        plugin = load_source("lighthouse")
        options = parse_options(plugin, ["--beams", "3"], "p")
        sources = plugin.create(options, SourceContext("r1", 1000, 6000))
        print(sources["beams"].snapshot())
        """
    )
    done = _python_with(site, "-c", code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "{'beams': [((0,), 1), ((90,), 1), ((180,), 1)]}"
    listing = _python_with(site, "-m", "collection_manager.cli.main", "replicas", "sources")
    assert listing.returncode == 0, listing.stderr
    assert "lighthouse: the beams of a lighthouse" in listing.stdout
    assert "--beams BEAMS" in listing.stdout


def test_a_broken_plugin_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    site = third_party_package(tmp_path)
    (site / "lighthouse_source.py").write_text("raise RuntimeError('no lamp')\n")
    monkeypatch.syspath_prepend(str(site))
    with pytest.raises(ConfigError, match=r"loading lighthouse_source:PLUGIN failed: .*no lamp"):
        load_source("lighthouse")


def test_the_sources_listing_shows_each_source_and_its_defaults(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["replicas", "sources"]) == 0
    out = capsys.readouterr().out
    assert "simulated: simulated compute replicas" in out
    assert "openmetrics: a real replica's Prometheus /metrics" in out
    assert "(default 10000)" in out
    assert "publishes: metric_samples, scrape_status (rows expire)" in out


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["--source", "nope"], "--source nope: no such source; known: openmetrics, simulated"),
        (["--source", "openmetrics"], "the following arguments are required: --target"),
        (["--source", "openmetrics", "--target", "ftp://x"], "must be an http:// or https://"),
        (["--workers", "two"], "argument --workers: invalid int value: 'two'"),
    ],
)
def test_replica_run_refuses_a_bad_source_before_connecting(
    args: list[str], error: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Nothing answers here: reaching a service would fail with another message.
    monkeypatch.setenv("CM_REDIS_URL", "redis://127.0.0.1:1")
    monkeypatch.setenv("CM_KAFKA_BOOTSTRAP", "127.0.0.1:1")
    usage = "unrecognized" in error or "required" in error or "invalid" in error
    assert main(["replicas", "run", "--id", "r1", *args]) == (2 if usage else 1)
    err = capsys.readouterr().err
    assert error in err and "Traceback" not in err, err


def test_an_unchanged_status_is_not_published_again() -> None:
    same = Scrape({("up", ""): 1.0}, None, 5)
    source = OpenMetricsSource(
        "r1", "http://s/metrics", Filters(), ScrapeLimits(), _scripted(same, same), lambda: 7
    )
    assert len(source.snapshot()[SCRAPE_STATUS]) == 1
    assert source.step() == {METRIC_SAMPLES: [], SCRAPE_STATUS: []}
