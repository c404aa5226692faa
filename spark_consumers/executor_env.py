"""The Python environment the executors of a Spark cluster run: packed once, shipped by Spark.

On a cluster the applier runs in Python workers beside each executor, which need this
project and its dependencies. They are not installed beside the workers: the driver packs
a virtual environment (the project and its runtime dependencies, at the versions the
driver runs) into an archive that Spark ships with ``spark.archives`` and unpacks in each
executor's directory, where the workers run its interpreter (``./cm_env/bin/python``).

The environment is built without any network: a venv of the driver's own base interpreter,
with the files of each installed distribution copied from the driver's environment.
The project's own requirements are taken with its ``consumer`` extra (pandas and pyarrow,
which the applier's Arrow batches need); its other extras (the server, the tests) are left
out, and of a dependency only the extras a requirement names (``redis[hiredis]``). pyspark
and py4j are left out, since Spark puts its own on the workers' path. The archive is named
after a fingerprint of what it holds, so a changed dependency or source file
makes a new one, and an unchanged project reuses it.

The venv's interpreter is a link to the driver machine's base interpreter: executors must
have Python at the same path (a standalone cluster on these machines, or one image for
all, as on Kubernetes). docs/howto/spark-cluster.md says what to ship elsewhere.
"""

from __future__ import annotations

import hashlib
import importlib.metadata as metadata
import logging
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

from collection_manager.core.errors import InfrastructureError

logger = logging.getLogger(__name__)

PROJECT = "collection-manager"
PACKAGES = ("collection_manager", "spark_consumers", "schemas", "producers")
ALIAS = "cm_env"
"""The folder Spark unpacks the archive into, in each executor's working directory."""
EXECUTOR_PYTHON = f"./{ALIAS}/bin/python"
# Spark ships its own pyspark and py4j to every Python worker.
_PROVIDED = frozenset({"pyspark", "py4j"})
# A requirement's name and the extras it asks for: ``redis[hiredis]>=5``.
_REQUIREMENT = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[([^\]]*)\])?")
_EXTRA = re.compile(r"""extra\s*==\s*["']([^"']+)["']""")
ROLE = "consumer"
"""The project's extra whose requirements the executors run (the applier's)."""


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def runtime_distributions(
    root: str = PROJECT, root_extra: str = ROLE
) -> list[metadata.Distribution]:
    """``root``'s installed runtime dependencies with its ``root_extra``, transitively, with
    the extras each requirement names (``redis[hiredis]``) and no other, without what Spark
    provides; sorted by name."""
    found: dict[str, metadata.Distribution] = {}
    pending = [(root, {root_extra})]
    while pending:
        wanted, extras = pending.pop()
        name = _normal(wanted)
        if name in found or name in _PROVIDED:
            continue
        try:
            distribution = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue  # a requirement whose marker does not apply here
        found[name] = distribution
        for requirement in distribution.requires or []:
            match, marker = _REQUIREMENT.match(requirement), _EXTRA.search(requirement)
            if match and (marker is None or marker.group(1) in extras):
                named = {e.strip() for e in (match.group(2) or "").split(",") if e.strip()}
                pending.append((match.group(1), named))
    found.pop(_normal(root), None)  # the project itself is copied from its packages
    return [found[name] for name in sorted(found)]


def _package_dir(package: str) -> Path:
    module = __import__(package)
    return Path(module.__file__ or "").parent


def _project_files() -> Iterator[tuple[Path, Path]]:
    """(source, path inside site-packages) of every file of the project's packages."""
    for package in PACKAGES:
        root = _package_dir(package)
        for path in sorted(root.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                yield path, Path(package) / path.relative_to(root)


def _distribution_files(
    distributions: Iterable[metadata.Distribution],
) -> Iterator[tuple[Path, Path]]:
    for distribution in distributions:
        for file in distribution.files or []:
            source = Path(str(distribution.locate_file(file)))
            # Scripts and data files live outside site-packages; executors need none.
            if not file.parts or file.parts[0] == ".." or "__pycache__" in file.parts:
                continue
            if source.is_file():
                yield source, Path(str(file))


def fingerprint(
    project: Iterable[tuple[Path, Path]], distributions: Iterable[metadata.Distribution]
) -> str:
    """A digest of the interpreter's version, each dependency's name and version, and each
    project file's place and content (the project is often installed editable)."""
    digest = hashlib.sha256(sys.version.encode())
    for distribution in distributions:
        digest.update(f"{distribution.metadata['Name']}=={distribution.version}\0".encode())
    for source, target in project:
        digest.update(str(target).encode() + b"\0")
        digest.update(hashlib.sha256(source.read_bytes()).digest())
    return digest.hexdigest()[:16]


def executor_archive(cache_dir: Path) -> Path:
    """The archive for ``spark.archives`` (built into ``cache_dir`` when missing).

    Raises:
        InfrastructureError: when the venv cannot be made.
    """
    project, distributions = list(_project_files()), runtime_distributions()
    archive = cache_dir / "executor-env" / f"{fingerprint(project, distributions)}.tar.gz"
    if archive.exists():
        return archive
    files = [*project, *_distribution_files(distributions)]
    archive.parent.mkdir(parents=True, exist_ok=True)
    logger.info("packing the executors' Python environment into %s", archive)
    with tempfile.TemporaryDirectory(dir=archive.parent) as work:
        env = Path(work) / ALIAS
        _make_venv(env)
        site = _site_packages(env)
        for source, target in files:
            (site / target).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, site / target)
        partial = Path(work) / archive.name
        with tarfile.open(partial, "w:gz", compresslevel=1) as tar:
            # Members at the top: Spark unpacks the archive into the folder ALIAS itself.
            for member in sorted(env.iterdir()):
                tar.add(member, arcname=member.name)
        partial.replace(archive)  # complete or absent, never half written
    return archive


def _make_venv(env: Path) -> None:
    command = [sys.executable, "-m", "venv", "--without-pip", str(env)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise InfrastructureError(
            f"cannot make the executors' environment ({' '.join(command)}): "
            f"{done.stderr.strip()[-500:]}"
        )


def _site_packages(env: Path) -> Path:
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    return env / "lib" / version / "site-packages"
