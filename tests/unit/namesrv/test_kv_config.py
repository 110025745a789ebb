"""KVConfigManager and NamesrvConfig: persistence format, Java properties, defaults."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from rocketq.errors import IllegalArgumentError
from rocketq.namesrv.config import NamesrvConfig
from rocketq.namesrv.kv_config import NAMESPACE_ORDER_TOPIC_CONFIG, KVConfigManager
from rocketq.protocol.fastjson import JsonError
from rocketq.protocol.java_properties import format_properties, parse_properties


def test_put_get_delete_and_persist_in_fastjson_format(tmp_path: Path) -> None:
    path = tmp_path / "namesrv" / "kvConfig.json"
    kv = KVConfigManager(str(path))
    kv.load()  # no file yet: empty, no error
    assert kv.get_kv_config("NS", "k") is None
    kv.put_kv_config(NAMESPACE_ORDER_TOPIC_CONFIG, "OrderTopic", "broker-a:4;broker-b:4")
    kv.put_kv_config("NS", "k", "v1")
    kv.put_kv_config("NS", "k", "v2")
    assert kv.get_kv_config("NS", "k") == "v2"
    # KVConfigSerializeWrapper.toJson(): compact, maps in Java HashMap order.
    assert path.read_text() == (
        '{"configTable":{"ORDER_TOPIC_CONFIG":{"OrderTopic":"broker-a:4;broker-b:4"},"NS":{"k":"v2"}}}'
    )
    assert (tmp_path / "namesrv" / "kvConfig.json.bak").is_file()
    assert not (tmp_path / "namesrv" / "kvConfig.json.tmp").exists()

    kv.delete_kv_config("NS", "k")
    kv.delete_kv_config("NoSuchNamespace", "k")
    assert kv.get_kv_config("NS", "k") is None
    assert json.loads(path.read_text()) == {
        "configTable": {"NS": {}, "ORDER_TOPIC_CONFIG": {"OrderTopic": "broker-a:4;broker-b:4"}}
    }

    again = KVConfigManager(str(path))
    again.load()
    assert again.namespaces() == {"NS": {}, "ORDER_TOPIC_CONFIG": {"OrderTopic": "broker-a:4;broker-b:4"}}


def test_kv_list_body_is_a_kvtable() -> None:
    kv = KVConfigManager(None)  # memory only
    assert kv.get_kv_list_by_namespace("NS") is None
    for key in ("b", "a", "c"):
        kv.put_kv_config("NS", key, key.upper())
    # KVTable{table: HashMap} -> Java HashMap order (here: by hash bucket a, b, c).
    assert kv.get_kv_list_by_namespace("NS") == b'{"table":{"a":"A","b":"B","c":"C"}}'


def test_load_accepts_java_written_files_and_rejects_garbage(tmp_path: Path) -> None:
    path = tmp_path / "kv.json"
    path.write_text('{"configTable":{"ORDER_TOPIC_CONFIG":{"T":"broker-a:8"},"X":{"n":1}}}')
    kv = KVConfigManager(str(path))
    kv.load()
    assert kv.get_kv_config("ORDER_TOPIC_CONFIG", "T") == "broker-a:8"
    assert kv.get_kv_config("X", "n") == "1"  # fastjson is lenient with non-string values
    path.write_text("{not json")
    with pytest.raises(JsonError):
        KVConfigManager(str(path)).load()


def test_config_defaults_are_java_defaults() -> None:
    cfg = NamesrvConfig()
    assert cfg.listen_port == 9876
    assert cfg.scan_not_active_broker_interval_ms == 10_000
    assert cfg.broker_channel_expired_time_ms == 120_000
    assert cfg.order_message_enable is False
    assert cfg.resolved_kv_config_path == os.path.expanduser(os.path.join("~", "namesrv", "kvConfig.json"))
    with pytest.raises(IllegalArgumentError):
        NamesrvConfig(listen_port=70000)
    with pytest.raises(IllegalArgumentError):
        NamesrvConfig(scan_not_active_broker_interval_ms=0)
    with pytest.raises(AttributeError):
        cfg.listen_port = 1  # type: ignore[misc]


def test_config_as_java_properties(tmp_path: Path) -> None:
    cfg = NamesrvConfig(kv_config_path=str(tmp_path / "kv.json"))
    props = cfg.to_properties()
    assert props["listenPort"] == "9876"
    assert props["orderMessageEnable"] == "false"
    assert props["kvConfigPath"] == str(tmp_path / "kv.json")
    text = format_properties(props)
    assert "orderMessageEnable=false\n" in text
    assert parse_properties(text) == props

    updated = cfg.with_properties({"orderMessageEnable": "TRUE", "unknownKey": "x", "listenPort": " 9877 "})
    assert updated.order_message_enable is True
    assert updated.listen_port == 9877
    assert cfg.order_message_enable is False
    assert cfg.with_properties({}) is cfg
    with pytest.raises(IllegalArgumentError):
        cfg.with_properties({"listenPort": "many"})


def test_parse_properties_follows_java_properties_load() -> None:
    text = (
        "# comment\n"
        "! another comment\n"
        "   \n"
        "a=1\n"
        "b : 2\n"
        "c 3\n"
        "d=x\\\n"
        "   y\n"
        "e=tab\\there\\u0041\n"
        "f\\=g=h\n"
        "empty=\n"
        "a=override\n"
    )
    assert parse_properties(text) == {
        "a": "override",
        "b": "2",
        "c": "3",
        "d": "xy",
        "e": "tab\thereA",
        "f=g": "h",
        "empty": "",
    }
    assert parse_properties("k=v\\") == {"k": "v"}
    with pytest.raises(IllegalArgumentError):
        parse_properties("k=\\uZZZZ")
