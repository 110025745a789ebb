"""PULL_MESSAGE served by the pull processor's immediate handler
(``PullMessageProcessor.process_now``, ``RemotingServer.register_processor(..., immediate=...)``):
a pull whose answer is ready (messages, a refusal, nothing found without suspend) is answered
by plain calls, in order with the connection's other answers; a held pull is still answered
by the hold service after a send; an exception in the processor still answers SYSTEM_ERROR
and keeps the connection. A real broker on an OS-assigned loopback port, raw frames on a
socket."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from rocketq.broker.broker import BrokerController
from rocketq.broker.config import BrokerConfig
from rocketq.broker.processors.pull import PullMessageProcessor
from rocketq.broker.store.config import MessageStoreConfig
from rocketq.protocol.codes import RequestCode, ResponseCode, SerializeType
from rocketq.protocol.frame import RemotingCommand
from rocketq.protocol.headers import GetMaxOffsetRequestHeader
from rocketq.protocol.message import decode_records
from rocketq.protocol.route import TopicConfig
from rocketq.remoting.server import LoopThread
from tests.conftest import RawWire, pull_request, send_request

_TOPIC = "PullNow"


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerController]:
    root: Path = tmp_path_factory.mktemp("pull-now")
    config = BrokerConfig(
        broker_ip1="127.0.0.1",
        listen_port=0,
        message_store=MessageStoreConfig(store_path_root_dir=str(root), mapped_file_size_commit_log=1 << 20),
    )
    b = BrokerController(config)
    with LoopThread(b.start, b.shutdown, name="pull-now-broker") as thread:
        thread.call(
            lambda: b.topic_config_manager.update_topic_config(
                TopicConfig(topic_name=_TOPIC, read_queue_nums=2, write_queue_nums=2)
            )
        )
        yield b


def _write(wire: RawWire, *requests: RemotingCommand) -> list[int]:
    """``requests`` in one write (the broker reads them as one chunk, or a few); their opaques."""
    frames = [wire.frame(request) for request in requests]
    wire.sock.sendall(b"".join(data for _, data in frames))
    return [opaque for opaque, _ in frames]


@pytest.fixture
def wire(broker: BrokerController) -> Iterator[RawWire]:
    w = RawWire(f"127.0.0.1:{broker.server.port}")
    try:
        yield w
    finally:
        w.close()


def _pull(queue_id: int, offset: int, *, suspend: bool, topic: str = _TOPIC) -> RemotingCommand:
    return pull_request(topic, queue_id, offset, group="pull_now_reader", suspend=suspend)


def _max_offset(queue_id: int) -> RemotingCommand:
    header = GetMaxOffsetRequestHeader(topic=_TOPIC, queue_id=queue_id)
    return RemotingCommand.request(RequestCode.GET_MAX_OFFSET, header.to_ext_fields())


def test_pull_is_routed_to_the_immediate_handler(broker: BrokerController) -> None:
    pull = broker.pull_processor
    assert isinstance(pull, PullMessageProcessor)
    route = broker.server._routes[RequestCode.PULL_MESSAGE]
    assert route.immediate == pull.process_now


def test_ready_pulls_are_answered_in_order_and_a_held_pull_after_a_send(wire: RawWire) -> None:
    sends = [send_request(_TOPIC, b"now-%d" % i, queue_id=0) for i in range(3)]
    opaques = _write(
        wire,
        *sends,
        _pull(0, 0, suspend=True),  # messages found: answered at once despite SUSPEND
        _pull(0, 3, suspend=False),  # nothing, suspend off: PULL_NOT_FOUND at once
        _pull(0, 0, suspend=True, topic="NoSuchTopic"),  # a refusal
        _max_offset(0),
    )
    answers = wire.read(len(opaques))
    assert [a.opaque for a in answers] == opaques  # one connection's answers keep its order
    assert [a.code for a in answers[:3]] == [ResponseCode.SUCCESS] * 3
    found, not_found, refused = answers[3:6]
    assert found.code == ResponseCode.SUCCESS
    assert found.serialize_type == SerializeType.ROCKETMQ  # the request's type, via the callback
    assert [m.body for m in decode_records(found.body or b"")] == [b"now-0", b"now-1", b"now-2"]
    assert (found.ext_fields or {})["nextBeginOffset"] == "3"
    assert not_found.code == ResponseCode.PULL_NOT_FOUND
    assert refused.code == ResponseCode.TOPIC_NOT_EXIST

    # A pull at the end with SUSPEND is held (no answer now); a send wakes it: the send's ack
    # first, then the held pull's answer, written by the hold service in JSON.
    (held,) = _write(wire, _pull(1, 0, suspend=True))
    (probe,) = _write(wire, _max_offset(1))
    (probe_answer,) = wire.read(1)
    assert probe_answer.opaque == probe  # answered while the pull sent before it is parked
    (sent,) = _write(wire, send_request(_TOPIC, b"wakes", queue_id=1))
    ack, woken = wire.read(2)
    assert (ack.opaque, ack.code) == (sent, ResponseCode.SUCCESS)
    assert (woken.opaque, woken.code) == (held, ResponseCode.SUCCESS)
    assert woken.serialize_type == SerializeType.JSON
    assert [m.body for m in decode_records(woken.body or b"")] == [b"wakes"]


@pytest.mark.pure_python  # replaces methods of PullMessageProcessor, a compiled class
def test_a_failing_pull_answers_system_error_and_keeps_the_connection(
    broker: BrokerController, wire: RawWire, monkeypatch: pytest.MonkeyPatch
) -> None:
    pull = broker.pull_processor
    assert pull is not None

    def not_this_way(*_args: object, **_kwargs: object) -> RemotingCommand | None:
        raise AssertionError("the pull went through the coroutine path")

    def boom(*_args: object, **_kwargs: object) -> RemotingCommand | None:
        raise RuntimeError("store on fire")

    monkeypatch.setattr(pull, "process", not_this_way)
    monkeypatch.setattr(pull, "process_request", boom)
    failing, after = _write(wire, _pull(0, 0, suspend=True), _max_offset(0))
    error, answer = wire.read(2)
    assert (error.opaque, error.code) == (failing, ResponseCode.SYSTEM_ERROR)
    assert error.remark == "RuntimeError: store on fire"
    assert (answer.opaque, answer.code) == (after, ResponseCode.SUCCESS)  # the connection lives
