"""The checks of the live processes before the verdict, as an operator's tools would ask
them: each listener's ``/metrics`` and ``/readyz``, the replica of real data's rows in
Redis, and the console's page and the API it reads. Each fails the demo with a
``DemoError``; the comparison of rows itself is ``verify.py``'s."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Sequence

from collection_manager.core.filters import eq
from collection_manager.demo.frames import Plan
from collection_manager.demo.launch import REAL_REPLICA, real_samples
from collection_manager.demo.phases import DemoError, DemoRun
from producers.sources.openmetrics import SCRAPE_STATUS

# A family each kind of process serves: its /metrics is the process' own.
_FAMILIES = {
    "consumer": "cm_consumer_batches_total",
    "controller": "cm_controller_lease_checks_total",
}


def scrape_listeners(run: DemoRun, names: Sequence[str]) -> None:
    """Asks each live process' /metrics and /readyz once, as Prometheus and a probe would.

    Raises:
        DemoError: when one does not answer, or its metrics lack its own families.
    """
    for name in names:
        url = run.listeners[name]
        family = _FAMILIES.get(name, "cm_agent_requests_delivered_total")
        try:
            with urllib.request.urlopen(url + "/metrics", timeout=5) as reply:
                metrics = reply.read().decode()
            with urllib.request.urlopen(url + "/readyz", timeout=5) as reply:
                ready = reply.read().decode().strip()
        except OSError as exc:
            raise DemoError(f"the {name}'s listener at {url} did not answer: {exc}") from exc
        if family not in metrics:
            raise DemoError(f"the {name}'s /metrics at {url} lacks {family}")
        run.event(f"{name}: /metrics has {family}, /readyz says {ready}")


def check_real_replica(run: DemoRun) -> None:
    """Its samples are in Redis and it still scrapes, or the demo failed."""
    status = SCRAPE_STATUS + run.controller.config.collection_suffix
    rows = list(run.observer.store.snapshot(status, eq("replica_id", REAL_REPLICA)).rows)
    samples = real_samples(run)
    if not samples or len(rows) != 1 or rows[0][2] is not True:
        raise DemoError(f"{REAL_REPLICA}: {len(samples)} samples, scrape status {rows}")
    run.event(f"{REAL_REPLICA}: {len(samples)} samples of the consumer's /metrics, scrape up")


def check_console(run: DemoRun, plan: Plan) -> None:
    """The console's page is served, and the API it reads lists every survivor and shows
    the consumer and the controller running.

    Raises:
        DemoError: when one does not answer, or says otherwise.
    """
    url = run.listeners["serve"]
    try:
        with urllib.request.urlopen(url + "/", timeout=5) as reply:
            page = reply.read().decode()
        with urllib.request.urlopen(url + "/api/v1/replicas", timeout=5) as reply:
            answer = json.loads(reply.read())
        shown = {replica["replica_id"] for replica in answer["replicas"]}
        with urllib.request.urlopen(url + "/api/v1/status", timeout=10) as reply:
            status = json.loads(reply.read())
        states = {kind: status[kind]["state"] for kind in ("consumer", "controller")}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise DemoError(f"the console at {url} did not answer: {exc!r}") from exc
    if "console.js" not in page:
        raise DemoError(f"the console at {url}/ is not the console's page")
    missing = set(plan.survivors) - shown
    if missing:
        raise DemoError(f"the console's {url}/api/v1/replicas lacks {sorted(missing)}")
    if set(states.values()) != {"running"}:
        raise DemoError(f"the console's {url}/api/v1/status shows {states}")
    run.event(
        f"console: its page, the fleet's {len(shown)} live replicas and the consumer and "
        "controller running answered"
    )
