"""AsyncPushConsumer against the embedded broker: the sync consumer's black-box scenarios."""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from rocketq.admin import Admin
from rocketq.aio import AsyncProducer
from rocketq.aio.push import AsyncPushConsumer
from rocketq.client import (
    ClientConfig,
    ConsumeConcurrentlyContext,
    ConsumeConcurrentlyStatus,
    ConsumeFromWhere,
    ConsumeOrderlyContext,
    ConsumeOrderlyStatus,
    Message,
    MessageQueue,
    PushConsumerConfig,
)
from rocketq.client.consumer.listener import ConsumeMessageContext
from rocketq.client.message_selector import MessageSelector
from rocketq.client.selectors import SelectMessageQueueByHash
from rocketq.errors import BrokerError
from rocketq.protocol.bodies import ConsumerRunningInfo
from rocketq.protocol.heartbeat import MessageModel
from rocketq.protocol.message import MessageExt
from rocketq.testing.cluster import EmbeddedCluster
from rocketq.testing.waits import async_wait_until, wait_for_dlq
from tests.integration.test_aio_producer import LOOPS, run
from tests.integration.test_orderly_consumer import Delivery, check_exclusive, check_order
from tests.integration.test_push_consumer import fail_caching_twice

pytestmark = pytest.mark.integration

FAST = ClientConfig(poll_name_server_interval_ms=1000, rebalance_interval_ms=1000)


def _consumer(cluster: EmbeddedCluster, group: str, topic: str, **config: object) -> AsyncPushConsumer:
    cfg = PushConsumerConfig(
        consumer_group=group,
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        **config,  # type: ignore[arg-type]
    )
    consumer = AsyncPushConsumer(config=cfg, namesrv_addr=cluster.namesrv_addr, client_config=FAST)
    consumer.subscribe(topic, "*")
    return consumer


class _Hook:
    """A ConsumeMessageHook counting its calls."""

    def __init__(self) -> None:
        self.before = 0
        self.after = 0
        self.outcomes: list[tuple[str, bool]] = []

    def hook_name(self) -> str:
        return "counting"

    def consume_message_before(self, context: ConsumeMessageContext) -> None:
        self.before += 1

    def consume_message_after(self, context: ConsumeMessageContext) -> None:
        self.after += 1
        self.outcomes.append((context.props["ConsumeContextType"], context.success))


def test_concurrent_retry_through_retry_topic_delay_levels_and_dlq(
    embedded_cluster: EmbeddedCluster, unique_name: Callable[..., str]
) -> None:
    topic, group = unique_name("T"), unique_name("G")
    embedded_cluster.create_topic(topic, 2)
    attempts: list[tuple[str, int, float, str]] = []
    threads_before = set(threading.enumerate())

    async def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        ctx.delay_level_when_next_consume = 1  # 1 s
        for m in msgs:
            attempts.append((m.body.decode(), m.reconsume_times, time.monotonic(), m.topic))
        if any(m.body == b"poison" for m in msgs):
            return ConsumeConcurrentlyStatus.RECONSUME_LATER
        await asyncio.sleep(0)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    async def main() -> None:
        consumer = _consumer(embedded_cluster, group, topic, max_reconsume_times=2)
        consumer.register_message_listener(listener)
        async with (
            consumer,
            AsyncProducer(unique_name("PG"), namesrv_addr=embedded_cluster.namesrv_addr) as p,
        ):
            await p.send(Message(topic, b"fine"))
            await p.send(Message(topic, b"poison"))
            await async_wait_until(
                lambda: len([a for a in attempts if a[0] == "poison"]) >= 3, 40, "3 attempts"
            )
            assert set(threading.enumerate()) == threads_before  # no thread of its own
        poison = [a for a in attempts if a[0] == "poison"]
        assert [a[1] for a in poison] == [0, 1, 2]
        # each retry came back through %RETRY% after the 1 s delay level, under its own topic
        assert all(b[2] - a[2] >= 0.9 for a, b in itertools.pairwise(poison))
        assert {a[3] for a in poison} == {topic}
        assert next(a for a in attempts if a[0] == "fine")[1] == 0

    asyncio.run(main())
    found = wait_for_dlq(embedded_cluster, group, unique_name("dlqreader"))
    assert [m.body for m in found] == [b"poison"]
    assert found[0].properties.get("RETRY_TOPIC") == topic
    assert found[0].reconsume_times == 3


@pytest.mark.parametrize("kind", LOOPS)
def test_exactly_once_offsets_honoured_by_a_restarted_member_and_admin_requests(
    kind: str, embedded_cluster: EmbeddedCluster, unique_name: Callable[..., str]
) -> None:
    topic, group = unique_name("T"), unique_name("G")
    embedded_cluster.create_topic(topic, 4)
    seen: Counter[bytes] = Counter()
    ns = embedded_cluster.namesrv_addr

    async def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        for m in msgs:
            seen[m.body] += 1
        await asyncio.sleep(0.001)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    async def main() -> None:
        async with AsyncProducer(unique_name("PG"), namesrv_addr=ns) as p:
            await asyncio.gather(*[p.send(Message(topic, f"a{i}".encode())) for i in range(200)])
            consumer = _consumer(embedded_cluster, group, topic)
            consumer.register_message_listener(listener)
            hook = _Hook()
            consumer.register_consume_message_hook(hook)
            async with consumer:
                await async_wait_until(lambda: len(seen) >= 200, 30, "the first 200 messages")
                # consume hooks (tracing) ran around every listener call, with its outcome
                assert hook.before == hook.after >= 1
                assert set(hook.outcomes) == {("SUCCESS", True)}
                # mqadmin consumerStatus reaches the async client (GET_CONSUMER_RUNNING_INFO)
                with Admin(ns) as admin:
                    info = await asyncio.to_thread(admin.consumer_running_info, group, consumer.client_id)
                assert {mq.topic for mq in info.mq_table} >= {topic}
                assert info.properties[ConsumerRunningInfo.PROP_CONSUME_ORDERLY] == "false"
                assert info.properties[ConsumerRunningInfo.PROP_CONSUME_TYPE] == "CONSUME_PASSIVELY"
            # the member left with its offsets persisted; a restarted one continues after them
            await asyncio.gather(*[p.send(Message(topic, f"b{i}".encode())) for i in range(100)])
            restarted = _consumer(embedded_cluster, group, topic)
            restarted.register_message_listener(listener)
            async with restarted:
                await async_wait_until(lambda: len(seen) >= 300, 30, "the next 100 messages")
                await asyncio.sleep(0.5)  # nothing else may arrive
        assert set(seen) == {f"a{i}".encode() for i in range(200)} | {f"b{i}".encode() for i in range(100)}
        assert max(seen.values()) == 1, "a restarted member consumed something twice"

    run(kind, main())


@pytest.mark.slow
def test_orderly_per_key_order_with_a_member_joining_and_one_leaving(
    embedded_cluster: EmbeddedCluster, unique_name: Callable[..., str]
) -> None:
    users, events = 40, 25
    topic, group = unique_name("wallet"), unique_name("G")
    embedded_cluster.create_topic(topic, 8)
    deliveries: list[Delivery] = []
    ns = embedded_cluster.namesrv_addr

    def listener_of(name: str) -> Callable[[list[MessageExt], ConsumeOrderlyContext], object]:
        async def listener(msgs: list[MessageExt], ctx: ConsumeOrderlyContext) -> ConsumeOrderlyStatus:
            t0 = time.time()
            await asyncio.sleep(0.002)  # other queues' tasks run meanwhile
            t1 = time.time()
            for m in msgs:
                user, seq = m.body.decode().split(":")[:2]
                deliveries.append((user, int(seq), name, ctx.message_queue.queue_id, t0, t1))
            return ConsumeOrderlyStatus.SUCCESS

        return listener

    def orderly(name: str) -> AsyncPushConsumer:
        c = _consumer(embedded_cluster, group, topic, lock_interval_ms=1000, lock_max_live_time_ms=3000)
        c.register_message_listener_orderly(listener_of(name))  # type: ignore[arg-type]
        return c

    async def main() -> None:
        async with AsyncProducer(unique_name("PG"), namesrv_addr=ns) as p:
            selector = SelectMessageQueueByHash()
            for seq in range(events):
                await asyncio.gather(
                    *[
                        p.send(Message(topic, f"user{u}:{seq}".encode()), selector=selector, arg=f"user{u}")
                        for u in range(users)
                    ]
                )
        a, b = orderly("A"), orderly("B")
        await a.start()
        try:
            await async_wait_until(lambda: len(deliveries) > 200, 30, "A to consume")
            await b.start()  # joins: queues move to B once A unlocked them
            await async_wait_until(lambda: any(d[2] == "B" for d in deliveries), 30, "B to take queues")
            await a.shutdown()  # leaves: B takes every queue
            await async_wait_until(
                lambda: len({(d[0], d[1]) for d in deliveries}) == users * events, 60, "every event"
            )
            assert len(b.assigned_queues(topic)) == 8
        finally:
            await a.shutdown()
            await b.shutdown()
        check_order(deliveries, users, events)
        check_exclusive(deliveries)

    asyncio.run(main())


def test_orderly_suspend_retries_then_dlq_and_the_queue_continues(
    embedded_cluster: EmbeddedCluster, unique_name: Callable[..., str]
) -> None:
    topic, group = unique_name("T"), unique_name("G")
    embedded_cluster.create_topic(topic, 1)
    seen: list[tuple[str, int]] = []

    async def listener(msgs: list[MessageExt], ctx: ConsumeOrderlyContext) -> ConsumeOrderlyStatus:
        ctx.suspend_current_queue_time_millis = 50
        for m in msgs:
            seen.append((m.body.decode(), m.reconsume_times))
        if msgs[0].body == b"bad":
            return ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT
        return ConsumeOrderlyStatus.SUCCESS

    async def main() -> None:
        q0 = MessageQueue(topic, embedded_cluster.broker_names[0], 0)
        async with AsyncProducer(unique_name("pg"), namesrv_addr=embedded_cluster.namesrv_addr) as p:
            for body in (b"first", b"bad", b"after"):
                await p.send(Message(topic, body), queue=q0)
        consumer = _consumer(embedded_cluster, group, topic, max_reconsume_times=3)
        consumer.register_message_listener_orderly(listener)
        async with consumer:
            await async_wait_until(lambda: ("after", 0) in seen, 30, "the queue to move past the bad message")
            assert consumer.orderly_dlq_count == 1

    asyncio.run(main())
    assert seen == [("first", 0), ("bad", 0), ("bad", 1), ("bad", 2), ("bad", 3), ("after", 0)]
    found = wait_for_dlq(embedded_cluster, group, unique_name("dlq"))
    assert [m.body for m in found] == [b"bad"]


def test_cancelling_the_owner_task_leaves_no_task_behind(
    embedded_cluster: EmbeddedCluster, unique_name: Callable[..., str]
) -> None:
    topic, group = unique_name("T"), unique_name("G")
    embedded_cluster.create_topic(topic, 2)
    started = asyncio.Event

    async def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    async def service(ready: asyncio.Event) -> None:
        consumer = _consumer(embedded_cluster, group, topic)
        consumer.register_message_listener(listener)
        async with consumer:
            await async_wait_until(lambda: len(consumer.assigned_queues(topic)) == 2, 20, "queues")
            ready.set()
            await asyncio.sleep(3600)

    async def main() -> None:
        ready = started()
        task = asyncio.create_task(service(ready))
        await asyncio.wait_for(ready.wait(), 30)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        leftover = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        assert leftover == []

    asyncio.run(main())


def test_consumer_started_before_its_topic_gets_messages_quickly(
    embedded_cluster: EmbeddedCluster, unique_name: Callable[..., str]
) -> None:
    topic, group = unique_name("late_topic"), unique_name("late_group")
    got: list[bytes] = []

    async def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        got.extend(m.body for m in msgs)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    async def main() -> None:
        # the Java defaults: a 30 s route poll and a 20 s rebalance
        config = ClientConfig(poll_name_server_interval_ms=30_000, rebalance_interval_ms=20_000)
        consumer = AsyncPushConsumer(group, namesrv_addr=embedded_cluster.namesrv_addr, client_config=config)
        consumer.subscribe(topic, "*")
        consumer.register_message_listener(listener)
        async with consumer:
            await asyncio.sleep(1.5)  # the consumer is waiting for a topic that does not exist yet
            async with AsyncProducer(unique_name("late_pg"), namesrv_addr=embedded_cluster.namesrv_addr) as p:
                await p.send(Message(topic, b"first"))  # auto-creates the topic
            await async_wait_until(lambda: b"first" in got, 15, "the first message of a late topic")

    asyncio.run(main())


def test_a_failure_while_caching_a_pull_pulls_the_batch_again(
    embedded_cluster: EmbeddedCluster, unique_name: Callable[..., str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An exception while a pull is cached ends neither the queue's pull task nor skips the batch."""
    topic, group = unique_name("T"), unique_name("G")
    embedded_cluster.create_topic(topic, 1)
    bodies = {f"m-{i}".encode() for i in range(40)}
    failures = fail_caching_twice(monkeypatch)
    seen: Counter[bytes] = Counter()

    async def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        seen.update(m.body for m in msgs)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    async def main() -> None:
        async with AsyncProducer(unique_name("pg"), namesrv_addr=embedded_cluster.namesrv_addr) as p:
            for body in sorted(bodies):
                await p.send(Message(topic, body))
        cfg = PushConsumerConfig(
            consumer_group=group,
            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
            pull_batch_size=8,
        )
        client = dataclasses.replace(FAST, pull_time_delay_mills_when_exception_ms=100)
        consumer = AsyncPushConsumer(
            config=cfg, namesrv_addr=embedded_cluster.namesrv_addr, client_config=client
        )
        consumer.subscribe(topic, "*")
        consumer.register_message_listener(listener)
        async with consumer:
            await async_wait_until(lambda: set(seen) == bodies, 30, "every message despite the failed pulls")
        assert failures[0] == 2

    asyncio.run(main())


def test_admin_reset_offset_online_and_consume_message_directly_reach_the_async_client(
    embedded_cluster: EmbeddedCluster, unique_name: Callable[..., str]
) -> None:
    topic, group = unique_name("T"), unique_name("G")
    embedded_cluster.create_topic(topic, 2)
    ns = embedded_cluster.namesrv_addr
    seen: list[bytes] = []

    async def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        seen.extend(m.body for m in msgs)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    async def main() -> None:
        async with AsyncProducer(unique_name("PG"), namesrv_addr=ns) as p:
            results = [await p.send(Message(topic, f"m{i}".encode())) for i in range(10)]
        consumer = _consumer(embedded_cluster, group, topic)
        consumer.register_message_listener(listener)
        async with consumer:
            await async_wait_until(lambda: len(seen) >= 10, 30, "the first pass")
            await consumer.persist_consumer_offset()  # the broker refuses a reset before any offset
            with Admin(ns) as admin:
                # RESET_CONSUMER_CLIENT_OFFSET, relayed by the broker: back to the start
                deadline = time.monotonic() + 10
                while True:
                    try:
                        reset = await asyncio.to_thread(admin.reset_offset_by_time, group, topic, 0)
                        break
                    except BrokerError as exc:  # the oneway offset update has not landed yet
                        if "not exist" not in str(exc) or time.monotonic() > deadline:
                            raise
                        await asyncio.sleep(0.05)
                assert reset.queues
                await async_wait_until(lambda: len(seen) >= 20, 30, "a second pass after the reset")
                assert sorted(seen[10:20]) == sorted(seen[:10])
                # CONSUME_MESSAGE_DIRECTLY: the broker hands one stored message to this client
                store_addr = (
                    embedded_cluster.broker_addrs[0] if hasattr(embedded_cluster, "broker_addrs") else None
                )
                addr = store_addr or (await asyncio.to_thread(admin.topic_brokers, topic))[0][1]
                answer = await asyncio.to_thread(
                    admin.api.consume_message_directly,
                    addr,
                    group,
                    consumer.client_id,
                    results[3].offset_msg_id,
                    9000,
                )
            assert answer.consume_result is not None and answer.consume_result.name == "CR_SUCCESS"
            assert seen.count(b"m3") >= 3

    asyncio.run(main())


def test_shutdown_bounds_a_hung_listener_and_its_message_is_redelivered(
    embedded_cluster: EmbeddedCluster, unique_name: Callable[..., str]
) -> None:
    topic, group = unique_name("T"), unique_name("G")
    embedded_cluster.create_topic(topic, 1)
    calls: list[str] = []
    hang = asyncio.Event  # the listener waits on an event nobody sets

    async def hung(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        calls.append("hung")
        await hang().wait()
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    async def fine(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        calls.extend(m.body.decode() for m in msgs)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    async def main() -> None:
        async with AsyncProducer(unique_name("PG"), namesrv_addr=embedded_cluster.namesrv_addr) as p:
            await p.send(Message(topic, b"only"))
        first = _consumer(embedded_cluster, group, topic, await_termination_millis_when_shutdown=300)
        first.register_message_listener(hung)
        await first.start()
        await async_wait_until(lambda: calls == ["hung"], 30, "the listener to start")
        started = time.monotonic()
        await first.shutdown()
        assert time.monotonic() - started < 5
        assert [t for t in asyncio.all_tasks() if t is not asyncio.current_task()] == []
        second = _consumer(embedded_cluster, group, topic)
        second.register_message_listener(fine)
        async with second:  # nothing was committed past the unfinished message
            await async_wait_until(lambda: "only" in calls, 30, "the redelivery")

    asyncio.run(main())


def test_broadcasting_delivers_every_message_to_every_consumer(
    embedded_cluster: EmbeddedCluster, unique_name: Callable[..., str], tmp_path: Path
) -> None:
    topic, group = unique_name("T"), unique_name("G")
    embedded_cluster.create_topic(topic, 4)
    received: list[list[bytes]] = [[], []]

    def listener_into(sink: list[bytes]) -> Callable[[list[MessageExt], ConsumeConcurrentlyContext], object]:
        async def listener(
            msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext
        ) -> ConsumeConcurrentlyStatus:
            sink.extend(m.body for m in msgs)
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

        return listener

    async def main() -> None:
        consumers = []
        for i in range(2):
            c = _consumer(
                embedded_cluster,
                group,
                topic,
                message_model=MessageModel.BROADCASTING,
                offset_store_dir=str(tmp_path / f"c{i}"),
            )
            c.register_message_listener(listener_into(received[i]))  # type: ignore[arg-type]
            consumers.append(c)
        for c in consumers:
            await c.start()
        try:
            await async_wait_until(
                lambda: all(len(c.assigned_queues(topic)) == 4 for c in consumers), 20, "all queues each"
            )
            async with AsyncProducer(unique_name("PG"), namesrv_addr=embedded_cluster.namesrv_addr) as p:
                await asyncio.gather(*[p.send(Message(topic, f"m{i}".encode())) for i in range(100)])
            await async_wait_until(lambda: all(len(r) >= 100 for r in received), 30, "everything, twice")
        finally:
            for c in consumers:
                await c.shutdown()

    asyncio.run(main())
    expected = sorted(f"m{i}".encode() for i in range(100))
    assert sorted(received[0]) == expected and sorted(received[1]) == expected
    assert list(tmp_path.rglob("offsets.json")), "broadcasting offsets are kept in a local file"


def test_sql92_subscription_is_filtered_by_the_broker(unique_name: Callable[..., str]) -> None:
    topic, group = unique_name("sqlt"), unique_name("sqlg")
    got: list[str] = []

    async def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        got.extend(m.keys[0] for m in msgs)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    with EmbeddedCluster(broker_conf={"enablePropertyFilter": "true"}) as cluster:
        cluster.create_topic(topic, 2)

        async def main() -> None:
            async with AsyncProducer(unique_name("pg"), namesrv_addr=cluster.namesrv_addr) as p:
                for i in range(30):
                    await p.send(Message(topic, b"x", keys=f"k{i}", properties={"a": str(i % 10)}))
            consumer = _consumer(cluster, group, topic)
            consumer.subscribe(topic, MessageSelector.by_sql("a BETWEEN 3 AND 5"))
            consumer.register_message_listener(listener)
            async with consumer:
                await async_wait_until(lambda: len(got) >= 9, 30, "the matching messages")

        asyncio.run(main())
    assert sorted(got) == sorted(f"k{i}" for i in range(30) if 3 <= i % 10 <= 5)


@pytest.mark.parametrize("kind", LOOPS)
def test_four_members_of_one_group_on_one_loop_drain_every_queue_and_shut_down(
    kind: str, embedded_cluster: EmbeddedCluster, unique_name: Callable[..., str]
) -> None:
    """The A4b benchmark shape, several rounds: 4 AsyncPushConsumers of one group on one loop
    take every message of every queue, and shutting them down one after another returns.
    Each member's UNREGISTER_CLIENT makes the broker send NOTIFY_CONSUMER_IDS_CHANGED to the
    others while they close; a rebalance loop woken in the step its cancel landed used to
    survive the cancel (asyncio.wait_for, gh-86296) and close() hung forever."""
    topic = unique_name("T")
    embedded_cluster.create_topic(topic, 4)
    ns = embedded_cluster.namesrv_addr
    total = 400

    async def round_(group: str) -> None:
        seen: set[tuple[int, int]] = set()
        done = asyncio.Event()

        async def listener(
            msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext
        ) -> ConsumeConcurrentlyStatus:
            seen.update((m.queue_id, m.queue_offset) for m in msgs)
            if len(seen) >= total:
                done.set()
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

        members = []
        for _ in range(4):
            consumer = _consumer(embedded_cluster, group, topic, consume_message_batch_max_size=32)
            consumer.register_message_listener(listener)
            members.append(consumer)
        try:
            for consumer in members:
                await consumer.start()
            await asyncio.wait_for(done.wait(), 20.0)
            assert {q for q, _ in seen} == {0, 1, 2, 3}
        finally:
            for consumer in members:
                await asyncio.wait_for(consumer.shutdown(), 15.0)

    async def main() -> None:
        async with AsyncProducer(unique_name("PG"), namesrv_addr=ns) as p:
            await asyncio.gather(*[p.send(Message(topic, f"m{i}".encode())) for i in range(total)])
        for _ in range(6):
            await round_(unique_name("G"))

    run(kind, main())


def test_orderly_without_auto_commit_commits_only_on_commit_and_rolls_back(
    embedded_cluster: EmbeddedCluster, unique_name: Callable[..., str]
) -> None:
    """``ctx.auto_commit = False``: SUCCESS keeps the offset, ROLLBACK redelivers from the last
    commit, COMMIT commits; a restarted member resumes at the committed offset."""
    topic, group = unique_name("T"), unique_name("G")
    embedded_cluster.create_topic(topic, 1)
    seen: list[int] = []
    rolled_back: list[bool] = []

    async def listener(msgs: list[MessageExt], ctx: ConsumeOrderlyContext) -> ConsumeOrderlyStatus:
        ctx.auto_commit = False
        ctx.suspend_current_queue_time_millis = 50
        i = int(msgs[0].body)
        seen.append(i)
        if i == 2 and not rolled_back:
            rolled_back.append(True)
            return ConsumeOrderlyStatus.ROLLBACK  # back to the last commit (offset 0)
        if i == 2:
            return ConsumeOrderlyStatus.COMMIT  # commits 0..2
        return ConsumeOrderlyStatus.SUCCESS  # consumed, not committed

    async def main() -> None:
        q0 = MessageQueue(topic, embedded_cluster.broker_names[0], 0)
        async with AsyncProducer(unique_name("pg"), namesrv_addr=embedded_cluster.namesrv_addr) as p:
            for i in range(6):
                await p.send(Message(topic, str(i).encode()), queue=q0)
        consumer = _consumer(embedded_cluster, group, topic)
        consumer.register_message_listener_orderly(listener)
        async with consumer:
            await async_wait_until(lambda: len(seen) == 9, 30, "the rollback and the rest consumed")
            assert seen == [0, 1, 2, 0, 1, 2, 3, 4, 5]
        # 3..5 were consumed with SUCCESS but never committed: a new member gets them again
        again: list[int] = []

        async def second(msgs: list[MessageExt], ctx: ConsumeOrderlyContext) -> ConsumeOrderlyStatus:
            again.extend(int(m.body) for m in msgs)
            return ConsumeOrderlyStatus.SUCCESS

        restarted = _consumer(embedded_cluster, group, topic)
        restarted.register_message_listener_orderly(second)
        async with restarted:
            await async_wait_until(lambda: len(again) >= 3, 30, "the uncommitted messages redelivered")
        assert again == [3, 4, 5]

    asyncio.run(main())
