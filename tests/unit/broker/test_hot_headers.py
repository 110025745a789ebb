"""The send path's straight-line header code agrees with the generic codec.

``decode_send_header_v2`` must return either None (the caller then uses
``from_ext_fields``) or exactly what ``from_ext_fields`` decodes; ``send_response_fields``
must equal ``SendMessageResponseHeader.to_ext_fields`` over preSend's two keys, key order
included (the JSON header is written in the map's order, so the bytes follow).
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from rocketq.broker.processors.hot_headers import decode_send_header_v2, send_response_fields
from rocketq.protocol.headers import SendMessageRequestHeaderV2, SendMessageResponseHeader
from rocketq.protocol.message import MessageConst

#: what a 4.9.7 producer sends for one message (SEND_MESSAGE_V2), as captured
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


@st.composite
def _ext_maps(draw: st.DrawFn) -> dict[str, str]:
    ext = dict(_PRODUCER_V2)
    for key in draw(st.sets(st.sampled_from(sorted(_values)))):
        if draw(st.booleans()):
            ext.pop(key, None)
        else:
            ext[key] = draw(_values[key])
    if draw(st.booleans()):
        ext["AccessKey"] = "rocketmq2"  # an RPC hook's key: ignored by both
    return ext


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
