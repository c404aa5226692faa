"""``collection-manager setup``: what the installed roles need from outside, installed once.

The jars of the local Kafka broker (``infra up``) are resolved from Maven Central into the
cache, and those of Spark's Kafka connector too where the consumer role is installed
(collection_manager/config/roles.py); Debian's ``redis-server`` is installed when it is
missing and this runs as root. What only the tests use (a browser, Prometheus) is the test
set-up's (tests/setup.py), which installs it through :func:`debian_program`. Every step is
skipped when its result is already there, so a second run needs no network. Nothing else
installs anything: the product only checks.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
from collections.abc import Sequence

from collection_manager.config import InfraConfig, roles
from collection_manager.config.machine import require_java
from collection_manager.core.errors import InfrastructureError
from collection_manager.devservices.kafka_broker import BROKER_COORDINATES, broker_jar_dir
from collection_manager.devservices.maven import resolve_jars
from spark_consumers.session import connector_coordinates, connector_dir

logger = logging.getLogger(__name__)


def prepare(config: InfraConfig, extra_spark_packages: Sequence[str] = ()) -> list[str]:
    """Resolves the jars and installs redis-server that the installed roles need; says what
    is where."""
    done = [f"java: {require_java()}"]
    broker = broker_jar_dir(config)
    resolve_jars(BROKER_COORDINATES, broker, config.maven_timeout_s)
    done.append(f"kafka broker jars: {broker}")
    if roles.installed("consumer"):
        spark = connector_dir(config, extra_spark_packages)
        resolve_jars(connector_coordinates(extra_spark_packages), spark, config.maven_timeout_s)
        done.append(f"spark kafka connector jars: {spark}")
    else:
        done.append("spark kafka connector jars: not needed (the consumer role is not installed)")
    redis = debian_program("redis-server", "redis-server", "or set CM_REDIS_URL")
    done.append(f"redis-server: {redis}")
    return done


def debian_program(package: str, program: str, otherwise: str) -> str:
    """Where ``program`` is, installing Debian's ``package`` first when it is missing (as
    root, where apt-get is); else a line saying how to install it, and ``otherwise``."""
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
