"""``collection-manager serve``: a read-only HTTP API of the collections, replicas and status.

Under ``/api/v1/`` (described by the OpenAPI document it serves, ``openapi.py``): the
collections, a collection's rows at one consistent time as JSON, NDJSON or Arrow
(``rows.py``), its changes as Server-Sent Events (``changes.py``), the replicas and the
status. ``/metrics``, ``/healthz`` and ``/readyz`` as every long-running process has.
The server is Starlette on uvicorn: Starlette's routes (``app.py``) built from the API's
(``api.py``), uvicorn listening (``server.py``). Every read is a blocking redis-py loop of
bounded steps, run in a bounded thread pool, and a send that waits while the client reads
nothing is a stream's back-pressure (``response.py``).
docs/operations.md, "Reading over HTTP", gives each bound.
"""
