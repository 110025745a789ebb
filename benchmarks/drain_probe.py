"""The push-consumer drain (workloads 4a/4b) with the figures a drain's cost splits into.

The suite's own pieces (``RocketqBench``): its pre-published topic of 4 queues
(``prepare_drain``, 100-byte bodies) and its PushConsumers (``_push_consumer``: each its own
client instance, batches of 32, CONSUME_FROM_FIRST_OFFSET, fast route/rebalance polling), a new
group per drain, and the suite's listener (a lock and the distinct (queue, offset) pairs) that also notes
the first delivery. One JSON line per drain:

* ``rate`` msgs/s and ``cpu_us`` client µs CPU per message (``time.process_time``), from the
  first ``start()`` to the last new message, as ``run_suite.py`` times it;
* ``first_ms`` the first ``start()`` to the first message delivered, ``start_s`` the time
  the ``start()`` calls took;
* ``inline_pauses`` the times a batch run on the I/O thread (``consume_on_io_thread``) was
  slow enough to send the batches to the consume threads for a while;
* ``redelivered`` messages delivered again (rebalance hand-overs), ``refused`` pulls a broker
  refused as SUBSCRIPTION_NOT_LATEST (each parks its queue for
  ``pull_time_delay_mills_when_exception_ms``), ``flow_control`` flow-control pauses;
* ``broker_us`` broker µs CPU per message over the same window (``/proc/<pid>/stat`` utime +
  stime of the ``rocketq server`` process, which also hosts the idle name server; 10 ms ticks);
* ``vsw_pull`` / ``nvsw_pull`` voluntary / involuntary context switches of all the process's
  threads per pull of 32 (``/proc/self/task/*/status``); ``--threads`` adds client CPU and
  voluntary switches per thread kind (10 ms ticks: coarse for short drains); ``--syscalls``
  adds the system calls per pull of each thread kind, counted by ``perf trace -s`` attached
  once a tenth of the drain is delivered (the threads exist by then) until its end (root or
  a permissive ``perf_event_paranoid``; tracing slows the drain: read its counts, not its
  rate; give it ``--messages`` enough for a drain of several seconds).

``--listener-wait-ms`` / ``--listener-cpu-ms`` make the listener sleep / compute that long per
batch first (a listener that waits for I/O, one that works).

Run it with ``PYTHONPATH=<a tree's src>`` to A/B two trees, alternating, and with
``ROCKETQ_PURE_PYTHON=1`` for the pure build:

    .venv/bin/python benchmarks/drain_probe.py --messages 200000 --rounds 3 --consumers 1,4
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import itertools
import json
import logging
import os
import re
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable

from broker_bench import _cpu_s as process_cpu_s  # sibling scripts (run as benchmarks/drain_probe.py)
from consumer_bench import thread_cpu
from suite.common import FULL
from suite.rocketq_bench import DrainTally, RocketqBench

from rocketq.client.consumer.listener import ConsumeConcurrentlyContext, ConsumeConcurrentlyStatus
from rocketq.protocol.message import MessageExt
from rocketq.testing.cluster import EmbeddedCluster
from rocketq.testing.waits import wait_until

_ids = itertools.count(1)


def _threads() -> dict[str, tuple[str, float, int, int]]:
    """``consumer_bench.thread_cpu`` with the probe's group and client ids folded too: thread
    id -> (kind, CPU s, voluntary and involuntary context switches)."""
    return {
        tid: (re.sub(r"drain_\w+|[\d.]+@\S*?(?=-|$)", "*", name), user + system, vol, invol)
        for tid, (name, user, system, vol, invol) in thread_cpu().items()
    }


class _SyscallTrace:
    """``perf trace -s`` attached to this process for one drain: calls per thread id."""

    def __init__(self) -> None:
        fd, self._path = tempfile.mkstemp(prefix="drain_probe_perf_", suffix=".txt")
        os.close(fd)
        self._proc = subprocess.Popen(
            ["perf", "trace", "-s", "-p", str(os.getpid()), "-o", self._path],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(0.5)  # perf attaches meanwhile (only to the threads alive now)

    def stop(self) -> dict[str, dict[str, int]]:
        """Thread id -> system call -> calls."""
        self._proc.send_signal(signal.SIGINT)
        self._proc.wait(30)
        calls: dict[str, dict[str, int]] = {}
        current: dict[str, int] | None = None
        with open(self._path) as f:
            for line in f:
                head = re.match(r"\s*\S.* \((\d+)\), \d+ events", line)
                if head:
                    current = calls.setdefault(head.group(1), {})
                    continue
                row = re.match(r"\s+([a-z_0-9]+)\s+(\d+)\s+\d+\s", line)
                if row and current is not None:
                    current[row.group(1)] = current.get(row.group(1), 0) + int(row.group(2))
        os.unlink(self._path)
        return calls


class _Refusals(logging.Handler):
    """Counts the push consumer's 'pull ... failed: CODE: 25' lines (SUBSCRIPTION_NOT_LATEST)."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        if "CODE: 25 " in record.getMessage():
            self.count += 1


def _slowed(
    listener: Callable[[list[MessageExt], ConsumeConcurrentlyContext], ConsumeConcurrentlyStatus],
    wait_ms: float,
    cpu_ms: float,
) -> Callable[[list[MessageExt], ConsumeConcurrentlyContext], ConsumeConcurrentlyStatus]:
    """``listener`` after a sleep of ``wait_ms`` and ``cpu_ms`` of computing per batch (a
    listener that waits for I/O, one that works), or ``listener`` itself."""
    if not wait_ms and not cpu_ms:
        return listener

    def slowed(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        if wait_ms:
            time.sleep(wait_ms / 1000)
        if cpu_ms:
            end = time.thread_time() + cpu_ms / 1000
            while time.thread_time() < end:
                pass
        return listener(msgs, ctx)

    return slowed


def drain(
    bench: RocketqBench,
    broker_pid: int,
    total: int,
    consumers: int,
    per_thread: bool,
    syscalls: bool = False,
    wait_ms: float = 0.0,
    cpu_ms: float = 0.0,
) -> dict[str, object]:
    """One drain of the suite's pre-published topic by ``consumers`` new members of a group."""
    group = f"drain_{bench._run}_{next(_ids)}"
    tally = DrainTally(total)  # the suite's listener
    listener = _slowed(tally.listener, wait_ms, cpu_ms)
    members = [bench._push_consumer(group, bench._drain_topic, listener, 32) for _ in range(consumers)]
    refusals = _Refusals()
    push_log = logging.getLogger("rocketq.client.consumer.push")
    push_log.addHandler(refusals)
    threads0 = _threads()
    cpu0 = time.process_time()
    broker0 = process_cpu_s(broker_pid)
    t0 = time.perf_counter()
    for consumer in members:
        consumer.start()
    started = time.perf_counter()
    trace, traced_from = None, 0
    if syscalls:
        wait_until(lambda: tally.done() >= total // 10, 60, "a tenth of the drain", interval_s=0.001)
        trace = _SyscallTrace()
        traced_from = tally.done()
    if not tally.finished.wait(300):
        raise RuntimeError(f"drain: {tally.done()} of {total}")
    t1 = time.perf_counter()
    cpu = time.process_time() - cpu0
    broker_cpu = process_cpu_s(broker_pid) - broker0
    threads1 = _threads()
    traced = trace.stop() if trace is not None else {}
    push_log.removeHandler(refusals)
    flow_control = sum(c._queue_flow_control_times for c in members)
    inline_pauses = sum(c._inline_pauses for c in members)
    for consumer in members:
        consumer.shutdown()
    n = tally.done()
    pulls = n / 32
    by_kind: dict[str, list[float]] = collections.defaultdict(lambda: [0.0, 0.0, 0.0])
    vol = invol = 0
    for tid, (name, c1, v1, i1) in threads1.items():
        _, c0, v0, i0 = threads0.get(tid, (name, 0.0, 0, 0))
        vol += v1 - v0
        invol += i1 - i0
        kind = by_kind[name]
        kind[0] += (c1 - c0) * 1e6 / n
        kind[1] += (v1 - v0) / pulls
        kind[2] += 1
    row: dict[str, object] = {
        "consumers": consumers,
        "rate": round(n / (t1 - t0)),
        "cpu_us": round(cpu * 1e6 / n, 3),
        "broker_us": round(broker_cpu * 1e6 / n, 3),
        "first_ms": round((tally.first - t0) * 1000, 1),
        "start_s": round(started - t0, 3),
        "wall_s": round(t1 - t0, 3),
        "redelivered": tally.redelivered,
        "refused": refusals.count,
        "flow_control": flow_control,
        "inline_pauses": inline_pauses,
        "vsw_pull": round(vol / pulls, 2),
        "nvsw_pull": round(invol / pulls, 2),
        "build": "pure" if os.environ.get("ROCKETQ_PURE_PYTHON") else "compiled",
    }
    if per_thread:
        busiest = sorted(by_kind.items(), key=lambda kv: -kv[1][0])[:6]
        row["threads"] = {
            name: {"us_msg": round(k[0], 2), "vsw_pull": round(k[1], 2), "n": int(k[2])}
            for name, k in busiest
        }
    if syscalls:
        per_kind: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
        for tid, counts in traced.items():
            per_kind[threads1[tid][0] if tid in threads1 else "(ended)"].update(counts)
        row["syscalls_pull"] = {
            kind: {
                call: round(n_calls * 32 / (n - traced_from), 2) for call, n_calls in counts.most_common(6)
            }
            for kind, counts in sorted(per_kind.items(), key=lambda kv: -sum(kv[1].values()))[:4]
        }
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--consumers", default="1,4", help="comma-separated consumer counts")
    parser.add_argument("--label", default="", help="added to every line (e.g. the tree's name)")
    parser.add_argument("--threads", action="store_true", help="CPU and switches per thread kind")
    parser.add_argument(
        "--syscalls", action="store_true", help="system calls per pull per thread kind (perf)"
    )
    parser.add_argument(
        "--consume-on-io-thread",
        choices=("default", "on", "off"),
        default="default",
        help="the consumers' consume_on_io_thread (rocketq only; default: the shipped default, on)",
    )
    parser.add_argument(
        "--listener-wait-ms", type=float, default=0.0, help="the listener sleeps this long per batch first"
    )
    parser.add_argument(
        "--listener-cpu-ms", type=float, default=0.0, help="the listener computes this long per batch first"
    )
    args = parser.parse_args()
    sizes = dataclasses.replace(FULL, drain_messages=args.messages // 32 * 32)
    cluster = EmbeddedCluster(mapped_file_size_commit_log=256 * 1024 * 1024)
    with cluster:
        inline = {"default": None, "on": True, "off": False}[args.consume_on_io_thread]
        bench = RocketqBench(cluster, consume_on_io_thread=inline)
        try:
            bench.prepare_drain(sizes)
            for _ in range(args.rounds):
                for consumers in (int(c) for c in args.consumers.split(",")):
                    row = drain(
                        bench,
                        cluster.broker_pid(),
                        sizes.drain_messages,
                        consumers,
                        args.threads,
                        args.syscalls,
                        args.listener_wait_ms,
                        args.listener_cpu_ms,
                    )
                    row["label"] = args.label
                    print(json.dumps(row), flush=True)
        finally:
            bench.close()


if __name__ == "__main__":
    main()
