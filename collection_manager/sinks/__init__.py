"""Sinks: each a process (``sinks run``) that publishes one collection's changes to a
Kafka topic of its own, exactly once and in order (docs/concepts/sinks.md).

``process.py`` is the loop, ``kafka_side.py`` its topics, transactions and committed
position, ``records.py`` the records it writes, ``metrics.py`` what it shows. The pure
parts (what a sink is, how a step is cut into transactions) are ``core/sinks``; the sinks'
catalog and what a sink reads of the change log are ``storage/sinks.py``.

A sink is a process of its own, not a part of the consumer: it needs no Spark (the core
install runs it), a slow or stopped sink never holds back what the consumer applies, and
it scales and restarts on its own.
"""
