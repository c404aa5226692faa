"""What lets an operator watch a long-running process: Prometheus metrics and health
endpoints served over HTTP (``endpoint.py``), and the liveness of its loops (``health.py``)."""
