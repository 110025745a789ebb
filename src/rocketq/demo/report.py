"""The demo's final report: rich tables of stages, consumer progress and checks."""

from __future__ import annotations

from rich.console import Console
from rich.panel import Panel
from rich.table import Table

from rocketq.demo.pipeline import ALERT_TOPIC, EVENT_TOPIC, NOTIFIER_GROUP, SPARK_GROUP, DemoResult

__all__ = ["render_report"]


def render_report(result: DemoResult, console: Console, *, elapsed_s: float) -> None:
    """Print the summary, stage throughput, per-queue progress and the checks."""
    summary = Table.grid(padding=(0, 2))
    summary.add_row("messages produced", f"{result.produced:,}", f"to {EVENT_TOPIC}")
    summary.add_row("notified (SMS)", f"{result.notified:,}", f"group {NOTIFIER_GROUP}, orderly")
    summary.add_row("read by Spark", f"{result.spark_rows:,}", f"group {SPARK_GROUP}, availableNow")
    summary.add_row(
        "alerts", f"{result.alerts_written:,} written / {result.alerts_received:,} received", ALERT_TOPIC
    )
    console.print(Panel(summary, title="rocketq demo: wallet pipeline", expand=False))

    stages = Table(title="stages")
    stages.add_column("stage")
    stages.add_column("items", justify="right")
    stages.add_column("seconds", justify="right")
    stages.add_column("items/s", justify="right")
    for stage in result.stages:
        stages.add_row(stage.name, f"{stage.count:,}", f"{stage.seconds:.2f}", f"{stage.rate:,.0f}")
    console.print(stages)

    progress = Table(title=f"consumer progress on {EVENT_TOPIC}")
    for name in ("queue", "max offset", NOTIFIER_GROUP, SPARK_GROUP, "lag"):
        progress.add_column(name, justify="right")
    for p in result.progress:
        style = "green" if p.lag == 0 else "red"
        progress.add_row(
            str(p.queue_id),
            str(p.max_offset),
            str(p.notifier_offset),
            str(p.spark_offset),
            f"[{style}]{p.lag}",
        )
    console.print(progress)

    checks = Table(title="checks")
    checks.add_column("check")
    checks.add_column("result")
    checks.add_column("detail")
    for check in result.checks:
        checks.add_row(check.name, "[green]PASS" if check.ok else "[red]FAIL", check.detail)
    console.print(checks)
    if result.outputs and result.config.keep:
        for name, path in result.outputs.items():
            console.print(f"  {name}: {path}")
    verdict = "[bold green]ALL CHECKS PASSED" if result.ok else "[bold red]SOME CHECKS FAILED"
    console.print(f"{verdict} in {elapsed_s:.1f} s")
