"""Shared pieces of the benchmark suite: sizes, workloads, the measuring window, results.

Invariants:

* Every workload measures exactly one window, bracketed by :meth:`Meter.start` and
  :meth:`Meter.stop`; set-up (topics, streams, pre-publishing, warm-up) stays outside it.
* Server CPU seconds are ``utime + stime`` of the server process (all its threads) read
  from ``/proc/<pid>/stat`` at both ends of the window; the peak RSS is the largest
  ``VmRSS`` seen by a sampler thread (every 20 ms) during the window. Client CPU seconds
  are :func:`time.process_time` of this process over the same window; "other CPU seconds" are
  the machine's busy CPU time (``/proc/stat``) minus both, i.e. what unrelated processes
  took from the 2 cores meanwhile (a noise indicator, not a result).
* Latency percentiles use the nearest-rank method on the raw samples (nanoseconds).
"""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import math
import os
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Protocol

__all__ = [
    "BODY_SIZE",
    "FULL",
    "QUEUES",
    "QUICK",
    "Bench",
    "Measurement",
    "Meter",
    "ProcSample",
    "Sizes",
    "Variant",
    "Workload",
    "body",
    "cpu_by_group",
    "paced",
    "paced_async",
    "percentile_ms",
    "read_busy_cpu_s",
    "read_proc",
    "read_proc_table",
    "stamped_body",
    "unstamp",
]

#: Bytes of every message body.
BODY_SIZE = 100
#: Queues (rocketq), streams (Redis) or subjects (NATS) a workload spreads over.
QUEUES = 4


def body() -> bytes:
    """A 100-byte body."""
    return b"x" * BODY_SIZE


def stamped_body(stamp_ns: int) -> bytes:
    """A 100-byte body starting with ``stamp_ns`` (``time.perf_counter_ns``) as 20 digits."""
    return f"{stamp_ns:020d}".encode().ljust(BODY_SIZE, b"x")


def unstamp(data: bytes) -> int:
    """The ``perf_counter_ns`` stamp written by :func:`stamped_body`."""
    return int(data[:20])


def paced(count: int, interval_ms: float) -> Iterator[int]:
    """``0 .. count-1``, yielding ``i`` no earlier than ``i * interval_ms`` after the first.

    Open-loop pacing (workload 5): the schedule is fixed from the start, so a slow send
    is followed by catch-up sends, not by a shifted schedule.
    """
    interval_ns = int(interval_ms * 1e6)
    start = time.perf_counter_ns()
    for i in range(count):
        delay = start + i * interval_ns - time.perf_counter_ns()
        if delay > 0:
            time.sleep(delay / 1e9)
        yield i


async def paced_async(count: int, interval_ms: float) -> AsyncIterator[int]:
    """:func:`paced` for an asyncio client (sleeps with :func:`asyncio.sleep`)."""
    interval_ns = int(interval_ms * 1e6)
    start = time.perf_counter_ns()
    for i in range(count):
        delay = start + i * interval_ns - time.perf_counter_ns()
        if delay > 0:
            await asyncio.sleep(delay / 1e9)
        yield i


class Variant(str, Enum):
    """Server configuration of a run."""

    #: rocketq ASYNC_FLUSH, Redis AOF ``appendfsync everysec``, NATS file storage (default sync).
    DEFAULT = "default"
    #: rocketq SYNC_FLUSH, Redis ``appendfsync always``, NATS file storage with sync on every write.
    DURABLE = "durable"


class Workload(str, Enum):
    """The workloads of issue #9 (7, Spark, lives elsewhere)."""

    PUBLISH_ONE = "1 publish, 1 per round trip"
    PUBLISH_BATCH = "2 publish, batches of 32"
    PUBLISH_ASYNC = "3 publish, 1000 in flight"
    DRAIN_ONE = "4a drain, 1 consumer"
    DRAIN_GROUP = "4b drain, 4 consumers in a group"
    LATENCY = "5 end-to-end latency"
    ASYNC_PUBLISH_ONE = "A1 asyncio publish, 1 per round trip"
    ASYNC_PUBLISH_ASYNC = "A3 asyncio publish, 1000 in flight"
    ASYNC_DRAIN_ONE = "A4a asyncio drain, 1 consumer"
    ASYNC_DRAIN_GROUP = "A4b asyncio drain, 4 consumers in a group"

    @property
    def short(self) -> str:
        return self.value.split(" ", 1)[0]


@dataclass(frozen=True)
class Sizes:
    """How big each workload is. :data:`FULL` and :data:`QUICK` are the two presets."""

    #: Length of the measured window of workloads 1-3 (and their durable variants), seconds.
    publish_seconds: float
    #: Un-measured warm-up before each of workloads 1-3, seconds.
    warmup_seconds: float
    #: Messages pre-published then drained by workload 4.
    drain_messages: int
    #: Messages of workload 5.
    latency_messages: int
    #: Gap between two publishes of workload 5, ms.
    latency_interval_ms: float = 1.0
    #: Batch size of workload 2 (and of the consumers' fetches in workload 4).
    batch: int = 32
    #: Requests in flight in workload 3.
    in_flight: int = 1000
    #: Rounds of A B C ... alternation.
    rounds: int = 3
    #: Give up on a drain or on latency samples after this long, seconds.
    wait_timeout_s: float = 300.0
    #: Before each server start, wait up to this long for other processes to leave the CPUs
    #: (less than :attr:`quiet_cores` busy over one second); 0 = do not wait.
    quiet_wait_s: float = 20.0
    quiet_cores: float = 0.3


FULL = Sizes(publish_seconds=3.0, warmup_seconds=0.5, drain_messages=200_000, latency_messages=2_000)
QUICK = Sizes(
    publish_seconds=0.3,
    warmup_seconds=0.1,
    drain_messages=2_000,
    latency_messages=100,
    rounds=1,
    wait_timeout_s=30.0,
    quiet_wait_s=0.0,
)


@dataclass(frozen=True)
class ProcSample:
    """CPU seconds (user + system, all threads) and RSS of one process."""

    cpu_s: float
    rss_bytes: int


_TICKS = os.sysconf("SC_CLK_TCK")


def _parse_stat(stat: str) -> tuple[str, int, float]:
    """(command name, parent pid, CPU seconds: utime + stime) of a ``/proc/<pid>/stat`` line."""
    # the command name (field 2) may hold spaces and parentheses: split after the last ")"
    cut = stat.rindex(")")
    fields = stat[cut + 2 :].split()
    cpu = (int(fields[11]) + int(fields[12])) / _TICKS  # fields 14 and 15 of proc(5)
    return stat[stat.index("(") + 1 : cut], int(fields[1]), cpu


def read_proc(pid: int) -> ProcSample:
    """Read ``/proc/<pid>/stat`` (utime, stime) and ``/proc/<pid>/status`` (VmRSS)."""
    with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as fh:
        cpu = _parse_stat(fh.read())[2]
    rss = 0
    with open(f"/proc/{pid}/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1]) * 1024
                break
    return ProcSample(cpu_s=cpu, rss_bytes=rss)


@dataclass(frozen=True)
class ProcEntry:
    """One process of ``/proc``: parent pid, command name, command line, CPU seconds."""

    ppid: int
    comm: str
    cmdline: str
    cpu_s: float


def read_proc_table(root: int | None = None) -> dict[int, ProcEntry]:
    """The processes this user can read in ``/proc`` (those that vanish meanwhile are left out):
    all of them, or only ``root`` and its descendants (whose command lines alone are read)."""
    stats: dict[int, tuple[str, int, float]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", encoding="utf-8", errors="replace") as fh:
                stats[int(name)] = _parse_stat(fh.read())
        except OSError:
            continue
    wanted: Iterable[int] = stats
    if root is not None:
        children: dict[int, list[int]] = {}
        for pid, (_, ppid, _) in stats.items():
            children.setdefault(ppid, []).append(pid)
        tree: list[int] = []
        stack = [root] if root in stats else []
        while stack:
            pid = stack.pop()
            tree.append(pid)
            stack.extend(children.get(pid, []))
        wanted = tree
    table: dict[int, ProcEntry] = {}
    for pid in wanted:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fb:
                cmdline = fb.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()
        except OSError:
            continue
        comm, ppid, cpu = stats[pid]
        table[pid] = ProcEntry(ppid=ppid, comm=comm, cmdline=cmdline, cpu_s=cpu)
    return table


def cpu_by_group(
    table: dict[int, ProcEntry], root: int, groups: dict[str, int | Callable[[ProcEntry], bool]]
) -> dict[str, float]:
    """CPU seconds of ``root`` and its descendants, summed per group.

    ``groups`` maps a group name to a pid (that process and its descendants) or to a
    predicate on a descendant of ``root``; the first group that claims a process gets it
    (and its descendants, unless one of them is claimed by another group first). What no
    group claims counts under ``"other"``.
    """
    children: dict[int, list[int]] = {}
    for pid, entry in table.items():
        children.setdefault(entry.ppid, []).append(pid)
    totals = dict.fromkeys([*groups, "other"], 0.0)

    def claim(pid: int) -> str | None:
        entry = table[pid]
        for name, rule in groups.items():
            if (rule == pid) if isinstance(rule, int) else rule(entry):
                return name
        return None

    stack: list[tuple[int, str]] = [(root, claim(root) or "other")] if root in table else []
    while stack:
        pid, group = stack.pop()
        totals[group] += table[pid].cpu_s
        for child in children.get(pid, []):
            stack.append((child, claim(child) or group))
    return totals


def read_busy_cpu_s() -> float:
    """CPU seconds all processes of the machine spent busy (``/proc/stat``, all but idle and iowait)."""
    with open("/proc/stat", encoding="ascii") as fh:
        fields = [int(x) for x in fh.readline().split()[1:]]
    # user nice system idle iowait irq softirq steal (guest time is already in user)
    return (sum(fields[:8]) - fields[3] - fields[4]) / _TICKS


def percentile_ms(samples_ns: Sequence[int], p: float) -> float:
    """Nearest-rank percentile ``p`` (0 < p <= 100) of ``samples_ns``, in milliseconds."""
    if not samples_ns:
        raise ValueError("no samples")
    ordered = sorted(samples_ns)
    # round first: 99.9 / 100 * 1000 is 999.0000000000001 in floating point
    rank = max(1, math.ceil(round(p * len(ordered) / 100.0, 9)))
    return ordered[rank - 1] / 1e6


@dataclass
class Measurement:
    """One measured window of one workload against one system, in one round."""

    system: str
    variant: Variant
    workload: Workload
    round: int
    messages: int
    seconds: float
    server_cpu_s: float
    server_peak_rss_bytes: int
    client_cpu_s: float
    #: CPU seconds every other process of the machine used during the window (noise indicator).
    other_cpu_s: float = 0.0
    #: p50 / p99 / p999 in ms ("per operation" for workloads 1-2, end to end for 5).
    latency_ms: dict[str, float] = field(default_factory=dict)
    errors: int = 0
    note: str = ""

    @property
    def throughput(self) -> float:
        """Messages per second over the window."""
        return self.messages / self.seconds if self.seconds > 0 else 0.0

    def to_json(self) -> dict[str, object]:
        out = dataclasses.asdict(self)
        out["variant"] = self.variant.value
        out["workload"] = self.workload.value
        out["throughput"] = self.throughput
        return out


@dataclass(frozen=True)
class _Window:
    messages: int
    seconds: float
    server_cpu_s: float
    server_peak_rss_bytes: int
    client_cpu_s: float
    other_cpu_s: float
    latencies_ns: list[int]
    errors: int
    note: str


class Meter:
    """Times one window and reads the server process around it (see the module docstring).

    ``server_pid`` None (the smoke test of the profiler's client) measures the client only.
    """

    def __init__(self, server_pid: int | None, *, sample_interval_s: float = 0.02) -> None:
        self.server_pid = server_pid
        self.sample_interval_s = sample_interval_s
        self._t0 = 0.0
        self._client0 = 0.0
        self._busy0 = 0.0
        self._server0: ProcSample | None = None
        self._peak_rss = 0
        self._stop = threading.Event()
        self._sampler: threading.Thread | None = None
        self.started = False
        self.result: _Window | None = None

    def _sample_loop(self) -> None:
        assert self.server_pid is not None
        while not self._stop.wait(self.sample_interval_s):
            try:
                rss = read_proc(self.server_pid).rss_bytes
            except OSError:
                return
            self._peak_rss = max(self._peak_rss, rss)

    def start(self) -> None:
        """Open the window, after a full garbage collection: the cycles an earlier window left
        (a shut-down client's object graph, a drain's tally) are freed here, not inside this
        window's first automatic full collection (for every system alike)."""
        if self.started:
            raise RuntimeError("Meter.start() called twice")
        gc.collect()
        self.started = True
        if self.server_pid is not None:
            self._server0 = read_proc(self.server_pid)
            self._peak_rss = self._server0.rss_bytes
            self._sampler = threading.Thread(target=self._sample_loop, name="bench-rss-sampler", daemon=True)
            self._sampler.start()
        self._client0 = time.process_time()
        self._busy0 = read_busy_cpu_s()
        self._t0 = time.perf_counter()

    def stop(self, messages: int, latencies_ns: Sequence[int] = (), errors: int = 0, note: str = "") -> None:
        """Close the window: ``messages`` were moved, with optional latency samples."""
        if not self.started or self.result is not None:
            raise RuntimeError("Meter.stop() without start() or called twice")
        elapsed = time.perf_counter() - self._t0
        client = time.process_time() - self._client0
        busy = read_busy_cpu_s() - self._busy0
        cpu = 0.0
        if self.server_pid is not None and self._server0 is not None:
            self._stop.set()
            if self._sampler is not None:
                self._sampler.join()
            end = read_proc(self.server_pid)
            cpu = end.cpu_s - self._server0.cpu_s
            self._peak_rss = max(self._peak_rss, end.rss_bytes)
        other = max(0.0, busy - cpu - client)
        self.result = _Window(
            messages, elapsed, cpu, self._peak_rss, client, other, list(latencies_ns), errors, note
        )

    def measurement(self, system: str, variant: Variant, workload: Workload, rnd: int) -> Measurement:
        """The window as a :class:`Measurement` (after :meth:`stop`)."""
        if self.result is None:
            raise RuntimeError(f"{system} {workload.short}: the workload never closed its window")
        w = self.result
        latency: dict[str, float] = {}
        if w.latencies_ns:
            latency = {
                "p50": percentile_ms(w.latencies_ns, 50),
                "p99": percentile_ms(w.latencies_ns, 99),
                "p999": percentile_ms(w.latencies_ns, 99.9),
            }
        return Measurement(
            system=system,
            variant=variant,
            workload=workload,
            round=rnd,
            messages=w.messages,
            seconds=w.seconds,
            server_cpu_s=w.server_cpu_s,
            server_peak_rss_bytes=w.server_peak_rss_bytes,
            client_cpu_s=w.client_cpu_s,
            other_cpu_s=w.other_cpu_s,
            latency_ms=latency,
            errors=w.errors,
            note=w.note,
        )


class Bench(Protocol):
    """One system's workloads over a running server; each method measures one window on ``m``."""

    def publish_one(self, m: Meter, sizes: Sizes) -> None: ...

    def publish_batch(self, m: Meter, sizes: Sizes) -> None: ...

    def publish_async(self, m: Meter, sizes: Sizes) -> None: ...

    def prepare_drain(self, sizes: Sizes) -> None:
        """Pre-publish ``sizes.drain_messages`` for both drains (not measured)."""

    def drain(self, m: Meter, sizes: Sizes, consumers: int) -> None: ...

    def latency(self, m: Meter, sizes: Sizes) -> None: ...

    def async_publish_one(self, m: Meter, sizes: Sizes) -> None:
        """Workload 1 with the system's asyncio client, one ``await`` per message."""

    def async_publish_async(self, m: Meter, sizes: Sizes) -> None:
        """Workload 3 with the system's asyncio client: 1,000 sends in flight on one loop."""

    def async_drain(self, m: Meter, sizes: Sizes, consumers: int) -> None:
        """Workload 4 with the system's asyncio client: ``consumers`` consumers on one loop."""

    def close(self) -> None: ...
