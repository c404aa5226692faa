"""The name rule of collections and replica ids, at creation and on the wire."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from collection_manager.core.errors import InvalidNameError, UnknownCollectionError
from collection_manager.core.filters import eq
from collection_manager.core.names import (
    MAX_NAME_LENGTH,
    NAME_RULE,
    check_collection_name,
    check_replica_id,
    name_problem,
)
from collection_manager.core.requests import (
    Append,
    Delete,
    Fence,
    Heartbeat,
    ReplicaAdded,
    ReplicaRemoved,
    validate_request,
)
from collection_manager.core.specs import CollectionSpec
from schemas.introspection import INTROSPECTION_COLLECTIONS
from tests.unit.strategies import FRONTIERS

SCHEMA = {"type": "record", "name": "t", "fields": [{"name": "replica_id", "type": "string"}]}
SPECS = {FRONTIERS.name: FRONTIERS}


@pytest.mark.parametrize(
    "name",
    [
        "a",
        "0",
        "compute_frontiers",
        "compute_frontiers-test_consumer_applies_in_order_and_dead_l-0123abcd",
        "r1-test_x-param-1-deadbeef",
        "v1.2_x-Y",
        "x" * MAX_NAME_LENGTH,
        *INTROSPECTION_COLLECTIONS,
    ],
)
def test_valid_names(name: str) -> None:
    assert name_problem(name) is None
    check_collection_name(name)
    check_replica_id(name)


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("", "is empty"),
        ("x" * (MAX_NAME_LENGTH + 1), f"has 129 characters, at most {MAX_NAME_LENGTH}"),
        ("a*", "has '*' at position 1"),
        ("a?", "has '?' at position 1"),
        ("a[bc]", "has '[' at position 1"),
        ("{a}", "starts with '{'"),
        ("a:b", "has ':' at position 1"),
        ("a b", "has ' ' at position 1"),
        ("a\nb", r"has '\n' at position 1"),
        ("-a", "starts with '-'"),
        (".a", "starts with '.'"),
        ("_a", "starts with '_'"),
        ("ä", "starts with 'ä'"),
        ("a\u00e9", "has 'é' at position 1"),
    ],
)
def test_invalid_names_say_what_and_the_rule(name: str, problem: str) -> None:
    with pytest.raises(InvalidNameError) as caught:
        check_collection_name(name)
    assert problem in str(caught.value)
    assert NAME_RULE in str(caught.value)
    assert str(caught.value).startswith("collection name ")
    with pytest.raises(InvalidNameError, match=r"^replica id .*replica ids are 1 to 128"):
        check_replica_id(name)


def test_a_long_bad_name_is_quoted_short() -> None:
    with pytest.raises(InvalidNameError) as caught:
        check_collection_name("*" * 10_000)
    assert len(str(caught.value)) < 400


def test_a_non_string_name() -> None:
    assert name_problem(3) == "must be a string, got int"


@given(st.text(max_size=140))
def test_the_rule_is_the_pattern(name: str) -> None:
    import re

    expected = re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}", name) is not None
    assert (name_problem(name) is None) == expected


def test_collection_spec_refuses_a_bad_name() -> None:
    with pytest.raises(InvalidNameError, match="collection name 'a\\*' has '\\*'"):
        CollectionSpec("a*", SCHEMA)
    CollectionSpec("a-1", SCHEMA)


@pytest.mark.parametrize(
    "request_",
    [
        Append("a*", "r1", 1, (), 0),
        Delete("a*", eq("replica_id", "r1")),
        Delete("", eq("replica_id", "r1")),
    ],
)
def test_a_bad_collection_name_on_the_wire_is_refused_before_the_catalog(
    request_: Append | Delete,
) -> None:
    # Not "unknown collection": the reason says what is wrong with the name.
    with pytest.raises(InvalidNameError, match="collection name"):
        validate_request(request_, SPECS)
    with pytest.raises(InvalidNameError):
        validate_request(request_, {})


@pytest.mark.parametrize(
    "request_",
    [
        Append(FRONTIERS.name, "r*", 1, (), 0),
        Delete(FRONTIERS.name, eq("replica_id", "r1"), fence=Fence("r 1", 1)),
        Heartbeat("r:1", 1),
        ReplicaAdded("", 1),
        ReplicaRemoved("r[1]", 1),
    ],
)
def test_a_bad_replica_id_on_the_wire_is_refused(request_: object) -> None:
    with pytest.raises(InvalidNameError, match="replica id"):
        validate_request(request_, SPECS)  # type: ignore[arg-type]


def test_a_good_name_not_in_the_catalog_is_still_unknown() -> None:
    with pytest.raises(UnknownCollectionError):
        validate_request(Delete("nope", eq("a", 1)), SPECS)
