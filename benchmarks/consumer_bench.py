"""Push-consumer throughput, client CPU per message and end-to-end latency against an EmbeddedCluster.

Scenarios (100-byte bodies):

* drain: pre-produce N messages on 4 queues, then a concurrent PushConsumer with a no-op
  listener (batches of 32) consumes them all: msgs/s from start() to the last message and
  the client's CPU per message (``time.process_time`` of this process; the broker runs in
  a process of its own, so it is not counted). ``--consumers 4`` drains with 4 consumers
  of one group, each its own client instance (workload 4b of ``run_suite.py``);
* orderly drain: the same on 8 queues with an orderly listener;
* latency: 2,000 messages sent 1 ms apart to a running consumer; p50/p99/p999 of
  (listener call - send time).

Reference (the real Java push consumer on a real Apache RocketMQ 4.9.7, same machine class):
55,000 msgs/s drain, p50 0.9 ms / p99 15 ms end to end.

    python benchmarks/consumer_bench.py [--messages 200000] [--latency-messages 2000]
    python benchmarks/consumer_bench.py --only drain --rounds 3 [--consumers 1,4]
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import itertools
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time

from rocketq.client import (
    ClientConfig,
    ConsumeConcurrentlyStatus,
    ConsumeFromWhere,
    ConsumeOrderlyStatus,
    Message,
    Producer,
    PushConsumer,
    PushConsumerConfig,
)
from rocketq.protocol.message import MessageExt
from rocketq.testing.cluster import EmbeddedCluster

BODY = b"x" * 100
_ids = itertools.count(1)
#: route and rebalance polling fast enough that a group of 4 settles within a couple of seconds
_CLIENT = ClientConfig(poll_name_server_interval_ms=1000, rebalance_interval_ms=2000)


def _produce(producer: Producer, topic: str, n: int) -> None:
    batch = [Message(topic, BODY) for _ in range(32)]
    sent = 0
    while sent < n:
        size = min(32, n - sent)
        producer.send(batch[:size])
        sent += size


def thread_cpu() -> dict[str, tuple[str, float, float, int, int]]:
    """Thread id -> (Python name without numbers or instance name, user s, system s, voluntary
    and involuntary context switches) of this process (Linux). ``drain_probe.py`` uses it too."""
    out: dict[str, tuple[str, float, float, int, int]] = {}
    names = {str(t.native_id): t.name for t in threading.enumerate()}
    tck = os.sysconf("SC_CLK_TCK")
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/self/task/{tid}/stat") as fh:
                stat = fh.read()
            with open(f"/proc/self/task/{tid}/status") as fh:
                status = fh.read()
        except OSError:
            continue
        name = names.get(tid, stat[stat.index("(") + 1 : stat.rindex(")")])
        name = re.sub(r"\[.*\]", "[instance]", name).rstrip("0123456789_-")
        fields = stat[stat.rindex(")") + 2 :].split()
        vol = re.search(r"^voluntary_ctxt_switches:\s*(\d+)", status, re.M)
        invol = re.search(r"^nonvoluntary_ctxt_switches:\s*(\d+)", status, re.M)
        out[tid] = (
            name,
            int(fields[11]) / tck,
            int(fields[12]) / tck,
            int(vol[1]) if vol else 0,
            int(invol[1]) if invol else 0,
        )
    return out


def _print_threads(before: dict[str, tuple[str, float, float, int, int]], n: int) -> None:
    """The drain's client CPU split by thread name, µs per message (user + system), and the
    voluntary context switches (the thread slept and was woken) per pull of 32."""
    user: collections.Counter[str] = collections.Counter()
    system: collections.Counter[str] = collections.Counter()
    woken: collections.Counter[str] = collections.Counter()
    for tid, (name, u, s, w, _) in thread_cpu().items():
        _, u0, s0, w0, _ = before.get(tid, (name, 0.0, 0.0, 0, 0))
        user[name] += u - u0
        system[name] += s - s0
        woken[name] += w - w0
    pulls = max(n / 32, 1)
    for name, u in (user + system).most_common(8):
        print(
            f"    {name:<36} {u * 1e6 / n:5.2f} us/msg (system {system[name] * 1e6 / n:.2f}),"
            f" {woken[name] / pulls:4.1f} switches/pull"
        )
    print(f"    all threads: {sum(woken.values()) / pulls:.1f} voluntary switches per pull of 32")


class _Profiler:
    """``py-spy record`` attached to this process for the drains only (not the pre-production):
    raw collapsed stacks of the threads holding the GIL, appended to ``path``."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self._proc: subprocess.Popen[bytes] | None = None
        self._part = 0

    def start(self) -> None:
        if self.path is None:
            return
        spy = shutil.which("py-spy") or os.path.join(os.path.dirname(sys.executable), "py-spy")
        self._part += 1
        self._proc = subprocess.Popen(
            [spy, "record", "--gil", "-r", "1000", "-f", "raw", "-o", f"{self.path}.{self._part}",
             "--pid", str(os.getpid())],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        time.sleep(0.5)  # let it attach

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None or self.path is None:
            return
        proc.send_signal(signal.SIGINT)
        proc.wait(30)
        part = f"{self.path}.{self._part}"
        if os.path.exists(part):
            with open(part) as src, open(self.path, "a") as dst:
                dst.write(src.read())
            os.remove(part)


def _prepare(cluster: EmbeddedCluster, producer: Producer, n: int, *, orderly: bool) -> str:
    topic = f"BenchDrain{'Orderly' if orderly else ''}{time.time_ns()}"
    cluster.create_topic(topic, 8 if orderly else 4)
    _produce(producer, topic, n)
    return topic


def drain(
    cluster: EmbeddedCluster,
    topic: str,
    n: int,
    *,
    orderly: bool,
    consumers: int = 1,
    threads: bool = False,
    profiler: _Profiler | None = None,
) -> tuple[float, float]:
    """Drain ``n`` messages of ``topic``; (msgs/s, client µs CPU per message). ``threads``
    prints the CPU per message of each client thread (by name)."""
    done = threading.Event()
    seen: set[tuple[int, int]] = set()  # (queue id, offset): a redelivery is no progress
    lock = threading.Lock()

    def bump(msgs: list[MessageExt]) -> None:
        with lock:
            seen.update((m.queue_id, m.queue_offset) for m in msgs)
            if len(seen) >= n:
                done.set()

    group = f"bench-{topic}-{next(_ids)}"
    members = []
    for _ in range(consumers):
        consumer = PushConsumer(
            config=PushConsumerConfig(
                consumer_group=group,
                consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
                consume_message_batch_max_size=32 if not orderly else 1,
            ),
            namesrv_addr=cluster.namesrv_addr,
            client_config=dataclasses.replace(_CLIENT, instance_name=f"{group}_{next(_ids)}"),
        )
        consumer.subscribe(topic, "*")
        if orderly:
            consumer.register_message_listener_orderly(
                lambda msgs, ctx: (bump(msgs), ConsumeOrderlyStatus.SUCCESS)[1]
            )
        else:
            consumer.register_message_listener(
                lambda msgs, ctx: (bump(msgs), ConsumeConcurrentlyStatus.CONSUME_SUCCESS)[1]
            )
        members.append(consumer)
    if profiler is not None:
        profiler.start()
    per_thread = thread_cpu() if threads else {}
    cpu0 = time.process_time()
    start = time.perf_counter()
    for consumer in members:
        consumer.start()
    done.wait(600)
    elapsed = time.perf_counter() - start
    cpu = time.process_time() - cpu0
    if profiler is not None:
        profiler.stop()
    if threads:
        _print_threads(per_thread, max(len(seen), 1))
    for consumer in members:
        consumer.shutdown()
    return len(seen) / elapsed, cpu * 1e6 / max(len(seen), 1)


def latency(cluster: EmbeddedCluster, producer: Producer, n: int) -> tuple[float, float, float]:
    topic = f"BenchLatency{time.time_ns()}"
    cluster.create_topic(topic, 4)
    lat_ms: list[float] = []
    lock = threading.Lock()

    def listener(msgs: list[MessageExt], ctx: object) -> ConsumeConcurrentlyStatus:
        now = time.time_ns()
        with lock:
            for m in msgs:
                lat_ms.append((now - int(m.properties["t_ns"])) / 1e6)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    consumer = PushConsumer(
        config=PushConsumerConfig(consumer_group=f"bench-{topic}"), namesrv_addr=cluster.namesrv_addr
    )
    consumer.subscribe(topic, "*")
    consumer.register_message_listener(listener)  # type: ignore[arg-type]
    consumer.start()
    time.sleep(3)  # let the rebalance settle and the long polls park
    next_at = time.perf_counter()
    for _ in range(n):
        msg = Message(topic, BODY)
        msg.put_user_property("t_ns", str(time.time_ns()))
        producer.send(msg)
        next_at += 0.001
        pause = next_at - time.perf_counter()
        if pause > 0:
            time.sleep(pause)
    deadline = time.time() + 30
    while len(lat_ms) < n and time.time() < deadline:
        time.sleep(0.05)
    consumer.shutdown()
    lat_ms.sort()
    q = statistics.quantiles(lat_ms, n=1000)
    return q[499], q[989], q[998]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--latency-messages", type=int, default=2000)
    parser.add_argument("--only", choices=("drain", "orderly", "latency"), help="run one scenario")
    parser.add_argument("--rounds", type=int, default=1, help="drains per consumer count (median shown)")
    parser.add_argument("--consumers", default="1", help="comma-separated consumer counts of the drain")
    parser.add_argument("--threads", action="store_true", help="client CPU of each thread (Linux)")
    parser.add_argument("--py-spy", metavar="FILE", help="sample the drains with py-spy (raw stacks to FILE)")
    args = parser.parse_args()
    profiler = _Profiler(args.py_spy)
    counts = [int(c) for c in args.consumers.split(",")]
    cluster = EmbeddedCluster(mapped_file_size_commit_log=256 * 1024 * 1024)
    rows: list[tuple[str, str]] = []
    with cluster, Producer("bench-producer", namesrv_addr=cluster.namesrv_addr) as producer:
        if args.only in (None, "drain"):
            for consumers in counts:
                runs = []
                for _ in range(args.rounds):
                    topic = _prepare(cluster, producer, args.messages, orderly=False)
                    runs.append(
                        drain(
                            cluster,
                            topic,
                            args.messages,
                            orderly=False,
                            consumers=consumers,
                            threads=args.threads,
                            profiler=profiler,
                        )
                    )
                    print(f"  drain x{consumers}: {runs[-1][0]:,.0f} msg/s, {runs[-1][1]:.2f} us CPU/msg")
                rate = statistics.median(r[0] for r in runs)
                cpu = statistics.median(r[1] for r in runs)
                rows.append(
                    (
                        f"drain, concurrent, 4 queues, {consumers} consumer(s)",
                        f"{rate:,.0f} msg/s {cpu:5.2f} us",
                    )
                )
        if args.only in (None, "orderly"):
            topic = _prepare(cluster, producer, args.messages, orderly=True)
            rate, cpu = drain(cluster, topic, args.messages, orderly=True)
            rows.append(("drain, orderly, 8 queues", f"{rate:,.0f} msg/s {cpu:5.2f} us"))
        if args.only in (None, "latency"):
            p50, p99, p999 = latency(cluster, producer, args.latency_messages)
            rows.append(("end-to-end latency p50/p99/p999", f"{p50:.2f}/{p99:.2f}/{p999:.2f} ms"))
    print(f"{'scenario':<48} {'result (client CPU per message)':>32}")
    for name, result in rows:
        print(f"{name:<48} {result:>32}")


if __name__ == "__main__":
    main()
