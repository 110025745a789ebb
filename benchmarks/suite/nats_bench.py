"""The workloads against NATS JetStream with nats-py (asyncio), as a Python user writes them.

A workload's 4 "partitions" are 4 subjects ``<w>.0`` .. ``<w>.3`` of one file-storage stream
``<W>`` (subjects ``<w>.*``), written round robin. The asyncio loop lives in this object and
each workload runs to completion on it, so the caller's API is the same blocking one as for
the other systems.

* 1: ``await js.publish`` (waits for the PubAck) per message.
* 2: 32 ``js.publish_async`` then ``gather`` of their PubAck futures per round trip.
* 3: ``js.publish_async`` with ``publish_async_max_pending=1000`` (the client's own window).
* 4: durable pull consumers (AckExplicit); each consumer has its own connection and loops
  ``fetch(32)`` then ``msg.ack()`` each message. 1 consumer, then 4 bound to another durable
  over the same stream.
* 5: a durable push subscription (callback, ``ack()``) receives what ``js.publish`` sends
  1 ms apart.
* A1, A3, A4a, A4b (the asyncio workloads): nats-py is asyncio already, so these are 1, 3, 4a
  and 4b run again.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Coroutine
from typing import TypeVar

import nats
import nats.errors
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.js.api import AckPolicy, ConsumerConfig, PubAck, StorageType

from .common import QUEUES, Meter, Sizes, body, paced_async, stamped_body, unstamp

__all__ = ["NatsBench"]

_ids = itertools.count(1)
_T = TypeVar("_T")


class NatsBench:
    """The workloads over a running ``nats-server -js`` at ``url``."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.loop = asyncio.new_event_loop()
        self.nc: Client = self._run(nats.connect(url))
        self._drain: tuple[str, str] = ("", "")

    def _run(self, coro: Coroutine[object, object, _T]) -> _T:
        return self.loop.run_until_complete(coro)

    async def _stream(self, name: str) -> tuple[str, list[str]]:
        """A new stream ``NAME_n`` over subjects ``name_n.0..3``; (stream, subjects)."""
        n = next(_ids)
        prefix = f"{name}_{n}"
        await self.nc.jetstream().add_stream(
            name=prefix.upper(), subjects=[f"{prefix}.*"], storage=StorageType.FILE
        )
        return prefix.upper(), [f"{prefix}.{q}" for q in range(QUEUES)]

    def close(self) -> None:
        try:
            self._run(self.nc.close())
        finally:
            self.loop.close()

    # ------------------------------------------------------------------ publish
    async def _publish_one(self, m: Meter, sizes: Sizes) -> None:
        _, subjects = await self._stream("w1")
        js = self.nc.jetstream()
        payload = body()
        deadline = time.perf_counter() + sizes.warmup_seconds
        i = 0
        while time.perf_counter() < deadline:
            await js.publish(subjects[i % QUEUES], payload)
            i += 1
        lat: list[int] = []
        n = 0
        m.start()
        deadline = time.perf_counter() + sizes.publish_seconds
        while time.perf_counter() < deadline:
            t0 = time.perf_counter_ns()
            await js.publish(subjects[n % QUEUES], payload)
            lat.append(time.perf_counter_ns() - t0)
            n += 1
        m.stop(n, lat)

    def publish_one(self, m: Meter, sizes: Sizes) -> None:
        self._run(self._publish_one(m, sizes))

    async def _batches(self, subjects: list[str], seconds: float, size: int) -> tuple[int, list[int]]:
        js = self.nc.jetstream()
        payload = body()
        lat: list[int] = []
        n = 0
        batches = 0
        deadline = time.perf_counter() + seconds
        while time.perf_counter() < deadline:
            t0 = time.perf_counter_ns()
            subject = subjects[batches % QUEUES]
            futures = [await js.publish_async(subject, payload) for _ in range(size)]
            await asyncio.gather(*futures)
            lat.append(time.perf_counter_ns() - t0)
            n += size
            batches += 1
        return n, lat

    async def _publish_batch(self, m: Meter, sizes: Sizes) -> None:
        _, subjects = await self._stream("w2")
        await self._batches(subjects, sizes.warmup_seconds, sizes.batch)
        m.start()
        n, lat = await self._batches(subjects, sizes.publish_seconds, sizes.batch)
        m.stop(n, lat)

    def publish_batch(self, m: Meter, sizes: Sizes) -> None:
        self._run(self._publish_batch(m, sizes))

    async def _window(self, subjects: list[str], seconds: float, in_flight: int) -> tuple[int, int]:
        js = self.nc.jetstream(publish_async_max_pending=in_flight)
        payload = body()
        counts = [0, 0]  # ok, errors

        def done(f: asyncio.Future[PubAck]) -> None:
            counts[0 if not f.cancelled() and f.exception() is None else 1] += 1

        n = 0
        deadline = time.perf_counter() + seconds
        while time.perf_counter() < deadline:
            fut = await js.publish_async(subjects[n % QUEUES], payload)
            fut.add_done_callback(done)
            n += 1
        await js.publish_async_completed()
        await asyncio.sleep(0)  # let the last done-callbacks run
        return counts[0], counts[1]

    async def _publish_async(self, m: Meter, sizes: Sizes) -> None:
        _, subjects = await self._stream("w3")
        await self._window(subjects, sizes.warmup_seconds, sizes.in_flight)
        m.start()
        ok, errors = await self._window(subjects, sizes.publish_seconds, sizes.in_flight)
        m.stop(ok, errors=errors)

    def publish_async(self, m: Meter, sizes: Sizes) -> None:
        self._run(self._publish_async(m, sizes))

    # ------------------------------------------------------------------ drain
    async def _prepare_drain(self, sizes: Sizes) -> None:
        stream, subjects = await self._stream("w4")
        js = self.nc.jetstream(publish_async_max_pending=1000)
        payload = body()
        for i in range(sizes.drain_messages):
            await js.publish_async(subjects[i % QUEUES], payload)
        await js.publish_async_completed()
        info = await js.stream_info(stream)
        if info.state.messages != sizes.drain_messages:
            raise RuntimeError(f"nats pre-publish: {info.state.messages} of {sizes.drain_messages} stored")
        self._drain = (stream, subjects[0].rsplit(".", 1)[0] + ".*")

    def prepare_drain(self, sizes: Sizes) -> None:
        self._run(self._prepare_drain(sizes))

    async def _drain_group(self, m: Meter, sizes: Sizes, consumers: int) -> None:
        stream, subject = self._drain
        durable = f"g{consumers}_{next(_ids)}"
        await self.nc.jetstream().add_consumer(
            stream,
            ConsumerConfig(durable_name=durable, ack_policy=AckPolicy.EXPLICIT, filter_subject=subject),
        )
        total = sizes.drain_messages
        count = [0]
        finished = asyncio.Event()
        conns = [await nats.connect(self.url) for _ in range(consumers)]

        async def consume(nc: Client) -> None:
            sub = await nc.jetstream().pull_subscribe_bind(durable, stream)
            while not finished.is_set():
                try:
                    msgs = await sub.fetch(sizes.batch, timeout=0.5)
                except (nats.errors.TimeoutError, asyncio.TimeoutError):
                    continue  # nothing left for this consumer right now (the tail of the drain)
                for msg in msgs:
                    await msg.ack()
                count[0] += len(msgs)
                if count[0] >= total:
                    finished.set()

        try:
            m.start()
            tasks = [asyncio.ensure_future(consume(nc)) for nc in conns]
            waiter = asyncio.ensure_future(finished.wait())
            done, _ = await asyncio.wait(
                [waiter, *tasks], timeout=sizes.wait_timeout_s, return_when=asyncio.FIRST_COMPLETED
            )
            if waiter in done:
                m.stop(count[0])
            finished.set()
            results = await asyncio.gather(*tasks, return_exceptions=True)
            errors = [r for r in results if isinstance(r, BaseException)]
            if errors:
                raise RuntimeError(f"nats drain failed: {errors[0]!r}") from errors[0]
            if waiter not in done:
                raise RuntimeError(f"nats drain: {count[0]} of {total} after {sizes.wait_timeout_s} s")
        finally:
            for nc in conns:
                await nc.close()

    def drain(self, m: Meter, sizes: Sizes, consumers: int) -> None:
        self._run(self._drain_group(m, sizes, consumers))

    # ------------------------------------------------------------------ asyncio workloads
    # nats-py is an asyncio client already: its A-workloads are workloads 1, 3 and 4 as above.
    def async_publish_one(self, m: Meter, sizes: Sizes) -> None:
        self.publish_one(m, sizes)

    def async_publish_async(self, m: Meter, sizes: Sizes) -> None:
        self.publish_async(m, sizes)

    def async_drain(self, m: Meter, sizes: Sizes, consumers: int) -> None:
        self.drain(m, sizes, consumers)

    # ------------------------------------------------------------------ latency
    async def _latency(self, m: Meter, sizes: Sizes) -> None:
        _, subjects = await self._stream("w5")
        js = self.nc.jetstream()
        lat: list[int] = []
        want = [0]
        got_all = asyncio.Event()
        measuring = [False]

        async def on_msg(msg: Msg) -> None:
            now = time.perf_counter_ns()
            if measuring[0]:
                lat.append(now - unstamp(msg.data))
            await msg.ack()
            want[0] -= 1
            if want[0] <= 0:
                got_all.set()

        wildcard = subjects[0].rsplit(".", 1)[0] + ".*"
        sub = await js.subscribe(wildcard, durable=f"lat{next(_ids)}", cb=on_msg, manual_ack=True)
        try:
            want[0] = 4 * QUEUES
            for i in range(want[0]):
                await js.publish(subjects[i % QUEUES], stamped_body(time.perf_counter_ns()))
            await asyncio.wait_for(got_all.wait(), 30)
            got_all.clear()
            want[0] = sizes.latency_messages
            measuring[0] = True
            m.start()
            async for i in paced_async(sizes.latency_messages, sizes.latency_interval_ms):
                await js.publish(subjects[i % QUEUES], stamped_body(time.perf_counter_ns()))
            await asyncio.wait_for(got_all.wait(), sizes.wait_timeout_s)
            m.stop(len(lat), list(lat))
        finally:
            await sub.unsubscribe()

    def latency(self, m: Meter, sizes: Sizes) -> None:
        self._run(self._latency(m, sizes))
