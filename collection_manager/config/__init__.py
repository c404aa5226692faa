"""Configuration: typed, immutable settings read from ``CM_*`` environment variables.

``settings`` declares and reads them (``setting``, ``from_env``); the config classes are a
module per group: ``infra`` (Kafka, Redis, Spark, logs), ``consumer``, ``replica`` (agents
and the controller) and ``serving`` (the HTTP API, sinks). ``reference`` renders the
reference page docs/reference/settings.md. Import them from here.
"""

from collection_manager.config.consumer import ConsumerConfig
from collection_manager.config.errors import ConfigError
from collection_manager.config.infra import (
    KAFKA_VERSION,
    SPARK_VERSION,
    InfraConfig,
    LogConfig,
    SparkConfig,
)
from collection_manager.config.replica import ReplicaConfig
from collection_manager.config.serving import HttpConfig, SinkConfig
from collection_manager.config.settings import ENV_PREFIX, env_name, from_env, redact_url, setting

__all__ = [
    "ENV_PREFIX",
    "KAFKA_VERSION",
    "SPARK_VERSION",
    "ConfigError",
    "ConsumerConfig",
    "HttpConfig",
    "InfraConfig",
    "LogConfig",
    "ReplicaConfig",
    "SinkConfig",
    "SparkConfig",
    "env_name",
    "from_env",
    "redact_url",
    "setting",
]
