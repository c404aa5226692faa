"""Settings helpers of collection_manager.config.settings (no services)."""

from __future__ import annotations

import pytest

from collection_manager.config import (
    ConsumerConfig,
    InfraConfig,
    ReplicaConfig,
    from_env,
    redact_url,
)
from collection_manager.config.errors import ConfigError
from collection_manager.control.controller import Controller


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("redis://:s3cret@127.0.0.1:6379/0", "redis://:***@127.0.0.1:6379/0"),
        ("redis://ops:s3cret@redis.internal:6379", "redis://ops:***@redis.internal:6379"),
        ("redis://127.0.0.1:6379/0", "redis://127.0.0.1:6379/0"),
    ],
)
def test_urls_in_logs_hide_passwords(url: str, shown: str) -> None:
    assert redact_url(url) == shown


def test_a_checkpoint_uri_keeps_its_scheme_and_the_default_is_under_the_state_dir() -> None:
    environ = {"CM_CHECKPOINT_DIR": "hdfs://namenode:8020/cm/checkpoint"}
    infra = from_env(InfraConfig, {"CM_STATE_DIR": "/var/lib/cm"})
    configured = from_env(ConsumerConfig, environ).with_checkpoint(infra)
    assert configured.checkpoint_dir == "hdfs://namenode:8020/cm/checkpoint"
    default = from_env(ConsumerConfig, {}).with_checkpoint(infra, query="demo")
    assert default.checkpoint_dir == "/var/lib/cm/checkpoints/demo-cm.requests"


def test_a_replica_retention_below_one_ms_is_refused_naming_the_bound() -> None:
    config = ReplicaConfig(replica_retention_ms=0)
    with pytest.raises(ConfigError, match="CM_REPLICA_RETENTION_MS must be at least 1 ms, not 0"):
        Controller(None, None, "t", config)  # type: ignore[arg-type]
