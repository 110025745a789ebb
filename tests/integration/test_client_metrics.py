"""Client metrics (issue #26): a producer and a push consumer reporting into
:class:`~rocketq.client.metrics.PrometheusClientMetrics` against a real broker."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable

import pytest

pytest.importorskip("prometheus_client", reason="rocketq[metrics] (in dev) is not installed")

from rocketq.client.config import ClientConfig
from rocketq.client.consumer.listener import ConsumeConcurrentlyStatus
from rocketq.client.consumer.push import PushConsumer, PushConsumerConfig
from rocketq.client.metrics import PrometheusClientMetrics
from rocketq.client.producer import Producer
from rocketq.protocol.heartbeat import ConsumeFromWhere
from rocketq.protocol.message import Message, MessageExt
from rocketq.testing.cluster import EmbeddedCluster
from rocketq.testing.waits import wait_until

pytestmark = pytest.mark.integration

N = 20


def sample(metrics: PrometheusClientMetrics, name: str, **labels: str) -> float:
    total = 0.0
    for family in metrics.registry.collect():
        for s in family.samples:
            if s.name == name and set(labels.items()) <= set(s.labels.items()):
                total += s.value
    return total


def test_send_consume_cache_flow_control_and_rebalance_are_recorded(
    embedded_cluster: EmbeddedCluster, unique_name: Callable[..., str]
) -> None:
    topic, group = unique_name("cmt"), unique_name("cmg")
    embedded_cluster.create_topic(topic, 1)
    embedded_cluster.wait_route(topic)
    metrics = PrometheusClientMetrics()
    config = ClientConfig(
        namesrv_addr=embedded_cluster.namesrv_addr,
        poll_name_server_interval_ms=1000,
        rebalance_interval_ms=2000,
        metrics=metrics,
    )
    producer = Producer(unique_name("cmp"), client_config=config)
    producer.start()
    try:
        for i in range(N):
            producer.send(Message(topic, f"cm-{i}".encode()))
        producer.send_async(Message(topic, b"cm-async")).result(10)
    finally:
        producer.shutdown()
    assert sample(metrics, "rocketmq_send_cost_time_count", topic=topic, invocation_status="success") == N + 1
    assert sample(metrics, "rocketmq_send_cost_time_count", invocation_status="failure") == 0

    release = threading.Event()
    done: list[bytes] = []
    lock = threading.Lock()

    def listener(msgs: list[MessageExt], _ctx: object) -> ConsumeConcurrentlyStatus:
        release.wait(30)
        with lock:
            done.extend(m.body for m in msgs)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    consumer = PushConsumer(
        config=PushConsumerConfig(
            consumer_group=group,
            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
            pull_threshold_for_queue=1,
            pull_batch_size=4,
            consume_thread_min=1,
            consume_thread_max=1,
        ),
        client_config=dataclasses.replace(config, instance_name=unique_name("cmi")),
    )
    consumer.subscribe(topic, "*")
    consumer.register_message_listener(listener)
    consumer.start()
    try:
        # the listener holds: messages pile up in the process queue and pulls hit flow control
        wait_until(
            lambda: (
                sample(metrics, "rocketmq_consumer_cached_messages", topic=topic, consumer_group=group) > 1
            ),
            20,
            "cached messages reported",
        )
        assert sample(metrics, "rocketmq_consumer_cached_bytes", topic=topic, consumer_group=group) > 0
        wait_until(
            lambda: (
                sample(metrics, "rocketmq_consumer_flow_control_total", consumer_group=group, reason="count")
                > 0
            ),
            20,
            "a flow-control pause",
        )
        assert sample(metrics, "rocketmq_consumer_rebalance_total", consumer_group=group, topic=topic) >= 1
        release.set()
        wait_until(lambda: len(done) == N + 1, 30, "every message consumed")
        wait_until(
            lambda: (
                sample(
                    metrics,
                    "rocketmq_consumer_messages_total",
                    topic=topic,
                    consumer_group=group,
                    invocation_status="success",
                )
                == N + 1
            ),
            10,
            "consumed messages counted",
        )
        assert sample(metrics, "rocketmq_process_time_count", topic=topic, consumer_group=group) >= 1
        wait_until(
            lambda: (
                sample(metrics, "rocketmq_consumer_cached_messages", topic=topic, consumer_group=group) == 0
            ),
            10,
            "the cache drained",
        )
    finally:
        release.set()
        consumer.shutdown()
    # a stopped consumer is no longer read
    families = {f.name: f for f in metrics.registry.collect()}
    assert not families["rocketmq_consumer_cached_messages"].samples
