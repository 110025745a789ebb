"""A push or lite pull consumer started before its topic exists gets the first messages within
seconds, not at the next 30 s route poll (issue #20 item 5), and does not hammer the name server
meanwhile (both share ``RouteBackoff``)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

import pytest

from rocketq.client.config import ClientConfig, LitePullConsumerConfig
from rocketq.client.consumer.listener import ConsumeConcurrentlyContext, ConsumeConcurrentlyStatus
from rocketq.client.consumer.lite_pull import LitePullConsumer
from rocketq.client.consumer.push import PushConsumer
from rocketq.client.producer import Producer
from rocketq.protocol.heartbeat import ConsumeFromWhere
from rocketq.protocol.message import Message, MessageExt
from rocketq.testing.cluster import EmbeddedCluster
from rocketq.testing.waits import wait_until

pytestmark = pytest.mark.integration


def test_consumer_started_before_its_topic_gets_messages_quickly(
    embedded_cluster: EmbeddedCluster, unique_name: Callable[..., str], caplog: pytest.LogCaptureFixture
) -> None:
    topic, group = unique_name("late_topic"), unique_name("late_group")
    got: list[bytes] = []
    lock = threading.Lock()

    def listener(msgs: list[MessageExt], _: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        with lock:
            got.extend(m.body for m in msgs)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    # the Java defaults: a 30 s route poll and a 20 s rebalance
    config = ClientConfig(poll_name_server_interval_ms=30_000, rebalance_interval_ms=20_000)
    consumer = PushConsumer(group, namesrv_addr=embedded_cluster.namesrv_addr, client_config=config)
    consumer.subscribe(topic, "*")
    consumer.register_message_listener(listener)
    with caplog.at_level(logging.DEBUG, logger="rocketq.client.instance"):
        consumer.start()
        try:
            time.sleep(3.5)  # the consumer waits on a missing topic: 1 s + 2 s retries, not 3 per second
            lookups = [r for r in caplog.records if r.getMessage() == f"no route for topic {topic}"]
            with Producer(unique_name("late_pg"), namesrv_addr=embedded_cluster.namesrv_addr) as producer:
                producer.send(Message(topic, b"first"))  # auto-creates the topic
            started = time.monotonic()
            wait_until(lambda: b"first" in got, 15, "the first message of a topic created after the consumer")
            assert time.monotonic() - started < 15
        finally:
            consumer.shutdown()
    # at start, then after 1 s and 3 s: a lookup per second at most
    assert 2 <= len(lookups) <= 4, [r.getMessage() for r in lookups]


def test_lite_pull_consumer_started_before_its_topic_gets_messages_quickly(
    embedded_cluster: EmbeddedCluster, unique_name: Callable[..., str], caplog: pytest.LogCaptureFixture
) -> None:
    topic, group = unique_name("late_lite_topic"), unique_name("late_lite_group")
    # the Java defaults: a 30 s route poll and a 20 s rebalance
    client_config = ClientConfig(poll_name_server_interval_ms=30_000, rebalance_interval_ms=20_000)
    config = LitePullConsumerConfig(
        consumer_group=group, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
    )
    consumer = LitePullConsumer(
        config=config, namesrv_addr=embedded_cluster.namesrv_addr, client_config=client_config
    )
    consumer.subscribe(topic, "*")
    got: list[bytes] = []
    with caplog.at_level(logging.DEBUG, logger="rocketq.client.instance"):
        consumer.start()
        try:
            # the consumer waits on a missing topic: 1 s + 2 s retries, not 3 per second
            assert consumer.poll(3500) == []
            lookups = [r for r in caplog.records if r.getMessage() == f"no route for topic {topic}"]
            with Producer(
                unique_name("late_lite_pg"), namesrv_addr=embedded_cluster.namesrv_addr
            ) as producer:
                producer.send(Message(topic, b"first"))  # auto-creates the topic
            deadline = time.monotonic() + 15
            while b"first" not in got and time.monotonic() < deadline:
                got.extend(m.body for m in consumer.poll(200))
            assert b"first" in got, "the first message of a topic created after the lite pull consumer"
        finally:
            consumer.shutdown()
    # at start, then after 1 s and 3 s: a lookup per second at most
    assert 2 <= len(lookups) <= 4, [r.getMessage() for r in lookups]
