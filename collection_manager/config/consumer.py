"""The settings of the Spark consumer (``consumer run``, the demo's query): what it reads,
how often, and where it keeps its progress.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from collection_manager.config.infra import InfraConfig
from collection_manager.config.settings import setting


@dataclasses.dataclass(frozen=True)
class ConsumerConfig:
    """The Spark consumer: what it reads, how often, and where it keeps its progress."""

    topic: str = setting("cm.requests", "Topic of the requests (key = collection id).")
    dead_letter_topic: str = setting(
        "cm.dead-letters", "Topic that receives undecodable or invalid requests, with reasons."
    )
    # A string, not a Path: Path would fold hdfs://nn/x or s3a://bucket/x into hdfs:/nn/x.
    checkpoint_dir: str | None = dataclasses.field(
        default=None,
        metadata={
            "help": "Spark checkpoint of the streaming query (offsets, commits): a local "
            "path or a URI (hdfs://, s3a://); default <state_dir>/checkpoints/consumer-<topic> "
            "(demo-<topic> for the demo)."
        },
    )
    create_topic: bool = setting(
        False,
        "Create the request topic when it is missing (else `consumer run` waits for it); with "
        "CM_TOPIC_PARTITIONS partitions.",
    )
    topic_partitions: int = setting(
        4,
        "Partitions of a request topic that `consumer run` creates: the consumer's parallelism.",
    )
    trigger_interval_ms: int = setting(
        100,
        "Micro-batch trigger interval: a batch starts at most this often; one that takes "
        "longer is followed by the next at once. 100 rather than 500 buys a lower "
        "publish-to-visible latency with more idle polling of Kafka (the figures of both: "
        "docs/benchmarks.md).",
    )
    redis_replica_acks: int = setting(
        0,
        "Replicas of every Redis primary that must hold a micro-batch's writes (Redis WAIT) "
        "before its progress is recorded, and the controller's epochs and member records "
        "before anything acts on them: 1 with a replica per primary, so a failover loses "
        "nothing recorded as done and hands out no epoch twice; 0 for a Redis without "
        "replicas.",
    )
    redis_replica_ack_timeout_ms: int = setting(
        10_000,
        "How long a batch, or a controller's epoch or member change, waits for those "
        "replicas; past it the consumer retries as in an outage, recording no progress "
        "meanwhile, and the add or removal fails (the lease loop retries a removal).",
    )
    commit_group: str = setting(
        "",
        "Kafka consumer group that the consumer commits its applied offsets to after each "
        "batch, so kafka_exporter, Burrow and kafka-consumer-groups.sh show its lag; empty: "
        "none. Redis's progress stays the truth of what was applied.",
    )
    consumer_metrics_address: str = setting(
        "",
        "host:port where `consumer run` serves /metrics (Prometheus), /healthz and /readyz, "
        "e.g. "
        "127.0.0.1:9400 (port 0: any free one); empty: no listener.",
    )
    max_offsets_per_trigger: int = setting(
        0, "Back-pressure: at most this many requests per micro-batch; 0 means no limit."
    )
    fail_on_data_loss: bool = setting(
        False, "Stop when Kafka lost requests the query did not read yet (retention, reset)."
    )
    max_request_bytes: int = setting(
        1_048_576, "Requests larger than this go to the dead-letter topic."
    )
    log_max_length: int = setting(
        1_000_000,
        "Approximate number of change-log entries kept per collection; an entry holds the "
        "updates of one time, up to 512.",
    )
    expiration_offset_ms: int = setting(
        0,
        "Future retractions at or after start + this are not stored (rebuilt when the clock "
        "gets there); 0 stores all of them.",
    )

    def with_checkpoint(self, infra: InfraConfig, query: str = "consumer") -> ConsumerConfig:
        """This config with its checkpoint directory resolved under the state directory.

        The default depends on ``query`` and the topic, so the demo and a ``consumer
        run`` process never share a checkpoint, and a checkpoint never meets another topic.
        """
        if self.checkpoint_dir is not None:
            if "://" in self.checkpoint_dir:
                return self
            # Absolute: the Spark driver's JVM runs in a directory of its own.
            absolute = str(Path(self.checkpoint_dir).expanduser().absolute())
            return dataclasses.replace(self, checkpoint_dir=absolute)
        path = infra.state_dir / "checkpoints" / f"{query}-{self.topic}"
        return dataclasses.replace(self, checkpoint_dir=str(path))
