"""The CLI's argument handling (no services)."""

from __future__ import annotations

import pytest

from collection_manager.cli import build_parser
from collection_manager.commands.collections import parse_where
from collection_manager.errors import FilterError
from collection_manager.filters import and_, eq, is_null
from schemas.introspection import introspection_spec

FRONTIERS = introspection_spec("compute_frontiers")
HYDRATION = introspection_spec("hydration_status")


def test_where_terms_are_typed_by_their_column() -> None:
    where = parse_where(["replica_id=r1", "worker_id=3", "frontier=null"], FRONTIERS)
    assert where == and_(eq("replica_id", "r1"), eq("worker_id", 3), is_null("frontier"))
    assert parse_where(["hydrated=true"], HYDRATION) == eq("hydrated", True)
    assert parse_where([], FRONTIERS) is None


@pytest.mark.parametrize(
    ("term", "message"),
    [
        ("nope=1", "with a column of replica_id, export_id, worker_id, frontier"),
        ("worker_id", "expected COLUMN=VALUE"),
        ("worker_id=x", "worker_id is a long column"),
    ],
)
def test_bad_where_terms_say_what_is_valid(term: str, message: str) -> None:
    with pytest.raises(FilterError, match=message):
        parse_where([term], FRONTIERS)


def test_bad_boolean_is_named() -> None:
    with pytest.raises(FilterError, match=r"hydrated is boolean \(true or false\)"):
        parse_where(["hydrated=yes"], HYDRATION)


def test_every_subcommand_parses() -> None:
    parser = build_parser()
    for argv in (
        ["infra", "status"],
        ["query", "c", "--where", "a=1"],
        ["tail", "c"],
        ["collections", "list"],
        ["consume", "--duration", "1"],
        ["demo"],
    ):
        assert callable(parser.parse_args(argv).run)
