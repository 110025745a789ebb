"""Run the workloads against every system in alternation and reduce the rounds to medians.

Order of one round: for each variant (default, then durable), each system in turn
(rocketq, rocketq-onloop, rocketq-pure, redis, nats) gets a fresh server (new process, new
temporary data dir), runs its workloads, and the server is stopped before the next system
starts - so only one server runs at a time and rounds alternate A B C D A B C D .... Workloads
1-5 run in the default variant; 1-3 in the durable one. ``rocketq-onloop`` (the loaded build
with ``syncFlushOnLoop=true``) runs in the durable variant only: under ASYNC_FLUSH the setting
does nothing.

Both rocketq builds (``rocketq._build``): ``rocketq`` is the build this process loaded (the
mypyc-compiled hot set when it is built); ``rocketq-pure`` runs the same workloads in a child
process with ``ROCKETQ_PURE_PYTHON=1``, so its client and its server are both pure Python. When
this process already runs pure Python, ``rocketq-pure`` is skipped (its rows would be ``rocketq``'s).

Invariants: a peer whose binary or client is missing is recorded in
:attr:`SuiteResult.missing` (and reported), never dropped silently; a workload that fails
is recorded in :attr:`SuiteResult.failures` and the run goes on.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from .common import Bench, Measurement, Meter, Sizes, Variant, Workload, read_busy_cpu_s
from .peers import ONLOOP_SYSTEM, PeerMissing, Server, check_peer, make_server

__all__ = [
    "DEFAULT_WORKLOADS",
    "DURABLE_WORKLOADS",
    "SYSTEMS",
    "Row",
    "SuiteResult",
    "machine_info",
    "run_suite",
    "summarize",
    "wait_quiet",
]

log = logging.getLogger(__name__)

SYSTEMS = ("rocketq", ONLOOP_SYSTEM, "rocketq-pure", "redis", "nats")
#: The system run in a pure-Python child process (see the module docstring).
PURE_SYSTEM = "rocketq-pure"
DEFAULT_WORKLOADS = tuple(Workload)
DURABLE_WORKLOADS = (Workload.PUBLISH_ONE, Workload.PUBLISH_BATCH, Workload.PUBLISH_ASYNC)
REPO = Path(__file__).resolve().parents[2]


@dataclass
class SuiteResult:
    """Everything one run measured, plus what kept parts of it from running."""

    sizes: Sizes
    measurements: list[Measurement] = field(default_factory=list)
    #: system -> why it could not run (missing binary / client).
    missing: dict[str, str] = field(default_factory=dict)
    #: "system variant workload round: error" lines.
    failures: list[str] = field(default_factory=list)
    #: (system, variant) -> (server version, durability setting).
    servers: dict[tuple[str, Variant], tuple[str, str]] = field(default_factory=dict)
    machine: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0


@dataclass(frozen=True)
class Row:
    """The median of one (system, variant, workload) over its rounds."""

    system: str
    variant: Variant
    workload: Workload
    rounds: int
    throughput: float
    throughput_min: float
    throughput_max: float
    latency_ms: dict[str, float]
    server_cpu_s: float
    server_cpu_us_per_msg: float
    server_peak_rss_mib: float
    client_cpu_s: float
    other_cpu_s: float
    errors: int


def _bench_for(server: Server) -> Bench:
    if server.system in ("rocketq", ONLOOP_SYSTEM):
        from .peers import RocketqServer
        from .rocketq_bench import RocketqBench

        assert isinstance(server, RocketqServer)
        return RocketqBench(server.cluster)
    if server.system == "redis":
        from .redis_bench import RedisBench

        return RedisBench(server.url)
    from .nats_bench import NatsBench

    return NatsBench(server.url)


def _run_workload(bench: Bench, workload: Workload, m: Meter, sizes: Sizes) -> None:
    if workload is Workload.PUBLISH_ONE:
        bench.publish_one(m, sizes)
    elif workload is Workload.PUBLISH_BATCH:
        bench.publish_batch(m, sizes)
    elif workload is Workload.PUBLISH_ASYNC:
        bench.publish_async(m, sizes)
    elif workload is Workload.DRAIN_ONE:
        bench.prepare_drain(sizes)
        bench.drain(m, sizes, 1)
    elif workload is Workload.DRAIN_GROUP:
        bench.drain(m, sizes, 4)
    elif workload is Workload.ASYNC_PUBLISH_ONE:
        bench.async_publish_one(m, sizes)
    elif workload is Workload.ASYNC_PUBLISH_ASYNC:
        bench.async_publish_async(m, sizes)
    elif workload is Workload.ASYNC_DRAIN_ONE:
        bench.async_drain(m, sizes, 1)
    elif workload is Workload.ASYNC_DRAIN_GROUP:
        bench.async_drain(m, sizes, 4)
    else:
        bench.latency(m, sizes)


def wait_quiet(sizes: Sizes, say: Callable[[str], None]) -> float:
    """Wait (at most ``sizes.quiet_wait_s``) until other processes use < ``quiet_cores``.

    Called while no server of ours runs and this process idles, so the machine's busy CPU
    time over one second is other processes' load. Returns the last load seen, in cores.
    """
    deadline = time.monotonic() + sizes.quiet_wait_s
    load = 0.0
    while True:
        busy0 = read_busy_cpu_s()
        time.sleep(1.0)
        load = read_busy_cpu_s() - busy0
        if load < sizes.quiet_cores or time.monotonic() >= deadline:
            break
    if load >= sizes.quiet_cores:
        say(f"  note: other processes still use {load:.1f} cores; measuring anyway")
    return load


def _run_system(
    result: SuiteResult,
    system: str,
    variant: Variant,
    workloads: Sequence[Workload],
    rnd: int,
    say: Callable[[str], None],
) -> None:
    sizes = result.sizes
    if system == PURE_SYSTEM:
        _run_pure_child(result, variant, rnd)
        return
    with make_server(system, variant) as server:
        result.servers[(system, variant)] = (server.version, server.durability_note)
        bench = _bench_for(server)
        try:
            for workload in workloads:
                if workload is Workload.DRAIN_GROUP and any(
                    f.startswith(f"{system} {variant.value} {Workload.DRAIN_ONE.short} r{rnd}")
                    for f in result.failures
                ):
                    continue  # nothing was pre-published
                m = Meter(server.pid)
                try:
                    _run_workload(bench, workload, m, sizes)
                    one = m.measurement(system, variant, workload, rnd)
                except Exception as exc:
                    result.failures.append(f"{system} {variant.value} {workload.short} r{rnd}: {exc!r}")
                    log.error(
                        "%s %s %s failed:\n%s", system, variant.value, workload.value, traceback.format_exc()
                    )
                    continue
                result.measurements.append(one)
                lat = " ".join(f"{k}={v:.2f}ms" for k, v in one.latency_ms.items())
                say(
                    f"  r{rnd} {variant.value:<7} {system:<7} {workload.value:<34} "
                    f"{one.throughput:>11,.0f} msg/s  cpu {one.server_cpu_s:5.2f}s  {lat}"
                )
        finally:
            bench.close()


def _run_pure_child(result: SuiteResult, variant: Variant, rnd: int) -> None:
    """One round of ``rocketq`` in a child process with ``ROCKETQ_PURE_PYTHON=1`` (client and
    server pure), its measurements relabelled ``rocketq-pure``."""
    from .report import load_results

    sizes = dataclasses.replace(result.sizes, rounds=1, quiet_wait_s=0.0)
    with tempfile.TemporaryDirectory(prefix="rocketq-pure-") as tmp:
        cmd = [sys.executable, str(REPO / "benchmarks" / "run_suite.py"), "--child-of-suite"]
        cmd += [
            "--sizes-json",
            json.dumps(dataclasses.asdict(sizes)),
            "--variants",
            variant.value,
            "--out",
            tmp,
        ]
        env = {**os.environ, "ROCKETQ_PURE_PYTHON": "1"}
        proc = subprocess.run(cmd, env=env, check=False, timeout=3600)
        path = Path(tmp) / "results.json"
        if not path.exists():
            raise RuntimeError(f"the pure-Python child exited with status {proc.returncode} and no results")
        data, ms = load_results(path)
    for one in ms:
        result.measurements.append(dataclasses.replace(one, system=PURE_SYSTEM, round=rnd))
    failures = data.get("failures") or []
    assert isinstance(failures, list)
    result.failures += [f"{PURE_SYSTEM} {f.split(' ', 1)[1]}" for f in failures]
    servers = data.get("servers") or []
    assert isinstance(servers, list)
    for s in servers:
        result.servers[(PURE_SYSTEM, Variant(s["variant"]))] = (s["version"], s["durability"])


def run_suite(
    sizes: Sizes,
    *,
    systems: Sequence[str] = SYSTEMS,
    variants: Sequence[Variant] = (Variant.DEFAULT, Variant.DURABLE),
    say: Callable[[str], None] = print,
) -> SuiteResult:
    """Run every workload ``sizes.rounds`` times against each available system."""
    result = SuiteResult(sizes=sizes, machine=machine_info())
    warning = disk_warning()
    if warning is not None:
        say(warning)
    t0 = time.monotonic()
    present = []
    from rocketq import _build

    for system in systems:
        if system in ("rocketq", ONLOOP_SYSTEM):
            present.append(system)
            continue
        if system == PURE_SYSTEM:
            if _build.state().compiled:
                present.append(system)
            else:
                say(f"note: {PURE_SYSTEM} skipped: this process already runs {_build.state().describe()}")
            continue
        try:
            check_peer(system)
        except PeerMissing as exc:
            result.missing[system] = str(exc)
            say(f"MISSING {system}: {exc}")
            continue
        present.append(system)
    for rnd in range(1, sizes.rounds + 1):
        for variant in variants:
            workloads = DEFAULT_WORKLOADS if variant is Variant.DEFAULT else DURABLE_WORKLOADS
            for system in present:
                if system == ONLOOP_SYSTEM and variant is not Variant.DURABLE:
                    continue
                if sizes.quiet_wait_s > 0:
                    wait_quiet(sizes, say)
                try:
                    _run_system(result, system, variant, workloads, rnd, say)
                except Exception as exc:
                    result.failures.append(f"{system} {variant.value} server r{rnd}: {exc!r}")
                    log.error(
                        "%s %s round %d failed:\n%s", system, variant.value, rnd, traceback.format_exc()
                    )
    result.seconds = time.monotonic() - t0
    result.machine["load average (1/5/15 min) at the end"] = _loadavg()
    return result


def _loadavg() -> str:
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


def summarize(measurements: Sequence[Measurement]) -> list[Row]:
    """Median of every (system, variant, workload) group, in a stable order."""
    groups: dict[tuple[str, Variant, Workload], list[Measurement]] = {}
    for one in measurements:
        groups.setdefault((one.system, one.variant, one.workload), []).append(one)
    order = {name: i for i, name in enumerate(SYSTEMS)}
    rows = []
    for (system, variant, workload), ms in groups.items():
        keys = sorted({k for one in ms for k in one.latency_ms})
        rates = [one.throughput for one in ms]
        cpu = statistics.median(one.server_cpu_s for one in ms)
        cpu_per_msg = statistics.median(
            one.server_cpu_s / one.messages * 1e6 if one.messages else 0.0 for one in ms
        )
        rows.append(
            Row(
                system=system,
                variant=variant,
                workload=workload,
                rounds=len(ms),
                throughput=statistics.median(rates),
                throughput_min=min(rates),
                throughput_max=max(rates),
                latency_ms={
                    k: statistics.median(one.latency_ms[k] for one in ms if k in one.latency_ms) for k in keys
                },
                server_cpu_s=cpu,
                server_cpu_us_per_msg=cpu_per_msg,
                server_peak_rss_mib=statistics.median(one.server_peak_rss_bytes for one in ms) / 2**20,
                client_cpu_s=statistics.median(one.client_cpu_s for one in ms),
                other_cpu_s=statistics.median(one.other_cpu_s for one in ms),
                errors=sum(one.errors for one in ms),
            )
        )
    workloads = list(Workload)
    rows.sort(
        key=lambda r: (r.variant.value != "default", workloads.index(r.workload), order.get(r.system, 9))
    )
    return rows


def _first_line(path: str, prefix: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.startswith(prefix):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def _pkg(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "not installed"


def machine_info() -> dict[str, str]:
    """CPU, memory, kernel, Python, client library versions and the rocketq commit."""
    try:
        commit = subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=False,
            timeout=10,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no", "src"],
            capture_output=True,
            text=True,
            check=False,
            timeout=10,
        ).stdout.strip()
        if dirty:
            commit += " + uncommitted changes in src/"
    except OSError:
        commit = "unknown"
    return {
        "cpu": _first_line("/proc/cpuinfo", "model name"),
        "cores": str(os.cpu_count()),
        "memory": _first_line("/proc/meminfo", "MemTotal"),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "rocketq commit": commit or "unknown",
        "redis-py": _pkg("redis"),
        "hiredis": _pkg("hiredis"),
        "nats-py": _pkg("nats-py"),
        "load average (1/5/15 min) at the start": _loadavg(),
        "temp disk used (as the broker measures it)": f"{_temp_disk_used():.0%}",
    }


def _temp_disk_used() -> float:
    """The used fraction of the partition the servers' temporary stores go to, computed as
    the broker computes it (``UtilAll.getDiskPartitionSpaceUsedPercent``: blocks not free,
    reserved ones included)."""
    from rocketq.broker.store.clean_service import default_disk_usage

    return default_disk_usage(tempfile.gettempdir())


def disk_warning() -> str | None:
    """A warning when the broker would delete segments during the run: over
    ``diskSpaceCleanForciblyRatio`` it deletes the oldest commit-log segments whatever
    their age (Java's ``cleanImmediately``), and the drains then find their first messages
    gone (PULL_OFFSET_MOVED)."""
    from rocketq.broker.store.config import MessageStoreConfig

    used = _temp_disk_used()
    forcibly = MessageStoreConfig.disk_space_clean_forcibly_ratio / 100
    if used < forcibly - 0.05:
        return None
    return (
        f"WARNING: the disk under {tempfile.gettempdir()} is {used:.0%} used as the broker measures it; "
        f"from {forcibly:.0%} the broker deletes its oldest segments whatever their age and the drains "
        "fail. Free some space first."
    )
