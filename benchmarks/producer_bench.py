"""Producer throughput against an EmbeddedCluster (rocketq name server + broker on loopback).

Scenarios (100-byte bodies): sync send from 1 thread, sync send from 8 threads, batches of
32 from 1 thread, async sends with 1,000 in flight (plain, and with ``auto_batch``). Each runs for ``--seconds`` after a short
warm-up; the table shows messages per second, and the line below it the client's CPU per
sync send from one thread (the broker runs in processes of its own, so this is the client
alone: compare it, not the rate, across runs on a shared machine). Reference (the real Java client on a real
Apache RocketMQ broker, same machine class): 6,000 / 13,000 / 55,000 / 36,000 msgs/s.

    python benchmarks/producer_bench.py [--seconds 3]
"""

from __future__ import annotations

import argparse
import concurrent.futures
import threading
import time
from collections.abc import Callable

from rocketq.client import Message, Producer, ProducerConfig, SendResult
from rocketq.testing.cluster import EmbeddedCluster

BODY = b"x" * 100
TOPIC = "BenchTopic"


def _timed(seconds: float, fn: Callable[[float], int]) -> float:
    fn(time.perf_counter() + 0.3)  # warm-up
    start = time.perf_counter()
    n = fn(start + seconds)
    return n / (time.perf_counter() - start)


def sync_one(p: Producer, seconds: float) -> float:
    def run(deadline: float) -> int:
        n = 0
        while time.perf_counter() < deadline:
            p.send(Message(TOPIC, BODY))
            n += 1
        return n

    return _timed(seconds, run)


def sync_one_cpu(p: Producer, seconds: float) -> tuple[float, float]:
    """``sync_one`` plus the client's CPU per send: process CPU time (every thread of this
    process; the broker runs in its own) over the sends, in microseconds."""
    deadline = time.perf_counter() + 0.3
    while time.perf_counter() < deadline:  # warm-up
        p.send(Message(TOPIC, BODY))
    n = 0
    start, cpu = time.perf_counter(), time.process_time()
    deadline = start + seconds
    while time.perf_counter() < deadline:
        p.send(Message(TOPIC, BODY))
        n += 1
    return n / (time.perf_counter() - start), (time.process_time() - cpu) / n * 1e6


def sync_threads(p: Producer, seconds: float, threads: int = 8) -> float:
    def run(deadline: float) -> int:
        counts = [0] * threads

        def worker(i: int) -> None:
            while time.perf_counter() < deadline:
                p.send(Message(TOPIC, BODY))
                counts[i] += 1

        ts = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        return sum(counts)

    return _timed(seconds, run)


def batches(p: Producer, seconds: float, size: int = 32) -> float:
    def run(deadline: float) -> int:
        n = 0
        while time.perf_counter() < deadline:
            p.send([Message(TOPIC, BODY) for _ in range(size)])
            n += size
        return n

    return _timed(seconds, run)


def async_in_flight(p: Producer, seconds: float, in_flight: int = 1000) -> float:
    def run(deadline: float) -> int:
        sem = threading.Semaphore(in_flight)
        done = [0]
        lock = threading.Lock()

        def release(f: concurrent.futures.Future[SendResult]) -> None:
            sem.release()
            if f.exception() is None:
                with lock:
                    done[0] += 1

        pending = []
        while time.perf_counter() < deadline:
            sem.acquire()
            fut = p.send_async(Message(TOPIC, BODY))
            fut.add_done_callback(release)
            pending.append(fut)
            if len(pending) > 10 * in_flight:
                pending = [f for f in pending if not f.done()]
        concurrent.futures.wait(pending, timeout=30)
        return done[0]

    return _timed(seconds, run)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args()
    java = {
        "sync, 1 thread": 6_000,
        "sync, 8 threads": 13_000,
        "batch of 32": 55_000,
        "async, 1000 in flight": 36_000,
        "async, 1000, auto_batch": 36_000,
    }
    with EmbeddedCluster() as cluster:
        cluster.create_topic(TOPIC, 8)
        cfg = ProducerConfig(producer_group="BenchProducer", send_msg_timeout_ms=10_000)
        with Producer(namesrv_addr=cluster.namesrv_addr, config=cfg) as p:
            p.send(Message(TOPIC, BODY))
            rate, cpu_us = sync_one_cpu(p, args.seconds)
            results = {
                "sync, 1 thread": rate,
                "sync, 8 threads": sync_threads(p, args.seconds),
                "batch of 32": batches(p, args.seconds),
                "async, 1000 in flight": async_in_flight(p, args.seconds),
            }
        auto = ProducerConfig(producer_group="BenchProducerAuto", send_msg_timeout_ms=10_000, auto_batch=True)
        with Producer(namesrv_addr=cluster.namesrv_addr, config=auto) as p:
            p.send(Message(TOPIC, BODY))
            results["async, 1000, auto_batch"] = async_in_flight(p, args.seconds)
    print(f"{'scenario':<26}{'rocketq msgs/s':>16}{'Java ref msgs/s':>18}")
    for name, rate in results.items():
        print(f"{name:<26}{rate:>16,.0f}{java[name]:>18,}")
    print(f"client CPU per sync send (1 thread): {cpu_us:.1f} us")


if __name__ == "__main__":
    main()
