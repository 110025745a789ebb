"""A/B of the request header serialization: JSON against ROCKETMQ binary (``ClientConfig.serialize_type``).

One EmbeddedCluster (name server + broker in one process); runs alternate JSON and ROCKETMQ
in the same window. Each run measures, per message: the client's CPU (``time.process_time``
of this process, every thread), the broker process's CPU (``/proc/<pid>/stat`` utime+stime,
10 ms ticks: keep windows long) and the rate, for

* w1: sync ``Producer.send``, one in flight;
* w2: sync batches of 32;
* drain: a concurrent ``PushConsumer`` draining pre-produced messages (pull requests and
  answers carry headers too; the messages are produced before the window, always in JSON).

    python benchmarks/serialize_ab.py [--runs 5] [--seconds 3] [--drain 100000]
    python benchmarks/serialize_ab.py --in-process [--runs 4]

``--in-process``: broker_bench.py's in-process send path (no sockets) fed the same
SEND_MESSAGE_V2 frames in either header type; broker µs CPU per send.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import itertools
import os
import statistics
import threading
import time
from collections.abc import Callable

from rocketq.client import (
    ClientConfig,
    ConsumeConcurrentlyStatus,
    ConsumeFromWhere,
    Message,
    Producer,
    ProducerConfig,
    PushConsumer,
    PushConsumerConfig,
)
from rocketq.protocol.codes import SerializeType
from rocketq.protocol.frame import decode_frame
from rocketq.protocol.message import MessageExt
from rocketq.testing.cluster import EmbeddedCluster

BODY = b"x" * 100
TOPIC = "SerAbTopic"
_TICK = os.sysconf("SC_CLK_TCK")
_ids = itertools.count(1)
_TYPES = {"JSON": SerializeType.JSON, "ROCKETMQ": SerializeType.ROCKETMQ}


def _proc_cpu(pid: int) -> float:
    """utime + stime of ``pid`` in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


def _window(pid: int, seconds: float, step: Callable[[], int]) -> tuple[float, float, float]:
    """Call ``step()`` (returns messages done) for ``seconds``; (msgs/s, client µs, broker µs)."""
    deadline = time.perf_counter() + 0.3
    while time.perf_counter() < deadline:  # warm-up
        step()
    n = 0
    b0, c0, t0 = _proc_cpu(pid), time.process_time(), time.perf_counter()
    deadline = t0 + seconds
    while time.perf_counter() < deadline:
        n += step()
    t1, c1, b1 = time.perf_counter(), time.process_time(), _proc_cpu(pid)
    return n / (t1 - t0), (c1 - c0) / n * 1e6, (b1 - b0) / n * 1e6


def _producer(cluster: EmbeddedCluster, kind: str) -> Producer:
    cfg = ProducerConfig(producer_group=f"SerAb{kind}{next(_ids)}", send_msg_timeout_ms=10_000)
    client = ClientConfig(serialize_type=_TYPES[kind], instance_name=f"ser-{kind}-{next(_ids)}")
    p = Producer(namesrv_addr=cluster.namesrv_addr, config=cfg, client_config=client)
    p.start()
    p.send(Message(TOPIC, BODY))
    return p


def w1(cluster: EmbeddedCluster, kind: str, seconds: float) -> tuple[float, float, float]:
    p = _producer(cluster, kind)
    try:

        def step() -> int:
            p.send(Message(TOPIC, BODY))
            return 1

        return _window(cluster.broker_pid(), seconds, step)
    finally:
        p.shutdown()


def w2(cluster: EmbeddedCluster, kind: str, seconds: float) -> tuple[float, float, float]:
    p = _producer(cluster, kind)
    try:

        def step() -> int:
            p.send([Message(TOPIC, BODY) for _ in range(32)])
            return 32

        return _window(cluster.broker_pid(), seconds, step)
    finally:
        p.shutdown()


def drain(cluster: EmbeddedCluster, kind: str, n: int) -> tuple[float, float, float]:
    topic = f"SerAbDrain{next(_ids)}"
    cluster.create_topic(topic, 4)
    p = _producer(cluster, "JSON")
    try:
        batch = [Message(topic, BODY) for _ in range(32)]
        for _ in range(n // 32):
            p.send(batch)
    finally:
        p.shutdown()
    total = (n // 32) * 32
    done = threading.Event()
    seen: set[tuple[int, int]] = set()
    lock = threading.Lock()

    def listener(msgs: list[MessageExt], ctx: object) -> ConsumeConcurrentlyStatus:
        with lock:
            seen.update((m.queue_id, m.queue_offset) for m in msgs)
            if len(seen) >= total:
                done.set()
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    group = f"ser-ab-{kind}-{next(_ids)}"
    consumer = PushConsumer(
        config=PushConsumerConfig(
            consumer_group=group,
            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
            consume_message_batch_max_size=32,
        ),
        namesrv_addr=cluster.namesrv_addr,
        client_config=dataclasses.replace(
            ClientConfig(poll_name_server_interval_ms=1000, rebalance_interval_ms=2000),
            serialize_type=_TYPES[kind],
            instance_name=group,
        ),
    )
    consumer.subscribe(topic, "*")
    consumer.register_message_listener(listener)
    pid = cluster.broker_pid()
    b0, c0, t0 = _proc_cpu(pid), time.process_time(), time.perf_counter()
    consumer.start()
    done.wait(600)
    t1, c1, b1 = time.perf_counter(), time.process_time(), _proc_cpu(pid)
    consumer.shutdown()
    got = max(len(seen), 1)
    return got / (t1 - t0), (c1 - c0) / got * 1e6, (b1 - b0) / got * 1e6


def in_process(runs: int) -> None:
    import broker_bench  # a sibling script: only this mode needs it

    json_frames = broker_bench._send_frames

    def binary_frames(topic: str, count: int, batch: int) -> list[bytes]:
        out = []
        for frame in json_frames(topic, count, batch):
            command = decode_frame(frame)
            command.serialize_type = SerializeType.ROCKETMQ
            out.append(command.encode())
        return out

    results: dict[str, list[float]] = {"JSON": [], "ROCKETMQ": []}
    for run in range(runs):
        for kind in ("JSON", "ROCKETMQ") if run % 2 == 0 else ("ROCKETMQ", "JSON"):
            broker_bench._send_frames = json_frames if kind == "JSON" else binary_frames
            results[kind].append(asyncio.run(broker_bench._in_process(20_000, 1)))
            print(f"run {run} {kind:8} broker {results[kind][-1]:6.2f} µs/send", flush=True)
    for kind, values in results.items():
        print(f"{kind:9} median {statistics.median(values):6.2f} µs/send")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="alternating A/B runs")
    parser.add_argument("--seconds", type=float, default=3.0, help="window of w1 and w2")
    parser.add_argument("--drain", type=int, default=100_000, help="messages per drain (0: none)")
    parser.add_argument("--only", choices=("w1", "w2", "drain"), action="append")
    parser.add_argument("--in-process", action="store_true", help="the broker's send path without sockets")
    args = parser.parse_args()
    if args.in_process:
        in_process(args.runs)
        return
    only = args.only or ["w1", "w2", "drain"]
    results: dict[tuple[str, str], list[tuple[float, float, float]]] = {}
    with EmbeddedCluster() as cluster:
        cluster.create_topic(TOPIC, 8)
        for run in range(args.runs):
            order = ["JSON", "ROCKETMQ"] if run % 2 == 0 else ["ROCKETMQ", "JSON"]
            for work in only:
                for kind in order:
                    if work == "w1":
                        r = w1(cluster, kind, args.seconds)
                    elif work == "w2":
                        r = w2(cluster, kind, args.seconds)
                    else:
                        r = drain(cluster, kind, args.drain)
                    results.setdefault((work, kind), []).append(r)
                    print(
                        f"run {run} {work:5} {kind:8} {r[0]:>10,.0f}/s client {r[1]:6.2f} µs broker {r[2]:6.2f} µs",
                        flush=True,
                    )
    print(
        f"\n{'workload':8} {'type':9} {'msgs/s':>10} {'client µs':>10} {'broker µs':>10} {'sum µs':>8}  (medians of {args.runs})"
    )
    for (work, kind), rs in results.items():
        rate = statistics.median(r[0] for r in rs)
        cl = statistics.median(r[1] for r in rs)
        br = statistics.median(r[2] for r in rs)
        tot = statistics.median(r[1] + r[2] for r in rs)
        print(f"{work:8} {kind:9} {rate:>10,.0f} {cl:>10.2f} {br:>10.2f} {tot:>8.2f}")


if __name__ == "__main__":
    main()
