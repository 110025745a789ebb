"""Pure pieces of request/reply: the reply helper, the pending table, the reply push."""

from __future__ import annotations

import concurrent.futures
import zlib

import pytest

from rocketq.client.impl.mq_client_api import MQClientAPI
from rocketq.client.request_response import (
    RequestFutureHolder,
    RequestResponseFuture,
    create_reply_message,
    receive_reply_message,
    wait_response,
)
from rocketq.errors import ClientError, RequestTimeoutError
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frame import RemotingCommand
from rocketq.protocol.headers import ReplyMessageRequestHeader, SendMessageRequestHeader
from rocketq.protocol.message import Message, MessageConst, encode_properties
from rocketq.remoting.client import RemotingClient


class _Clock:
    def __init__(self) -> None:
        self.now = 0

    def __call__(self) -> int:
        return self.now


def test_reply_helper_copies_the_routing_properties() -> None:
    with pytest.raises(ClientError, match=r"property\[CLUSTER\] is null"):
        create_reply_message(Message("t", b"x"), b"y")
    request = Message(
        "t",
        b"x",
        properties={
            MessageConst.CLUSTER: "C1",
            MessageConst.CORRELATION_ID: "cid",
            MessageConst.REPLY_TO_CLIENT: "1.2.3.4@9",
            MessageConst.TTL: "3000",
        },
    )
    reply = create_reply_message(request, b"y")
    assert reply.topic == "C1_REPLY_TOPIC" and reply.body == b"y"
    assert {k: reply.properties[k] for k in ("MSG_TYPE", "CORRELATION_ID", "REPLY_TO_CLIENT", "TTL")} == {
        "MSG_TYPE": "reply",
        "CORRELATION_ID": "cid",
        "REPLY_TO_CLIENT": "1.2.3.4@9",
        "TTL": "3000",
    }


def test_expired_requests_fail_and_leave_the_table() -> None:
    clock = _Clock()
    holder = RequestFutureHolder("test-housekeeping")
    fut: concurrent.futures.Future[Message] = concurrent.futures.Future()
    holder.put(RequestResponseFuture("a", 100, fut, clock_ms=clock))
    holder.put(RequestResponseFuture("b", 1000, None, clock_ms=clock))
    clock.now = 100
    holder.scan_expired_request()
    assert len(holder) == 2  # not past its timeout yet (Java: diff > timeout)
    clock.now = 101
    holder.scan_expired_request()
    assert len(holder) == 1
    with pytest.raises(RequestTimeoutError, match="request timeout, no reply message"):
        fut.result(0)
    holder.shutdown()
    assert len(holder) == 0


def test_a_reply_completes_only_its_own_request() -> None:
    holder = RequestFutureHolder("test-housekeeping")
    fut: concurrent.futures.Future[Message] = concurrent.futures.Future()
    rf = RequestResponseFuture("mine", 1000, fut)
    holder.put(rf)
    stray = Message("r", b"?", properties={MessageConst.CORRELATION_ID: "someone-else"})
    assert holder.process_reply_message(stray, "h") is False
    assert not fut.done()
    reply = Message("r", b"!", properties={MessageConst.CORRELATION_ID: "mine"})
    assert holder.process_reply_message(reply, "h") is True
    assert fut.result(0) is reply
    assert holder.process_reply_message(reply, "h") is False  # once only
    assert wait_response(rf, "t", 1000, 0) is reply


def test_wait_response_errors() -> None:
    rf = RequestResponseFuture("x", 10)
    with pytest.raises(
        RequestTimeoutError, match="send request message to <t> OK, but wait reply message timeout, 10 ms"
    ):
        wait_response(rf, "t", 10, 1)
    rf.fail(ClientError("no route"))
    with pytest.raises(ClientError, match="send request message to <t> fail"):
        wait_response(rf, "t", 10, 1)


def test_receive_reply_message_rebuilds_the_reply() -> None:
    holder = RequestFutureHolder("test-housekeeping")
    fut: concurrent.futures.Future[Message] = concurrent.futures.Future()
    holder.put(RequestResponseFuture("cid", 1000, fut))
    header = ReplyMessageRequestHeader(
        producer_group="PG",
        topic="C_REPLY_TOPIC",
        default_topic="TBW102",
        default_topic_queue_nums=4,
        queue_id=0,
        sys_flag=0x301,  # COMPRESSED | ZLIB
        born_timestamp=5,
        flag=3,
        properties=encode_properties({MessageConst.CORRELATION_ID: "cid", "k": "v"}),
        reconsume_times=0,
        born_host="127.0.0.1:40000",
        store_host="127.0.0.1:10911",
        store_timestamp=9,
    )
    push = RemotingCommand.request(
        RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT, header.to_ext_fields(), zlib.compress(b"hello")
    )
    answer = receive_reply_message(holder, push)
    assert answer.code == ResponseCode.SUCCESS and answer.ext_fields is None and answer.remark is None
    reply = fut.result(0)
    assert reply.body == b"hello" and reply.flag == 3 and reply.topic == "C_REPLY_TOPIC"
    assert reply.properties["k"] == "v" and MessageConst.ARRIVE_TIME in reply.properties
    bad = RemotingCommand.request(
        RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT, header.to_ext_fields(), b"not zlib"
    )
    answer = receive_reply_message(holder, bad)
    assert answer.code == ResponseCode.SYSTEM_ERROR and answer.remark == "process reply message fail"


def test_a_reply_is_sent_as_send_reply_message_v2() -> None:
    # MQClientAPIImpl.sendMessage: MSG_TYPE=reply -> SEND_REPLY_MESSAGE_V2 (325)
    def header(props: dict[str, str]) -> SendMessageRequestHeader:
        return SendMessageRequestHeader(
            producer_group="PG",
            topic="T",
            default_topic="TBW102",
            default_topic_queue_nums=4,
            queue_id=0,
            sys_flag=0,
            born_timestamp=1,
            flag=0,
            properties=encode_properties(props),
        )

    api = MQClientAPI(RemotingClient(name="unused"), [])  # build_send_request opens no connection
    reply = create_reply_message(Message("t", b"x", properties={MessageConst.CLUSTER: "C"}), b"y")
    assert api.build_send_request(header(reply.properties), b"y").code == RequestCode.SEND_REPLY_MESSAGE_V2
    assert (
        api.build_send_request(header({MessageConst.MSG_TYPE: "other"}), b"y").code
        == RequestCode.SEND_MESSAGE_V2
    )
    assert api.build_send_request(header({}), b"y").code == RequestCode.SEND_MESSAGE_V2
