"""Shared pieces of the broker unit tests."""

from __future__ import annotations

from pathlib import Path

from rocketq.broker.config import BrokerConfig
from rocketq.broker.store.config import MessageStoreConfig


def unit_broker_config(root: Path) -> BrokerConfig:
    """A broker on 127.0.0.1:10911 (never bound: processors are called directly) with a
    1 MiB commit-log segment under ``root``."""
    return BrokerConfig(
        broker_ip1="127.0.0.1",
        listen_port=10911,
        message_store=MessageStoreConfig(store_path_root_dir=str(root), mapped_file_size_commit_log=1 << 20),
    )
