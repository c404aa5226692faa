"""One scrape of a /metrics target: labels, parsing, filters, bounds, and fetching from a
tiny HTTP server on 127.0.0.1 that each test's fixture starts and stops."""

from __future__ import annotations

import http.server
import itertools
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from collection_manager.config.errors import ConfigError
from producers.sources import scrape as scrape_module
from producers.sources.scrape import Filters, Scrape, canonical_labels, parse, scrape
from producers.sources.scrape_fetch import ScrapeError, ScrapeLimits, check_target, fetch

EXPOSITION = """\
# HELP http_requests_total Requests served.
# TYPE http_requests_total counter
http_requests_total{method="get",code="200"} 1027
http_requests_total{code="500",method="post"} 3
# HELP temperature_celsius The temperature now.
# TYPE temperature_celsius gauge
temperature_celsius 21.5
# HELP request_seconds Request latency.
# TYPE request_seconds histogram
request_seconds_bucket{le="0.1"} 2
request_seconds_bucket{le="1"} 5
request_seconds_bucket{le="+Inf"} 6
request_seconds_sum 3.25
request_seconds_count 6
# HELP rpc_seconds RPC latency.
# TYPE rpc_seconds summary
rpc_seconds{quantile="0.5"} NaN
rpc_seconds{quantile="0.99"} 0.4
rpc_seconds_sum 1.5
rpc_seconds_count 4
"""

EXPECTED = {
    ("http_requests_total", 'code="200",method="get"'): 1027.0,
    ("http_requests_total", 'code="500",method="post"'): 3.0,
    ("temperature_celsius", ""): 21.5,
    ("request_seconds_bucket", 'le="0.1"'): 2.0,
    ("request_seconds_bucket", 'le="1"'): 5.0,
    ("request_seconds_bucket", 'le="+Inf"'): 6.0,
    ("request_seconds_sum", ""): 3.25,
    ("request_seconds_count", ""): 6.0,
    ("rpc_seconds", 'quantile="0.99"'): 0.4,
    ("rpc_seconds_sum", ""): 1.5,
    ("rpc_seconds_count", ""): 4.0,
}

EVERYTHING = Filters()
LIMITS = ScrapeLimits()


def names(samples: dict[tuple[str, str], float]) -> set[str]:
    return {name for name, _ in samples}


# canonical_labels


def test_canonical_labels_sorts_by_name() -> None:
    assert canonical_labels({"le": "+Inf", "a": "1"}) == 'a="1",le="+Inf"'
    assert canonical_labels({}) == ""


def test_canonical_labels_escapes_as_the_exposition_format() -> None:
    text = canonical_labels({"path": 'C:\\dir\n"x"'})
    assert text == 'path="C:\\\\dir\\n\\"x\\""'


def test_canonical_labels_quotes_a_name_that_cannot_be_bare() -> None:
    assert canonical_labels({"a.b": "1", "c": "2"}) == '"a.b"="1",c="2"'


# Small alphabets, so that different dicts often come close to colliding.
tricky_text = st.text(alphabet='ab"\\\n,={}=', max_size=4)
label_dicts = st.dictionaries(tricky_text, tricky_text, max_size=4)


@given(label_dicts)
def test_canonical_labels_is_independent_of_order(labels: dict[str, str]) -> None:
    assert canonical_labels(dict(reversed(labels.items()))) == canonical_labels(labels)


@given(label_dicts, label_dicts)
def test_canonical_labels_is_injective(a: dict[str, str], b: dict[str, str]) -> None:
    assert (canonical_labels(a) == canonical_labels(b)) == (a == b)


# Names starting with "__" are reserved for Prometheus' own use; the parser refuses them.
bare_names = st.from_regex(r"[a-zA-Z_][a-zA-Z0-9_]{0,5}", fullmatch=True).filter(
    lambda name: not name.startswith("__")
)


@given(st.dictionaries(bare_names, st.text(max_size=8), max_size=4))
def test_canonical_labels_read_back_by_the_parser_are_the_same(labels: dict[str, str]) -> None:
    text = canonical_labels(labels)
    samples, _ = parse(f"m{{{text}}} 1\n", EVERYTHING, LIMITS)
    assert samples == {("m", text): 1.0}


# parse


def test_parse_reads_every_kind_of_family_and_counts_non_finite_values() -> None:
    samples, non_finite = parse(EXPOSITION, EVERYTHING, LIMITS)
    assert samples == EXPECTED
    assert non_finite == 1


def test_parse_counts_infinities_as_non_finite() -> None:
    text = "a +Inf\nb -Inf\nc 1e999\nd 100000000000000000000" + "0" * 400 + "\ne 1\n"
    assert parse(text, EVERYTHING, LIMITS) == ({("e", ""): 1.0}, 4)


def test_parse_keeps_the_last_of_duplicate_samples() -> None:
    samples, _ = parse('x{a="1"} 1\nx{a="1"} 2\n', EVERYTHING, LIMITS)
    assert samples == {("x", 'a="1"'): 2.0}


def test_include_keeps_matching_families_by_either_counter_name() -> None:
    for pattern in ("http_requests_total", "http_requests", "http_.*"):
        samples, _ = parse(EXPOSITION, Filters.of([pattern], []), LIMITS)
        assert names(samples) == {"http_requests_total"}


def test_include_fullmatches() -> None:
    samples, _ = parse(EXPOSITION, Filters.of(["temperature"], []), LIMITS)
    assert samples == {}


def test_exclude_drops_families_and_wins_over_include() -> None:
    filters = Filters.of(["request_seconds", "rpc_seconds"], ["rpc_.*"])
    samples, non_finite = parse(EXPOSITION, filters, LIMITS)
    assert names(samples) == {
        "request_seconds_bucket",
        "request_seconds_sum",
        "request_seconds_count",
    }
    assert non_finite == 0  # the NaN quantile was in an excluded family


def test_filters_refuse_a_bad_regex_naming_it() -> None:
    with pytest.raises(ConfigError, match=r"exclude pattern 'rpc_\(' .*missing \)"):
        Filters.of(["ok"], ["rpc_("])


def test_max_samples_bounds_the_kept_samples() -> None:
    limits = ScrapeLimits(max_samples=3)
    with pytest.raises(ScrapeError) as caught:
        parse(EXPOSITION, EVERYTHING, limits)
    assert str(caught.value) == (
        "at least 4 samples after the filters: over the bound of 3 samples (--max-samples)"
    )


def test_max_samples_counts_neither_filtered_nor_non_finite_samples() -> None:
    filters = Filters.of(["rpc_seconds"], [])
    samples, non_finite = parse(EXPOSITION, filters, ScrapeLimits(max_samples=3))
    assert (len(samples), non_finite) == (3, 1)


def test_max_samples_stops_early_on_a_huge_exposition() -> None:
    text = "".join(f'x{{i="{i}"}} {i}\n' for i in range(50_000))
    with pytest.raises(ScrapeError, match="at least 11 samples"):
        parse(text, EVERYTHING, ScrapeLimits(max_samples=10))


def test_max_labels_chars_names_the_sample_and_the_bound() -> None:
    limits = ScrapeLimits(max_labels_chars=20)
    assert parse('ok{a="1234567890123456"} 1\n', EVERYTHING, limits)[0]  # 20 characters
    with pytest.raises(ScrapeError) as caught:
        parse('long_one{a="12345678901234567"} 1\n', EVERYTHING, limits)
    assert str(caught.value) == (
        "sample long_one has labels of 21 characters: over the bound of 20 characters "
        "(--max-labels-chars)"
    )


@pytest.mark.parametrize(
    "text",
    [
        "x{a=1} 2\n",
        "x not_a_number\n",
        "# TYPE x\n",
        'x{a="1" 2\n',
        "x{" + "a" * 1000 + "} 1\n",
    ],
)
def test_malformed_text_is_one_short_line(text: str) -> None:
    with pytest.raises(ScrapeError) as caught:
        parse(text, EVERYTHING, LIMITS)
    message = str(caught.value)
    assert message.startswith("malformed exposition text: ")
    assert len(message) <= 200
    assert "\n" not in message


# ScrapeLimits and check_target


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("timeout_s", 0.0),
        ("timeout_s", -1.0),
        ("timeout_s", float("nan")),
        ("timeout_s", float("inf")),
        ("max_bytes", 0),
        ("max_samples", -5),
        ("max_labels_chars", 0),
    ],
)
def test_scrape_limits_refuse_non_positive_values(field: str, value: float) -> None:
    limits: dict[str, Any] = {field: value}
    with pytest.raises(ConfigError, match=rf"^{field}=.*: must be a number greater than 0"):
        ScrapeLimits(**limits)


@pytest.mark.parametrize(
    "url", ["http://replica:6878/metrics", "https://10.0.0.1/metrics", "http://[::1]:9/"]
)
def test_check_target_accepts_http_urls_with_a_host(url: str) -> None:
    assert check_target(url) == url


@pytest.mark.parametrize(
    "url",
    [
        "ftp://replica/metrics",
        "file:///etc/passwd",
        "replica:6878/metrics",
        "http:///metrics",
        "http://replica:99999/metrics",
        "http://[::1/metrics",
        "",
    ],
)
def test_check_target_refuses_anything_else(url: str) -> None:
    with pytest.raises(ConfigError, match="must be an http:// or https:// URL with a host"):
        check_target(url)


@pytest.mark.parametrize(
    "url", ["ftp://user:secret@replica/", "http://user:secret@replica/metrics"]
)
def test_check_target_refuses_credentials_without_showing_them(url: str) -> None:
    with pytest.raises(ConfigError) as caught:
        check_target(url)
    assert "secret" not in str(caught.value)
    assert "user:***@replica" in str(caught.value)


# fetch and scrape, from a server on 127.0.0.1

TRICKLE_INTERVAL_S = 0.05


class Handler(http.server.BaseHTTPRequestHandler):
    """Answers by path; `stop` (set on the server) ends slow answers at teardown."""

    def do_GET(self) -> None:
        stop: threading.Event = self.server.stop  # type: ignore[attr-defined]
        if self.path == "/metrics":
            assert self.headers["Accept"] == "text/plain;version=0.0.4"
            self._answer(EXPOSITION.encode())
        elif self.path == "/error":
            self.send_error(500)
        elif self.path == "/big":
            self._answer(b"x 1\n" * 300)
        elif self.path == "/big-unsized":
            self._answer(b"x 1\n" * 300, sized=False)
        elif self.path == "/latin-1":
            self._answer('x{city="Gen\xe8ve"} 1\n'.encode("latin-1"))
        elif self.path == "/silent":
            stop.wait(3)
        elif self.path == "/trickle":
            self.send_response(200)
            self.end_headers()
            while not stop.wait(TRICKLE_INTERVAL_S):
                try:
                    self.wfile.write(b"#")
                    self.wfile.flush()
                except OSError:
                    return  # the client gave up, as it should

    def _answer(self, body: bytes, sized: bool = True) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        if sized:
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass  # keep the test output quiet


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.stop = threading.Event()  # type: ignore[attr-defined]
    # A short poll interval: shutdown() waits for the loop to notice.
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.stop.set()  # type: ignore[attr-defined]
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest.fixture
def refused_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/metrics"


def fetch_error(
    url: str, limits: ScrapeLimits = LIMITS, monotonic: Callable[[], float] = time.monotonic
) -> str:
    with pytest.raises(ScrapeError) as caught:
        fetch(url, limits, monotonic)
    return str(caught.value)


def test_fetch_reads_the_exposition(base_url: str) -> None:
    assert fetch(f"{base_url}/metrics", LIMITS) == EXPOSITION


def test_fetch_names_an_http_error_status(base_url: str) -> None:
    assert fetch_error(f"{base_url}/error") == "HTTP 500 Internal Server Error"


def test_fetch_names_a_refused_connection(refused_url: str) -> None:
    assert fetch_error(refused_url) == f"cannot connect to {refused_url}: Connection refused"


@pytest.mark.parametrize("path", ["/big", "/big-unsized"])
def test_fetch_bounds_the_bytes(base_url: str, path: str) -> None:
    limits = ScrapeLimits(max_bytes=1199)
    assert fetch_error(base_url + path, limits) == "answer is over the bound of 1,199 bytes"
    assert fetch(base_url + path, ScrapeLimits(max_bytes=1200)) == "x 1\n" * 300


def test_fetch_refuses_text_that_is_not_utf8(base_url: str) -> None:
    assert fetch_error(f"{base_url}/latin-1").startswith("answer is not UTF-8 text: ")


@pytest.mark.parametrize("path", ["/silent", "/trickle"])
def test_fetch_gives_up_at_the_deadline(base_url: str, path: str) -> None:
    # /trickle sends a byte every 50 ms: each read is quick, only their sum is too long.
    start = time.monotonic()
    error = fetch_error(base_url + path, ScrapeLimits(timeout_s=0.5))
    assert error == "no full answer within 0.5 s"
    assert 0.5 <= time.monotonic() - start < 1.5


def test_fetch_keeps_the_deadline_of_its_clock(base_url: str) -> None:
    # One scripted second per reading of the clock: the deadline passes after a few reads
    # (50 ms each), long before 4 real seconds.
    ticks = itertools.count()
    start = time.monotonic()
    error = fetch_error(
        f"{base_url}/trickle", ScrapeLimits(timeout_s=4), monotonic=lambda: next(ticks)
    )
    assert error == "no full answer within 4 s"
    assert time.monotonic() - start < 1


def test_scrape_returns_the_samples(base_url: str) -> None:
    result = scrape(f"{base_url}/metrics", EVERYTHING, LIMITS)
    assert result.samples == EXPECTED
    assert (result.error, result.non_finite) == (None, 1)
    assert result.duration_ms >= 0


def test_scrape_turns_a_failure_into_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def failing(*args: object, **kwargs: object) -> str:
        raise ScrapeError("HTTP 500 Internal Server Error")

    monkeypatch.setattr(scrape_module, "fetch", failing)
    ticks = iter([10.0, 10.25])  # the start and the end of the scrape
    result = scrape("http://replica/metrics", EVERYTHING, LIMITS, monotonic=lambda: next(ticks))
    assert result == Scrape(None, "HTTP 500 Internal Server Error", 250)


def test_scrape_of_an_error_status_is_an_error(base_url: str) -> None:
    result = scrape(f"{base_url}/error", EVERYTHING, LIMITS)
    assert (result.samples, result.error) == (None, "HTTP 500 Internal Server Error")


def test_scrape_turns_a_bound_into_an_error(base_url: str) -> None:
    result = scrape(f"{base_url}/metrics", EVERYTHING, ScrapeLimits(max_samples=2))
    assert result.samples is None
    assert result.error is not None
    assert "over the bound of 2 samples" in result.error


def test_scrape_turns_an_unforeseen_exception_into_an_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(*args: object, **kwargs: object) -> str:
        raise RuntimeError("boom\non two lines")

    monkeypatch.setattr(scrape_module, "fetch", broken)
    result = scrape("http://replica/metrics", EVERYTHING, LIMITS)
    assert result.samples is None
    assert result.error == "unforeseen RuntimeError: boom on two lines"


def test_scrape_of_a_refused_port_is_an_error(refused_url: str) -> None:
    result = scrape(refused_url, EVERYTHING, LIMITS)
    assert result.samples is None
    assert result.error is not None
    assert re.fullmatch(r"cannot connect to .*: Connection refused", result.error)
