"""``collection-manager serve``: a read-only HTTP API of the collections, replicas and status.

Under ``/api/v1/`` (described by the OpenAPI document it serves, ``openapi.py``): the
collections, a collection's rows at one consistent time as JSON, NDJSON or Arrow
(``rows.py``), its changes as Server-Sent Events (``changes.py``), the replicas and the
status. ``/metrics``, ``/healthz`` and ``/readyz`` as every long-running process has.
The server (``server.py``) is the standard library's threading HTTP server, not an ASGI
stack: every read is a blocking redis-py loop of bounded steps, which a thread runs as it
is, and a blocking socket write is a stream's back-pressure, with no framework to add.
docs/operations.md, "Reading over HTTP", gives each bound.
"""
