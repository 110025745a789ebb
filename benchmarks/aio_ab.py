"""A/B of the blocking and the asyncio rocketq client, alternating in one process.

Runs each chosen workload's blocking form and its ``rocketq.aio`` twin (``RocketqBench``'s
``publish_one``/``async_publish_one``, ... as ``run_suite.py`` does) round by round against one
embedded broker and prints msgs/s and CPU per message (client: ``time.process_time()``;
broker: ``/proc/<pid>/stat``) per round and their medians. Workloads: ``1``, ``3``, ``3t`` (3
with one task per ``await send()`` instead of ``send_async``), ``4a``, ``4b``.

    .venv/bin/python -m benchmarks.aio_ab --workloads 1,3,3t,4a,4b --rounds 5
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import statistics
import time
from collections.abc import Callable

from rocketq.aio import AsyncProducer
from rocketq.client import Message, ProducerConfig
from rocketq.testing.cluster import EmbeddedCluster

from .suite.common import Meter, Sizes, body
from .suite.rocketq_bench import RocketqBench

_ids = itertools.count()
Run = Callable[[RocketqBench, Meter, Sizes], None]


async def _a3_tasks(bench: RocketqBench, m: Meter, sizes: Sizes) -> None:
    """A3 with one task per ``await producer.send()`` (the form before ``send_async``)."""
    topic = bench._topic("a3t")
    payload = body()
    cfg = ProducerConfig(
        producer_group=f"{bench._run}_a3t_{next(_ids)}", send_msg_timeout_ms=30_000, auto_batch=True
    )
    async with AsyncProducer(namesrv_addr=bench.namesrv, config=cfg) as producer:
        sem = asyncio.Semaphore(sizes.in_flight)
        counts = [0, 0]

        async def one() -> None:
            try:
                await producer.send(Message(topic, payload))
                counts[0] += 1
            except Exception:
                counts[1] += 1
            finally:
                sem.release()

        async def window(seconds: float) -> None:
            tasks: set[asyncio.Task[None]] = set()
            deadline = time.perf_counter() + seconds
            while time.perf_counter() < deadline:
                await sem.acquire()
                task = asyncio.ensure_future(one())
                tasks.add(task)
                task.add_done_callback(tasks.discard)
            await asyncio.gather(*tasks)

        await window(sizes.warmup_seconds)
        counts[:] = [0, 0]
        m.start()
        await window(sizes.publish_seconds)
        m.stop(counts[0], errors=counts[1])


PAIRS: dict[str, tuple[Run, Run]] = {
    "1": (lambda b, m, s: b.publish_one(m, s), lambda b, m, s: b.async_publish_one(m, s)),
    "3": (lambda b, m, s: b.publish_async(m, s), lambda b, m, s: b.async_publish_async(m, s)),
    "3t": (lambda b, m, s: b.publish_async(m, s), lambda b, m, s: b._aio(_a3_tasks(b, m, s))),
    "4a": (lambda b, m, s: b.drain(m, s, 1), lambda b, m, s: b.async_drain(m, s, 1)),
    "4b": (lambda b, m, s: b.drain(m, s, 4), lambda b, m, s: b.async_drain(m, s, 4)),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workloads", default="1,3,4a,4b", help=f"comma-separated of {','.join(PAIRS)}")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=2.0, help="measured window of 1 and 3")
    parser.add_argument("--drain", type=int, default=50_000, help="messages drained by 4a/4b")
    args = parser.parse_args()
    sizes = Sizes(
        publish_seconds=args.seconds,
        warmup_seconds=0.5,
        drain_messages=args.drain,
        latency_messages=100,
        rounds=args.rounds,
        quiet_wait_s=0,
    )
    results: dict[tuple[str, str], list[tuple[float, float, float]]] = {}
    with EmbeddedCluster() as cluster:
        broker = cluster._brokers[0].popen or (cluster._namesrv.popen if cluster._namesrv else None)
        pid = broker.pid if broker is not None else None
        bench = RocketqBench(cluster)
        try:
            for w in args.workloads.split(","):
                if w.startswith("4"):
                    bench.prepare_drain(sizes)
                for r in range(args.rounds):
                    for side, run in zip(("sync", "aio"), PAIRS[w], strict=True):
                        m = Meter(pid)
                        run(bench, m, sizes)
                        x = m.result
                        assert x is not None
                        n = max(x.messages, 1)
                        row = (x.messages / x.seconds, x.client_cpu_s / n * 1e6, x.server_cpu_s / n * 1e6)
                        results.setdefault((w, side), []).append(row)
                        print(
                            f"{w} r{r} {side:4}: {row[0]:9.0f} msgs/s  client {row[1]:6.1f} µs/msg"
                            f"  broker {row[2]:6.1f} µs/msg",
                            flush=True,
                        )
        finally:
            bench.close()
    print("medians:")
    for (w, side), rows in results.items():
        rate, client, server = (statistics.median(col) for col in zip(*rows, strict=True))
        print(f"{w:3} {side:4} {rate:9.0f} msgs/s  client {client:6.1f} µs/msg  broker {server:6.1f} µs/msg")


if __name__ == "__main__":
    main()
