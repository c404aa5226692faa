"""Decoding requests in Spark: fastavro inside mapInPandas vs Spark's from_avro.

The consumer needs each request as a Python object (the store's planner and apply run in
Python), so the comparison that decides is (A) fastavro in ``mapInPandas`` against
(C) ``from_avro`` in the JVM and then the decoded structs handed to Python through Arrow.
(B), ``from_avro`` alone with the result left in the JVM, is shown as the lower bound of
the JVM decode. All read the same Kafka topic in the same run; medians of ``--repeats``.
Run: ``.venv/bin/python -m bench.decode [--requests 20000] [--updates 25]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from confluent_kafka.admin import AdminClient, NewTopic

from bench.common import report, services
from collection_manager.config import SPARK_VERSION, InfraConfig, SparkConfig, from_env
from collection_manager.core.requests import Append
from collection_manager.devservices.setup import prepare
from collection_manager.kafka.producer import KafkaProducer, ProducerConfig
from schemas.codec import HEADER_SIZE, MAGIC, decode_request, encode_request
from schemas.registry import released_request_schemas, request_schema, schema_fingerprint
from spark_consumers.session import build_spark_session

AVRO = f"org.apache.spark:spark-avro_2.13:{SPARK_VERSION}"
VARIANTS = {
    "fastavro": "A: fastavro in mapInPandas",
    "from_avro_jvm": "B: from_avro, left in the JVM",
    "from_avro_python": "C: from_avro, then to Python",
}


def _publish(bootstrap: str, topic: str, requests: int, updates: int) -> bytes:
    """Publishes the requests; returns the first one's bytes (its header names its schema)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 4, 1)])[topic].result(30)
    producer = KafkaProducer(ProducerConfig(bootstrap, client_id="bench-decode"))
    first = b""
    for i in range(requests):
        rows = tuple(((f"r{i % 3}", f"e{j}", j, i * 1.5), 1) for j in range(updates))
        request = Append(f"c{i % 5}", f"r{i % 3}", 1, rows, produced_at=i)
        value = encode_request(request)
        first = first or value
        producer.produce(topic, request.collection.encode(), value)
    assert producer.close(60) == 0
    return first


def _fastavro(frames: Iterable[Any]) -> Iterator[Any]:
    import pandas as pd

    for frame in frames:
        total = 0
        for value in frame["value"]:
            request = decode_request(bytes(value))
            assert isinstance(request, Append)
            total += len(request.updates)
        yield pd.DataFrame({"updates": [total]})


def _value(branches: dict[str, Any]) -> Any:
    # A union value arrives as a struct with one member per branch, all but one null.
    return next((value for value in branches.values() if value is not None), None)


def _structs_to_python(frames: Iterable[Any]) -> Iterator[Any]:
    import pandas as pd

    for frame in frames:
        total = 0
        for body in frame["body"]:
            append = body["member0"]  # the Append branch of the request union
            updates = [(tuple(_value(v) for v in u["row"]), u["diff"]) for u in append["updates"]]
            total += len(updates)
        yield pd.DataFrame({"updates": [total]})


def _timed(run: Callable[[], int], repeats: int, expected: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        assert run() == expected
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def parser() -> argparse.ArgumentParser:
    """The benchmark's scale options."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--updates", type=int, default=25, help="updates per request")
    parser.add_argument("--repeats", type=int, default=3)
    return parser


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Median seconds and updates/s of each decode variant over the same cached bytes."""
    from pyspark import cloudpickle
    from pyspark.sql import functions as F
    from pyspark.sql.avro.functions import from_avro

    # The workers import the product only, never the working directory (PYTHONSAFEPATH,
    # spark_consumers/session.py): these functions travel by value, not as "bench.decode".
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    with services() as endpoints:
        topic = f"bench-decode-{uuid.uuid4().hex[:8]}"
        sample = _publish(endpoints.kafka_bootstrap, topic, args.requests, args.updates)
        prepare(from_env(InfraConfig), extra_spark_packages=[AVRO])
        spark = build_spark_session(
            from_env(SparkConfig), from_env(InfraConfig), "bench-decode", extra_packages=[AVRO]
        )
        raw = (
            spark.read.format("kafka")
            .option("kafka.bootstrap.servers", endpoints.kafka_bootstrap)
            .option("subscribe", topic)
            .option("startingOffsets", "earliest")
            .load()
            .select("value")
        ).cache()
        raw.count()  # read Kafka once: every variant then decodes the same cached bytes
        schema = writer_schema_json(sample)
        decoded = raw.select(
            from_avro(F.expr(f"substring(value, {HEADER_SIZE + 1})"), schema).alias("r")
        ).select("r.body")
        total = args.requests * args.updates

        def sum_of(df: Any) -> int:
            return int(df.agg(F.sum("updates")).collect()[0][0])

        variants = {
            "fastavro": lambda: sum_of(raw.mapInPandas(_fastavro, "updates long")),
            "from_avro_jvm": lambda: sum_of(
                decoded.select(F.size("body.member0.updates").alias("updates"))
            ),
            "from_avro_python": lambda: sum_of(
                decoded.mapInPandas(_structs_to_python, "updates long")
            ),
        }
        times = {key: _timed(decode, args.repeats, total) for key, decode in variants.items()}
    return {
        "variants": {
            key: {"label": VARIANTS[key], "time_s": t, "updates_per_s": total / t}
            for key, t in times.items()
        },
        "updates": total,
    }


def main() -> None:
    args = parser().parse_args()
    variants = run(args)["variants"].values()
    baseline = next(iter(variants))["time_s"]
    report(
        "decode",
        ["variant", "updates/s", "time s", "vs A"],
        [(v["label"], v["updates_per_s"], v["time_s"], baseline / v["time_s"]) for v in variants],
        {"requests": args.requests, "updates_per_request": args.updates},
    )


def writer_schema_json(message: bytes) -> str:
    """The schema ``message`` was written with, as JSON, for from_avro: a writer's schema,
    as unbucketed requests are written with the oldest released one (schemas/codec.py)."""
    import json

    for schema in (request_schema(), *released_request_schemas()):
        if schema_fingerprint(schema) == message[len(MAGIC) : HEADER_SIZE]:
            return json.dumps(schema)
    raise ValueError(f"no known request schema wrote {message[:HEADER_SIZE].hex()}")


if __name__ == "__main__":
    main()
