"""The broker's own numbers: sends, batches, a pull drain and its memory, on 4 queues.

Against an EmbeddedCluster (one ``rocketq server`` process: name server + broker), with
100-byte bodies: sync sends from one thread, batches of 32 from one thread, a pull-consumer
drain of N messages (every queue pulled in turn, 32 per pull, records decoded), and the
server's RSS when idle and at the end. Reference (a real Apache RocketMQ 4.9.7 broker with its
Java client, same machine class): 6,000 sync sends/s (p99 0.7 ms), 55,000 msgs/s in batches of
32, 55,000 msgs/s drain; about 200 MB RSS at idle.

    python benchmarks/broker_bench.py [--seconds 3] [--drain 200000]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from rocketq.client import Message, Producer, PullConsumer
from rocketq.client.api_results import PullStatus
from rocketq.protocol.message_queue import MessageQueue
from rocketq.testing.cluster import EmbeddedCluster

BODY = b"x" * 100


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def sync_sends(producer: Producer, topic: str, seconds: float) -> tuple[float, float]:
    lat: list[float] = []
    end = time.perf_counter() + seconds
    start = time.perf_counter()
    while time.perf_counter() < end:
        t = time.perf_counter()
        producer.send(Message(topic, BODY))
        lat.append((time.perf_counter() - t) * 1000)
    rate = len(lat) / (time.perf_counter() - start)
    return rate, statistics.quantiles(lat, n=100)[98]


def batch_sends(producer: Producer, topic: str, seconds: float) -> float:
    batch = [Message(topic, BODY) for _ in range(32)]
    n = 0
    end = time.perf_counter() + seconds
    start = time.perf_counter()
    while time.perf_counter() < end:
        producer.send(batch)
        n += 32
    return n / (time.perf_counter() - start)


def pull_drain(cluster: EmbeddedCluster, puller: PullConsumer, producer: Producer, n: int) -> float:
    topic = f"BenchPull{time.time_ns()}"
    cluster.create_topic(topic, 4)
    batch = [Message(topic, BODY) for _ in range(32)]
    for _ in range(n // 32):
        producer.send(batch)
    queues = [MessageQueue(topic, cluster.broker_names[0], q) for q in range(4)]
    offsets = dict.fromkeys(queues, 0)
    got = 0
    start = time.perf_counter()
    active = list(queues)
    while active:
        for mq in list(active):
            result = puller.pull(mq, "*", offsets[mq], 32)
            if result.pull_status is not PullStatus.FOUND:
                active.remove(mq)
                continue
            got += len(result.msg_found_list)
            offsets[mq] = result.next_begin_offset
    return got / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--drain", type=int, default=200_000)
    args = parser.parse_args()
    cluster = EmbeddedCluster(mapped_file_size_commit_log=256 * 1024 * 1024)
    with cluster:
        pid = cluster.broker_pid(0)
        idle = _rss_mb(pid)
        cluster.create_topic("BenchBroker", 4)
        with Producer("bench-broker", namesrv_addr=cluster.namesrv_addr) as producer:
            producer.send(Message("BenchBroker", BODY))
            rate, p99 = sync_sends(producer, "BenchBroker", args.seconds)
            batch = batch_sends(producer, "BenchBroker", args.seconds)
            puller = PullConsumer("bench-puller", namesrv_addr=cluster.namesrv_addr)
            puller.start()
            try:
                drain = pull_drain(cluster, puller, producer, args.drain)
            finally:
                puller.shutdown()
        busy = _rss_mb(pid)
    print(f"{'scenario':<36} {'result':>24}")
    print(f"{'sync send, 1 thread':<36} {rate:>12,.0f} msg/s p99 {p99:.2f} ms")
    print(f"{'batches of 32, 1 thread':<36} {batch:>18,.0f} msg/s")
    print(f"{'pull drain, 4 queues':<36} {drain:>18,.0f} msg/s")
    print(f"{'server RSS idle / after':<36} {idle:>10.0f} MB / {busy:.0f} MB")


if __name__ == "__main__":
    main()
