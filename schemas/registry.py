"""Schemas by fingerprint, so a reader can decode messages of older (or newer) writers.

Avro single-object encoding names the writer's schema by the CRC-64-AVRO fingerprint of its
Parsing Canonical Form. A registry maps fingerprints to parsed writer schemas; decoding
resolves the writer schema against the registry's reader schema (Avro schema resolution:
fields added with a default are filled in, removed fields are skipped).

Decoding reads the request envelope's union branch itself and hands fastavro that branch's
record schema: asking fastavro to name the branch (``return_record_name``) slowed reading
every value of every row by about 60%.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import json
from importlib import resources
from typing import Any

from fastavro import parse_schema
from fastavro.schema import fingerprint, to_parsing_canonical_form

from collection_manager import release
from collection_manager.core.errors import SchemaError
from schemas.errors import UnknownSchemaError

ParsedSchema = Any  # what fastavro.parse_schema returns


def load_avsc(name: str) -> dict[str, Any]:
    """The JSON of a ``.avsc`` file of this package, e.g. ``"requests.avsc"``.

    Raises:
        SchemaError: when the file is missing or is not JSON.
    """
    try:
        text = resources.files("schemas").joinpath(name).read_text(encoding="utf-8")
        loaded: dict[str, Any] = json.loads(text)
    except (OSError, ValueError) as exc:
        raise SchemaError(f"cannot load schema file {name}: {exc}") from exc
    return loaded


def schema_fingerprint(schema: dict[str, Any]) -> bytes:
    """The 8-byte CRC-64-AVRO fingerprint of ``schema``, little-endian as on the wire."""
    canonical = to_parsing_canonical_form(schema)
    # fastavro renders the fingerprint as the hex of its little-endian bytes.
    return bytes.fromhex(fingerprint(canonical, "CRC-64-AVRO"))


@dataclasses.dataclass(frozen=True)
class Branch:
    """One request kind of a writer schema's envelope union, ready to decode.

    Attributes:
        name: the record's full name, e.g. ``collection_manager.wire.Append``.
        writer: the branch's record schema, parsed on its own (named types expanded).
        reader: the reader's record of that name when it differs from the writer's (Avro
            resolution applies), None when they are the same or the reader has none.
        known: whether the reader schema has this request kind at all.
    """

    name: str
    writer: ParsedSchema
    reader: ParsedSchema | None
    known: bool


def _union_records(schema: dict[str, Any]) -> list[dict[str, Any]]:
    # The envelope has one field, the union of request records; expanded, each branch
    # holds the named types it uses, so it parses on its own.
    expanded: Any = parse_schema(schema, expand=True)
    records: list[dict[str, Any]] = expanded["fields"][0]["type"]
    return records


def request_branches(writer_schema: dict[str, Any], reader_schema: dict[str, Any]) -> list[Branch]:
    """The writer's request kinds in union order, each with how the reader reads it."""
    readers = {record["name"]: record for record in _union_records(reader_schema)}
    branches = []
    for record in _union_records(writer_schema):
        theirs = readers.get(record["name"])
        same = theirs is not None and to_parsing_canonical_form(
            theirs
        ) == to_parsing_canonical_form(record)
        reader = None if same or theirs is None else parse_schema(theirs)
        branches.append(Branch(record["name"], parse_schema(record), reader, theirs is not None))
    return branches


class SchemaRegistry:
    """A reader schema and the writer schemas it can decode, by fingerprint.

    Args:
        reader_schema: the schema decoded messages are resolved to (the current one); it
            is also registered as a writer schema.
    """

    def __init__(self, reader_schema: dict[str, Any]) -> None:
        self.reader: ParsedSchema = parse_schema(reader_schema)
        self.fingerprint = schema_fingerprint(reader_schema)
        self._reader_schema = reader_schema
        self._writers: dict[bytes, ParsedSchema] = {self.fingerprint: self.reader}
        self._branches = {self.fingerprint: request_branches(reader_schema, reader_schema)}
        self.plain: tuple[bytes, ParsedSchema] = (self.fingerprint, self.reader)

    def write_plain_with(self, writer_schema: dict[str, Any]) -> None:
        """Registers ``writer_schema`` and writes requests that use nothing newer with it.

        A request for an unbucketed collection then has the bytes a 0.1.0 writer gives it,
        so a consumer of 0.1.0 still reads the agents of this release (docs/concepts/upgrades.md).
        """
        self.plain = (
            self.register(writer_schema),
            self._writers[schema_fingerprint(writer_schema)],
        )

    def register(self, writer_schema: dict[str, Any]) -> bytes:
        """Makes messages written with ``writer_schema`` decodable.

        Returns:
            Its fingerprint.
        """
        key = schema_fingerprint(writer_schema)
        if key not in self._writers:
            self._writers[key] = parse_schema(writer_schema)
            self._branches[key] = request_branches(writer_schema, self._reader_schema)
        return key

    def writer(self, key: bytes) -> ParsedSchema:
        """The parsed writer schema with fingerprint ``key``.

        Raises:
            UnknownSchemaError: when no registered schema has that fingerprint.
        """
        self._check(key)
        return self._writers[key]

    def branches(self, key: bytes) -> list[Branch]:
        """The request kinds of the writer schema with fingerprint ``key``, in union order.

        Raises:
            UnknownSchemaError: when no registered schema has that fingerprint.
        """
        self._check(key)
        return self._branches[key]

    def _check(self, key: bytes) -> None:
        if key not in self._writers:
            raise UnknownSchemaError(
                f"unknown schema fingerprint {key.hex()}: written with a request schema that "
                f"collection-manager {release.version()} does not know (a later release's? "
                "upgrade the consumer and produce the dead letter again); known: "
                f"{', '.join(k.hex() for k in self._writers)}"
            )

    def __contains__(self, key: object) -> bool:
        return key in self._writers


@functools.cache
def _request_schema() -> dict[str, Any]:
    return load_avsc("requests.avsc")


def request_schema() -> dict[str, Any]:
    """The current request schema (``requests.avsc``), a fresh copy the caller may change."""
    return copy.deepcopy(_request_schema())


# The request schemas of earlier releases that differ from the current one: messages they
# wrote stay readable (on the topic, or from agents not yet upgraded). When requests.avsc
# changes, the released file goes here as history/requests-<version>.avsc; the test
# command checks that every release's schema is registered (tests/unit/test_schema_compat).
HISTORY = "history"


def released_request_schemas() -> list[dict[str, Any]]:
    """Every earlier release's request schema kept in ``history/``."""
    folder = resources.files("schemas").joinpath(HISTORY)
    if not folder.is_dir():
        return []
    names = sorted(e.name for e in folder.iterdir() if e.name.endswith(".avsc"))
    return [load_avsc(f"{HISTORY}/{name}") for name in names]


@functools.cache
def default_registry() -> SchemaRegistry:
    """The registry of the current request schema and the released ones, for the process."""
    registry = SchemaRegistry(request_schema())
    released = released_request_schemas()
    for schema in released:
        registry.register(schema)
    if released:  # the oldest released schema still carries every unbucketed request
        registry.write_plain_with(released[0])
    return registry
