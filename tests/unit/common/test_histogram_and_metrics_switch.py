"""The hot-path latency histogram (rocketq.common.histogram) and the broker's metrics switch."""

from __future__ import annotations

import argparse
import importlib.util

import pytest

from rocketq.broker.config import BrokerConfig
from rocketq.cli import servers
from rocketq.common.histogram import Histogram
from rocketq.errors import IllegalArgumentError


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


def _args(port: int | None = None) -> argparse.Namespace:
    return argparse.Namespace(metrics_port=port)


def _config(**keys: str) -> BrokerConfig:
    return BrokerConfig.from_properties({}, keys)


def test_metrics_off_by_default_and_on_by_flag_or_rocketmq5_keys() -> None:
    assert servers._metrics_port(_args(), _config()) is None
    assert servers._metrics_port(_args(9100), _config()) == 9100
    assert servers._metrics_port(_args(), _config(metricsExporterType="PROM")) == 5557
    prom0 = _config(metricsExporterType="PROM", metricsPromExporterPort="0")
    assert servers._metrics_port(_args(), prom0) == 0
    assert servers._metrics_port(_args(9100), prom0) == 9100  # the flag wins
    assert servers._metrics_port(_args(), _config(metricsExporterType="DISABLE")) is None


def test_unsupported_exporters_and_bad_ports_are_refused() -> None:
    with pytest.raises(IllegalArgumentError, match="DISABLE or PROM"):
        _config(metricsExporterType="OTLP_GRPC")
    with pytest.raises(IllegalArgumentError, match="out of range"):
        _config(metricsPromExporterPort="70000")


def test_a_clear_error_without_prometheus_client(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "prometheus_client" else real(name, *a)
    )
    with pytest.raises(IllegalArgumentError, match=r"rocketq\[metrics\]"):
        servers._metrics_port(_args(0), _config())
    assert servers._metrics_port(_args(), _config()) is None


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
