"""The counters of a collection: the one list of their names.

The Redis library counts them (its ``COUNTERS`` table is generated from ``COUNTERS`` here,
see ``library.py``), adds them to the collection's stats hash (``cm:{c}:stats``, one field
per counter) and replies with them in this order; the consumer's summary, ``status`` and
the tests take their names from here.
"""

from __future__ import annotations

# Each counter's meaning (the help of its metric, see spark_consumers/exporter_metrics.py).
MEANINGS: dict[str, str] = {
    "requests": "Requests applied (merged appends count one each).",
    "steps": "Write steps, each one tick of the collection's time.",
    "updates": "Non-zero updates written by appends.",
    "retractions": "Rows retracted by deletes.",
    "fused_appends": "Appends dropped by the fuse (a fenced epoch).",
    "scheduled_retractions": "Rows retracted because their valid_until passed.",
    "expirations": "Rows retracted because their TTL passed.",
    "invalid_retractions": "Updates that left a row negative, replica not fenced.",
    "fenced_invalid_retractions": "Updates that left a row negative, replica fenced.",
    "replays_skipped": "Request groups at or below the watermark (a replayed batch).",
    "refused": "Appends refused whole: they would take a multiplicity out of the domain.",
}
COUNTERS: tuple[str, ...] = tuple(MEANINGS)

# Counted by the retraction timer (``StoreWriter.retract_due``), never by applying requests.
_TIMER_ONLY = ("scheduled_retractions", "expirations")
# Bookkeeping of the store that tables leave out.
_BOOKKEEPING = ("steps", "replays_skipped")

# What applying requests counts: the columns of the consumer's per-partition summary.
APPLY_COUNTERS: tuple[str, ...] = tuple(c for c in COUNTERS if c not in _TIMER_ONLY)

# What ``status`` and ``collections show`` show, in their column order.
SHOWN_COUNTERS: tuple[str, ...] = tuple(c for c in COUNTERS if c not in _TIMER_ONLY + _BOOKKEEPING)
