"""BrokerConfig, broker.conf parsing, config files and ConcurrentHashMap ordering."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.broker.config import (
    LIVE_UPDATE_KEYS,
    UPDATED_KEYS_FILE,
    BrokerConfig,
    java_key,
    load_properties,
    load_updated_keys,
    persist_updated_keys,
    read_config_file,
    write_config_file,
)
from rocketq.errors import IllegalArgumentError
from rocketq.protocol.java import concurrent_hashmap_order
from rocketq.protocol.java_properties import parse_properties
from tests.conftest import golden_dir


def test_defaults_are_java_defaults() -> None:
    cfg = BrokerConfig()
    assert cfg.broker_cluster_name == "DefaultCluster"
    assert cfg.listen_port == 10911
    assert cfg.default_topic_queue_nums == 8
    assert cfg.broker_permission == 6
    assert cfg.register_name_server_period == 30_000
    assert cfg.flush_consumer_offset_interval == 5000
    assert cfg.auto_create_topic_enable and cfg.auto_create_subscription_group
    assert cfg.message_store.store_path_root_dir.endswith("store")


def test_java_key_mapping() -> None:
    assert java_key("broker_cluster_name") == "brokerClusterName"
    assert java_key("broker_ip1") == "brokerIP1"
    assert java_key("flush_interval_commit_log_ms") == "flushIntervalCommitLog"
    assert java_key("file_reserved_time_hours") == "fileReservedTime"
    assert java_key("short_polling_time_mills") == "shortPollingTimeMills"


def test_from_properties_reads_broker_conf_keys(tmp_path: Path) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text(
        "# a comment\n"
        "brokerClusterName = DefaultCluster\n"
        "brokerName=broker-x\n"
        "brokerId=0\n"
        "deleteWhen=04\n"
        "fileReservedTime=48\n"
        "brokerRole=ASYNC_MASTER\n"
        "flushDiskType=SYNC_FLUSH\n"
        "autoCreateTopicEnable=false\n"
        "listenPort:10921\n"
        f"storePathRootDir={tmp_path / 'store'}\n"
        "mappedFileSizeCommitLog=65536\n"
        "flushIntervalCommitLog=250\n"
        "someUnknownKey=whatever\n"
    )
    cfg = BrokerConfig.from_properties(load_properties(conf), {"brokerName": "broker-y"})
    assert cfg.broker_name == "broker-y"  # overrides win
    assert cfg.listen_port == 10921
    assert cfg.auto_create_topic_enable is False
    store = cfg.message_store
    assert store.store_path_root_dir == str(tmp_path / "store")
    assert store.flush_disk_type == "SYNC_FLUSH"
    assert store.mapped_file_size_commit_log == 65536
    assert store.file_reserved_time_hours == 48
    assert store.flush_interval_commit_log_ms == 250
    assert cfg.config_dir == str(tmp_path / "store" / "config")


def test_from_properties_rejects_bad_numbers() -> None:
    with pytest.raises(IllegalArgumentError):
        BrokerConfig.from_properties({"listenPort": "abc"})
    with pytest.raises(IllegalArgumentError):
        BrokerConfig.from_properties({"listenPort": "70000"})
    with pytest.raises(IllegalArgumentError):
        BrokerConfig(broker_name="")


def test_to_properties_round_trip(tmp_path: Path) -> None:
    cfg = BrokerConfig.from_properties(
        {"storePathRootDir": str(tmp_path), "brokerName": "b1", "namesrvAddr": "127.0.0.1:1;127.0.0.1:2"}
    )
    assert cfg.namesrv_addr_list == ["127.0.0.1:1", "127.0.0.1:2"]
    again = BrokerConfig.from_properties(cfg.to_properties())
    assert again == cfg


def test_properties_parsing_rules() -> None:
    text = "! bang comment\n  a = 1\nb:2\nc 3\nlong = x\\\n    y\nesc=tab\\there\\u0041\nempty=\n"
    assert parse_properties(text) == {
        "a": "1",
        "b": "2",
        "c": "3",
        "long": "xy",
        "esc": "tab\thereA",
        "empty": "",
    }


@given(
    st.dictionaries(
        st.from_regex(r"[a-zA-Z][a-zA-Z0-9.]{0,10}", fullmatch=True), st.text("abc 123=:", max_size=10)
    )
)
def test_properties_round_trip(props: dict[str, str]) -> None:
    text = "".join(f"{k}={v.strip()}\n" for k, v in props.items())
    assert parse_properties(text) == {k: v.strip() for k, v in props.items()}


def test_config_file_atomic_write_and_bak(tmp_path: Path) -> None:
    path = str(tmp_path / "config" / "topics.json")
    assert read_config_file(path) is None
    write_config_file(path, "one")
    write_config_file(path, "two")
    assert read_config_file(path) == "two"
    assert Path(path + ".bak").read_text() == "one"
    Path(path).unlink()
    assert read_config_file(path) == "one"  # ConfigManager.loadBak


@pytest.mark.parametrize(
    ("name", "pattern", "capacity"),
    [
        ("topics.json", r'"topicName":"([^"]+)"', 1024),
        ("subscriptionGroup.json", r'"groupName":"([^"]+)"', 1024),
        ("consumerOffset.json", r'"([^"]+@[^"]+)"', 512),
    ],
)
def test_chm_order_matches_golden_config_files(name: str, pattern: str, capacity: int) -> None:
    keys = re.findall(pattern, (golden_dir() / "store" / name).read_text())
    assert len(keys) > 5
    assert (
        concurrent_hashmap_order(sorted(keys), capacity) == keys
    )  # bucket order, independent of insertion here
    # and a plain sort would not do it: the test can fail
    assert sorted(keys) != keys


def test_live_update_keys_are_known_keys() -> None:
    assert set(BrokerConfig.known_keys()) >= LIVE_UPDATE_KEYS


def test_with_updates_applies_live_keys_and_refuses_the_rest(tmp_path: Path) -> None:
    cfg = BrokerConfig.from_properties({"storePathRootDir": str(tmp_path), "listenPort": "0"})
    new, accepted = cfg.with_updates(
        {"brokerPermission": "4", "max_message_size": "1024", "autoCreateTopicEnable": "false"}
    )
    assert accepted == {"brokerPermission": "4", "maxMessageSize": "1024", "autoCreateTopicEnable": "false"}
    assert (new.broker_permission, new.message_store.max_message_size, new.auto_create_topic_enable) == (
        4,
        1024,
        False,
    )
    assert cfg.broker_permission == 6 and new.message_store.store_path_root_dir == str(tmp_path)
    # a restart-only key with its running value is no change; with another value it is refused
    assert cfg.with_updates({"listenPort": "0"}) == (cfg, {})
    with pytest.raises(IllegalArgumentError, match="listenPort, mappedFileSizeCommitLog cannot change"):
        cfg.with_updates({"mappedFileSizeCommitLog": "4096", "listenPort": "1", "brokerPermission": "4"})
    with pytest.raises(IllegalArgumentError, match="did you mean brokerPermission"):
        cfg.with_updates({"brokerPermision": "4"})
    with pytest.raises(IllegalArgumentError, match="PermName bits"):
        cfg.with_updates({"brokerPermission": "16"})
    with pytest.raises(IllegalArgumentError, match="delete_when must be HH"):
        cfg.with_updates({"deleteWhen": "25"})


def test_updated_keys_file_accumulates(tmp_path: Path) -> None:
    root = str(tmp_path)
    assert load_updated_keys(root) == {}
    path = persist_updated_keys(root, {"brokerPermission": "4"})
    persist_updated_keys(root, {"maxMessageSize": "1024", "brokerPermission": "6"})
    assert path == str(tmp_path / "config" / UPDATED_KEYS_FILE)
    assert load_updated_keys(root) == {"brokerPermission": "6", "maxMessageSize": "1024"}
