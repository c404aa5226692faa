"""A SparkSession with Spark's Kafka source on its classpath, from the jars setup cached.

Where its Python workers and scratch files go is set here; how quiet Spark's logs are, in
``spark_logs.py``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import sys
import urllib.parse
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from collection_manager.config import SPARK_VERSION, InfraConfig, LogConfig, SparkConfig, from_env
from collection_manager.config.machine import require_jars, require_java
from collection_manager.config.services import pid_alive
from collection_manager.core.errors import InfrastructureError
from spark_consumers.executor_env import ALIAS, EXECUTOR_PYTHON, executor_archive
from spark_consumers.spark_logs import (
    launch_jvm_quietly,
    log4j_options,
    quiet_py4j,
    quiet_session,
    spark_log_level,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

logger = logging.getLogger(__name__)

CONNECTOR = f"org.apache.spark:spark-sql-kafka-0-10_2.13:{SPARK_VERSION}"
SAFE_PATH = "PYTHONSAFEPATH"
_VERSIONED_JAR = re.compile(r"^(?P<artifact>.+?)-\d[\w.]*(-[a-z]+)?\.jar$")


# Option names whose values Spark masks (its default masks only "url").
SECRET_OPTIONS = r"(?i)url|jaas|password|secret|keystore\.key"


def _artifact(jar: Path) -> str:
    match = _VERSIONED_JAR.match(jar.name)
    return match.group("artifact") if match else jar.stem


def _pyspark_jars_dir() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent / "jars"


def connector_coordinates(extra_packages: Sequence[str] = ()) -> list[str]:
    """The Maven coordinates to put on Spark's classpath: the connector and ``extra_packages``."""
    return [CONNECTOR, *extra_packages]


def connector_dir(infra: InfraConfig, extra_packages: Sequence[str] = ()) -> Path:
    """Where ``collection-manager setup`` resolves :func:`connector_coordinates` to."""
    suffix = "".join(f"+{p.split(':')[1]}" for p in extra_packages)
    return infra.cache_dir / f"spark-kafka-{SPARK_VERSION}{suffix}"


def connector_jars(infra: InfraConfig, extra_packages: Sequence[str] = ()) -> list[Path]:
    """The Kafka connector and those of its dependencies that pyspark does not ship.

    Resolved by setup with Maven rather than at run time with ``spark.jars.packages``:
    Spark's Ivy resolution trusts a local Maven repository holding only a pom and then fails
    offline, and a job must not download anything when it starts. Jars pyspark already
    ships (Scala, Hadoop client, slf4j, ...) are left out so only one version is on the
    classpath.
    """
    jars = require_jars(
        connector_coordinates(extra_packages),
        connector_dir(infra, extra_packages),
        f"Spark's Kafka connector for pyspark {SPARK_VERSION}",
    )
    shipped = {_artifact(jar) for jar in _pyspark_jars_dir().glob("*.jar")}
    return [jar for jar in jars if _artifact(jar) not in shipped]


def _check_pyspark_version() -> None:
    import pyspark

    if pyspark.__version__ != SPARK_VERSION:
        raise InfrastructureError(
            f"pyspark {pyspark.__version__} is installed but the Kafka connector is pinned to "
            f"{SPARK_VERSION}; reinstall the project (pip install -e .)"
        )


def build_spark_session(
    spark: SparkConfig, infra: InfraConfig, app_name: str, extra_packages: Sequence[str] = ()
) -> SparkSession:
    """Creates (or returns the running) SparkSession with the Kafka source available.

    Args:
        extra_packages: more ``group:artifact:version`` coordinates to put on the classpath
            (e.g. spark-avro for a benchmark), resolved like the connector.
    """
    from pyspark.sql import SparkSession

    require_java()
    _check_pyspark_version()
    verbose = logging.getLogger().isEnabledFor(logging.INFO)
    json_lines = from_env(LogConfig).log_format == "json"
    level = spark_log_level(spark.spark_log_level, verbose)
    logs = log4j_options(level, verbose, json_lines)
    quiet_py4j(verbose)
    jars = ",".join(str(jar) for jar in connector_jars(infra, extra_packages))
    builder = _python_workers(SparkSession.builder.master(spark.spark_master), spark, infra)
    if _local(spark) or _on_loopback(spark.spark_master):
        builder = _on_this_machine(builder, spark, infra, logs)
    else:
        builder = _on_a_cluster(builder, spark, logs)
    with _jvm_working_dir(infra.state_dir / "spark-driver"):
        session = _create(builder, spark, app_name, jars, verbose, json_lines)
    quiet_session(session, level)
    return session


def _local(spark: SparkConfig) -> bool:
    return spark.spark_master.startswith("local")


def _python_workers(builder: Any, spark: SparkConfig, infra: InfraConfig) -> Any:
    """``builder`` and this process's environment set for the interpreter the Python
    workers run, and for the ``sys.path`` it starts with."""
    if not _local(spark) and spark.spark_ship_environment:
        # Executors run the packed environment's interpreter, wherever they are.
        archive = executor_archive(infra.cache_dir)
        builder = builder.config("spark.archives", f"{archive}#{ALIAS}")
        os.environ["PYSPARK_PYTHON"] = EXECUTOR_PYTHON
    # Local Python workers must run the interpreter that has this project installed.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    # PySpark starts its workers with ``python -m pyspark.daemon``, which puts the working
    # directory first on sys.path: a ``schemas/`` folder there would shadow the product's.
    # PYTHONSAFEPATH (Python >= 3.11) leaves it out. The local JVM, and so its workers,
    # inherits os.environ; executors of a cluster get it through spark.executorEnv.
    os.environ[SAFE_PATH] = "1"
    return builder


def _on_this_machine(builder: Any, spark: SparkConfig, infra: InfraConfig, logs: str) -> Any:
    """``builder`` for a local session or a cluster on loopback: ``logs`` (the log4j
    options) for the driver and the executors."""
    # Spark binds to the host's first interface unless told otherwise; keep all of
    # its traffic (driver, block manager, Python workers) on loopback.
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = builder.config("spark.driver.host", "127.0.0.1").config(
        "spark.driver.bindAddress", "127.0.0.1"
    )
    # On this machine, scratch files go to the state directory, not /tmp (a cluster's
    # operators choose its local dirs; standalone Workers pass their own to executors).
    scratch = _scratch_dir(infra.state_dir / "spark-scratch")
    java_options = f"{spark.spark_java_options} -Djava.io.tmpdir={scratch} {logs}"
    builder = builder.config("spark.local.dir", str(scratch)).config(
        "spark.driver.extraJavaOptions", java_options
    )
    builder = builder.config(UNIX_SOCKETS, str(unix_sockets_fit(scratch)).lower())
    # A local cluster's executors run on this machine, where the file is.
    executor_options = f"{spark.spark_java_options} {logs}"
    return builder.config("spark.executor.extraJavaOptions", executor_options)


def _on_a_cluster(builder: Any, spark: SparkConfig, logs: str) -> Any:
    """``builder`` for a remote cluster: ``logs`` (the log4j options) for the driver only."""
    builder = builder.config(UNIX_SOCKETS, "true")  # in each machine's java.io.tmpdir
    driver_options = f"{spark.spark_java_options} {logs}"
    builder = builder.config("spark.driver.extraJavaOptions", driver_options)
    # A remote cluster's executors log as its operators configured them.
    return builder.config("spark.executor.extraJavaOptions", spark.spark_java_options)


# The JVM talks to its Python workers (and to this driver) over Unix sockets rather than
# TCP on loopback: a job of four mapInPandas tasks on local[2] took 118 ms against 197 ms
# over TCP in the same run (bench/python_sockets.py, 2026-11-26); the consumer's batches
# at 10,000 updates/s went from 291 to 234 ms (bench/batch_breakdown.py, before and
# after). Spark puts the sockets in java.io.tmpdir, here the scratch folder, named
# ".<uuid>.sock".
UNIX_SOCKETS = "spark.python.unix.domain.socket.enabled"
# sun_path holds 108 bytes with the terminating NUL, but Java's UnixDomainSockets refused
# a path of 107 bytes ("Unix domain path too long": every batch failed) and took one of
# 106, on a local[1] session (2026-11-27; found by tests/integration/test_rolling_upgrade.py
# when a consumer's pid made its scratch path one byte longer than another's).
SOCKET_PATH_BYTES = 106
SOCKET_NAME_BYTES = len("/.00000000-0000-0000-0000-000000000000.sock")


def unix_sockets_fit(folder: Path) -> bool:
    """Whether Spark's socket files in ``folder`` fit a Unix socket path; when they do
    not (a deep CM_STATE_DIR), the workers talk TCP as before, and a warning says why."""
    fits = len(os.fsencode(folder)) + SOCKET_NAME_BYTES <= SOCKET_PATH_BYTES
    if not fits:
        logger.warning(
            "Spark's Python workers use TCP on loopback, which is slower: the scratch folder "
            "%s is too long for a Unix socket path (%d bytes at most with the socket's name)",
            folder,
            SOCKET_PATH_BYTES,
        )
    return fits


CHECKPOINT_FILE_MANAGER = (
    "org.apache.spark.sql.execution.streaming.checkpointing.FileSystemBasedCheckpointFileManager"
)


def _create(
    builder: Any,
    spark: SparkConfig,
    app_name: str,
    jars: str,
    verbose: bool = True,
    json_lines: bool = False,
) -> SparkSession:
    builder = (
        builder.appName(app_name)
        .config("spark.jars", jars)
        .config("spark.driver.memory", spark.spark_driver_memory)
        .config(f"spark.executorEnv.{SAFE_PATH}", "1")
        .config("spark.ui.enabled", "false")
        # Kafka credentials are source options (kafka.sasl.jaas.config, a client key):
        # Spark masks the options these match wherever it shows a plan.
        .config("spark.sql.redaction.options.regex", SECRET_OPTIONS)
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        # The Python workers' daemon, without a traceback when the JVM hangs up on a
        # worker as the consumer stops (worker_daemon.py).
        .config("spark.python.daemon.module", "spark_consumers.worker_daemon")
        # Writes the checkpoint's offset and commit logs through Hadoop's FileSystem (a
        # temporary file, then a rename) rather than FileContext: a batch's two log writes
        # went from about 108 to 25 ms at 10,000 updates/s (bench/batch_breakdown.py).
        # Redis's progress is the truth (startup.py), so a checkpoint lost or cut short
        # costs a replay of what the watermarks skip, never a request.
        .config("spark.sql.streaming.checkpointFileManagerClass", CHECKPOINT_FILE_MANAGER)
        # Kafka timestamps reach the applier as naive pandas times in this zone, which
        # the applier reads as UTC (publish-to-visible latency).
        .config("spark.sql.session.timeZone", "UTC")
    )
    if not verbose or json_lines:
        launch_jvm_quietly(builder, json_lines)
    session: SparkSession = builder.getOrCreate()
    return session


def _scratch_dir(parent: Path) -> Path:
    """This process's folder for Spark's scratch files (block manager, shuffle, native
    libraries), which Spark and the JVM otherwise leave in /tmp when killed. Folders of
    processes that no longer run are removed first, so kills leave nothing behind for long.
    """
    parent.mkdir(parents=True, exist_ok=True)
    for stale in parent.iterdir():
        if stale.name.isdigit() and not pid_alive(int(stale.name)):
            shutil.rmtree(stale, ignore_errors=True)
    mine = parent / str(os.getpid())
    mine.mkdir(exist_ok=True)
    return mine


def _on_loopback(master: str) -> bool:
    """Whether a cluster's master URL names this machine's loopback (a local cluster)."""
    host = urllib.parse.urlsplit(master).hostname or ""
    return host == "localhost" or host.startswith("127.")


@contextlib.contextmanager
def _jvm_working_dir(path: Path) -> Iterator[None]:
    """Starts the driver's JVM (and so its local Python workers) in ``path``.

    Spark writes an ``artifacts/`` folder into its working directory, and local Python
    workers start there too: a user's directory would get a stray folder, and a folder
    in it named like one of our packages would shadow the installed one on the workers.
    The JVM keeps the directory it was started in; this process changes back at once.
    """
    path.mkdir(parents=True, exist_ok=True)
    previous = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(previous)
