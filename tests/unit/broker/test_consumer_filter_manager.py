"""ConsumerFilterManager (FilterDataMapByTopic.register) and ExpressionMessageFilter, pure."""

from __future__ import annotations

import pytest

from rocketq.broker.filter import ConsumerFilterManager, ExpressionMessageFilter
from rocketq.client.message_selector import MessageSelector, build_subscription
from rocketq.errors import MalformedFrameError
from rocketq.protocol.heartbeat import build_subscription_data
from rocketq.protocol.java import string_hash
from rocketq.protocol.message import decode_record_properties, encode_record


class Clock:
    def __init__(self) -> None:
        self.now = 1_000

    def __call__(self) -> int:
        self.now += 1
        return self.now


@pytest.fixture
def manager() -> ConsumerFilterManager:
    return ConsumerFilterManager(wall_ms=Clock())


def test_tag_subscriptions_are_not_registered(manager: ConsumerFilterManager) -> None:
    assert not manager.register("T", "g", "TagA", "TAG", 1)
    assert not manager.register("T", "g", "", "SQL92", 1)
    assert manager.get("T", "g") is None


def test_versions_decide(manager: ConsumerFilterManager) -> None:
    assert manager.register("T", "g", "a > 1", "SQL92", 10)
    first = manager.get("T", "g")
    assert first is not None and first.client_version == 10
    assert not manager.register("T", "g", "a > 2", "SQL92", 10)  # same version: ignored
    assert not manager.register("T", "g", "a > 2", "SQL92", 9)  # older: ignored
    assert manager.get("T", "g") is first and first.expression == "a > 1"
    assert manager.register("T", "g", "a > 1", "SQL92", 11)  # same text, newer: version bump only
    assert manager.get("T", "g") is first and first.client_version == 11
    assert manager.register("T", "g", "a > 2", "SQL92", 12)  # new text: recompiled
    second = manager.get("T", "g")
    assert second is not None and second is not first and second.expression == "a > 2"
    assert second.compiled_expression.matches({"a": "3"})


def test_an_expression_that_does_not_compile_removes_the_entry(manager: ConsumerFilterManager) -> None:
    assert manager.register("T", "g", "a > 1", "SQL92", 1)
    assert not manager.register("T", "g", "a >", "SQL92", 2)
    assert manager.get("T", "g") is None


def test_unsubscribed_topics_and_unregistered_groups_die_and_revive(manager: ConsumerFilterManager) -> None:
    sub_t = build_subscription("T", MessageSelector.by_sql("a = 1"), sub_version=5)
    sub_u = build_subscription("U", MessageSelector.by_sql("b = 1"), sub_version=5)
    manager.register_subscriptions("g", [sub_t, sub_u])
    data_t, data_u = manager.get("T", "g"), manager.get("U", "g")
    assert data_t is not None and data_u is not None
    assert not data_t.is_dead and not data_u.is_dead
    manager.register_subscriptions("g", [sub_t])  # U dropped from the heartbeat
    assert data_u.is_dead and not data_t.is_dead
    assert manager.get("U", "g") is data_u  # dead entries are still found
    manager.unregister("g")
    assert data_t.is_dead
    manager.register_subscriptions("g", [sub_t])  # same version: revived
    assert not data_t.is_dead
    assert sorted(d.topic for d in manager.get_by_group("g")) == ["T", "U"]


def _record(props: dict[str, str]) -> bytes:
    body = "\x02".join(f"{k}\x01{v}" for k, v in props.items())
    return encode_record(
        topic="T",
        queue_id=0,
        flag=0,
        queue_offset=0,
        physical_offset=0,
        sys_flag=0,
        born_timestamp=1,
        born_host=("127.0.0.1", 1),
        store_timestamp=2,
        store_host=("127.0.0.1", 2),
        reconsume_times=0,
        prepared_transaction_offset=0,
        body=b"hello",
        properties=body,
    )


def test_expression_message_filter(manager: ConsumerFilterManager) -> None:
    sql = build_subscription("T", MessageSelector.by_sql("region = 'eu'"), sub_version=1)
    manager.register("T", "g", sql.sub_string, sql.expression_type, 1)
    f = ExpressionMessageFilter(sql, manager.get("T", "g"))
    assert f.matches_all_units and f.filters_records
    assert f.is_matched_by_commit_log(_record({"region": "eu", "TAGS": "x"}))
    assert not f.is_matched_by_commit_log(_record({"region": "us"}))
    assert not f.is_matched_by_commit_log(_record({}))
    assert f.is_matched_by_properties({"region": "eu"})
    tag = ExpressionMessageFilter(build_subscription_data("T", "TagA || TagB"), None)
    assert not tag.matches_all_units and not tag.filters_records
    assert tag.is_matched_by_consume_queue(string_hash("TagA"))
    assert tag.unit_matcher(string_hash("TagB") & 0xFFFFFFFF)  # stored codes are longs
    assert not tag.is_matched_by_consume_queue(string_hash("TagC"))
    everything = ExpressionMessageFilter(build_subscription_data("T", "*"), None)
    assert everything.matches_all_units and everything.is_matched_by_commit_log(b"")


def test_sql_heartbeat_subscription_json_is_javas() -> None:
    """FilterAPI.build for SQL92: the text verbatim, no tags, expressionType SQL92."""
    sd = build_subscription("T", MessageSelector.by_sql("a > 1"), sub_version=5)
    assert sd.to_json() == (
        b'{"classFilterMode":false,"codeSet":[],"expressionType":"SQL92","subString":"a > 1",'
        b'"subVersion":5,"tagsSet":[],"topic":"T"}'
    )


@pytest.mark.parametrize("v6", [0, 0x10, 0x20, 0x30])
def test_record_properties_with_either_host_kind(v6: int) -> None:
    """MessageDecoder.decodeProperties finds the properties after IPv4 or IPv6 hosts."""
    born = ("::1", 1) if v6 & 0x10 else ("127.0.0.1", 1)
    store = ("::1", 2) if v6 & 0x20 else ("127.0.0.1", 2)
    record = encode_record(
        topic="Topic",
        queue_id=0,
        flag=0,
        queue_offset=0,
        physical_offset=0,
        sys_flag=v6,
        born_timestamp=1,
        born_host=born,
        store_timestamp=2,
        store_host=store,
        reconsume_times=0,
        prepared_transaction_offset=0,
        body=b"body",
        properties="a\x011\x02region\x01eu",
    )
    assert decode_record_properties(memoryview(record)) == {"a": "1", "region": "eu"}
    with pytest.raises(MalformedFrameError):
        decode_record_properties(record[:60])
