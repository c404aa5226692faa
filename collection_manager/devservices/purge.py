"""``infra down --purge``: what the local services, the demo and the consumer left in the
state directory, removed for a clean start, but never the jar cache."""

from __future__ import annotations

import shutil
from pathlib import Path

from collection_manager.config import InfraConfig
from collection_manager.core.errors import InfrastructureError

# Kept: the locks that concurrent `infra up`s and test runs hold (a lock file removed
# under its holder would let a second one take a new lock beside it).
_KEPT_NAMES = ("lock",)
_KEPT_SUFFIX = ".lock"


def purge_targets(config: InfraConfig) -> list[Path]:
    """What a purge removes: each entry of the state directory (the services' data and logs,
    their record, the replicated deployment, the demo's state, the consumer's checkpoints,
    Spark's scratch space), but the locks and, when it lies inside, the jar cache."""
    try:
        entries = sorted(config.state_dir.iterdir())
    except FileNotFoundError:
        return []
    cache = config.cache_dir.resolve()
    return [
        entry
        for entry in entries
        if entry.name not in _KEPT_NAMES
        and not entry.name.endswith(_KEPT_SUFFIX)
        and not _holds(entry.resolve(), cache)
    ]


def _holds(entry: Path, cache: Path) -> bool:
    return entry == cache or entry in cache.parents


def purge(targets: list[Path]) -> None:
    """Removes ``targets`` (from :func:`purge_targets`), folders with all they hold; one
    already gone is no error.

    Raises:
        InfrastructureError: naming the entry that could not be removed, and why.
    """
    for target in targets:
        try:
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target)
            else:
                target.unlink(missing_ok=True)
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise InfrastructureError(f"cannot remove {target}: {exc.strerror}") from exc
