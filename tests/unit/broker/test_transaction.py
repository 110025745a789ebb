"""The broker's transaction and reply pieces on a broker that was never started (no sockets).

Half messages through ``SendMessageProcessor``, END_TRANSACTION through
``EndTransactionProcessor`` (with Java's remarks for every refusal), the op-record layout,
and the check scan (``TransactionalMessageServiceImpl.check``) driven by an injected wall
clock and a recording listener.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import pytest

from rocketq.broker.broker import BrokerController
from rocketq.broker.processors.end_transaction import EndTransactionProcessor
from rocketq.broker.processors.reply import ReplyMessageProcessor
from rocketq.broker.processors.send import SendMessageProcessor
from rocketq.broker.transaction import REMOVETAG, TransactionalMessageService
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frame import RemotingCommand
from rocketq.protocol.headers import EndTransactionRequestHeader
from rocketq.protocol.message import MessageConst, MessageExt, decode_records, encode_properties
from rocketq.protocol.message_id import decode_offset_msg_id
from rocketq.protocol.mixall import CID_SYS_RMQ_TRANS, RMQ_SYS_TRANS_HALF_TOPIC, RMQ_SYS_TRANS_OP_HALF_TOPIC
from rocketq.remoting.server import Channel
from rocketq.testing.waits import wait_until
from tests.conftest import send_request
from tests.unit.broker.conftest import unit_broker_config

# The processors are handed a duck-typed channel, which the compiled build refuses.
pytestmark = pytest.mark.pure_python

TOPIC = "TxTopic"
GROUP = "tx-pg"


class _Channel:
    remote_addr = "127.0.0.1:50001"
    local_addr = "127.0.0.1:10911"
    closed = False


def _wall_ms() -> int:
    return time.time_ns() // 1_000_000


def _next_ms() -> None:
    """Let the wall clock tick: a half re-put in one round is stored before the next starts."""
    start = _wall_ms()
    wait_until(lambda: _wall_ms() > start, 1, "the next millisecond", interval_s=0.001)


class _Recorder:
    def __init__(self) -> None:
        self.checked: list[MessageExt] = []
        self.discarded: list[MessageExt] = []

    def resolve_half_msg(self, msg: MessageExt) -> None:
        self.checked.append(msg)

    def resolve_discard_msg(self, msg: MessageExt) -> None:
        self.discarded.append(msg)


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerController]:
    b = BrokerController(unit_broker_config(tmp_path))
    b.topic_config_manager.create_topic_in_send_message_back_method(TOPIC, 4, 6, 0)
    b.store.start()
    yield b
    b.store.shutdown()


def _run(processor: object, request: RemotingCommand) -> RemotingCommand | None:
    coro = processor.process(cast(Channel, _Channel()), request)  # type: ignore[attr-defined]
    result: RemotingCommand | None = asyncio.run(coro)
    return result


def _send_half(broker: BrokerController, body: bytes, born: int, queue_id: int = 2) -> RemotingCommand:
    props = encode_properties(
        {MessageConst.TRAN_MSG: "true", MessageConst.PGROUP: GROUP, MessageConst.UNIQ_KEY: body.hex().upper()}
    )
    request = send_request(TOPIC, body, queue_id=queue_id, properties=props)
    assert request.ext_fields is not None
    request.ext_fields["g"] = str(born)  # bornTimestamp (V2 name)
    response = _run(SendMessageProcessor(broker), request)
    assert response is not None and response.code == ResponseCode.SUCCESS, response
    return response


def _end(
    broker: BrokerController, send_response: RemotingCommand, action: int, **over: object
) -> RemotingCommand | None:
    ext = send_response.ext_fields or {}
    header = EndTransactionRequestHeader(
        producer_group=GROUP,
        tran_state_table_offset=int(ext["queueOffset"]),
        commit_log_offset=decode_offset_msg_id(ext["msgId"])[1],
        commit_or_rollback=action,
        msg_id="M",
    )
    header = dataclasses.replace(header, **over)  # type: ignore[arg-type]
    return _run(
        EndTransactionProcessor(broker),
        RemotingCommand.request(RequestCode.END_TRANSACTION, header.to_ext_fields()),
    )


def _records(broker: BrokerController, topic: str, queue_id: int) -> list[MessageExt]:
    result = broker.store.get_message("g", topic, queue_id, 0, 64)
    return [m for buf in result.buffers for m in decode_records(bytes(buf))]


def test_a_half_is_stored_in_the_half_topic_with_its_real_topic_and_queue(broker: BrokerController) -> None:
    response = _send_half(broker, b"h1", born=1)
    ext = response.ext_fields or {}
    assert ext["queueId"] == "2" and ext["queueOffset"] == "0"  # the real queue, the half offset
    (half,) = _records(broker, RMQ_SYS_TRANS_HALF_TOPIC, 0)
    assert half.properties[MessageConst.REAL_TOPIC] == TOPIC
    assert half.properties[MessageConst.REAL_QID] == "2"
    assert half.sys_flag & 0xC == 0  # TRANSACTION_NOT_TYPE in the half queue
    assert broker.store.get_max_offset_in_queue(TOPIC, 2) == 0  # nothing visible


def test_reject_transaction_message(tmp_path: Path) -> None:
    cfg = dataclasses.replace(unit_broker_config(tmp_path), reject_transaction_message=True)
    b = BrokerController(cfg)
    b.topic_config_manager.create_topic_in_send_message_back_method(TOPIC, 4, 6, 0)
    b.store.start()
    try:
        props = encode_properties({MessageConst.TRAN_MSG: "TRUE", MessageConst.PGROUP: GROUP})
        response = _run(SendMessageProcessor(b), send_request(TOPIC, b"x", properties=props))
        assert response is not None and response.code == ResponseCode.NO_PERMISSION
        assert response.remark == "the broker[127.0.0.1] sending transaction message is forbidden"
    finally:
        b.store.shutdown()


def test_commit_restores_the_message_and_writes_the_op_record(broker: BrokerController) -> None:
    sent = _send_half(broker, b"h1", born=1)
    answer = _end(broker, sent, 8)
    assert answer is not None and answer.code == ResponseCode.SUCCESS and answer.ext_fields is None
    (msg,) = _records(broker, TOPIC, 2)
    assert msg.body == b"h1" and msg.sys_flag & 0xC == 0x8
    # Java clears REAL_TOPIC/REAL_QID/TRAN_MSG only after fixing the property string
    assert {MessageConst.REAL_TOPIC, MessageConst.REAL_QID, MessageConst.TRAN_MSG} <= set(msg.properties)
    (op,) = _records(broker, RMQ_SYS_TRANS_OP_HALF_TOPIC, 0)
    assert op.tags == REMOVETAG and op.body == b"0"  # the half's queue offset, as text
    assert set(op.properties) == {MessageConst.TAGS, MessageConst.WAIT}
    assert op.born_host == op.store_host == broker.store_host


def test_rollback_writes_only_the_op_record(broker: BrokerController) -> None:
    sent = _send_half(broker, b"h1", born=1)
    answer = _end(broker, sent, 12)
    assert answer is not None and answer.code == ResponseCode.SUCCESS
    assert _records(broker, TOPIC, 2) == []
    assert [op.body for op in _records(broker, RMQ_SYS_TRANS_OP_HALF_TOPIC, 0)] == [b"0"]


@pytest.mark.parametrize(
    ("over", "remark"),
    [
        ({"producer_group": "other"}, "The producer group wrong"),
        ({"tran_state_table_offset": 5}, "The transaction state table offset wrong"),
        ({"commit_or_rollback": 5}, "commitOrRollback field wrong"),
        ({"commit_log_offset": 1 << 30}, "Find prepared transaction message failed"),
    ],
)
def test_end_transaction_refusals(broker: BrokerController, over: dict[str, object], remark: str) -> None:
    sent = _send_half(broker, b"h1", born=1)
    answer = _end(broker, sent, 8, **over)
    assert answer is not None and answer.code == ResponseCode.SYSTEM_ERROR
    assert answer.remark == remark
    assert _records(broker, RMQ_SYS_TRANS_OP_HALF_TOPIC, 0) == []


def test_unknown_changes_nothing_and_gets_no_answer(broker: BrokerController) -> None:
    sent = _send_half(broker, b"h1", born=1)
    assert _end(broker, sent, 0) is None
    assert _end(broker, sent, 0, from_transaction_check=True) is None
    assert _records(broker, RMQ_SYS_TRANS_OP_HALF_TOPIC, 0) == []


def _service(broker: BrokerController) -> TransactionalMessageService:
    return TransactionalMessageService(
        broker.transactional_message_bridge, file_reserved_time_ms=72 * 3_600_000
    )


def test_check_skips_young_and_resolved_halves_and_rechecks_the_rest(broker: BrokerController) -> None:
    service, listener = _service(broker), _Recorder()
    born = _wall_ms() - 10_000
    committed = _send_half(broker, b"committed", born=born)
    _send_half(broker, b"open", born=born)
    _end(broker, committed, 8)
    _next_ms()
    service.check(60_000, 3, listener)  # younger than this timeout
    assert listener.checked == []
    service.check(1000, 3, listener)
    assert [m.body for m in listener.checked] == [b"open"]
    first = listener.checked[0]
    # re-put at the end of the half queue; the check names the copy
    assert first.queue_offset == 2 and first.properties[MessageConst.TRANSACTION_CHECK_TIMES] == "1"
    # progress: past both halves; past the op record (offset 0)
    bridge = broker.transactional_message_bridge
    assert broker.consumer_offset_manager.query_offset(CID_SYS_RMQ_TRANS, RMQ_SYS_TRANS_HALF_TOPIC, 0) == 2
    assert broker.consumer_offset_manager.query_offset(CID_SYS_RMQ_TRANS, RMQ_SYS_TRANS_OP_HALF_TOPIC, 0) == 1
    assert bridge.fetch_consume_offset(RMQ_SYS_TRANS_HALF_TOPIC, 0) == 2


def test_check_discards_after_check_max(broker: BrokerController) -> None:
    service, listener = _service(broker), _Recorder()
    _send_half(broker, b"open", born=_wall_ms() - 10_000)
    for _ in range(5):
        _next_ms()
        service.check(1000, 3, listener)
    assert [m.properties[MessageConst.TRANSACTION_CHECK_TIMES] for m in listener.checked] == ["1", "2", "3"]
    assert [m.body for m in listener.discarded] == [b"open"]


def test_check_skips_halves_older_than_the_retention(broker: BrokerController) -> None:
    service, listener = _service(broker), _Recorder()
    _send_half(broker, b"ancient", born=_wall_ms() - 73 * 3_600_000)
    _next_ms()
    service.check(1000, 15, listener)
    assert listener.checked == [] and [m.body for m in listener.discarded] == [b"ancient"]


def test_op_offset_advances_over_contiguous_runs_only() -> None:
    from rocketq.broker.transaction.service import _calculate_op_offset

    assert _calculate_op_offset([3, 1, 2], 1) == 4
    assert _calculate_op_offset([1, 3], 1) == 2
    assert _calculate_op_offset([], 7) == 7


def test_a_checked_half_loses_its_flag_as_in_java(broker: BrokerController) -> None:
    # renewHalfMessageInner copies neither flag nor reconsumeTimes
    props = encode_properties({MessageConst.TRAN_MSG: "true", MessageConst.PGROUP: GROUP})
    request = send_request(TOPIC, b"flagged", queue_id=1, properties=props)
    assert request.ext_fields is not None
    request.ext_fields["g"] = str(_wall_ms() - 10_000)
    request.ext_fields["h"] = "5"  # flag (V2 name)
    response = _run(SendMessageProcessor(broker), request)
    assert response is not None and response.code == ResponseCode.SUCCESS
    assert [m.flag for m in _records(broker, RMQ_SYS_TRANS_HALF_TOPIC, 0)] == [5]
    listener = _Recorder()
    _next_ms()
    _service(broker).check(1000, 3, listener)
    assert [m.flag for m in _records(broker, RMQ_SYS_TRANS_HALF_TOPIC, 0)] == [5, 0]
    # the check itself is encoded from the half as read (putBackHalfMsgQueue updates only its
    # offsets), so the producer still sees flag 5; a commit of the copy stores flag 0
    assert [m.flag for m in listener.checked] == [5]


def _reply_request(props: dict[str, str]) -> RemotingCommand:
    return send_request(
        "DefaultCluster_REPLY_TOPIC",
        b"answer",
        properties=encode_properties(props),
        code=RequestCode.SEND_REPLY_MESSAGE_V2,
    )


@pytest.mark.parametrize(
    ("props", "remark"),
    [
        ({MessageConst.CORRELATION_ID: "c"}, "reply message properties[REPLY_TO_CLIENT] is null"),
        (
            {MessageConst.CORRELATION_ID: "c", MessageConst.REPLY_TO_CLIENT: "10.0.0.9@1"},
            "push reply message fail, channel of <10.0.0.9@1> not found.",
        ),
    ],
)
def test_a_reply_nobody_waits_for_is_refused_but_stored(
    broker: BrokerController, props: dict[str, str], remark: str
) -> None:
    response = _run(ReplyMessageProcessor(broker), _reply_request(props))
    assert response is not None and response.code == ResponseCode.SYSTEM_ERROR
    assert response.remark == remark
    ext = response.ext_fields or {}
    # storeReplyMessageEnable: stored anyway, and the answer names the stored record
    assert ext["MSG_REGION"] == "DefaultRegion" and ext["queueOffset"] == "0" and ext["msgId"] != "0"
    (stored,) = _records(broker, "DefaultCluster_REPLY_TOPIC", 0)
    assert stored.body == b"answer" and MessageConst.CLUSTER not in stored.properties
