"""rocketq.aio against the embedded broker: every send mode, lite pull, thread counts, uvloop."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest

from rocketq.aio import AsyncProducer
from rocketq.aio.lite_pull import AsyncLitePullConsumer
from rocketq.client import (
    ConsumeFromWhere,
    LitePullConsumerConfig,
    Message,
    MessageQueue,
    ProducerConfig,
    SendStatus,
)
from rocketq.client.selectors import SelectMessageQueueByHash
from rocketq.client.send_message_hook import SendMessageContext
from rocketq.errors import ClientError, IllegalArgumentError
from rocketq.protocol.heartbeat import MessageModel
from rocketq.protocol.message import MessageExt
from rocketq.testing.cluster import EmbeddedCluster
from rocketq.testing.waits import async_wait_until

try:
    import uvloop
except ImportError:  # pragma: no cover - optional extra
    uvloop = None  # type: ignore[assignment]

pytestmark = pytest.mark.integration

LOOPS = ["asyncio", *(["uvloop"] if uvloop is not None else [])]


def run(kind: str, coro: Coroutine[Any, Any, None]) -> None:
    if kind == "uvloop":
        assert uvloop is not None
        uvloop.run(coro)
    else:
        asyncio.run(coro)


class _RecordingHook:
    """A SendMessageHook recording its calls."""

    def __init__(self, seen: list[tuple[str, object]]) -> None:
        self.seen = seen

    def hook_name(self) -> str:
        return "recording"

    def send_message_before(self, context: SendMessageContext) -> None:
        self.seen.append(("before", context.topic))

    def send_message_after(self, context: SendMessageContext) -> None:
        self.seen.append(("after", context.send_result))


def _cfg(group: str, **kw: object) -> LitePullConsumerConfig:
    return LitePullConsumerConfig(
        consumer_group=group,
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        **kw,  # type: ignore[arg-type]
    )


async def _poll_until(consumer: AsyncLitePullConsumer, n: int, timeout_s: float = 15) -> list[MessageExt]:
    got: list[MessageExt] = []
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while len(got) < n and loop.time() < deadline:
        got.extend(await consumer.poll(200))
    return got


@pytest.mark.parametrize("kind", LOOPS)
def test_every_send_mode_and_no_thread_per_client(
    kind: str, embedded_cluster: EmbeddedCluster, unique_name: Callable[..., str]
) -> None:
    topic = unique_name("T")
    embedded_cluster.create_topic(topic, 4)
    ns = embedded_cluster.namesrv_addr

    async def main() -> None:
        threads_before = set(threading.enumerate())
        async with AsyncProducer(unique_name("PG"), namesrv_addr=ns) as producer:
            single = await producer.send(Message(topic, b"single", keys=["k1"]))
            assert single.status is SendStatus.SEND_OK
            batch = await producer.send([Message(topic, b"b1"), Message(topic, b"b2")])
            assert batch.msg_id.count(",") == 1
            q2 = MessageQueue(topic, embedded_cluster.broker_names[0], 2)
            explicit = await producer.send(Message(topic, b"to-q2"), queue=q2)
            assert explicit.message_queue == q2
            by_key = [
                await producer.send(
                    Message(topic, f"k{i}".encode()), selector=SelectMessageQueueByHash(), arg="order-7"
                )
                for i in range(3)
            ]
            assert len({r.message_queue for r in by_key}) == 1
            big = await producer.send(Message(topic, b"z" * 10_000))  # compressed on the wire
            assert big.status is SendStatus.SEND_OK
            await producer.send_oneway(Message(topic, b"oneway"))
            many = await asyncio.gather(
                *[producer.send(Message(topic, f"p{i}".encode())) for i in range(200)]
            )
            assert all(r.status is SendStatus.SEND_OK for r in many)
            with pytest.raises(IllegalArgumentError):
                await producer.send(Message(topic, b""))
            with pytest.raises(IllegalArgumentError):
                await producer.send(Message(topic, b"x"), queue=MessageQueue("other", "broker-a", 0))
            # a producer and a consumer, both running: no thread beyond what this loop owns
            consumer = AsyncLitePullConsumer(config=_cfg(unique_name("LG")), namesrv_addr=ns)
            consumer.subscribe(topic)
            async with consumer:
                got = await _poll_until(consumer, 209)
                assert set(threading.enumerate()) == threads_before
        bodies = sorted(m.body for m in got)
        expected = [b"single", b"b1", b"b2", b"to-q2", b"k0", b"k1", b"k2", b"z" * 10_000, b"oneway"]
        expected += [f"p{i}".encode() for i in range(200)]
        assert bodies == sorted(expected)
        assert next(m for m in got if m.body == b"single").keys == ["k1"]
        assert set(threading.enumerate()) == threads_before
        with pytest.raises(ClientError, match="not OK"):
            await producer.send(Message(topic, b"after"))

    run(kind, main())


def test_lite_pull_assign_seek_commit_and_restart_resumes(
    embedded_cluster: EmbeddedCluster, unique_name: Callable[..., str]
) -> None:
    topic, group = unique_name("T"), unique_name("LG")
    embedded_cluster.create_topic(topic, 2)
    ns = embedded_cluster.namesrv_addr
    q0 = MessageQueue(topic, embedded_cluster.broker_names[0], 0)

    async def main() -> None:
        async with AsyncProducer(unique_name("PG"), namesrv_addr=ns) as producer:
            seen: list[tuple[str, object]] = []
            producer.register_send_message_hook(_RecordingHook(seen))
            for i in range(6):
                await producer.send(Message(topic, f"m{i}".encode()), queue=q0)
            # send hooks ran around every attempt, the result in the after-call
            assert [k for k, _ in seen] == ["before", "after"] * 6
            assert all(getattr(r, "queue_offset", None) == i for i, (_, r) in enumerate(seen[1::2]))
        async with AsyncLitePullConsumer(config=_cfg(group, auto_commit=False), namesrv_addr=ns) as c:
            with pytest.raises(ClientError, match="not subscribe"):
                await c.poll(10)
            c.assign([q0])
            got = await _poll_until(c, 6)
            assert [m.body for m in got] == [f"m{i}".encode() for i in range(6)]
            await c.seek(q0, 2)
            again = await _poll_until(c, 4)
            assert [m.queue_offset for m in again] == [2, 3, 4, 5]
            with pytest.raises(IllegalArgumentError, match="Seek offset illegal"):
                await c.seek(q0, 99)
            await c.commit({q0: 4})
            assert await c.committed(q0) == 4
        # a restarted member resumes from the committed offset (read from the broker)
        async with AsyncLitePullConsumer(config=_cfg(group), namesrv_addr=ns) as c2:
            c2.assign([q0])
            rest = await _poll_until(c2, 2)
            assert [m.body for m in rest] == [b"m4", b"m5"]
            # async for yields one message at a time
            await c2.seek(q0, 5)
            async for msg in c2:
                assert msg.body == b"m5"
                break

    asyncio.run(main())


def test_lite_pull_broadcasting_gives_every_member_every_message_and_keeps_offsets_locally(
    embedded_cluster: EmbeddedCluster, unique_name: Callable[..., str], tmp_path: Path
) -> None:
    """BROADCASTING: two members of one group each get all messages (no split), and the
    consumed offsets live in the local store file, so a restarted member resumes there."""
    topic, group = unique_name("T"), unique_name("LG")
    embedded_cluster.create_topic(topic, 2)
    ns = embedded_cluster.namesrv_addr
    bodies = sorted(f"m{i}".encode() for i in range(10))

    def cfg(store: Path) -> LitePullConsumerConfig:
        return _cfg(
            group,
            message_model=MessageModel.BROADCASTING,
            offset_store_dir=str(store),
            auto_commit_interval_ms=1000,
        )

    async def drain(c: AsyncLitePullConsumer, n: int) -> list[bytes]:
        return sorted(m.body for m in await _poll_until(c, n, 20))

    async def main() -> None:
        a = AsyncLitePullConsumer(config=cfg(tmp_path / "a"), namesrv_addr=ns)
        b = AsyncLitePullConsumer(config=cfg(tmp_path / "b"), namesrv_addr=ns)
        a.subscribe(topic, "*")
        b.subscribe(topic, "*")
        async with a, b:
            await async_wait_until(
                lambda: len(a.assignment()) == 2 and len(b.assignment()) == 2, 15, "both own every queue"
            )
            async with AsyncProducer(unique_name("PG"), namesrv_addr=ns) as producer:
                for body in bodies:
                    await producer.send(Message(topic, body))
            got_a, got_b = await asyncio.gather(drain(a, 10), drain(b, 10))
            assert got_a == bodies and got_b == bodies
            await a.commit()
            assert sum([await a.committed(mq) for mq in a.assignment()]) == 10
        # the broker holds no offset of a broadcasting group; a's local file does
        async with AsyncProducer(unique_name("PG"), namesrv_addr=ns) as producer:
            await producer.send(Message(topic, b"late"))
        again = AsyncLitePullConsumer(config=cfg(tmp_path / "a"), namesrv_addr=ns)
        again.subscribe(topic, "*")
        async with again:
            assert [m.body for m in await _poll_until(again, 1, 20)] == [b"late"]

    asyncio.run(main())


def test_lite_pull_subscribe_rebalances_between_two_members(
    embedded_cluster: EmbeddedCluster, unique_name: Callable[..., str]
) -> None:
    topic, group = unique_name("T"), unique_name("LG")
    embedded_cluster.create_topic(topic, 4)
    ns = embedded_cluster.namesrv_addr

    async def main() -> None:
        a = AsyncLitePullConsumer(config=_cfg(group), namesrv_addr=ns)
        b = AsyncLitePullConsumer(config=_cfg(group), namesrv_addr=ns)
        a.subscribe(topic, "TagA")
        b.subscribe(topic, "TagA")
        async with a:
            await async_wait_until(lambda: len(a.assignment()) == 4, 15, "a to own all 4 queues")
            async with b:
                # b's heartbeat makes the broker notify a (NOTIFY_CONSUMER_IDS_CHANGED)
                await async_wait_until(
                    lambda: len(a.assignment()) == 2 and len(b.assignment()) == 2, 20, "a 2/2 split"
                )
                assert not a.assignment() & b.assignment()
                async with AsyncProducer(unique_name("PG"), namesrv_addr=ns) as producer:
                    for i in range(20):
                        tag = "TagA" if i % 2 else "TagB"
                        await producer.send(Message(topic, f"m{i}".encode(), tags=tag))
                got: list[MessageExt] = []

                async def drain(c: AsyncLitePullConsumer) -> None:
                    while len(got) < 10:
                        got.extend(await c.poll(100))

                await asyncio.wait_for(asyncio.gather(drain(a), drain(b)), 20)
                assert sorted(m.body for m in got) == sorted(f"m{i}".encode() for i in range(1, 20, 2))
            await async_wait_until(lambda: len(a.assignment()) == 4, 20, "a to take all queues back")

    asyncio.run(main())


def test_auto_batch_sends_concurrent_messages_as_batches_with_a_result_each(
    embedded_cluster: EmbeddedCluster, unique_name: Callable[..., str]
) -> None:
    topic = unique_name("T")
    embedded_cluster.create_topic(topic, 4)
    ns = embedded_cluster.namesrv_addr

    async def main() -> None:
        cfg = ProducerConfig(producer_group=unique_name("PG"), auto_batch=True)
        async with AsyncProducer(namesrv_addr=ns, config=cfg) as producer:
            results = await asyncio.gather(
                *[producer.send(Message(topic, f"m{i}".encode())) for i in range(500)]
            )
            assert producer._accumulator is not None
            batches = producer._accumulator.batches_sent
            # a caller that gives up does not lose the others' results
            late = asyncio.ensure_future(producer.send(Message(topic, b"cancelled")))
            others = [asyncio.ensure_future(producer.send(Message(topic, b"kept"))) for _ in range(20)]
            late.cancel()
            assert all(r.status is SendStatus.SEND_OK for r in await asyncio.gather(*others))
            # send_async: the accumulator's own future per message (no task); a batch or an
            # explicit queue goes as a task of send()
            before = producer._accumulator.batches_sent
            futures = [producer.send_async(Message(topic, f"f{i}".encode())) for i in range(100)]
            assert not any(isinstance(f, asyncio.Task) for f in futures)
            q1 = MessageQueue(topic, embedded_cluster.broker_names[0], 1)
            explicit = producer.send_async(Message(topic, b"q1"), queue=q1)
            assert isinstance(explicit, asyncio.Task)
            done = await asyncio.gather(*futures)
            assert len({r.msg_id for r in done}) == 100
            assert producer._accumulator.batches_sent - before < 50
            assert (await explicit).message_queue == q1
            for kw in ({}, {"queue": q1}):  # accumulated or not, a bad message raises at once
                with pytest.raises(IllegalArgumentError, match="body length is zero"):
                    producer.send_async(Message(topic, b""), **kw)  # type: ignore[arg-type]
        assert all(r.status is SendStatus.SEND_OK for r in results)
        assert len({r.msg_id for r in results}) == 500
        assert len({(r.message_queue, r.queue_offset) for r in results}) == 500
        assert batches < 250, f"{batches} requests for 500 concurrent sends: not batched"
        async with AsyncLitePullConsumer(config=_cfg(unique_name("LG")), namesrv_addr=ns) as consumer:
            consumer.subscribe(topic)
            got = await _poll_until(consumer, 621)
        bodies = [m.body for m in got]
        assert sorted(b for b in bodies if b.startswith(b"f")) == sorted(f"f{i}".encode() for i in range(100))
        assert sorted(b for b in bodies if b.startswith(b"m")) == sorted(f"m{i}".encode() for i in range(500))
        assert bodies.count(b"kept") == 20

    asyncio.run(main())
