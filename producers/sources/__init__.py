"""Where an agent's rows come from: sources as plugins (docs/concepts/sources.md).

A source is found by name (``replicas run --source NAME``) in the entry-point group
``collection_manager.sources`` (:mod:`producers.sources.plugin`); the built-in ones are
``simulated`` (the demo's and the tests' replicas) and ``openmetrics`` (one scrape of a
real replica's ``/metrics`` per step).
"""
