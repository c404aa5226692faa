"""Canonical encoding of rows as stored in Redis: compact JSON arrays.

JSON rather than Avro because ``cm_apply`` (Lua, with cjson) must read rows to
evaluate deletion filters and derive index keys inside the same atomic step. The encoding
is canonical: one row has one encoding, so it can be the hash field that counts it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from collection_manager.core.errors import SchemaError
from collection_manager.core.specs import Row

# One encoder for all rows: json.dumps with options builds a new one per call.
_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def _canonical(value: object, double: bool) -> object:
    # 1 and 1.0 are one row in a double column; -0.0 and 0.0 are one value (the model and
    # Lua compare them equal), stored as 0.0.
    if double and type(value) is int:
        return float(value)
    if type(value) is float and value == 0.0:
        return 0.0
    return value


def encode_row(row: Sequence[object], double_columns: frozenset[int] = frozenset()) -> str:
    """The canonical encoding; ints in ``double_columns`` become floats, -0.0 becomes 0.0.

    Raises:
        SchemaError: for NaN or infinity, which JSON cannot hold and no row should.
    """
    values = [_canonical(v, i in double_columns) for i, v in enumerate(row)]
    try:
        return _ENCODER.encode(values)
    except ValueError as exc:
        raise SchemaError(f"row {row!r} holds a value that cannot be stored: {exc}") from exc


def decode_row(encoded: str | bytes) -> Row:
    """The row of a canonical encoding."""
    return tuple(json.loads(encoded))


def index_value(value: object) -> str | None:
    """How an indexed column's value appears in its index key (as the Lua library writes it)."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise SchemaError("boolean columns cannot be indexed")
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return value
    raise SchemaError(f"only string and long columns can be indexed, not {type(value).__name__}")
