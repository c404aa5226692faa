"""The wire contract: the request schema stays fully compatible with every release's.

The checker (``schemas/compatibility.py``) is shown to catch each kind of breaking change,
and cross-checked against fastavro's own resolution on generated data; then the current
schemas are held to every release in ``RELEASES`` (docs/concepts/upgrades.md).
"""

from __future__ import annotations

import copy
import io
import json
from typing import Any

import pytest
from fastavro import parse_schema, schemaless_reader, schemaless_writer
from fastavro.schema import to_parsing_canonical_form
from fastavro.utils import generate_many

from schemas.compatibility import full_problems, problems
from schemas.registry import default_registry, load_avsc, schema_fingerprint
from tests.releases import releases

BASE: dict[str, Any] = {
    "type": "record",
    "name": "Request",
    "namespace": "t",
    "fields": [
        {"name": "id", "type": "int"},
        {
            "name": "kind",
            "type": {"type": "enum", "name": "Kind", "symbols": ["a", "b"], "default": "a"},
        },
        {
            "name": "body",
            "type": [
                "null",
                {"type": "record", "name": "Body", "fields": [{"name": "x", "type": "string"}]},
            ],
        },
        {"name": "tags", "type": {"type": "array", "items": "string"}},
    ],
}


def changed(edit: Any) -> dict[str, Any]:
    schema = copy.deepcopy(BASE)
    edit(schema)
    return schema


def field(schema: dict[str, Any], name: str) -> dict[str, Any]:
    return next(f for f in schema["fields"] if f["name"] == name)


def body(schema: dict[str, Any]) -> dict[str, Any]:
    return field(schema, "body")["type"][1]  # type: ignore[no-any-return]


COMPATIBLE = {
    "a field added with a default": lambda s: s["fields"].append(
        {"name": "note", "type": ["null", "string"], "default": None}
    ),
    "a field of a union's record added with a default": lambda s: body(s)["fields"].append(
        {"name": "y", "type": "long", "default": 0}
    ),
    "an enum symbol added to an enum with a default": lambda s: field(s, "kind")["type"].update(
        symbols=["a", "b", "c"]
    ),
}
# Each breaks one direction at least, and says where.
INCOMPATIBLE = {
    "a field added without a default": (
        lambda s: s["fields"].append({"name": "note", "type": "string"}),
        ".note: a field the writer lacks",
    ),
    "a field of a union's record without a default": (
        lambda s: body(s)["fields"].append({"name": "y", "type": "long"}),
        ".body.y: a field the writer lacks",
    ),
    "an int widened to long": (
        lambda s: field(s, "id").update(type="long"),
        ".id: long cannot be read as int",
    ),
    "an enum's symbol and default removed": (
        lambda s: [
            field(s, "kind")["type"].pop("default"),
            field(s, "kind")["type"].update(symbols=["a"]),
        ],
        "a new reader of old data: .kind: symbols b of enum t.Kind unknown",
    ),
    "a field renamed, even with an alias (old readers know no alias)": (
        lambda s: field(s, "tags").update(name="labels", aliases=["tags"]),
        "an old reader of new data: .tags: a field the writer lacks",
    ),
    "a union branch added": (
        lambda s: field(s, "body")["type"].append("long"),
        ".body: no branch of the reader's union reads long",
    ),
    "a record renamed": (
        lambda s: body(s).update(name="Payload"),
        "no branch of the reader's union reads record t.Payload",
    ),
    "an array's items changed": (
        lambda s: field(s, "tags")["type"].update(items="boolean"),
        ".tags[]: boolean cannot be read as string",
    ),
}


@pytest.mark.parametrize("edit", COMPATIBLE.values(), ids=COMPATIBLE.keys())
def test_a_compatible_change_passes_and_fastavro_agrees(edit: Any) -> None:
    new = changed(edit)
    assert full_problems(BASE, new) == []
    for writer, reader in ((BASE, new), (new, BASE)):
        assert len(round_trip(writer, reader)) == 50


@pytest.mark.parametrize(("edit", "message"), INCOMPATIBLE.values(), ids=INCOMPATIBLE.keys())
def test_an_incompatible_change_is_named(edit: Any, message: str) -> None:
    found = full_problems(BASE, changed(edit))
    assert any(message in line for line in found), found


def test_one_direction_is_checked_alone() -> None:
    widened = changed(lambda s: field(s, "id").update(type="long"))
    assert problems(BASE, widened) == []  # a reader of long reads an int (promotion)
    assert problems(widened, BASE) == [".id: long cannot be read as int"]


def round_trip(writer: dict[str, Any], reader: dict[str, Any]) -> list[Any]:
    parsed_writer, parsed_reader = parse_schema(writer), parse_schema(reader)
    decoded = []
    for record in generate_many(parsed_writer, 50):
        buffer = io.BytesIO()
        schemaless_writer(buffer, parsed_writer, record)
        buffer.seek(0)
        decoded.append(schemaless_reader(buffer, parsed_writer, parsed_reader))
    return decoded


# The contract, against every release.

RELEASES = releases()


def test_there_is_a_release_to_hold_to() -> None:
    assert RELEASES and RELEASES[0].version == "0.1.0"


@pytest.mark.parametrize("release", RELEASES, ids=lambda r: r.version)
def test_the_request_schema_is_fully_compatible_with_each_release(release: Any) -> None:
    text = release.file("schemas/requests.avsc")
    assert text is not None, f"{release.version} ({release.commit}) has no schemas/requests.avsc"
    released = json.loads(text)
    assert full_problems(released, load_avsc("requests.avsc")) == []
    # ... and its messages decode: the registry knows its fingerprint (schemas/history/).
    assert schema_fingerprint(released) in default_registry()


@pytest.mark.parametrize("release", RELEASES, ids=lambda r: r.version)
def test_a_released_collection_keeps_its_row_schema(release: Any) -> None:
    # Rows are positional and the catalog in Redis keeps the schema a collection was
    # created with: a built-in collection's columns never change (add a new collection).
    for path in release.files("schemas/rows"):
        released = json.loads(release.file(path) or "null")
        current = load_avsc(path.removeprefix("schemas/"))
        assert to_parsing_canonical_form(current) == to_parsing_canonical_form(released), path
