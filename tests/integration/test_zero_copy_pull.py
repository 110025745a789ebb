"""Pull answers written without a heap copy (``transferMsgByHeap=false``), against a real
embedded broker: the records go to the socket straight from the mapped commit log
(``ManyMessageTransfer``), the same bytes as the default copied body, and the header is
JSON whatever the request used (reference 2.4)."""

from __future__ import annotations

import concurrent.futures
import random
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from rocketq.client import Message, MessageQueue, Producer, PullConsumer, PullStatus
from rocketq.client.impl.pull_api_wrapper import build_pull_sys_flag
from rocketq.protocol.codes import RequestCode, ResponseCode, SerializeType
from rocketq.protocol.frame import RemotingCommand
from rocketq.protocol.headers import PullMessageRequestHeader, PullMessageResponseHeader
from rocketq.protocol.message import decode_records
from rocketq.testing.cluster import EmbeddedCluster

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def clusters() -> Iterator[tuple[EmbeddedCluster, EmbeddedCluster]]:
    """(heap, zero copy): two brokers holding the same messages."""
    with (
        EmbeddedCluster() as heap,
        EmbeddedCluster(broker_conf={"transferMsgByHeap": "false"}) as direct,
    ):
        for cluster in (heap, direct):
            cluster.create_topic("zc", 2)
            with Producer("zc_producer", namesrv_addr=cluster.namesrv_addr) as producer:
                mq = MessageQueue("zc", "broker-a", 0)
                producer.send(
                    [Message("zc", f"body-{i}".encode() * (1 + i % 50), tags="T") for i in range(300)],
                    queue=mq,
                )
        yield heap, direct


def _pull(
    cluster: EmbeddedCluster,
    serialize_type: int,
    offset: int,
    count: int,
    *,
    queue_id: int = 0,
    hold_ms: int = 0,
) -> RemotingCommand:
    header = PullMessageRequestHeader(
        consumer_group="zc_reader",
        topic="zc",
        queue_id=queue_id,
        queue_offset=offset,
        max_msg_nums=count,
        sys_flag=build_pull_sys_flag(commit_offset=False, suspend=hold_ms > 0, subscription=True),
        commit_offset=0,
        suspend_timeout_millis=hold_ms,
        subscription="*",
        sub_version=0,
        expression_type="TAG",
    )
    request = RemotingCommand.request(
        RequestCode.PULL_MESSAGE,
        header.to_ext_fields(serialize_type=serialize_type),
        serialize_type=serialize_type,
    )
    return cluster.invoke(cluster.broker_addrs[0], request)


@pytest.mark.parametrize("serialize_type", [SerializeType.JSON, SerializeType.ROCKETMQ])
def test_records_are_the_copied_body_byte_for_byte(
    clusters: tuple[EmbeddedCluster, EmbeddedCluster], serialize_type: int
) -> None:
    heap, direct = clusters
    for offset, count in [(0, 32), (32, 1), (290, 32)]:
        copied = _pull(heap, serialize_type, offset, count)
        zero_copy = _pull(direct, serialize_type, offset, count)
        assert copied.code == zero_copy.code == ResponseCode.SUCCESS
        assert copied.serialize_type == serialize_type
        assert zero_copy.serialize_type == SerializeType.JSON  # FileRegion: the server default
        assert copied.ext_fields == zero_copy.ext_fields
        # the answer's extFields in its header type's order: JSON (HashMap) order for FileRegion
        expected = PullMessageResponseHeader.from_ext_fields(zero_copy.ext_fields or {})
        assert list(zero_copy.ext_fields or {}) == list(expected.to_ext_fields())
        assert list(copied.ext_fields or {}) == list(expected.to_ext_fields(serialize_type=serialize_type))
        assert PullMessageResponseHeader.from_ext_fields(zero_copy.ext_fields or {}).next_begin_offset == min(
            offset + count, 300
        )
        # the store timestamps and hosts differ between the two brokers, so compare the bodies
        records = decode_records(zero_copy.body)
        assert [m.queue_offset for m in records] == list(range(offset, min(offset + count, 300)))
        assert [m.body for m in records] == [m.body for m in decode_records(copied.body)]
        assert len(zero_copy.body) == len(copied.body)


def test_pull_consumer_and_a_held_pull_woken_by_a_send(
    clusters: tuple[EmbeddedCluster, EmbeddedCluster], unique_name: Callable[..., str]
) -> None:
    _, direct = clusters
    with PullConsumer(unique_name("CG"), namesrv_addr=direct.namesrv_addr) as consumer:
        q0 = MessageQueue("zc", "broker-a", 0)
        result = consumer.pull(q0, "*", 0, 32)
        assert result.pull_status is PullStatus.FOUND
        assert [m.body for m in result.msg_found_list] == [
            f"body-{i}".encode() * (1 + i % 50) for i in range(32)
        ]

        q1 = MessageQueue("zc", "broker-a", 1)

        def late_send() -> None:
            time.sleep(0.5)
            with Producer(unique_name("PG"), namesrv_addr=direct.namesrv_addr) as producer:
                producer.send(Message("zc", b"late"), queue=q1)

        sender = threading.Thread(target=late_send)
        sender.start()
        held = consumer.pull_block_if_not_found(q1, "*", 0, 32)
        sender.join()
        assert held.pull_status is PullStatus.FOUND
        assert [m.body for m in held.msg_found_list] == [b"late"]


@pytest.mark.parametrize("serialize_type", [SerializeType.JSON, SerializeType.ROCKETMQ])
def test_a_woken_held_pull_is_answered_in_json_with_json_ordered_extfields(
    clusters: tuple[EmbeddedCluster, EmbeddedCluster], serialize_type: int, unique_name: Callable[..., str]
) -> None:
    for cluster in clusters:
        queue = MessageQueue("zc", "broker-a", 1)
        start = _max_offset(cluster, queue)
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            held = pool.submit(_pull, cluster, serialize_type, start, 32, queue_id=1, hold_ms=5000)
            time.sleep(0.5)  # the pull is held by now
            with Producer(unique_name("PG"), namesrv_addr=cluster.namesrv_addr) as producer:
                producer.send(Message("zc", b"wake"), queue=queue)
            answer = held.result(timeout=10)
        assert answer.code == ResponseCode.SUCCESS
        assert answer.serialize_type == SerializeType.JSON  # PullRequestHoldService answers in JSON
        expected = PullMessageResponseHeader.from_ext_fields(answer.ext_fields or {})
        assert list(answer.ext_fields or {}) == list(expected.to_ext_fields())  # maxOffset before minOffset
        assert [m.body for m in decode_records(answer.body)] == [b"wake"]


def test_a_held_pull_that_expires_is_answered_in_json_an_unheld_one_in_the_request_type(
    clusters: tuple[EmbeddedCluster, EmbeddedCluster],
) -> None:
    heap = clusters[0]
    start = _max_offset(heap, MessageQueue("zc", "broker-a", 1))
    unheld = _pull(heap, SerializeType.ROCKETMQ, start, 32, queue_id=1)
    assert (unheld.code, unheld.serialize_type) == (ResponseCode.PULL_NOT_FOUND, SerializeType.ROCKETMQ)
    # nothing arrives: PullRequestHoldService answers at the timeout, outside the callback
    expired = _pull(heap, SerializeType.ROCKETMQ, start, 32, queue_id=1, hold_ms=300)
    assert (expired.code, expired.serialize_type) == (ResponseCode.PULL_NOT_FOUND, SerializeType.JSON)


def _max_offset(cluster: EmbeddedCluster, queue: MessageQueue) -> int:
    with PullConsumer("zc_offsets", namesrv_addr=cluster.namesrv_addr) as consumer:
        return consumer.max_offset(queue)


@pytest.mark.parametrize("by_heap", ["true", "false"])
def test_an_answer_over_the_frame_limit_is_a_system_error_either_way(by_heap: str) -> None:
    conf = {
        "transferMsgByHeap": by_heap,
        "maxTransferBytesOnMessageInMemory": str(64 << 20),
        "mappedFileSizeCommitLog": str(64 << 20),
    }
    with EmbeddedCluster(broker_conf=conf) as cluster:
        cluster.create_topic("zc", 1)
        with Producer("zc_big", namesrv_addr=cluster.namesrv_addr) as producer:
            for i in range(5):  # 5 x 3.5 MB: one answer would be a frame over 16 MB
                body = random.Random(i).randbytes(3_500_000)  # incompressible: stored as is
                producer.send(Message("zc", body), queue=MessageQueue("zc", "broker-a", 0))
        answer = _pull(cluster, SerializeType.JSON, 0, 32)
        assert answer.code == ResponseCode.SYSTEM_ERROR
        assert "FrameTooLargeError" in (answer.remark or "")
        assert _pull(cluster, SerializeType.JSON, 0, 4).code == ResponseCode.SUCCESS  # still serving
