"""Keeping PySpark's per-task set-up of a reused Python worker cheap.

Before every task, PySpark's worker calls ``importlib.invalidate_caches()``; on Python
3.11 that makes every ``zipimporter`` in ``sys.path_importer_cache`` read its archive's
central directory again, and Spark puts ``pyspark.zip``, py4j's zip and the spark-core jar
(15 MB) first on the workers' ``PYTHONPATH``, each cached under many package paths. After
every task its daemon runs a full ``gc.collect()``, which walks every object that pandas,
pyarrow and the rest left alive. Several tasks run per micro-batch; ``bench.python_worker``
measures the set-up per task with and without :func:`cheapen_next_task`.
"""

from __future__ import annotations

import gc
import sys
import zipimport


def cheapen_next_task() -> None:
    """Called as a task starts: the next task's cache invalidation and collection skip
    what is already loaded.

    Imports from the archives keep working: a dropped importer is created again (from
    zipimport's own directory cache) when an import needs it. Freezing moves the objects
    alive now, which are the worker's long-lived modules and caches (the previous task's
    garbage was collected after it), out of the collector's way; they are still freed by
    reference counting.
    """
    for path, finder in list(sys.path_importer_cache.items()):
        if isinstance(finder, zipimport.zipimporter):
            del sys.path_importer_cache[path]
    gc.freeze()
