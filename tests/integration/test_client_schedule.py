"""MQPullConsumerScheduleService: queue split between two instances, takeover, callbacks."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from rocketq.client import (
    Message,
    MessageModel,
    MessageQueue,
    MQPullConsumerScheduleService,
    Producer,
    PullStatus,
    PullTaskContext,
)
from rocketq.testing.cluster import EmbeddedCluster

pytestmark = pytest.mark.integration


def _wait(cond: Callable[[], bool], timeout_s: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.05)
    return cond()


class Recorder:
    """A pull task callback: pulls, records bodies, commits offsets like the Java sample."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.bodies: list[bytes] = []
        self.queues: set[MessageQueue] = set()
        self.calls = 0

    def do_pull_task(self, mq: MessageQueue, context: PullTaskContext) -> None:
        consumer = context.pull_consumer
        with self.lock:
            self.calls += 1
            self.queues.add(mq)
        offset = max(consumer.fetch_consume_offset(mq), 0)
        result = consumer.pull(mq, "*", offset, 32)
        if result.pull_status is PullStatus.FOUND:
            with self.lock:
                self.bodies.extend(m.body for m in result.msg_found_list)
        consumer.update_consume_offset(mq, result.next_begin_offset)
        context.pull_next_delay_time_millis = 50


def test_two_instances_split_the_queues_and_one_takes_over(
    embedded_cluster: EmbeddedCluster, unique_name: Callable[..., str]
) -> None:
    topic, group = unique_name("T"), unique_name("SG")
    embedded_cluster.create_topic(topic, 4)
    a, b = Recorder(), Recorder()
    svc_a = MQPullConsumerScheduleService(
        group, namesrv_addr=embedded_cluster.namesrv_addr, pull_thread_nums=4
    )
    svc_b = MQPullConsumerScheduleService(
        group, namesrv_addr=embedded_cluster.namesrv_addr, pull_thread_nums=4
    )
    svc_a.register_pull_task_callback(topic, a)
    svc_b.register_pull_task_callback(topic, b)
    svc_a.start()
    svc_b.start()
    try:
        all_qs = {MessageQueue(topic, "broker-a", i) for i in range(4)}

        def split() -> bool:
            ta, tb = set(svc_a.task_table), set(svc_b.task_table)
            return len(ta) == 2 and len(tb) == 2 and ta | tb == all_qs

        assert _wait(split), (svc_a.task_table, svc_b.task_table)
        time.sleep(0.2)  # tasks cancelled by the split finish their last round
        with a.lock, b.lock:
            a.queues.clear()
            b.queues.clear()
        with Producer(unique_name("PG"), namesrv_addr=embedded_cluster.namesrv_addr) as p:
            for i in range(8):
                p.send(Message(topic, f"m{i}".encode()), queue=MessageQueue(topic, "broker-a", i % 4))
        assert _wait(lambda: len(a.bodies) + len(b.bodies) == 8)
        assert sorted(a.bodies + b.bodies) == sorted(f"m{i}".encode() for i in range(8))
        assert a.queues.isdisjoint(b.queues)
        svc_b.shutdown()
        assert _wait(lambda: set(svc_a.task_table) == all_qs)
        with Producer(unique_name("PG"), namesrv_addr=embedded_cluster.namesrv_addr) as p:
            for i in range(4):
                p.send(Message(topic, f"n{i}".encode()), queue=MessageQueue(topic, "broker-a", i))
        # b's offsets were persisted at its shutdown (oneway): a continues after them. Pull
        # consumers are at-least-once: if a reads an offset before b's last update lands, it
        # re-reads some of b's m-messages — never loses one.
        assert _wait(lambda: sum(1 for x in a.bodies if x.startswith(b"n")) == 4)
        everything = a.bodies + b.bodies
        assert set(everything) == {f"m{i}".encode() for i in range(8)} | {f"n{i}".encode() for i in range(4)}
        assert len(everything) <= 12 + 4
        assert sorted(x for x in a.bodies if x.startswith(b"n")) == [f"n{i}".encode() for i in range(4)]
    finally:
        svc_a.shutdown()
        svc_b.shutdown()


def test_broadcasting_service_runs_a_task_per_queue(
    embedded_cluster: EmbeddedCluster, unique_name: Callable[..., str], tmp_path: object
) -> None:
    topic = unique_name("T")
    embedded_cluster.create_topic(topic, 3)
    calls: list[MessageQueue] = []
    lock = threading.Lock()

    def callback(mq: MessageQueue, context: PullTaskContext) -> None:
        with lock:
            calls.append(mq)
        context.pull_next_delay_time_millis = 20

    from rocketq.client import PullConsumerConfig

    cfg = PullConsumerConfig(
        consumer_group=unique_name("BG"),
        message_model=MessageModel.BROADCASTING,
        offset_store_dir=str(tmp_path),
    )
    with MQPullConsumerScheduleService(
        config=cfg, namesrv_addr=embedded_cluster.namesrv_addr, pull_thread_nums=2
    ) as svc:
        svc.register_pull_task_callback(topic, callback)
        assert _wait(lambda: len(set(calls)) == 3)
        assert _wait(lambda: len(calls) >= 9)  # rescheduled after pull_next_delay_time_millis
    n = len(calls)
    # shutdown joined the workers: with no worker thread left no task can run again
    assert not [t for t in threading.enumerate() if "-pull-task-" in t.name]
    assert len(calls) == n  # every task stopped with the service
