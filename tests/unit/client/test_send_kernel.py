"""The producer's direct send path equals the header codecs (issue #27, speed-sendkernel).

``send_v2_fields``/``send_request_of`` write the SEND_MESSAGE_V2 map straight from the prepared
send; they must give exactly the map (keys, values and order) and frame that
``MQClientAPI.build_send_request(send_header(...))`` gives, for both serialize types, with and
without the retry-topic fields, for batches, compressed bodies and reply messages.
``send_result_of`` must read an answer exactly as ``MQClientAPI.process_send_response`` does.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.client.api_results import SendResult
from rocketq.client.config import ProducerConfig
from rocketq.client.impl.mq_client_api import MQClientAPI
from rocketq.client.latency import MQFaultStrategy, TopicPublishInfo
from rocketq.client.send_prep import (
    PreparedSend,
    SendAttempts,
    prepare_batch,
    prepare_message,
    send_code_of,
    send_frame_of,
    send_header,
    send_request_of,
    send_result_of,
    send_v2_fields,
)
from rocketq.errors import BrokerError, MalformedFrameError
from rocketq.protocol.codes import LanguageCode, RequestCode, SerializeType
from rocketq.protocol.frame import RemotingCommand, encode_json_request
from rocketq.protocol.headers import SendMessageRequestHeaderV2
from rocketq.protocol.message import Message, MessageConst
from rocketq.protocol.message_queue import MessageQueue
from rocketq.protocol.mixall import REPLY_MESSAGE_FLAG
from rocketq.remoting.client import RemotingClient

CONFIG = ProducerConfig(producer_group="PG")
MQ = MessageQueue("T", "broker-a", 3)


def _preps() -> list[PreparedSend]:
    retry = Message("%RETRY%G", b"r", properties={"RECONSUME_TIME": "2", "MAX_RECONSUME_TIMES": "16"})
    retry_no_max = Message("%RETRY%G", b"r", properties={"RECONSUME_TIME": "1"})
    return [
        prepare_message(Message("T", b"body", tags="A", keys="k1 k2"), CONFIG),
        prepare_message(Message("T", b"z" * 5000), CONFIG),  # compressed: sysFlag set
        prepare_message(retry, CONFIG),  # j and l set
        prepare_message(retry_no_max, CONFIG),  # j set, l absent
        prepare_batch([Message("T", b"a"), Message("T", b"b")], CONFIG),
    ]


def _with_optional(prep: PreparedSend, reconsume: int | None, max_reconsume: int | None) -> PreparedSend:
    prep.reconsume_times, prep.max_reconsume_times = reconsume, max_reconsume
    return prep


@pytest.mark.parametrize("serialize_type", [SerializeType.JSON, SerializeType.ROCKETMQ])
def test_v2_fields_equal_the_header_codec(serialize_type: int) -> None:
    preps = _preps()
    # every combination of the two optional fields (absent ones change the HashMap's size)
    preps += [
        _with_optional(prepare_message(Message("T", b"x"), CONFIG), r, m)
        for r in (None, 5)
        for m in (None, 7)
    ]
    for prep in preps:
        header = send_header(prep, MQ, CONFIG)
        header.born_timestamp = 1_700_000_000_123
        header.batch = prep.batch
        want = SendMessageRequestHeaderV2.ext_fields_from_v1(header, serialize_type=serialize_type)
        got = send_v2_fields(prep, MQ, CONFIG, serialize_type, 1_700_000_000_123)
        assert list(got.items()) == list(want.items())


@pytest.mark.parametrize("serialize_type", [SerializeType.JSON, SerializeType.ROCKETMQ])
def test_request_encodes_the_bytes_of_build_send_request(serialize_type: int) -> None:
    remoting = RemotingClient(name="send-kernel")  # never started: nothing is sent
    try:
        api = MQClientAPI(remoting, language=LanguageCode.JAVA, serialize_type=serialize_type)
        for prep in _preps():
            direct = send_request_of(prep, MQ, CONFIG, api.language, api.serialize_type)
            assert direct.ext_fields is not None
            header = send_header(prep, MQ, CONFIG)
            header.born_timestamp = int(direct.ext_fields["g"])
            generic = api.build_send_request(header, prep.body, batch=prep.batch)
            direct.opaque = generic.opaque = 9
            assert direct.code == generic.code
            assert direct.encode() == generic.encode()
    finally:
        remoting.close()


def _frame_preps() -> list[PreparedSend]:
    odd = Message("T", b"o", properties={"k\u00e9": 'v"\\\x03\u2028\U0001f600', "e": ""})
    reply = Message("T", b"x", properties={MessageConst.MSG_TYPE: REPLY_MESSAGE_FLAG})
    return [
        *_preps(),
        prepare_message(odd, CONFIG),  # quotes, backslashes, control and non-ASCII characters
        prepare_message(reply, CONFIG),
        *(
            _with_optional(prepare_message(Message("T", b"x"), CONFIG), r, m)
            for r in (None, 5)
            for m in (None, 7)
        ),
    ]


def _same_frame(
    prep: PreparedSend, mq: MessageQueue, config: ProducerConfig, language: int, opaque: int
) -> None:
    """send_frame_of's frame is send_request_of's request encoded with the same opaque (the
    born timestamp read back from the frame: both read the wall clock)."""
    frame = send_frame_of(prep, mq, config, language, SerializeType.JSON, opaque, send_code_of(prep))
    assert frame is not None
    request = send_request_of(prep, mq, config, language, SerializeType.JSON)
    assert request.ext_fields is not None
    born = frame.split(b'"g":"', 1)[1].split(b'"', 1)[0].decode()
    request.ext_fields["g"] = born
    request.opaque = opaque
    assert frame == request.encode()
    assert send_code_of(prep) == request.code


@pytest.mark.parametrize("language", [LanguageCode.PYTHON, LanguageCode.JAVA, 99])  # 99: "OTHER"
def test_frame_is_the_request_encoded(language: int) -> None:
    mq = MessageQueue("T", 'b\u00e9"\\', 2)
    for prep in _frame_preps():
        for opaque in (0, 7, -(2**31), 2**31 - 1):
            _same_frame(prep, MQ, CONFIG, language, opaque)
            _same_frame(prep, mq, CONFIG, language, opaque)


@given(
    topic=st.text(min_size=1, max_size=20),
    value=st.text(max_size=30).filter(lambda v: "\x01" not in v and "\x02" not in v),
    broker=st.text(max_size=10),
    queue_id=st.integers(-1, 2**31 - 1),
    flag=st.integers(-(2**31), 2**31 - 1),
)
def test_frame_is_the_request_encoded_for_any_text(
    topic: str, value: str, broker: str, queue_id: int, flag: int
) -> None:
    prep = PreparedSend(topic, b"b", 0, flag, f"K\x01{value}", "U", False, 0, None)
    _same_frame(prep, MessageQueue(topic, broker, queue_id), CONFIG, LanguageCode.PYTHON, 5)


def test_frame_of_the_binary_header_is_left_to_the_request() -> None:
    prep = prepare_message(Message("T", b"x"), CONFIG)
    assert send_frame_of(prep, MQ, CONFIG, 0, SerializeType.ROCKETMQ, 1, send_code_of(prep)) is None


def test_json_request_frame_equals_the_command_encoded() -> None:
    ext = {"a": "x", "b": '"\x00\u00e9'}
    command = RemotingCommand(code=310, opaque=-5, language=LanguageCode.GO, ext_fields=ext, body=b"xyz")
    framed = encode_json_request(310, '{"a":"x","b":"\\"\\u0000\u00e9"}', LanguageCode.GO, -5, b"xyz")
    assert framed == command.encode()
    assert (
        encode_json_request(1, "{}", 0, 0, b"") == RemotingCommand(code=1, language=0, ext_fields={}).encode()
    )


def test_request_codes() -> None:
    plain, batch = prepare_message(Message("T", b"x"), CONFIG), prepare_batch([Message("T", b"x")], CONFIG)
    reply = prepare_message(
        Message("T", b"x", properties={MessageConst.MSG_TYPE: REPLY_MESSAGE_FLAG}), CONFIG
    )
    other = prepare_message(Message("T", b"x", properties={MessageConst.MSG_TYPE: "other"}), CONFIG)
    codes = [send_request_of(p, MQ, CONFIG, 0, 0).code for p in (plain, batch, reply, other)]
    assert codes == [
        RequestCode.SEND_MESSAGE_V2,
        RequestCode.SEND_BATCH_MESSAGE,
        RequestCode.SEND_REPLY_MESSAGE_V2,
        RequestCode.SEND_MESSAGE_V2,
    ]


def _answer(ext: dict[str, str] | None, code: int = 0) -> RemotingCommand:
    return RemotingCommand(code=code, flag=1, opaque=1, ext_fields=ext, remark="r")


@pytest.mark.parametrize(
    "ext",
    [
        {"msgId": "AB", "queueId": "3", "queueOffset": "12", "MSG_REGION": "R", "TRACE_ON": "false"},
        {"msgId": "AB", "queueId": "4", "queueOffset": "12", "transactionId": "tx", "TRACE_ON": "true"},
        {"msgId": "AB", "queueId": "-1", "queueOffset": "12"},  # a sign: the header codec
        {"msgId": "AB", "queueId": "3", "queueOffset": "1234567890123456789"},  # 19 digits
        {"msgId": "AB", "queueId": "007", "queueOffset": "0"},
        {"msgId": "AB", "queueId": "٣", "queueOffset": "1"},  # a non-ASCII digit
        {"msgId": "AB", "queueId": "", "queueOffset": "1"},
    ],
)
@pytest.mark.parametrize("code", [0, 10, 11, 12])
def test_result_equals_process_send_response(ext: dict[str, str], code: int) -> None:
    def outcome(fn: Callable[[], SendResult]) -> object:
        try:
            result = fn()
        except MalformedFrameError as exc:  # e.g. an empty queueId counts as missing
            return (type(exc), str(exc))
        return (result, hash(result))

    want = outcome(
        lambda: MQClientAPI.process_send_response("broker-a", "T", 3, "U", _answer(ext, code), "addr")
    )
    assert outcome(lambda: send_result_of(_answer(ext, code), MQ, "U", "addr")) == want


def test_result_reuses_the_queue_the_broker_used() -> None:
    same = send_result_of(_answer({"msgId": "A", "queueId": "3", "queueOffset": "1"}), MQ, "U", "a")
    other = send_result_of(_answer({"msgId": "A", "queueId": "1", "queueOffset": "1"}), MQ, "U", "a")
    assert same.message_queue is MQ
    assert other.message_queue == MessageQueue("T", "broker-a", 1)


def test_result_errors_are_those_of_process_send_response() -> None:
    with pytest.raises(MalformedFrameError, match="queueOffset"):
        send_result_of(_answer({"msgId": "AB", "queueId": "3"}), MQ, "U", "addr")
    with pytest.raises(MalformedFrameError):
        send_result_of(_answer(None), MQ, "U", "addr")
    with pytest.raises(BrokerError) as info:
        send_result_of(_answer({"msgId": "AB", "queueId": "3", "queueOffset": "1"}, code=1), MQ, "U", "addr")
    assert info.value.code == 1


class _Clock:
    """A manual clock that counts its reads."""

    def __init__(self, now: int) -> None:
        self.now, self.reads = now, 0

    def __call__(self) -> int:
        self.reads += 1
        return self.now


@pytest.mark.parametrize("fault_enabled", [False, True])
def test_attempt_clock_reads(fault_enabled: bool) -> None:
    """An attempt starts at next_queue's clock read; a success reads the clock again only
    when the latency fault strategy is on (its latency feeds nothing else)."""
    clock = _Clock(1_000)
    fault = MQFaultStrategy(enabled=fault_enabled, clock_ms=clock)
    attempts = SendAttempts(fault, TopicPublishInfo([MQ]), CONFIG, "T", 900, 3_000, clock, retries=2)
    assert attempts.next_queue() == MQ
    assert (attempts.started_ms, clock.reads) == (1_000, 1)
    assert attempts.remaining_ms(attempts.started_ms) == 2_900
    clock.now = 1_070
    assert attempts.succeeded(MQ, attempts.started_ms, None) is True
    assert clock.reads == (3 if fault_enabled else 1)  # the latency, then the isolation stamp
    # 70 ms isolates for 0 ms, but the item is recorded: the broker is then a known one
    assert fault.fault_tolerance.is_available("broker-a") is True
    assert fault.fault_tolerance.pick_one_at_least() == ("broker-a" if fault_enabled else None)
