"""Resolves jars from Maven Central into the cache with Maven (for `collection-manager setup`)."""

from __future__ import annotations

import logging
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from collection_manager.config.machine import cached_jars, record_resolved
from collection_manager.core.errors import InfrastructureError

logger = logging.getLogger(__name__)

_POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>collection-manager</groupId>
  <artifactId>jars</artifactId>
  <version>1</version>
  <dependencies>
{dependencies}
  </dependencies>
</project>
"""
_DEPENDENCY = (
    "    <dependency><groupId>{0}</groupId><artifactId>{1}</artifactId>"
    "<version>{2}</version></dependency>"
)


def _pom(coordinates: Sequence[str]) -> str:
    deps = []
    for coordinate in coordinates:
        parts = coordinate.split(":")
        if len(parts) != 3:
            raise ValueError(f"expected group:artifact:version, got {coordinate!r}")
        deps.append(_DEPENDENCY.format(*parts))
    return _POM.format(dependencies="\n".join(deps))


def resolve_jars(
    coordinates: Sequence[str], dest: Path, timeout_s: float, maven_args: Sequence[str] = ()
) -> list[Path]:
    """Copies the runtime jars of ``coordinates`` (with dependencies) into ``dest``.

    A marker file makes later calls return the cached jars without running Maven.
    """
    cached = cached_jars(coordinates, dest)
    if cached is not None:
        return cached
    mvn = _require_mvn()
    _write_pom(coordinates, dest)
    _copy_dependencies(mvn, coordinates, dest, timeout_s, maven_args)
    record_resolved(coordinates, dest)
    return sorted(dest.glob("*.jar"))


def _require_mvn() -> str:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise InfrastructureError(
            "Maven (mvn) is needed once to fetch jars from Maven Central; install it "
            "(Debian: apt-get install maven) or set CM_KAFKA_BOOTSTRAP to an existing broker"
        )
    return mvn


def _write_pom(coordinates: Sequence[str], dest: Path) -> None:
    """``dest/pom.xml`` depending on ``coordinates``, in a ``dest`` without older jars."""
    dest.mkdir(parents=True, exist_ok=True)
    for old in dest.glob("*.jar"):
        old.unlink()
    (dest / "pom.xml").write_text(_pom(coordinates))


def _copy_dependencies(
    mvn: str, coordinates: Sequence[str], dest: Path, timeout_s: float, maven_args: Sequence[str]
) -> None:
    """Runs Maven on ``dest/pom.xml``: every runtime jar it needs, copied into ``dest``."""
    cmd = [
        mvn,
        "-B",
        "-q",
        *maven_args,
        "-f",
        str(dest / "pom.xml"),
        "dependency:copy-dependencies",
        "-DincludeScope=runtime",
        f"-DoutputDirectory={dest}",
    ]
    logger.info("resolving %s from Maven Central into %s", ", ".join(coordinates), dest)
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired as exc:
        raise InfrastructureError(
            f"Maven did not finish resolving {coordinates} within {timeout_s:.0f} s; "
            "is Maven Central reachable?"
        ) from exc
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).splitlines()[-15:])
        raise InfrastructureError(
            f"Maven could not resolve {', '.join(coordinates)} (is Maven Central reachable "
            f"from here?). Its output ends:\n{tail}"
        )
