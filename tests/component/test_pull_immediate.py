"""PULL_MESSAGE served by the pull processor's immediate handler
(``PullMessageProcessor.process_now``, ``RemotingServer.register_processor(..., immediate=...)``):
a pull whose answer is ready (messages, a refusal, nothing found without suspend) is answered
by plain calls, in order with the connection's other answers; a held pull is still answered
by the hold service after a send; an exception in the processor still answers SYSTEM_ERROR
and keeps the connection. A real broker on an OS-assigned loopback port, raw frames on a
socket."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from rocketq.broker.broker import BrokerController
from rocketq.broker.config import BrokerConfig
from rocketq.broker.processors.pull import PullMessageProcessor
from rocketq.broker.store.config import MessageStoreConfig
from rocketq.client.impl.pull_api_wrapper import build_pull_sys_flag
from rocketq.protocol.codes import RequestCode, ResponseCode, SerializeType
from rocketq.protocol.frame import FrameDecoder, RemotingCommand
from rocketq.protocol.headers import GetMaxOffsetRequestHeader, PullMessageRequestHeader
from rocketq.protocol.message import decode_records
from rocketq.protocol.route import TopicConfig
from rocketq.remoting.server import LoopThread
from tests.conftest import send_request

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


class _Wire:
    """One raw connection: frames numbered and written as given, answers read in order."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.decoder = FrameDecoder()
        self.opaque = 0

    def write(self, *requests: RemotingCommand) -> list[int]:
        opaques = []
        data = b""
        for request in requests:
            self.opaque += 1
            request.opaque = self.opaque
            opaques.append(self.opaque)
            data += request.encode()
        self.sock.sendall(data)  # one write: the broker reads them as one chunk, or a few
        return opaques

    def read(self, count: int, timeout_s: float = 10.0) -> list[RemotingCommand]:
        got: list[RemotingCommand] = []
        deadline = time.monotonic() + timeout_s
        while len(got) < count:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"{len(got)} of {count} answers arrived: {got!r}")
            self.sock.settimeout(left)
            data = self.sock.recv(1 << 16)
            if not data:
                raise AssertionError("the broker closed the connection")
            got += self.decoder.feed(data)
        return got


@pytest.fixture
def wire(broker: BrokerController) -> Iterator[_Wire]:
    w = _Wire(broker.server.port)
    try:
        yield w
    finally:
        w.sock.close()


def _pull(queue_id: int, offset: int, *, suspend: bool, topic: str = _TOPIC) -> RemotingCommand:
    header = PullMessageRequestHeader(
        consumer_group="pull_now_reader",
        topic=topic,
        queue_id=queue_id,
        queue_offset=offset,
        max_msg_nums=32,
        sys_flag=build_pull_sys_flag(commit_offset=False, suspend=suspend, subscription=True),
        commit_offset=0,
        suspend_timeout_millis=10_000,
        subscription="*",
        sub_version=0,
        expression_type="TAG",
    )
    return RemotingCommand.request(
        RequestCode.PULL_MESSAGE,
        header.to_ext_fields(serialize_type=SerializeType.ROCKETMQ),
        serialize_type=SerializeType.ROCKETMQ,
    )


def _max_offset(queue_id: int) -> RemotingCommand:
    header = GetMaxOffsetRequestHeader(topic=_TOPIC, queue_id=queue_id)
    return RemotingCommand.request(RequestCode.GET_MAX_OFFSET, header.to_ext_fields())


def test_pull_is_routed_to_the_immediate_handler(broker: BrokerController) -> None:
    pull = broker.pull_processor
    assert isinstance(pull, PullMessageProcessor)
    route = broker.server._routes[RequestCode.PULL_MESSAGE]
    assert route.immediate == pull.process_now


def test_ready_pulls_are_answered_in_order_and_a_held_pull_after_a_send(wire: _Wire) -> None:
    sends = [send_request(_TOPIC, b"now-%d" % i, queue_id=0) for i in range(3)]
    opaques = wire.write(
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
    (held,) = wire.write(_pull(1, 0, suspend=True))
    (probe,) = wire.write(_max_offset(1))
    (probe_answer,) = wire.read(1)
    assert probe_answer.opaque == probe  # answered while the pull sent before it is parked
    (sent,) = wire.write(send_request(_TOPIC, b"wakes", queue_id=1))
    ack, woken = wire.read(2)
    assert (ack.opaque, ack.code) == (sent, ResponseCode.SUCCESS)
    assert (woken.opaque, woken.code) == (held, ResponseCode.SUCCESS)
    assert woken.serialize_type == SerializeType.JSON
    assert [m.body for m in decode_records(woken.body or b"")] == [b"wakes"]


@pytest.mark.pure_python  # replaces methods of PullMessageProcessor, a compiled class
def test_a_failing_pull_answers_system_error_and_keeps_the_connection(
    broker: BrokerController, wire: _Wire, monkeypatch: pytest.MonkeyPatch
) -> None:
    pull = broker.pull_processor
    assert pull is not None

    def not_this_way(*_args: object, **_kwargs: object) -> RemotingCommand | None:
        raise AssertionError("the pull went through the coroutine path")

    def boom(*_args: object, **_kwargs: object) -> RemotingCommand | None:
        raise RuntimeError("store on fire")

    monkeypatch.setattr(pull, "process", not_this_way)
    monkeypatch.setattr(pull, "process_request", boom)
    failing, after = wire.write(_pull(0, 0, suspend=True), _max_offset(0))
    error, answer = wire.read(2)
    assert (error.opaque, error.code) == (failing, ResponseCode.SYSTEM_ERROR)
    assert error.remark == "RuntimeError: store on fire"
    assert (answer.opaque, answer.code) == (after, ResponseCode.SUCCESS)  # the connection lives
