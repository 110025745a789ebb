"""A held pull woken by a send, seen on the wire of one connection (``PullRequestHoldService``,
``PullMessageProcessor.executeRequestWhenWakeup``), against a real embedded broker.

The broker re-runs the held pulls that a chunk of send requests woke as soon as that chunk
has written its own answers: every send's ack leaves before the woken pulls' answers, and each
woken pull is answered (in JSON, as Java's hold service writes it) with the messages the sends
made available. Raw frames on one socket make the order observable.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from rocketq.protocol.codes import RequestCode, ResponseCode, SerializeType
from rocketq.protocol.frame import RemotingCommand
from rocketq.protocol.headers import (
    GetMaxOffsetRequestHeader,
    GetMaxOffsetResponseHeader,
    PullMessageResponseHeader,
)
from rocketq.protocol.message import decode_records
from rocketq.testing.cluster import EmbeddedCluster
from tests.conftest import RawWire, pull_request, send_request

pytestmark = pytest.mark.integration

_TOPIC = "wake"


@pytest.fixture(scope="module")
def cluster() -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster() as c:
        c.create_topic(_TOPIC, 4)
        yield c


def _pull(queue_id: int, offset: int, hold_ms: int) -> RemotingCommand:
    return pull_request(_TOPIC, queue_id, offset, group="wake_reader", hold_ms=hold_ms)


def _send(queue_id: int, body: bytes) -> RemotingCommand:
    return send_request(_TOPIC, body, queue_id=queue_id, code=RequestCode.SEND_MESSAGE)


def _max_offset(wire: RawWire, queue_id: int) -> int:
    """The queue's next offset (GET_MAX_OFFSET). Its answer also proves that every request
    sent before it on the connection was handled: the broker handles one connection's
    requests in order, so a pull sent earlier and not answered yet is held."""
    header = GetMaxOffsetRequestHeader(topic=_TOPIC, queue_id=queue_id)
    opaque, data = wire.frame(RemotingCommand.request(RequestCode.GET_MAX_OFFSET, header.to_ext_fields()))
    wire.sock.sendall(data)
    (answer,) = wire.read(1)
    assert (answer.opaque, answer.code) == (opaque, ResponseCode.SUCCESS), f"unexpected answer {answer!r}"
    return int(GetMaxOffsetResponseHeader.from_ext_fields(answer.ext_fields or {}).offset or 0)


def _held(wire: RawWire, queue_id: int) -> tuple[int, int]:
    """A pull of ``queue_id`` from its end, held by the broker: (opaque, offset)."""
    offset = _max_offset(wire, queue_id)
    opaque, data = wire.frame(_pull(queue_id, offset, 10_000))
    wire.sock.sendall(data)
    _max_offset(wire, queue_id)  # answered first: the pull is parked
    return opaque, offset


def test_sends_ack_first_then_each_woken_pull_is_answered_with_its_message(cluster: EmbeddedCluster) -> None:
    wire = RawWire(cluster.broker_addrs[0])
    try:
        held = {queue_id: _held(wire, queue_id) for queue_id in (1, 2)}
        # two sends in one write: one chunk for the broker, one put per held queue
        frames = [wire.frame(_send(queue_id, f"wake-{queue_id}".encode())) for queue_id in (1, 2)]
        wire.sock.sendall(b"".join(data for _, data in frames))
        answers = wire.read(4)
        send_opaques = [opaque for opaque, _ in frames]
        assert [a.opaque for a in answers[:2]] == send_opaques, "the sends' acks leave first"
        assert all(a.code == ResponseCode.SUCCESS for a in answers[:2])
        by_opaque = {a.opaque: a for a in answers[2:]}
        for queue_id, (opaque, offset) in held.items():
            answer = by_opaque[opaque]
            assert answer.code == ResponseCode.SUCCESS
            assert answer.serialize_type == SerializeType.JSON  # the hold service's answer
            records = decode_records(answer.body)
            assert [(m.queue_id, m.queue_offset, m.body) for m in records] == [
                (queue_id, offset, f"wake-{queue_id}".encode())
            ]
            header = PullMessageResponseHeader.from_ext_fields(answer.ext_fields or {})
            assert header.next_begin_offset == offset + 1
    finally:
        wire.close()


def test_a_send_to_another_queue_leaves_the_held_pull_parked(cluster: EmbeddedCluster) -> None:
    wire = RawWire(cluster.broker_addrs[0])
    try:
        opaque, offset = _held(wire, 3)
        other, data = wire.frame(_send(0, b"elsewhere"))
        wire.sock.sendall(data)
        (ack,) = wire.read(1)
        assert (ack.opaque, ack.code) == (other, ResponseCode.SUCCESS)
        assert _max_offset(wire, 3) == offset  # answered before the pull: still parked
        woke, data = wire.frame(_send(3, b"mine"))
        wire.sock.sendall(data)
        ack, answer = wire.read(2)
        assert (ack.opaque, answer.opaque) == (woke, opaque)
        assert [(m.queue_offset, m.body) for m in decode_records(answer.body)] == [(offset, b"mine")]
    finally:
        wire.close()
