"""The sinks' catalog in Redis, and what a sink reads of its collection's change log.

``cm:sinks`` is a hash of sink name to the JSON of its :class:`SinkSpec`: at most
``MAX_SINKS`` fields, so listing it is bounded. What a sink reads goes through the change
log's one reader (``change_log.ChangeLog``, bounded pages), never ``XRANGE`` of its own.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import redis

from collection_manager.core.cut import Cut
from collection_manager.core.sinks.spec import MAX_SINKS, SinkError, SinkSpec
from collection_manager.core.specs import CollectionSpec, Row
from collection_manager.core.stepped_read import Change
from collection_manager.storage.change_log import ChangeLog
from collection_manager.storage.client import as_text
from collection_manager.storage.cut import read_cut
from collection_manager.storage.keys import CollectionKeys

SINKS = "cm:sinks"
# Creates a sink unless its name is taken, another sink writes its topic, or the catalog
# holds MAX_SINKS already: one atomic check, so two creates cannot both pass it.
_CREATE = """
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then return 'exists' end
if redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[4]) then return 'full' end
for _, record in ipairs(redis.call('HVALS', KEYS[1])) do
  if cjson.decode(record)['topic'] == ARGV[3] then return 'topic' end
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 'ok'
"""


class SinkCatalog:
    """The sinks recorded in one Redis."""

    def __init__(self, client: redis.Redis) -> None:
        self._client = client

    def create(self, spec: SinkSpec) -> None:
        """Records ``spec``.

        Raises:
            SinkError: when the name is taken, its topic is another sink's, or there are
                ``MAX_SINKS`` sinks already.
        """
        record = json.dumps(spec.record())
        answer = as_text(
            self._client.eval(_CREATE, 1, SINKS, spec.name, record, spec.topic, MAX_SINKS)
        )
        if answer == "exists":
            raise SinkError(f"there is a sink {spec.name} already; sinks show {spec.name}")
        if answer == "full":
            raise SinkError(f"there are {MAX_SINKS} sinks, the most (MAX_SINKS); drop one first")
        if answer == "topic":
            raise SinkError(f"another sink writes topic {spec.topic}: a sink needs its own")

    def get(self, name: str) -> SinkSpec:
        """The sink ``name``.

        Raises:
            SinkError: when there is none.
        """
        raw = self._client.hget(SINKS, name)
        if raw is None:
            raise SinkError(f"no sink {name[:200]!r}; sinks list shows them")
        return SinkSpec.of(json.loads(raw))

    def all(self) -> list[SinkSpec]:
        """Every sink, by name."""
        records = self._client.hgetall(SINKS)
        return sorted((SinkSpec.of(json.loads(v)) for v in records.values()), key=_name)

    def drop(self, name: str) -> bool:
        """Forgets the sink ``name``; False when there was none."""
        return bool(self._client.hdel(SINKS, name))


def _name(spec: SinkSpec) -> str:
    return spec.name


def readable_cut(client: redis.Redis, spec: CollectionSpec) -> Cut:
    """How far ``spec``'s change log is readable whole now: its latest readable time, or of
    a bucketed collection its consistent cut of readable times.

    Raises:
        CutError: when no cut could be read (``storage/cut.read_cut``).
    """
    if spec.buckets > 1:
        return read_cut(client, spec, readable=True)
    return Cut((int(client.get(CollectionKeys(spec.name).time) or 0),))


def changes_between(
    client: redis.Redis, spec: CollectionSpec, since: Cut, until: Cut
) -> Iterator[tuple[int | None, Change[Row]]]:
    """``(bucket, change)`` of the changes after ``since`` and through ``until``, each
    bucket's oldest first (bucket None: unbucketed), in bounded pages of the log."""
    for unit, after, through in zip(spec.units(), since.times, until.times, strict=True):
        for change in ChangeLog(client, unit.name).changes(after, through):
            yield unit.bucket, change


def check_held(client: redis.Redis, spec: CollectionSpec, since: Cut) -> None:
    """Every unit's log still holds every change after ``since`` (checked after a read
    from it, it says the read missed nothing).

    Raises:
        LogTrimmedError: naming the first unit trimmed past it.
    """
    for unit, after in zip(spec.units(), since.times, strict=True):
        ChangeLog(client, unit.name).check_held(after)
