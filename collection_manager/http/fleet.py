"""``/api/v1/replicas`` and ``/api/v1/status``: what ``replicas`` and ``status`` show.

Both read Redis alone (status also asks Kafka for the lag, within a second, and says why
when it cannot). Neither claims a dead process runs: a consumer or controller whose
heartbeat key expired is ``stopped`` (``reading/status.py``).
"""

from __future__ import annotations

import re
import time

from collection_manager.answers import to_json
from collection_manager.http.context import Call
from collection_manager.http.exchange import Answer, Request, json_answer
from collection_manager.http.params import Query, parse_flag
from collection_manager.http.problems import bad_parameter
from collection_manager.reading.replicas import read_replicas, replica_list
from collection_manager.reading.status import read_status

# Kafka's rule for topic names.
_TOPIC = re.compile(r"[A-Za-z0-9._-]{1,249}")


def list_replicas(call: Call, request: Request) -> Answer:
    """The replicas as ``replicas list --format json`` shows them, read at ``at_ms`` by this
    server's clock. ``all=true``: also the removed replicas the retention still keeps."""
    query = Query(request.query, single=("all",))
    removed = parse_flag("all", query.one("all"))
    sources = call.sources
    rows = call.read(lambda: read_replicas(sources.client, sources.namespace, removed))
    now = int(time.time() * 1000)
    return json_answer(to_json(replica_list(rows, sources.namespace, now)))


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
