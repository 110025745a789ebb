"""Orderly consumption (issue #6): the seeds' wallet at scale, SUSPEND and the DLQ path.

The wallet: balance events of each user are sent with the hash selector on the user id, so
one user's events share one queue; three orderly consumers in one group (one joins late,
one is stopped gracefully, one is SIGKILLed mid-stream) must never let a user see an older
balance after a newer one, and never work on one queue from two consumers at once.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import pytest

from rocketq.client.config import ClientConfig
from rocketq.client.consumer.listener import ConsumeOrderlyContext, ConsumeOrderlyStatus
from rocketq.client.consumer.push import PushConsumer, PushConsumerConfig
from rocketq.client.producer import Producer
from rocketq.client.selectors import SelectMessageQueueByHash
from rocketq.protocol.heartbeat import ConsumeFromWhere
from rocketq.protocol.message import Message, MessageExt
from rocketq.protocol.message_queue import MessageQueue
from rocketq.testing.cluster import EmbeddedCluster
from rocketq.testing.waits import wait_for_dlq, wait_until

pytestmark = pytest.mark.integration

HERE = Path(__file__).resolve().parent
FAST = ClientConfig(poll_name_server_interval_ms=1000, rebalance_interval_ms=1000)

Delivery = tuple[str, int, str, int, float, float]  # user, seq, consumer, queue, t_start, t_end


def _orderly(
    cluster: EmbeddedCluster,
    group: str,
    topic: str,
    listener: Callable[[list[MessageExt], ConsumeOrderlyContext], ConsumeOrderlyStatus | None],
    **config: object,
) -> PushConsumer:
    cfg = PushConsumerConfig(
        consumer_group=group,
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        lock_interval_ms=1000,
        lock_max_live_time_ms=3000,
        **config,  # type: ignore[arg-type]
    )
    consumer = PushConsumer(config=cfg, namesrv_addr=cluster.namesrv_addr, client_config=FAST)
    consumer.subscribe(topic, "*")
    consumer.register_message_listener_orderly(listener)
    return consumer


def check_order(deliveries: list[Delivery], users: int, events: int) -> None:
    """Every event delivered; first deliveries in order; re-deliveries are contiguous replays."""
    by_user: dict[str, list[Delivery]] = defaultdict(list)
    for d in deliveries:
        by_user[d[0]].append(d)
    assert len(by_user) == users
    for user, items in by_user.items():
        items.sort(key=lambda d: (d[4], d[1]))
        expected = 0
        first_seen: list[int] = []
        for _, seq, consumer, _, _, _ in items:
            if seq == expected:
                expected += 1
            elif seq < expected:  # a replay after a handover: must continue contiguously from here
                expected = seq + 1
            else:
                raise AssertionError(f"{user}: event {seq} delivered before {expected} (by {consumer})")
            if seq not in first_seen:
                first_seen.append(seq)
        assert first_seen == list(range(events)), f"{user}: first deliveries {first_seen[:10]}..."


def check_exclusive(deliveries: list[Delivery]) -> None:
    """No two consumers ever ran a listener on the same queue at overlapping times."""
    by_queue: dict[int, list[Delivery]] = defaultdict(list)
    for d in deliveries:
        by_queue[d[3]].append(d)
    for queue, items in by_queue.items():
        items.sort(key=lambda d: d[4])
        latest_end: dict[str, float] = {}
        for _, _, consumer, _, start, end in items:
            for other, other_end in latest_end.items():
                if other != consumer:
                    assert start >= other_end - 0.001, f"queue {queue}: {other} and {consumer} overlapped"
            latest_end[consumer] = max(end, latest_end.get(consumer, end))


@pytest.mark.slow
def test_wallet_order_survives_join_graceful_stop_and_sigkill(
    unique_name: Callable[..., str], tmp_path: Path
) -> None:
    users, events = 200, 50
    topic, group = unique_name("wallet"), unique_name("sms")
    out = tmp_path / "victim.txt"
    deliveries: list[Delivery] = []
    lock = threading.Lock()

    def make_listener(name: str) -> Callable[[list[MessageExt], ConsumeOrderlyContext], ConsumeOrderlyStatus]:
        def listener(msgs: list[MessageExt], ctx: ConsumeOrderlyContext) -> ConsumeOrderlyStatus:
            t0 = time.time()
            time.sleep(0.001)
            t1 = time.time()
            with lock:
                for m in msgs:
                    user, seq = m.body.decode().split(":")[:2]
                    deliveries.append((user, int(seq), name, ctx.message_queue.queue_id, t0, t1))
            return ConsumeOrderlyStatus.SUCCESS

        return listener

    with EmbeddedCluster(
        store_dir=tmp_path / "store", broker_conf={"rebalanceLockMaxLiveTime": "6000"}
    ) as cluster:
        cluster.create_topic(topic, 8)
        with Producer(unique_name("pg"), namesrv_addr=cluster.namesrv_addr) as producer:
            selector = SelectMessageQueueByHash()
            for seq in range(events):
                for u in range(users):
                    balance = 1000 - seq
                    producer.send(
                        Message(topic, f"user{u}:{seq}:balance={balance}".encode(), keys=f"user{u}"),
                        selector=selector,
                        arg=f"user{u}",
                    )
        victim = subprocess.Popen(
            [
                sys.executable,
                str(HERE / "orderly_consumer_proc.py"),
                cluster.namesrv_addr,
                topic,
                group,
                str(out),
                "2",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        )
        a = _orderly(cluster, group, topic, make_listener("A"))
        b = _orderly(cluster, group, topic, make_listener("B"))
        try:
            assert victim.stdout is not None
            assert victim.stdout.readline().strip() == b"started"
            a.start()

            def victim_lines() -> list[str]:
                return out.read_text().splitlines() if out.exists() else []

            wait_until(lambda: len(deliveries) > 1500 and len(victim_lines()) > 300, 60, "A and C to consume")
            b.start()  # joins after the start
            wait_until(lambda: any(d[2] == "B" for d in deliveries), 60, "B to take queues")
            a.shutdown()  # stopped gracefully
            wait_until(lambda: len(victim_lines()) > 1200, 60, "C to go on")
            victim.send_signal(signal.SIGKILL)  # killed mid-stream
            victim.wait(10)

            def all_seen() -> bool:
                seen = {(d[0], d[1]) for d in deliveries}
                seen |= {(p[0], int(p[1])) for p in (line.split() for line in victim_lines())}
                return len(seen) >= users * events

            wait_until(all_seen, 120, "every event to be processed")
        finally:
            if victim.poll() is None:
                victim.kill()
                victim.wait(10)
            if victim.stdout is not None:
                victim.stdout.close()
            a.shutdown()
            b.shutdown()
    victim_deliveries = [
        (p[0], int(p[1]), "C", int(p[3]), float(p[4]), float(p[5]))
        for p in (line.split() for line in out.read_text().splitlines())
    ]
    everything = deliveries + victim_deliveries
    assert {d[2] for d in everything} == {"A", "B", "C"}
    check_order(everything, users, events)
    check_exclusive(everything)


def test_suspend_retries_then_dlq_and_the_queue_continues(
    embedded_cluster: EmbeddedCluster, unique_name: Callable[..., str]
) -> None:
    topic, group = unique_name("T"), unique_name("G")
    embedded_cluster.create_topic(topic, 1)
    seen: list[tuple[str, int]] = []

    def listener(msgs: list[MessageExt], ctx: ConsumeOrderlyContext) -> ConsumeOrderlyStatus:
        ctx.suspend_current_queue_time_millis = 50
        for m in msgs:
            seen.append((m.body.decode(), m.reconsume_times))
        if msgs[0].body == b"bad":
            return ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT
        return ConsumeOrderlyStatus.SUCCESS

    with Producer(unique_name("pg"), namesrv_addr=embedded_cluster.namesrv_addr) as producer:
        for body in (b"first", b"bad", b"after"):
            producer.send(
                Message(topic, body), queue=MessageQueue(topic, embedded_cluster.broker_names[0], 0)
            )
    consumer = _orderly(embedded_cluster, group, topic, listener, max_reconsume_times=3)
    consumer.start()
    try:
        wait_until(lambda: ("after", 0) in seen, 30, "the queue to move past the bad message")
    finally:
        consumer.shutdown()
    assert seen == [("first", 0), ("bad", 0), ("bad", 1), ("bad", 2), ("bad", 3), ("after", 0)]
    assert consumer.orderly_dlq_count == 1
    found = wait_for_dlq(embedded_cluster, group, unique_name("dlq"))
    assert [m.body for m in found] == [b"bad"]
