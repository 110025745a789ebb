"""RebalancePushImpl with a fake host and owner: when the pulls take up a new subVersion."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from rocketq.client.consumer.offset_store import RemoteBrokerOffsetStore
from rocketq.client.consumer.pull_message_service import PullRequest
from rocketq.client.consumer.rebalance_push import RebalancePushImpl
from rocketq.protocol.heartbeat import (
    ConsumeFromWhere,
    MessageModel,
    SubscriptionData,
    build_subscription_data,
)
from rocketq.protocol.message_queue import MessageQueue
from tests.unit.client.test_rebalance import FakeHost, _mqs


class _Admin:
    def max_offset(self, mq: MessageQueue) -> int:
        return 0

    def search_offset(self, mq: MessageQueue, timestamp_ms: int) -> int:
        return 0


class _Owner:
    """The push consumer as its rebalance sees it; records, at each heartbeat and each
    dispatch, the version a heartbeat sends and the version a pull sent then would carry."""

    consume_orderly = False
    consume_timestamp: str | None = None
    lock_max_live_time_ms = 30_000

    def __init__(self) -> None:
        self.reb: RebalancePushImpl | None = None
        self.sd: SubscriptionData | None = None
        self.heartbeats: list[tuple[int, int]] = []  # (heartbeat's version, a pull's version)
        self.dispatched: list[tuple[list[PullRequest], int]] = []  # (requests, their pulls' version)

    def _versions(self) -> tuple[int, int]:
        assert self.reb is not None and self.sd is not None
        return self.sd.sub_version or 0, self.reb.pull_sub_version(self.sd)

    def consume_from_where(self) -> ConsumeFromWhere:
        return ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET

    def dispatch(self, requests: list[PullRequest]) -> None:
        self.dispatched.append((requests, self._versions()[1]))

    def schedule(self, task: Callable[[], None], delay_ms: int) -> None:
        pass

    def on_queues_changed(self, topic: str, owned: set[MessageQueue]) -> None:
        self.heartbeats.append(self._versions())


def _push_rebalance(host: FakeHost) -> tuple[RebalancePushImpl, _Owner, SubscriptionData]:
    owner = _Owner()
    reb = RebalancePushImpl(
        host, "G", MessageModel.CLUSTERING, RemoteBrokerOffsetStore(host, "G"), _Admin(), owner
    )
    sd = build_subscription_data("T", "*", sub_version=5)
    reb.add_subscription(sd)
    reb.set_subscribe_info("T", _mqs(4))
    owner.reb, owner.sd = reb, sd
    return reb, owner, sd


def test_pulls_take_up_a_new_sub_version_only_after_its_heartbeat() -> None:
    """While the heartbeat announcing a rebalance's new subVersion is being sent, a pull of a
    queue the consumer keeps still carries the version the broker knows (Java's order lets it
    carry the new one: SUBSCRIPTION_NOT_LATEST, and the queue waits a pull-exception delay);
    the heartbeat itself, and every pull after it, carry the new one."""
    host = FakeHost("c1", ["c1"])
    reb, owner, sd = _push_rebalance(host)
    reb.do_rebalance()
    assert len(owner.heartbeats) == 1
    sent, pulled = owner.heartbeats[0]
    assert sent > 5 and pulled == 5
    assert reb.pull_sub_version(sd) == sd.sub_version == sent
    # the new queues' first pulls go out after the heartbeat, with the new version
    [(requests, version)] = owner.dispatched
    assert len(requests) == 4 and version == sent

    sd.sub_version = first = 7  # a known number, so the next bump is visible
    host.cids = ["c1", "c2"]  # c2 joins: c1 keeps queues 0-1
    reb.do_rebalance()
    sent, pulled = owner.heartbeats[1]
    assert pulled == first and sent > first
    assert reb.pull_sub_version(sd) == sent
    assert {mq.queue_id for mq in reb.owned_queues()} == {0, 1}


def test_a_failing_heartbeat_still_hands_the_new_version_to_the_pulls() -> None:
    """As in Java, the version is the subscription's after the heartbeat attempt, sent or not
    (a broker that missed it answers SUBSCRIPTION_NOT_LATEST until the next heartbeat)."""
    host = FakeHost("c1", ["c1"])
    reb, owner, sd = _push_rebalance(host)

    def failing(topic: str, owned: set[MessageQueue]) -> None:
        raise RuntimeError("no broker answered")

    owner.on_queues_changed = failing  # type: ignore[method-assign]
    with pytest.raises(RuntimeError, match="no broker answered"):
        reb.message_queue_changed("T", _mqs(4), _mqs(4))
    assert reb.pull_sub_version(sd) == sd.sub_version != 5
