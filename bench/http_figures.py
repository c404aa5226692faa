"""The figures of ``bench.http_reads``: pure, for the benchmark and the report alike.

Reads over HTTP against ``query`` (whole collections, and at the JSON bound), the server's
peak resident set against ``query``'s, point queries from many clients against the same
reads through ``RedisStore``, and the change feed against Redis itself.
"""

from __future__ import annotations

from typing import Any

from bench.figure import Figure, Result

NAME = "http_reads"
MIB = 1024 * 1024


def _mib(value: float) -> float:
    return value / MIB


def _whole(rows: dict[str, Any]) -> list[Figure]:
    n, full = f"{rows['rows']:,}", rows["full"]
    query = full["query"]
    base = "`query NAME --format json`, the process, output to a pipe"
    out = []
    for label, what in (("arrow", "Arrow"), ("ndjson", "NDJSON")):
        s = full[label]
        out.append(
            Figure(
                NAME,
                f"{n} rows read whole as {what} over HTTP",
                s["wall_s"],
                "s",
                query["wall_s"],
                base,
                note=f"{s['rows_per_s']:,.0f} rows/s against {query['rows_per_s']:,.0f}; "
                f"the answer's head after {s['head_s']:.2f} s; median of {s['reads']}",
            )
        )
    for label, what in (("arrow", "Arrow"), ("ndjson", "NDJSON")):
        s = full[label]
        out.append(
            Figure(
                NAME,
                f"serve's CPU seconds answering {n} rows as {what}",
                s["cpu_s"],
                "CPU s",
                query["cpu_s"],
                "query's own (ru_utime + ru_stime)",
                note="its process only: Redis's share and the client's are outside both; "
                "less sensitive to other work than the wall time",
            )
        )
    for label, what in (("arrow", "Arrow"), ("ndjson", "NDJSON")):
        s = full[label]
        after = ", ".join(f"{_mib(a):,.0f}" for a in s["rss_after"])
        out.append(
            Figure(
                NAME,
                f"serve's peak resident set while it answers {n} rows as {what}",
                _mib(s["rss_peak"]),
                "MiB",
                _mib(query["rss_peak"]),
                "query's own peak (ru_maxrss)",
                note=f"{_mib(s['rss_before']):,.0f} MiB before the first of {s['reads']} "
                f"reads, {after} MiB after each; peak from the kernel's {s['peak_from']} "
                f"reset before each read (sampled every 10 ms: "
                f"{_mib(s['rss_peak_sampled']):,.0f} MiB)",
            )
        )
    refused = rows["json_refused"]
    problem = refused.get("problem") or {}
    kind = str(problem.get("type", "")).rsplit(":", 1)[-1]
    bound = problem.get("bound")
    out.append(
        Figure(
            NAME,
            f"{n} rows as JSON over HTTP",
            None,
            "",
            note=f"refused: {refused['status']} {kind} (CM_HTTP_MAX_ROWS={bound:,}) "
            f"after {refused['wall_s'] * 1e3:,.0f} ms"
            if refused["status"] != 200 and bound is not None
            else f"answered: {refused['status']}",
        )
    )
    at, b = rows["at_json_bound"], rows["json_rows"]
    base = (
        f"`query --limit {b:,} --format json` (of it {rows['query_startup_s']:.2f} s "
        "starting the process: the same for one row)"
    )
    for label, what in (("json", "JSON"), ("ndjson", "NDJSON"), ("arrow", "Arrow")):
        s = at[label]
        out.append(
            Figure(
                NAME,
                f"{b:,} rows (limit={b:,}, the JSON bound) as {what} over HTTP",
                s["wall_s"],
                "s",
                at["query"]["wall_s"],
                base,
            )
        )
    first, second = rows["first_arrow"][:2]
    grown = _mib(first["rss_after"] - first["rss_before"])
    out.append(
        Figure(
            NAME,
            "a fresh serve's first Arrow answer (10 rows)",
            first["wall_s"] * 1e3,
            "ms",
            second["wall_s"] * 1e3,
            "its second",
            note=f"pyarrow imports pandas at its first pa.array: the server's resident set "
            f"grew {grown:,.0f} MiB",
        )
    )
    return out


def _points(points: dict[str, Any]) -> list[Figure]:
    store, own, default = points["store"], points["client_bound"], points["default_bound"]
    clients = own["clients"]
    base = "RedisStore in the same client processes: the server's read, no HTTP"
    what = f"where=replica_id=rN&limit={points['limit']}, {clients} clients"
    out = [
        Figure(
            NAME,
            f"point query {q} over HTTP ({what}, CM_HTTP_MAX_REQUESTS={own['max_requests']})",
            own[f"{q}_ms"],
            "ms",
            store[f"{q}_ms"],
            base,
        )
        for q in ("p50", "p99")
    ]
    out.append(
        Figure(
            NAME,
            f"point queries per second over HTTP ({what}, "
            f"CM_HTTP_MAX_REQUESTS={own['max_requests']})",
            own["per_s"],
            "reads/s",
            store["per_s"],
            base,
        )
    )
    out.append(
        Figure(
            NAME,
            f"serve's CPU per point query ({what}, CM_HTTP_MAX_REQUESTS={own['max_requests']})",
            own["server_cpu_ms_per_read"],
            "CPU ms",
            store["client_cpu_ms_per_read"],
            "the client processes' CPU per read through RedisStore",
            note=f"the HTTP clients' own: {own['client_cpu_ms_per_read']:.2f} CPU ms per read",
        )
    )
    reads = default["reads_ms"]
    out.append(
        Figure(
            NAME,
            f"point query p99 over HTTP, Retry-After waits included ({what}, "
            f"CM_HTTP_MAX_REQUESTS={default['max_requests']}, the default)",
            reads["p99_ms"],
            "ms",
            store["p99_ms"],
            base,
            note=f"{default['refused_share']:.0%} of attempts refused (503, Retry-After: 1); "
            f"answers p50 {default['p50_ms']:,.0f} ms, p99 {default['p99_ms']:,.0f} ms; "
            f"reads p50 {reads['p50_ms']:,.0f} ms; {default['per_s']:,.0f} reads/s",
        )
    )
    return out


def _feed(feed: dict[str, Any]) -> list[Figure]:
    sse, redis, gap = feed["sse"], feed["redis"], feed["gap"]
    unseen = feed["requests"] - sse["seen"]
    return [
        Figure(
            NAME,
            f"publish to the change on an SSE client, {q} (the real consumer)",
            sse[f"{q}_ms"],
            "ms",
            redis[f"{q}_ms"],
            "publish to visible in Redis, polled every 10 ms",
            note=f"{feed['requests']:,} requests at {feed['rate']:g}/s; the stream's own "
            f"share {gap[f'{q}_ms']:,.0f} ms ({q} of each request's difference); "
            f"{feed['events']:,} events"
            + (f"; {unseen} never came" if unseen else "")
            + (f"; the stream failed: {feed['stream_error']}" if feed["stream_error"] else ""),
        )
        for q in ("p50", "p99")
    ]


def http_reads(result: Result) -> list[Figure]:
    """The report's rows of one run of ``bench.http_reads``."""
    figures = result["figures"]
    return _whole(figures["rows"]) + _points(figures["points"]) + _feed(figures["feed"])
