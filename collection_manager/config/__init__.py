"""Configuration: typed, immutable settings read from ``CM_*`` environment variables.

``settings`` defines them; ``reference`` renders the reference page docs/reference/settings.md.
"""

from collection_manager.config.errors import ConfigError
from collection_manager.config.settings import (
    ENV_PREFIX,
    KAFKA_VERSION,
    SPARK_VERSION,
    ConsumerConfig,
    HttpConfig,
    InfraConfig,
    LogConfig,
    ReplicaConfig,
    SinkConfig,
    SparkConfig,
    env_name,
    from_env,
    redact_url,
    setting,
)

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
