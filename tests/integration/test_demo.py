"""The demo pipeline (``rocketq demo``) on small sizes, and its message when Java is missing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from rocketq.cli.demo import spark_session
from rocketq.demo.pipeline import DemoConfig, run_demo
from rocketq.demo.report import render_report
from rocketq.demo.wallet import OrderChecker, WalletEvent, generate_events


def test_generated_events_are_ordered_per_user_and_balances_add_up() -> None:
    events = generate_events(20, 10, seed=3)
    balance: dict[str, int] = {}
    checker = OrderChecker()
    for e in events:
        delta = e.amount if e.kind == "deposit" else -e.amount
        balance[e.user] = balance.get(e.user, 0) + delta
        assert e.balance == balance[e.user]
        assert WalletEvent.from_json(e.to_json()) == e
        assert checker.observe(e)
    assert checker.violations == 0
    first = next(e for e in events if e.user == "user-0000")
    assert not checker.observe(first)  # a replay: not shown again
    assert checker.violations == 1  # ... and older than what the user saw


@pytest.mark.integration
@pytest.mark.spark
@pytest.mark.slow
def test_demo_pipeline_small(tmp_path: Path) -> None:
    console = Console(record=True, width=140)
    config = DemoConfig(users=40, events_per_user=8, max_offsets_per_trigger=150, workdir=tmp_path, keep=True)
    # the session is shared with the other Spark tests of this pytest run (getOrCreate)
    result = run_demo(config, console, spark_session)
    render_report(result, console, elapsed_s=0.0)
    text = console.export_text()
    assert result.ok, text
    assert result.produced == result.notified == result.spark_rows > 0
    assert result.alerts_written == result.alerts_received > 0
    assert [c.name for c in result.checks] == [
        "order violations",
        "every message notified",
        "every message read by Spark once",
        "Spark balances = notifier balances",
        "alerts written and read back",
        "consumer progress lag 0",
    ]
    assert "ALL CHECKS PASSED" in text
    assert (tmp_path / "balances.parquet").is_dir()
    assert (tmp_path / "notifications.txt").read_text().count("SMS to ") == result.produced


@pytest.mark.integration
def test_demo_without_java_says_what_to_do(tmp_path: Path) -> None:
    env = {**os.environ, "JAVA_HOME": str(tmp_path / "no-java")}
    proc = subprocess.run(
        [sys.executable, "-m", "rocketq.cli.main", "demo"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 2
    assert "Java 17" in proc.stdout and "JAVA_HOME" in proc.stdout
