"""Epochs no controller issued, on real Kafka, Redis and Spark: dead letters, nothing more.

A heartbeat, announcement or fence with epoch 2^62 used to be applied: the fence killed
every future incarnation of the replica, and the sighting hid the real incarnation's
heartbeats until its lease expired. Now each is one dead letter naming the epoch and the
highest issued one; the consumer keeps running and the real replica keeps renewing.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import redis as redis_lib

from collection_manager.control.controller import Controller
from collection_manager.core.filters import eq
from collection_manager.core.requests import Delete, Fence, Heartbeat, ReplicaAdded, ReplicaRemoved
from collection_manager.kafka.producer import KafkaProducer, ProducerConfig
from collection_manager.storage.replicas import ReplicaRecord, ReplicaSighting
from collection_manager.storage.store import RedisStore
from schemas.codec import encode_request
from tests.integration.test_consumer import _dead_letters
from tests.integration.test_replicas import (  # noqa: F401 (fixtures)
    TIMEOUT,
    _agent,
    _assert_redis_holds,
    _lease_loop,
    _leased,
    collections,
    consumer,
    controller,
    replica_config,
)
from tests.support import assert_eventually

FORGED = 2**62


def _renewed_since(ctl: Controller, replica_id: str, renewed_at: int) -> int:
    lease, member = _leased(ctl, replica_id), ctl.member(replica_id)
    assert member is not None and (member.epoch, member.state) == (1, "active")
    assert lease.renewed_at > renewed_at
    return lease.renewed_at


def _sighted_at_epoch(record: ReplicaRecord, replica_id: str, epoch: int) -> None:
    assert record.all()[replica_id].epoch == epoch


def _publish(kafka: str, topic: str, messages: list[tuple[str, Any]]) -> None:
    producer = KafkaProducer(ProducerConfig(kafka, client_id="forger"))
    for key, request in messages:
        producer.produce(topic, key.encode(), encode_request(request))
    assert producer.close(30) == 0


def test_forged_epochs_are_dead_letters_and_the_real_replica_keeps_renewing(
    kafka: str,
    redis: redis_lib.Redis,
    consumer: Any,  # noqa: F811
    controller: Controller,  # noqa: F811
    collections: list[str],  # noqa: F811
    unique: str,
) -> None:
    store = RedisStore(redis)
    agent = _agent(f"real-{unique}", controller, kafka)
    replica = agent.replica_id
    stranger = f"never-added-{unique}"
    forged = [
        (replica, Heartbeat(replica, FORGED, 0)),
        (replica, ReplicaAdded(replica, 2)),  # the next epoch, not issued yet
        (replica, ReplicaRemoved(replica, FORGED)),
        (
            collections[0],
            Delete(collections[0], eq("replica_id", replica), "x", Fence(replica, FORGED)),
        ),
        (stranger, Heartbeat(stranger, 1)),
    ]
    record = ReplicaRecord(redis, controller.config.replica_namespace)
    try:
        agent.start(controller.add_replica(replica))
        # The lease loop starts once the consumer applies requests, so heartbeats can renew.
        assert_eventually(lambda: _assert_redis_holds(store, agent, collections), TIMEOUT)
        with _lease_loop(controller):
            renewed = assert_eventually(lambda: _renewed_since(controller, replica, 0), TIMEOUT)
            _publish(kafka, controller.topic, forged)
            dead = _dead_letters(kafka, f"{controller.topic}-dead", expected=len(forged))
            reasons = sorted(dict(m.headers())["reason"].decode() for m in dead)
            assert reasons == sorted(
                [
                    f"epoch {FORGED} of replica {replica} was never issued (highest issued: 1)",
                    f"epoch {FORGED} of replica {replica} was never issued (highest issued: 1)",
                    f"epoch {FORGED} of replica {replica} was never issued (highest issued: 1)",
                    f"epoch 2 of replica {replica} was never issued (highest issued: 1)",
                    f"epoch 1 of replica {stranger} was never issued (highest issued: none)",
                ]
            )
            assert {dict(m.headers())["error"] for m in dead} == {b"EpochError"}
            # The real incarnation renews, its rows stay, no fence was recorded.
            renewed = assert_eventually(
                lambda: _renewed_since(controller, replica, renewed), TIMEOUT
            )
            _assert_redis_holds(store, agent, collections)
            assert all(replica not in store.reader.fences(name) for name in collections)
            assert record.all()[replica].epoch == 1
            assert stranger not in record.all()

            # A forged sighting kept from before the check is replaced by the next real one.
            stale = ReplicaSighting(replica, FORGED, "heartbeat", 0, 0, 1 << 40)
            redis.hset(record.keys.seen, replica, json.dumps(dataclasses.asdict(stale)))
            # (Waiting for a renewal first would race: a heartbeat applied just before the
            # forged sighting was written may renew the lease after it.)
            assert_eventually(lambda: _sighted_at_epoch(record, replica, 1), TIMEOUT)
            renewed = _renewed_since(controller, replica, 0)
            assert_eventually(lambda: _renewed_since(controller, replica, renewed), TIMEOUT)
        assert consumer.isActive and consumer.exception() is None
        assert controller.is_current(replica, 1)
    finally:
        agent.stop("test over")
        agent.join(30)
