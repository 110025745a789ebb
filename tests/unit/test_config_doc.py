"""docs/configuration.md is the current output of its generator (issue #20): a config field
added, removed or re-defaulted without regenerating the file fails here."""

from __future__ import annotations

from pathlib import Path

from rocketq.broker.config import BrokerConfig
from rocketq.cli.config_doc import render

DOC = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"


def test_configuration_reference_is_current() -> None:
    assert DOC.read_text(encoding="utf-8") == render(), (
        "docs/configuration.md is stale: run `.venv/bin/python -m rocketq.cli.config_doc > docs/configuration.md`"
    )


def test_every_broker_key_and_client_field_is_documented() -> None:
    text = render()
    for key in BrokerConfig.known_keys():
        assert f"| `{key}` |" in text, key
    for field in (
        "poll_name_server_interval_ms",
        "consume_thread_max",
        "send_msg_timeout_ms",
        "pull_batch_size",
    ):
        assert f"| `{field}` |" in text, field
