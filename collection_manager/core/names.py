"""The name rule of collections and replica ids (docs/concepts/collections-and-time.md).

Both end up inside Redis key names (``cm:{<collection>}:...``,
``<namespace>:epoch:<replica_id>``) and hash fields, and collection names are Kafka keys.
A small, fixed character set keeps every key unambiguous: no glob characters (``* ? [ ]``),
no hash-tag braces, no separators (``:``), no spaces or control characters. The rule is
checked where names are created (``CollectionSpec``, ``Controller.add_replica``) and on
the wire (``validate_request``), so a bad name is refused with this rule in the reason.
"""

from __future__ import annotations

import re

from collection_manager.core.errors import InvalidNameError

MAX_NAME_LENGTH = 128
NAME_RULE = (
    f"1 to {MAX_NAME_LENGTH} characters of A-Z a-z 0-9 _ . -, starting with a letter or digit"
)
_ALLOWED = re.compile(r"[A-Za-z0-9_.-]")
_FIRST = re.compile(r"[A-Za-z0-9]")
_SHOWN = MAX_NAME_LENGTH + 8  # a reason quotes a bad name whole unless it is far too long


def name_problem(name: object) -> str | None:
    """What is wrong with ``name`` under the rule (naming the bound it broke), or None."""
    if not isinstance(name, str):
        return f"must be a string, got {type(name).__name__}"
    if not name:
        return "is empty"
    if len(name) > MAX_NAME_LENGTH:
        return f"has {len(name)} characters, at most {MAX_NAME_LENGTH} are allowed"
    if not _FIRST.fullmatch(name[0]):
        return f"starts with {name[0]!r}, it must start with a letter or digit"
    for position, char in enumerate(name):
        if not _ALLOWED.fullmatch(char):
            return f"has {char!r} at position {position}, which is not allowed"
    return None


def _shown(name: object) -> str:
    text = repr(name)
    return text if len(text) <= _SHOWN else f"{text[:_SHOWN]}...'"


def check_name(name: object, what: str, collection: str | None = None) -> None:
    """Checks ``name`` against the rule.

    Args:
        name: the name.
        what: what it names, for the message (``collection name``, ``replica id``).
        collection: the collection concerned, for the error's context.

    Raises:
        InvalidNameError: naming the problem and the rule.
    """
    problem = name_problem(name)
    if problem is not None:
        raise InvalidNameError(
            f"{what} {_shown(name)} {problem}; {what}s are {NAME_RULE}", collection=collection
        )


def check_collection_name(name: object) -> None:
    """Checks a collection name; raises InvalidNameError (see :func:`check_name`)."""
    check_name(name, "collection name")


def check_replica_id(replica_id: object) -> None:
    """Checks a replica id; raises InvalidNameError (see :func:`check_name`)."""
    check_name(replica_id, "replica id")
