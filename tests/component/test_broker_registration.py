"""REGISTER_BROKER / UNREGISTER_BROKER frames against golden/broker_register.jsonl (real sockets)."""

from __future__ import annotations

import concurrent.futures
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from rocketq.broker.broker import BrokerController
from rocketq.broker.config import BrokerConfig
from rocketq.broker.store.config import MessageStoreConfig
from rocketq.protocol.codes import RequestCode
from rocketq.protocol.frame import RemotingCommand, decode_frame
from rocketq.protocol.route import TopicConfig
from rocketq.remoting.server import Channel, RemotingServer, ServerThread
from rocketq.testing.waits import wait_until
from tests.conftest import load_golden_frames

GOLDEN_BOOT_MS = 1795307988786
GOLDEN_FIRST_TOPIC_MS = 1795308003174


class Capture:
    """A fake name server: records every request, answers SUCCESS with ``{}`` extFields."""

    def __init__(self) -> None:
        self.requests: list[RemotingCommand] = []
        self.event = threading.Event()

    async def process(self, channel: Channel, request: RemotingCommand) -> RemotingCommand | None:
        self.requests.append(request)
        self.event.set()
        return request.make_response(0, None, {})


@pytest.fixture
def namesrv() -> Iterator[tuple[ServerThread, Capture]]:
    capture = Capture()
    server = RemotingServer("127.0.0.1", 0, name="fake-namesrv")
    server.register_default_processor(capture)
    thread = ServerThread(server)
    thread.start()
    yield thread, capture
    thread.stop()


def _golden(seq: int) -> RemotingCommand:
    frame = next(f for f in load_golden_frames("broker_register.jsonl") if f.seq == seq)
    return decode_frame(frame.frame)


def test_register_frames_match_golden(tmp_path: Path, namesrv: tuple[ServerThread, Capture]) -> None:
    thread, capture = namesrv
    clock = [GOLDEN_BOOT_MS]
    cfg = BrokerConfig(
        broker_ip1="127.0.0.1",
        broker_ip2="192.0.2.2",
        listen_port=10911,
        namesrv_addr=f"127.0.0.1:{thread.port}",
        message_store=MessageStoreConfig(store_path_root_dir=str(tmp_path)),
    )
    broker = BrokerController(cfg, wall_ms=lambda: clock[0])
    broker.outer_api.start()
    try:
        # start-up registration: the full default topic table
        broker._register_broker_all(False)
        ours, java = capture.requests[0], _golden(1)
        assert ours.code == java.code == RequestCode.REGISTER_BROKER
        assert ours.flag == java.flag == 0
        assert list((ours.ext_fields or {}).items()) == list((java.ext_fields or {}).items())
        assert ours.body == java.body
        # UPDATE_AND_CREATE_TOPIC path: registerIncrementBrokerData with only the new topic
        clock[0] = GOLDEN_FIRST_TOPIC_MS
        tc = TopicConfig(topic_name="GoldenProducerTopic", read_queue_nums=4, write_queue_nums=4)
        broker.topic_config_manager.update_topic_config(tc)
        broker._register_increment(tc)
        ours, java = capture.requests[1], _golden(5)
        assert list((ours.ext_fields or {}).items()) == list((java.ext_fields or {}).items())
        assert ours.body == java.body
        # auto-creation path: oneway full registration (golden seq 7 has flag 2)
        capture.event.clear()
        broker._register_broker_all(True)
        assert capture.event.wait(5)
        ours = capture.requests[2]
        assert ours.flag == _golden(7).flag == 2
        # shutdown: UNREGISTER_BROKER with the golden keys in the golden order
        broker._unregister_broker_all()
        ours, java = capture.requests[3], _golden(36)
        assert ours.code == RequestCode.UNREGISTER_BROKER
        assert list((ours.ext_fields or {}).items()) == list((java.ext_fields or {}).items())
    finally:
        broker.outer_api.shutdown()


def test_registration_survives_a_dead_name_server(tmp_path: Path) -> None:
    cfg = BrokerConfig(
        namesrv_addr="127.0.0.1:1",  # nothing listens there
        register_broker_timeout_mills=500,
        message_store=MessageStoreConfig(store_path_root_dir=str(tmp_path)),
    )
    broker = BrokerController(cfg)
    broker.outer_api.start()
    try:
        broker._register_broker_all(False)  # logged, not raised
        broker._unregister_broker_all()
    finally:
        broker.outer_api.shutdown()


def test_registrations_asked_while_one_is_queued_ride_on_it(
    tmp_path: Path, namesrv: tuple[ServerThread, Capture]
) -> None:
    # a flood of auto-created topics asks for a full registration each time; one queued
    # registration reads the topic table when it runs, so it covers all of them (issue #21)
    thread, capture = namesrv
    cfg = BrokerConfig(
        namesrv_addr=f"127.0.0.1:{thread.port}",
        message_store=MessageStoreConfig(store_path_root_dir=str(tmp_path)),
    )
    broker = BrokerController(cfg)
    broker.outer_api.start()
    executor = concurrent.futures.ThreadPoolExecutor(1)
    gate = threading.Event()
    executor.submit(gate.wait, 5)  # the registration thread is busy ...
    broker._executor = executor
    try:
        for _ in range(100):  # ... while 100 changes ask to register
            broker.register_broker_all_async(oneway=True)
        gate.set()
        wait_until(lambda: len(capture.requests) >= 1, 5, "the registration")
        broker.register_broker_all_async(oneway=True)  # a change after it ran registers again
        wait_until(lambda: len(capture.requests) >= 2, 5, "the second registration")
        executor.shutdown(wait=True)
        assert len(capture.requests) == 2
    finally:
        executor.shutdown(wait=True)
        broker.outer_api.shutdown()
