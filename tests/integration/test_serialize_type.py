"""ROCKETMQ binary request headers against a real rocketq name server and broker.

What a Java 4.9.7 server does with a ROCKETMQ-serialized request (``NettyRemotingAbstract``:
the processor callback stamps the request's ``serializeTypeCurrentRPC`` on the answer; answers
written outside that callback use the server default, JSON): the name server and the broker
answer in ROCKETMQ, a pull held by the long-polling service is answered in JSON when it
expires or is woken (``PullMessageProcessor.executeRequestWhenWakeup``; golden
binary_header.jsonl seq 29). And a client configured with ``serialize_type=ROCKETMQ`` sends,
consumes (through such JSON wake-ups) and keeps every property.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable

import pytest

from rocketq.client import (
    ClientConfig,
    ConsumeConcurrentlyStatus,
    ConsumeFromWhere,
    Message,
    Producer,
    ProducerConfig,
    PushConsumer,
    PushConsumerConfig,
)
from rocketq.client.impl.pull_api_wrapper import build_pull_sys_flag
from rocketq.protocol.codes import RequestCode, ResponseCode, SerializeType
from rocketq.protocol.frame import RemotingCommand
from rocketq.protocol.headers import PullMessageRequestHeader
from rocketq.protocol.message import MessageExt
from rocketq.testing.cluster import EmbeddedCluster
from rocketq.testing.waits import wait_until

pytestmark = pytest.mark.integration

BINARY = SerializeType.ROCKETMQ
FAST = ClientConfig(poll_name_server_interval_ms=1000, rebalance_interval_ms=2000, serialize_type=BINARY)


def _pull(cluster: EmbeddedCluster, topic: str, offset: int, hold_ms: int) -> RemotingCommand:
    header = PullMessageRequestHeader(
        consumer_group="ser_reader",
        topic=topic,
        queue_id=0,
        queue_offset=offset,
        max_msg_nums=32,
        sys_flag=build_pull_sys_flag(commit_offset=False, suspend=hold_ms > 0, subscription=True),
        commit_offset=0,
        suspend_timeout_millis=hold_ms,
        subscription="*",
        sub_version=0,
        expression_type="TAG",
    )
    request = RemotingCommand.request(
        RequestCode.PULL_MESSAGE, header.to_ext_fields(serialize_type=BINARY), serialize_type=BINARY
    )
    return cluster.invoke(cluster.broker_addrs[0], request, timeout_ms=10_000)


def test_servers_answer_binary_requests_in_binary_except_the_held_pull(
    embedded_cluster: EmbeddedCluster, unique_name: Callable[..., str]
) -> None:
    cluster = embedded_cluster
    topic = unique_name("ser")
    cluster.create_topic(topic, 1)
    route = RemotingCommand.request(
        RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic}, serialize_type=BINARY
    )
    answer = cluster.invoke(cluster.namesrv_addr, route)
    assert (answer.code, answer.serialize_type) == (ResponseCode.SUCCESS, BINARY)
    # nothing to read, no suspend: the processor's own answer, in the request's type
    empty = _pull(cluster, topic, 0, hold_ms=0)
    assert (empty.code, empty.serialize_type) == (ResponseCode.PULL_NOT_FOUND, BINARY)
    # held, then expired: answered by the hold service, in the server default
    expired = _pull(cluster, topic, 0, hold_ms=300)
    assert (expired.code, expired.serialize_type) == (ResponseCode.PULL_NOT_FOUND, SerializeType.JSON)
    # a message there: the processor's answer again
    with Producer(
        config=ProducerConfig(producer_group=unique_name("pg")),
        namesrv_addr=cluster.namesrv_addr,
        client_config=dataclasses.replace(FAST, instance_name=unique_name("i")),
    ) as producer:
        producer.send(Message(topic, b"one"))
    found = _pull(cluster, topic, 0, hold_ms=300)
    assert (found.code, found.serialize_type) == (ResponseCode.SUCCESS, BINARY)
    assert found.ext_fields is not None and found.ext_fields["nextBeginOffset"] == "1"


def test_a_binary_client_sends_and_consumes_through_held_pulls(
    embedded_cluster: EmbeddedCluster, unique_name: Callable[..., str]
) -> None:
    cluster = embedded_cluster
    topic = unique_name("ser")
    cluster.create_topic(topic, 2)
    got: list[MessageExt] = []
    lock = threading.Lock()

    def listener(msgs: list[MessageExt], ctx: object) -> ConsumeConcurrentlyStatus:
        with lock:
            got.extend(msgs)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    consumer = PushConsumer(
        config=PushConsumerConfig(
            consumer_group=unique_name("cg"), consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
        ),
        namesrv_addr=cluster.namesrv_addr,
        client_config=dataclasses.replace(FAST, instance_name=unique_name("c")),
    )
    consumer.subscribe(topic, "*")
    consumer.register_message_listener(listener)
    consumer.start()
    try:
        with Producer(
            config=ProducerConfig(producer_group=unique_name("pg")),
            namesrv_addr=cluster.namesrv_addr,
            client_config=dataclasses.replace(FAST, instance_name=unique_name("p")),
        ) as producer:
            # the consumer's pulls are held by now (empty queues): each send wakes one, whose
            # answer comes back in JSON to this ROCKETMQ client
            wait_until(lambda: len(consumer.assigned_queues(topic)) == 2, timeout_s=20)
            sent = []
            for i in range(6):
                msg = Message(topic, f"body-{i}".encode(), tags="TagA", keys=f"k{i}")
                msg.put_user_property("colour", "blü\u00e9")
                sent.append(producer.send(msg).msg_id)
                wait_until(lambda n=i + 1: len(got) >= n, timeout_s=20)
        with lock:
            by_id = {m.msg_id: m for m in got}
        assert sorted(by_id) == sorted(sent)
        for m in by_id.values():
            assert (m.tags, m.properties.get("colour")) == ("TagA", "blü\u00e9")
            assert list(m.keys) == [f"k{m.body.decode().removeprefix('body-')}"]
    finally:
        consumer.shutdown()
