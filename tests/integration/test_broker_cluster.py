"""Clusters with their own processes: two brokers, restarts, auto-creation off, clean exit."""

from __future__ import annotations

import json
import time
from collections.abc import Callable

import pytest

from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frame import RemotingCommand
from rocketq.protocol.headers import (
    GetMaxOffsetRequestHeader,
    QueryConsumerOffsetRequestHeader,
    QueryConsumerOffsetResponseHeader,
    UpdateConsumerOffsetRequestHeader,
)
from rocketq.testing.cluster import EmbeddedCluster
from tests.conftest import send_request

pytestmark = pytest.mark.integration


def send(cluster: EmbeddedCluster, addr: str, topic: str, queue_id: int = 0) -> RemotingCommand:
    request = send_request(topic, b"hello", queue_id=queue_id)
    return cluster.invoke(addr, request)


def max_offset(cluster: EmbeddedCluster, addr: str, topic: str, queue_id: int = 0) -> int:
    header = GetMaxOffsetRequestHeader(topic=topic, queue_id=queue_id)
    response = cluster.invoke(
        addr, RemotingCommand.request(RequestCode.GET_MAX_OFFSET, header.to_ext_fields())
    )
    assert response.code == ResponseCode.SUCCESS
    return int((response.ext_fields or {})["offset"])


def test_two_brokers_behind_one_name_server(
    tmp_path_factory: pytest.TempPathFactory, unique_name: Callable[..., str]
) -> None:
    topic = unique_name("t")
    cluster = EmbeddedCluster(brokers=2, store_dir=tmp_path_factory.mktemp("two"))
    with cluster:
        assert cluster.broker_names == ["broker-a", "broker-b"]
        info = cluster.cluster_info()
        assert set(info.cluster_addr_table["DefaultCluster"]) == {"broker-a", "broker-b"}
        cluster.create_topic(topic, 3)
        route = cluster.route(topic)
        assert route is not None
        assert sorted(q.broker_name or "" for q in route.queue_datas) == ["broker-a", "broker-b"]
        addrs = {b.broker_name: b.broker_addrs[0] for b in route.broker_datas}
        assert sorted(addrs.values()) == sorted(cluster.broker_addrs)
        for addr in cluster.broker_addrs:
            response = send(cluster, addr, topic, 2)
            assert response.code == ResponseCode.SUCCESS, response.remark
            assert max_offset(cluster, addr, topic, 2) == 1
    assert cluster.exit_codes == {"broker-a": 0, "broker-b": 0, "namesrv": 0}


def test_restart_keeps_offsets_and_messages(
    tmp_path_factory: pytest.TempPathFactory, unique_name: Callable[..., str]
) -> None:
    topic, group = unique_name("t"), unique_name("g")
    cluster = EmbeddedCluster(
        store_dir=tmp_path_factory.mktemp("restart"), broker_conf={"autoCreateTopicEnable": "false"}
    )
    with cluster:
        addr = cluster.broker_addrs[0]
        # auto-creation off: no TBW102, sending to a missing topic fails
        response = send(cluster, addr, unique_name("missing"))
        assert response.code == ResponseCode.TOPIC_NOT_EXIST, response.remark
        assert cluster.route("TBW102") is None
        cluster.create_topic(topic, 1)
        assert send(cluster, addr, topic).code == ResponseCode.SUCCESS
        update = UpdateConsumerOffsetRequestHeader(
            consumer_group=group, topic=topic, queue_id=0, commit_offset=1
        )
        request = RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, update.to_ext_fields())
        assert cluster.invoke(addr, request).code == ResponseCode.SUCCESS

        cluster.restart_broker(0)  # SIGTERM (persist) + start on the same store and ports
        assert cluster.exit_codes["broker-a"] == 0
        assert cluster.broker_addrs[0] == addr
        cluster.wait_route(topic, 1)
        assert max_offset(cluster, addr, topic) == 1
        query = QueryConsumerOffsetRequestHeader(consumer_group=group, topic=topic, queue_id=0)
        response = cluster.invoke(
            addr, RemotingCommand.request(RequestCode.QUERY_CONSUMER_OFFSET, query.to_ext_fields())
        )
        assert QueryConsumerOffsetResponseHeader.from_ext_fields(response.ext_fields).offset == 1
        offsets = json.loads(
            (cluster.store_dir / "broker-a" / "config" / "consumerOffset.json")
            .read_text()
            .replace("{0:", '{"0":')
        )
        assert offsets["offsetTable"][f"{topic}@{group}"] == {"0": 1}

        # a crash (SIGKILL) loses nothing that was flushed: the message is still there
        cluster.kill_broker(0)
        cluster.restart_broker(0)
        assert max_offset(cluster, addr, topic) == 1
    assert cluster.exit_codes["broker-a"] == 0


def test_delayed_message_is_delivered(
    embedded_cluster: EmbeddedCluster, unique_name: Callable[..., str]
) -> None:
    """The broker runs the delay-level service: DELAY=1 (1 s) reaches the real topic."""
    c = embedded_cluster
    topic = unique_name("t")
    c.create_topic(topic, 1)
    addr = c.broker_addrs[0]
    response = c.invoke(addr, send_request(topic, b"x", properties="DELAY\x011\x02WAIT\x01true"))
    assert response.code == ResponseCode.SUCCESS, response.remark
    assert max_offset(c, addr, topic) == 0  # parked in SCHEDULE_TOPIC_XXXX
    deadline = time.monotonic() + 10
    while max_offset(c, addr, topic) == 0 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert max_offset(c, addr, topic) == 1
