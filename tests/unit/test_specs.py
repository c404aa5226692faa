"""Collection specs, row validation, requests validation and the introspection schemas."""

from __future__ import annotations

from typing import Any

import pytest

from collection_manager.core.errors import FilterError, SchemaError, UnknownCollectionError
from collection_manager.core.filters import eq
from collection_manager.core.requests import (
    Append,
    Delete,
    Heartbeat,
    ReplicaAdded,
    collection_of,
    validate_request,
)
from collection_manager.core.specs import CollectionSpec, Column, columns_of, validate_row
from schemas.introspection import (
    INTROSPECTION_COLLECTIONS,
    introspection_spec,
    introspection_specs,
)
from tests.unit.strategies import FRONTIERS, HYDRATION

SPECS = {spec.name: spec for spec in (FRONTIERS, HYDRATION)}


def test_introspection_specs() -> None:
    specs = introspection_specs()
    assert tuple(s.name for s in specs) == INTROSPECTION_COLLECTIONS
    for spec in specs:
        assert spec.columns[0] == Column("replica_id", "string")
        assert spec.indexed_columns == ("replica_id",)
    frontiers = introspection_spec("compute_frontiers")
    assert frontiers.column_names == ("replica_id", "export_id", "worker_id", "frontier")
    assert frontiers.columns[3] == Column("frontier", "long", nullable=True)
    assert introspection_spec("replica_metrics").columns[1] == Column("cpu", "double")
    assert hash(frontiers) == hash(introspection_spec("compute_frontiers"))


def test_missing_row_schema() -> None:
    with pytest.raises(SchemaError, match=r"cannot load schema file rows/nope\.avsc"):
        introspection_spec("nope")


def _record(*fields: tuple[str, Any]) -> dict[str, Any]:
    return {"type": "record", "name": "t", "fields": [{"name": n, "type": t} for n, t in fields]}


def test_columns_of_maps_avro_types() -> None:
    schema = _record(("a", "int"), ("b", "float"), ("c", ["null", "string"]), ("d", "boolean"))
    assert columns_of(schema) == (
        Column("a", "long"),
        Column("b", "double"),
        Column("c", "string", nullable=True),
        Column("d", "boolean"),
    )


@pytest.mark.parametrize(
    ("schema", "indexed", "message"),
    [
        ({"type": "enum", "name": "t"}, (), "must be an Avro record"),
        (_record(("a", "bytes")), (), "column 'a' of t has type 'bytes'"),
        (_record(("a", ["null", "long", "string"])), (), "column 'a' of t"),
        (_record(("a", "long"), ("a", "string")), (), "repeats a column name"),
        (_record(("a", "double")), ("a",), "must be a string or long column, not double"),
        (_record(("a", "long")), ("b",), "not missing"),
    ],
)
def test_bad_specs(schema: dict[str, Any], indexed: tuple[str, ...], message: str) -> None:
    with pytest.raises(SchemaError, match=message):
        CollectionSpec("t", schema, indexed)


@pytest.mark.parametrize(
    ("row", "message"),
    [
        (
            ("r1", "a", 0),
            r"has 3 values, expected 4 \(replica_id, export_id, worker_id, frontier\)",
        ),
        ("r1ab", "has a string"),
        (("r1", "a", "0", None), "'worker_id' expects long: got str '0'"),
        (("r1", "a", True, None), "'worker_id' expects long: got bool True"),
        (("r1", "a", 1.0, None), "'worker_id' expects long: got float"),
        (("r1", "a", 2**63, None), r"outside the supported integer range ±\(2\^53 - 1\)"),
        (("r1", "a", 2**53, None), r"value 9007199254740992 is outside the supported integer"),
        (("r1", "a", -(2**53), None), r"value -9007199254740992 is outside"),
        ((None, "a", 0, None), "'replica_id' expects string: null in a non-nullable column"),
        (("r1", 5, 0, None), "'export_id' expects string: got int 5"),
        (("r1", "a", 0, "x"), r"'frontier' expects long \(nullable\)"),
    ],
)
def test_validate_row_names_column_and_type(row: Any, message: str) -> None:
    with pytest.raises(SchemaError, match=message) as caught:
        validate_row(row, FRONTIERS)
    assert caught.value.collection == "frontiers"


@pytest.mark.parametrize(
    ("row", "message"),
    [
        (("r1", 1, None), "'hydrated' expects boolean: got int 1"),
        (("r1", True, float("inf")), "not a finite number"),
        (("r1", True, False), "'load' expects double"),
        (("r1", True, "1.0"), "'load' expects double"),
    ],
)
def test_validate_row_booleans_and_doubles(row: Any, message: str) -> None:
    with pytest.raises(SchemaError, match=message):
        validate_row(row, HYDRATION)


def test_validate_row_accepts_good_rows() -> None:
    validate_row(("r1", "a", 0, None), FRONTIERS)
    validate_row(["r1", "a", -(2**53 - 1), 2**53 - 1], FRONTIERS)  # the domain's edges
    validate_row(("r1", False, 3), HYDRATION)  # an int where a double is expected
    validate_row(("r1", True, 0.5), HYDRATION)


def test_validate_request() -> None:
    validate_request(Append("frontiers", "r1", 1, ((("r1", "a", 0, 1), -1),), 0), SPECS)
    validate_request(Delete("hydration", eq("hydrated", True)), SPECS)
    validate_request(Heartbeat("r1", 1), SPECS)
    with pytest.raises(UnknownCollectionError, match="'nope'; known: frontiers, hydration"):
        validate_request(Delete("nope", eq("a", 1)), SPECS)
    with pytest.raises(UnknownCollectionError, match="known: none"):
        validate_request(Delete("nope", eq("a", 1)), {})
    with pytest.raises(SchemaError, match="expects long"):
        validate_request(Append("frontiers", "r1", 1, ((("r1", "a", "x", 1), 1),), 0), SPECS)
    with pytest.raises(SchemaError, match=r"diff of .* must be an integer"):
        validate_request(Append("frontiers", "r1", 1, ((("r1", "a", 0, 1), True),), 0), SPECS)


@pytest.mark.parametrize("diff", [2**53, -(2**53), 2**63 - 1, -(2**63)])
def test_a_diff_outside_the_domain_is_refused_naming_the_bound(diff: int) -> None:
    request = Append("frontiers", "r1", 1, ((("r1", "a", 0, 1), diff),), 0)
    with pytest.raises(SchemaError, match=rf"diff {diff} is outside .* ±9007199254740991"):
        validate_request(request, SPECS)


@pytest.mark.parametrize("diff", [2**53 - 1, -(2**53 - 1)])
def test_diffs_at_the_domain_edges_are_valid(diff: int) -> None:
    validate_request(Append("frontiers", "r1", 1, ((("r1", "a", 0, 1), diff),), 0), SPECS)


@pytest.mark.parametrize("valid_until", [-1, 2**53])
def test_valid_until_outside_the_domain_is_refused(valid_until: int) -> None:
    request = Append("frontiers", "r1", 1, ((("r1", "a", 0, 1), 1),), 0, valid_until=valid_until)
    with pytest.raises(SchemaError, match=rf"valid_until {valid_until} is outside"):
        validate_request(request, SPECS)
    with pytest.raises(FilterError, match="unknown column 'a'"):
        validate_request(Delete("frontiers", eq("a", 1)), SPECS)


def test_collection_of() -> None:
    assert collection_of(Delete("c", eq("a", 1))) == "c"
    assert collection_of(ReplicaAdded("r1", 1)) is None


def test_append_normalises_updates() -> None:
    append = Append("c", "r1", 1, [(["r1", 1], 1)], 0)  # type: ignore[arg-type]
    assert append.updates == ((("r1", 1), 1),)
    assert hash(append) == hash(Append("c", "r1", 1, ((("r1", 1), 1),), 0))
