"""The project's releases (``RELEASES``) and their files, read from the repository's history.

``RELEASES`` names each release's commit, so this works in a clone without tags.
"""

from __future__ import annotations

import dataclasses
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclasses.dataclass(frozen=True)
class Release:
    """One line of ``RELEASES``: a version and the commit of its tag."""

    version: str
    commit: str

    def file(self, path: str) -> str | None:
        """The text of ``path`` (from the repository's root) in this release, or None."""
        shown = subprocess.run(
            ["git", "-C", str(ROOT), "show", f"{self.commit}:{path}"],
            capture_output=True,
            text=True,
        )
        return shown.stdout if shown.returncode == 0 else None

    def files(self, folder: str) -> list[str]:
        """The paths of the files under ``folder`` in this release."""
        listed = subprocess.run(
            ["git", "-C", str(ROOT), "ls-tree", "-r", "--name-only", self.commit, folder],
            capture_output=True,
            text=True,
            check=True,
        )
        return listed.stdout.split()


def releases() -> list[Release]:
    """Every release in ``RELEASES``, oldest first."""
    lines = (ROOT / "RELEASES").read_text().splitlines()
    return [Release(*line.split()) for line in lines if line and not line.startswith("#")]
