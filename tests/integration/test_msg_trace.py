"""Message trace end to end on real rocketq servers (issue #24).

The trace topic's contents are decoded here with an independent reading of
TraceDataEncoder's documented format (records closed by \\x02, fields split by \\x01;
Pub: type, time, region, group, topic, msgId, tags, keys, storeHost, bodyLength, cost,
msgType, offsetMsgId, success; SubBefore: type, time, region, group, requestId, msgId,
retryTimes, keys; SubAfter: type, requestId, msgId, cost, success, keys, contextCode,
time, group), not with rocketq's decoder.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator

import pytest

from rocketq.cli.main import main
from rocketq.client.api_results import PullStatus, SendStatus
from rocketq.client.config import ClientConfig
from rocketq.client.consumer.listener import ConsumeConcurrentlyContext, ConsumeConcurrentlyStatus
from rocketq.client.consumer.pull import PullConsumer
from rocketq.client.consumer.push import PushConsumer, PushConsumerConfig
from rocketq.client.producer import Producer
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frame import RemotingCommand
from rocketq.protocol.headers import CreateTopicRequestHeader
from rocketq.protocol.heartbeat import ConsumeFromWhere
from rocketq.protocol.message import Message, MessageExt
from rocketq.protocol.message_queue import MessageQueue
from rocketq.testing.cluster import EmbeddedCluster
from rocketq.testing.waits import wait_until

pytestmark = pytest.mark.integration

TRACE_TOPIC = "RMQ_SYS_TRACE_TOPIC"
FAST = ClientConfig(poll_name_server_interval_ms=1000, rebalance_interval_ms=2000)


@pytest.fixture(scope="module")
def trace_cluster() -> Iterator[EmbeddedCluster]:
    """A broker with traceTopicEnable (it creates RMQ_SYS_TRACE_TOPIC, one queue)."""
    with EmbeddedCluster(broker_conf={"traceTopicEnable": "true"}) as cluster:
        yield cluster


def _records(messages: list[MessageExt]) -> list[list[str]]:
    out: list[list[str]] = []
    for m in messages:
        for record in m.body.decode("utf-8").split("\x02"):
            if record:
                out.append(record.split("\x01"))
    return out


def _read_topic(cluster: EmbeddedCluster, consumer: PullConsumer, topic: str) -> list[MessageExt]:
    mq = MessageQueue(topic, cluster.broker_names[0], 0)
    got: list[MessageExt] = []
    offset = 0
    while True:
        result = consumer.pull(mq, "*", offset, 32)
        if result.pull_status is not PullStatus.FOUND:
            return got
        got.extend(result.msg_found_list)
        offset = result.next_begin_offset


def test_trace_of_100_messages_sent_and_consumed(
    trace_cluster: EmbeddedCluster, unique_name: Callable[..., str], capsys: pytest.CaptureFixture[str]
) -> None:
    topic, pgroup, cgroup = unique_name("trt"), unique_name("trpg"), unique_name("trcg")
    trace_cluster.create_topic(topic, 2)
    assert trace_cluster.route(TRACE_TOPIC) is not None  # traceTopicEnable created it
    producer = Producer(pgroup, namesrv_addr=trace_cluster.namesrv_addr, enable_msg_trace=True)
    consumed: set[str] = set()
    lock = threading.Lock()

    def listener(msgs: list[MessageExt], _ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        with lock:
            consumed.update(m.msg_id for m in msgs)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    consumer = PushConsumer(
        config=PushConsumerConfig(
            consumer_group=cgroup, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
        ),
        namesrv_addr=trace_cluster.namesrv_addr,
        client_config=FAST,
        enable_msg_trace=True,
    )
    consumer.subscribe(topic, "*")
    consumer.register_message_listener(listener)
    reader = PullConsumer(unique_name("trr"), namesrv_addr=trace_cluster.namesrv_addr)
    producer.start()
    consumer.start()
    reader.start()
    try:
        sent: dict[str, str] = {}
        for i in range(100):
            result = producer.send(Message(topic, f"b{i}".encode(), tags="TagT", keys=f"key{i}"))
            assert result.status is SendStatus.SEND_OK
            sent[result.msg_id] = result.offset_msg_id
        wait_until(lambda: set(sent) <= consumed, timeout_s=60, what="all 100 consumed")

        def complete() -> bool:
            kinds: dict[str, set[str]] = defaultdict(set)
            for rec in _records(_read_topic(trace_cluster, reader, TRACE_TOPIC)):
                msg_id = rec[2] if rec[0] == "SubAfter" else rec[5]
                kinds[msg_id].add(rec[0])
            return all(kinds[m] >= {"Pub", "SubBefore", "SubAfter"} for m in sent)

        wait_until(complete, timeout_s=30, what="pub and sub records of every message in the trace topic")
        trace_messages = _read_topic(trace_cluster, reader, TRACE_TOPIC)
        records = _records(trace_messages)
        pubs = {r[5]: r for r in records if r[0] == "Pub"}
        befores = {r[5]: r for r in records if r[0] == "SubBefore"}
        afters = {r[2]: r for r in records if r[0] == "SubAfter"}
        for msg_id, offset_msg_id in sent.items():
            pub = pubs[msg_id]
            assert len(pub) == 14
            assert pub[3] == pgroup and pub[4] == topic and pub[6] == "TagT"
            assert pub[7].startswith("key") and pub[2] == "DefaultRegion"
            assert pub[8] == trace_cluster.broker_addrs[0]  # the broker it was sent to
            assert int(pub[9]) == len(f"b{pub[7][3:]}") and int(pub[10]) >= 0
            assert pub[11] == "0" and pub[12] == offset_msg_id and pub[13] == "true"
            before, after = befores[msg_id], afters[msg_id]
            assert len(before) == 8 and before[3] == cgroup and before[6] == "0" and before[7] == pub[7]
            assert len(after) == 9 and after[1] == before[4]  # the same request id
            assert after[4] == "true" and after[6] == "0" and after[8] == cgroup  # SUCCESS ordinal 0
            assert int(after[7]) >= int(before[1]) >= int(pub[1])
        # each trace message is stored under its records' msgIds and keys
        some = next(iter(sent))
        assert any(some in m.get_property("KEYS").split(" ") for m in trace_messages)  # type: ignore[union-attr]

        capsys.readouterr()
        assert main(["message", "trace", "-i", some, "-n", trace_cluster.namesrv_addr]) == 0
        out = capsys.readouterr().out
        lines = out.splitlines()
        assert lines[0].split() == [
            "#Type",
            "#ProducerGroup",
            "#ClientHost",
            "#SendTime",
            "#CostTimes",
            "#Status",
        ]
        assert lines[1].split()[:2] == ["Pub", pgroup] and lines[1].split()[-1] == "success"
        assert lines[3].split()[:2] == ["#Type", "#ConsumerGroup"]
        assert lines[4].split()[:2] == ["Sub", cgroup] and lines[4].split()[-1] == "success"
        assert producer.trace_dispatcher is not None and producer.trace_dispatcher.dropped == 0
    finally:
        reader.shutdown()
        consumer.shutdown()
        producer.shutdown()


def _create_on(cluster: EmbeddedCluster, index: int, topic: str) -> None:
    header = CreateTopicRequestHeader(
        topic=topic,
        default_topic="TBW102",
        read_queue_nums=1,
        write_queue_nums=1,
        perm=6,
        topic_filter_type="SINGLE_TAG",
        topic_sys_flag=0,
        order=False,
    )
    request = RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, header.to_ext_fields())
    assert cluster.invoke(cluster.broker_addrs[index], request).code == ResponseCode.SUCCESS


def test_sends_succeed_with_the_trace_topics_broker_down(unique_name: Callable[..., str]) -> None:
    """The trace topic lives on broker-b only; with broker-b killed the user's sends to
    broker-a all succeed, none waits on trace, and the lost trace data is counted."""
    with EmbeddedCluster(brokers=2, broker_conf={"autoCreateTopicEnable": "false"}) as cluster:
        topic, trace_topic = unique_name("trd"), unique_name("trtopic")
        _create_on(cluster, 0, topic)
        _create_on(cluster, 1, trace_topic)
        wait_until(lambda: cluster.route(topic) is not None, what="route of the user topic")
        wait_until(lambda: cluster.route(trace_topic) is not None, what="route of the trace topic")
        producer = Producer(
            unique_name("trdpg"),
            namesrv_addr=cluster.namesrv_addr,
            enable_msg_trace=True,
            custom_trace_topic=trace_topic,
        )
        producer.start()
        try:
            producer.send(Message(topic, b"warm-up"))
            dispatcher = producer.trace_dispatcher
            assert dispatcher is not None
            wait_until(lambda: dispatcher.sent >= 1, timeout_s=20, what="trace reaches broker-b")
            cluster.kill_broker(1)
            start = time.monotonic()
            for i in range(200):
                assert producer.send(Message(topic, f"x{i}".encode())).status is SendStatus.SEND_OK
            elapsed = time.monotonic() - start
            assert elapsed < 20, elapsed
            wait_until(
                lambda: dispatcher.send_failures + dispatcher.dropped >= 1,
                timeout_s=30,
                what="the lost trace data counted",
            )
        finally:
            producer.shutdown()
