"""What the machine must provide: Java 17+, and jars that ``collection-manager setup`` cached.

Nothing here installs or downloads anything: the product only checks, and says which
command provides what is missing.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from collection_manager.core.errors import InfrastructureError

SETUP_HINT = "run `collection-manager setup` once (`make test` and `make demo` run it)"
_RESOLVED_MARKER = ".resolved"


def require_java() -> str:
    """The ``java`` executable, checked to be version 17 or newer."""
    java = shutil.which("java")
    if java is None:
        raise InfrastructureError(
            "Java 17+ is needed to run Spark and the local Kafka broker; install it "
            "(Debian: apt-get install openjdk-17-jre-headless)"
        )
    out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30)
    match = re.search(r'version "(\d+)', out.stderr + out.stdout)
    if match is None or int(match.group(1)) < 17:
        raise InfrastructureError(f"Java 17+ is needed, {java} says: {out.stderr.strip()}")
    return java


def cached_jars(coordinates: Sequence[str], dest: Path) -> list[Path] | None:
    """The jars of ``coordinates`` resolved into ``dest`` earlier, or None when they are not."""
    marker = dest / _RESOLVED_MARKER
    if marker.exists() and marker.read_text() == "\n".join(coordinates):
        return sorted(dest.glob("*.jar"))
    return None


def record_resolved(coordinates: Sequence[str], dest: Path) -> None:
    """Marks ``dest`` as holding every jar of ``coordinates`` (after a complete resolution)."""
    (dest / _RESOLVED_MARKER).write_text("\n".join(coordinates))


def require_jars(coordinates: Sequence[str], dest: Path, what: str) -> list[Path]:
    """The cached jars of ``coordinates``; a one-line error naming ``what`` when missing."""
    jars = cached_jars(coordinates, dest)
    if jars is None:
        raise InfrastructureError(f"{what} is not in {dest}: {SETUP_HINT}")
    return jars
