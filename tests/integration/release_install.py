"""An earlier release installed into a venv of its own, built from the repository's history.

The release's tree comes from ``git archive`` of its commit (``RELEASES``), so no tag and no
package index is needed; its dependencies install from pip's cache like this checkout's.
The venv is kept in the cache directory, one per release commit, and reused.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from collection_manager.config import InfraConfig, from_env
from tests.releases import ROOT, Release

READY = ".installed"


def release_bin(release: Release) -> Path:
    """The ``bin`` folder of a venv holding ``release`` (its ``collection-manager`` CLI)."""
    venv = from_env(InfraConfig).cache_dir / "releases" / f"{release.version}-{release.commit[:12]}"
    if not (venv / READY).exists():
        shutil.rmtree(venv, ignore_errors=True)
        _install(release, venv)
        (venv / READY).touch()
    return venv / "bin"


def _install(release: Release, venv: Path) -> None:
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    with tempfile.TemporaryDirectory() as scratch:
        archive = Path(scratch) / "release.tar"
        subprocess.run(
            ["git", "-C", str(ROOT), "archive", "-o", str(archive), release.commit], check=True
        )
        tree = Path(scratch) / "tree"
        with tarfile.open(archive) as tar:
            tar.extractall(tree, filter="data")
        pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-compile"]
        subprocess.run([*pip, "--disable-pip-version-check", str(tree)], check=True)
