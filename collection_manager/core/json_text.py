"""The JSON text of every answer: HTTP rows, NDJSON lines and SSE events (compact bytes),
and the command line's ``--format json`` (indented), through orjson: a JSON answer of many
rows in about a sixth of the standard library's time and the indented JSON in a thirtieth;
a short NDJSON line or event costs the same either way, the call being most of it
(bench/json_encode.py, bench/notes.md).

What JSON cannot hold is stated, not left to chance (docs/concepts/reads.md):

- a double that is NaN or infinite becomes ``null``. No stored row holds one (the apply
  step refuses them), but a figure of ``status`` may; the standard library wrote ``NaN``,
  which is no JSON and which strict parsers refuse;
- an integer is written exactly, to 64 bits (rows, counts and times stay within
  ±(2^53 - 1), which a reader whose numbers are doubles, JavaScript's, holds exactly);
- keys that are numbers (offsets by partition) become strings, as the standard library did;
- text is UTF-8, not ``\\u`` escapes.
"""

from __future__ import annotations

from typing import Any

import orjson

_OPTIONS = orjson.OPT_NON_STR_KEYS


def compact(value: Any) -> bytes:
    """``value`` as compact JSON bytes, no newline."""
    return orjson.dumps(value, option=_OPTIONS)


def indented(value: Any) -> str:
    """``value`` as JSON indented by two, keys in the order given; what is no JSON value
    (a path, a time) as its ``str``."""
    return orjson.dumps(value, default=str, option=_OPTIONS | orjson.OPT_INDENT_2).decode()
