"""``SendResult`` / ``TransactionSendResult`` as plain slotted classes keep the frozen
dataclass's API: constructor (positional and keyword, defaults), equality by class and
fields, hash, repr, read-only fields, pickling, match patterns."""

from __future__ import annotations

import pickle

import pytest

from rocketq.client.api_results import SendResult, SendStatus
from rocketq.client.transaction import LocalTransactionState, TransactionSendResult
from rocketq.protocol.message_queue import MessageQueue

MQ = MessageQueue("t", "b", 3)


def _result(**kw: object) -> SendResult:
    args: dict[str, object] = {
        "status": SendStatus.SEND_OK,
        "msg_id": "m",
        "offset_msg_id": "o",
        "message_queue": MQ,
        "queue_offset": 7,
    }
    args.update(kw)
    return SendResult(**args)  # type: ignore[arg-type]


def test_constructor_defaults_and_positional_order() -> None:
    r = SendResult(SendStatus.FLUSH_DISK_TIMEOUT, "m", "o", MQ, 7, "tx", "DefaultRegion", False)
    assert (r.status, r.msg_id, r.offset_msg_id, r.message_queue, r.queue_offset) == (
        SendStatus.FLUSH_DISK_TIMEOUT,
        "m",
        "o",
        MQ,
        7,
    )
    assert (r.transaction_id, r.region_id, r.trace_on) == ("tx", "DefaultRegion", False)
    d = _result()
    assert (d.transaction_id, d.region_id, d.trace_on) == (None, None, True)


def test_equality_hash_and_repr() -> None:
    assert _result() == _result()
    assert hash(_result()) == hash(_result())
    assert _result() != _result(queue_offset=8)
    assert _result() != _result(trace_on=False)
    assert _result().__eq__("x") is NotImplemented
    assert repr(_result(region_id="r")) == (
        "SendResult(status=<SendStatus.SEND_OK: 'SEND_OK'>, msg_id='m', offset_msg_id='o', "
        f"message_queue={MQ!r}, queue_offset=7, transaction_id=None, region_id='r', trace_on=True)"
    )


def test_fields_are_read_only() -> None:
    r = _result()
    with pytest.raises(AttributeError):
        r.status = SendStatus.FLUSH_DISK_TIMEOUT  # type: ignore[misc]
    with pytest.raises(AttributeError):
        r.other = 1  # type: ignore[attr-defined]


def test_pickle_round_trip() -> None:
    r = _result(transaction_id="tx", region_id="r", trace_on=False)
    assert pickle.loads(pickle.dumps(r)) == r
    t = TransactionSendResult(
        SendStatus.SEND_OK, "m", "o", MQ, 7, local_transaction_state=LocalTransactionState.COMMIT_MESSAGE
    )
    back = pickle.loads(pickle.dumps(t))
    assert back == t
    assert back.local_transaction_state is LocalTransactionState.COMMIT_MESSAGE


def test_transaction_result_extends_the_fields() -> None:
    t = TransactionSendResult(SendStatus.SEND_OK, "m", "o", MQ, 7)
    assert t.local_transaction_state is LocalTransactionState.UNKNOW
    assert isinstance(t, SendResult)
    assert t != _result()  # another class: never equal, as dataclasses compare
    assert repr(t).startswith("TransactionSendResult(status=")
    assert repr(t).endswith(
        "trace_on=True, local_transaction_state=<LocalTransactionState.UNKNOW: 'UNKNOW'>)"
    )


def test_match_by_position() -> None:
    match _result():
        case SendResult(SendStatus.SEND_OK, msg_id, _, mq, offset):
            assert (msg_id, mq, offset) == ("m", MQ, 7)
        case _:
            pytest.fail("SendResult did not match by position")
