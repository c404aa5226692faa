"""A bucketed collection's cut read as it was before it was pipelined: the baseline of
``bench.buckets``' cut read figures (and of the test that the two reads agree,
``tests/integration/test_cut_round_trips.py``).

The settled cut, then one ``FCALL_RO`` of ``cm_cut`` per bucket, one after the other, then
the settled cut's version again: ``2 + N`` round trips for ``N`` buckets, where
``storage/cut.read_cut`` takes two on one Redis and one more per further node of a cluster.
The same views and the same consistent cut, from the same functions.
"""

from __future__ import annotations

import redis

from collection_manager.core.cut import Cut, CutError, consistent_cut
from collection_manager.core.specs import CollectionSpec
from collection_manager.storage.cut import bucket_view, cut_call, read_settled
from collection_manager.storage.library import CUT, call

# As storage/cut.read_cut: a settle two versions on means parts it needed may be trimmed.
_ATTEMPTS = 100


def per_bucket_cut(client: redis.Redis, spec: CollectionSpec, readable: bool = False) -> Cut:
    """``read_cut``'s cut, read with one call per bucket.

    Raises:
        CutError: when settles kept overtaking the read.
    """
    for _attempt in range(_ATTEMPTS):
        settled = read_settled(client, spec)
        views = []
        for unit, floor in zip(spec.units(), settled.times, strict=True):
            keys, args = cut_call(unit, floor)
            views.append(bucket_view(unit, call(client, CUT, keys, args, read_only=True), readable))
        if int(read_settled(client, spec).version or 0) - int(settled.version or 0) < 2:
            return consistent_cut(views, settled.given_up)
    raise CutError(f"settles overtook {_ATTEMPTS} reads of {spec.collection}'s cut")
