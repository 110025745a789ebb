"""The push consumer's pull request and answer without header objects (issue #27, speed14).

``pull_frame_of`` must give exactly the frame ``MQClientAPI.build_pull_request(build_pull_header(...))``
encodes (the same keys, values, order and bytes), with and without the optional
``subscription`` and ``expressionType``, for any text in the string fields; ``pull_result_of``
must read an answer exactly as ``MQClientAPI.process_pull_response`` does, and leave every
unusual one (and its errors) to it.
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.client.impl.mq_client_api import MQClientAPI
from rocketq.client.impl.pull_api_wrapper import build_pull_header, pull_frame_of, pull_result_of
from rocketq.errors import BrokerError, MalformedFrameError
from rocketq.protocol.codes import LanguageCode, ResponseCode, SerializeType
from rocketq.protocol.frame import RemotingCommand
from rocketq.protocol.message_queue import MessageQueue
from rocketq.remoting.client import RemotingClient


def _same_frame(
    group: str,
    mq: MessageQueue,
    offset: int,
    max_nums: int,
    *,
    sys_flag: int = 3,
    commit_offset: int = 0,
    suspend: int = 15_000,
    subscription: str | None = None,
    sub_version: int = 0,
    expression_type: str | None = "TAG",
    language: int = LanguageCode.PYTHON,
    opaque: int = 7,
) -> None:
    remoting = RemotingClient(name="pull-frame")  # never started: nothing is sent
    try:
        api = MQClientAPI(remoting, language=language, serialize_type=SerializeType.JSON)
        request = api.build_pull_request(
            build_pull_header(
                group,
                mq,
                offset,
                max_nums,
                sys_flag=sys_flag,
                commit_offset=commit_offset,
                suspend_timeout_millis=suspend,
                subscription=subscription,
                sub_version=sub_version,
                expression_type=expression_type,
            )
        )
    finally:
        remoting.close()
    request.opaque = opaque
    frame = pull_frame_of(
        group,
        mq,
        offset,
        max_nums,
        sys_flag=sys_flag,
        commit_offset=commit_offset,
        suspend_timeout_millis=suspend,
        subscription=subscription,
        sub_version=sub_version,
        expression_type=expression_type,
        language=language,
        opaque=opaque,
    )
    assert frame == request.encode()


@pytest.mark.parametrize("subscription", [None, "*", "TagA || TagB", "a > 5 AND b = 'x'"])
@pytest.mark.parametrize("expression_type", ["TAG", "SQL92", None])
@pytest.mark.parametrize("language", [LanguageCode.PYTHON, LanguageCode.JAVA, 99])  # 99: "OTHER"
def test_the_frame_is_the_header_encoded(
    subscription: str | None, expression_type: str | None, language: int
) -> None:
    mq = MessageQueue("TopicTest", "broker-a", 3)
    for offset, commit in ((0, 0), (123_456_789_012, 42), (-1, -1)):
        _same_frame(
            "GroupA",
            mq,
            offset,
            32,
            commit_offset=commit,
            subscription=subscription,
            sub_version=1_700_000_000_123,
            expression_type=expression_type,
            language=language,
        )


@pytest.mark.parametrize("opaque", [0, 1, -(2**31), 2**31 - 1])
def test_the_frame_carries_the_opaque_and_flags(opaque: int) -> None:
    mq = MessageQueue("T", "b", 0)
    for sys_flag in (0, 1, 2, 3, 7, 0x1F):
        _same_frame("G", mq, 5, 1, sys_flag=sys_flag, suspend=0, opaque=opaque)


@given(
    group=st.text(min_size=1, max_size=20),
    topic=st.text(min_size=1, max_size=20),
    broker=st.text(max_size=10),
    subscription=st.none() | st.text(max_size=30),
    expression_type=st.none() | st.text(max_size=8),
    queue_id=st.integers(-1, 2**31 - 1),
    offset=st.integers(-(2**63), 2**63 - 1),
    max_nums=st.integers(-(2**31), 2**31 - 1),
)
def test_the_frame_is_the_header_encoded_for_any_text(
    group: str,
    topic: str,
    broker: str,
    subscription: str | None,
    expression_type: str | None,
    queue_id: int,
    offset: int,
    max_nums: int,
) -> None:
    _same_frame(
        group,
        MessageQueue(topic, broker, queue_id),
        offset,
        max_nums,
        subscription=subscription,
        expression_type=expression_type,
    )


def _answer(
    code: int, ext: dict[str, str] | None, body: bytes = b"", remark: str | None = "FOUND"
) -> RemotingCommand:
    return RemotingCommand(code=code, ext_fields=ext, body=body, remark=remark)


def _fields(next_begin: str = "32", low: str = "0", high: str = "40", suggest: str = "0") -> dict[str, str]:
    return {
        "suggestWhichBrokerId": suggest,
        "nextBeginOffset": next_begin,
        "minOffset": low,
        "maxOffset": high,
    }


_CODES = [
    ResponseCode.SUCCESS,
    ResponseCode.PULL_NOT_FOUND,
    ResponseCode.PULL_RETRY_IMMEDIATELY,
    ResponseCode.PULL_OFFSET_MOVED,
]


@pytest.mark.parametrize("code", _CODES)
@pytest.mark.parametrize(
    "ext",
    [
        _fields(),
        _fields("123456789012345678", "-1", "999999999999999999", "1"),  # 18 digits, a sign
        _fields("+5"),  # Java's parser takes a plus: the codec path
        _fields("1234567890123456789"),  # 19 digits: the codec path
        _fields("\u0661"),  # not ASCII
        {**_fields(), "extra": "x"},
    ],
)
def test_the_answer_is_read_as_the_codec_reads_it(code: int, ext: dict[str, str]) -> None:
    response = _answer(code, ext, b"records", "OFFSET_FOUND_NULL")
    want = MQClientAPI.process_pull_response(response, "a:1")
    got = pull_result_of(response, "a:1")
    assert dataclasses.asdict(got) == dataclasses.asdict(want)
    assert got.message_binary is response.body


@pytest.mark.parametrize("missing", ["suggestWhichBrokerId", "nextBeginOffset", "minOffset", "maxOffset"])
def test_an_answer_without_a_field_is_malformed_as_before(missing: str) -> None:
    ext = _fields()
    del ext[missing]
    with pytest.raises(MalformedFrameError):
        pull_result_of(_answer(ResponseCode.SUCCESS, ext), "a:1")


def test_an_answer_that_is_no_pull_status_is_the_brokers_error() -> None:
    with pytest.raises(BrokerError) as info:
        pull_result_of(_answer(ResponseCode.SUBSCRIPTION_NOT_LATEST, _fields(), remark="not latest"), "a:1")
    assert info.value.code == ResponseCode.SUBSCRIPTION_NOT_LATEST


@given(values=st.lists(st.text(max_size=20), min_size=4, max_size=4), code=st.sampled_from(_CODES))
def test_any_answer_reads_as_the_codec_reads_it(values: list[str], code: int) -> None:
    response = _answer(code, _fields(*values))
    try:
        want = dataclasses.asdict(MQClientAPI.process_pull_response(response, "a:1"))
    except Exception as exc:  # the same error, from the same place
        with pytest.raises(type(exc)):
            pull_result_of(response, "a:1")
        return
    assert dataclasses.asdict(pull_result_of(response, "a:1")) == want


def test_the_usual_answer_is_read_without_the_codec(monkeypatch: pytest.MonkeyPatch) -> None:
    """The direct read is taken (the equality tests above would also pass if it never were)."""

    def refuse(response: RemotingCommand, addr: str) -> object:
        raise AssertionError("the header codec was used for a usual answer")

    monkeypatch.setattr(MQClientAPI, "process_pull_response", staticmethod(refuse))
    got = pull_result_of(_answer(ResponseCode.SUCCESS, _fields("32", "0", "40", "1"), b"r"), "a:1")
    assert (got.next_begin_offset, got.min_offset, got.max_offset, got.suggest_which_broker_id) == (
        32,
        0,
        40,
        1,
    )
    with pytest.raises(AssertionError, match="header codec"):
        pull_result_of(_answer(ResponseCode.SUCCESS, _fields("+5")), "a:1")


class _Remoting:
    """Stands in for the RemotingClient under PullAPIWrapper.send_pull: records which call sent
    what (a duck-typed fake: the pure pass runs this test)."""

    def __init__(self, signs: bool) -> None:
        self.signs_requests = signs
        self.calls: list[tuple[str, bytes]] = []

    def next_opaque(self) -> int:
        return 41

    def invoke_async_callback_frame(
        self, addr: str, frame: bytes, opaque: int, timeout_ms: int, callback: object
    ) -> None:
        self.calls.append(("frame", frame))

    def invoke_async_callback(
        self, addr: str, request: RemotingCommand, timeout_ms: int, callback: object
    ) -> None:
        request.opaque = 41
        self.calls.append(("command", request.encode()))


@pytest.mark.pure_python
@pytest.mark.parametrize(("signs", "serialize_type", "path"), [
    (False, SerializeType.JSON, "frame"),
    (True, SerializeType.JSON, "command"),  # an rpc hook must see the request
    (False, SerializeType.ROCKETMQ, "command"),
])  # fmt: skip
def test_send_pull_takes_the_frame_only_for_an_unsigned_json_client(
    signs: bool, serialize_type: int, path: str
) -> None:
    from rocketq.client.impl.pull_api_wrapper import PullAPIWrapper

    remoting = _Remoting(signs)
    api = MQClientAPI(remoting, language=LanguageCode.PYTHON, serialize_type=serialize_type)  # type: ignore[arg-type]
    host = type("Host", (), {"api": api})()
    wrapper = PullAPIWrapper(host, "GroupA")
    mq = MessageQueue("TopicTest", "broker-a", 2)
    wrapper.send_pull("a:1", mq, None, "TAG", 17, 100, 32, 3, 5, 15_000, 30_000, lambda r, e: None)
    ((how, sent),) = remoting.calls
    assert how == path
    if serialize_type == SerializeType.JSON:  # either way the same bytes
        header = build_pull_header(
            "GroupA", mq, 100, 32, sys_flag=3, commit_offset=5, suspend_timeout_millis=15_000,
            subscription=None, sub_version=17, expression_type="TAG",
        )  # fmt: skip
        request = api.build_pull_request(header)
        request.opaque = 41
        assert sent == request.encode()
