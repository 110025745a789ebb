"""The hot-path latency histogram (rocketq.common.histogram) and the broker's metrics switch."""

from __future__ import annotations

import argparse
import importlib.util

import pytest

from rocketq.cli import servers
from rocketq.common.histogram import Histogram


def test_buckets_are_cumulative_with_le_semantics() -> None:
    h = Histogram((1.0, 5.0, 10.0))
    for v in (0.5, 1.0, 1.5, 5.0, 7.0, 11.0, 100.0):
        h.observe(v)
    snap = h.snapshot()
    # <=1: 0.5, 1.0 | <=5: +1.5, 5.0 | <=10: +7.0 | +Inf: +11, 100
    assert snap.buckets == (2, 4, 5, 7)
    assert snap.count == 7
    assert snap.sum == pytest.approx(126.0)


def test_bounds_must_ascend() -> None:
    with pytest.raises(ValueError, match="ascending"):
        Histogram((5.0, 1.0))
    with pytest.raises(ValueError, match="ascending"):
        Histogram(())


def _args(**kw: object) -> argparse.Namespace:
    base: dict[str, object] = {"metrics_port": None, "config": None, "set": []}
    base.update(kw)
    return argparse.Namespace(**base)


def test_metrics_off_by_default_and_on_by_flag_or_rocketmq5_keys() -> None:
    assert servers._metrics_port(_args()) is None
    assert servers._metrics_port(_args(metrics_port=9100)) == 9100
    assert servers._metrics_port(_args(set=["metricsExporterType=PROM"])) == 5557
    assert servers._metrics_port(_args(set=["metricsExporterType=PROM", "metricsPromExporterPort=0"])) == 0
    assert servers._metrics_port(_args(set=["metricsExporterType=DISABLE"])) is None


def test_a_clear_error_without_prometheus_client(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "prometheus_client" else real(name, *a)
    )
    with pytest.raises(SystemExit, match=r"rocketq\[metrics\]"):
        servers._metrics_port(_args(metrics_port=0))
    assert servers._metrics_port(_args()) is None


def test_dashboard_without_its_extra_names_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from rocketq.cli import dashboard
    from rocketq.cli.main import build_parser

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "uvicorn" else real(name, *a)
    )
    args = build_parser().parse_args(["dashboard", "-n", "127.0.0.1:9876"])
    assert args.func is dashboard._cmd_dashboard
    assert args.host == "127.0.0.1"
    assert args.port == 8080
    assert dashboard._cmd_dashboard(args) == 2
    assert "rocketq[dashboard]" in capsys.readouterr().err
