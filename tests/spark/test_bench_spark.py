"""Workload 7 of the benchmark suite end to end: ``run_suite.py --quick --spark``.

The real entry point in a subprocess: the rocketq workloads (tiny), then
``benchmarks/spark_bench.py`` with a small topic in its own local SparkSession; checks
``spark.json`` (rates, per-process-group CPU seconds) and the report's workload-7 section.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from benchmarks.spark_bench import ARROW_JVM_OPTIONS

from tests.integration.test_bench_smoke import run_quick_suite

pytestmark = [pytest.mark.spark, pytest.mark.integration, pytest.mark.slow]


def test_quick_suite_runs_the_spark_workload(tmp_path: Path) -> None:
    proc = run_quick_suite(tmp_path, "--variants", "default", "--spark", timeout=240)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    data = json.loads((tmp_path / "spark.json").read_text(encoding="utf-8"))
    assert data["messages"] == 100_000
    best = data["best_rows_per_s"]
    assert best["connector"] > 0
    assert best["parquet"] > 0
    assert data["jvm_options"] == ARROW_JVM_OPTIONS  # spark_bench.py checked that the JVM has them
    assert data["python_worker_sockets"] == "unix"  # and that the session has its setting
    assert data["ratio"] == pytest.approx(best["connector"] / best["parquet"], abs=0.001)
    median = data["median_rows_per_s"]
    assert data["ratio_median"] == pytest.approx(median["connector"] / median["parquet"], abs=0.001)
    for reader in ("connector", "parquet"):
        cpu = data["median_cpu_s"][reader]
        assert cpu["wall"] > 0
        assert cpu["spark jvm"] > 0, cpu  # the JVM was found under this run's process tree
    # only the connector's runs make the broker serve pulls and the Python workers decode
    assert data["median_cpu_s"]["connector"]["python workers"] > 0
    report = (tmp_path / "REPORT.md").read_text(encoding="utf-8")
    assert "## Workload 7: Spark batch read, connector vs Parquet" in report
    assert f"| connector | {best['connector']:,.0f} | {median['connector']:,.0f} |" in report
    assert f"**{data['ratio_median']:.2f}x** of the median runs" in report
    assert f"Spark JVM options: `{ARROW_JVM_OPTIONS}`" in report
    assert "Python workers on Unix domain sockets" in report
