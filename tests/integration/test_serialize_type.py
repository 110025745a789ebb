"""A client configured with ``serialize_type=ROCKETMQ`` against a real rocketq name server
and broker: it sends, consumes through held pulls (whose answers come back in JSON, as a Java
4.9.7 broker's ``PullMessageProcessor.executeRequestWhenWakeup`` writes them; golden
binary_header.jsonl seq 29) and keeps every property. The servers' answer types themselves are
tested in test_zero_copy_pull.py and the component tests of the remoting server and name server.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable

import pytest

from rocketq.client import (
    ClientConfig,
    ConsumeConcurrentlyStatus,
    ConsumeFromWhere,
    Message,
    Producer,
    ProducerConfig,
    PushConsumer,
    PushConsumerConfig,
)
from rocketq.protocol.codes import SerializeType
from rocketq.protocol.message import MessageExt
from rocketq.testing.cluster import EmbeddedCluster
from rocketq.testing.waits import wait_until

pytestmark = pytest.mark.integration

BINARY = SerializeType.ROCKETMQ
FAST = ClientConfig(poll_name_server_interval_ms=1000, rebalance_interval_ms=2000, serialize_type=BINARY)


def test_a_binary_client_sends_and_consumes_through_held_pulls(
    embedded_cluster: EmbeddedCluster, unique_name: Callable[..., str]
) -> None:
    cluster = embedded_cluster
    topic = unique_name("ser")
    cluster.create_topic(topic, 2)
    got: list[MessageExt] = []
    lock = threading.Lock()

    def listener(msgs: list[MessageExt], ctx: object) -> ConsumeConcurrentlyStatus:
        with lock:
            got.extend(msgs)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    consumer = PushConsumer(
        config=PushConsumerConfig(
            consumer_group=unique_name("cg"), consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
        ),
        namesrv_addr=cluster.namesrv_addr,
        client_config=dataclasses.replace(FAST, instance_name=unique_name("c")),
    )
    consumer.subscribe(topic, "*")
    consumer.register_message_listener(listener)
    consumer.start()
    try:
        with Producer(
            config=ProducerConfig(producer_group=unique_name("pg")),
            namesrv_addr=cluster.namesrv_addr,
            client_config=dataclasses.replace(FAST, instance_name=unique_name("p")),
        ) as producer:
            # the consumer's pulls are held by now (empty queues): each send wakes one, whose
            # answer comes back in JSON to this ROCKETMQ client
            wait_until(lambda: len(consumer.assigned_queues(topic)) == 2, timeout_s=20)
            sent = []
            for i in range(6):
                msg = Message(topic, f"body-{i}".encode(), tags="TagA", keys=f"k{i}")
                msg.put_user_property("colour", "blü\u00e9")
                sent.append(producer.send(msg).msg_id)
                wait_until(lambda n=i + 1: len(got) >= n, timeout_s=20)
        with lock:
            by_id = {m.msg_id: m for m in got}
        assert sorted(by_id) == sorted(sent)
        for m in by_id.values():
            assert (m.tags, m.properties.get("colour")) == ("TagA", "blü\u00e9")
            assert list(m.keys) == [f"k{m.body.decode().removeprefix('body-')}"]
    finally:
        consumer.shutdown()
