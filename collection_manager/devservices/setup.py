"""``collection-manager setup``: everything the product needs from outside, installed once.

The jars of the local Kafka broker and of Spark's Kafka connector are resolved from Maven
Central into the cache, and Debian's ``redis-server``, ``prometheus`` (the server and
``promtool``, which test the shipped alert rules), ``prometheus-redis-exporter`` (the
real replicas of the real-fleet test) and ``chromium`` (the browser that the console's test
drives through Playwright; Playwright's own browser download is not used) are installed
when they are missing and this runs as root. Every step is skipped when its result is
already there, so a second run needs no network. Nothing else installs anything: the
product only checks.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
from collections.abc import Sequence

from collection_manager.config import InfraConfig
from collection_manager.config.machine import require_java
from collection_manager.core.errors import InfrastructureError
from collection_manager.devservices.kafka_broker import BROKER_COORDINATES, broker_jar_dir
from collection_manager.devservices.maven import resolve_jars
from spark_consumers.session import connector_coordinates, connector_dir

logger = logging.getLogger(__name__)


def prepare(config: InfraConfig, extra_spark_packages: Sequence[str] = ()) -> list[str]:
    """Resolves the broker's and Spark's jars and installs redis-server; says what is where."""
    done = [f"java: {require_java()}"]
    broker = broker_jar_dir(config)
    resolve_jars(BROKER_COORDINATES, broker, config.maven_timeout_s)
    done.append(f"kafka broker jars: {broker}")
    spark = connector_dir(config, extra_spark_packages)
    resolve_jars(connector_coordinates(extra_spark_packages), spark, config.maven_timeout_s)
    done.append(f"spark kafka connector jars: {spark}")
    done.append(f"redis-server: {_debian('redis-server', 'redis-server', 'or set CM_REDIS_URL')}")
    done.append(f"prometheus: {_debian('prometheus', 'promtool', 'for the alert rules tests')}")
    exporter = "prometheus-redis-exporter"
    done.append(f"{exporter}: {_debian(exporter, exporter, 'for the real-fleet test')}")
    done.append(f"chromium: {_debian('chromium', 'chromium', 'for the console test')}")
    return done


def _debian(package: str, program: str, otherwise: str) -> str:
    """Where ``program`` is, installing Debian's ``package`` first when it is missing."""
    found = shutil.which(program)
    if found:
        return found
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        return f"missing (install it, e.g. apt-get install {package}, {otherwise})"
    logger.info("%s is missing; installing Debian's package %s", program, package)
    _apt_install(package)
    return shutil.which(program) or "missing after apt-get install"


def _apt_install(package: str) -> None:
    # --no-install-recommends: prometheus would bring the node exporter, started as a
    # service where an init system runs.
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    install = ["apt-get", "install", "-y", "-qq", "--no-install-recommends", package]
    for cmd in (["apt-get", "update", "-qq"], install):
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
        if done.returncode != 0:
            raise InfrastructureError(
                f"'{' '.join(cmd)}' failed while installing {package}:\n{done.stderr[-2000:]}"
            )
