"""The committed Grafana dashboard only queries metrics that rocketq exports."""

from __future__ import annotations

import json
import re
from pathlib import Path

from rocketq.broker.metrics import METRIC_ORIGINS
from rocketq.client.metrics import METRIC_NAMES

DASHBOARD = Path(__file__).resolve().parents[2] / "docs" / "grafana" / "rocketq-dashboard.json"


def test_every_query_names_an_exported_metric() -> None:
    dash = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    exported = set(METRIC_ORIGINS) | set(METRIC_NAMES)
    seen: set[str] = set()
    for panel in dash["panels"]:
        for target in panel["targets"]:
            for name in re.findall(r"rocketmq_[a-z_]+", target["expr"]):
                base = re.sub(r"_(bucket|count|sum)$", "", name)
                assert base in exported, f"{panel['title']}: {name} is not exported"
                seen.add(base)
    # the dashboard covers the headline figures of the issue
    for must in ("rocketmq_messages_in_total", "rocketmq_consumer_lag_messages", "rocketmq_rpc_latency"):
        assert must in seen


def test_every_exported_metric_is_documented() -> None:
    doc = (DASHBOARD.parents[1] / "metrics.md").read_text(encoding="utf-8")
    for name in [*METRIC_ORIGINS, *METRIC_NAMES]:
        assert f"`{name}`" in doc, name
