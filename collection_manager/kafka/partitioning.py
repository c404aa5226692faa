"""Where Kafka puts a keyed message: Java's ``Utils.murmur2``, made positive, modulo.

The producer's ``murmur2_random`` partitioner picks the same partition (checked against
Kafka's own test vectors in ``tests/integration/test_kafka_producer.py``), so tests and
benchmarks can predict which collections share a partition.
"""

from __future__ import annotations


def java_murmur2(data: bytes) -> int:
    """Kafka's Java ``Utils.murmur2`` (as an unsigned 32-bit value)."""
    m, mask = 0x5BD1E995, 0xFFFFFFFF
    h = (0x9747B28C ^ len(data)) & mask
    whole = len(data) - len(data) % 4
    for i in range(0, whole, 4):
        k = (int.from_bytes(data[i : i + 4], "little") * m) & mask
        k = ((k ^ (k >> 24)) * m) & mask
        h = ((h * m) & mask) ^ k
    tail = data[whole:]
    if len(tail) == 3:
        h ^= tail[2] << 16
    if len(tail) >= 2:
        h ^= tail[1] << 8
    if tail:
        h = ((h ^ tail[0]) * m) & mask
    h = ((h ^ (h >> 13)) * m) & mask
    return h ^ (h >> 15)


def java_partition(key: bytes, partitions: int) -> int:
    """The partition Java's default partitioner picks for a message with ``key``."""
    return (java_murmur2(key) & 0x7FFFFFFF) % partitions
