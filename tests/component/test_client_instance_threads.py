"""MQClientInstance starts its threads only for the parts that need them: a producer-only
instance runs the route and heartbeat loops; the persist and rebalance loops start with the
first consumer; shutdown joins them all."""

from __future__ import annotations

import threading

from rocketq.client.config import ClientConfig
from rocketq.client.instance import MQClientInstance, request_not_supported
from rocketq.protocol.frame import RemotingCommand
from rocketq.protocol.heartbeat import ConsumeFromWhere, ConsumeType, MessageModel, SubscriptionData
from rocketq.protocol.message_queue import MessageQueue
from rocketq.testing.waits import wait_until


class _Consumer:
    def __init__(self) -> None:
        self.rebalances = 0

    def group_name(self) -> str:
        return "G"

    def message_model(self) -> MessageModel:
        return MessageModel.CLUSTERING

    def consume_type(self) -> ConsumeType:
        return ConsumeType.CONSUME_ACTIVELY

    def consume_from_where(self) -> ConsumeFromWhere:
        return ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET

    def subscriptions(self) -> list[SubscriptionData]:
        return []

    def do_rebalance(self) -> None:
        self.rebalances += 1

    def persist_consumer_offset(self) -> None:
        pass

    def update_topic_subscribe_info(self, topic: str, info: set[MessageQueue]) -> None:
        pass

    def is_subscribe_topic_need_update(self, topic: str) -> bool:
        return False

    def process_broker_request(self, request: RemotingCommand, addr: str) -> RemotingCommand | None:
        return request_not_supported(request)


def _loops(cid: str) -> set[str]:
    prefix = f"{cid}-"
    return {t.name[len(prefix) :] for t in threading.enumerate() if t.name.startswith(prefix)}


def test_consumer_loops_start_with_the_first_consumer() -> None:
    cid = "127.0.0.1@threads-test"
    inst = MQClientInstance(ClientConfig(namesrv_addr="127.0.0.1:9876"), cid)
    inst.start()
    try:
        assert {"route", "heartbeat"} <= _loops(cid)
        assert not {"persist", "rebalance"} & _loops(cid)
        consumer = _Consumer()
        assert inst.register_consumer("G", consumer)
        assert {"route", "heartbeat", "persist", "rebalance"} <= _loops(cid)
        inst.rebalance_immediately()
        wait_until(lambda: consumer.rebalances > 0, 5, "a rebalance round")
        inst.unregister_consumer("G")
    finally:
        inst.shutdown()
    assert _loops(cid) == set()
