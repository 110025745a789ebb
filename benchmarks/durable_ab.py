"""Workload 6 (an fsync before every ack) interleaved finely: rocketq, rocketq-onloop, Redis.

``make bench`` runs each system's three durable workloads back to back, ~15 s per system; on a
disk whose ``fdatasync`` changes its speed from one minute to the next (this shared VM's moves
between ~0.1 and ~4 ms) a round's ratios then compare different disks. This script starts the
three servers once (``benchmarks.suite.peers``: rocketq SYNC_FLUSH with Java's GroupCommitService,
``rocketq-onloop`` with ``syncFlushOnLoop=true``, Redis ``appendfsync always``) and, per
repetition and per workload, runs the three back to back in short windows (order reversed every
other repetition), with the suite's own workload code and meter. It prints every run, the median
msgs/s and server CPU µs per message, and the median of the **per-repetition** ratios to Redis
(each ratio taken seconds apart, on the same disk).

``--tree LABEL=PYTHON[:KEY=VALUE]`` (repeatable) adds a rocketq SYNC_FLUSH server started by
another tree's interpreter (its venv's ``python``, built with ``make`` there), with one optional
environment variable: an A/B of two trees on the same disk, with Redis between them. The client
is always this tree's. ``--conf LABEL=KEY=VALUE`` (repeatable) adds a rocketq SYNC_FLUSH server of
this tree with one more ``broker.conf`` key (e.g. ``warm=warmMapedFileEnable=true``).
``--workloads`` picks among 1, 2, 3 (6a, 6b, 6c). ``--pin same|split`` pins every thread of
every server to CPU 0 and this process's threads (the clients) to CPU 0 (``same``) or CPU 1
(``split``): where the scheduler puts a one-in-flight client next to its server decides much of
workload 6's per-message CPU on a 2-core machine, and pinning shows each placement's ratio on its
own (``benchmarks/README.md``, speed8). The kernel's own workers (an AIO ``fdatasync`` runs on one
bound to the submitting CPU) are not pinned.

    python benchmarks/durable_ab.py [--reps 4] [--seconds 2] [--systems rocketq,rocketq-onloop,redis]
    python benchmarks/durable_ab.py --systems redis --tree new=.venv/bin/python \
        --tree base=/tmp/base/.venv/bin/python --reps 6 --workloads 1,3
    python benchmarks/durable_ab.py --pin split --workloads 1,2
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.suite.common import Meter, Sizes, Variant, Workload
from benchmarks.suite.peers import RocketqServer, Server, make_server
from benchmarks.suite.runner import DURABLE_WORKLOADS, _bench_for, _run_workload

#: --pin: (the servers' CPUs, the clients' CPUs)
_PLACEMENTS = {"same": ({0}, {0}), "split": ({0}, {1})}


def pin_process(pid: int, cpus: set[int]) -> None:
    """Pin every thread ``pid`` has now to ``cpus`` (threads started later inherit their
    creator's affinity)."""
    for tid in os.listdir(f"/proc/{pid}/task"):
        with contextlib.suppress(ProcessLookupError):  # the thread ended meanwhile
            os.sched_setaffinity(int(tid), cpus)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=2.0, help="measured window per run")
    parser.add_argument("--systems", default="rocketq,rocketq-onloop,redis")
    parser.add_argument(
        "--tree",
        action="append",
        default=[],
        metavar="LABEL=PYTHON[:KEY=VALUE]",
        help="a rocketq server started by another interpreter (repeatable)",
    )
    parser.add_argument(
        "--conf",
        action="append",
        default=[],
        metavar="LABEL=KEY=VALUE",
        help="a rocketq server of this tree with one more broker.conf key (repeatable)",
    )
    parser.add_argument("--workloads", default="1,2,3", help="of 1, 2, 3 (6a, 6b, 6c)")
    parser.add_argument(
        "--pin", choices=sorted(_PLACEMENTS), help="servers on CPU 0, clients on CPU 0 (same) or 1 (split)"
    )
    args = parser.parse_args()
    if args.pin and not {0, 1} <= os.sched_getaffinity(0):
        parser.error("--pin needs CPUs 0 and 1")
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    trees: dict[str, Server] = {}
    for spec in args.tree:
        label, _, rest = spec.partition("=")
        python, _, setting = rest.partition(":")
        key, _, value = setting.partition("=")
        if not label or not python or label in systems or label in trees:
            parser.error(f"--tree {spec!r}: LABEL=PYTHON[:KEY=VALUE], a label of its own")
        trees[label] = RocketqServer(Variant.DURABLE, python=python, env={key: value} if key else None)
    for spec in args.conf:
        label, _, setting = spec.partition("=")
        key, _, value = setting.partition("=")
        if not label or not key or label in systems or label in trees:
            parser.error(f"--conf {spec!r}: LABEL=KEY=VALUE, a label of its own")
        trees[label] = RocketqServer(Variant.DURABLE, broker_conf={key: value})
    systems += list(trees)
    picked = {w.strip() for w in args.workloads.split(",")}
    workloads = [w for w in DURABLE_WORKLOADS if w.short in picked]
    sizes = Sizes(
        publish_seconds=args.seconds, warmup_seconds=0.3, drain_messages=0, latency_messages=0, quiet_wait_s=0
    )
    servers: dict[str, Server] = {}
    runs: dict[tuple[Workload, str], list[tuple[float, float]]] = {}
    try:
        for system in systems:
            servers[system] = trees[system] if system in trees else make_server(system, Variant.DURABLE)
            servers[system].start()
        benches = {s: _bench_for(servers[s]) for s in systems}
        if args.pin:
            server_cpus, client_cpus = _PLACEMENTS[args.pin]
            for server in servers.values():
                pin_process(server.pid, server_cpus)
            pin_process(os.getpid(), client_cpus)
        try:
            for rep in range(args.reps):
                for workload in workloads:
                    for system in systems if rep % 2 == 0 else systems[::-1]:
                        m = Meter(servers[system].pid)
                        _run_workload(benches[system], workload, m, sizes)
                        one = m.measurement(system, Variant.DURABLE, workload, rep)
                        cpu_us = one.server_cpu_s / one.messages * 1e6 if one.messages else 0.0
                        runs.setdefault((workload, system), []).append((one.throughput, cpu_us))
                        print(
                            f"r{rep} {workload.short} {system:<15} {one.throughput:>10,.0f} msg/s "
                            f"server {cpu_us:6.1f} µs/msg",
                            flush=True,
                        )
        finally:
            for bench in benches.values():
                bench.close()
    finally:
        for server in servers.values():
            server.stop()
    print("\nworkload | system | msgs/s | server µs/msg | ratio to redis (median of per-repetition ratios)")
    for workload in workloads:
        redis = runs.get((workload, "redis"))
        for system in systems:
            mine = runs[(workload, system)]
            ratio = ""
            if redis is not None:
                ratios = [a[0] / b[0] for a, b in zip(mine, redis, strict=True) if b[0]]
                ratio = f"{statistics.median(ratios):.2f}x ({', '.join(f'{x:.2f}' for x in ratios)})"
            print(
                f"{workload.short} | {system} | {statistics.median(x[0] for x in mine):,.0f} "
                f"| {statistics.median(x[1] for x in mine):.1f} | {ratio}"
            )


if __name__ == "__main__":
    main()
