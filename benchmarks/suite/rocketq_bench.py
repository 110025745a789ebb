"""The workloads against rocketq, through the public client API only.

* 1: ``Producer.send`` (sync), queues chosen round robin by the producer.
* 2: ``Producer.send(list of 32)`` - one ``MessageBatch`` per round trip.
* 3: ``Producer.send_async`` with a semaphore keeping 1,000 sends in flight.
* 4: ``PushConsumer`` (CLUSTERING, CONSUME_FROM_FIRST_OFFSET, listener batches of 32,
  CONSUME_SUCCESS acks by advancing the offset); 1 consumer, then 4 in one group (each its
  own client instance, so its own connection), over the same pre-published topic.
* 5: a ``PushConsumer`` (long polling) receives messages a sync producer sends 1 ms apart;
  latency = receive time - the ``perf_counter_ns`` stamp in the body.

* A1, A3, A4a, A4b (the asyncio workloads): ``rocketq.aio`` on one event loop (uvloop when
  installed): A1 one ``await AsyncProducer.send`` per message; A3 1,000 ``send_async``
  futures in flight (``auto_batch=True`` and a done-callback each, as in 3); A4 ``AsyncPushConsumer``s (coroutine listener, batches of 32) over the topic
  workload 4 pre-published.

Each workload uses its own topic of 4 queues. A drain's window runs from the consumers'
``start()`` to the last message (it includes the first rebalance).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import itertools
import threading
import time
from collections.abc import Callable, Coroutine

from rocketq.aio import AsyncProducer
from rocketq.aio.push import AsyncPushConsumer
from rocketq.client import ClientConfig, ConsumeFromWhere, Message, MessageExt, Producer, ProducerConfig
from rocketq.client.api_results import SendResult
from rocketq.client.consumer.listener import ConsumeConcurrentlyContext, ConsumeConcurrentlyStatus
from rocketq.client.consumer.push import PushConsumer, PushConsumerConfig
from rocketq.testing.cluster import EmbeddedCluster

from .common import QUEUES, Meter, Sizes, body, paced, stamped_body, unstamp

__all__ = ["RocketqBench"]

try:
    import uvloop

    _new_loop: Callable[[], asyncio.AbstractEventLoop] = uvloop.new_event_loop
except ImportError:  # the speed extra is optional
    _new_loop = asyncio.new_event_loop

PushListener = Callable[[list[MessageExt], ConsumeConcurrentlyContext], ConsumeConcurrentlyStatus]
_ids = itertools.count(1)
#: Rebalance and route polling fast enough that a group of 4 settles within a couple of seconds.
_CLIENT = ClientConfig(poll_name_server_interval_ms=1000, rebalance_interval_ms=2000)


class DistinctOffsets:
    """The distinct ``(queue id, queue offset)`` pairs a drain delivered, as one bit-byte per
    offset in a ``bytearray`` per queue: no object per message (a set of 200,000 tuples cost
    the listener a tuple per message and the interpreter ~25 ms to free inside whichever later
    window's garbage collection found it), and a batch of consecutive offsets of one queue (a
    consume request holds one queue's messages in offset order) is marked by slices."""

    def __init__(self) -> None:
        self._queues: dict[int, bytearray] = {}
        self.count = 0

    def add(self, msgs: list[MessageExt]) -> int:
        """Mark ``msgs``; returns how many were new."""
        if not msgs:
            return 0
        lo, q = msgs[0].queue_offset, msgs[0].queue_id
        hi = lo + len(msgs) - 1
        if {msg.queue_id for msg in msgs} == {q} and [msg.queue_offset for msg in msgs] == list(
            range(lo, hi + 1)
        ):
            marks = self._marks(q, hi)
            new = len(msgs) - marks.count(1, lo, hi + 1)
            marks[lo : hi + 1] = b"\x01" * len(msgs)
        else:
            new = 0
            for msg in msgs:
                marks = self._marks(msg.queue_id, msg.queue_offset)
                if not marks[msg.queue_offset]:
                    marks[msg.queue_offset] = 1
                    new += 1
        self.count += new
        return new

    def _marks(self, queue_id: int, offset: int) -> bytearray:
        marks = self._queues.get(queue_id)
        if marks is None:
            marks = self._queues[queue_id] = bytearray()
        if offset >= len(marks):
            marks.extend(bytes(max(offset + 1 - len(marks), len(marks), 1024)))
        return marks


class DrainTally:
    """A drain's listener and what it saw: the distinct ``(queue id, queue offset)`` pairs
    (a redelivery is not progress), the redeliveries, the first delivery's time, and
    ``finished`` once ``total`` distinct messages arrived."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.lock = threading.Lock()
        self.seen = DistinctOffsets()
        self.redelivered = 0
        self.first = 0.0  # perf_counter() of the first delivery
        self.finished = threading.Event()

    def listener(self, msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        seen = self.seen
        with self.lock:
            if not self.first:
                self.first = time.perf_counter()
            self.redelivered += len(msgs) - seen.add(msgs)
            if seen.count >= self.total:
                self.finished.set()
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    def done(self) -> int:
        with self.lock:
            return self.seen.count


class RocketqBench:
    """The workloads over a started :class:`EmbeddedCluster`."""

    def __init__(self, cluster: EmbeddedCluster, *, consume_on_io_thread: bool | None = None) -> None:
        self.cluster = cluster
        self.namesrv = cluster.namesrv_addr
        #: the push consumers' ``consume_on_io_thread`` (rocketq only; None: the default, on)
        self.consume_on_io_thread = consume_on_io_thread
        self._run = f"b{time.monotonic_ns() % 10**9}"
        cfg = ProducerConfig(producer_group=f"{self._run}_pg", send_msg_timeout_ms=30_000)
        self.producer = Producer(namesrv_addr=self.namesrv, config=cfg)
        self.producer.start()
        # workload 3 (1,000 in flight): the producer's auto_batch, RocketMQ 5.x's autoBatch
        # idea, is the analogue of the Redis pipeline and NATS async publishing
        auto = dataclasses.replace(cfg, producer_group=f"{self._run}_apg", auto_batch=True)
        self.async_producer = Producer(namesrv_addr=self.namesrv, config=auto)
        self.async_producer.start()
        self._drain_topic = ""

    def _topic(self, name: str) -> str:
        topic = f"{self._run}_{name}_{next(_ids)}"
        self.cluster.create_topic(topic, QUEUES)
        return topic

    def close(self) -> None:
        self.async_producer.shutdown()
        self.producer.shutdown()

    # ------------------------------------------------------------------ publish
    def _warm(self, topic: str, seconds: float) -> None:
        deadline = time.perf_counter() + seconds
        while time.perf_counter() < deadline:
            self.producer.send(Message(topic, body()))

    def _sync_window(self, m: Meter, sizes: Sizes, name: str, batch: int) -> None:
        """Synchronous sends back to back for the window, one message (``batch`` 1) or a batch
        each; every send is one latency sample."""
        topic = self._topic(name)
        self._warm(topic, sizes.warmup_seconds)
        payload = body()
        send = self.producer.send
        lat: list[int] = []
        n = 0
        m.start()
        deadline = time.perf_counter() + sizes.publish_seconds
        while time.perf_counter() < deadline:
            t0 = time.perf_counter_ns()
            if batch == 1:
                send(Message(topic, payload))
            else:
                send([Message(topic, payload) for _ in range(batch)])
            lat.append(time.perf_counter_ns() - t0)
            n += batch
        m.stop(n, lat)

    def publish_one(self, m: Meter, sizes: Sizes) -> None:
        self._sync_window(m, sizes, "w1", 1)

    def publish_batch(self, m: Meter, sizes: Sizes) -> None:
        self._sync_window(m, sizes, "w2", sizes.batch)

    def _async_window(self, topic: str, seconds: float, in_flight: int) -> tuple[int, int]:
        """Send asynchronously for ``seconds`` with ``in_flight`` outstanding; (acked, errors)."""
        sem = threading.Semaphore(in_flight)
        lock = threading.Lock()
        counts = [0, 0]  # ok, errors
        payload = body()

        def done(f: concurrent.futures.Future[SendResult]) -> None:
            with lock:
                counts[0 if f.exception() is None else 1] += 1
            sem.release()

        sent = 0
        deadline = time.perf_counter() + seconds
        while time.perf_counter() < deadline:
            sem.acquire()
            self.async_producer.send_async(Message(topic, payload)).add_done_callback(done)
            sent += 1
        for _ in range(in_flight):  # wait for the tail
            sem.acquire()
        return counts[0], counts[1]

    def publish_async(self, m: Meter, sizes: Sizes) -> None:
        topic = self._topic("w3")
        self._async_window(topic, sizes.warmup_seconds, sizes.in_flight)
        m.start()
        ok, errors = self._async_window(topic, sizes.publish_seconds, sizes.in_flight)
        m.stop(ok, errors=errors)

    # ------------------------------------------------------------------ drain
    def prepare_drain(self, sizes: Sizes) -> None:
        topic = self._topic("w4")
        payload = body()
        sem = threading.Semaphore(8)  # 8 batches in flight
        errors: list[BaseException] = []

        def done(f: concurrent.futures.Future[SendResult]) -> None:
            exc = f.exception()
            if exc is not None:
                errors.append(exc)
            sem.release()

        left = sizes.drain_messages
        while left > 0:
            n = min(sizes.batch, left)
            sem.acquire()
            self.producer.send_async([Message(topic, payload) for _ in range(n)]).add_done_callback(done)
            left -= n
        for _ in range(8):
            sem.acquire()
        if errors:
            raise RuntimeError(f"pre-publishing failed: {errors[0]!r}")
        self._drain_topic = topic

    def _push_consumer(
        self,
        group: str,
        topic: str,
        listener: PushListener,
        batch: int,
    ) -> PushConsumer:
        cfg = PushConsumerConfig(
            consumer_group=group,
            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
            consume_message_batch_max_size=batch,
        )
        if self.consume_on_io_thread is not None:
            cfg = dataclasses.replace(cfg, consume_on_io_thread=self.consume_on_io_thread)
        client = dataclasses.replace(_CLIENT, instance_name=f"{group}_{next(_ids)}")
        consumer = PushConsumer(config=cfg, namesrv_addr=self.namesrv, client_config=client)
        consumer.subscribe(topic, "*")
        consumer.register_message_listener(listener)
        return consumer

    def drain(self, m: Meter, sizes: Sizes, consumers: int) -> None:
        topic = self._drain_topic
        group = f"{self._run}_g{consumers}_{next(_ids)}"
        total = sizes.drain_messages
        tally = DrainTally(total)
        group_members = [
            self._push_consumer(group, topic, tally.listener, sizes.batch) for _ in range(consumers)
        ]
        m.start()
        try:
            for consumer in group_members:
                consumer.start()
            if not tally.finished.wait(sizes.wait_timeout_s):
                raise RuntimeError(f"rocketq drain: {tally.done()} of {total} after {sizes.wait_timeout_s} s")
            with tally.lock:
                done, again = tally.seen.count, tally.redelivered
            m.stop(done, note=f"{again} redelivered (rebalance)" if again else "")
        finally:
            for consumer in group_members:
                consumer.shutdown()

    # ------------------------------------------------------------------ latency
    def latency(self, m: Meter, sizes: Sizes) -> None:
        topic = self._topic("w5")
        group = f"{self._run}_lat_{next(_ids)}"
        lat: list[int] = []
        lock = threading.Lock()
        want = [0]
        got_all = threading.Event()
        measuring = [False]

        def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
            now = time.perf_counter_ns()
            with lock:
                for msg in msgs:
                    if measuring[0]:
                        lat.append(now - unstamp(msg.body))
                    want[0] -= 1
                if want[0] <= 0:
                    got_all.set()
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

        consumer = self._push_consumer(group, topic, listener, 1)
        consumer.start()
        try:
            deadline = time.monotonic() + 30
            while len(consumer.assigned_queues(topic)) < QUEUES:
                if time.monotonic() > deadline:
                    raise RuntimeError("rocketq latency: consumer never got its queues")
                time.sleep(0.02)
            # warm-up: one message per queue, until each came back
            warm = 4 * QUEUES
            with lock:
                want[0] = warm
            for _ in range(warm):
                self.producer.send(Message(topic, stamped_body(time.perf_counter_ns())))
            if not got_all.wait(30):
                raise RuntimeError("rocketq latency: warm-up messages never arrived")
            got_all.clear()
            with lock:
                want[0] = sizes.latency_messages
                measuring[0] = True
            m.start()
            for _ in paced(sizes.latency_messages, sizes.latency_interval_ms):
                self.producer.send(Message(topic, stamped_body(time.perf_counter_ns())))
            if not got_all.wait(sizes.wait_timeout_s):
                raise RuntimeError(f"rocketq latency: {len(lat)} of {sizes.latency_messages} arrived")
            with lock:
                samples = list(lat)
            m.stop(len(samples), samples)
        finally:
            consumer.shutdown()

    # ------------------------------------------------------------------ asyncio workloads
    def _aio(self, coro: Coroutine[object, object, None]) -> None:
        loop = _new_loop()
        try:
            loop.run_until_complete(coro)
        finally:
            loop.close()

    async def _aio_publish_one(self, m: Meter, sizes: Sizes) -> None:
        topic = self._topic("a1")
        payload = body()
        cfg = ProducerConfig(producer_group=f"{self._run}_a1_{next(_ids)}", send_msg_timeout_ms=30_000)
        async with AsyncProducer(namesrv_addr=self.namesrv, config=cfg) as producer:
            for seconds, measured in ((sizes.warmup_seconds, False), (sizes.publish_seconds, True)):
                lat: list[int] = []
                n = 0
                if measured:
                    m.start()
                deadline = time.perf_counter() + seconds
                while time.perf_counter() < deadline:
                    t0 = time.perf_counter_ns()
                    await producer.send(Message(topic, payload))
                    lat.append(time.perf_counter_ns() - t0)
                    n += 1
                if measured:
                    m.stop(n, lat)

    def async_publish_one(self, m: Meter, sizes: Sizes) -> None:
        self._aio(self._aio_publish_one(m, sizes))

    async def _aio_publish_async(self, m: Meter, sizes: Sizes) -> None:
        topic = self._topic("a3")
        payload = body()
        # auto_batch, as workload 3's blocking producer (the analogue of pipelining)
        cfg = ProducerConfig(
            producer_group=f"{self._run}_a3_{next(_ids)}", send_msg_timeout_ms=30_000, auto_batch=True
        )
        async with AsyncProducer(namesrv_addr=self.namesrv, config=cfg) as producer:
            sem = asyncio.Semaphore(sizes.in_flight)
            counts = [0, 0]

            def done(f: asyncio.Future[SendResult]) -> None:
                counts[0 if not f.cancelled() and f.exception() is None else 1] += 1
                sem.release()

            async def window(seconds: float) -> None:
                # send_async + a done-callback, as workload 3's send_async: one future per
                # message, no task
                send = producer.send_async
                deadline = time.perf_counter() + seconds
                while time.perf_counter() < deadline:
                    await sem.acquire()
                    send(Message(topic, payload)).add_done_callback(done)
                for _ in range(sizes.in_flight):  # wait for the tail
                    await sem.acquire()
                for _ in range(sizes.in_flight):
                    sem.release()

            await window(sizes.warmup_seconds)
            counts[:] = [0, 0]
            m.start()
            await window(sizes.publish_seconds)
            m.stop(counts[0], errors=counts[1])

    def async_publish_async(self, m: Meter, sizes: Sizes) -> None:
        self._aio(self._aio_publish_async(m, sizes))

    async def _aio_drain(self, m: Meter, sizes: Sizes, consumers: int) -> None:
        topic = self._drain_topic
        group = f"{self._run}_ag{consumers}_{next(_ids)}"
        total = sizes.drain_messages
        seen = DistinctOffsets()
        redelivered = [0]
        finished = asyncio.Event()

        async def listener(
            msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext
        ) -> ConsumeConcurrentlyStatus:
            redelivered[0] += len(msgs) - seen.add(msgs)
            if seen.count >= total:
                finished.set()
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

        members = []
        for _ in range(consumers):
            cfg = PushConsumerConfig(
                consumer_group=group,
                consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
                consume_message_batch_max_size=sizes.batch,
            )
            consumer = AsyncPushConsumer(config=cfg, namesrv_addr=self.namesrv, client_config=_CLIENT)
            consumer.subscribe(topic, "*")
            consumer.register_message_listener(listener)
            members.append(consumer)
        m.start()
        try:
            for consumer in members:
                await consumer.start()
            try:
                await asyncio.wait_for(finished.wait(), sizes.wait_timeout_s)
            except asyncio.TimeoutError:
                raise RuntimeError(f"rocketq.aio drain: {seen.count} of {total}") from None
            again = redelivered[0]
            m.stop(seen.count, note=f"{again} redelivered (rebalance)" if again else "")
        finally:
            for consumer in members:
                await consumer.shutdown()

    def async_drain(self, m: Meter, sizes: Sizes, consumers: int) -> None:
        if not self._drain_topic:
            self.prepare_drain(sizes)
        self._aio(self._aio_drain(m, sizes, consumers))
