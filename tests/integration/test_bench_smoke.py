"""Smoke test of the benchmark suite (issue #9): ``run_suite.py --quick`` on the rocketq side.

Runs the real entry point in a subprocess against an EmbeddedCluster it starts itself, every
workload tiny, and checks the results file and the report; Redis and NATS are not needed.
Plus pure checks of the suite's arithmetic (percentiles, /proc parsing, py-spy reduction).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from benchmarks.suite.common import (
    Measurement,
    ProcEntry,
    Variant,
    Workload,
    cpu_by_group,
    percentile_ms,
    read_proc,
    read_proc_table,
)
from benchmarks.suite.peers import RocketqServer, make_server
from benchmarks.suite.profiling import reduce_collapsed
from benchmarks.suite.report import TARGETS, _ratios, spark_section, targets_table
from benchmarks.suite.rocketq_bench import DistinctOffsets
from benchmarks.suite.runner import DURABLE_WORKLOADS, summarize

from rocketq.client import MessageExt

ROOT = Path(__file__).resolve().parents[2]


def run_quick_suite(out: Path, *extra: str, timeout: float = 150) -> subprocess.CompletedProcess[str]:
    """``run_suite.py --quick --systems rocketq`` into ``out`` (no chart, no profile) plus ``extra``.

    About 10 s on a quiet machine (the asyncio workloads A1-A4b doubled it); the bound leaves room
    for a 2-core machine that other sessions load tenfold, where 60 s timed out twice."""
    return subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "run_suite.py"),
            "--quick",
            "--systems",
            "rocketq",
            "--out",
            str(out),
            "--no-chart",
            "--no-profile",
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        cwd=ROOT,
        env={**os.environ, "PYTHONWARNINGS": "error", "PYSPARK_PYTHON": sys.executable},
    )


@pytest.mark.integration
def test_quick_rocketq_run_writes_results_and_report(tmp_path: Path) -> None:
    proc = run_quick_suite(tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    data = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    assert data["failures"] == []
    assert data["missing"] == {}
    got = {(m["variant"], m["workload"]) for m in data["measurements"]}
    want = {("default", w.value) for w in Workload} | {("durable", w.value) for w in DURABLE_WORKLOADS}
    assert got == want
    for m in data["measurements"]:
        assert m["system"] == "rocketq"
        assert m["messages"] > 0, m
        assert m["throughput"] > 0, m
        assert m["server_peak_rss_bytes"] > 1_000_000, m  # a real server process was read
        assert m["errors"] == 0, m
    drains = [m for m in data["measurements"] if m["workload"].startswith("4")]
    assert all(m["messages"] == data["sizes"]["drain_messages"] for m in drains)
    latency = next(m for m in data["measurements"] if m["workload"] == Workload.LATENCY.value)
    assert latency["messages"] == data["sizes"]["latency_messages"]
    assert 0 < latency["latency_ms"]["p50"] <= latency["latency_ms"]["p99"] <= latency["latency_ms"]["p999"]
    report = (tmp_path / "REPORT.md").read_text(encoding="utf-8")
    assert "| 1 publish, 1 per round trip | rocketq |" in report
    assert "## Ratios" in report
    assert "fsync" in report


@pytest.mark.integration
def test_quick_pure_build_runs_in_a_pure_child(tmp_path: Path) -> None:
    """``rocketq-pure`` runs the rocketq workloads in a child with ROCKETQ_PURE_PYTHON=1."""
    from rocketq import _build

    proc = run_quick_suite(tmp_path, "--systems", "rocketq-pure", "--variants", "durable")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    data = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    if not _build.state().compiled:  # nothing to compare against: skipped, and said so
        assert data["measurements"] == []
        assert "rocketq-pure skipped" in proc.stdout
        return
    assert data["failures"] == []
    assert {m["system"] for m in data["measurements"]} == {"rocketq-pure"}
    assert {m["workload"] for m in data["measurements"]} == {w.value for w in DURABLE_WORKLOADS}
    (server,) = data["servers"]
    assert server["system"] == "rocketq-pure"
    assert "pure Python, forced by ROCKETQ_PURE_PYTHON=1" in server["version"]


def _row(system: str, workload: Workload, rate: float, variant: Variant = Variant.DEFAULT) -> Measurement:
    """One round's measurement of ``rate`` msgs/s (for workload 5 a p99 of ``rate`` ms)."""
    p99 = {"p99": rate} if workload is Workload.LATENCY else {}
    return Measurement(
        system=system,
        variant=variant,
        workload=workload,
        round=1,
        messages=int(rate),
        seconds=1.0,
        server_cpu_s=0.1,
        server_peak_rss_bytes=2**20,
        client_cpu_s=0.1,
        latency_ms=p99,
    )


def test_targets_table_says_pass_or_miss_per_build() -> None:
    row = _row

    ms = [row("redis", w, 10_000.0) for w in Workload]
    ms += [row("redis", w, 10_000.0, Variant.DURABLE) for w in DURABLE_WORKLOADS]
    # compiled: 0.75x Redis on workload 1 (Must 0.7 passes, Aim 1.0 misses); pure: 0.5x (both miss)
    ms += [row("rocketq", Workload.PUBLISH_ONE, 7_500.0), row("rocketq-pure", Workload.PUBLISH_ONE, 5_000.0)]
    ms += [row("rocketq", Workload.LATENCY, 14_000.0)]  # p99 1.4x Redis: Must passes, Aim misses
    ms += [row("rocketq", Workload.DRAIN_ONE, 60_000.0), row("rocketq", Workload.DRAIN_GROUP, 50_000.0)]
    table = targets_table(summarize(ms))
    assert table[0] == "| level | target | rocketq | rocketq: met? | rocketq-pure | rocketq-pure: met? |"
    lines = {line.split(" | ")[1]: line for line in table[2:]}
    assert lines["1 publish, 1 per round trip >= 0.7x Redis"].endswith("| 0.75x | pass | 0.50x | **miss** |")
    assert "| Aim | 1 publish, 1 per round trip >= 1.0x Redis | 0.75x | **miss** |" in "\n".join(table)
    assert lines["5 end-to-end latency: p99 <= 1.5x Redis"].endswith("| 1.40x | pass | n/a | n/a |")
    assert lines["4b >= 4a (4b / 4a of the same build)"].endswith("| 0.83x | **miss** | n/a | n/a |")
    java = lines["1 publish, 1 per round trip >= 1.0x the Java 4.9.7 reference (6,022/s)"]
    assert java.endswith(f"| {7_500 / 6_022:.2f}x | pass | {5_000 / 6_022:.2f}x | **miss** |")
    assert len(table) == 2 + len(TARGETS) + 1 + 4  # + the 4b >= 4a line + 4 Java lines


def test_percentile_is_nearest_rank() -> None:
    samples = [i * 1_000_000 for i in range(1, 1001)]  # 1..1000 ms
    assert percentile_ms(samples, 50) == 500.0
    assert percentile_ms(samples, 99) == 990.0
    assert percentile_ms(samples, 99.9) == 999.0
    assert percentile_ms([7_000_000], 99.9) == 7.0
    with pytest.raises(ValueError, match="no samples"):
        percentile_ms([], 50)


def test_read_proc_sees_this_process() -> None:
    sample = read_proc(os.getpid())
    assert sample.cpu_s > 0
    assert sample.rss_bytes > 1_000_000


def test_summarize_takes_medians_per_system_and_workload() -> None:
    def one(system: str, rnd: int, messages: int) -> Measurement:
        return Measurement(
            system=system,
            variant=Variant.DEFAULT,
            workload=Workload.PUBLISH_ONE,
            round=rnd,
            messages=messages,
            seconds=1.0,
            server_cpu_s=0.5,
            server_peak_rss_bytes=2**20,
            client_cpu_s=0.1,
        )

    rows = summarize(
        [one("redis", 1, 30), one("rocketq", 1, 10), one("rocketq", 2, 50), one("rocketq", 3, 20)]
    )
    assert [r.system for r in rows] == ["rocketq", "redis"]
    rq = rows[0]
    assert (rq.rounds, rq.throughput, rq.throughput_min, rq.throughput_max) == (3, 20.0, 10.0, 50.0)
    assert rq.server_cpu_us_per_msg == pytest.approx(0.5 / 20 * 1e6)


def test_reduce_collapsed_counts_self_and_total() -> None:
    raw = "\n".join(
        [
            "run (threading.py:1);serve (/x/src/rocketq/remoting/server.py:10);decode (/x/src/rocketq/protocol/frame.py:5) 6",
            "run (threading.py:1);serve (/x/src/rocketq/remoting/server.py:10) 3",
            "run (threading.py:1);select (selectors.py:451) 1",
        ]
    )
    samples, selfs, totals = reduce_collapsed(raw)
    assert samples == 10
    assert selfs[0] == ("decode (rocketq/protocol/frame.py)", 60.0)
    assert ("select (selectors.py)", 10.0) in selfs
    assert all("rocketq/" in name for name, _ in totals)  # totals list rocketq code only
    # serve() is on 90 % of the stacks: an entry point, left out of the totals
    assert totals == [("decode (rocketq/protocol/frame.py)", 60.0)]


def test_cpu_by_group_follows_the_process_tree() -> None:
    def proc(ppid: int, comm: str, cpu: float, cmdline: str = "") -> ProcEntry:
        return ProcEntry(ppid=ppid, comm=comm, cmdline=cmdline or comm, cpu_s=cpu)

    table = {
        10: proc(1, "python", 1.0, "python spark_bench.py"),  # the driver (root)
        11: proc(10, "python", 2.0, "python -m rocketq server"),  # the server, by pid
        12: proc(10, "java", 4.0, "java -cp .../pyspark/jars/*"),  # names pyspark too: JVM first
        13: proc(12, "python", 0.5, "python -m pyspark.daemon"),
        14: proc(13, "python", 0.25, "python -m pyspark.daemon"),  # a forked worker
        15: proc(11, "python", 8.0, "python -c helper"),  # the server's child: the server's group
        16: proc(10, "sh", 0.125, "sh -c true"),  # unclaimed child of the driver: the driver's
        20: proc(1, "java", 16.0, "java -jar unrelated.jar"),  # not under the root: not counted
    }
    groups: dict[str, int | Callable[[ProcEntry], bool]] = {
        "server": 11,
        "jvm": lambda e: e.comm == "java",
        "workers": lambda e: "pyspark" in e.cmdline,
        "driver": 10,
    }
    got = cpu_by_group(table, 10, groups)
    assert got == {"server": 10.0, "jvm": 4.0, "workers": 0.75, "driver": 1.125, "other": 0.0}
    assert cpu_by_group(table, 99, groups)["other"] == 0.0  # a vanished root counts nothing


def test_read_proc_table_has_this_process_and_its_parent() -> None:
    table = read_proc_table()
    me = table[os.getpid()]
    assert me.ppid == os.getppid()
    assert me.cpu_s > 0
    assert "python" in me.cmdline


def test_spark_section_renders_results_and_missing(tmp_path: Path) -> None:
    assert spark_section(tmp_path / "spark.json") == []  # not run: no section
    path = tmp_path / "spark.json"
    path.write_text(json.dumps({"missing": "Java was not found"}), encoding="utf-8")
    assert "**MISSING**: Java was not found" in spark_section(path)
    cpu = {"wall": 0.9, "spark jvm": 0.91, "python workers": 0.5, "rocketq server": 0.3}
    result = {
        "messages": 1_000_000,
        "queues": 2,
        "body_size": 100,
        "repeat": 3,
        "warmup": 1,
        "pyspark": "4.3.0",
        "jvm_options": "-Dx=y",
        "best_rows_per_s": {"connector": 1_150_000, "parquet": 2_500_000},
        "median_rows_per_s": {"connector": 1_100_000, "parquet": 2_000_000},
        "ratio": 0.46,
        "ratio_median": 0.55,
        "median_cpu_s": {"connector": cpu, "parquet": {"wall": 0.4, "spark jvm": 0.65}},
    }
    path.write_text(json.dumps(result), encoding="utf-8")
    text = "\n".join(spark_section(path))
    assert "| connector | 1,150,000 | 1,100,000 | 0.90 | 0.91 | 0.50 | 0.30 |" in text
    assert "| parquet | 2,500,000 | 2,000,000 | 0.40 | 0.65 | 0.00 | 0.00 |" in text
    assert "**0.46x** of the best runs, **0.55x** of the median runs" in text
    assert "Spark JVM options: `-Dx=y`" in text
    assert "Python workers on" not in text  # results of before the setting: nothing said
    result["jvm_options"] = ""
    path.write_text(json.dumps(result), encoding="utf-8")
    assert "Spark JVM options: none" in "\n".join(spark_section(path))
    for sockets, said in (("unix", "Python workers on Unix domain sockets"), ("tcp", "on TCP loopback")):
        result["python_worker_sockets"] = sockets
        path.write_text(json.dumps(result), encoding="utf-8")
        assert said in "\n".join(spark_section(path))


def test_read_proc_table_of_a_root_holds_its_tree_only() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        tree = read_proc_table(os.getpid())
        assert set(tree) >= {os.getpid(), child.pid}
        assert os.getppid() not in tree  # the parent is not under this root
        assert tree[child.pid].ppid == os.getpid()
        assert "time.sleep(30)" in tree[child.pid].cmdline
    finally:
        child.kill()
        child.wait()


def test_onloop_rows_sit_beside_the_default_durable_rows() -> None:
    """``rocketq-onloop`` (``syncFlushOnLoop=true``) gets its own Info row under each workload-6
    Must (in the compiled build's column) and a ratio line; the Must rows stay the default's."""

    def row(system: str, workload: Workload, rate: float) -> Measurement:
        return _row(system, workload, rate, Variant.DURABLE)

    ms = [row("redis", w, 10_000.0) for w in DURABLE_WORKLOADS]
    ms += [row("rocketq", w, 6_000.0) for w in DURABLE_WORKLOADS]
    ms += [row("rocketq-onloop", w, 9_000.0) for w in DURABLE_WORKLOADS]
    rows = summarize(ms)
    assert [r.system for r in rows[:3]] == ["rocketq", "rocketq-onloop", "redis"]
    table = targets_table(rows)
    assert table[0] == "| level | target | rocketq | rocketq: met? |"  # not a build of its own
    text = "\n".join(table)
    must = "| Must | 6 (fsync per ack): 1 publish, 1 per round trip >= 0.8x Redis `appendfsync always` |"
    assert f"{must} 0.60x | **miss** |" in text
    info = [line for line in table if line.startswith("| Info |") and "syncFlushOnLoop=true" in line]
    assert len(info) == len(DURABLE_WORKLOADS)
    assert all(line.endswith("| 0.90x | pass |") for line in info)
    ratios = "\n".join(_ratios(rows, Variant.DURABLE))
    assert "| 1 publish, 1 per round trip, rocketq-onloop (`syncFlushOnLoop=true`) | 0.90x |" in ratios


def test_onloop_server_is_durable_only() -> None:
    server = make_server("rocketq-onloop", Variant.DURABLE)
    default = make_server("rocketq", Variant.DURABLE)
    assert isinstance(server, RocketqServer)
    assert isinstance(default, RocketqServer)
    try:
        assert server.system == "rocketq-onloop"
        assert server.cluster.broker_conf["syncFlushOnLoop"] == "true"
        assert server.cluster.broker_conf["flushDiskType"] == "SYNC_FLUSH"
        assert "syncFlushOnLoop" not in default.cluster.broker_conf
    finally:  # never started: only their temporary store dirs to remove
        shutil.rmtree(server.cluster.store_dir, ignore_errors=True)
        shutil.rmtree(default.cluster.store_dir, ignore_errors=True)
    with pytest.raises(ValueError, match="durable"):
        make_server("rocketq-onloop", Variant.DEFAULT)


def test_distinct_offsets_counts_each_queue_offset_once() -> None:
    def batch(queue_id: int, *offsets: int) -> list[MessageExt]:
        return [MessageExt("t", b"", queue_id=queue_id, queue_offset=o) for o in offsets]

    seen = DistinctOffsets()
    assert seen.add([]) == 0
    assert seen.add(batch(0, *range(32))) == 32  # consecutive: the slice path
    assert seen.add(batch(0, *range(16, 48))) == 16  # half of it again
    assert seen.add(batch(1, *range(32))) == 32  # another queue, the same offsets
    assert seen.add(batch(1, 40, 35, 5000)) == 3  # not consecutive, and beyond the buffer
    assert seen.add(batch(1, 5000, 35)) == 0
    mixed = batch(2, 10) + batch(3, 11) + batch(2, 12)  # consecutive offsets, mixed queues
    assert seen.add(mixed) == 3
    assert seen.add(batch(3, 10, 11, 12)) == 2
    assert seen.count == 32 + 16 + 32 + 3 + 3 + 2


@pytest.mark.skipif(
    not hasattr(os, "sched_setaffinity") or not {0, 1} <= os.sched_getaffinity(0), reason="needs CPUs 0 and 1"
)
def test_pin_process_pins_every_thread_a_process_has() -> None:
    """durable_ab.py --pin: each thread of a running process (not just its main thread) ends
    up on the CPUs asked for."""
    from benchmarks.durable_ab import pin_process

    with subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import threading, time\n"
            "threading.Thread(target=time.sleep, args=(30,), daemon=True).start()\n"
            "print('up', flush=True)\n"
            "time.sleep(30)\n",
        ],
        stdout=subprocess.PIPE,
        text=True,
    ) as child:
        try:
            assert child.stdout is not None and child.stdout.readline() == "up\n"
            tids = [int(t) for t in os.listdir(f"/proc/{child.pid}/task")]
            assert len(tids) == 2
            pin_process(child.pid, {1})
            assert [os.sched_getaffinity(t) for t in tids] == [{1}, {1}]
        finally:
            child.kill()
