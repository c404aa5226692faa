"""A claim's renewal after a Redis failover lost the tail, on the session's real Redis.

The failover puts back what the promoted replica had: the claim of the consumer this one took
over from, a process that no longer runs. The renewal takes it back; only a holder that may
still run ends this consumer (``collection_manager/storage/claims.py``). The chaos run met the
first: a consumer stopped with ClaimLostError, naming a predecessor it had SIGKILLed.
"""

from __future__ import annotations

import logging

import pytest
import redis as redis_lib

from collection_manager.storage.claims import ConsumerClaim, Holder, LocalFacts

# On host h, pid namespace 7, only pid 123 runs (since tick 500): this test's processes.
HERE = LocalFacts("h", 7, {123: 500}.get)


def gone(pid: int) -> Holder:
    """A consumer on this host and pid namespace whose pid no longer runs."""
    return Holder(host="h", pid=pid, since_ms=0, pid_ns=7, pid_start=900, token=f"t{pid}")


def test_a_renewal_takes_back_a_claim_a_failover_gave_to_a_consumer_that_is_gone(
    redis: redis_lib.Redis, unique: str, caplog: pytest.LogCaptureFixture
) -> None:
    claim = ConsumerClaim(f"claim-{unique}", local=HERE)
    redis.set(claim.key, gone(77).encode())  # the SIGKILLed predecessor's record
    assert claim.acquire(redis) == gone(77)
    redis.set(claim.key, gone(77).encode())  # the failover lost the taking over
    try:
        with caplog.at_level(logging.WARNING, "collection_manager.storage.claims"):
            assert claim.renew(redis) is None
        assert Holder.decode(redis.get(claim.key) or b"") == claim.mine
        assert 0 < redis.ttl(claim.key) <= claim.expiry_s
        assert "held again by a consumer that no longer runs (host h, pid 77" in caplog.text
        redis.delete(claim.key)  # the key expired meanwhile: free again, claimed again
        assert claim.renew(redis) is None
        assert Holder.decode(redis.get(claim.key) or b"") == claim.mine
    finally:
        redis.delete(claim.key)


def test_a_renewal_yields_to_a_holder_that_may_still_run(
    redis: redis_lib.Redis, unique: str
) -> None:
    claim = ConsumerClaim(f"claim-{unique}", local=HERE)
    assert claim.acquire(redis) is None
    elsewhere = Holder(host="other", pid=77, since_ms=0, pid_ns=7, pid_start=900, token="x")
    running_here = Holder(host="h", pid=123, since_ms=0, pid_ns=7, pid_start=500, token="y")
    try:
        for holder in (elsewhere, running_here):
            redis.set(claim.key, holder.encode())
            assert claim.renew(redis) == holder
            assert redis.get(claim.key) == holder.encode().encode()  # left as it was
    finally:
        redis.delete(claim.key)
