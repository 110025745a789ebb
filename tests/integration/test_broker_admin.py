"""Topic and group administration, offsets by time and runtime info against a real broker."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from rocketq.protocol import fastjson
from rocketq.protocol.bodies import SubscriptionGroupConfig
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frame import RemotingCommand
from rocketq.protocol.headers import (
    CreateTopicRequestHeader,
    DeleteSubscriptionGroupRequestHeader,
    DeleteTopicFromNamesrvRequestHeader,
    DeleteTopicRequestHeader,
    GetMaxOffsetRequestHeader,
    GetMinOffsetRequestHeader,
    SearchOffsetRequestHeader,
)
from rocketq.testing.cluster import ClusterError, EmbeddedCluster

pytestmark = pytest.mark.integration


def call(
    cluster: EmbeddedCluster, code: int, ext: dict[str, str] | None = None, body: bytes = b""
) -> RemotingCommand:
    return cluster.invoke(cluster.broker_addrs[0], RemotingCommand.request(code, ext, body))


def create(cluster: EmbeddedCluster, topic: str, queues: int = 4, perm: int = 6) -> RemotingCommand:
    header = CreateTopicRequestHeader(
        topic=topic,
        default_topic="TBW102",
        read_queue_nums=queues,
        write_queue_nums=queues,
        perm=perm,
        topic_filter_type="SINGLE_TAG",
        topic_sys_flag=0,
        order=False,
    )
    return call(cluster, RequestCode.UPDATE_AND_CREATE_TOPIC, header.to_ext_fields())


def topic_table(cluster: EmbeddedCluster) -> dict[str, object]:
    response = call(cluster, RequestCode.GET_ALL_TOPIC_CONFIG)
    assert response.code == ResponseCode.SUCCESS and response.ext_fields == {}
    obj = fastjson.loads(response.body)
    assert isinstance(obj, dict) and set(obj) == {"dataVersion", "topicConfigTable"}
    table = obj["topicConfigTable"]
    assert isinstance(table, dict)
    return {str(k): v for k, v in table.items()}


def test_create_update_delete_topic(
    embedded_cluster: EmbeddedCluster, unique_name: Callable[..., str]
) -> None:
    c = embedded_cluster
    topic = unique_name("t")
    response = create(c, topic, 4)
    # golden admin.jsonl: SUCCESS that keeps "not set any response code", no extFields
    assert (response.code, response.remark, response.ext_fields) == (0, "not set any response code", None)
    # registered before the answer: the route exists right away
    route = c.route(topic)
    assert route is not None and route.queue_datas[0].write_queue_nums == 4
    assert topic in topic_table(c)
    # update to 8 queues, read-only
    assert create(c, topic, 8, perm=4).code == ResponseCode.SUCCESS
    route = c.route(topic)
    assert route is not None
    assert (route.queue_datas[0].write_queue_nums, route.queue_datas[0].perm) == (8, 4)
    # delete in the broker (config + consume queues), then in the name server, like mqadmin deleteTopic
    response = call(
        c, RequestCode.DELETE_TOPIC_IN_BROKER, DeleteTopicRequestHeader(topic=topic).to_ext_fields()
    )
    assert (response.code, response.remark) == (0, None)
    assert topic not in topic_table(c)
    request = RemotingCommand.request(
        RequestCode.DELETE_TOPIC_IN_NAMESRV, DeleteTopicFromNamesrvRequestHeader(topic=topic).to_ext_fields()
    )
    assert c.invoke(c.namesrv_addr, request).code == ResponseCode.SUCCESS
    assert c.route(topic) is None


@pytest.mark.parametrize(
    ("topic", "remark"),
    [
        ("bad topic", "The specified topic contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"),
        ("x" * 128, "The specified topic is longer than topic max length."),
        ("TBW102", "The topic[TBW102] is conflict with system topic."),
        ("SCHEDULE_TOPIC_XXXX", "The topic[SCHEDULE_TOPIC_XXXX] is conflict with system topic."),
        ("broker-a", "The topic[broker-a] is conflict with system topic."),
    ],
)
def test_create_topic_validation(embedded_cluster: EmbeddedCluster, topic: str, remark: str) -> None:
    response = create(embedded_cluster, topic)
    assert (response.code, response.remark) == (ResponseCode.SYSTEM_ERROR, remark)


def test_offset_queries_on_an_empty_queue(
    embedded_cluster: EmbeddedCluster, unique_name: Callable[..., str]
) -> None:
    c = embedded_cluster
    topic = unique_name("t")
    c.create_topic(topic, 2)
    for code, header in (
        (RequestCode.GET_MAX_OFFSET, GetMaxOffsetRequestHeader(topic=topic, queue_id=1)),
        (RequestCode.GET_MIN_OFFSET, GetMinOffsetRequestHeader(topic=topic, queue_id=1)),
        (
            RequestCode.SEARCH_OFFSET_BY_TIMESTAMP,
            SearchOffsetRequestHeader(topic=topic, queue_id=1, timestamp=1),
        ),
    ):
        response = call(c, code, header.to_ext_fields())
        assert (response.code, response.ext_fields) == (0, {"offset": "0"})
    response = call(c, RequestCode.GET_EARLIEST_MSG_STORETIME, {"topic": topic, "queueId": "0"})
    assert response.code == 0 and response.ext_fields is not None and "timestamp" in response.ext_fields
    response = call(c, RequestCode.GET_TOPIC_STATS_INFO, {"topic": topic})
    assert response.code == 0
    stats = fastjson.loads(response.body)
    assert isinstance(stats, dict) and len(stats["offsetTable"]) == 2


def test_subscription_group_crud(embedded_cluster: EmbeddedCluster, unique_name: Callable[..., str]) -> None:
    c = embedded_cluster
    group = unique_name("g")
    sgc = SubscriptionGroupConfig(group_name=group, retry_max_times=3, consume_broadcast_enable=False)
    response = call(c, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, None, sgc.to_json())
    assert (response.code, response.remark) == (0, None)
    response = call(c, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
    table = json.loads(response.body)["subscriptionGroupTable"]
    assert table[group]["retryMaxTimes"] == 3 and table[group]["consumeBroadcastEnable"] is False
    assert "TOOLS_CONSUMER" in table
    header = DeleteSubscriptionGroupRequestHeader(group_name=group, remove_offset=True)
    assert call(c, RequestCode.DELETE_SUBSCRIPTIONGROUP, header.to_ext_fields()).code == 0
    response = call(c, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
    assert group not in json.loads(response.body)["subscriptionGroupTable"]


def test_runtime_info_and_broker_config(embedded_cluster: EmbeddedCluster) -> None:
    c = embedded_cluster
    response = call(c, RequestCode.GET_BROKER_RUNTIME_INFO)
    assert response.code == 0 and response.ext_fields is None
    table = json.loads(response.body)["table"]
    # what `mqadmin clusterList` prints
    for key in (
        "brokerVersionDesc",
        "putTps",
        "getTransferedTps",
        "sendThreadPoolQueueHeadWaitTimeMills",
        "pageCacheLockTimeMills",
        "earliestMessageTimeStamp",
        "commitLogDiskRatio",
        "msgPutTotalTodayNow",
        "msgGetTotalTodayNow",
        "bootTimestamp",
        "runtime",
        "commitLogMaxOffset",
    ):
        assert key in table, key
    response = call(c, RequestCode.GET_BROKER_CONFIG)
    assert response.code == 0 and response.ext_fields is not None
    assert set(json.loads(response.ext_fields["version"])) == {"counter", "timestamp"}
    props = dict(line.split("=", 1) for line in response.body.decode().splitlines())
    assert props["brokerName"] == "broker-a"
    assert props["listenPort"] == c.broker_addrs[0].rsplit(":", 1)[1]
    assert props["mappedFileSizeCommitLog"] == str(16 * 1024 * 1024)


def test_cluster_create_topic_helper_rejects_bad_names(embedded_cluster: EmbeddedCluster) -> None:
    with pytest.raises(ClusterError):
        embedded_cluster.create_topic("bad topic")
