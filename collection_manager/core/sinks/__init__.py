"""Sinks: a collection's changes published to a Kafka topic of its own (docs/concepts/
sinks.md). The pure parts: what a sink is (``spec.py``) and how a step's changes are cut
into transactions (``steps.py``); the process is ``collection_manager/sinks``. Where a
sink stands is a cut (``core/cut.py``): one time per bucket, one time in all for an
unbucketed collection."""
