"""PySpark's Python worker daemon, quiet when the JVM hangs up on a worker.

When the consumer stops, the JVM closes its sockets to the Python workers, sometimes
while the daemon is still handing a forked worker its first answer. The worker's flush
then raises ``BrokenPipeError`` and the daemon prints its traceback to the consumer's
stderr (``traceback.print_exc()`` in ``pyspark.daemon.manager``): a traceback for a clean
stop, which a user must never see. The JVM already knows the worker is gone (it closed
the socket; a task it still wanted is retried), so a hang-up is left unprinted here and
every other failure is printed as before.

With ``CM_LOG_FORMAT=json`` the workers' log records are JSON lines too, as the driver's
are (a worker inherits the driver's environment); as text they stay the bare messages
that Python prints of a process whose logging nobody configured.

Spark runs it in place of ``pyspark.daemon`` (``spark.python.daemon.module``).
"""

from __future__ import annotations

import logging
import sys
import traceback
from types import SimpleNamespace

from collection_manager.config import LogConfig, from_env
from collection_manager.observability import logs

# The JVM end of the worker's socket went away.
HANG_UPS = (BrokenPipeError, ConnectionResetError)


def print_unless_hang_up() -> None:
    """``traceback.print_exc`` for the exception being handled, unless it is a hang-up."""
    if not isinstance(sys.exc_info()[1], HANG_UPS):
        traceback.print_exc()


def main() -> None:
    import pyspark.daemon

    if from_env(LogConfig).log_format == "json":
        logs.configure(logging.WARNING, "json")

    # pyspark.daemon reaches print_exc through its module global ``traceback``.
    pyspark.daemon.traceback = SimpleNamespace(  # type: ignore[assignment]
        print_exc=print_unless_hang_up, format_exc=traceback.format_exc
    )
    pyspark.daemon.manager()


if __name__ == "__main__":
    main()
