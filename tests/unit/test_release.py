"""What ``--version`` names: the version and the commit a release was built from."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

import collection_manager
from collection_manager import release


def test_an_installed_checkout_names_its_head() -> None:
    checkout = Path(collection_manager.__file__).resolve().parent.parent
    head = subprocess.run(
        ["git", "-C", str(checkout), "rev-parse", "--short=12", "HEAD"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    release.commit.cache_clear()  # a commit since another test asked would be stale
    assert release.commit().removesuffix("-dirty") == head


def test_a_release_names_the_commit_its_build_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "collection_manager"
    package.mkdir()
    (package / release.COMMIT_FILE).write_text("0123456789ab\n")
    monkeypatch.setattr(release.resources, "files", lambda _package: package)
    release.commit.cache_clear()
    try:
        assert release.commit() == "0123456789ab"
        assert release.describe() == f"{release.version()} (commit 0123456789ab)"
    finally:
        release.commit.cache_clear()


def test_a_checkout_with_local_changes_is_marked_dirty(tmp_path: Path) -> None:
    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / "f").write_text("a")
    git("add", "f")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "one")
    clean = release._checkout_commit(tmp_path)
    assert clean is not None and len(clean) == 12
    (tmp_path / "f").write_text("b")
    assert release._checkout_commit(tmp_path) == clean + "-dirty"
    assert release._checkout_commit(tmp_path / "nosuch") is None
