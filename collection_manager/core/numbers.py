"""The numeric domain: the integers the product holds exactly, everywhere.

Diffs, multiplicities, long column values (also ints in double columns), filter literals
and ``valid_until`` are integers in ``[-INT_LIMIT, INT_LIMIT]``, ``INT_LIMIT = 2**53 - 1``.
Why that bound and not the 64-bit range of Avro's ``long``: the apply step runs in Redis's
Lua, whose numbers are IEEE doubles, and whose cjson and ``tonumber`` read every number as
one. Doubles hold every integer of this range exactly, and the sum of two such integers is
exact or, when it is not, still lands outside the range (rounding is monotonic), so a range
check after an addition never lets a wrong value through. Python, the wire, Lua, index keys,
the validity ledger and filters therefore agree on every value they can meet.

A request with a number outside the domain, or one that would take a stored multiplicity
out of it, is a dead letter whose reason names this bound.

Doubles: NaN and infinities are refused; ``-0.0`` and ``0.0`` are one value (Python and
Lua compare them equal, and a row is stored with ``0.0``).
"""

from __future__ import annotations

INT_LIMIT = 2**53 - 1
INT_RANGE = "±(2^53 - 1) = ±9007199254740991"


def in_domain(value: int) -> bool:
    """Whether ``value`` is an integer the product holds exactly."""
    return -INT_LIMIT <= value <= INT_LIMIT


def outside(value: int, what: str) -> str:
    """Why ``value`` (a ``what``: "diff", "value", ...) is refused: it is outside the domain."""
    return f"{what} {value} is outside the supported integer range {INT_RANGE}"
