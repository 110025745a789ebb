"""Message queue selectors and the producer's latency-aware queue choice (pure logic)."""

from __future__ import annotations

import random
from collections.abc import Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.client.latency import LatencyFaultTolerance, MQFaultStrategy, TopicPublishInfo
from rocketq.client.selectors import (
    MessageQueueSelector,
    SelectMessageQueueByHash,
    SelectMessageQueueByRandom,
    SelectMessageQueueByRoundRobin,
    as_selector,
    java_hash_code,
)
from rocketq.errors import IllegalArgumentError
from rocketq.protocol.java import string_hash
from rocketq.protocol.message import Message
from rocketq.protocol.message_queue import MessageQueue

MSG = Message("T", b"x")


def _mqs(n: int, broker: str = "broker-a") -> list[MessageQueue]:
    return [MessageQueue("T", broker, i) for i in range(n)]


def test_hash_selector_matches_the_golden_java_send() -> None:
    # golden/producer.jsonl seq 22: key "order-42", abs(key.hashCode()) % 4 -> queue 1 ("e":"1")
    assert SelectMessageQueueByHash().select(_mqs(4), MSG, "order-42").queue_id == 1


def test_hash_selector_negative_hash_uses_abs_of_java_remainder() -> None:
    key = next(k for k in (f"order-key-{i}" for i in range(1000)) if string_hash(k) < 0)
    h = string_hash(key)
    java_remainder = -(-h % 7)  # Java's % keeps the dividend's sign
    assert SelectMessageQueueByHash().select(_mqs(7), MSG, key).queue_id == abs(java_remainder)


def test_hash_selector_int_and_long_keys() -> None:
    sel = SelectMessageQueueByHash()
    assert sel.select(_mqs(4), MSG, 42).queue_id == 2
    assert sel.select(_mqs(4), MSG, -42).queue_id == 2
    # Long.hashCode(2**40) = (int)(v ^ v >>> 32) = 256
    assert java_hash_code(2**40) == 256
    assert java_hash_code(True) == 1231
    assert java_hash_code(-(2**63)) == -(2**31)


def test_hash_selector_refuses_unstable_keys() -> None:
    with pytest.raises(IllegalArgumentError, match="stable hash"):
        SelectMessageQueueByHash().select(_mqs(4), MSG, 1.5)
    with pytest.raises(IllegalArgumentError):
        SelectMessageQueueByHash().select([], MSG, "k")


@given(st.text(), st.integers(min_value=1, max_value=64))
def test_hash_selector_is_stable_and_in_range(key: str, n: int) -> None:
    mqs = _mqs(n)
    first = SelectMessageQueueByHash().select(mqs, MSG, key)
    assert first == SelectMessageQueueByHash().select(mqs, MSG, key)
    assert first.queue_id == abs(string_hash(key)) % n


def test_round_robin_and_random_and_callable() -> None:
    rr = SelectMessageQueueByRoundRobin()
    assert [rr.select(_mqs(3), MSG, None).queue_id for _ in range(5)] == [0, 1, 2, 0, 1]
    rnd = SelectMessageQueueByRandom(random.Random(7))
    picks = {rnd.select(_mqs(4), MSG, None).queue_id for _ in range(200)}
    assert picks == {0, 1, 2, 3}

    def last(mqs: Sequence[MessageQueue], msg: Message, arg: object) -> MessageQueue:
        return mqs[-1]

    wrapped = as_selector(last)
    assert isinstance(wrapped, MessageQueueSelector)
    assert wrapped.select(_mqs(3), MSG, None).queue_id == 2
    assert as_selector(rr) is rr
    with pytest.raises(IllegalArgumentError):
        as_selector(42)  # type: ignore[arg-type]


def test_publish_info_skips_the_broker_that_failed() -> None:
    mqs = _mqs(2, "broker-a") + _mqs(2, "broker-b")
    info = TopicPublishInfo(mqs, start=0)
    assert [info.select_one_message_queue().queue_id for _ in range(4)] == [0, 1, 0, 1]
    for _ in range(10):
        assert info.select_one_message_queue("broker-a").broker_name == "broker-b"
    only_a = TopicPublishInfo(_mqs(2, "broker-a"), start=0)
    assert only_a.select_one_message_queue("broker-a").broker_name == "broker-a"  # nothing else


def test_fault_strategy_isolates_slow_and_failed_brokers() -> None:
    now = [1_000_000]
    strategy = MQFaultStrategy(enabled=True, clock_ms=lambda: now[0])
    assert strategy.compute_not_available_duration(40) == 0
    assert strategy.compute_not_available_duration(600) == 30_000
    assert strategy.compute_not_available_duration(20_000) == 600_000
    info = TopicPublishInfo(_mqs(2, "broker-a") + _mqs(2, "broker-b"), start=0)
    strategy.update_fault_item("broker-a", 100, isolation=True)  # failure: 30 s latency -> 10 min
    for _ in range(8):
        assert strategy.select_one_message_queue(info, None).broker_name == "broker-b"
    now[0] += 600_001
    assert {strategy.select_one_message_queue(info, None).broker_name for _ in range(8)} == {
        "broker-a",
        "broker-b",
    }


def test_fault_strategy_disabled_is_plain_round_robin() -> None:
    strategy = MQFaultStrategy(enabled=False)
    strategy.update_fault_item("broker-a", 100_000, isolation=True)
    info = TopicPublishInfo(_mqs(2, "broker-a"), start=0)
    assert strategy.select_one_message_queue(info, None).broker_name == "broker-a"


def test_fault_tolerance_pick_one_at_least_prefers_available_low_latency() -> None:
    now = [0]
    tol = LatencyFaultTolerance(clock_ms=lambda: now[0], rng=random.Random(1))
    assert tol.pick_one_at_least() is None
    tol.update_fault_item("a", 5000, 60_000)
    tol.update_fault_item("b", 10, 0)
    assert tol.pick_one_at_least() == "b"
    assert tol.is_available("b")
    assert not tol.is_available("a")
    tol.remove("a")
    assert tol.is_available("a")
