"""The counters of a collection: the one list of their names.

The Redis library counts them (its ``COUNTERS`` table is generated from ``COUNTERS`` here,
see ``library.py``), adds them to the collection's stats hash (``cm:{c}:stats``, one field
per counter) and replies with them in this order; the consumer's summary, ``status`` and
the tests take their names from here.
"""

from __future__ import annotations

COUNTERS: tuple[str, ...] = (
    "requests",  # requests applied (merged appends count one each)
    "steps",  # write steps, each one tick of the collection's time
    "updates",  # non-zero updates written by appends
    "retractions",  # rows retracted by deletes
    "fused_appends",  # appends dropped by the fuse (a fenced epoch)
    "scheduled_retractions",  # rows retracted because their valid_until passed
    "expirations",  # rows retracted because their TTL passed
    "invalid_retractions",  # updates that left a row negative, replica not fenced
    "fenced_invalid_retractions",  # the same where the row's replica is fenced
    "replays_skipped",  # request groups at or below the watermark (a replayed batch)
    "refused",  # appends refused whole: they would take a multiplicity out of the domain
)

# Counted by the retraction timer (``RedisStore.retract_due``), never by applying requests.
_TIMER_ONLY = ("scheduled_retractions", "expirations")
# Bookkeeping of the store that tables leave out.
_BOOKKEEPING = ("steps", "replays_skipped")

# What applying requests counts: the columns of the consumer's per-partition summary.
APPLY_COUNTERS: tuple[str, ...] = tuple(c for c in COUNTERS if c not in _TIMER_ONLY)

# What ``status`` and ``collections describe`` show, in their column order.
SHOWN_COUNTERS: tuple[str, ...] = tuple(c for c in COUNTERS if c not in _TIMER_ONLY + _BOOKKEEPING)
