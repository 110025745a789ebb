"""Smoke test of the benchmark suite (issue #9): ``run_suite.py --quick`` on the rocketq side.

Runs the real entry point in a subprocess against an EmbeddedCluster it starts itself, every
workload tiny, and checks the results file and the report; Redis and NATS are not needed.
Plus pure checks of the suite's arithmetic (percentiles, /proc parsing, py-spy reduction).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from benchmarks.suite.common import Measurement, Variant, Workload, percentile_ms, read_proc
from benchmarks.suite.profiling import reduce_collapsed
from benchmarks.suite.runner import DURABLE_WORKLOADS, summarize

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.integration
def test_quick_rocketq_run_writes_results_and_report(tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "run_suite.py"),
            "--quick",
            "--systems",
            "rocketq",
            "--out",
            str(tmp_path),
            "--no-chart",
            "--no-profile",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=ROOT,
        env={**os.environ, "PYTHONWARNINGS": "error"},
    )
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
