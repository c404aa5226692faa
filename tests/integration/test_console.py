"""The web console in a real browser: Debian's chromium, headless, driven by Playwright.

The pipeline is real: the session's Kafka, the consumer's streaming query in the worker's
Spark, the controller's lease loop, two ``replica run`` agent processes and ``serve`` as a
process. Redis is the module's own (``module_redis``): the console lists every collection
of its Redis and counts each one's rows per replica, so it must see this test's alone.

Chromium comes from Debian (``collection-manager setup`` installs it); Playwright only
drives it, through ``executable_path`` (its own browser download is never used). As root,
chromium runs only with ``--no-sandbox``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from collection_manager.config import ReplicaConfig
from collection_manager.control.controller import Controller
from collection_manager.devservices.processes import LOOPBACK, free_port
from collection_manager.storage.client import redis_client
from collection_manager.storage.library import install
from tests.integration.own_services import OwnService
from tests.integration.spark_query import consumer_query
from tests.support import assert_eventually, http_get

playwright = pytest.importorskip("playwright.sync_api", reason="pip install -e '.[dev]'")

CHROMIUM = os.environ.get("CM_TEST_CHROMIUM") or shutil.which("chromium")
# Every wait of the page: generous, the machine is shared with the other tests.
WAIT_MS = 90_000
# A lease long enough that a killed replica shows `stopped` (no heartbeat for half of it)
# for seconds before the controller removes it; heartbeats and lease checks as in
# test_replicas.py.
CONFIG = ReplicaConfig(
    replica_ttl_ms=6_000,
    heartbeat_interval_ms=300,
    lease_check_interval_ms=200,
    step_interval_ms=300,
)
COLLECTION = "compute_frontiers"
BAD_TERM = "no_such_column=1"


def _agent(replica_id: str, env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    """A simulated replica that changes its rows every step until it is stopped."""
    command = [
        sys.executable, "-m", "collection_manager.cli.main", "replicas", "run", "--id", replica_id,
        "--workers", "2", "--dataflows", "2", "--duration", "600",
    ]  # fmt: skip
    with open(log, "ab") as out:
        return subprocess.Popen(
            command, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )


def _serve(env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "collection_manager.cli.main", "server", "run"]
    with open(log, "ab") as out:
        return subprocess.Popen(
            command, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )


def _kill(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(30)


@contextlib.contextmanager
def _processes() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    try:
        yield started
    finally:
        for process in started:
            _kill(process)


@contextlib.contextmanager
def _lease_loop(controller: Controller) -> Iterator[None]:
    stop = threading.Event()
    loop = threading.Thread(target=controller.run_leases, args=(stop,), name="lease-loop")
    loop.start()
    try:
        yield
    finally:
        stop.set()
        loop.join(30)


def _problem_detail(url: str) -> str:
    """The detail of the problem document the API answers at ``url`` (a 400)."""
    try:
        urllib.request.urlopen(url, timeout=10)
    except urllib.error.HTTPError as error:
        assert error.code == 400, error
        assert error.headers["Content-Type"].startswith("application/problem+json")
        return str(json.loads(error.read())["detail"])
    raise AssertionError(f"{url} answered 200")


def _wait(page: Any, script: str, arg: Any = None) -> Any:
    """What ``script`` (a JS function of ``arg``) returns once it is truthy."""
    return page.wait_for_function(script, arg=arg, timeout=WAIT_MS).json_value()


def _rows_of(page: Any, replica: str) -> None:
    """Filters the table to ``replica``'s rows."""
    page.fill("#filter", f"replica_id={replica}")
    page.press("#filter", "Enter")


# The table's first column is replica_id in compute_frontiers: its cells, once read.
_TABLE_IDS = """() => {
  const table = document.getElementById("rows");
  if (!table.dataset.rows) return null;
  return [...table.tBodies[0].rows].map((row) => row.cells[0].textContent);
}"""


# The table's replica_ids when it holds rows, every one of ``replica``'s; else false.
_ONLY = f"""(replica) => {{ const ids = ({_TABLE_IDS})();
  return ids && ids.length > 0 && ids.every((id) => id === replica) && ids; }}"""


def test_the_console_shows_the_fleet_its_rows_and_changes_live(
    kafka: str,
    spark: Any,
    module_redis: OwnService,
    topic: str,
    unique: str,
    tmp_path: Path,
) -> None:
    if CHROMIUM is None:
        pytest.skip("no chromium: `collection-manager setup` installs Debian's (as root)")
    redis_url = module_redis.address
    client = redis_client(redis_url)
    install(client)  # serve's reads need this version's functions; the consumer loads them too
    client.close()
    namespace = f"cm:replicas:{unique}"
    config = dataclasses.replace(CONFIG, replica_namespace=namespace)
    env = dict(
        os.environ,
        CM_KAFKA_BOOTSTRAP=kafka,
        CM_REDIS_URL=redis_url,
        CM_TOPIC=topic,
        CM_STATE_DIR=str(tmp_path / "state"),
        CM_REPLICA_NAMESPACE=namespace,
        CM_REPLICA_TTL_MS=str(config.replica_ttl_ms),
        CM_HEARTBEAT_INTERVAL_MS=str(config.heartbeat_interval_ms),
        CM_STEP_INTERVAL_MS=str(config.step_interval_ms),
    )
    address = f"{LOOPBACK}:{free_port()}"
    url = f"http://{address}"
    survivor, killed = f"a-{unique}"[:60], f"b-{unique}"[:60]
    with (
        contextlib.closing(Controller.connect(kafka, redis_url, topic, config)) as controller,
        _processes() as processes,
        consumer_query(spark, kafka, redis_url, topic, tmp_path, namespace),
        _lease_loop(controller),
        playwright.sync_playwright() as driver,
    ):
        processes.append(_serve({**env, "CM_HTTP_ADDRESS": address}, tmp_path / "serve.log"))
        agents = {r: _agent(r, env, tmp_path / f"{r}.log") for r in (survivor, killed)}
        processes.extend(agents.values())
        assert_eventually(lambda: _answers(url + "/healthz"), 60, 0.5)

        browser = driver.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            # As root chromium refuses to start sandboxed; /dev/shm may be small.
            args=["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"],
        )
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        errors: list[Any] = []
        page.on("console", lambda m: errors.append(m) if m.type == "error" else None)
        page.on("pageerror", lambda error: errors.append(error))
        page.set_default_timeout(WAIT_MS)
        try:
            _check_console(page, url, agents, survivor, killed, tmp_path)
        except BaseException:
            page.screenshot(path=tmp_path / "console.png", full_page=True)  # what it showed
            raise
        finally:
            browser.close()
        # Nothing on the console but the browser's own line for the bad filter's 400.
        unexpected = [e for e in errors if not _the_bad_filters_answer(e)]
        assert unexpected == [], [getattr(e, "text", e) for e in unexpected]


def _answers(url: str) -> None:
    status, body = http_get(url)
    assert status == 200, (status, body)


def _the_bad_filters_answer(message: Any) -> bool:
    """Chromium logs "Failed to load resource: ... 400" for any answer of 400, also one the
    page expects and shows (the bad filter's problem document): that line alone may be."""
    location = getattr(message, "location", None) or {}
    return (
        getattr(message, "text", "").startswith("Failed to load resource")
        and "status of 400" in message.text
        and "where=no_such_column" in urllib.parse.unquote(location.get("url", ""))
    )


def _check_console(
    page: Any,
    url: str,
    agents: dict[str, subprocess.Popen[bytes]],
    survivor: str,
    killed: str,
    shots: Path,
) -> None:
    """Everything the console must show, in the order a person would see it; a screenshot
    of the killed replica shown stopped goes to ``shots``."""
    page.goto(f"{url}/?collection={COLLECTION}")
    page.evaluate("() => { window.loadedOnce = true; }")

    # The fleet: both replicas, active, with a lease counting down and rows.
    for replica in (survivor, killed):
        page.wait_for_selector(f'#replicas tr[data-replica="{replica}"][data-state="active"]')
    fleet = page.inner_text("#replicas")
    assert COLLECTION in fleet and "epoch" in fleet, fleet
    _wait(
        page,
        """(replica) => {
          const cell = document.querySelector(
            `#replicas tr[data-replica="${replica}"] td[data-collection="compute_frontiers"]`);
          return cell && Number(cell.textContent.replace("≥", "")) > 0;
        }""",
        survivor,
    )

    # The table: both replicas' rows, then a filter narrows it to one.
    ids = _wait(
        page,
        f"""() => {{ const ids = ({_TABLE_IDS})();
          return ids && ids.includes("{survivor}") && ids.includes("{killed}") && ids; }}""",
    )
    assert page.inner_text("#as-of").startswith("as of time "), page.inner_text("#as-of")
    _rows_of(page, survivor)
    narrowed = _wait(page, _ONLY, survivor)
    assert 0 < len(narrowed) < len(ids)

    # The feed: a change the agent publishes now appears without a reload.
    page.wait_for_selector('#feed-state[data-state="live"]')
    page.evaluate("""() => document.querySelectorAll("#changes li")
      .forEach((li) => { li.dataset.before = "yes"; })""")
    _wait(
        page,
        """(replica) => [...document.querySelectorAll("#changes li:not([data-before])")]
          .some((li) => li.textContent.includes(`replica_id=${replica} `))""",
        survivor,
    )
    assert page.evaluate("() => window.loadedOnce") is True

    # A bad filter: the problem document's detail, as the API says it.
    page.fill("#filter", BAD_TERM)
    page.press("#filter", "Enter")
    page.wait_for_selector("#filter-error:not([hidden])")
    query = urllib.parse.urlencode({"where": BAD_TERM})
    detail = _problem_detail(f"{url}/api/v1/collections/{COLLECTION}/rows?{query}")
    assert page.inner_text("#filter-error") == detail
    assert "no_such_column" in detail

    # SIGKILL: the replica turns stopped (its rows still there), then at its lease's
    # expiry the controller removes it and its rows go.
    _rows_of(page, killed)
    _wait(page, _ONLY, killed)
    _kill(agents[killed])
    seen = _wait(
        page,
        f"""(replica) => {{
          const row = document.querySelector(`#replicas tr[data-replica="${{replica}}"]`);
          const rows = ({_ONLY})(replica);
          const lease = row && row.cells[3].textContent;
          return row && row.dataset.state === "stopped" && {{rows, lease}};
        }}""",
        killed,
    )
    assert seen["rows"], seen  # stopped, not yet removed: its rows are still there
    page.screenshot(path=shots / "stopped.png", full_page=True)  # for whoever looks
    _wait(
        page,
        """(replica) => {
          const row = document.querySelector(`#replicas tr[data-replica="${replica}"]`);
          return (!row || row.dataset.state === "removed")
            && document.getElementById("rows").dataset.rows === "0";
        }""",
        killed,
    )
    survivor_row = page.locator(f'#replicas tr[data-replica="{survivor}"]')
    assert survivor_row.count() == 1
    assert agents[survivor].poll() is None
    # One replica left: the heading counts it in the singular.
    _wait(page, """() => document.getElementById("fleet-count").textContent === "1 replica" """)


def test_a_console_without_the_servers_token_says_it_is_not_authorised(
    module_redis: OwnService, unique: str, tmp_path: Path
) -> None:
    """Not "0 replicas" and a hint to start one: the server needs a token, and the page
    says so and how to give it; once given, the fleet (empty here) reads as it is, and the
    API page (Swagger UI) reads the OpenAPI document with it."""
    if CHROMIUM is None:
        pytest.skip("no chromium: `collection-manager setup` installs Debian's (as root)")
    client = redis_client(module_redis.address)
    install(client)
    client.close()
    address = f"{LOOPBACK}:{free_port()}"
    url, token = f"http://{address}", f"token-{unique}"
    env = dict(
        os.environ,
        CM_REDIS_URL=module_redis.address,
        CM_STATE_DIR=str(tmp_path / "state"),
        CM_REPLICA_NAMESPACE=f"cm:replicas:{unique}",  # no replica in it
        CM_HTTP_ADDRESS=address,
        CM_HTTP_TOKEN=token,
    )
    with _processes() as processes, playwright.sync_playwright() as driver:
        processes.append(_serve(env, tmp_path / "serve.log"))
        assert_eventually(lambda: _answers(url + "/healthz"), 60, 0.5)
        browser = driver.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            args=["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"],
        )
        page = browser.new_page()
        page.set_default_timeout(WAIT_MS)
        try:
            page.goto(f"{url}/")
            page.wait_for_selector("#token-form:not([hidden])")
            _wait(
                page, _BANNER, "not authorised: this server needs a token: enter its CM_HTTP_TOKEN"
            )
            # The banner and the fleet's count are set by two reads' answers: wait for both.
            _wait(
                page,
                """() => document.getElementById("fleet-count").textContent
              === "not authorised" """,
            )
            assert page.locator("#fleet-empty").is_hidden()
            _give_token(page, "not-the-token")
            _wait(page, _BANNER, "not authorised: this server refused the token given: enter its")
            _give_token(page, token)
            _wait(page, """() => document.getElementById("problem").hidden""")
            _wait(
                page,
                """() => document.getElementById("fleet-count").textContent === "0 replicas" """,
            )
            hint = page.inner_text("#fleet-empty")
            assert "collection-manager replicas run --id r1" in hint, hint
            # The API page, in the same tab: Swagger UI from the package reads the OpenAPI
            # document with the token the console was given, and lists the endpoints.
            page.goto(f"{url}/api.html")
            _wait(page, """() => document.querySelectorAll(".opblock").length >= 7""")
            listed = page.inner_text("#swagger-ui").replace("\u200b", "")
            for path in ("/api/v1/collections/{name}/rows", "/api/v1/replicas", "OAS 3.1"):
                assert path in listed, listed[:2000]
        except BaseException:
            page.screenshot(path=tmp_path / "console.png", full_page=True)
            raise
        finally:
            browser.close()


# The problem banner, once it shows a text that starts with the argument.
_BANNER = """(start) => { const box = document.getElementById("problem");
  return !box.hidden && box.textContent.startsWith(start) && box.textContent; }"""


def _give_token(page: Any, token: str) -> None:
    page.wait_for_selector("#token-form:not([hidden])")
    page.fill("#token", token)
    page.press("#token", "Enter")
