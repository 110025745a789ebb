"""Bad input at the broker's send path gets the RocketMQ response code and loses nothing.

Frames are built by hand with the real header classes, so the client-side checks of the
producer (which would refuse these messages before sending) are bypassed.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frame import RemotingCommand
from rocketq.protocol.headers import GetMaxOffsetRequestHeader
from rocketq.testing.cluster import EmbeddedCluster
from tests.conftest import send_request

pytestmark = pytest.mark.integration


def _send(cluster: EmbeddedCluster, topic: str, body: bytes, queue_id: int = 0) -> RemotingCommand:
    request = send_request(topic, body, queue_id=queue_id, properties="TAGS\x01a")
    return cluster.invoke(cluster.broker_addrs[0], request)


def _max_offset(cluster: EmbeddedCluster, topic: str) -> int:
    header = GetMaxOffsetRequestHeader(topic=topic, queue_id=0)
    response = cluster.invoke(
        cluster.broker_addrs[0], RemotingCommand.request(RequestCode.GET_MAX_OFFSET, header.to_ext_fields())
    )
    return int(response.ext("offset", "-1") or -1)


def test_oversized_message_is_rejected_with_message_illegal(
    embedded_cluster: EmbeddedCluster, unique_name: Callable[..., str]
) -> None:
    topic = unique_name("T")
    embedded_cluster.create_topic(topic, 1)
    ok = _send(embedded_cluster, topic, b"x" * 1024)
    assert ok.code == ResponseCode.SUCCESS
    big = _send(embedded_cluster, topic, b"x" * (4 * 1024 * 1024 + 1))
    assert big.code == ResponseCode.MESSAGE_ILLEGAL
    assert big.remark and "illegal" in big.remark
    # nothing was stored for the refused message, and the queue keeps working
    assert _max_offset(embedded_cluster, topic) == 1
    assert _send(embedded_cluster, topic, b"y").code == ResponseCode.SUCCESS
    assert _max_offset(embedded_cluster, topic) == 2


@pytest.mark.parametrize(
    ("topic", "code", "remark"),
    [
        ("bad topic!", ResponseCode.SYSTEM_ERROR, "illegal characters"),
        ("x" * 128, ResponseCode.SYSTEM_ERROR, "longer than topic max length"),
        ("SCHEDULE_TOPIC_XXXX", ResponseCode.NO_PERMISSION, "is forbidden"),
    ],
)
def test_illegal_topics_get_clear_errors(
    embedded_cluster: EmbeddedCluster, topic: str, code: int, remark: str
) -> None:
    response = _send(embedded_cluster, topic, b"z")
    assert response.code == code
    assert response.remark is not None
    assert remark in response.remark


def test_queue_id_out_of_range_is_refused(
    embedded_cluster: EmbeddedCluster, unique_name: Callable[..., str]
) -> None:
    topic = unique_name("T")
    embedded_cluster.create_topic(topic, 2)
    response = _send(embedded_cluster, topic, b"z", queue_id=7)
    assert response.code == ResponseCode.SYSTEM_ERROR
    assert response.remark is not None
    assert "queueId[7] is illegal" in response.remark
