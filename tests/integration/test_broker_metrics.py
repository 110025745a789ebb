"""Broker metrics (issue #26): scrape ``/metrics`` of a real broker during a produce/consume run.

The broker is started with RocketMQ 5's broker.conf keys (``metricsExporterType=PROM``,
``metricsPromExporterPort=0``); its ready line names the metrics address. Counters must move
by exactly the number of messages sent and consumed, the group's lag must fall to 0, and the
text must parse with ``prometheus_client``'s own parser.
"""

from __future__ import annotations

import json
import threading
import urllib.request
from collections.abc import Callable, Iterator

import pytest

pytest.importorskip("prometheus_client", reason="rocketq[metrics] (in dev) is not installed")
from prometheus_client.parser import text_string_to_metric_families

from rocketq.client.config import ClientConfig
from rocketq.client.consumer.listener import ConsumeConcurrentlyStatus, ConsumeOrderlyStatus
from rocketq.client.consumer.push import PushConsumer, PushConsumerConfig
from rocketq.client.producer import Producer
from rocketq.protocol.heartbeat import ConsumeFromWhere
from rocketq.protocol.message import Message, MessageExt
from rocketq.testing.cluster import EmbeddedCluster
from rocketq.testing.waits import wait_until

pytestmark = pytest.mark.integration

FAST = ClientConfig(
    poll_name_server_interval_ms=1000, rebalance_interval_ms=2000, persist_consumer_offset_interval_ms=500
)
N = 60


@pytest.fixture(scope="module")
def metrics_cluster() -> Iterator[EmbeddedCluster]:
    # SYNC_FLUSH so that the group-commit flush latency is recorded too
    conf = {"metricsExporterType": "PROM", "metricsPromExporterPort": "0", "flushDiskType": "SYNC_FLUSH"}
    with EmbeddedCluster(broker_conf=conf) as cluster:
        yield cluster


def metrics_addr(cluster: EmbeddedCluster, index: int = 0) -> str:
    """The ``metrics`` address of a broker's ready line (the file the cluster polls)."""
    ready = cluster.store_dir / f"{cluster.broker_names[index]}.ready"
    return str(json.loads(ready.read_text(encoding="utf-8"))["metrics"])


Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape(addr: str) -> tuple[str, Samples]:
    with urllib.request.urlopen(f"http://{addr}/metrics", timeout=10) as resp:
        text = resp.read().decode("utf-8")
    samples: Samples = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return text, samples


def value(samples: Samples, name: str, **labels: str) -> float:
    """The sum of ``name`` over the samples whose labels include ``labels`` (0 when none)."""
    want = set(labels.items())
    return sum(v for (n, ls), v in samples.items() if n == name and want <= set(ls))


def test_counters_move_by_the_messages_and_lag_falls_to_zero(
    metrics_cluster: EmbeddedCluster, unique_name: Callable[..., str]
) -> None:
    topic, group = unique_name("mt"), unique_name("mg")
    metrics_cluster.create_topic(topic, 4)
    metrics_cluster.wait_route(topic)
    addr = metrics_addr(metrics_cluster)
    _, before = scrape(addr)
    sends_before = value(before, "rocketmq_rpc_latency_count", request_code="send_message")
    assert value(before, "rocketmq_messages_in_total", topic=topic) == 0

    bodies = [f"metrics-{i:04d}".encode() for i in range(N)]
    producer = Producer(unique_name("mp"), namesrv_addr=metrics_cluster.namesrv_addr, client_config=FAST)
    producer.start()
    try:
        for body in bodies:
            producer.send(Message(topic, body, keys=body.decode()))
    finally:
        producer.shutdown()

    text, after = scrape(addr)
    assert value(after, "rocketmq_messages_in_total", topic=topic) == N
    assert value(after, "rocketmq_throughput_in_total", topic=topic) == sum(len(b) for b in bodies)
    assert value(after, "rocketmq_producer_offset", topic=topic) == N
    assert value(after, "rocketmq_rpc_latency_count", request_code="send_message") - sends_before >= N
    assert "# TYPE rocketmq_rpc_latency histogram" in text
    assert value(after, "rocketmq_storage_flush_latency_count") >= N
    assert value(after, "rocketmq_storage_flush_behind_bytes") >= 0

    seen: set[bytes] = set()
    lock = threading.Lock()

    def listener(msgs: list[MessageExt], _ctx: object) -> ConsumeConcurrentlyStatus:
        with lock:
            seen.update(m.body for m in msgs)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    consumer = PushConsumer(
        config=PushConsumerConfig(
            consumer_group=group,
            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        ),
        namesrv_addr=metrics_cluster.namesrv_addr,
        client_config=FAST,
    )
    consumer.subscribe(topic, "*")
    consumer.register_message_listener(listener)
    consumer.start()
    try:
        wait_until(lambda: len(seen) == N, 30, "every message consumed")
        # the consumed offsets reach the broker with the next pull or the periodic persist,
        # which (as Java's) starts 10 s after the client: persist them now
        consumer.persist_consumer_offset()
        wait_until(
            lambda: (
                value(scrape(addr)[1], "rocketmq_consumer_offset", topic=topic, consumer_group=group) == N
            ),
            30,
            "the committed offsets to reach the end",
        )
        _, done = scrape(addr)
        assert value(done, "rocketmq_consumer_lag_messages", topic=topic, consumer_group=group) == 0
        assert value(done, "rocketmq_messages_out_total", topic=topic, consumer_group=group) == N
        assert value(done, "rocketmq_throughput_out_total", topic=topic, consumer_group=group) > 0
        assert value(done, "rocketmq_consumer_connections", consumer_group=group) == 1
        # an idle consumer's pulls are parked by long polling
        wait_until(lambda: value(scrape(addr)[1], "rocketmq_pull_long_polling_held") > 0, 20, "a parked pull")
        assert value(done, "rocketmq_pull_long_polling_holds_total") > 0
        assert value(done, "rocketmq_rpc_latency_count", request_code="pull_message") > 0
    finally:
        consumer.shutdown()
    assert value(done, "rocketmq_storage_size") > 0
    assert 0 < value(done, "rocketmq_brokeruntime_commitlog_disk_ratio") <= 1


def test_orderly_consumers_hold_queue_locks(
    metrics_cluster: EmbeddedCluster, unique_name: Callable[..., str]
) -> None:
    topic, group = unique_name("mlt"), unique_name("mlg")
    metrics_cluster.create_topic(topic, 3)
    metrics_cluster.wait_route(topic)
    addr = metrics_addr(metrics_cluster)
    consumer = PushConsumer(
        config=PushConsumerConfig(consumer_group=group),
        namesrv_addr=metrics_cluster.namesrv_addr,
        client_config=FAST,
    )
    consumer.subscribe(topic, "*")
    consumer.register_message_listener_orderly(lambda msgs, ctx: ConsumeOrderlyStatus.SUCCESS)
    consumer.start()
    try:
        seen: list[float] = []

        def locked() -> bool:
            seen.append(value(scrape(addr)[1], "rocketmq_queue_locks_held", consumer_group=group))
            return seen[-1] == 4

        # the topic's three queues and the one of %RETRY%<group>
        wait_until(locked, 20, "the four queues locked", interval_s=0.5)
    finally:
        consumer.shutdown()  # unlocks
    wait_until(
        lambda: value(scrape(addr)[1], "rocketmq_queue_locks_held", consumer_group=group) == 0,
        20,
        "the locks released",
    )


def test_every_family_is_documented(metrics_cluster: EmbeddedCluster) -> None:
    from rocketq.broker.metrics import METRIC_ORIGINS

    text, _ = scrape(metrics_addr(metrics_cluster))
    families = {f.name for f in text_string_to_metric_families(text)}
    # the parser drops a counter's _total suffix
    documented = {name.removesuffix("_total") for name in METRIC_ORIGINS}
    assert families == documented


def test_each_broker_of_a_two_broker_cluster_serves_its_own_metrics(unique_name: Callable[..., str]) -> None:
    conf = {"metricsExporterType": "PROM", "metricsPromExporterPort": "0"}
    with EmbeddedCluster(brokers=2, broker_conf=conf) as cluster:  # `rocketq broker` processes
        topic = unique_name("m2t")
        cluster.create_topic(topic, 2)
        cluster.wait_route(topic)
        producer = Producer(unique_name("m2p"), namesrv_addr=cluster.namesrv_addr, client_config=FAST)
        producer.start()
        try:
            for i in range(20):
                producer.send(Message(topic, f"two-{i}".encode()))
        finally:
            producer.shutdown()
        per_broker = {}
        for index, name in enumerate(cluster.broker_names):
            _, samples = scrape(metrics_addr(cluster, index))
            assert value(samples, "rocketmq_topic_number", node_id=name) > 0
            per_broker[name] = value(samples, "rocketmq_messages_in_total", topic=topic, node_id=name)
        assert sum(per_broker.values()) == 20
        assert all(n > 0 for n in per_broker.values())  # the producer spreads over both brokers
