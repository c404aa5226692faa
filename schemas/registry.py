"""Schemas by fingerprint, so a reader can decode messages of older (or newer) writers.

Avro single-object encoding names the writer's schema by the CRC-64-AVRO fingerprint of its
Parsing Canonical Form. A registry maps fingerprints to parsed writer schemas; decoding
resolves the writer schema against the registry's reader schema (Avro schema resolution:
fields added with a default are filled in, removed fields are skipped).
"""

from __future__ import annotations

import copy
import functools
import json
from importlib import resources
from typing import Any

from fastavro import parse_schema
from fastavro.schema import fingerprint, to_parsing_canonical_form

from collection_manager.errors import SchemaError, UnknownSchemaError

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


class SchemaRegistry:
    """A reader schema and the writer schemas it can decode, by fingerprint.

    Args:
        reader_schema: the schema decoded messages are resolved to (the current one); it
            is also registered as a writer schema.
    """

    def __init__(self, reader_schema: dict[str, Any]) -> None:
        self.reader: ParsedSchema = parse_schema(reader_schema)
        self.fingerprint = schema_fingerprint(reader_schema)
        self._writers: dict[bytes, ParsedSchema] = {self.fingerprint: self.reader}

    def register(self, writer_schema: dict[str, Any]) -> bytes:
        """Makes messages written with ``writer_schema`` decodable.

        Returns:
            Its fingerprint.
        """
        key = schema_fingerprint(writer_schema)
        self._writers.setdefault(key, parse_schema(writer_schema))
        return key

    def writer(self, key: bytes) -> ParsedSchema:
        """The parsed writer schema with fingerprint ``key``.

        Raises:
            UnknownSchemaError: when no registered schema has that fingerprint.
        """
        if key not in self._writers:
            raise UnknownSchemaError(
                f"unknown schema fingerprint {key.hex()}; "
                f"known: {', '.join(k.hex() for k in self._writers)}"
            )
        return self._writers[key]

    def __contains__(self, key: object) -> bool:
        return key in self._writers


@functools.cache
def _request_schema() -> dict[str, Any]:
    return load_avsc("requests.avsc")


def request_schema() -> dict[str, Any]:
    """The current request schema (``requests.avsc``), a fresh copy the caller may change."""
    return copy.deepcopy(_request_schema())


@functools.cache
def default_registry() -> SchemaRegistry:
    """The registry of the current request schema, shared by the process.

    Register older request schemas here when the schema changes, so messages already on
    the topic stay readable.
    """
    return SchemaRegistry(request_schema())
