"""Workload 5 and the 4a drain with the broker's share: one JSON line per round.

The suite's own pieces (``RocketqBench``: its workload 5 and its one-consumer drain of the
pre-published topic) on one embedded cluster, with:

* ``p50``/``p99`` end-to-end ms of workload 5, ``send50``/``send99`` the producer's send ms
  (the ack's wait), ``w5_srv_us`` broker µs CPU per message of workload 5;
* ``rate`` msgs/s of the drain, ``d_srv_us`` broker µs CPU per pulled message (``d_usr`` /
  ``d_sys`` its user / system parts from ``/proc/<pid>/stat``), ``d_cli_us`` client µs CPU.

Run it with ``PYTHONPATH=<a tree's src>`` to A/B two trees, alternating, and with
``ROCKETQ_PURE_PYTHON=1`` for the pure build:

    .venv/bin/python benchmarks/pullwake_probe.py --rounds 3 --label new
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import time
from typing import Any

from suite.common import FULL, Meter, Variant, Workload
from suite.rocketq_bench import RocketqBench

from rocketq import _build
from rocketq.client import Message, SendResult
from rocketq.testing.cluster import EmbeddedCluster


def _cpu_ticks(pid: int) -> tuple[int, int]:
    """(user, system) clock ticks of process ``pid``."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]), int(fields[12])


class _TimedProducer:
    """The bench's producer with each ``send`` timed (the rest passes through)."""

    def __init__(self, producer: Any) -> None:
        self._producer = producer
        self.sends_ns: list[int] = []

    def send(self, message: Message) -> SendResult:
        started = time.perf_counter_ns()
        result: SendResult = self._producer.send(message)
        self.sends_ns.append(time.perf_counter_ns() - started)
        return result

    def __getattr__(self, name: str) -> object:
        return getattr(self._producer, name)


def _ms(sorted_ns: list[int], q: float) -> float:
    return round(sorted_ns[min(len(sorted_ns) - 1, int(len(sorted_ns) * q))] / 1e6, 3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--latency-messages", type=int, default=4000)
    parser.add_argument("--drain-messages", type=int, default=200_000)
    parser.add_argument("--skip", default="", help="'5' and/or '4a': workloads left out")
    parser.add_argument("--label", default="", help="added to every line (e.g. the tree's name)")
    args = parser.parse_args()
    sizes = dataclasses.replace(
        FULL, drain_messages=args.drain_messages // 32 * 32, latency_messages=args.latency_messages
    )
    ticks = os.sysconf("SC_CLK_TCK")
    with EmbeddedCluster(mapped_file_size_commit_log=128 * 1024 * 1024) as cluster:
        pid = cluster.broker_pid()
        bench = RocketqBench(cluster)
        try:
            if "4a" not in args.skip:
                bench.prepare_drain(sizes)
            for rnd in range(args.rounds):
                row: dict[str, object] = {
                    "label": args.label,
                    "build": "compiled" if _build.state().compiled else "pure",
                }
                if "5" not in args.skip:
                    real = bench.producer
                    timed = _TimedProducer(real)
                    bench.producer = timed  # type: ignore[assignment]
                    try:
                        m = Meter(pid)
                        bench.latency(m, sizes)
                    finally:
                        bench.producer = real
                    x = m.measurement("rocketq", Variant.DEFAULT, Workload.LATENCY, rnd)
                    sends = sorted(timed.sends_ns[-sizes.latency_messages :])
                    row.update(
                        p50=round(x.latency_ms["p50"], 3),
                        p99=round(x.latency_ms["p99"], 3),
                        send50=_ms(sends, 0.5),
                        send99=_ms(sends, 0.99),
                        w5_srv_us=round(x.server_cpu_s * 1e6 / x.messages, 1),
                    )
                if "4a" not in args.skip:
                    user0, sys0 = _cpu_ticks(pid)
                    m = Meter(pid)
                    bench.drain(m, sizes, 1)
                    user1, sys1 = _cpu_ticks(pid)
                    x = m.measurement("rocketq", Variant.DEFAULT, Workload.DRAIN_ONE, rnd)
                    per_msg = 1e6 / ticks / x.messages
                    row.update(
                        rate=round(x.throughput),
                        d_srv_us=round(x.server_cpu_s * 1e6 / x.messages, 3),
                        d_usr=round((user1 - user0) * per_msg, 2),
                        d_sys=round((sys1 - sys0) * per_msg, 2),
                        d_cli_us=round(x.client_cpu_s * 1e6 / x.messages, 3),
                    )
                print(json.dumps(row), flush=True)
        finally:
            bench.close()


if __name__ == "__main__":
    main()
