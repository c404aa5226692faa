"""The consumer's claim: when a holder is stale, and what the refusal says (no services)."""

from __future__ import annotations

import os

from collection_manager.storage.claims import (
    ClaimHeldError,
    Holder,
    LocalFacts,
    is_stale,
    pid_namespace,
)

# On host h, pid namespace 7, pid 123 runs since tick 500; no other pid runs.
HERE = LocalFacts("h", 7, {123: 500}.get)


def nothing_runs(_pid: int) -> int | None:
    return None


def holder(**fields: object) -> Holder:
    defaults: dict[str, object] = dict(host="h", pid=123, since_ms=0, pid_ns=7, pid_start=500)
    return Holder(**{**defaults, **fields})  # type: ignore[arg-type]


def test_a_claim_nobody_holds_is_stale() -> None:
    assert is_stale(None, HERE)


def test_a_running_holder_here_is_not_stale() -> None:
    assert not is_stale(holder(), HERE)


def test_a_holder_whose_pid_no_longer_runs_here_is_stale() -> None:
    assert is_stale(holder(pid=124), HERE)


def test_a_pid_handed_out_again_names_another_process() -> None:
    assert is_stale(holder(pid_start=499), HERE)
    assert not is_stale(holder(pid_start=None), HERE)  # unknown start: the pid decides


def test_another_host_or_pid_namespace_is_never_judged_by_our_pids() -> None:
    assert not is_stale(holder(host="g", pid=124), HERE)
    assert not is_stale(holder(pid_ns=8, pid=124), HERE)  # a container on the host network
    assert not is_stale(holder(pid_ns=None, pid=124), HERE)
    assert not is_stale(holder(pid=124), LocalFacts("h", None, nothing_runs))


def test_a_holder_of_an_older_version_is_a_bare_pid_never_stale_before_expiry() -> None:
    old = Holder.decode(b"123")
    assert (old.host, old.pid) == ("", 123)
    assert not is_stale(Holder.decode(b"124"), LocalFacts("", None, nothing_runs))
    assert Holder.decode(b"not json").pid == 0


def test_a_holder_survives_its_encoding() -> None:
    one = holder(token="t")
    assert Holder.decode(one.encode().encode()) == one
    assert Holder.decode('{"host":"h","pid":1,"later":"field"}') == Holder("h", 1)


def test_the_refusal_is_one_line_naming_host_pid_and_since() -> None:
    error = ClaimHeldError("cm.requests", holder(since_ms=1_796_164_265_000), 15)
    assert str(error) == (
        "a consumer of topic cm.requests already runs on this Redis (host h, pid 123, since "
        "2026-12-01 22:31:05 UTC); stop it first, or wait until its record expires (15 s "
        "after its last beat)"
    )


def test_this_process_has_a_pid_namespace_and_runs() -> None:
    here = LocalFacts.here()
    assert here.pid_ns == pid_namespace() is not None
    pid = os.getpid()
    mine = holder(host=here.host, pid=pid, pid_ns=here.pid_ns, pid_start=here.start_time(pid))
    assert not is_stale(mine, here)
