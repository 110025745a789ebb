"""ConsumerManager / ProducerManager semantics (ConsumerGroupInfo quirks, notify events, expiry)."""

from __future__ import annotations

from typing import cast

from rocketq.broker.clients import (
    ClientChannelInfo,
    ConsumerGroupEvent,
    ConsumerManager,
    ProducerManager,
)
from rocketq.protocol.heartbeat import (
    ConsumeFromWhere,
    ConsumeType,
    MessageModel,
    SubscriptionData,
    build_subscription_data,
)
from rocketq.remoting.server import Channel


class FakeChannel:
    """Just what the managers touch: identity, remote_addr, closed, close()."""

    def __init__(self, addr: str) -> None:
        self.remote_addr = addr
        self.closed = False

    def close(self) -> None:
        self.closed = True


def ch(addr: str) -> Channel:
    return cast(Channel, FakeChannel(addr))


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000

    def __call__(self) -> int:
        return self.now


def sub(topic: str, version: int = 1, expr: str = "*") -> SubscriptionData:
    return build_subscription_data(topic, expr, sub_version=version)


def register(cm: ConsumerManager, channel: Channel, client_id: str, subs: list[SubscriptionData]) -> bool:
    return cm.register_consumer(
        "G",
        ClientChannelInfo(channel, client_id, 0, 407),
        ConsumeType.CONSUME_PASSIVELY,
        MessageModel.CLUSTERING,
        ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        subs,
        True,
    )


def make() -> tuple[ConsumerManager, list[tuple[ConsumerGroupEvent, str, list[Channel]]], Clock]:
    events: list[tuple[ConsumerGroupEvent, str, list[Channel]]] = []
    clock = Clock()
    cm = ConsumerManager(lambda e, g, chs: events.append((e, g, chs)), clock_ms=clock)
    return cm, events, clock


def changes(events: list[tuple[ConsumerGroupEvent, str, list[Channel]]]) -> list[list[Channel]]:
    return [chs for e, _, chs in events if e is ConsumerGroupEvent.CHANGE]


def test_join_change_and_quiet_heartbeats() -> None:
    cm, events, _ = make()
    c1, c2 = ch("a:1"), ch("a:2")
    assert register(cm, c1, "c1", [sub("T"), sub("%RETRY%G")])
    assert changes(events) == [[c1]]
    # the same heartbeat again: nothing changes, no notify
    assert not register(cm, c1, "c1", [sub("T"), sub("%RETRY%G")])
    assert len(changes(events)) == 1
    # a second consumer: notify both
    assert register(cm, c2, "c2", [sub("T"), sub("%RETRY%G")])
    assert changes(events)[-1] == [c1, c2]
    info = cm.get_consumer_group_info("G")
    assert info is not None and info.get_all_client_ids() == ["c1", "c2"]
    assert info.consume_from_where is ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET


def test_newer_sub_version_replaces_without_notify() -> None:
    cm, events, _ = make()
    c1 = ch("a:1")
    register(cm, c1, "c1", [sub("T", 1)])
    n = len(changes(events))
    assert not register(cm, c1, "c1", [sub("T", 2, "TagA")])  # ConsumerGroupInfo.updateSubscription quirk
    assert len(changes(events)) == n
    found = cm.find_subscription_data("G", "T")
    assert found is not None and found.sub_string == "TagA"
    assert not register(cm, c1, "c1", [sub("T", 1, "TagB")])  # older: ignored
    found = cm.find_subscription_data("G", "T")
    assert found is not None and found.sub_string == "TagA"
    # dropping a topic is a change
    assert register(cm, c1, "c1", [sub("U", 3)])
    assert cm.find_subscription_data("G", "T") is None
    assert len(changes(events)) == n + 1


def test_unregister_and_close_notify_the_rest() -> None:
    cm, events, _ = make()
    c1, c2 = ch("a:1"), ch("a:2")
    register(cm, c1, "c1", [sub("T")])
    register(cm, c2, "c2", [sub("T")])
    cm.unregister_consumer("G", c2, True)
    assert changes(events)[-1] == [c1]
    cm.do_channel_close_event("a:1", c1)
    assert cm.get_consumer_group_info("G") is None
    assert (ConsumerGroupEvent.UNREGISTER, "G", []) in events
    assert changes(events)[-1] == []


def test_scan_expires_idle_channels() -> None:
    cm, events, clock = make()
    c1, c2 = ch("a:1"), ch("a:2")
    register(cm, c1, "c1", [sub("T")])
    clock.now += 100_000
    register(cm, c2, "c2", [sub("T")])
    clock.now += 20_001  # c1 idle for 120.001 s, c2 for 20 s
    assert cm.scan_not_active_channel() == [c1]
    assert cast(FakeChannel, c1).closed and not cast(FakeChannel, c2).closed
    info = cm.get_consumer_group_info("G")
    assert info is not None and info.get_all_client_ids() == ["c2"]
    assert changes(events)[-1] == [c2]
    assert cm.query_topic_consume_by_who("T") == {"G"}


def test_producer_manager() -> None:
    clock = Clock()
    pm = ProducerManager(clock_ms=clock)
    p1, p2 = ch("p:1"), ch("p:2")
    pm.register_producer("PG", ClientChannelInfo(p1, "id1", 0, 407))
    pm.register_producer("PG", ClientChannelInfo(p2, "id2", 0, 407))
    assert pm.find_channel("id1") is p1
    assert [c.client_id for c in pm.get_group_channels("PG")] == ["id1", "id2"]
    pm.unregister_producer("PG", ClientChannelInfo(p1, "id1", 0, 407))
    assert pm.find_channel("id1") is None
    clock.now += 120_001
    assert pm.scan_not_active_channel() == [p2]
    assert "PG" not in pm.group_channel_table
    pm.register_producer("PG", ClientChannelInfo(p1, "id1", 0, 407))
    pm.do_channel_close_event("p:1", p1)
    assert pm.get_group_channels("PG") == []
