"""``/api/v1/replicas`` and ``/api/v1/status``: what ``replicas`` and ``status`` show.

Both read Redis alone (status also asks Kafka for the lag, within a second, and says why
when it cannot). Neither claims a dead process runs: a consumer or controller whose
heartbeat key expired is ``stopped`` (``reading/status.py``).
"""

from __future__ import annotations

import re
import time

from collection_manager.http.context import Call
from collection_manager.http.exchange import Answer, Request, json_answer
from collection_manager.http.params import Query, parse_flag
from collection_manager.http.problems import bad_parameter
from collection_manager.reading.replicas import read_replicas, replicas_json
from collection_manager.reading.status import read_status

# Kafka's rule for topic names.
_TOPIC = re.compile(r"[A-Za-z0-9._-]{1,249}")


def list_replicas(call: Call, request: Request) -> Answer:
    """``{"at_ms", "replicas": [...]}``: each replica as ``replicas --format json`` shows it,
    and ``lease_left_ms``, how long its lease has left (lease expiry minus ``at_ms``, this
    server's clock; negative once past, null without a lease). ``all=true``: also the
    removed replicas the retention still keeps."""
    query = Query(request.query, single=("all",))
    removed = parse_flag("all", query.one("all"))
    sources = call.sources
    rows = call.read(lambda: read_replicas(sources.client, sources.namespace, removed))
    now = int(time.time() * 1000)
    replicas = []
    for entry in replicas_json(rows):
        expires = entry["lease_expires_ms"]
        replicas.append({**entry, "lease_left_ms": None if expires is None else expires - now})
    return json_answer({"at_ms": now, "namespace": sources.namespace, "replicas": replicas})


def show_status(call: Call, request: Request) -> Answer:
    """``status --format json``'s document, of the consumer of ``topic`` (default the
    server's ``CM_TOPIC``)."""
    query = Query(request.query, single=("topic",))
    topic = query.one("topic")
    if topic is not None and not _TOPIC.fullmatch(topic):
        raise bad_parameter(
            "topic",
            f"topic is a Kafka topic name (1 to 249 of A-Z a-z 0-9 . _ -), not {topic[:100]!r}",
        )
    sources = call.sources
    report = call.read(
        lambda: read_status(
            sources.client,
            sources.kafka_bootstrap,
            topic or sources.topic,
            sources.namespace,
            sources.services_file,
        )
    )
    return json_answer(report.json())
