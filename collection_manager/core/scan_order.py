"""Where a step of Redis's SCAN stands in its order, and what it may have returned again.

Redis scans a hash table's buckets in the reverse-binary order of their index: the cursor
of a table of ``2**m`` buckets is a bucket index, and its *position* is its bits reversed
on a ring of ``2**64``. Buckets come in the order of their positions whatever the table's
size: a bucket of a table twice as large splits into two at adjacent positions, which is
why a table that grows between two calls never makes SCAN return an element twice.

A table that shrinks between two calls does. The next call masks the cursor ``c`` with the
smaller table's ``m`` bits, and its bucket ``c & (2**m - 1)`` holds the elements of every
large bucket at the positions from ``position(c & (2**m - 1))`` to the next small bucket's:
those before ``position(c)`` were returned already. When ``c < 2**m`` the small bucket's
position is ``position(c)`` itself, and nothing comes again (dict.c's ``dictScan``, Redis
7.0 to 7.4; ``tests/integration/test_scan_repeats.py`` shows it on the real server).

A call cannot ask Redis for the table's size, but a scan of one element from cursor 0 in
the same call answers a cursor whose bit length is ``m`` to ``m - 3`` (``COUNT 1`` lets it
visit at most eleven buckets, and the cursor after ``t`` of them is ``t`` reversed): a lower
bound of ``m``, so the stretch it gives holds the one that may come again.
"""

from __future__ import annotations

RING_BITS = 64


def position(cursor: int) -> int:
    """The cursor's place on the scan's ring: its 64 bits reversed."""
    return int(f"{cursor:064b}"[::-1], 2)


def revisit_start(cursor: int, probe: int) -> int | None:
    """The position from which a call given ``cursor`` may have returned elements again,
    or None when it cannot have.

    Args:
        cursor: the cursor the call was given (from the call before).
        probe: the cursor the same call's scan of one element from 0 answered.
    """
    mask = (1 << probe.bit_length()) - 1
    if cursor & mask == cursor:
        return None
    return position(cursor & mask)
