"""Replay the golden client conversations through rocketq's broker processors.

Every request of golden/*.jsonl served by the broker-core processors (heartbeats,
unregister, consumer lists, offsets, topic creation, runtime info, stats, connections) is
fed, in capture order and per connection, to a :class:`BrokerController` that was never
started (no sockets; one fake channel per golden connection). Each of our answers is
compared with Java's: same code, same serialize type, same extFields keys (and, where the
state is reproduced, the same values, remark and body); every NOTIFY_CONSUMER_IDS_CHANGED
we send must match the golden NOTIFY frames (which connection, in which order, what header).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import pytest

from rocketq.broker.broker import BrokerController
from rocketq.protocol import fastjson
from rocketq.protocol.codes import RequestCode
from rocketq.protocol.frame import RemotingCommand, decode_frame
from rocketq.remoting.server import Channel, RequestProcessor
from tests.conftest import GoldenFrame, golden_dir, load_golden_frames
from tests.unit.broker.conftest import unit_broker_config

#: Codes whose answers depend only on state the replay reproduces: compare everything.
EXACT = {
    RequestCode.HEART_BEAT,
    RequestCode.UNREGISTER_CLIENT,
    RequestCode.GET_CONSUMER_LIST_BY_GROUP,
    RequestCode.UPDATE_CONSUMER_OFFSET,
    RequestCode.UPDATE_AND_CREATE_TOPIC,
}
#: Codes whose values depend on the message store's content: compare code and shape.
SHAPE = {
    RequestCode.QUERY_CONSUMER_OFFSET,
    RequestCode.GET_MAX_OFFSET,
    RequestCode.GET_MIN_OFFSET,
    RequestCode.GET_EARLIEST_MSG_STORETIME,
    RequestCode.SEARCH_OFFSET_BY_TIMESTAMP,
    RequestCode.GET_BROKER_RUNTIME_INFO,
    RequestCode.GET_TOPIC_STATS_INFO,
    RequestCode.GET_CONSUMER_CONNECTION_LIST,
    RequestCode.GET_CONSUME_STATS,
    RequestCode.QUERY_TOPIC_CONSUME_BY_WHO,
}
#: Runtime-info keys a 4.9.7 broker adds that rocketq does not have: the schedule
#: service's per-level offsets and the redacted store path.
RUNTIME_ONLY_IN_JAVA = {"scheduleMessageOffset_3", "commitLogDiskRatio_/redacted/store/commitlog"}


class ReplayChannel:
    def __init__(self, conn: int) -> None:
        self.conn = conn
        self.remote_addr = f"127.0.0.1:{50000 + conn}"
        self.local_addr = "127.0.0.1:10911"
        self.closed = False
        self.attributes: dict[str, object] = {}
        self.sent: list[RemotingCommand] = []

    def invoke_oneway(self, request: RemotingCommand) -> None:
        self.sent.append(request)

    def write(self, cmd: RemotingCommand) -> None:
        self.sent.append(cmd)

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerController]:
    b = BrokerController(unit_broker_config(tmp_path))
    assert b.store.load()
    # the topics the golden session created beforehand (mqadmin updateTopic, not captured)
    b.topic_config_manager.decode((golden_dir() / "store" / "topics.json").read_text())
    yield b
    b.store.shutdown()


def _pairs(name: str) -> list[tuple[GoldenFrame, GoldenFrame | None]]:
    frames = load_golden_frames(name)
    responses = {(f.conn, f.opaque): f for f in frames if f.is_response and f.server == "broker"}
    return [
        (f, responses.get((f.conn, f.opaque)))
        for f in frames
        if f.server == "broker" and f.dir == "client->server" and not f.is_response
    ]


def _body_keys(body: bytes) -> set[str]:
    obj = fastjson.loads(body)
    assert isinstance(obj, dict)
    return {str(k) for k in obj}


def _replay(broker: BrokerController, name: str) -> tuple[int, list[tuple[int, dict[str, str] | None]]]:
    channels: dict[int, ReplayChannel] = {}
    processors: dict[int, RequestProcessor] = {
        **{int(c): broker.client_manage_processor for c in broker.client_manage_processor.CODES},
        **{int(c): broker.consumer_manage_processor for c in broker.consumer_manage_processor.CODES},
        **{int(c): broker.admin_processor for c in broker.admin_processor.CODES},
    }
    checked = 0
    loop = asyncio.new_event_loop()
    for req_frame, resp_frame in _pairs(name):
        if req_frame.code not in EXACT | SHAPE:
            continue
        request = decode_frame(req_frame.frame)
        channel = channels.setdefault(req_frame.conn, ReplayChannel(req_frame.conn))
        processor = processors[req_frame.code]
        try:
            response = loop.run_until_complete(processor.process(cast(Channel, channel), request))
        except BaseException:
            loop.close()
            raise
        assert response is not None
        if request.is_oneway or resp_frame is None:
            continue
        java = decode_frame(resp_frame.frame)
        response = decode_frame(response.encode())  # what goes on the wire
        where = f"{name} seq {req_frame.seq} code {req_frame.code}"
        assert response.code == java.code, (where, response.remark, java.remark)
        assert response.serialize_type == java.serialize_type, where
        assert (response.ext_fields is None) == (java.ext_fields is None), where
        assert set(response.ext_fields or {}) == set(java.ext_fields or {}), where
        if req_frame.code in EXACT:
            assert response.ext_fields == java.ext_fields, where
            assert response.remark == java.remark, where
            if req_frame.code == RequestCode.GET_CONSUMER_LIST_BY_GROUP and java.body:
                # Java lists ids in ConcurrentHashMap<Channel, ...> order, i.e. by Netty's random
                # channel hash codes; clients sort the list. Same ids, same JSON layout:
                ours, theirs = json.loads(response.body), json.loads(java.body)
                assert sorted(ours["consumerIdList"]) == sorted(theirs["consumerIdList"]), where
                assert len(response.body) == len(java.body), where
            else:
                assert response.body == java.body, where
        elif req_frame.code == RequestCode.GET_BROKER_RUNTIME_INFO:
            ours = set(json.loads(response.body)["table"])
            theirs = set(json.loads(java.body)["table"]) - RUNTIME_ONLY_IN_JAVA
            assert theirs <= ours, (where, theirs - ours)
        elif java.body:
            assert _body_keys(response.body) == _body_keys(java.body), where
        checked += 1
    loop.close()
    notifies = [
        (conn, cmd.ext_fields)
        for conn, ch in sorted(channels.items())
        for cmd in ch.sent
        if cmd.code == RequestCode.NOTIFY_CONSUMER_IDS_CHANGED
    ]
    return checked, notifies


def _golden_notifies(name: str) -> list[tuple[int, dict[str, str] | None]]:
    frames = [
        f
        for f in load_golden_frames(name)
        if f.code == RequestCode.NOTIFY_CONSUMER_IDS_CHANGED and not f.is_response
    ]
    for f in frames:
        assert f.flag == 2  # oneway
    out = [(f.conn, decode_frame(f.frame).ext_fields) for f in frames]
    return sorted(out, key=lambda x: x[0])


@pytest.mark.parametrize(
    "name",
    [
        "push_concurrently.jsonl",
        "push_orderly.jsonl",
        "pull.jsonl",
        "admin.jsonl",
        "binary_header.jsonl",
        "producer.jsonl",
    ],
)
def test_replay_golden_conversation(broker: BrokerController, name: str) -> None:
    checked, notifies = _replay(broker, name)
    assert checked > 0
    golden = _golden_notifies(name)
    if name == "admin.jsonl":
        # admin.jsonl was trimmed (golden README caveat 11) and starts with the consumer
        # already connected; only compare the groups notified.
        assert {tuple(sorted((n[1] or {}).items())) for n in notifies} <= {
            tuple(sorted((n[1] or {}).items())) for n in golden
        } | {(("consumerGroup", "GoldenAdminLiveGroup"),)}
    else:
        assert notifies == golden


def test_heartbeat_creates_retry_topic_and_group(broker: BrokerController) -> None:
    _replay(broker, "push_concurrently.jsonl")
    tc = broker.topic_config_manager.select_topic_config("%RETRY%GoldenPushGroup")
    assert tc is not None and (tc.read_queue_nums, tc.write_queue_nums, tc.perm) == (1, 1, 6)
    assert broker.subscription_group_manager.find_subscription_group_config("GoldenPushGroup") is not None
    # the last UPDATE_CONSUMER_OFFSETs of the capture are what the broker holds
    assert broker.consumer_offset_manager.query_offset("GoldenPushGroup", "GoldenPushTopic", 1) == 4
    # both consumers left at the end of the capture
    assert broker.consumer_manager.get_consumer_group_info("GoldenPushGroup") is None


def test_unknown_code_answer(broker: BrokerController) -> None:
    request = RemotingCommand(code=9999, opaque=5, serialize_type=1)
    response = asyncio.run(broker.admin_processor.process(cast(Channel, ReplayChannel(1)), request))
    assert response is not None
    assert (response.code, response.remark, response.ext_fields) == (
        3,
        " request type 9999 not supported",
        None,
    )
    assert response.serialize_type == 1 and response.opaque == 5


def test_missing_required_header_field(broker: BrokerController) -> None:
    request = RemotingCommand(code=RequestCode.GET_MAX_OFFSET, ext_fields={"topic": "T"})
    response = asyncio.run(broker.admin_processor.process(cast(Channel, ReplayChannel(1)), request))
    assert response is not None and response.code == 1
    assert response.remark == "the custom field <queueId> is null"
