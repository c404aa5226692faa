"""Canonical encoding of rows as stored in Redis: compact JSON arrays.

JSON rather than Avro because ``cm_apply`` (Lua, with cjson) must read rows to
evaluate deletion filters and derive index keys inside the same atomic step. The encoding
is canonical: one row has one encoding, so it can be the hash field that counts it.
"""

from __future__ import annotations

import contextlib
import gc
import json
from collections.abc import Callable, Iterable, Iterator, Sequence

from collection_manager.core.errors import SchemaError
from collection_manager.core.specs import Row

# One encoder for all rows: json.dumps with options builds a new one per call.
_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def _one_shot_encoder() -> Callable[[object], str]:
    """``_ENCODER.encode``, without building its C encoder again for every row.

    ``JSONEncoder.encode`` makes a fresh C encoder on each call, which is two thirds of the
    cost of encoding a small row; this builds that same encoder, with ``_ENCODER``'s
    options, once. Where the C accelerator is missing, ``_ENCODER.encode`` it is.
    """
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:
        return _ENCODER.encode
    e = _ENCODER
    iterencode = make(
        None,  # rows are flat: no circular references to look for
        e.default,
        json.encoder.encode_basestring,  # ensure_ascii=False
        e.indent,
        e.key_separator,
        e.item_separator,
        e.sort_keys,
        e.skipkeys,
        e.allow_nan,
    )
    return lambda value: "".join(iterencode(value, 0))


_encode = _one_shot_encoder()


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
    try:
        if not double_columns and type(row) in (tuple, list):
            # The common case, one encode: only a -0.0 would need canonical treatment.
            text = _encode(row)
            if "-0.0" not in text:
                return text
        return _encode([_canonical(v, i in double_columns) for i, v in enumerate(row)])
    except ValueError as exc:
        raise SchemaError(f"row {row!r} holds a value that cannot be stored: {exc}") from exc


def decode_row(encoded: str | bytes) -> Row:
    """The row of a canonical encoding."""
    return tuple(json.loads(encoded))


def decode_rows(encoded: Sequence[bytes]) -> list[Row]:
    """The rows of many canonical encodings, in order: ``[decode_row(e) for e in encoded]``.

    One parse of the encodings joined into one JSON array, which costs about half as much
    per row as a parse each (a full read is mostly decoding). Only ``encode_row`` writes
    rows; as a guard against a corrupt value, a parse that yields another number of rows,
    or something other than arrays, falls back to parsing each alone, where the bad one
    raises.
    """
    if not encoded:
        return []
    with cycle_collection_paused(len(encoded) >= _MANY_ROWS):
        try:
            rows = json.loads(b"[" + b",".join(encoded) + b"]")
        except ValueError:
            rows = None
        if rows is None or len(rows) != len(encoded) or not all(type(r) is list for r in rows):
            return [decode_row(e) for e in encoded]
        return [tuple(row) for row in rows]


# From this many rows on, a decode pauses the cyclic garbage collector.
_MANY_ROWS = 10_000


@contextlib.contextmanager
def cycle_collection_paused(pause: bool = True) -> Iterator[None]:
    """Pauses the cyclic garbage collector (process-wide) while millions of new lists and
    tuples are made: none of them can form a cycle, yet each batch of allocations would set
    off collections that walk them all again. Objects freed
    meanwhile are freed as ever (reference counting); only cycle detection waits."""
    if not pause or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def decode_counted(encoded: Sequence[bytes], counts: Iterable[bytes]) -> dict[Row, int]:
    """Rows and their multiplicities as Redis holds them (a hash's fields and values)."""
    with cycle_collection_paused(len(encoded) >= _MANY_ROWS):
        return dict(zip(decode_rows(encoded), map(int, counts), strict=True))


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
