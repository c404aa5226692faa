"""The figures of ``bench.sink_publish``: pure, for the benchmark and the report alike."""

from __future__ import annotations

from bench.figure import Figure, Result

NAME = "sink_publish"


def sink_publish(result: Result) -> list[Figure]:
    """Publish to readable in the sink's topic against publish to visible in Redis (the same
    probes), and the sink's throughput and CPU over a backlog."""
    f = result["figures"]
    at = f"{f['offered']:,.0f} updates/s offered, {f['probes']} probes"
    base = "publish to visible in Redis, the same probes (polled every 10 ms)"
    return [
        Figure(
            NAME,
            f"publish to readable in a sink's topic, p50 ({at})",
            f["readable_p50_ms"],
            "ms",
            f["visible_p50_ms"],
            base,
        ),
        Figure(
            NAME,
            "publish to readable in a sink's topic, p99",
            f["readable_p99_ms"],
            "ms",
            f["visible_p99_ms"],
            base,
        ),
        Figure(
            NAME,
            f"a sink publishing a backlog of {f['backlog_changes']:,} changes",
            f["changes_per_s"],
            "changes/s",
            note=f"{f['cpu_s_per_million']:.1f} CPU s of the sink per million changes",
        ),
    ]
