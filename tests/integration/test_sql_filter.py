"""SQL92 subscriptions end to end: a broker with enablePropertyFilter filters pulls (issue #24).

Expected deliveries are computed here from the properties each message was sent with,
in plain Python (not with rocketq.filter), so the broker's filter is checked against an
independent statement of the expression.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

import pytest

from rocketq.client import MessageSelector
from rocketq.client.config import ClientConfig, LitePullConsumerConfig
from rocketq.client.consumer.listener import ConsumeConcurrentlyContext, ConsumeConcurrentlyStatus
from rocketq.client.consumer.lite_pull import LitePullConsumer
from rocketq.client.consumer.push import PushConsumer, PushConsumerConfig
from rocketq.client.impl.pull_api_wrapper import build_pull_sys_flag
from rocketq.client.producer import Producer
from rocketq.errors import ClientError
from rocketq.filter import FilterParseError
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frame import RemotingCommand
from rocketq.protocol.headers import PullMessageRequestHeader
from rocketq.protocol.heartbeat import (
    ConsumeFromWhere,
    ConsumerData,
    ConsumeType,
    HeartbeatData,
    MessageModel,
    build_subscription_data,
)
from rocketq.protocol.message import Message, MessageExt, decode_records
from rocketq.protocol.message_queue import MessageQueue
from rocketq.testing.cluster import EmbeddedCluster
from rocketq.testing.waits import wait_until

pytestmark = pytest.mark.integration

FAST = ClientConfig(poll_name_server_interval_ms=1000, rebalance_interval_ms=2000)
SQL = "a BETWEEN 3 AND 5 AND region IN ('eu','us')"


@pytest.fixture(scope="module")
def filter_cluster() -> Iterator[EmbeddedCluster]:
    """A broker that serves SQL92 subscriptions (Java's default is off)."""
    with EmbeddedCluster(broker_conf={"enablePropertyFilter": "true"}) as cluster:
        yield cluster


def _properties(i: int) -> dict[str, str]:
    """Varied properties: numbers 0..7, a non-number, a missing a; regions incl. missing."""
    props: dict[str, str] = {}
    kind = i % 10
    if kind < 8:
        props["a"] = str(kind)
    elif kind == 8:
        props["a"] = "x"  # a number comparison on it fails: no match, no error
    regions = ("eu", "us", "ap", "EU", None)
    region = regions[(i // 10) % 5]
    if region is not None:
        props["region"] = region
    return props


def _expected(props: dict[str, str]) -> bool:
    a = props.get("a")
    return a is not None and a.isdigit() and 3 <= int(a) <= 5 and props.get("region") in ("eu", "us")


def _send_all(producer: Producer, topic: str, n: int) -> set[str]:
    wanted: set[str] = set()
    batch: list[Message] = []
    for i in range(n):
        props = _properties(i)
        if _expected(props):
            wanted.add(f"k{i}")
        batch.append(Message(topic, f"m{i}".encode(), keys=f"k{i}", properties=props))
        if len(batch) == 50:
            producer.send(batch)
            batch = []
    if batch:
        producer.send(batch)
    return wanted


def test_push_consumer_receives_exactly_the_matching_messages(
    filter_cluster: EmbeddedCluster, unique_name: Callable[..., str]
) -> None:
    topic, group = unique_name("sqlt"), unique_name("sqlg")
    filter_cluster.create_topic(topic, 4)
    producer = Producer(unique_name("pg"), namesrv_addr=filter_cluster.namesrv_addr)
    producer.start()
    received: list[str] = []
    lock = threading.Lock()

    def listener(msgs: list[MessageExt], _ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        with lock:
            received.extend(m.get_property("KEYS") or "" for m in msgs)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    consumer = PushConsumer(
        config=PushConsumerConfig(
            consumer_group=group,
            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
            consume_thread_min=1,
            consume_thread_max=1,  # one FIFO worker: a queue's sentinel is consumed last
        ),
        namesrv_addr=filter_cluster.namesrv_addr,
        client_config=FAST,
    )
    consumer.subscribe(topic, MessageSelector.by_sql(SQL))
    consumer.register_message_listener(listener)
    try:
        wanted = _send_all(producer, topic, 1000)
        assert 100 < len(wanted) < 500
        consumer.start()
        # one matching sentinel per queue, sent last: once all four are in, every earlier
        # message of every queue has been pulled and consumed
        sentinels = set()
        for q in range(4):
            key = f"sentinel{q}"
            sentinels.add(key)
            producer.send(
                Message(topic, b"s", keys=key, properties={"a": "4", "region": "us"}),
                queue=MessageQueue(topic, filter_cluster.broker_names[0], q),
            )
        wait_until(lambda: sentinels <= set(received), timeout_s=60, what="sentinels consumed")
        with lock:
            got = [k for k in received if not k.startswith("sentinel")]
        assert set(got) == wanted
        assert len(got) == len(wanted)
    finally:
        consumer.shutdown()
        producer.shutdown()


def test_lite_pull_consumer_with_sql_selector(
    filter_cluster: EmbeddedCluster, unique_name: Callable[..., str]
) -> None:
    topic, group = unique_name("sqll"), unique_name("sqllg")
    filter_cluster.create_topic(topic, 2)
    producer = Producer(unique_name("pg"), namesrv_addr=filter_cluster.namesrv_addr)
    producer.start()
    consumer = LitePullConsumer(
        namesrv_addr=filter_cluster.namesrv_addr,
        config=LitePullConsumerConfig(
            consumer_group=group, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
        ),
        client_config=FAST,
    )
    consumer.subscribe(topic, MessageSelector.by_sql(SQL))
    got: set[str] = set()
    try:
        wanted = _send_all(producer, topic, 200)
        consumer.start()

        def poll() -> bool:
            got.update(m.get_property("KEYS") or "" for m in consumer.poll(500))
            return got >= wanted

        wait_until(poll, timeout_s=60, what="lite pull got every matching message")
        assert got == wanted
    finally:
        consumer.shutdown()
        producer.shutdown()


def _pull(
    cluster: EmbeddedCluster,
    group: str,
    topic: str,
    expression: str | None,
    *,
    offset: int = 0,
    sub_version: int = 0,
) -> RemotingCommand:
    """A raw PULL_MESSAGE; ``expression`` None pulls with the group's registered subscription."""
    header = PullMessageRequestHeader(
        consumer_group=group,
        topic=topic,
        queue_id=0,
        queue_offset=offset,
        max_msg_nums=32,
        sys_flag=build_pull_sys_flag(commit_offset=False, suspend=False, subscription=expression is not None),
        commit_offset=0,
        suspend_timeout_millis=0,
        subscription=expression,
        sub_version=sub_version,
        expression_type="SQL92",
    )
    request = RemotingCommand.request(RequestCode.PULL_MESSAGE, header.to_ext_fields())
    return cluster.invoke(cluster.broker_addrs[0], request)


def _heartbeat(cluster: EmbeddedCluster, group: str, topic: str, expression: str, sub_version: int) -> None:
    sub = build_subscription_data(topic, expression, sub_version=sub_version, expression_type="SQL92")
    data = HeartbeatData(
        client_id=f"127.0.0.1@{group}",
        consumer_data_set=[
            ConsumerData(
                group_name=group,
                consume_type=ConsumeType.CONSUME_PASSIVELY,
                message_model=MessageModel.CLUSTERING,
                consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
                subscription_data_set=[sub],
            )
        ],
    )
    request = RemotingCommand.request(RequestCode.HEART_BEAT, body=data.to_json())
    assert cluster.invoke(cluster.broker_addrs[0], request).code == ResponseCode.SUCCESS


def _next_offset(response: RemotingCommand) -> int:
    return int((response.ext_fields or {})["nextBeginOffset"])


def test_pull_answers_and_codes(filter_cluster: EmbeddedCluster, unique_name: Callable[..., str]) -> None:
    """Offsets advance past filtered messages (DefaultMessageStore.getMessage counts every
    scanned unit) and the error codes of PullMessageProcessor for SQL92 subscriptions."""
    topic, group = unique_name("sqlp"), unique_name("sqlpg")
    filter_cluster.create_topic(topic, 1)
    producer = Producer(unique_name("pg"), namesrv_addr=filter_cluster.namesrv_addr)
    producer.start()
    mq = MessageQueue(topic, filter_cluster.broker_names[0], 0)
    try:
        for i in range(10):
            producer.send(Message(topic, b"x", properties={"a": str(i)}), queue=mq)
        none = _pull(filter_cluster, group, topic, "a > 100")
        assert none.code == ResponseCode.PULL_RETRY_IMMEDIATELY
        assert _next_offset(none) == 10
        some = _pull(filter_cluster, group, topic, "a >= 7")
        assert some.code == ResponseCode.SUCCESS
        assert [m.get_property("a") for m in decode_records(some.body or b"")] == ["7", "8", "9"]
        assert _next_offset(some) == 10
        later = _pull(filter_cluster, group, topic, "a = 1 OR a = 8", offset=2)
        assert [m.queue_offset for m in decode_records(later.body or b"")] == [8]
        assert _pull(filter_cluster, group, topic, "a >").code == ResponseCode.SUBSCRIPTION_PARSE_FAILED
        # no heartbeat yet: the broker knows no subscription of the group
        assert _pull(filter_cluster, group, topic, None).code == ResponseCode.SUBSCRIPTION_NOT_EXIST
        _heartbeat(filter_cluster, group, topic, "a < 2", 100)
        registered = _pull(filter_cluster, group, topic, None, sub_version=100)
        assert registered.code == ResponseCode.SUCCESS
        assert [m.get_property("a") for m in decode_records(registered.body or b"")] == ["0", "1"]
        stale = _pull(filter_cluster, group, topic, None, sub_version=101)
        assert stale.code == ResponseCode.SUBSCRIPTION_NOT_LATEST
        bad_group = unique_name("sqlbad")
        _heartbeat(filter_cluster, bad_group, topic, "a <", 100)  # does not compile
        assert _pull(filter_cluster, bad_group, topic, None).code == ResponseCode.FILTER_DATA_NOT_EXIST
    finally:
        producer.shutdown()


def test_default_broker_refuses_sql_subscriptions(
    embedded_cluster: EmbeddedCluster, unique_name: Callable[..., str]
) -> None:
    """enablePropertyFilter is off by default: CHECK_CLIENT_CONFIG fails the start (SYSTEM_ERROR)."""
    topic = unique_name("sqln")
    embedded_cluster.create_topic(topic, 1)
    consumer = PushConsumer(
        unique_name("sqlng"), namesrv_addr=embedded_cluster.namesrv_addr, client_config=FAST
    )
    consumer.subscribe(topic, MessageSelector.by_sql("a = 1"))
    consumer.register_message_listener(lambda _m, _c: ConsumeConcurrentlyStatus.CONSUME_SUCCESS)
    with pytest.raises(ClientError, match="does not support consumer to filter message by SQL92"):
        consumer.start()


def test_bad_sql_fails_at_subscribe() -> None:
    with pytest.raises(FilterParseError):
        MessageSelector.by_sql("a BETWEEN 5 AND 3")
