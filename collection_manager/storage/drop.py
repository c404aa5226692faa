"""Dropping a collection: deleting exactly its keys, found by name, never by pattern.

A pattern (``SCAN MATCH cm:{<name>}:idx:*``) treats glob characters in the name as globs
and would delete other collections' keys; names are checked now (``core/names.py``), but
a delete must not depend on that. The index sets are derived from the collection's rows
in one function call (``cm_drop`` in ``functions.lua``); a large collection blocks Redis
for that call.
"""

from __future__ import annotations

import json

import redis

from collection_manager.core.specs import CollectionSpec
from collection_manager.storage.keys import CATALOG, CollectionKeys
from collection_manager.storage.library import DROP, call
from collection_manager.storage.ops import function_call

# The index layout depends on the columns only: a placeholder name lets a collection whose
# name predates the name rule be dropped too.
_LAYOUT_NAME = "layout"


class CollectionDrop:
    """Deletes collections' keys.

    Args:
        client: a Redis client.
    """

    def __init__(self, client: redis.Redis) -> None:
        self._client = client

    def drop(self, collection: str) -> int:
        """Deletes ``collection``'s keys (not its catalog entry); returns how many existed."""
        keys = CollectionKeys(collection)
        raw = self._client.hget(CATALOG, collection)
        if raw is None:  # no definition, so no index layout: only the fixed keys
            return int(self._client.delete(*keys.function_keys()))
        record = json.loads(raw)
        layout = CollectionSpec(_LAYOUT_NAME, record["row_schema"], record["indexed_columns"])
        payload = function_call([], layout).payload
        args: list[str | int] = [keys.index_prefix, 0, payload, ""]
        return int(call(self._client, DROP, keys.function_keys(), args))
