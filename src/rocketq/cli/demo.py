"""``rocketq demo``: run the wallet pipeline of :mod:`rocketq.demo` and print its report.

Exit status: 0 when every check passed, 1 when a check failed or a stage broke, 2 when
Java 17+ or the ``spark`` extra is missing (with instructions).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any

from rocketq.cli.servers import LOG_FORMAT

__all__ = ["register", "spark_session"]


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "demo",
        help="run the wallet pipeline end to end (embedded cluster, orderly notifier, Spark job)",
        description="Run the demo pipeline on an embedded cluster and print a report; exit 0 if all checks pass.",
    )
    p.add_argument("--users", type=int, default=300, help="wallet users (default 300)")
    p.add_argument("--events", type=int, default=20, help="events per user, +/- 25%% (default 20)")
    p.add_argument(
        "--threshold", type=int, default=0, help="alert when a balance went below this many cents (default 0)"
    )
    p.add_argument("--batch", type=int, default=2500, help="Spark micro-batch size, maxOffsetsPerTrigger")
    p.add_argument("--workdir", type=Path, default=None, help="keep outputs here (default: a temp dir)")
    p.add_argument("--keep", action="store_true", help="keep the temporary outputs")
    p.add_argument(
        "--timeout", type=float, default=180.0, help="seconds to wait for a consumer (default 180)"
    )
    p.set_defaults(func=_run)


def spark_session(app: str = "rocketq-demo") -> Any:
    """A local[2] SparkSession with the ``rocketmq`` format registered (quiet, no UI).

    Its Python workers (where the connector pulls and decodes) talk to the JVM over Unix
    domain sockets (Spark 4.1+; older versions ignore the setting): over Spark's default TCP
    loopback every task first waits about 40 ms for its input (Nagle and a delayed ACK).
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    import rocketq.spark

    spark = (
        SparkSession.builder.master("local[2]")
        .appName(app)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.python.unix.domain.socket.enabled", "true")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    rocketq.spark.register(spark)
    return spark


def _run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from rocketq.demo.environment import java_problem, spark_problem

    console = Console()
    for problem in (spark_problem(), java_problem()):
        if problem is not None:
            console.print(f"[bold red]rocketq demo cannot run:[/] {problem}", highlight=False)
            return 2
    from rocketq.demo.pipeline import DemoConfig, run_demo
    from rocketq.demo.report import render_report

    logging.basicConfig(level=logging.WARNING, format=LOG_FORMAT)
    config = DemoConfig(
        users=args.users,
        events_per_user=args.events,
        threshold_cents=args.threshold,
        max_offsets_per_trigger=args.batch,
        workdir=args.workdir,
        keep=args.keep or args.workdir is not None,
        timeout_s=args.timeout,
    )
    sessions: list[Any] = []

    def factory() -> Any:
        sessions.append(spark_session())
        return sessions[-1]

    start = time.monotonic()
    try:
        result = run_demo(config, console, factory)
    except Exception:
        console.print_exception(max_frames=8)
        return 1
    finally:
        for spark in sessions:
            spark.stop()
    render_report(result, console, elapsed_s=time.monotonic() - start)
    return 0 if result.ok else 1
