"""The per-task tuning of PySpark's Python workers (no Spark needed)."""

from __future__ import annotations

import gc
import importlib
import sys
import zipfile
import zipimport
from collections.abc import Iterator
from pathlib import Path

import pytest

from spark_consumers.python_worker import cheapen_next_task


@pytest.fixture
def zipped_module(tmp_path: Path) -> Iterator[Path]:
    archive = tmp_path / "deps.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("cm_zipped_probe.py", "VALUE = 42\n")
    sys.path.insert(0, str(archive))
    try:
        yield archive
    finally:
        sys.path.remove(str(archive))
        sys.path_importer_cache.pop(str(archive), None)
        sys.modules.pop("cm_zipped_probe", None)
        gc.unfreeze()


def test_zip_importers_leave_the_cache_and_imports_from_zips_still_work(
    zipped_module: Path,
) -> None:
    assert importlib.import_module("cm_zipped_probe").VALUE == 42
    assert isinstance(sys.path_importer_cache[str(zipped_module)], zipimport.zipimporter)

    cheapen_next_task()

    assert not any(isinstance(f, zipimport.zipimporter) for f in sys.path_importer_cache.values())
    assert gc.get_freeze_count() > 0
    sys.modules.pop("cm_zipped_probe")
    importlib.invalidate_caches()
    assert importlib.import_module("cm_zipped_probe").VALUE == 42
