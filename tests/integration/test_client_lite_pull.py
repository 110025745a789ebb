"""DefaultLitePullConsumer semantics: subscribe/assign, poll, seek, commit, auto-commit."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from rocketq.client import (
    ConsumeFromWhere,
    LitePullConsumer,
    LitePullConsumerConfig,
    Message,
    MessageQueue,
    Producer,
)
from rocketq.errors import ClientError, IllegalArgumentError
from rocketq.protocol.message import MessageExt
from rocketq.testing.cluster import EmbeddedCluster

pytestmark = pytest.mark.integration


def _send(cluster: EmbeddedCluster, topic: str, group: str, n: int, queues: int, prefix: str = "m") -> None:
    with Producer(group, namesrv_addr=cluster.namesrv_addr) as p:
        for i in range(n):
            p.send(
                Message(topic, f"{prefix}{i}".encode(), tags="TagA" if i % 2 else "TagB"),
                queue=MessageQueue(topic, "broker-a", i % queues),
            )


def _poll_until(consumer: LitePullConsumer, n: int, timeout_s: float = 15) -> list[MessageExt]:
    got: list[MessageExt] = []
    deadline = time.monotonic() + timeout_s
    while len(got) < n and time.monotonic() < deadline:
        got.extend(consumer.poll(200))
    return got


def _cfg(group: str, **kw: object) -> LitePullConsumerConfig:
    return LitePullConsumerConfig(
        consumer_group=group,
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        **kw,  # type: ignore[arg-type]
    )


def test_subscribe_poll_and_tag_filter(
    embedded_cluster: EmbeddedCluster, unique_name: Callable[..., str]
) -> None:
    topic = unique_name("T")
    embedded_cluster.create_topic(topic, 2)
    _send(embedded_cluster, topic, unique_name("PG"), 10, 2)
    with LitePullConsumer(config=_cfg(unique_name("LG")), namesrv_addr=embedded_cluster.namesrv_addr) as c:
        with pytest.raises(ClientError, match="not subscribe"):
            c.poll(10)
        c.subscribe(topic, "TagA")
        got = _poll_until(c, 5)
        assert sorted(m.body for m in got) == sorted(f"m{i}".encode() for i in range(1, 10, 2))
        assert all(m.tags == "TagA" for m in got)
        assert c.poll(300) == []
        assert c.assignment() == {MessageQueue(topic, "broker-a", i) for i in range(2)}
        with pytest.raises(ClientError, match="mutually exclusive"):
            c.assign([MessageQueue(topic, "broker-a", 0)])


def test_assign_seek_and_commit_sync(
    embedded_cluster: EmbeddedCluster, unique_name: Callable[..., str]
) -> None:
    topic, group = unique_name("T"), unique_name("LG")
    embedded_cluster.create_topic(topic, 2)
    _send(embedded_cluster, topic, unique_name("PG"), 6, 1)
    q0 = MessageQueue(topic, "broker-a", 0)
    cfg = _cfg(group, auto_commit=False)
    with LitePullConsumer(config=cfg, namesrv_addr=embedded_cluster.namesrv_addr) as c:
        c.assign([q0])
        got = _poll_until(c, 6)
        assert [m.body for m in got] == [f"m{i}".encode() for i in range(6)]
        c.seek(q0, 2)
        again = _poll_until(c, 4)
        assert [m.queue_offset for m in again] == [2, 3, 4, 5]
        with pytest.raises(IllegalArgumentError, match="Seek offset illegal"):
            c.seek(q0, 99)
        with pytest.raises(IllegalArgumentError, match="not in assigned list"):
            c.seek(MessageQueue(topic, "broker-a", 1), 0)
        assert c.committed(q0) in (-1, 0)  # nothing committed yet
        c.commit_sync()
        assert c.committed(q0) == 6
        c.seek_to_begin(q0)
        assert [m.queue_offset for m in _poll_until(c, 6)] == list(range(6))
        c.commit_sync({q0: 4})
        assert c.committed(q0) == 4
    # a new consumer of the group starts from the committed offset
    with LitePullConsumer(config=_cfg(group), namesrv_addr=embedded_cluster.namesrv_addr) as c2:
        c2.assign([q0])
        assert [m.queue_offset for m in _poll_until(c2, 2)] == [4, 5]


def test_auto_commit_and_shutdown_leave_no_thread(
    embedded_cluster: EmbeddedCluster, unique_name: Callable[..., str]
) -> None:
    topic, group = unique_name("T"), unique_name("LG")
    embedded_cluster.create_topic(topic, 2)
    _send(embedded_cluster, topic, unique_name("PG"), 4, 2)
    before = {t.name for t in threading.enumerate()}
    c = LitePullConsumer(
        config=_cfg(group, auto_commit_interval_ms=1000), namesrv_addr=embedded_cluster.namesrv_addr
    )
    c.subscribe(topic)
    c.start()
    assert len(_poll_until(c, 4)) == 4
    time.sleep(1.1)
    c.poll(50)  # auto-commit happens inside poll once the interval has passed
    c.shutdown()
    deadline = time.monotonic() + 5
    while {t.name for t in threading.enumerate()} - before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not {t.name for t in threading.enumerate()} - before
    with LitePullConsumer(config=_cfg(group), namesrv_addr=embedded_cluster.namesrv_addr) as c2:
        assert {c2.committed(MessageQueue(topic, "broker-a", i)) for i in range(2)} == {2}
        c2.subscribe(topic)
        assert c2.poll(1000) == []


def test_two_lite_consumers_share_a_group(
    embedded_cluster: EmbeddedCluster, unique_name: Callable[..., str]
) -> None:
    topic, group = unique_name("T"), unique_name("LG")
    embedded_cluster.create_topic(topic, 4)
    a = LitePullConsumer(config=_cfg(group), namesrv_addr=embedded_cluster.namesrv_addr)
    b = LitePullConsumer(config=_cfg(group), namesrv_addr=embedded_cluster.namesrv_addr)
    a.subscribe(topic)
    b.subscribe(topic)
    a.start()
    b.start()
    try:
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and not (len(a.assignment()) == 2 and len(b.assignment()) == 2):
            time.sleep(0.05)
        assert len(a.assignment()) == 2
        assert a.assignment().isdisjoint(b.assignment())
        _send(embedded_cluster, topic, unique_name("PG"), 8, 4)
        got: list[MessageExt] = []
        deadline = time.monotonic() + 15
        while len(got) < 8 and time.monotonic() < deadline:
            got += a.poll(100) + b.poll(100)
        assert sorted(m.body for m in got) == sorted(f"m{i}".encode() for i in range(8))
    finally:
        a.shutdown()
        b.shutdown()
