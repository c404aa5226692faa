"""Which release this is: the package's version and the commit it was built from.

A wheel or sdist made by ``make release`` carries its commit in the ``COMMIT`` file of this
package (written into the build's own copy of the tree, never into the checkout). An
install from a checkout (``pip install -e``) has no such file; its commit is the checkout's
``HEAD``, marked ``-dirty`` when the work tree differs from it.
"""

from __future__ import annotations

import functools
import importlib.metadata
import subprocess
from importlib import resources
from pathlib import Path

import collection_manager

COMMIT_FILE = "COMMIT"
UNKNOWN = "unknown"


def version() -> str:
    """The installed package's version (``pyproject.toml``), or the source's own."""
    try:
        return importlib.metadata.version("collection-manager")
    except importlib.metadata.PackageNotFoundError:  # run from a checkout, not installed
        return collection_manager.__version__


def _git(checkout: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "-C", str(checkout), *args], capture_output=True, text=True, timeout=10
    )


def _checkout_commit(checkout: Path) -> str | None:
    try:
        head = _git(checkout, "rev-parse", "--short=12", "HEAD")
        if head.returncode != 0:
            return None
        dirty = _git(checkout, "status", "--porcelain", "--untracked-files=no").stdout.strip()
    except (OSError, subprocess.SubprocessError):  # no git on this machine
        return None
    return head.stdout.strip() + ("-dirty" if dirty else "")


@functools.cache
def commit() -> str:
    """The commit this install was built from (12 hex digits), or ``unknown``."""
    shipped = resources.files(collection_manager).joinpath(COMMIT_FILE)
    if shipped.is_file():
        return shipped.read_text(encoding="utf-8").strip()
    checkout = Path(collection_manager.__file__).resolve().parent.parent
    if (checkout / ".git").exists():
        return _checkout_commit(checkout) or UNKNOWN
    return UNKNOWN


def describe() -> str:
    """``0.1.0 (commit 1a2b3c4d5e6f)``: what ``--version`` prints after the program's name."""
    return f"{version()} (commit {commit()})"
