"""Who may touch a Redis record, read from the source (``tests/code_counts.py``): raw hash
commands only in the modules that own the records, the change log paged by its one reader,
and the store's facade kept thin."""

from __future__ import annotations

from pathlib import Path

from tests.code_counts import (
    HASH_OWNERS,
    log_paging_sites,
    raw_hash_calls,
    store_methods,
)

# Files outside storage/ and control/ that still call hash commands, each with its bound
# (none now: the HTTP feed's catalog check went to storage/catalog.raw_record). A bound may
# only fall.
ALLOWED: dict[str, int] = {}
# RedisStore keeps the methods the HTTP API and the benchmarks call (issue 53, item 1).
MAX_FACADE_METHODS = 20


def test_raw_hash_commands_stay_inside_the_owners_of_the_records() -> None:
    found = raw_hash_calls()
    over = {name: n for name, n in found.items() if n > ALLOWED.get(name, 0)}
    assert over == {}, f"call the module in {HASH_OWNERS} that owns the record instead"


def test_the_allowed_files_are_still_there_and_their_bounds_are_met() -> None:
    found = raw_hash_calls()
    assert {name: found.get(name, 0) for name in ALLOWED} == ALLOWED  # lower one that fell


def test_a_raw_hash_command_outside_the_owners_is_found(tmp_path: Path) -> None:
    raw = "def f(client):\n    client.hset('k', 'f', 1)\n    return client.hgetall('k')\n"
    for package in ("storage", "control", "reading"):
        (tmp_path / "collection_manager" / package).mkdir(parents=True)
        (tmp_path / "collection_manager" / package / "record.py").write_text(raw)
    assert raw_hash_calls(tmp_path) == {"collection_manager/reading/record.py": 2}


def test_only_the_change_log_s_reader_pages_a_log() -> None:
    files = {site.rsplit(":", 1)[0] for site in log_paging_sites()}
    assert files == {"collection_manager/storage/change_log.py"}


def test_the_store_s_facade_stays_thin() -> None:
    assert len(store_methods()) <= MAX_FACADE_METHODS
