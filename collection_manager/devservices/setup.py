"""``collection-manager setup``: everything the product needs from outside, installed once.

The jars of the local Kafka broker and of Spark's Kafka connector are resolved from Maven
Central into the cache, and Debian's ``redis-server`` is installed when it is missing and
this runs as root. Every step is skipped when its result is already there, so a second
run needs no network. Nothing else installs anything: the product only checks.
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Sequence

from collection_manager.config import InfraConfig
from collection_manager.config.machine import require_java
from collection_manager.devservices.kafka_broker import BROKER_COORDINATES, broker_jar_dir
from collection_manager.devservices.maven import resolve_jars
from collection_manager.devservices.redis_server import apt_install_redis
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
    done.append(f"redis-server: {_redis_server()}")
    return done


def _redis_server() -> str:
    found = shutil.which("redis-server")
    if found:
        return found
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        return "missing (install it, e.g. apt-get install redis-server, or set CM_REDIS_URL)"
    logger.info("redis-server is missing; installing Debian's package")
    apt_install_redis()
    return shutil.which("redis-server") or "missing after apt-get install"
