"""``collection-manager serve``: a read-only HTTP API of the collections, replicas and status.

Under ``/api/v1/`` (described by the OpenAPI document it serves, ``openapi.py``): the
collections, a collection's rows at one consistent time as JSON, NDJSON or Arrow
(``rows.py``), its changes as Server-Sent Events (``changes.py``), the replicas and the
status. ``/metrics``, ``/healthz`` and ``/readyz`` as every long-running process has.
The server (``server.py``) is the standard library's threading HTTP server: docs/
operations.md, "Reading over HTTP", says why, and what each bound is.
"""
