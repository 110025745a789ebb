"""The workloads against Redis Streams with redis-py (hiredis parser), as a Python user writes them.

Redis has no partitions: a workload's 4 "queues" are 4 stream keys, written round robin.
Each message is one stream entry ``{"d": <100-byte body>}``.

* 1: one ``XADD`` per round trip.
* 2: a pipeline (``transaction=False``) of 32 ``XADD`` to one key per round trip.
* 3: redis-py cannot multiplex requests on one connection, so "1,000 in flight" is a
  pipeline of 1,000 ``XADD`` (round robin over the keys) per round trip.
* 4: consumer groups (``XGROUP CREATE ... 0``); each consumer has its own connection and
  thread and loops ``XREADGROUP COUNT 32 BLOCK 100 STREAMS k0..k3 > > > >`` then ``XACK``
  the ids of each stream (the acks pipelined in one round trip). 1 consumer, then 4 in
  another group over the same keys.
* 5: a consumer thread blocked in ``XREADGROUP ... BLOCK`` (+ ``XACK``) receives what the
  main thread ``XADD``s 1 ms apart.
* A1, A3, A4 (asyncio workloads) use ``redis.asyncio`` on one event loop: A1 one awaited
  ``XADD`` per message; A3 1,000 ``XADD`` tasks in flight at once over a connection pool of
  up to 64 connections (redis-py multiplexes nothing: each request holds a connection until
  its answer); A4 ``consumers`` tasks, each with its own connection, looping
  ``XREADGROUP`` + pipelined ``XACK`` as in 4.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
from collections.abc import Iterable, Sequence

import redis
import redis.asyncio

from .common import QUEUES, Meter, Sizes, body, paced, stamped_body, unstamp

__all__ = ["RedisBench"]

_ids = itertools.count(1)
_FIELD = b"d"
#: One stream's part of an XREADGROUP reply: (key, [(id, {field: value}), ...]).
_StreamEntries = tuple[bytes, Sequence[tuple[bytes, dict[bytes, bytes]]]]


def _entries(reply: object) -> Iterable[_StreamEntries]:
    """Normalise an XREADGROUP reply (a list under RESP2, a dict under RESP3)."""
    if not reply:
        return []
    if isinstance(reply, dict):
        return [
            (key, value[0] if value and isinstance(value[0], list) else value) for key, value in reply.items()
        ]
    assert isinstance(reply, list)
    return [(item[0], item[1]) for item in reply]


class RedisBench:
    """The workloads over a running ``redis-server`` at ``url``."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.r = redis.Redis.from_url(url)
        self.r.ping()
        self._drain_keys: list[str] = []

    def _connect(self) -> redis.Redis:
        return redis.Redis.from_url(self.url)

    @staticmethod
    def _keys(name: str) -> list[str]:
        run = next(_ids)
        return [f"{name}:{run}:{q}" for q in range(QUEUES)]

    def close(self) -> None:
        self.r.close()

    # ------------------------------------------------------------------ publish
    def publish_one(self, m: Meter, sizes: Sizes) -> None:
        keys = self._keys("w1")
        payload = {_FIELD: body()}
        xadd = self.r.xadd
        deadline = time.perf_counter() + sizes.warmup_seconds
        i = 0
        while time.perf_counter() < deadline:
            xadd(keys[i % QUEUES], payload)  # type: ignore[arg-type]
            i += 1
        lat: list[int] = []
        n = 0
        m.start()
        deadline = time.perf_counter() + sizes.publish_seconds
        while time.perf_counter() < deadline:
            t0 = time.perf_counter_ns()
            xadd(keys[n % QUEUES], payload)  # type: ignore[arg-type]
            lat.append(time.perf_counter_ns() - t0)
            n += 1
        m.stop(n, lat)

    def _pipelined(self, keys: list[str], seconds: float, size: int, one_key: bool) -> tuple[int, list[int]]:
        payload = {_FIELD: body()}
        lat: list[int] = []
        n = 0
        batches = 0
        deadline = time.perf_counter() + seconds
        while time.perf_counter() < deadline:
            t0 = time.perf_counter_ns()
            pipe = self.r.pipeline(transaction=False)
            for j in range(size):
                pipe.xadd(keys[batches % QUEUES] if one_key else keys[j % QUEUES], payload)  # type: ignore[arg-type]
            pipe.execute()
            lat.append(time.perf_counter_ns() - t0)
            n += size
            batches += 1
        return n, lat

    def publish_batch(self, m: Meter, sizes: Sizes) -> None:
        keys = self._keys("w2")
        self._pipelined(keys, sizes.warmup_seconds, sizes.batch, True)
        m.start()
        n, lat = self._pipelined(keys, sizes.publish_seconds, sizes.batch, True)
        m.stop(n, lat)

    def publish_async(self, m: Meter, sizes: Sizes) -> None:
        keys = self._keys("w3")
        self._pipelined(keys, sizes.warmup_seconds, sizes.in_flight, False)
        m.start()
        n, _ = self._pipelined(keys, sizes.publish_seconds, sizes.in_flight, False)
        m.stop(n)

    # ------------------------------------------------------------------ drain
    def prepare_drain(self, sizes: Sizes) -> None:
        keys = self._keys("w4")
        payload = {_FIELD: body()}
        left = sizes.drain_messages
        i = 0
        while left > 0:
            pipe = self.r.pipeline(transaction=False)
            for _ in range(min(1000, left)):
                pipe.xadd(keys[i % QUEUES], payload)  # type: ignore[arg-type]
                i += 1
                left -= 1
            pipe.execute()
        self._drain_keys = keys

    def drain(self, m: Meter, sizes: Sizes, consumers: int) -> None:
        keys = self._drain_keys
        group = f"g{consumers}_{next(_ids)}"
        for key in keys:
            self.r.xgroup_create(key, group, id="0")
        total = sizes.drain_messages
        lock = threading.Lock()
        count = [0]
        finished = threading.Event()
        failures: list[BaseException] = []

        def consume(name: str) -> None:
            conn = self._connect()
            streams: dict[str, str] = dict.fromkeys(keys, ">")
            try:
                while not finished.is_set():
                    reply = conn.xreadgroup(group, name, streams, count=sizes.batch, block=100)  # type: ignore[arg-type]
                    got = 0
                    pipe = conn.pipeline(transaction=False)
                    for key, entries in _entries(reply):
                        if entries:
                            pipe.xack(key, group, *[entry[0] for entry in entries])
                            got += len(entries)
                    if got:
                        pipe.execute()
                        with lock:
                            count[0] += got
                            if count[0] >= total:
                                finished.set()
            except BaseException as exc:
                failures.append(exc)
                finished.set()
            finally:
                conn.close()

        threads = [
            threading.Thread(target=consume, args=(f"c{i}",), name=f"bench-redis-c{i}")
            for i in range(consumers)
        ]
        m.start()
        for t in threads:
            t.start()
        ok = finished.wait(sizes.wait_timeout_s)
        if ok and not failures:
            m.stop(count[0])
        finished.set()
        for t in threads:
            t.join()
        if failures:
            raise RuntimeError(f"redis drain failed: {failures[0]!r}") from failures[0]
        if not ok:
            raise RuntimeError(f"redis drain: {count[0]} of {total} after {sizes.wait_timeout_s} s")

    # ------------------------------------------------------------------ asyncio workloads
    def async_publish_one(self, m: Meter, sizes: Sizes) -> None:
        asyncio.run(_AsyncRedisWorkloads(self.url).publish_one(m, sizes, self._keys("a1")))

    def async_publish_async(self, m: Meter, sizes: Sizes) -> None:
        asyncio.run(_AsyncRedisWorkloads(self.url).publish_in_flight(m, sizes, self._keys("a3")))

    def async_drain(self, m: Meter, sizes: Sizes, consumers: int) -> None:
        if not self._drain_keys:
            self.prepare_drain(sizes)
        asyncio.run(_AsyncRedisWorkloads(self.url).drain(m, sizes, self._drain_keys, consumers))

    # ------------------------------------------------------------------ latency
    def latency(self, m: Meter, sizes: Sizes) -> None:
        keys = self._keys("w5")
        group = "lat"
        for key in keys:
            self.r.xgroup_create(key, group, id="$", mkstream=True)
        lat: list[int] = []
        lock = threading.Lock()
        want = [0]
        got_all = threading.Event()
        stop = threading.Event()
        measuring = [False]
        failures: list[BaseException] = []

        def consume() -> None:
            conn = self._connect()
            streams: dict[str, str] = dict.fromkeys(keys, ">")
            try:
                while not stop.is_set():
                    reply = conn.xreadgroup(group, "c0", streams, count=sizes.batch, block=200)  # type: ignore[arg-type]
                    now = time.perf_counter_ns()
                    pipe = conn.pipeline(transaction=False)
                    got = 0
                    with lock:
                        for key, entries in _entries(reply):
                            for _entry_id, fields in entries:
                                if measuring[0]:
                                    lat.append(now - unstamp(fields[_FIELD]))
                                want[0] -= 1
                                got += 1
                            if entries:
                                pipe.xack(key, group, *[entry[0] for entry in entries])
                        if got and want[0] <= 0:
                            got_all.set()
                    if got:
                        pipe.execute()
            except BaseException as exc:
                failures.append(exc)
                got_all.set()
            finally:
                conn.close()

        thread = threading.Thread(target=consume, name="bench-redis-lat")
        thread.start()
        try:
            warm = 4 * QUEUES
            with lock:
                want[0] = warm
            for i in range(warm):
                self.r.xadd(keys[i % QUEUES], {_FIELD: stamped_body(time.perf_counter_ns())})
            if not got_all.wait(30) or failures:
                raise RuntimeError(f"redis latency warm-up failed: {failures!r}")
            got_all.clear()
            with lock:
                want[0] = sizes.latency_messages
                measuring[0] = True
            m.start()
            for i in paced(sizes.latency_messages, sizes.latency_interval_ms):
                self.r.xadd(keys[i % QUEUES], {_FIELD: stamped_body(time.perf_counter_ns())})
            if not got_all.wait(sizes.wait_timeout_s) or failures:
                raise RuntimeError(f"redis latency: {len(lat)} arrived, failures {failures!r}")
            with lock:
                samples = list(lat)
            m.stop(len(samples), samples)
        finally:
            stop.set()
            thread.join()


class _AsyncRedisWorkloads:
    """The asyncio workloads with ``redis.asyncio`` (run on a loop of their own)."""

    def __init__(self, url: str) -> None:
        self.url = url

    def _client(self, max_connections: int = 64) -> redis.asyncio.Redis:
        pool = redis.asyncio.BlockingConnectionPool.from_url(self.url, max_connections=max_connections)
        return redis.asyncio.Redis(connection_pool=pool)

    async def publish_one(self, m: Meter, sizes: Sizes, keys: list[str]) -> None:
        r = self._client(1)
        payload = {_FIELD: body()}
        try:
            for seconds, measured in ((sizes.warmup_seconds, False), (sizes.publish_seconds, True)):
                lat: list[int] = []
                n = 0
                if measured:
                    m.start()
                deadline = time.perf_counter() + seconds
                while time.perf_counter() < deadline:
                    t0 = time.perf_counter_ns()
                    await r.xadd(keys[n % QUEUES], payload)  # type: ignore[arg-type]
                    lat.append(time.perf_counter_ns() - t0)
                    n += 1
                if measured:
                    m.stop(n, lat)
        finally:
            await r.aclose()

    async def publish_in_flight(self, m: Meter, sizes: Sizes, keys: list[str]) -> None:
        r = self._client()
        payload = {_FIELD: body()}
        sem = asyncio.Semaphore(sizes.in_flight)
        counts = [0, 0]

        async def one(key: str) -> None:
            try:
                await r.xadd(key, payload)  # type: ignore[arg-type]
                counts[0] += 1
            except redis.RedisError:
                counts[1] += 1
            finally:
                sem.release()

        async def window(seconds: float) -> None:
            tasks: set[asyncio.Task[None]] = set()
            n = 0
            deadline = time.perf_counter() + seconds
            while time.perf_counter() < deadline:
                await sem.acquire()
                task = asyncio.ensure_future(one(keys[n % QUEUES]))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
                n += 1
            await asyncio.gather(*tasks)

        try:
            await window(sizes.warmup_seconds)
            counts[:] = [0, 0]
            m.start()
            await window(sizes.publish_seconds)
            m.stop(counts[0], errors=counts[1])
        finally:
            await r.aclose()

    async def drain(self, m: Meter, sizes: Sizes, keys: list[str], consumers: int) -> None:
        admin = self._client(1)
        group = f"ag{consumers}_{next(_ids)}"
        for key in keys:
            await admin.xgroup_create(key, group, id="0")
        await admin.aclose()
        total = sizes.drain_messages
        count = [0]
        finished = asyncio.Event()

        async def consume(name: str) -> None:
            conn = self._client(1)
            streams: dict[str, str] = dict.fromkeys(keys, ">")
            try:
                while not finished.is_set():
                    reply = await conn.xreadgroup(group, name, streams, count=sizes.batch, block=100)  # type: ignore[arg-type]
                    got = 0
                    pipe = conn.pipeline(transaction=False)
                    for key, entries in _entries(reply):
                        if entries:
                            pipe.xack(key, group, *[entry[0] for entry in entries])
                            got += len(entries)
                    if got:
                        await pipe.execute()
                        count[0] += got
                        if count[0] >= total:
                            finished.set()
            finally:
                await conn.aclose()

        m.start()
        tasks = [asyncio.ensure_future(consume(f"c{i}")) for i in range(consumers)]
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
            raise RuntimeError(f"redis.asyncio drain failed: {errors[0]!r}") from errors[0]
        if waiter not in done:
            raise RuntimeError(f"redis.asyncio drain: {count[0]} of {total} after {sizes.wait_timeout_s} s")
