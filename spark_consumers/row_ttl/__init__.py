"""Row TTL and temporal validity, the consumer's side (docs/concepts/ttl-and-expiration.md).

- ``clock.py``: the TTL clock, a time by which everything Kafka held has been applied;
  rows expire by it, never by the wall clock alone.
- ``retraction_timer.py``: the driver's timer, about every 0.5 s also without input: due
  ``valid_until`` retractions, expired rows, the expiration horizon, and (for bucketed
  collections) the settling of their cuts (``spark_consumers/cut_settling.py``).

What they drive lives in Redis: each row's expiry (``expiries``, ``collection.lua``'s
``expire_at``), applied by ``cm_due`` and ``cm_horizon`` (``functions.lua``) through
``storage/writes.StoreWriter.retract_due`` and ``set_expiration``.
"""
