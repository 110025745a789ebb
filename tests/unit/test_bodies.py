"""Every JSON body of the golden captures, the broker's config files and the section 11 vectors."""

from __future__ import annotations

import json
import struct
import zlib
from collections import Counter
from functools import cache
from operator import itemgetter

import pytest

from rocketq.errors import IllegalArgumentError
from rocketq.protocol import bodies, heartbeat, route
from rocketq.protocol.bodies import (
    CMResult,
    Connection,
    ConsumeMessageDirectlyResult,
    ConsumerRunningInfo,
    ConsumeStats,
    ConsumeStatus,
    GetConsumerListByGroupResponseBody,
    LockBatchRequestBody,
    OffsetMovedEvent,
    OffsetWrapper,
    ProcessQueueInfo,
    SubscriptionGroupConfig,
)
from rocketq.protocol.codes import LanguageCode, RequestCode
from rocketq.protocol.fastjson import JsonBean, JsonError, dumps, loads
from rocketq.protocol.heartbeat import (
    ConsumeFromWhere,
    ConsumerData,
    ConsumeType,
    HeartbeatData,
    MessageModel,
    ProducerData,
    SubscriptionData,
    build_subscription_data,
)
from rocketq.protocol.java import hashmap_order, string_hash
from rocketq.protocol.message_queue import MessageQueue
from rocketq.protocol.route import (
    BrokerData,
    ClusterInfo,
    DataVersion,
    QueueData,
    RegisterBrokerBody,
    TopicConfig,
    TopicConfigSerializeWrapper,
    TopicFilterType,
    TopicList,
    TopicRouteData,
)
from tests.conftest import GoldenFrame, golden_dir, load_golden_frames

# (direction, request code) -> body class. "request" = the body of a request frame with
# that code, "response" = the body of the response to a request with that code.
BODY_CLASSES: dict[tuple[str, int], type[JsonBean]] = {
    ("request", RequestCode.HEART_BEAT): HeartbeatData,
    ("request", RequestCode.LOCK_BATCH_MQ): LockBatchRequestBody,
    ("response", RequestCode.LOCK_BATCH_MQ): bodies.LockBatchResponseBody,
    ("request", RequestCode.UNLOCK_BATCH_MQ): bodies.UnlockBatchRequestBody,
    ("request", RequestCode.REGISTER_BROKER): RegisterBrokerBody,
    ("response", RequestCode.GET_ROUTEINFO_BY_TOPIC): TopicRouteData,
    ("response", RequestCode.GET_BROKER_CLUSTER_INFO): ClusterInfo,
    ("response", RequestCode.GET_CONSUMER_LIST_BY_GROUP): GetConsumerListByGroupResponseBody,
    ("response", RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER): TopicList,
    ("response", RequestCode.GET_TOPIC_STATS_INFO): bodies.TopicStatsTable,
    ("response", RequestCode.GET_CONSUME_STATS): ConsumeStats,
    ("response", RequestCode.GET_CONSUMER_RUNNING_INFO): ConsumerRunningInfo,
    ("response", RequestCode.GET_CONSUMER_CONNECTION_LIST): bodies.ConsumerConnection,
    ("response", RequestCode.QUERY_TOPIC_CONSUME_BY_WHO): bodies.GroupList,
    ("response", RequestCode.GET_BROKER_RUNTIME_INFO): route.KVTable,
}

BODY_KEYS: list[tuple[str, int]] = sorted(BODY_CLASSES, key=itemgetter(1, 0))

# Bodies that are not JSON: message payloads and stored records.
RAW_BODIES = {
    ("request", RequestCode.SEND_MESSAGE),
    ("request", RequestCode.SEND_MESSAGE_V2),
    ("request", RequestCode.SEND_BATCH_MESSAGE),
    ("response", RequestCode.PULL_MESSAGE),
    ("response", RequestCode.QUERY_MESSAGE),
    ("response", RequestCode.VIEW_MESSAGE_BY_ID),
}

# Golden bodies whose re-encoding is *not* byte-identical, with the reason. Every modelled
# body currently re-encodes exactly: maps keep their parsed order, beans are sorted, the
# TreeMap/TreeSet tables of ConsumerRunningInfo are sorted both in Java and here, and the
# route answers (request version 407 >= 401) are re-encoded with standard_json=True.
NOT_BYTE_EXACT: dict[tuple[str, int], str] = {}


@cache
def golden_json_bodies() -> list[tuple[tuple[str, int], GoldenFrame]]:
    frames = load_golden_frames()
    requests = {(f.file, f.conn, f.opaque): f for f in frames if not f.is_response}
    out = []
    for f in frames:
        if not f.body:
            continue
        if f.is_response:
            req = requests.get((f.file, f.conn, f.opaque))
            assert req is not None, f"response without request: {f.file} seq {f.seq}"
            key = ("response", req.code)
        else:
            key = ("request", f.code)
        if key not in RAW_BODIES:
            out.append((key, f))
    return out


def test_every_golden_json_body_parses() -> None:
    seen = golden_json_bodies()
    assert len(seen) > 150
    for key, frame in seen:
        value = loads(frame.body or b"")
        assert isinstance(value, dict), (key, frame.file, frame.seq)
        # the tolerant reader is exact: dumping the parsed value gives the Java bytes back
        assert dumps(value).encode() == frame.body, (key, frame.file, frame.seq)


def test_golden_body_coverage() -> None:
    kinds = Counter(key for key, _ in golden_json_bodies())
    unmodelled = set(kinds) - set(BODY_CLASSES)
    assert not unmodelled, f"golden JSON bodies without a class: {unmodelled}"
    important = {
        ("response", RequestCode.GET_ROUTEINFO_BY_TOPIC),
        ("response", RequestCode.GET_BROKER_CLUSTER_INFO),
        ("request", RequestCode.HEART_BEAT),
        ("request", RequestCode.LOCK_BATCH_MQ),
        ("response", RequestCode.LOCK_BATCH_MQ),
        ("request", RequestCode.UNLOCK_BATCH_MQ),
        ("response", RequestCode.GET_CONSUMER_LIST_BY_GROUP),
        ("response", RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER),
        ("request", RequestCode.REGISTER_BROKER),
        ("response", RequestCode.GET_TOPIC_STATS_INFO),
        ("response", RequestCode.GET_CONSUME_STATS),
        ("response", RequestCode.GET_CONSUMER_RUNNING_INFO),
        ("response", RequestCode.GET_CONSUMER_CONNECTION_LIST),
        ("response", RequestCode.QUERY_TOPIC_CONSUME_BY_WHO),
        ("response", RequestCode.GET_BROKER_RUNTIME_INFO),
    }
    assert important <= set(kinds), f"missing from golden: {important - set(kinds)}"
    assert important <= set(BODY_CLASSES)


@pytest.mark.parametrize("key", BODY_KEYS, ids=str)
def test_golden_bodies_decode_and_reencode_exactly(key: tuple[str, int]) -> None:
    cls = BODY_CLASSES[key]
    frames = [f for k, f in golden_json_bodies() if k == key]
    assert frames, f"no golden body for {key}"
    for frame in frames:
        body = frame.body or b""
        obj = cls.from_json(body)
        assert isinstance(obj, cls)
        if isinstance(obj, TopicRouteData):
            header = json.loads(frame.header)
            standard = TopicRouteData.wants_standard_json(header["version"])
            assert standard  # version 407 clients get standard JSON
            out = obj.to_json(standard_json=standard)
        else:
            out = obj.to_json()
        if key in NOT_BYTE_EXACT:
            assert cls.from_json(out) == obj
        else:
            assert out == body, (frame.file, frame.seq)
        assert cls.from_json(out) == obj


def test_golden_values_decode_to_the_right_types() -> None:
    bodies_by_key = dict(golden_json_bodies())
    route_frame = bodies_by_key[("response", RequestCode.GET_ROUTEINFO_BY_TOPIC)]
    route_data = TopicRouteData.from_json(route_frame.body or b"")
    assert route_data.broker_datas[0].broker_addrs == {0: "127.0.0.1:10911"}
    assert route_data.broker_datas[0].master_addr() == "127.0.0.1:10911"

    cluster = ClusterInfo.from_json(
        bodies_by_key[("response", RequestCode.GET_BROKER_CLUSTER_INFO)].body or b""
    )
    assert cluster.broker_addr_table["broker-a"].broker_addrs == {0: "127.0.0.1:10911"}
    assert cluster.cluster_addr_table == {"DefaultCluster": ["broker-a"]}

    stats = ConsumeStats.from_json(bodies_by_key[("response", RequestCode.GET_CONSUME_STATS)].body or b"")
    assert stats.consume_tps == pytest.approx(1 / 30)
    wrapper = stats.offset_table[MessageQueue("GoldenPushTopic", "broker-a", 1)]
    assert (wrapper.broker_offset, wrapper.consumer_offset) == (4, 4)
    assert stats.compute_total_diff() == 0

    info = ConsumerRunningInfo.from_json(
        bodies_by_key[("response", RequestCode.GET_CONSUMER_RUNNING_INFO)].body or b""
    )
    pq = info.mq_table[MessageQueue("GoldenAdminTopic", "broker-a", 2)]
    assert pq.locked is True
    assert pq.dropped is False
    assert info.properties[ConsumerRunningInfo.PROP_CONSUME_TYPE] == "CONSUME_PASSIVELY"
    assert info.status_table["GoldenAdminTopic"].consume_ok_tps == 0.0

    conn = bodies.ConsumerConnection.from_json(
        bodies_by_key[("response", RequestCode.GET_CONSUMER_CONNECTION_LIST)].body or b""
    )
    assert conn.connection_set[0].language is LanguageCode.JAVA
    assert conn.consume_from_where is ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
    assert conn.message_model is MessageModel.CLUSTERING

    register = RegisterBrokerBody.from_json(
        bodies_by_key[("request", RequestCode.REGISTER_BROKER)].body or b""
    )
    table = register.topic_config_serialize_wrapper.topic_config_table
    assert table["SCHEDULE_TOPIC_XXXX"].read_queue_nums == 18
    assert table["SCHEDULE_TOPIC_XXXX"].topic_filter_type is TopicFilterType.SINGLE_TAG


def test_golden_push_heartbeat_matches_filter_api() -> None:
    hb = next(
        HeartbeatData.from_json(f.body or b"")
        for k, f in golden_json_bodies()
        if k == ("request", RequestCode.HEART_BEAT) and b"TagA || TagB" in (f.body or b"")
    )
    (consumer,) = hb.consumer_data_set
    assert consumer.consume_type is ConsumeType.CONSUME_PASSIVELY
    sub = next(s for s in consumer.subscription_data_set if s.sub_string == "TagA || TagB")
    built = build_subscription_data(sub.topic or "", "TagA || TagB", sub_version=sub.sub_version)
    assert built == sub
    assert built.code_set == [2598919, 2598920]
    retry = next(s for s in consumer.subscription_data_set if s.sub_string == "*")
    assert build_subscription_data(retry.topic or "", None, sub_version=retry.sub_version) == retry


# --- broker config files (fastjson PrettyFormat) -----------------------------------------------

STORE_FILES: dict[str, type[JsonBean]] = {
    "consumerOffset.json": bodies.ConsumerOffsetSerializeWrapper,
    "topics.json": TopicConfigSerializeWrapper,
    "subscriptionGroup.json": bodies.SubscriptionGroupWrapper,
    "delayOffset.json": bodies.DelayOffsetSerializeWrapper,
}


@pytest.mark.parametrize("name", sorted(STORE_FILES))
def test_store_files_round_trip_pretty(name: str) -> None:
    raw = (golden_dir() / "store" / name).read_bytes()
    assert dumps(loads(raw), pretty=True).encode() == raw
    obj = STORE_FILES[name].from_json(raw)
    assert dumps(obj, pretty=True).encode() == raw
    assert STORE_FILES[name].from_json(obj.to_json()) == obj


def test_store_file_values() -> None:
    offsets = bodies.ConsumerOffsetSerializeWrapper.from_json(
        (golden_dir() / "store" / "consumerOffset.json").read_bytes()
    )
    assert offsets.offset_table["GoldenOrderTopic@GoldenOrderGroup"] == {0: 4, 1: 4, 2: 0, 3: 0}
    delay = bodies.DelayOffsetSerializeWrapper.from_json(
        (golden_dir() / "store" / "delayOffset.json").read_bytes()
    )
    assert delay.offset_table == {3: 2}
    groups = bodies.SubscriptionGroupWrapper.from_json(
        (golden_dir() / "store" / "subscriptionGroup.json").read_bytes()
    )
    assert groups.subscription_group_table["GoldenBinaryGroup"] == SubscriptionGroupConfig(
        group_name="GoldenBinaryGroup"
    )
    assert groups.data_version == DataVersion(counter=5, timestamp=1795308113411)


def test_offset_moved_event_bodies_in_messages() -> None:
    messages = json.loads((golden_dir() / "store" / "MESSAGES.json").read_text())["messages"]
    events = [m["body"] for m in messages if m["topic"] == "OFFSET_MOVED_EVENT"]
    assert len(events) == 2
    for text in events:
        event = OffsetMovedEvent.from_json(text)
        assert event.to_json() == text.encode()
    assert OffsetMovedEvent.from_json(events[0]) == OffsetMovedEvent(
        consumer_group="GoldenPullGroup",
        message_queue=MessageQueue("GoldenPullTopic", "broker-a", 0),
        offset_request=1000,
        offset_new=5,
    )


# --- section 11 vectors (Java-produced JSON, exact bytes) ------------------------------------


def test_vector_heartbeat() -> None:
    hb = HeartbeatData(
        client_id="10.0.0.5@12345#99",
        consumer_data_set=[
            ConsumerData(
                group_name="G",
                consume_type=ConsumeType.CONSUME_PASSIVELY,
                message_model=MessageModel.CLUSTERING,
                consume_from_where=ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET,
                subscription_data_set=[
                    build_subscription_data("T", "TagA || TagB", sub_version=1700000000000)
                ],
            )
        ],
        producer_data_set=[ProducerData(group_name="CLIENT_INNER_PRODUCER")],
    )
    expected = (
        b'{"clientID":"10.0.0.5@12345#99","consumerDataSet":[{"consumeFromWhere":"CONSUME_FROM_LAST_OFFSET",'
        b'"consumeType":"CONSUME_PASSIVELY","groupName":"G","messageModel":"CLUSTERING","subscriptionDataSet":'
        b'[{"classFilterMode":false,"codeSet":[2598919,2598920],"expressionType":"TAG","subString":"TagA || TagB",'
        b'"subVersion":1700000000000,"tagsSet":["TagA","TagB"],"topic":"T"}],"unitMode":false}],'
        b'"producerDataSet":[{"groupName":"CLIENT_INNER_PRODUCER"}]}'
    )
    assert hb.to_json() == expected
    assert HeartbeatData.from_json(expected) == hb


def _vector_route(addrs: dict[int, str]) -> TopicRouteData:
    return TopicRouteData(
        broker_datas=[BrokerData(broker_addrs=addrs, broker_name="broker-a", cluster="DefaultCluster")],
        queue_datas=[
            QueueData(broker_name="broker-a", perm=6, read_queue_nums=4, topic_sys_flag=0, write_queue_nums=4)
        ],
    )


def test_vector_route_default_and_standard() -> None:
    route_data = _vector_route({0: "10.0.0.1:10911"})
    default = (
        b'{"brokerDatas":[{"brokerAddrs":{0:"10.0.0.1:10911"},"brokerName":"broker-a","cluster":"DefaultCluster"}],'
        b'"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,'
        b'"topicSysFlag":0,"writeQueueNums":4}]}'
    )
    assert route_data.to_json() == default
    assert route_data.to_json(standard_json=True) == default.replace(b"{0:", b'{"0":')
    assert TopicRouteData.from_json(default) == route_data
    assert TopicRouteData.from_json(default.replace(b"{0:", b'{"0":')) == route_data


def test_route_standard_json_sorts_maps_and_escapes() -> None:
    route_data = _vector_route({1: "slave", 0: "master"})
    route_data.filter_server_table = {"b": ["x"], "a": []}
    route_data.order_topic_conf = "broker-ä:4"
    std = route_data.to_json(standard_json=True)
    assert b'"brokerAddrs":{"0":"master","1":"slave"}' in std
    assert b'"filterServerTable":{"a":[],"b":["x"]}' in std
    assert b'"orderTopicConf":"broker-\\u00E4:4"' in std
    plain = route_data.to_json()
    assert b'"brokerAddrs":{1:"slave",0:"master"}' in plain
    assert "broker-ä:4".encode() in plain
    assert TopicRouteData.from_json(std) == TopicRouteData.from_json(plain)


def test_wants_standard_json() -> None:
    assert not TopicRouteData.wants_standard_json(400)
    assert TopicRouteData.wants_standard_json(401)
    assert TopicRouteData.wants_standard_json(409)
    assert TopicRouteData.wants_standard_json(100, accept_standard_json_only=True)
    assert not TopicRouteData.wants_standard_json(100, accept_standard_json_only=False)


def test_cluster_info_always_bare_keys() -> None:
    info = ClusterInfo(
        broker_addr_table={
            "broker-a": BrokerData(
                cluster="DefaultCluster", broker_name="broker-a", broker_addrs={0: "ip:10911"}
            )
        },
        cluster_addr_table={"DefaultCluster": ["broker-a"]},
    )
    assert info.to_json() == (
        b'{"brokerAddrTable":{"broker-a":{"brokerAddrs":{0:"ip:10911"},"brokerName":"broker-a",'
        b'"cluster":"DefaultCluster"}},"clusterAddrTable":{"DefaultCluster":["broker-a"]}}'
    )


def test_vector_lock_body() -> None:
    body = LockBatchRequestBody(
        client_id="cid", consumer_group="G", mq_set=[MessageQueue("T", "broker-a", 0)]
    )
    expected = (
        b'{"clientId":"cid","consumerGroup":"G","mqSet":[{"brokerName":"broker-a","queueId":0,"topic":"T"}]}'
    )
    assert body.to_json() == expected
    assert LockBatchRequestBody.from_json(expected) == body
    response = bodies.LockBatchResponseBody(lock_ok_mq_set=body.mq_set)
    assert response.to_json() == b'{"lockOKMQSet":[{"brokerName":"broker-a","queueId":0,"topic":"T"}]}'


def test_vector_consume_stats() -> None:
    stats = ConsumeStats(
        offset_table={
            MessageQueue("T", "broker-a", 0): OffsetWrapper(
                broker_offset=10, consumer_offset=7, last_timestamp=1700000000000
            )
        }
    )
    expected = (
        b'{"consumeTps":0.0,"offsetTable":{{"brokerName":"broker-a","queueId":0,"topic":"T"}:'
        b'{"brokerOffset":10,"consumerOffset":7,"lastTimestamp":1700000000000}}}'
    )
    assert stats.to_json() == expected
    assert ConsumeStats.from_json(expected) == stats
    assert stats.compute_total_diff() == 3


def test_vector_consumer_running_info() -> None:
    info = ConsumerRunningInfo(
        mq_table={MessageQueue("T", "broker-a", 0): ProcessQueueInfo()},
        properties={ConsumerRunningInfo.PROP_CONSUME_TYPE: "CONSUME_PASSIVELY"},
    )
    expected = (
        b'{"mqTable":{{"brokerName":"broker-a","queueId":0,"topic":"T"}:{"cachedMsgCount":0,'
        b'"cachedMsgMaxOffset":0,"cachedMsgMinOffset":0,"cachedMsgSizeInMiB":0,"commitOffset":0,'
        b'"droped":false,"lastConsumeTimestamp":0,"lastLockTimestamp":0,"lastPullTimestamp":0,'
        b'"locked":false,"transactionMsgCount":0,"transactionMsgMaxOffset":0,"transactionMsgMinOffset":0,'
        b'"tryUnlockTimes":0}},"properties":{"PROP_CONSUME_TYPE":"CONSUME_PASSIVELY"},"statusTable":{},'
        b'"subscriptionSet":[]}'
    )
    assert info.to_json() == expected
    assert ConsumerRunningInfo.from_json(expected) == info


def test_consumer_running_info_tree_collections_are_sorted() -> None:
    info = ConsumerRunningInfo(
        mq_table={
            MessageQueue("T", "b", 2): ProcessQueueInfo(commit_offset=2),
            MessageQueue("T", "a", 9): ProcessQueueInfo(commit_offset=1),
            MessageQueue("S", "b", 0): ProcessQueueInfo(commit_offset=0),
        },
        status_table={"z": ConsumeStatus(pull_rt=1.5), "a": ConsumeStatus()},
        subscription_set=[
            SubscriptionData(topic="T", sub_string="*", sub_version=1),
            SubscriptionData(topic="S", sub_string="x", sub_version=1),
        ],
    )
    again = ConsumerRunningInfo.from_json(info.to_json())
    assert [mq.queue_id for mq in again.mq_table] == [0, 9, 2]
    assert list(again.status_table) == ["a", "z"]
    assert [s.topic for s in again.subscription_set] == ["S", "T"]
    assert b'"pullRT":1.5' in info.to_json()


def test_vector_consumer_list_and_topic_list() -> None:
    assert GetConsumerListByGroupResponseBody(consumer_id_list=["c1", "c2"]).to_json() == (
        b'{"consumerIdList":["c1","c2"]}'
    )
    assert TopicList(topic_list=["T"]).to_json() == b'{"topicList":["T"]}'
    assert (
        TopicList(topic_list=["T"], broker_addr="a:1").to_json() == b'{"brokerAddr":"a:1","topicList":["T"]}'
    )


# --- other bodies ---------------------------------------------------------------------------


def test_map_keyed_bodies_write_bare_keys() -> None:
    mq = MessageQueue("T", "b", 1)
    key = b'{"brokerName":"b","queueId":1,"topic":"T"}'
    reset = bodies.ResetOffsetBody(offset_table={mq: 42})
    assert reset.to_json() == b'{"offsetTable":{' + key + b":42}}"
    assert bodies.ResetOffsetBody.from_json(reset.to_json()) == reset
    status = bodies.GetConsumerStatusBody(message_queue_table={mq: 1}, consumer_table={"c": {mq: 2}})
    assert (
        status.to_json() == b'{"consumerTable":{"c":{' + key + b':2}},"messageQueueTable":{' + key + b":1}}"
    )
    assert bodies.GetConsumerStatusBody.from_json(status.to_json()) == status
    correction = bodies.QueryCorrectionOffsetBody(correction_offsets={0: 5, 3: 7})
    assert correction.to_json() == b'{"correctionOffsets":{0:5,3:7}}'
    assert bodies.QueryCorrectionOffsetBody.from_json(correction.to_json()) == correction


def test_misc_bodies() -> None:
    result = ConsumeMessageDirectlyResult(consume_result=CMResult.CR_SUCCESS, spent_time_mills=3)
    assert (
        result.to_json()
        == b'{"autoCommit":true,"consumeResult":"CR_SUCCESS","order":false,"spentTimeMills":3}'
    )
    assert ConsumeMessageDirectlyResult.from_json(b'{"consumeResult":1}').consume_result is CMResult.CR_LATER
    check = bodies.CheckClientRequestBody(
        client_id="c",
        group="G",
        subscription_data=build_subscription_data("T", "a > 1", sub_version=5, expression_type="SQL92"),
    )
    assert check.to_json() == (
        b'{"clientId":"c","group":"G","subscriptionData":{"classFilterMode":false,"codeSet":[],'
        b'"expressionType":"SQL92","subString":"a > 1","subVersion":5,"tagsSet":[],"topic":"T"}}'
    )
    producers = bodies.ProducerConnection(
        connection_set=[
            Connection(client_id="c", client_addr="1.2.3.4:5", language=LanguageCode.PYTHON, version=409)
        ]
    )
    assert producers.to_json() == (
        b'{"connectionSet":[{"clientAddr":"1.2.3.4:5","clientId":"c","language":"PYTHON","version":409}]}'
    )
    stats = bodies.BrokerStatsData(stats_minute=bodies.BrokerStatsItem(sum=3, tps=1, avgpt=0.5))
    assert stats.to_json() == b'{"statsMinute":{"avgpt":0.5,"sum":3,"tps":1.0}}'
    assert bodies.BrokerStatsData.from_json(stats.to_json()) == stats
    assert SubscriptionGroupConfig(group_name="g").to_json() == (
        b'{"brokerId":0,"consumeBroadcastEnable":true,"consumeEnable":true,"consumeFromMinEnable":true,'
        b'"groupName":"g","notifyConsumerIdsChangedEnable":true,"retryMaxTimes":16,"retryQueueNums":1,'
        b'"whichBrokerWhenConsumeSlowly":1}'
    )


def test_topic_config_defaults_and_compact_form() -> None:
    config = TopicConfig(topic_name="T")
    assert config.to_json() == (
        b'{"order":false,"perm":6,"readQueueNums":16,"topicFilterType":"SINGLE_TAG","topicName":"T",'
        b'"topicSysFlag":0,"writeQueueNums":16}'
    )
    assert config.encode_compact() == "T 16 16 6 SINGLE_TAG"
    assert TopicConfig.decode_compact("T 16 16 6 SINGLE_TAG") == config
    for bad in ("T 16 16 6", "T x 16 6 SINGLE_TAG", "T 1 1 6 NO_SUCH", "T  1 1 6 SINGLE_TAG"):
        with pytest.raises(JsonError):
            TopicConfig.decode_compact(bad)


def _register_body() -> RegisterBrokerBody:
    wrapper = TopicConfigSerializeWrapper(
        data_version=DataVersion(timestamp=1795307988786, counter=3),
        topic_config_table={
            "A": TopicConfig(topic_name="A", read_queue_nums=4, write_queue_nums=2, perm=7, topic_sys_flag=1),
            "B": TopicConfig(topic_name="B", topic_filter_type=TopicFilterType.MULTI_TAG, order=True),
        },
    )
    return RegisterBrokerBody(topic_config_serialize_wrapper=wrapper, filter_server_list=["f:1"])


def test_register_broker_body_compressed_round_trip() -> None:
    body = _register_body()
    blob = body.encode(compress=True)
    raw = zlib.decompress(blob)
    version = b'{"counter":3,"timestamp":1795307988786}'
    assert raw.startswith(struct.pack(">i", len(version)) + version + struct.pack(">i", 2))
    assert (
        struct.pack(">i", 18) + b"A 4 2 7 SINGLE_TAG" + struct.pack(">i", 19) + b"B 16 16 6 MULTI_TAG" in raw
    )
    assert raw.endswith(struct.pack(">i", 7) + b'["f:1"]')
    decoded = RegisterBrokerBody.decode(blob, compressed=True)
    # the compact form loses topicSysFlag and order (TopicConfig.encode)
    assert decoded.topic_config_serialize_wrapper.topic_config_table == {
        "A": TopicConfig(topic_name="A", read_queue_nums=4, write_queue_nums=2, perm=7),
        "B": TopicConfig(topic_name="B", topic_filter_type=TopicFilterType.MULTI_TAG),
    }
    assert (
        decoded.topic_config_serialize_wrapper.data_version
        == body.topic_config_serialize_wrapper.data_version
    )
    assert decoded.filter_server_list == ["f:1"]
    assert body.encode(compress=False) == body.to_json()
    assert RegisterBrokerBody.decode(body.to_json()) == body


def test_register_broker_body_compressed_errors() -> None:
    blob = zlib.decompress(_register_body().encode(compress=True))
    for bad in (
        b"not zlib",
        zlib.compress(blob[:-3]),
        zlib.compress(blob[:10]),
        zlib.compress(b"\xff\xff\xff\xff"),
    ):
        with pytest.raises(JsonError):
            RegisterBrokerBody.decode(bad, compressed=True)


def test_data_version_next() -> None:
    version = DataVersion(timestamp=1, counter=1)
    version.next_version(now_ms=5)
    assert version == DataVersion(timestamp=5, counter=2)


# --- FilterAPI.buildSubscriptionData ------------------------------------------------------------


def test_build_subscription_two_tags() -> None:
    sub = build_subscription_data("T", "TagA || TagB", sub_version=7)
    assert sub.topic == "T"
    assert sub.sub_string == "TagA || TagB"  # original text kept
    assert sub.tags_set == ["TagA", "TagB"]
    assert sub.code_set == [2598919, 2598920]
    assert sub.sub_version == 7
    assert sub.expression_type == "TAG"
    assert sub.class_filter_mode is False


@pytest.mark.parametrize("expr", [None, "", "*"])
def test_build_subscription_all(expr: str | None) -> None:
    sub = build_subscription_data("T", expr, sub_version=1)
    assert sub.sub_string == "*"
    assert sub.tags_set == []
    assert sub.code_set == []


def test_build_subscription_whitespace_rules() -> None:
    sub = build_subscription_data("T", "  TagA \t||  || TagB ||\n", sub_version=1)
    assert sub.tags_set == ["TagA", "TagB"]
    # Java String.trim strips control characters too, but not Unicode spaces
    assert build_subscription_data("T", "\x01a\x1f||\u3000b", sub_version=1).tags_set == ["a", "\u3000b"]
    # " * " is not the wildcard in Java: it becomes the tag "*" (hash 42)
    star = build_subscription_data("T", " * ", sub_version=1)
    assert (star.sub_string, star.tags_set, star.code_set) == (" * ", ["*"], [42])
    # "a|||b" splits like Java's split("\\|\\|") and duplicates collapse like a HashSet
    assert build_subscription_data("T", "a|||b||a", sub_version=1).tags_set == ["a", "|b"]
    assert build_subscription_data("T", "tag-中文", sub_version=1).code_set == [-880646131]


def test_build_subscription_hashset_order() -> None:
    tags = [f"tag{i}" for i in range(20)]
    sub = build_subscription_data("T", " || ".join(tags), sub_version=1)
    assert sorted(sub.tags_set) == sorted(tags)
    assert sub.tags_set != tags  # HashSet order, not insertion order
    assert sub.tags_set == hashmap_order(tags)
    # HashSet<Integer> with 20 entries: 32 buckets, index = (h ^ h >>> 16) & 31
    buckets = [(h ^ ((h & 0xFFFFFFFF) >> 16)) & 31 for h in sub.code_set]
    assert buckets == sorted(buckets)
    assert sorted(sub.code_set) == sorted(string_hash(t) for t in tags)


def test_build_subscription_sql92() -> None:
    sub = build_subscription_data("T", "a > 5 AND b = 'x'", sub_version=3, expression_type="SQL92")
    assert (sub.sub_string, sub.expression_type, sub.tags_set, sub.code_set) == (
        "a > 5 AND b = 'x'",
        "SQL92",
        [],
        [],
    )
    assert (
        build_subscription_data("T", "x", expression_type=heartbeat.ExpressionType.SQL92).expression_type
        == "SQL92"
    )
    for empty in (None, ""):
        with pytest.raises(IllegalArgumentError):
            build_subscription_data("T", empty, expression_type="SQL92")


def test_build_subscription_default_version_is_now() -> None:
    import time

    before = time.time_ns() // 1_000_000
    sub = build_subscription_data("T", "*")
    assert before <= sub.sub_version <= time.time_ns() // 1_000_000 + 1


def test_heartbeat_ignores_5x_fields() -> None:
    hb = HeartbeatData.from_json(b'{"clientID":"c","heartbeatFingerprint":5,"withoutSub":true}')
    assert hb == HeartbeatData(client_id="c")
    assert hb.to_json() == b'{"clientID":"c","consumerDataSet":[],"producerDataSet":[]}'
