"""The canonical JSON header reader (``frame._decode_canonical_json_header``, a client's
``FrameDecoder(canonical_json=True)``) gives exactly the general decoder's command on every
header it accepts, and declines (None) everything else: golden frames, every encodable
command, and near-canonical texts (whitespace, leading zeros, trailing commas, escapes,
Unicode digits, numbers past int32, other key orders, nested values)."""

from __future__ import annotations

import json
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketq.errors import MalformedFrameError
from rocketq.protocol.codes import LanguageCode, SerializeType
from rocketq.protocol.frame import (
    FrameDecoder,
    RemotingCommand,
    _decode_canonical_json_header,
    _decode_json_header,
)
from tests.conftest import load_golden_frames

_INT32 = st.integers(-(1 << 31), (1 << 31) - 1)
_TEXT = st.text(max_size=12)  # every code point: quotes, backslashes, controls, non-ASCII


def _general(text: str) -> RemotingCommand | MalformedFrameError:
    try:
        return _decode_json_header(text.encode("utf-8", "surrogatepass"))
    except MalformedFrameError as exc:
        return exc


def _check(text: str) -> bool:
    """The reader's answer on ``text`` agrees with the general decoder; True if it read it."""
    fast = _decode_canonical_json_header(text)
    if fast is None:
        return False
    general = _general(text)
    assert not isinstance(general, MalformedFrameError), (text, general)
    assert fast == general, text
    assert fast.ext_fields is None or list(fast.ext_fields.items()) == list(general.ext_fields.items())
    return True


def _frames_equal(frame: bytes) -> list[RemotingCommand]:
    plain = FrameDecoder().feed(frame)
    assert FrameDecoder(canonical_json=True).feed(frame) == plain
    # byte by byte, as a socket may deliver it
    canonical = FrameDecoder(canonical_json=True)
    out: list[RemotingCommand] = []
    for i in range(len(frame)):
        out += canonical.feed(frame[i : i + 1])
    assert out == plain
    return plain


def test_golden_frames_decode_the_same() -> None:
    frames = load_golden_frames()
    read = 0
    for g in frames:
        _frames_equal(g.frame)
        if g.serialize_type == "JSON":
            read += _check(g.header)
    plain_json = sum(g.serialize_type == "JSON" and "\\" not in g.header for g in frames)
    # every golden JSON header without an escape is canonical (Java's fastjson and rocketq
    # write that form); escapes (remarks with a newline, send requests' properties) go the
    # general way
    assert plain_json > 50
    assert read == plain_json


def test_send_answer_is_read() -> None:
    cmd = RemotingCommand(
        code=0,
        flag=1,
        opaque=123456,
        language=int(LanguageCode.JAVA),
        ext_fields={
            "msgId": "7F00000100002A9F0000000000A1B2C3",
            "queueId": "3",
            "queueOffset": "123456",
            "MSG_REGION": "DefaultRegion",
            "TRACE_ON": "true",
        },
    )
    text = cmd.encode_header().decode()
    assert _check(text)
    assert _decode_canonical_json_header(text) == cmd


@pytest.mark.parametrize(
    "text",
    [
        '{"code":0, "flag":1,"language":"JAVA","opaque":1,"serializeTypeCurrentRPC":"JSON","version":1}',
        '{"code":00,"flag":1,"language":"JAVA","opaque":1,"serializeTypeCurrentRPC":"JSON","version":1}',
        '{"code":2147483648,"flag":1,"language":"JAVA","opaque":1,"serializeTypeCurrentRPC":"JSON","version":1}',
        '{"code":-2147483649,"flag":1,"language":"JAVA","opaque":1,"serializeTypeCurrentRPC":"JSON","version":1}',
        '{"code":\u0661,"flag":1,"language":"JAVA","opaque":1,"serializeTypeCurrentRPC":"JSON","version":1}',
        '{"code":0,"extFields":{"a":"b",},"flag":1,"language":"JAVA","opaque":1,'
        '"serializeTypeCurrentRPC":"JSON","version":1}',
        '{"code":0,"extFields":{"a":"b\\"c"},"flag":1,"language":"JAVA","opaque":1,'
        '"serializeTypeCurrentRPC":"JSON","version":1}',
        '{"code":0,"extFields":{"a":1},"flag":1,"language":"JAVA","opaque":1,"serializeTypeCurrentRPC":"JSON","version":1}',
        '{"code":0,"extFields":{"a":{"b":"c"}},"flag":1,"language":"JAVA","opaque":1,'
        '"serializeTypeCurrentRPC":"JSON","version":1}',
        '{"code":0,"flag":1,"language":"JAVA","opaque":1,"remark":"a\\nb","serializeTypeCurrentRPC":"JSON","version":1}',
        '{"code":0,"flag":1,"language":"JAVA","opaque":1,"remark":"a\nb","serializeTypeCurrentRPC":"JSON","version":1}',
        '{"code":0,"flag":1,"language":"JAVA","opaque":1,"serializeTypeCurrentRPC":"ROCKETMQ","version":1}',
        '{"flag":1,"code":0,"language":"JAVA","opaque":1,"serializeTypeCurrentRPC":"JSON","version":1}',
        '{"code":0,"flag":1,"language":"JAVA","opaque":1,"serializeTypeCurrentRPC":"JSON","version":1} ',
        '{"code":0.5,"flag":1,"language":"JAVA","opaque":1,"serializeTypeCurrentRPC":"JSON","version":1}',
        '{"code":"0","flag":1,"language":"JAVA","opaque":1,"serializeTypeCurrentRPC":"JSON","version":1}',
        '{"code":0,"flag":1,"language":2,"opaque":1,"serializeTypeCurrentRPC":"JSON","version":1}',
    ],
)
def test_near_canonical_headers_are_declined(text: str) -> None:
    assert _decode_canonical_json_header(text) is None
    _general(text)  # whatever it answers, the decoder's general path answers it


def test_edges_are_read() -> None:
    lang = "NOT_A_LANGUAGE"  # an unknown name: OTHER, as the general decoder reads it
    text = (
        '{"code":-2147483648,"extFields":{},"flag":2147483647,"language":"' + lang + '","opaque":-0,'
        '"remark":"","serializeTypeCurrentRPC":"JSON","version":0}'
    )
    assert _check(text)
    dup = (
        '{"code":1,"extFields":{"a":"1","b":"2","a":"3"},"flag":0,"language":"GO","opaque":5,'
        '"serializeTypeCurrentRPC":"JSON","version":1}'
    )
    assert _check(dup)  # a repeated key: the last value, at the first one's place


_COMMANDS = st.builds(
    RemotingCommand,
    code=_INT32,
    flag=_INT32,
    opaque=_INT32,
    language=st.sampled_from([int(lang) for lang in LanguageCode]),
    version=_INT32,
    remark=st.none() | _TEXT,
    ext_fields=st.none() | st.dictionaries(_TEXT, _TEXT, max_size=6),
    body=st.binary(max_size=8),
)


@settings(max_examples=400)
@given(_COMMANDS)
def test_every_encoded_command_decodes_the_same(cmd: RemotingCommand) -> None:
    frame = cmd.encode()
    (plain,) = _frames_equal(frame)
    assert plain.code == cmd.code
    _check(cmd.encode_header().decode())


_PIECES = st.sampled_from(
    [
        "",
        " ",
        "0",
        "01",
        "-",
        "-0",
        "2147483647",
        "2147483648",
        "99999999999",
        "1e3",
        "1.0",
        "\u0662",
        '"',
        '\\"',
        "\\u0041",
        "\n",
        ",",
        ":",
        "{",
        "}",
        "[]",
        "null",
        "true",
        '"a":"b"',
        '"a":"b",',
        "é",
    ]
)


@settings(max_examples=600)
@given(_COMMANDS, st.lists(st.tuples(st.integers(0, 400), _PIECES), min_size=1, max_size=3))
def test_mutated_headers_agree(cmd: RemotingCommand, edits: list[tuple[int, str]]) -> None:
    text = cmd.encode_header().decode()
    for where, piece in edits:
        at = where % (len(text) + 1)
        text = text[:at] + piece + text[at:]
    _check(text)
    raw = text.encode("utf-8", "surrogatepass")
    frame = struct.pack(">iI", 4 + len(raw), int(SerializeType.JSON) << 24 | len(raw)) + raw
    try:
        plain = FrameDecoder().feed(frame)
    except MalformedFrameError:
        with pytest.raises(MalformedFrameError):
            FrameDecoder(canonical_json=True).feed(frame)
    else:
        assert FrameDecoder(canonical_json=True).feed(frame) == plain


def test_json_module_agrees_on_a_canonical_header() -> None:
    text = RemotingCommand(code=7, remark="r", ext_fields={"k": "v"}).encode_header().decode()
    cmd = _decode_canonical_json_header(text)
    assert cmd is not None
    obj = json.loads(text)
    assert (cmd.code, cmd.remark, cmd.ext_fields) == (obj["code"], obj["remark"], obj["extFields"])
