"""How quiet Spark is: its JVM's log4j2 options, the JVM's standard error, py4j's logger.

A user sees the consumer's own lines; Spark's warnings are about its own workings, and
what fails reaches the consumer as its query's error. So by default Spark logs fatal
errors only (``-v`` gives ``CM_SPARK_LOG_LEVEL`` and whole stack traces), and with
``CM_LOG_FORMAT=json`` it writes JSON lines, as the Python side does. ``session.py``
applies these as it builds the session.
"""

from __future__ import annotations

import logging
import os
import subprocess
import threading
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from collection_manager.observability.logs import json_line

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# Spark's log4j2 configuration, given to the driver's JVM before it starts (its own
# defaults print a WARN and three lines of advice first): see the file.
LOG4J2_FILE = Path(__file__).with_name("log4j2.properties")
_LOG4J_LEVELS = ("ALL", "TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL", "OFF")


def spark_log_level(configured: str, verbose: bool) -> str:
    """The level of Spark's own log lines: ``configured`` (CM_SPARK_LOG_LEVEL) when this
    process logs at INFO (``-v``), else fatal errors only.

    Spark's warnings are about its own workings (a native library it lacks, a setting it
    ignores for streaming, a Kafka broker it cannot reach yet), and what fails reaches the
    consumer as its query's error: the consumer says in one line of its own what a user
    must know, an outage when it begins and when it ends, or the error it stops on.
    """
    level = configured.strip().upper()
    if verbose or level not in _LOG4J_LEVELS:
        return level  # an unknown level: Spark's setLogLevel names the valid ones
    return max(level, "FATAL", key=_LOG4J_LEVELS.index)


def log4j_options(level: str, verbose: bool, json_lines: bool = False) -> str:
    """The JVM options that give Spark's log4j2 :data:`LOG4J2_FILE`, at ``level``, as text
    or JSON lines; a Java exception is its message alone unless ``verbose``."""
    trace = "full" if verbose else "short.message"
    known = level in _LOG4J_LEVELS
    root = min(level, "WARN", key=_LOG4J_LEVELS.index) if known else "WARN"
    return (
        f"-Dlog4j2.configurationFile={LOG4J2_FILE} -Dcm.spark.log.root={root} "
        f"-Dcm.spark.log.level={level if known else 'WARN'} -Dcm.spark.log.trace={trace} "
        f"-Dcm.spark.log.appender={'json' if json_lines else 'text'}"
    )


def quiet_py4j(verbose: bool) -> None:
    """py4j's logger silent unless ``verbose``."""
    # py4j logs a Python callback's exception (a batch that failed on Redis) with its
    # traceback before handing it to the JVM, whose query then fails with it.
    logging.getLogger("py4j").setLevel(logging.NOTSET if verbose else logging.CRITICAL)


def quiet_session(session: SparkSession, level: str) -> None:
    """A started session's Spark at ``level``, with two warnings of clean runs left out."""
    session.sparkContext.setLogLevel(level)
    # At a trigger interval shorter than a batch, Spark warns "Current batch is falling
    # behind" after every batch, though nothing is wrong: the next one starts at once.
    # A batch's time is in cm_consumer_batch_duration_seconds instead.
    _log_errors_only(
        session, "org.apache.spark.sql.execution.streaming.runtime.ProcessingTimeExecutor"
    )
    # Stopping a query between two batches (query_watch.stop_between_batches) cancels its job
    # group while none of its jobs runs, and the scheduler then warns "Failed to cancel
    # job group ... Cannot find active jobs for it" on every clean stop, after stop()
    # returned. A job that fails reaches the query as its exception, so errors suffice.
    _log_errors_only(session, "org.apache.spark.scheduler.DAGScheduler")


def _log_errors_only(session: SparkSession, logger: str) -> None:
    jvm = session.sparkContext._jvm
    assert jvm is not None
    jvm.org.apache.logging.log4j.core.config.Configurator.setLevel(
        logger, jvm.org.apache.logging.log4j.Level.ERROR
    )


# The one line the JVM prints that no option turns off: Spark's launcher always adds
# --add-modules=jdk.incubator.vector (JavaModuleOptions), and the JVM then warns of it.
INCUBATOR_WARNING = b"WARNING: Using incubator modules: jdk.incubator.vector\n"


def launch_jvm_quietly(builder: Any, json_lines: bool = False) -> None:
    """Starts the driver's JVM (when none runs yet) with its standard error passed on by a
    thread that leaves out ``INCUBATOR_WARNING``: everything else the JVM, its executors
    and the Python workers write reaches this process's standard error as before (with
    ``json_lines``, a line that is no JSON object, a worker's or the JVM's own, becomes one).
    PySpark takes the gateway as it would have launched it (``popen_kwargs`` is its way to
    capture the JVM's output); the builder's options are the ones it would have passed."""
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    if SparkContext._gateway is not None:  # a session of this process started it already
        return
    conf = SparkConf().setAll(list(builder._options.items()))
    gateway = launch_gateway(conf, popen_kwargs={"stderr": subprocess.PIPE})
    SparkContext._ensure_initialized(gateway=gateway, conf=conf)
    threading.Thread(
        target=_pass_on, args=(gateway.proc.stderr, json_lines), name="jvm-stderr", daemon=True
    ).start()


def _pass_on(stream: IO[bytes], json_lines: bool) -> None:
    for line in iter(stream.readline, b""):
        if line != INCUBATOR_WARNING:
            if json_lines and not line.startswith(b"{"):
                text = line.decode(errors="replace").rstrip("\n")
                line = json_line(text, "spark.stderr", "WARNING" if "WARN" in text else "INFO")
            left = memoryview(line)
            while left:
                left = left[os.write(2, left) :]
