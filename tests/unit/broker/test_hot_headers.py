"""The data path's straight-line header code agrees with the generic codec.

``decode_send_header_v2`` and ``decode_pull_header`` must return either None (the caller
then uses ``from_ext_fields``) or exactly what ``from_ext_fields`` decodes;
``send_response_fields`` must equal ``SendMessageResponseHeader.to_ext_fields`` over
preSend's two keys and ``pull_response_fields`` ``PullMessageResponseHeader.to_ext_fields``,
key order included (the JSON header is written in the map's order, so the bytes follow).
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from rocketq.broker.processors.hot_headers import (
    decode_pull_header,
    decode_send_header_v2,
    pull_response_fields,
    send_response_fields,
)
from rocketq.protocol.headers import (
    PullMessageRequestHeader,
    PullMessageResponseHeader,
    SendMessageRequestHeaderV2,
    SendMessageResponseHeader,
)
from rocketq.protocol.message import MessageConst

#: the SEND_MESSAGE_V2 map of one message, shaped as a 4.9.7 producer builds it
_PRODUCER_V2 = {
    "a": "please_rename_unique_group_name",
    "b": "TopicTest",
    "c": "TBW102",
    "d": "4",
    "e": "1",
    "f": "0",
    "g": "1700000000123",
    "h": "0",
    "i": "UNIQ_KEY\x01AC1100020000000000000000\x02WAIT\x01true\x02TAGS\x01TagA\x02",
    "j": "0",
    "k": "false",
    "m": "false",
    "n": "broker-a",
}

_numbers = st.one_of(
    st.integers(min_value=-(2**63), max_value=2**64).map(str),
    st.sampled_from(["", " 1", "1 ", "+1", "-1", "01", "1_0", "\uff12", "2147483648", "9" * 19, "0x10"]),
)
_booleans = st.sampled_from(["true", "false", "TRUE", "True", "", "yes", "1"])
_values = {
    "a": st.text(max_size=8),
    "b": st.text(max_size=8),
    "c": st.text(max_size=8),
    "d": _numbers,
    "e": _numbers,
    "f": _numbers,
    "g": _numbers,
    "h": _numbers,
    "i": st.text(max_size=12),
    "j": _numbers,
    "k": _booleans,
    "l": _numbers,
    "m": _booleans,
    "n": st.text(max_size=8),
}


#: the PULL_MESSAGE map of one pull, shaped as a 4.9.7 push consumer builds it
_PUSH_PULL = {
    "consumerGroup": "please_rename_unique_group_name_4",
    "topic": "TopicTest",
    "queueId": "2",
    "queueOffset": "1234",
    "maxMsgNums": "32",
    "sysFlag": "3",
    "commitOffset": "1200",
    "suspendTimeoutMillis": "15000",
    "subscription": "*",
    "subVersion": "1700000000999",
    "expressionType": "TAG",
    "bname": "broker-a",
}
_pull_values = {
    "consumerGroup": st.text(max_size=8),
    "topic": st.text(max_size=8),
    "queueId": _numbers,
    "queueOffset": _numbers,
    "maxMsgNums": _numbers,
    "sysFlag": _numbers,
    "commitOffset": _numbers,
    "suspendTimeoutMillis": _numbers,
    "subscription": st.text(max_size=8),
    "subVersion": _numbers,
    "expressionType": st.text(max_size=6),
    "bname": st.text(max_size=8),
}


def _mutated(
    draw: st.DrawFn, base: dict[str, str], values: dict[str, st.SearchStrategy[str]]
) -> dict[str, str]:
    ext = dict(base)
    for key in draw(st.sets(st.sampled_from(sorted(values)))):
        if draw(st.booleans()):
            ext.pop(key, None)
        else:
            ext[key] = draw(values[key])
    if draw(st.booleans()):
        ext["AccessKey"] = "rocketmq2"  # an RPC hook's key: ignored by both
    return ext


@st.composite
def _ext_maps(draw: st.DrawFn) -> dict[str, str]:
    return _mutated(draw, _PRODUCER_V2, _values)


@st.composite
def _pull_maps(draw: st.DrawFn) -> dict[str, str]:
    return _mutated(draw, _PUSH_PULL, _pull_values)


def test_a_producers_header_takes_the_fast_path() -> None:
    fast = decode_send_header_v2(_PRODUCER_V2)
    assert fast is not None
    assert fast == SendMessageRequestHeaderV2.from_ext_fields(_PRODUCER_V2)
    assert (fast.queue_id, fast.born_timestamp, fast.unit_mode, fast.batch) == (
        1,
        1700000000123,
        False,
        False,
    )


@settings(max_examples=400, deadline=None)
@given(_ext_maps())
def test_the_fast_v2_decoder_is_the_generic_one_or_declines(ext: dict[str, str]) -> None:
    fast = decode_send_header_v2(ext)
    if fast is not None:
        assert fast == SendMessageRequestHeaderV2.from_ext_fields(ext)


def test_unusual_values_go_to_the_generic_decoder() -> None:
    # a missing required field (the generic check names it), a signed queue id, a
    # Boolean.parseBoolean spelling: all left to from_ext_fields
    for key, value in (("e", None), ("e", "-1"), ("m", "TRUE"), ("g", "1" * 19)):
        ext = dict(_PRODUCER_V2)
        if value is None:
            del ext[key]
        else:
            ext[key] = value
        assert decode_send_header_v2(ext) is None, (key, value)
    assert decode_send_header_v2(None) is None


@settings(max_examples=200, deadline=None)
@given(
    region=st.text(max_size=12),
    trace_on=st.sampled_from(["true", "false"]),
    msg_id=st.text(alphabet="0123456789ABCDEF,", max_size=70),
    queue_id=st.integers(min_value=0, max_value=2**31 - 1),
    queue_offset=st.integers(min_value=0, max_value=2**63 - 1),
)
def test_send_response_fields_match_the_generic_merge(
    region: str, trace_on: str, msg_id: str, queue_id: int, queue_offset: int
) -> None:
    pre_send = {MessageConst.MSG_REGION: region, MessageConst.TRACE_ON: trace_on}
    generic = SendMessageResponseHeader(
        msg_id=msg_id, queue_id=queue_id, queue_offset=queue_offset
    ).to_ext_fields(pre_send)
    fast = send_response_fields(region, trace_on, msg_id, queue_id, queue_offset)
    assert list(fast.items()) == list(generic.items())


def test_a_consumers_pull_takes_the_fast_path() -> None:
    fast = decode_pull_header(_PUSH_PULL)
    assert fast is not None
    assert fast == PullMessageRequestHeader.from_ext_fields(_PUSH_PULL)
    assert (fast.queue_offset, fast.sys_flag, fast.sub_version) == (1234, 3, 1700000000999)
    missing = dict(_PUSH_PULL)
    del missing["commitOffset"]
    assert decode_pull_header(missing) is None  # the generic check names it
    assert decode_pull_header(None) is None


@settings(max_examples=400, deadline=None)
@given(_pull_maps())
def test_the_fast_pull_decoder_is_the_generic_one_or_declines(ext: dict[str, str]) -> None:
    fast = decode_pull_header(ext)
    if fast is not None:
        assert fast == PullMessageRequestHeader.from_ext_fields(ext)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=-(2**63), max_value=2**63 - 1), min_size=4, max_size=4))
def test_pull_response_fields_match_the_generic_encoder(values: list[int]) -> None:
    suggest, next_begin, min_offset, max_offset = values
    generic = PullMessageResponseHeader(
        suggest_which_broker_id=suggest,
        next_begin_offset=next_begin,
        min_offset=min_offset,
        max_offset=max_offset,
    ).to_ext_fields()
    fast = pull_response_fields(suggest, next_begin, min_offset, max_offset)
    assert list(fast.items()) == list(generic.items())
