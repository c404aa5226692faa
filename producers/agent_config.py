"""How a replica agent simulates, publishes and heartbeats: :class:`AgentConfig`, its
settings, checked when made; the agent that follows them is ``agent.py``'s ``ReplicaAgent``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from types import MappingProxyType

from collection_manager.config import ReplicaConfig
from collection_manager.config.errors import ConfigError
from collection_manager.core.requests import MAX_TTL_MS
from collection_manager.kafka.producer import OptionValue
from producers.subscribe import MIN_TTL_STEPS


@dataclasses.dataclass(frozen=True)
class AgentConfig:
    """How an agent simulates, publishes and heartbeats.

    Attributes:
        bootstrap: Kafka bootstrap servers.
        topic: the requests topic.
        workers: simulated timely workers.
        dataflows: simulated dataflows.
        seed: fixes the simulated history; None derives it from the replica id.
        step_interval_ms: time between two steps of every subscribe.
        max_steps: stop publishing changes after this many steps (heartbeats go on).
        heartbeat_interval_ms: time between two heartbeats.
        batch_rows: at most this many updates per ``Append``.
        row_ttl_ms: TTL of the rows of the expiring collections; 0 for none. Each step refreshes
            them, so they expire only once the agent is silent
            (docs/concepts/ttl-and-expiration.md).
        collection_suffix: appended to each collection name (tests use their own copies).
        producer_extra: further librdkafka options of every producer of the agent.
    """

    bootstrap: str
    topic: str = "cm.requests"
    workers: int = 4
    dataflows: int = 8
    seed: int | None = None
    step_interval_ms: int = 1_000
    max_steps: int | None = None
    heartbeat_interval_ms: int = 1_000
    batch_rows: int = 1_000
    row_ttl_ms: int = 0
    collection_suffix: str = ""
    producer_extra: Mapping[str, OptionValue] = dataclasses.field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "producer_extra", MappingProxyType(dict(self.producer_extra)))
        shortest = MIN_TTL_STEPS * self.step_interval_ms
        if self.row_ttl_ms and not shortest <= self.row_ttl_ms <= MAX_TTL_MS:
            raise ConfigError(
                f"row_ttl_ms={self.row_ttl_ms}: must be 0 (no TTL) or between {shortest} "
                f"({MIN_TTL_STEPS} step intervals) and {MAX_TTL_MS} ms"
            )

    @classmethod
    def of(
        cls, replica: ReplicaConfig, bootstrap: str, topic: str, **overrides: object
    ) -> AgentConfig:
        """The agent settings of a :class:`ReplicaConfig`, with ``overrides`` on top."""
        settings: dict[str, object] = {
            "step_interval_ms": replica.step_interval_ms,
            "heartbeat_interval_ms": replica.heartbeat_interval_ms,
            "batch_rows": replica.publish_batch_rows,
            "row_ttl_ms": replica.row_ttl_ms,
            "collection_suffix": replica.collection_suffix,
        }
        return cls(bootstrap, topic, **{**settings, **overrides})  # type: ignore[arg-type]
