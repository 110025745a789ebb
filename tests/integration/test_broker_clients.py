"""Heartbeats, consumer lists, NOTIFY_CONSUMER_IDS_CHANGED and offsets against a real broker.

Uses the session's shared embedded cluster; every test uses its own group and topic names.
"""

from __future__ import annotations

import json
import queue
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frame import RemotingCommand
from rocketq.protocol.headers import (
    GetConsumerListByGroupRequestHeader,
    QueryConsumerOffsetRequestHeader,
    QueryConsumerOffsetResponseHeader,
    UnregisterClientRequestHeader,
    UpdateConsumerOffsetRequestHeader,
)
from rocketq.protocol.heartbeat import (
    ConsumeFromWhere,
    ConsumerData,
    ConsumeType,
    HeartbeatData,
    MessageModel,
    ProducerData,
    build_subscription_data,
)
from rocketq.remoting.client import RemotingClient
from rocketq.testing.cluster import EmbeddedCluster

pytestmark = pytest.mark.integration
TIMEOUT_MS = 5000


class Consumer:
    """A bare remoting client that heartbeats like a push consumer and records NOTIFYs."""

    def __init__(self, broker: str, client_id: str) -> None:
        self.broker = broker
        self.client_id = client_id
        self.notified: queue.Queue[str] = queue.Queue()
        self.client = RemotingClient(name=client_id, request_handler=self._on_request)
        self.client.start()

    def _on_request(self, request: RemotingCommand, addr: str) -> RemotingCommand | None:
        if request.code == RequestCode.NOTIFY_CONSUMER_IDS_CHANGED:
            self.notified.put(request.ext("consumerGroup") or "")
            assert request.is_oneway
        return None

    def call(self, code: int, ext: dict[str, str] | None = None, body: bytes = b"") -> RemotingCommand:
        return self.client.invoke_sync(self.broker, RemotingCommand.request(code, ext, body), TIMEOUT_MS)

    def heartbeat(self, group: str, topics: list[str], producer_group: str | None = None) -> RemotingCommand:
        data = HeartbeatData(
            client_id=self.client_id,
            consumer_data_set=[
                ConsumerData(
                    group_name=group,
                    consume_type=ConsumeType.CONSUME_PASSIVELY,
                    message_model=MessageModel.CLUSTERING,
                    consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
                    subscription_data_set=[build_subscription_data(t, "*") for t in topics],
                )
            ],
            producer_data_set=[ProducerData(group_name=producer_group)] if producer_group else [],
        )
        return self.call(RequestCode.HEART_BEAT, None, data.to_json())

    def consumer_list(self, group: str) -> RemotingCommand:
        ext = GetConsumerListByGroupRequestHeader(consumer_group=group).to_ext_fields()
        return self.call(RequestCode.GET_CONSUMER_LIST_BY_GROUP, ext)

    def expect_notify(self, group: str) -> None:
        assert self.notified.get(timeout=5) == group

    def close(self) -> None:
        self.client.close()


@contextmanager
def consumer(cluster: EmbeddedCluster, client_id: str) -> Iterator[Consumer]:
    c = Consumer(cluster.broker_addrs[0], client_id)
    try:
        yield c
    finally:
        c.close()


def ids(response: RemotingCommand) -> list[str]:
    assert response.code == ResponseCode.SUCCESS, response.remark
    return sorted(json.loads(response.body)["consumerIdList"])


def test_heartbeat_consumer_list_and_notify(
    embedded_cluster: EmbeddedCluster, unique_name: Callable[..., str]
) -> None:
    group, topic = unique_name("g"), unique_name("t")
    with consumer(embedded_cluster, "10.0.0.1@c1") as c1, consumer(embedded_cluster, "10.0.0.1@c2") as c2:
        response = c1.heartbeat(group, [topic, f"%RETRY%{group}"])
        assert response.code == ResponseCode.SUCCESS and response.ext_fields is None
        c1.expect_notify(group)
        assert ids(c1.consumer_list(group)) == ["10.0.0.1@c1"]
        # an unchanged heartbeat does not notify
        c1.heartbeat(group, [topic, f"%RETRY%{group}"])
        # a second consumer: both are notified
        c2.heartbeat(group, [topic, f"%RETRY%{group}"])
        c1.expect_notify(group)
        c2.expect_notify(group)
        assert c1.notified.empty()
        assert ids(c2.consumer_list(group)) == ["10.0.0.1@c1", "10.0.0.1@c2"]
        # the retry topic was created by the heartbeat
        route = embedded_cluster.wait_route(f"%RETRY%{group}", 1)
        assert route.queue_datas[0].perm == 6
        # c2's connection drops: removed at once, c1 is told
        c2.close()
        c1.expect_notify(group)
        assert ids(c1.consumer_list(group)) == ["10.0.0.1@c1"]
        # UNREGISTER_CLIENT: the group is gone
        ext = UnregisterClientRequestHeader(client_id="10.0.0.1@c1", consumer_group=group).to_ext_fields()
        response = c1.call(RequestCode.UNREGISTER_CLIENT, ext)
        assert response.code == ResponseCode.SUCCESS and response.ext_fields == {}
        response = c1.consumer_list(group)
        assert response.code == ResponseCode.SYSTEM_ERROR
        assert response.remark == f"no consumer for this group, {group}"


def test_offsets_round_trip(embedded_cluster: EmbeddedCluster, unique_name: Callable[..., str]) -> None:
    group, topic = unique_name("g"), unique_name("t")
    embedded_cluster.create_topic(topic, 2)
    with consumer(embedded_cluster, "10.0.0.1@off") as c:
        query = QueryConsumerOffsetRequestHeader(
            consumer_group=group, topic=topic, queue_id=1
        ).to_ext_fields()
        response = c.call(RequestCode.QUERY_CONSUMER_OFFSET, query)
        # golden caveat 7: no stored offset on a young queue -> SUCCESS 0, not QUERY_NOT_FOUND
        assert response.code == ResponseCode.SUCCESS
        assert QueryConsumerOffsetResponseHeader.from_ext_fields(response.ext_fields).offset == 0
        update = UpdateConsumerOffsetRequestHeader(
            consumer_group=group, topic=topic, queue_id=1, commit_offset=42
        ).to_ext_fields()
        response = c.call(RequestCode.UPDATE_CONSUMER_OFFSET, update)
        assert response.code == ResponseCode.SUCCESS and response.ext_fields == {}
        # oneway, as the Java client sends it
        update["commitOffset"] = "43"
        c.client.invoke_oneway(
            c.broker, RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, update, oneway=True)
        )
        for _ in range(100):
            response = c.call(RequestCode.QUERY_CONSUMER_OFFSET, query)
            if QueryConsumerOffsetResponseHeader.from_ext_fields(response.ext_fields).offset == 43:
                break
        assert QueryConsumerOffsetResponseHeader.from_ext_fields(response.ext_fields).offset == 43


def test_producer_heartbeat_and_unknown_code(
    embedded_cluster: EmbeddedCluster, unique_name: Callable[..., str]
) -> None:
    pgroup = unique_name("pg")
    with consumer(embedded_cluster, "10.0.0.1@p") as c:
        data = HeartbeatData(client_id="10.0.0.1@p", producer_data_set=[ProducerData(group_name=pgroup)])
        assert c.call(RequestCode.HEART_BEAT, None, data.to_json()).code == ResponseCode.SUCCESS
        response = c.call(RequestCode.GET_PRODUCER_CONNECTION_LIST, {"producerGroup": pgroup})
        assert response.code == ResponseCode.SUCCESS
        assert [x["clientId"] for x in json.loads(response.body)["connectionSet"]] == ["10.0.0.1@p"]
        response = c.call(4242)
        assert response.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
        assert response.remark == " request type 4242 not supported"
