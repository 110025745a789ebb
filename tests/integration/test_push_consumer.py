"""The push consumer against a real rocketq name server and broker on loopback (issue #5)."""

from __future__ import annotations

import dataclasses
import itertools
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from rocketq.client.config import ClientConfig
from rocketq.client.consumer.allocate import AllocateMessageQueueAveragely, allocate
from rocketq.client.consumer.listener import ConsumeConcurrentlyContext, ConsumeConcurrentlyStatus
from rocketq.client.consumer.process_queue import ProcessQueue
from rocketq.client.consumer.push import PushConsumer, PushConsumerConfig
from rocketq.client.producer import Producer
from rocketq.errors import RocketqError
from rocketq.protocol.heartbeat import ConsumeFromWhere, MessageModel
from rocketq.protocol.message import Message, MessageExt
from rocketq.protocol.message_queue import MessageQueue
from rocketq.remoting.client import IO_THREAD_NAME
from rocketq.testing.cluster import EmbeddedCluster
from rocketq.testing.waits import wait_for_dlq, wait_until

pytestmark = pytest.mark.integration

_instances = itertools.count()
FAST = ClientConfig(poll_name_server_interval_ms=1000, rebalance_interval_ms=2000)
HERE = Path(__file__).resolve().parent


@pytest.fixture
def producer(embedded_cluster: EmbeddedCluster, unique_name: Callable[..., str]) -> Iterator[Producer]:
    p = Producer(unique_name("pg"), namesrv_addr=embedded_cluster.namesrv_addr)
    p.start()
    yield p
    p.shutdown()


def _consumer(
    cluster: EmbeddedCluster,
    group: str,
    topic: str,
    listener: Callable[[list[MessageExt], ConsumeConcurrentlyContext], ConsumeConcurrentlyStatus | None],
    **config: object,
) -> PushConsumer:
    cfg = PushConsumerConfig(
        consumer_group=group,
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        **config,  # type: ignore[arg-type]
    )
    client_config = FAST
    if cfg.message_model is MessageModel.BROADCASTING:
        # broadcasting consumers keep instanceName DEFAULT: two in one process need their own
        client_config = dataclasses.replace(FAST, instance_name=f"bc{next(_instances)}")
    consumer = PushConsumer(config=cfg, namesrv_addr=cluster.namesrv_addr, client_config=client_config)
    consumer.subscribe(topic, "*")
    consumer.register_message_listener(listener)
    return consumer


def _send(producer: Producer, topic: str, n: int, prefix: str = "m") -> list[str]:
    bodies = [f"{prefix}-{i}" for i in range(n)]
    for body in bodies:
        producer.send(Message(topic, body.encode(), tags="TagA", keys=body))
    return bodies


def _no_new_threads(before: set[threading.Thread]) -> None:
    """Every thread started since ``before`` has ended (shutdown leaves nothing behind)."""

    def leftover() -> list[str]:
        return [t.name for t in threading.enumerate() if t not in before and t.is_alive()]

    wait_until(lambda: not leftover(), 10, "the consumer's threads to end")


def test_every_message_consumed_exactly_once(
    embedded_cluster: EmbeddedCluster, producer: Producer, unique_name: Callable[..., str]
) -> None:
    topic, group = unique_name("T"), unique_name("G")
    embedded_cluster.create_topic(topic, 4)
    bodies = _send(producer, topic, 400)
    seen: Counter[str] = Counter()
    lock = threading.Lock()

    def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        with lock:
            seen.update(m.body.decode() for m in msgs)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    consumer = _consumer(embedded_cluster, group, topic, listener, consume_message_batch_max_size=4)
    threads_before = set(threading.enumerate())
    consumer.start()
    try:
        wait_until(lambda: sum(seen.values()) >= 400, 30, "all messages")

        # quiesced: nothing is buffered or being consumed any more, so a duplicate could only
        # come from a bug that re-pulls acknowledged offsets, not from work still in flight
        # (the group's %RETRY% topic gets a process queue of its own once its route is known)
        def topic_queues() -> list[ProcessQueue]:
            return [pq for mq, pq in consumer.process_queues() if mq.topic == topic]

        wait_until(
            lambda: len(topic_queues()) == 4 and all(pq.msg_count == 0 for pq in topic_queues()),
            10,
            "every process queue drained",
        )
        assert set(seen) == set(bodies)
        assert max(seen.values()) == 1
        assert {mq.queue_id for mq in consumer.assigned_queues(topic)} == {0, 1, 2, 3}
    finally:
        consumer.shutdown()
    _no_new_threads(threads_before)
    # the final offsets were persisted: a new consumer of the group starts at the end
    again: list[str] = []
    second = _consumer(
        embedded_cluster,
        group,
        topic,
        lambda msgs, ctx: (
            again.extend(m.body.decode() for m in msgs),
            ConsumeConcurrentlyStatus.CONSUME_SUCCESS,
        )[1],
    )
    second.start()
    try:
        # One new message per queue: each queue delivers in offset order, so an old message
        # redelivered from that queue would arrive before its sentinel, not after.
        wait_until(
            lambda: len(second.assigned_queues(topic)) == 4, 10, "the second consumer owns every queue"
        )
        sentinels = {f"sentinel-{i}" for i in range(4)}
        for i in range(4):
            producer.send(Message(topic, f"sentinel-{i}".encode()), queue=MessageQueue(topic, "broker-a", i))
        wait_until(lambda: sentinels <= set(again), 30, "the sentinels")
        assert sorted(again) == sorted(sentinels)
    finally:
        second.shutdown()


def fail_caching_twice(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Make the next two ``ProcessQueue.put_messages`` calls raise; returns the failure count."""
    failures = [0]
    real_put = ProcessQueue.put_messages

    def put_failing_twice(self: ProcessQueue, msgs: list[MessageExt]) -> bool:
        if failures[0] < 2:
            failures[0] += 1
            raise RuntimeError("injected failure while caching a pull")
        return real_put(self, msgs)

    monkeypatch.setattr(ProcessQueue, "put_messages", put_failing_twice)
    return failures


@pytest.mark.pure_python  # replaces ProcessQueue.put_messages, which the compiled PushConsumer calls natively
def test_a_failure_while_caching_a_pull_pulls_the_batch_again(
    embedded_cluster: EmbeddedCluster,
    producer: Producer,
    unique_name: Callable[..., str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An exception in the pull callback (Java: onSuccess -> onException) neither loses the queue's
    pull request (the queue would stall) nor skips the batch it was caching."""
    topic, group = unique_name("T"), unique_name("G")
    embedded_cluster.create_topic(topic, 1)
    bodies = _send(producer, topic, 40)
    failures = fail_caching_twice(monkeypatch)
    seen: Counter[str] = Counter()
    lock = threading.Lock()

    def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        with lock:
            seen.update(m.body.decode() for m in msgs)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    cfg = PushConsumerConfig(
        consumer_group=group, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET, pull_batch_size=8
    )
    consumer = PushConsumer(
        config=cfg,
        namesrv_addr=embedded_cluster.namesrv_addr,
        client_config=dataclasses.replace(FAST, pull_time_delay_mills_when_exception_ms=100),
    )
    consumer.subscribe(topic, "*")
    consumer.register_message_listener(listener)
    consumer.start()
    try:
        wait_until(lambda: set(seen) == set(bodies), 30, "every message despite the failed pulls")
        assert failures[0] == 2
    finally:
        consumer.shutdown()


def test_failed_messages_are_retried_then_land_in_the_dlq(
    embedded_cluster: EmbeddedCluster, producer: Producer, unique_name: Callable[..., str]
) -> None:
    topic, group = unique_name("T"), unique_name("G")
    embedded_cluster.create_topic(topic, 2)
    attempts: list[tuple[str, int, float, str]] = []

    def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        ctx.delay_level_when_next_consume = 1  # 1 s
        for m in msgs:
            attempts.append((m.body.decode(), m.reconsume_times, time.monotonic(), m.topic))
        if any(m.body == b"poison" for m in msgs):
            return ConsumeConcurrentlyStatus.RECONSUME_LATER
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    consumer = _consumer(embedded_cluster, group, topic, listener, max_reconsume_times=2)
    consumer.start()
    try:
        producer.send(Message(topic, b"fine", tags="TagA"))
        producer.send(Message(topic, b"poison", tags="TagA"))
        wait_until(lambda: len([a for a in attempts if a[0] == "poison"]) >= 3, 40, "three attempts")
        poison = [a for a in attempts if a[0] == "poison"]
        assert [a[1] for a in poison] == [0, 1, 2]
        # each retry came back through %RETRY% after the 1 s delay level, under its own topic
        assert all(b[2] - a[2] >= 0.9 for a, b in itertools.pairwise(poison))
        assert {a[3] for a in poison} == {topic}
        assert next(a for a in attempts if a[0] == "fine")[1] == 0
    finally:
        consumer.shutdown()
    found = wait_for_dlq(embedded_cluster, group, unique_name("dlqreader"))
    assert [m.body for m in found] == [b"poison"]
    assert found[0].properties.get("RETRY_TOPIC") == topic
    assert found[0].reconsume_times == 3


def test_flow_control_holds_the_cache_under_its_threshold(
    embedded_cluster: EmbeddedCluster, producer: Producer, unique_name: Callable[..., str]
) -> None:
    topic, group = unique_name("T"), unique_name("G")
    embedded_cluster.create_topic(topic, 1)
    _send(producer, topic, 250)
    done: list[int] = []
    peak = [0]

    def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        time.sleep(0.004)
        done.extend(m.queue_offset for m in msgs)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    consumer = _consumer(
        embedded_cluster,
        group,
        topic,
        listener,
        pull_threshold_for_queue=20,
        pull_batch_size=8,
        consume_thread_min=1,
        consume_thread_max=1,
    )
    consumer.start()
    try:
        while len(done) < 250:
            for _, pq in consumer.process_queues():
                peak[0] = max(peak[0], pq.msg_count)
            time.sleep(0.002)
        # a pull is only sent while the cache holds <= 20; one pull adds at most 8
        assert 0 < peak[0] <= 20 + 8
        assert sorted(done) == list(range(250))
    finally:
        consumer.shutdown()


def test_busy_consume_threads_do_not_stop_the_pulls(
    embedded_cluster: EmbeddedCluster, producer: Producer, unique_name: Callable[..., str]
) -> None:
    """A pull's answer is handled on a free consume thread, which runs the first batch itself;
    with every consume thread busy it is handled on the pull thread instead (Java's callback
    executor is not the consume pool), so a stuck listener does not stop the cache filling up
    to its flow-control threshold. Nothing is lost or consumed twice, and the offset commits."""
    topic, group = unique_name("T"), unique_name("G")
    embedded_cluster.create_topic(topic, 1)
    bodies = _send(producer, topic, 64)
    release = threading.Event()
    seen: Counter[str] = Counter()
    threads: set[str] = set()
    lock = threading.Lock()

    def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        release.wait(30)
        with lock:
            seen.update(m.body.decode() for m in msgs)
            threads.add(threading.current_thread().name)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    consumer = _consumer(
        embedded_cluster,
        group,
        topic,
        listener,
        pull_batch_size=8,
        pull_threshold_for_queue=24,
        consume_message_batch_max_size=8,
        consume_thread_min=1,
        consume_thread_max=1,
        consume_on_io_thread=False,  # Java's model: every batch on a consume thread
    )
    consumer.start()
    try:

        def cached() -> int:
            return sum(pq.msg_count for mq, pq in consumer.process_queues() if mq.topic == topic)

        # the one consume thread is stuck in its first batch; later answers are still cached
        wait_until(lambda: cached() > 8, 20, "pulls to go on while the listener is stuck")
        assert cached() <= 24 + 8  # and flow control still holds the cache
        assert not seen
        release.set()
        wait_until(lambda: sum(seen.values()) >= 64, 30, "every message")
        wait_until(lambda: cached() == 0, 10, "the cache to drain")
        assert set(seen) == set(bodies)
        assert max(seen.values()) == 1
        assert threads == {f"ConsumeMessageThread_{group}_0"}
        mq = MessageQueue(topic, embedded_cluster.broker_names[0], 0)
        wait_until(
            lambda: consumer.running_info().mq_table[mq].commit_offset == 64,
            10,
            "the offset past every message",
        )
    finally:
        release.set()
        consumer.shutdown()


def test_a_slow_listener_does_not_hold_back_the_next_pull(
    embedded_cluster: EmbeddedCluster, producer: Producer, unique_name: Callable[..., str]
) -> None:
    """A consume thread that ran a caught-up queue's batch itself never made the queue's next
    pull wait for the listener (Java pulls on while its consume threads work): a message sent
    while the first one's listener is still running is consumed meanwhile, on another thread."""
    topic, group = unique_name("T"), unique_name("G")
    embedded_cluster.create_topic(topic, 1)
    slow_started = threading.Event()
    release = threading.Event()
    got: list[tuple[str, str]] = []

    def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        for m in msgs:
            if m.body == b"slow":
                slow_started.set()
                release.wait(30)
            got.append((m.body.decode(), threading.current_thread().name))
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    consumer = _consumer(embedded_cluster, group, topic, listener)
    consumer.start()
    try:
        wait_until(lambda: len(consumer.assigned_queues(topic)) == 1, 20, "the queue assigned")
        producer.send(Message(topic, b"slow"))
        assert slow_started.wait(20)
        producer.send(Message(topic, b"fast"))
        wait_until(lambda: any(body == "fast" for body, _ in got), 10, "the second message meanwhile")
        assert not release.is_set() and all(body != "slow" for body, _ in got)
        release.set()
        wait_until(lambda: len(got) == 2, 10, "the slow one")
        assert got[0][1] != got[1][1]
    finally:
        release.set()
        consumer.shutdown()


def test_a_group_of_four_consumes_every_message_once(
    embedded_cluster: EmbeddedCluster, producer: Producer, unique_name: Callable[..., str]
) -> None:
    """Four push consumers of one group (each its own client instance, as the drain benchmark
    runs them), each listener call on the consume thread that received the pull answer or
    on the pool: every message is consumed exactly once and every queue's committed offset
    ends past its last message."""
    topic, group = unique_name("T"), unique_name("G")
    embedded_cluster.create_topic(topic, 8)
    broker = embedded_cluster.broker_names[0]
    seen: Counter[tuple[int, int]] = Counter()
    lock = threading.Lock()

    def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        with lock:
            seen.update((m.queue_id, m.queue_offset) for m in msgs)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    consumers = []
    for i in range(4):
        c = _consumer(
            embedded_cluster, group, topic, listener, consume_message_batch_max_size=4, pull_batch_size=16
        )
        c.client_config = dataclasses.replace(c.client_config, instance_name=f"{group}_{i}")
        consumers.append(c)
    for c in consumers:
        c.start()
    try:
        want = _expected_split(consumers, topic, broker, 8)
        wait_until(
            lambda: all(
                {mq.queue_id for mq in c.assigned_queues(topic)} == want[c.client_id] for c in consumers
            ),
            20,
            "a 2/2/2/2 split",
        )
        n = 800
        for _ in range(n // 16):
            producer.send([Message(topic, b"x" * 100) for _ in range(16)])
        wait_until(lambda: sum(seen.values()) >= n, 30, "every message")
        per_queue = Counter(q for q, _ in seen)
        assert sum(per_queue.values()) == n
        assert max(seen.values()) == 1
        assert all(set(seen) >= {(q, o) for o in range(per_queue[q])} for q in per_queue)

        def committed() -> dict[int, int]:
            out = {}
            for c in consumers:
                for mq, info in c.running_info().mq_table.items():
                    if mq.topic == topic:
                        out[mq.queue_id] = info.commit_offset
            return out

        wait_until(lambda: committed() == dict(per_queue), 10, "every queue's offset past its last message")
    finally:
        for c in consumers:
            c.shutdown()


def _expected_split(consumers: list[PushConsumer], topic: str, broker: str, n: int) -> dict[str, set[int]]:
    mqs = [MessageQueue(topic, broker, i) for i in range(n)]
    cids = [c.client_id for c in consumers]
    return {
        cid: {mq.queue_id for mq in allocate(AllocateMessageQueueAveragely(), "g", cid, mqs, cids)}
        for cid in cids
    }


def test_consumers_split_queues_averagely_and_resplit(
    embedded_cluster: EmbeddedCluster, unique_name: Callable[..., str]
) -> None:
    topic, group = unique_name("T"), unique_name("G")
    embedded_cluster.create_topic(topic, 8)
    broker = embedded_cluster.broker_names[0]
    ok = lambda msgs, ctx: ConsumeConcurrentlyStatus.CONSUME_SUCCESS  # noqa: E731
    consumers = [_consumer(embedded_cluster, group, topic, ok) for _ in range(3)]
    for c in consumers[:2]:
        c.start()
    try:

        def split_is(active: list[PushConsumer]) -> bool:
            want = _expected_split(active, topic, broker, 8)
            return all({mq.queue_id for mq in c.assigned_queues(topic)} == want[c.client_id] for c in active)

        wait_until(lambda: split_is(consumers[:2]), 20, "a 4/4 split")
        consumers[2].start()
        wait_until(lambda: split_is(consumers), 20, "a 3/3/2 split")
        assert sorted(len(c.assigned_queues(topic)) for c in consumers) == [2, 3, 3]
        consumers[0].shutdown()
        wait_until(lambda: split_is(consumers[1:]), 20, "a re-split after one left")
    finally:
        for c in consumers:
            c.shutdown()


def test_broadcasting_delivers_every_message_to_every_consumer(
    embedded_cluster: EmbeddedCluster, producer: Producer, unique_name: Callable[..., str], tmp_path: Path
) -> None:
    topic, group = unique_name("T"), unique_name("G")
    embedded_cluster.create_topic(topic, 4)
    received: list[list[str]] = [[], []]
    consumers = []
    for i in range(2):
        sink = received[i]
        consumers.append(
            _consumer(
                embedded_cluster,
                group,
                topic,
                lambda msgs, ctx, sink=sink: (  # type: ignore[misc]
                    sink.extend(m.body.decode() for m in msgs),
                    ConsumeConcurrentlyStatus.CONSUME_SUCCESS,
                )[1],
                message_model=MessageModel.BROADCASTING,
                offset_store_dir=str(tmp_path / f"c{i}"),
            )
        )
    for c in consumers:
        c.start()
    try:
        wait_until(lambda: all(len(c.assigned_queues(topic)) == 4 for c in consumers), 20, "all queues each")
        bodies = _send(producer, topic, 100)
        wait_until(lambda: all(len(r) >= 100 for r in received), 30, "every consumer to get everything")
        assert sorted(received[0]) == sorted(bodies)
        assert sorted(received[1]) == sorted(bodies)
    finally:
        for c in consumers:
            c.shutdown()
    assert list(tmp_path.rglob("offsets.json")), "broadcasting offsets are kept in a local file"


@pytest.mark.slow
def test_sigkill_of_a_consumer_loses_nothing(
    embedded_cluster: EmbeddedCluster, producer: Producer, unique_name: Callable[..., str], tmp_path: Path
) -> None:
    topic, group = unique_name("T"), unique_name("G")
    embedded_cluster.create_topic(topic, 4)
    bodies = _send(producer, topic, 1500)
    victim_out = tmp_path / "victim.txt"
    victim = subprocess.Popen(
        [
            sys.executable,
            str(HERE / "push_consumer_proc.py"),
            embedded_cluster.namesrv_addr,
            topic,
            group,
            str(victim_out),
            "4",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    survivor_got: list[str] = []
    lock = threading.Lock()

    def slow(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        time.sleep(0.004)
        with lock:
            survivor_got.extend(m.body.decode() for m in msgs)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    survivor = _consumer(embedded_cluster, group, topic, slow, consume_thread_min=4, consume_thread_max=4)
    try:
        assert victim.stdout is not None
        assert victim.stdout.readline().strip() == b"started"
        survivor.start()

        def victim_count() -> int:
            return len(victim_out.read_text().splitlines()) if victim_out.exists() else 0

        wait_until(lambda: victim_count() >= 150, 30, "the victim to consume a share")
        victim.send_signal(signal.SIGKILL)
        victim.wait(10)
        victim_seen = set(victim_out.read_text().splitlines())
        wait_until(
            lambda: len(victim_seen | set(survivor_got)) >= len(bodies),
            60,
            "the survivor to take over and finish",
        )
        assert victim_seen | set(survivor_got) == set(bodies)
        assert len(survivor.assigned_queues(topic)) == 4
    finally:
        if victim.poll() is None:
            victim.kill()
            victim.wait(10)
        if victim.stdout is not None:
            victim.stdout.close()
        survivor.shutdown()


@pytest.mark.slow
def test_broker_restart_is_survived_without_loss(unique_name: Callable[..., str], tmp_path: Path) -> None:
    topic, group = unique_name("T"), unique_name("G")
    deliveries: list[str] = []
    lock = threading.Lock()

    def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        time.sleep(0.002)
        with lock:
            deliveries.extend(m.body.decode() for m in msgs)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    with EmbeddedCluster(store_dir=tmp_path / "store", separate_namesrv=True) as cluster:
        cluster.create_topic(topic, 4)
        producer = Producer(unique_name("pg"), namesrv_addr=cluster.namesrv_addr)
        producer.start()
        consumer = _consumer(cluster, group, topic, listener)
        try:
            first = _send(producer, topic, 300, "before")
            consumer.start()
            wait_until(lambda: len(deliveries) >= 100, 30, "consumption to get going")
            cluster.kill_broker(0)
            cluster.restart_broker(0)
            second: list[str] = []
            deadline = time.monotonic() + 30
            while len(second) < 300 and time.monotonic() < deadline:  # the producer recovers by itself
                try:
                    second += _send(producer, topic, 1, f"after{len(second)}")
                except RocketqError:
                    time.sleep(0.1)
            expected = set(first) | set(second)
            assert len(expected) == 600
            wait_until(lambda: expected <= set(deliveries), 60, "every message after the restart")
            duplicates = len(deliveries) - len(set(deliveries))
            assert duplicates <= 300, f"{duplicates} re-deliveries: more than the unpersisted window"
        finally:
            consumer.shutdown()
            producer.shutdown()


@pytest.mark.pure_python  # wraps PullAPIWrapper.process_pull_answer, a compiled method
def test_pulls_during_a_rebalance_heartbeat_are_not_refused_as_not_latest(
    embedded_cluster: EmbeddedCluster, producer: Producer, unique_name: Callable[..., str]
) -> None:
    """A rebalance that changes the owned set bumps the subscription's subVersion and sends a
    heartbeat carrying it. The pulls of the queues the consumer keeps go on meanwhile; they
    must not carry the new version before the broker has it (SUBSCRIPTION_NOT_LATEST would
    park each such queue for pull_time_delay_mills_when_exception_ms). The heartbeat is held
    back 0.5 s here so that several pulls fall in that window for certain."""
    topic, group = unique_name("T"), unique_name("G")
    embedded_cluster.create_topic(topic, 2)
    for _ in range(100):
        producer.send([Message(topic, b"x" * 100) for _ in range(32)])

    def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        time.sleep(0.001)  # pacing: the backlog lasts seconds, so the queues keep pulling
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    consumer = _consumer(
        embedded_cluster,
        group,
        topic,
        listener,
        consume_thread_min=1,
        consume_thread_max=1,
        pull_threshold_for_queue=64,
    )
    consumer.start()
    try:
        instance, wrapper = consumer._instance, consumer._wrapper
        assert instance is not None and wrapper is not None
        wait_until(lambda: len(consumer.assigned_queues(topic)) == 2, 10, "both queues")
        refused: list[int] = []
        held = threading.Event()
        real_heartbeat = instance.send_heartbeat_to_all_broker_with_lock
        real_answer = wrapper.process_pull_answer

        def slow_heartbeat() -> bool:
            if "rebalance" in threading.current_thread().name:
                time.sleep(0.5)
                held.set()
            return real_heartbeat()

        def answer(*args: object, **kwargs: object) -> object:
            try:
                return real_answer(*args, **kwargs)  # type: ignore[arg-type]
            except RocketqError as exc:
                refused.append(getattr(exc, "code", -1))
                raise

        instance.send_heartbeat_to_all_broker_with_lock = slow_heartbeat  # type: ignore[method-assign]
        wrapper.process_pull_answer = answer  # type: ignore[method-assign]
        embedded_cluster.create_topic(topic, 4)  # two more queues: the owned set changes
        wait_until(lambda: len(consumer.assigned_queues(topic)) == 4, 15, "the new queues")
        wait_until(held.is_set, 5, "the rebalance's heartbeat")
        wait_until(lambda: consumer.stats.pull_tps.find(f"{topic}@{group}") is not None, 5, "pulls")
        assert 25 not in refused  # ResponseCode.SUBSCRIPTION_NOT_LATEST
        assert not refused
    finally:
        consumer.shutdown()


def test_consume_on_io_thread_runs_the_listener_on_the_io_thread_and_its_sync_sends_work(
    embedded_cluster: EmbeddedCluster, producer: Producer, unique_name: Callable[..., str]
) -> None:
    """``consume_on_io_thread`` (the default): each pull answer's batch runs on the remoting
    I/O thread that read it while the listener is quick; a sync send made by the listener
    hands the I/O loop to a new thread (the send would otherwise wait for an answer only
    that loop reads) and succeeds (a batch that waited for it may send the next ones to the
    consume threads for a while); every message is consumed once and shutdown leaves no
    thread behind."""
    topic, out, group = unique_name("T"), unique_name("Out"), unique_name("G")
    embedded_cluster.create_topic(topic, 4)
    embedded_cluster.create_topic(out, 1)
    bodies = _send(producer, topic, 300)
    seen: Counter[str] = Counter()
    threads: Counter[str] = Counter()
    forwarded: list[tuple[str, str, str]] = []  # (body, thread before the send, after it)
    lock = threading.Lock()

    def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        name = threading.current_thread().name
        with lock:
            seen.update(m.body.decode() for m in msgs)
            threads[name] += 1
        for m in msgs:
            if m.body in (b"m-0", b"m-100", b"m-200"):
                result = producer.send(Message(out, b"fwd-" + m.body))
                assert result.status.name == "SEND_OK"
                with lock:
                    forwarded.append((m.body.decode(), name, threading.current_thread().name))
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    consumer = _consumer(embedded_cluster, group, topic, listener, consume_message_batch_max_size=32)
    threads_before = set(threading.enumerate())
    consumer.start()
    try:
        wait_until(lambda: sum(seen.values()) >= 300, 30, "all messages")
        wait_until(
            lambda: all(pq.msg_count == 0 for mq, pq in consumer.process_queues() if mq.topic == topic),
            10,
            "every process queue drained",
        )
        assert set(seen) == set(bodies) and max(seen.values()) == 1
        # the batches ran on an I/O thread (one answer is one batch of at most 32), or, after
        # a slow one (a send), on the consume threads
        consume_threads = {f"ConsumeMessageThread_{group}_{i}" for i in range(20)}
        assert threads[IO_THREAD_NAME] >= 1, threads
        assert set(threads) <= {IO_THREAD_NAME, f"{IO_THREAD_NAME}-handed-off"} | consume_threads, threads
        assert sorted(body for body, _, _ in forwarded) == ["m-0", "m-100", "m-200"]
        # a send made on the I/O thread moved the loop off it first
        assert all(
            after == f"{IO_THREAD_NAME}-handed-off"
            for _, before, after in forwarded
            if before == IO_THREAD_NAME
        )
        assert all(after == before for _, before, after in forwarded if before != IO_THREAD_NAME)
    finally:
        consumer.shutdown()
    # the I/O loop runs on a thread started by a hand-off now (the producer still uses it);
    # the handed-off threads ended with their batches, and nothing else is left
    _no_new_threads(threads_before | {t for t in threading.enumerate() if t.name == IO_THREAD_NAME})
    assert len([t for t in threading.enumerate() if t.name.startswith(IO_THREAD_NAME)]) == 1


def test_consume_on_io_thread_a_slow_listener_runs_in_parallel_on_the_consume_threads(
    embedded_cluster: EmbeddedCluster, producer: Producer, unique_name: Callable[..., str]
) -> None:
    """``consume_on_io_thread`` (the default) with a listener that blocks (200 ms a batch):
    the first batch run on the I/O thread has its loop handed off by the watchdog, and the
    batches after it go to the consume threads at once, where they run in parallel (Java's
    model): the 24 batches take far less than their 4.8 s one after another."""
    topic, group = unique_name("T"), unique_name("G")
    embedded_cluster.create_topic(topic, 4)
    _send(producer, topic, 96)
    calls: list[tuple[str, float, float]] = []  # (thread, start, end)
    lock = threading.Lock()

    def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        start = time.monotonic()
        time.sleep(0.2)
        with lock:
            calls.append((threading.current_thread().name, start, time.monotonic()))
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    consumer = _consumer(embedded_cluster, group, topic, listener, consume_message_batch_max_size=4)
    consumer.start()
    try:
        wait_until(lambda: len(calls) >= 24, 30, "every batch")
        first = min(start for _, start, _ in calls)
        last = max(end for _, _, end in calls)
        assert last - first < 3.0, f"{last - first:.1f} s: the batches ran one after another"
        # several ran at once
        peak = max(sum(1 for _, s, e in calls if s <= t < e) for _, t, _ in calls)
        assert peak >= 4, peak
        names = Counter(name for name, _, _ in calls)
        assert sum(n for name, n in names.items() if name.startswith("ConsumeMessageThread_")) >= 20, names
        assert consumer._inline_pauses >= 1
    finally:
        consumer.shutdown()
