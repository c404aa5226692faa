"""The parameters of a request, parsed and checked before anything is read.

Each error is a 400 problem naming the parameter and what would be valid. A parameter the
endpoint does not take is refused too (a typo must not silently read everything), and so
is a single-valued one given twice.
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Iterable

from collection_manager.core.cut import Cut
from collection_manager.core.numbers import INT_LIMIT
from collection_manager.core.specs import CollectionSpec
from collection_manager.http.problems import bad_parameter

# Most query fields one request may carry, and most where terms: a filter of more terms
# than anyone writes by hand is a mistake or an attack, and each term costs a check.
MAX_FIELDS = 64
MAX_WHERE_TERMS = 32
# Times are integers of at most 2^53 - 1 (docs/concepts/collections-and-time.md, "The numeric
# domain"): 16 digits at most, and then checked against the bound.
_TIME = re.compile(r"[0-9]{1,16}")
_CUT = re.compile(r"[0-9]{1,16}(,[0-9]{1,16})*")
_BOOLEANS = {"true": True, "1": True, "false": False, "0": False}


class Query:
    """The query string of a request, checked against the parameters an endpoint takes.

    Args:
        raw: the query string (after ``?``, still percent-encoded).
        single: the parameters taken at most once.
        repeated: the parameters that may be repeated (each value one more term).

    Raises:
        Problem: 400, for a string that does not parse (bad percent-encoding, not UTF-8,
            too many fields), an unknown parameter, or a single one given twice.
    """

    def __init__(self, raw: str, single: Iterable[str] = (), repeated: Iterable[str] = ()):
        self._single, self._repeated = set(single), set(repeated)
        try:
            pairs = urllib.parse.parse_qsl(
                raw,
                keep_blank_values=True,
                strict_parsing=False,
                errors="strict",
                max_num_fields=MAX_FIELDS,
            )
        except UnicodeDecodeError:
            raise bad_parameter("query", "the query string is not UTF-8 once decoded") from None
        except ValueError:  # more fields than max_num_fields
            raise bad_parameter(
                "query", f"at most {MAX_FIELDS} query parameters", bound=MAX_FIELDS
            ) from None
        self._values: dict[str, list[str]] = {}
        for name, value in pairs:
            self._values.setdefault(name, []).append(value)
        known = self._single | self._repeated
        for name, values in self._values.items():
            if name not in known:
                takes = ", ".join(sorted(known)) or "no parameters"
                raise bad_parameter(
                    name[:100], f"unknown parameter {name[:100]!r}; this endpoint takes: {takes}"
                )
            if name in self._single and len(values) > 1:
                raise bad_parameter(name, f"{name} is given {len(values)} times; give it once")

    def one(self, name: str) -> str | None:
        """The value of a single-valued parameter, None when it is not given."""
        values = self._values.get(name)
        return None if values is None else values[0]

    def all(self, name: str) -> list[str]:
        """Every value of a repeated parameter, in order."""
        return list(self._values.get(name, []))


def parse_limit(text: str | None, bound: int | None = None) -> int | None:
    """``limit``: an integer from 1 (to ``bound``, when there is one); None when not given.

    Raises:
        Problem: 400 naming the range.
    """
    if text is None:
        return None
    upper = "" if bound is None else f" to {bound}"
    if not _TIME.fullmatch(text) or int(text) < 1:
        raise bad_parameter("limit", f"limit must be an integer from 1{upper}, not {text[:40]!r}")
    value = int(text)
    if bound is not None and value > bound:
        raise bad_parameter(
            "limit", f"limit must be an integer from 1{upper}, not {value}", bound=bound
        )
    return value


def parse_where_terms(terms: list[str]) -> list[str]:
    """The ``where`` terms, at most :data:`MAX_WHERE_TERMS` (each is checked against the
    collection's columns once it is known).

    Raises:
        Problem: 400 naming the bound.
    """
    if len(terms) > MAX_WHERE_TERMS:
        raise bad_parameter(
            "where",
            f"at most {MAX_WHERE_TERMS} where terms, not {len(terms)}",
            bound=MAX_WHERE_TERMS,
        )
    return terms


def parse_flag(name: str, text: str | None) -> bool:
    """A boolean parameter: ``true``/``false`` (or ``1``/``0``); false when not given.

    Raises:
        Problem: 400 naming the values it takes.
    """
    if text is None:
        return False
    try:
        return _BOOLEANS[text.lower()]
    except KeyError:
        raise bad_parameter(name, f"{name} is true or false, not {text[:40]!r}") from None


def parse_position(text: str, spec: CollectionSpec, parameter: str) -> int | Cut:
    """A position in a collection's changes, as an answer's ``as_of`` or a change event's
    id gives it: a time for an unbucketed collection; for a bucketed one a cut (a time per
    bucket joined by commas, ``12,40,7``), or ``0`` for its start.

    Raises:
        Problem: 400 naming ``parameter`` and the shape the collection's positions take.
    """
    text = text.strip()
    if spec.buckets == 1:
        if not _TIME.fullmatch(text) or int(text) > INT_LIMIT:
            raise bad_parameter(
                parameter,
                f"{parameter} of {spec.name} is a time: an integer of 0 or more (an "
                f"answer's as_of), not {text[:80]!r}",
            )
        return int(text)
    if text == "0":
        return Cut((0,) * spec.buckets)
    pieces = text.split(",")
    if (
        not _CUT.fullmatch(text)
        or len(pieces) != spec.buckets
        or any(int(piece) > INT_LIMIT for piece in pieces)
    ):
        raise bad_parameter(
            parameter,
            f"{parameter} of {spec.name}, a collection of {spec.buckets} buckets, is a cut: "
            f"{spec.buckets} times of 0 or more joined by commas, as an answer's as_of "
            f"prints it (or 0 for its start), not {text[:80]!r}",
        )
    return Cut(tuple(int(piece) for piece in pieces))
