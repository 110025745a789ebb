"""Read rate of the rocketmq Spark source against Spark reading the same rows from Parquet.

One run, side by side, same SparkSession (local[2]): an embedded broker is filled with N
messages of 100-byte bodies (default 1,000,000), then

* ``connector``: ``spark.read.format("rocketmq")...load()`` written to the ``noop`` sink
  (every column of every row materialised in the JVM), and
* ``parquet``: the very same rows, saved once as Parquet, read the same way,

each warmed up ``--warmup`` times (JIT, Python workers; with 4, Parquet's reads still got faster
run after run, 2.5 to 3.6 M rows/s, through the timed runs), then timed ``--repeat`` times in
alternation (connector, Parquet, connector, ...; the best and the median run of each, and
the ratio of each pair: the median is the steadier figure, the best the least disturbed
by the JIT and the machine's other work). Each timed run
also records the CPU seconds of every process involved, by group: the Spark JVM, its Python
workers, the rocketq server process (name server + broker), and "other" (this driver); the
medians per reader show where a read's CPU goes on the machine's cores. ``--json F`` writes
all of it to ``F`` (``make bench`` reports it as workload 7). The broker is configured for bulk reads
as an operator would for a batch-analytics consumer, with RocketMQ's own broker settings
(``maxTransferCountOnMessageInMemory``/``maxTransferBytesOnMessageInMemory`` raised, and
``transferMsgByHeap=false``: pull answers go to the socket from the mapped commit log
without a copy); everything else is the default. The Spark JVM runs with Arrow Java's own
performance settings (``ARROW_JVM_OPTIONS``: no bounds or null checks on each vector read;
Arrow's README lists them under performance tuning), which only the connector's path uses:
the JVM reads the Python source's batches as Arrow vectors, while Spark's Parquet reader has
its own column vectors. ``--arrow-checks`` starts the JVM without them. Spark's Python
workers talk to the JVM over Unix domain sockets (``spark.python.unix.domain.socket.enabled``,
Spark 4.1+), again a setting only the connector's path uses: over TCP loopback (Spark's
default, ``--tcp-workers``) every task also waits about 40 ms for its input, because the
JVM's second small write to a reused worker sits behind Nagle's algorithm until the worker's
delayed ACK, and the rows cross the TCP stack once more.

    .venv/bin/python benchmarks/spark_bench.py [--messages 1000000] [--queues 2] [--repeat 5] [--warmup 10]
                                               [--arrow-checks] [--tcp-workers] [--json results/spark.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pyspark
from pyspark.sql import SparkSession

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.suite.common import ProcEntry, cpu_by_group, read_proc_table

import rocketq.spark
from rocketq.client.producer import Producer
from rocketq.protocol.message import Message
from rocketq.protocol.message_queue import MessageQueue
from rocketq.testing.cluster import EmbeddedCluster

TOPIC = "spark-bench"

#: Arrow Java's switches for reading vectors without checks (bounds and reference count on
#: every buffer access, the null check inside ``get``): its documented speed-for-safety
#: settings, for code that has been tested with the checks on.
ARROW_JVM_OPTIONS = "-Darrow.enable_unsafe_memory_access=true -Darrow.enable_null_check_for_get=false"


#: Spark's setting for Python workers on Unix domain sockets instead of TCP loopback.
UNIX_SOCKETS_CONF = "spark.python.unix.domain.socket.enabled"


def session(jvm_options: str = "", *, unix_sockets: bool = True) -> SparkSession:
    """The bench's local[2] session; ``jvm_options`` go to the driver JVM (local mode: the
    executor is in it), ``unix_sockets`` sets :data:`UNIX_SOCKETS_CONF`. Must be the
    process's first session: the JVM starts here."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = (
        SparkSession.builder.master("local[2]")
        .appName("rocketq-spark-bench")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.memory", "2g")
        .config(UNIX_SOCKETS_CONF, str(unix_sockets).lower())
    )
    if jvm_options:
        builder = builder.config("spark.driver.extraJavaOptions", jvm_options)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    rocketq.spark.register(spark)
    return spark


def fill(cluster: EmbeddedCluster, messages: int, queues: int, body_size: int) -> float:
    body = b"x" * body_size
    per_queue = messages // queues
    t0 = time.perf_counter()
    with Producer("spark_bench_producer", namesrv_addr=cluster.namesrv_addr) as producer:
        for q in range(queues):
            mq = MessageQueue(TOPIC, "broker-a", q)
            left = per_queue + (1 if q < messages % queues else 0)
            while left:
                n = min(1000, left)
                producer.send([Message(TOPIC, body) for _ in range(n)], queue=mq)
                left -= n
    return time.perf_counter() - t0


def cpu_groups(broker_pid: int) -> dict[str, int | Callable[[ProcEntry], bool]]:
    """The process groups of a run, for :func:`cpu_by_group` from this process."""
    return {
        "rocketq server": broker_pid,
        "spark jvm": lambda e: e.comm == "java",  # before the workers: its class path names pyspark too
        "python workers": lambda e: "pyspark" in e.cmdline,  # pyspark.daemon and its forked workers
    }  # the rest (this driver and its other children) counts as "other"


def timed(
    label: str,
    action: Callable[[], object],
    run: int,
    rows: int,
    groups: dict[str, int | Callable[[ProcEntry], bool]],
) -> tuple[float, dict[str, float]]:
    """Run ``action`` once; its rate in rows/s and the CPU seconds each process group used."""
    before = cpu_by_group(read_proc_table(os.getpid()), os.getpid(), groups)
    t0 = time.perf_counter()
    action()
    elapsed = time.perf_counter() - t0
    after = cpu_by_group(read_proc_table(os.getpid()), os.getpid(), groups)
    cpu = {k: round(after[k] - before[k], 3) for k in after}
    spent = ", ".join(f"{k} {v:.2f}" for k, v in cpu.items() if v)
    print(
        f"  {label:9s} run {run}: {elapsed:6.2f} s  {rows / elapsed:12,.0f} rows/s  CPU s: {spent}",
        flush=True,
    )
    return rows / elapsed, {"wall": round(elapsed, 3), **cpu}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--queues", type=int, default=2)
    parser.add_argument("--body-size", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=10, help="unmeasured runs of each before timing (JIT)")
    parser.add_argument(
        "--arrow-checks",
        action="store_true",
        help=f"start the Spark JVM without {ARROW_JVM_OPTIONS} (Arrow Java's checked reads)",
    )
    parser.add_argument(
        "--tcp-workers",
        action="store_true",
        help=f"Spark's Python workers on TCP loopback (Spark's default) instead of {UNIX_SOCKETS_CONF}",
    )
    parser.add_argument("--json", type=Path, default=None, help="also write the results to this file")
    args = parser.parse_args()
    jvm_options = "" if args.arrow_checks else ARROW_JVM_OPTIONS
    if args.repeat < 1 or args.warmup < 0 or args.messages < 1:
        parser.error("--repeat and --messages must be >= 1, --warmup >= 0")

    workdir = tempfile.mkdtemp(prefix="rocketq-spark-bench-")
    conf = {
        "maxTransferCountOnMessageInMemory": "4096",
        "maxTransferBytesOnMessageInMemory": str(4 * 1024 * 1024),
        "transferMsgByHeap": "false",
    }
    try:
        with EmbeddedCluster(broker_conf=conf, mapped_file_size_commit_log=256 * 1024 * 1024) as cluster:
            cluster.create_topic(TOPIC, args.queues)
            print(
                f"filling {args.messages:,} messages of {args.body_size} bytes into {args.queues} queues ..."
            )
            secs = fill(cluster, args.messages, args.queues, args.body_size)
            print(f"  produced in {secs:.1f} s ({args.messages / secs:,.0f} msg/s)")
            spark = session(jvm_options, unix_sockets=not args.tcp_workers)
            # the options must have reached the JVM (a session started earlier would keep its own)
            unchecked = spark.sparkContext._jvm.java.lang.System.getProperty(
                "arrow.enable_unsafe_memory_access"
            )
            if (unchecked == "true") != bool(jvm_options):
                raise SystemExit(f"the Spark JVM did not start with the requested options {jvm_options!r}")
            sockets = "unix" if spark.sparkContext.getConf().get(UNIX_SOCKETS_CONF) == "true" else "tcp"
            if sockets != ("tcp" if args.tcp_workers else "unix"):
                raise SystemExit(
                    f"the Spark session did not start with {UNIX_SOCKETS_CONF}={not args.tcp_workers}"
                )
            print(f"Spark JVM options: {jvm_options or '(none: Arrow Java checks every vector read)'}")
            print(f"Python workers: {'Unix domain sockets' if sockets == 'unix' else 'TCP loopback'}")
            df = (
                spark.read.format("rocketmq")
                .option("nameserver", cluster.namesrv_addr)
                .option("topic", TOPIC)
                .option("pullBatchSize", "4096")
                .load()
            )
            parquet = os.path.join(workdir, "rows.parquet")
            df.write.parquet(parquet)  # also warms up the JVM and the Python workers
            pq = spark.read.parquet(parquet)
            rows = pq.count()
            assert rows == args.messages, f"parquet has {rows} rows, expected {args.messages}"
            actions = {
                "connector": lambda: df.write.format("noop").mode("overwrite").save(),
                "parquet": lambda: pq.write.format("noop").mode("overwrite").save(),
            }
            print(f"warming up ({args.warmup} unmeasured run(s) of each) ...")
            for _ in range(args.warmup):
                for action in actions.values():
                    action()
            print(
                f"reading {rows:,} rows, every column, into the noop sink "
                f"(alternating, {args.repeat} of each):"
            )
            groups = cpu_groups(cluster.broker_pid())
            runs: dict[str, list[dict[str, float]]] = {label: [] for label in actions}
            for i in range(args.repeat):
                for label, action in actions.items():
                    rate, cpu = timed(f"{label}", action, i + 1, rows, groups)
                    runs[label].append({"rows_per_s": round(rate), **cpu})
            spark.stop()
        best = {label: max(r["rows_per_s"] for r in rs) for label, rs in runs.items()}
        median = {label: round(statistics.median(r["rows_per_s"] for r in rs)) for label, rs in runs.items()}
        ratio = round(best["connector"] / best["parquet"], 3)
        ratio_median = round(median["connector"] / median["parquet"], 3)
        median_cpu = {
            label: {k: round(statistics.median(r[k] for r in rs), 3) for k in rs[0] if k != "rows_per_s"}
            for label, rs in runs.items()
        }
        print()
        print("             best run      median run   (rows/s)")
        for label in runs:
            print(f"{label + ':':11s}{best[label]:12,.0f}  {median[label]:12,.0f}")
        print(f"ratio:     {ratio:11.2f}x  {ratio_median:11.2f}x  (target >= 0.5x)")
        for label, cpu in median_cpu.items():
            print(f"median CPU s per {label} run: " + ", ".join(f"{k} {v:.2f}" for k, v in cpu.items()))
        if args.json is not None:
            args.json.parent.mkdir(parents=True, exist_ok=True)
            result = {
                "generated": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
                "messages": args.messages,
                "queues": args.queues,
                "body_size": args.body_size,
                "repeat": args.repeat,
                "warmup": args.warmup,
                "cores": os.cpu_count(),
                "python": platform.python_version(),
                "pyspark": pyspark.__version__,
                "jvm_options": jvm_options,
                "python_worker_sockets": sockets,
                "best_rows_per_s": best,
                "median_rows_per_s": median,
                "ratio": ratio,
                "ratio_median": ratio_median,
                "median_cpu_s": median_cpu,
                "runs": runs,
            }
            args.json.write_text(json.dumps(result, indent=1), encoding="utf-8")
            print(f"results: {args.json}")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
