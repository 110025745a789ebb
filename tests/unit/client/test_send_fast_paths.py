"""The producer's send path equals the generic codecs.

``build_send_request`` must encode exactly the bytes of the generic V2 request (the V2 map
comes from ``SendMessageRequestHeaderV2.ext_fields_from_v1``, held equal to
``from_v1(h).to_ext_fields()`` in tests/unit/test_headers.py), and
``process_send_response`` must read a send answer as the generic header decoder does, plain
answers and odd ones alike.
"""

from __future__ import annotations

import pytest

from rocketq.client.api_results import SendStatus
from rocketq.client.impl.mq_client_api import MQClientAPI
from rocketq.errors import MalformedFrameError
from rocketq.protocol.codes import RequestCode
from rocketq.protocol.frame import RemotingCommand
from rocketq.protocol.headers import (
    SendMessageRequestHeader,
    SendMessageRequestHeaderV2,
    SendMessageResponseHeader,
)
from rocketq.remoting.client import RemotingClient


def test_build_send_request_encodes_the_same_bytes_as_the_generic_request() -> None:
    api = MQClientAPI(RemotingClient(name="fast-path"))  # never started: nothing is sent
    header = SendMessageRequestHeader(
        producer_group="PG",
        topic="T",
        default_topic="TBW102",
        default_topic_queue_nums=4,
        queue_id=3,
        sys_flag=0,
        born_timestamp=1_700_000_000_000,
        flag=0,
        properties="UNIQ_KEY\x01ABC\x02WAIT\x01true\x02",
        reconsume_times=0,
        bname="broker-a",
    )
    fast = api.build_send_request(header, b"body")
    generic = api.request(RequestCode.SEND_MESSAGE_V2, SendMessageRequestHeaderV2.from_v1(header), b"body")
    fast.opaque = generic.opaque = 7
    assert fast.code == RequestCode.SEND_MESSAGE_V2
    assert fast.encode() == generic.encode()


def _answer(ext: dict[str, str] | None) -> RemotingCommand:
    return RemotingCommand(code=0, flag=1, opaque=1, ext_fields=ext)


@pytest.mark.parametrize(
    "ext",
    [
        {"msgId": "AB", "queueId": "3", "queueOffset": "12", "MSG_REGION": "R", "TRACE_ON": "false"},
        {"msgId": "AB", "queueId": "3", "queueOffset": "12", "transactionId": "tx"},
        {"msgId": "AB", "queueId": "-1", "queueOffset": "12"},  # not plain digits: generic path
        {"msgId": "AB", "queueId": "3", "queueOffset": "1234567890123456789"},  # 19 digits: generic path
        {"msgId": "AB", "queueId": "٣", "queueOffset": "1"},  # a non-ASCII digit
    ],
)
def test_process_send_response_reads_answers_as_the_generic_decoder(ext: dict[str, str]) -> None:
    result = MQClientAPI.process_send_response("b", "T", 5, "U", _answer(ext), "addr")
    header = SendMessageResponseHeader.from_ext_fields(ext)
    assert result.status is SendStatus.SEND_OK
    assert result.offset_msg_id == header.msg_id
    assert result.message_queue.queue_id == (header.queue_id if header.queue_id is not None else 5)
    assert result.queue_offset == (header.queue_offset if header.queue_offset is not None else -1)
    assert result.transaction_id == header.transaction_id
    assert result.region_id == ext.get("MSG_REGION")
    assert result.trace_on is (ext.get("TRACE_ON") != "false")


def test_process_send_response_without_required_fields_is_malformed() -> None:
    with pytest.raises(MalformedFrameError, match="queueOffset"):
        MQClientAPI.process_send_response("b", "T", 5, "U", _answer({"msgId": "AB", "queueId": "3"}), "addr")
