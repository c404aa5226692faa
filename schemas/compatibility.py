"""Whether one Avro schema's readers can decode another's data: Avro schema resolution.

The request schema must be *fully* compatible with every release's (docs/concepts/upgrades.md):
a consumer of one version reads the agents of the version before and of the version after
it, so each schema must read the other's data (BACKWARD and FORWARD, as Confluent's Schema
Registry names the two directions). ``problems`` checks one direction by the resolution
rules of the Avro specification, for the types our schemas use, and says what breaks:

- records match by full name; a reader field the writer lacks needs a default, a writer
  field the reader lacks is skipped;
- enums match by name; a writer symbol the reader lacks needs the reader's default symbol;
- arrays and maps by their items and values; fixed by name and size;
- a writer union is readable when each of its branches is; a reader union reads a writer
  type when one of its branches does;
- primitives by the specification's promotions (int to long, float or double; long to
  float or double; float to double; string and bytes both ways).

Named types are expanded first (``parse_schema(expand=True)``); our schemas hold no
recursive type (a recursive one is refused at depth ``MAX_DEPTH``).
"""

from __future__ import annotations

from typing import Any

from fastavro import parse_schema

MAX_DEPTH = 64
PROMOTIONS = {
    ("int", "long"),
    ("int", "float"),
    ("int", "double"),
    ("long", "float"),
    ("long", "double"),
    ("float", "double"),
    ("string", "bytes"),
    ("bytes", "string"),
}
NAMED = ("record", "enum", "fixed")


def _kind(schema: Any) -> str:
    if isinstance(schema, list):
        return "union"
    return schema if isinstance(schema, str) else schema["type"]


def _name(schema: Any) -> str:
    return str(schema.get("name", "")) if isinstance(schema, dict) else ""


def _names(schema: Any) -> set[str]:
    """The full name and the aliases of a named type."""
    return {_name(schema), *schema.get("aliases", ())}


def full_problems(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """What breaks when a reader of ``new`` reads ``old``'s data, or the other way round."""
    return [f"a new reader of old data: {p}" for p in problems(old, new)] + [
        f"an old reader of new data: {p}" for p in problems(new, old)
    ]


def problems(writer: dict[str, Any], reader: dict[str, Any]) -> list[str]:
    """What stops a reader of ``reader`` from decoding data written with ``writer``.

    Returns:
        One line per problem, each naming the path to it; empty when compatible.
    """
    found: list[str] = []
    _check(parse_schema(writer, expand=True), parse_schema(reader, expand=True), "", found, 0)
    return found


def _check(writer: Any, reader: Any, path: str, found: list[str], depth: int) -> None:
    if depth > MAX_DEPTH:
        found.append(f"{path or '.'}: nested deeper than {MAX_DEPTH} (a recursive type?)")
        return
    w_kind, r_kind = _kind(writer), _kind(reader)
    if w_kind == "union":
        for branch in writer:
            _check(branch, reader, path, found, depth + 1)
        return
    if r_kind == "union":
        branch = _reading_branch(writer, reader)
        if branch is None:
            found.append(f"{path or '.'}: no branch of the reader's union reads {_shown(writer)}")
        else:
            _check(writer, branch, path, found, depth + 1)
        return
    if not _matches(writer, reader):
        found.append(f"{path or '.'}: {_shown(writer)} cannot be read as {_shown(reader)}")
    elif w_kind == "record":
        _check_record(writer, reader, path, found, depth)
    elif w_kind == "enum":
        _check_enum(writer, reader, path, found)
    elif w_kind == "array":
        _check(writer["items"], reader["items"], f"{path}[]", found, depth + 1)
    elif w_kind == "map":
        _check(writer["values"], reader["values"], f"{path}{{}}", found, depth + 1)


def _matches(writer: Any, reader: Any) -> bool:
    """Whether ``reader`` is the type that reads ``writer`` (its children aside)."""
    w_kind, r_kind = _kind(writer), _kind(reader)
    if r_kind == "union":
        return any(_matches(writer, branch) for branch in reader)
    if w_kind in NAMED:
        same = w_kind == r_kind and bool(_names(writer) & _names(reader))
        return same and (w_kind != "fixed" or writer["size"] == reader["size"])
    return w_kind == r_kind or (w_kind, r_kind) in PROMOTIONS


def _reading_branch(writer: Any, union: list[Any]) -> Any:
    """The reader's branch that reads ``writer``: one of its own type first, as Avro picks."""
    exact = [b for b in union if _kind(b) == _kind(writer) and _matches(writer, b)]
    promoted = [b for b in union if _matches(writer, b)]
    return (exact or promoted or [None])[0]


def _check_record(writer: Any, reader: Any, path: str, found: list[str], depth: int) -> None:
    theirs = {field["name"]: field for field in writer["fields"]}
    for field in reader["fields"]:
        source = next(
            (theirs[n] for n in (field["name"], *field.get("aliases", ())) if n in theirs), None
        )
        where = f"{path}.{field['name']}"
        if source is not None:
            _check(source["type"], field["type"], where, found, depth + 1)
        elif "default" not in field:
            found.append(f"{where}: a field the writer lacks, with no default")


def _check_enum(writer: Any, reader: Any, path: str, found: list[str]) -> None:
    missing = [s for s in writer["symbols"] if s not in reader["symbols"]]
    if missing and "default" not in reader:
        found.append(
            f"{path or '.'}: symbols {', '.join(missing)} of enum {_name(writer)} unknown "
            "to the reader, which has no default symbol"
        )


def _shown(schema: Any) -> str:
    kind = _kind(schema)
    return f"{kind} {_name(schema)}" if kind in NAMED else kind
