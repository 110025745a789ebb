"""RemotingCommand framing against every golden frame, the section-11 vectors and bad input."""

from __future__ import annotations

import json
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketq.errors import FrameTooLargeError, MalformedFrameError
from rocketq.protocol.codes import CURRENT_VERSION, LanguageCode, SerializeType
from rocketq.protocol.frame import LARGE_FRAME, MAX_FRAME_LENGTH, FrameDecoder, RemotingCommand, decode_frame
from tests.conftest import GoldenFrame, load_golden_frames

GOLDEN = load_golden_frames()


def _id(f: GoldenFrame) -> str:
    return f"{f.file}:{f.seq}"


def test_golden_set_is_complete() -> None:
    assert len(GOLDEN) == 644
    assert {f.serialize_type for f in GOLDEN} == {"JSON", "ROCKETMQ"}


@pytest.mark.parametrize("gf", GOLDEN, ids=_id)
def test_golden_frame_decodes_and_reencodes_byte_exact(gf: GoldenFrame) -> None:
    cmd = decode_frame(gf.frame)
    assert (cmd.code, cmd.flag, cmd.opaque) == (gf.code, gf.flag, gf.opaque)
    assert (cmd.body or None) == gf.body
    if gf.serialize_type == "JSON":
        assert cmd.serialize_type == SerializeType.JSON
        hdr = json.loads(gf.header)
        assert cmd.ext_fields == hdr.get("extFields")
        assert cmd.remark == hdr.get("remark")
        assert cmd.encode_header() == gf.header.encode()
    else:
        assert cmd.serialize_type == SerializeType.ROCKETMQ
        rendered = json.loads(gf.header)
        assert LanguageCode(cmd.language).name == rendered["language"]
        assert cmd.version == rendered["version"]
        assert cmd.ext_fields == rendered.get("extFields")
    assert cmd.encode() == gf.frame


def test_golden_stream_any_chunking() -> None:
    stream = b"".join(f.frame for f in GOLDEN[:80])
    expected = [decode_frame(f.frame) for f in GOLDEN[:80]]
    whole = FrameDecoder().feed(stream)
    assert whole == expected
    dec = FrameDecoder()
    one_by_one = [c for i in range(len(stream)) for c in dec.feed(stream[i : i + 1])]
    assert one_by_one == expected
    assert dec.buffered == 0
    dec = FrameDecoder()
    assert dec.feed(stream + b"\x00\x00") == expected
    assert dec.buffered == 2


def test_section11_json_request_vector() -> None:
    cmd = RemotingCommand(code=105, opaque=1, ext_fields={"topic": "TopicTest"})
    frame = cmd.encode()
    header = (
        b'{"code":105,"extFields":{"topic":"TopicTest"},"flag":0,"language":"PYTHON","opaque":1,'
        b'"serializeTypeCurrentRPC":"JSON","version":409}'
    )
    assert len(header) == 133
    assert frame == bytes.fromhex("0000008900000085") + header


def test_section11_binary_request_vector() -> None:
    cmd = RemotingCommand(
        code=105, opaque=1, ext_fields={"topic": "TopicTest"}, serialize_type=SerializeType.ROCKETMQ
    )
    expected = bytes.fromhex(
        "0000002d010000290069030199000000010000000000000000000000140005746f70696300000009546f70696354657374"
    )
    assert cmd.encode() == expected
    assert decode_frame(expected) == cmd


def test_unknown_json_keys_ignored() -> None:
    header = (
        b'{"code":34,"flag":0,"opaque":5,"version":409,"language":"PYTHON","extFields":{"x":"1"},"foo":1}'
    )
    frame = struct.pack(">iI", 4 + len(header), len(header)) + header
    cmd = decode_frame(frame)
    assert (cmd.code, cmd.opaque, cmd.language, cmd.ext_fields) == (34, 5, LanguageCode.PYTHON, {"x": "1"})


def test_lenient_ext_values_and_language_ordinal() -> None:
    header = b'{"code":1,"language":9,"extFields":{"a":1,"b":true}}'
    cmd = decode_frame(struct.pack(">iI", 4 + len(header), len(header)) + header)
    assert cmd.language == LanguageCode.GO
    assert cmd.ext_fields == {"a": "1", "b": "true"}


def test_missing_json_fields_take_the_java_defaults() -> None:
    # RemotingCommand field initializers: language = JAVA, flag = opaque = 0 (reference 1.3).
    header = b'{"code":105}'
    cmd = decode_frame(struct.pack(">iI", 4 + len(header), len(header)) + header)
    assert (cmd.language, cmd.flag, cmd.opaque, cmd.remark, cmd.ext_fields) == (
        LanguageCode.JAVA,
        0,
        0,
        None,
        None,
    )


def test_binary_header_empty_strings() -> None:
    # RocketMQSerializable.rocketMQProtocolEncode writes an empty remark as length 0 and
    # rocketMQProtocolDecode reads length 0 as null; mapDeserialize keeps an empty
    # extFields value as "" (4.9.7), so only the remark loses its empty string.
    cmd = RemotingCommand(code=11, remark="", ext_fields={"k": ""}, serialize_type=SerializeType.ROCKETMQ)
    header = cmd.encode_header()
    assert header[13:17] == b"\x00\x00\x00\x00"  # remarkLength 0
    assert header[17:] == bytes.fromhex("00000007") + b"\x00\x01k" + b"\x00\x00\x00\x00"
    back = decode_frame(cmd.encode())
    assert back.remark is None
    assert back.ext_fields == {"k": ""}


def test_control_characters_escaped_like_fastjson() -> None:
    cmd = RemotingCommand(code=310, ext_fields={"i": "TAGS\x01a\x02WAIT\x01true"})
    assert b'"i":"TAGS\\u0001a\\u0002WAIT\\u0001true"' in cmd.encode_header()


def _frame(header: bytes, body: bytes = b"", stype: int = 0) -> bytes:
    return struct.pack(">iI", 4 + len(header) + len(body), (stype << 24) | len(header)) + header + body


@pytest.mark.parametrize(
    "data",
    [
        _frame(b"{not json"),
        _frame(b"\xff\xfe\x00"),
        _frame(b"[1,2]"),
        _frame(b'{"flag":0}'),
        _frame(b'{"code":"x"}'),
        _frame(b'{"code":1,"extFields":[1]}'),
        _frame(b"\x00" * 10, stype=1),
        _frame(b"\x00" * 25, stype=1),
        _frame(b"{}", stype=7),
        struct.pack(">iI", 8, 200) + b"{}xx",
        struct.pack(">i", 2) + b"ab",
    ],
)
def test_malformed_frames_raise_typed_errors(data: bytes) -> None:
    with pytest.raises(MalformedFrameError):
        FrameDecoder().feed(data)


def test_frame_length_limit() -> None:
    dec = FrameDecoder()
    with pytest.raises(FrameTooLargeError):
        dec.feed(struct.pack(">i", MAX_FRAME_LENGTH - 3))
    # exactly at the limit is fine (nothing complete yet)
    assert FrameDecoder().feed(struct.pack(">i", MAX_FRAME_LENGTH - 4)) == []
    with pytest.raises(FrameTooLargeError):
        RemotingCommand(code=10, body=b"x" * MAX_FRAME_LENGTH).encode()


def test_truncated_frame_waits_for_more() -> None:
    frame = RemotingCommand(code=10, body=b"hello").encode()
    dec = FrameDecoder()
    assert dec.feed(frame[:-1]) == []
    assert dec.feed(frame[-1:])[0].body == b"hello"


def test_response_mirrors_request() -> None:
    req = RemotingCommand(code=11, opaque=77, serialize_type=SerializeType.ROCKETMQ)
    resp = req.make_response(19, "OFFSET_OVERFLOW_ONE", {"nextBeginOffset": "5"})
    assert resp.is_response and not resp.is_oneway
    assert (resp.opaque, resp.serialize_type) == (77, SerializeType.ROCKETMQ)
    assert RemotingCommand.request(15, {}, oneway=True).is_oneway


_text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=20
)


@given(
    code=st.integers(-32768, 32767),
    flag=st.integers(0, 3),
    opaque=st.integers(-(2**31), 2**31 - 1),
    version=st.integers(0, 32767),
    language=st.sampled_from(list(LanguageCode)),
    remark=st.none() | _text.filter(bool),
    ext=st.none() | st.dictionaries(_text.filter(bool), _text.filter(bool), max_size=6),
    body=st.binary(max_size=64),
    stype=st.sampled_from(list(SerializeType)),
)
def test_roundtrip_property(
    code: int,
    flag: int,
    opaque: int,
    version: int,
    language: LanguageCode,
    remark: str | None,
    ext: dict[str, str] | None,
    body: bytes,
    stype: SerializeType,
) -> None:
    cmd = RemotingCommand(code, flag, opaque, int(language), version, remark, ext, body, int(stype))
    back = decode_frame(cmd.encode())
    if stype == SerializeType.ROCKETMQ and ext == {}:
        ext = None  # the binary header cannot tell an empty map from none
    assert (back.code, back.flag, back.opaque, back.language, back.version) == (
        code,
        flag,
        opaque,
        language,
        version,
    )
    assert (back.remark, back.ext_fields, back.body) == (remark, ext, body)


def _large_stream() -> tuple[bytes, list[RemotingCommand]]:
    """Small frames around large ones, the large at and around :data:`LARGE_FRAME`."""
    cmds = []
    for i, size in enumerate([5, LARGE_FRAME, 0, LARGE_FRAME - 40, 3 * LARGE_FRAME + 7, 1, LARGE_FRAME]):
        body = bytes((i + k) % 251 for k in range(size))
        cmds.append(RemotingCommand(code=11, flag=1, opaque=i, remark="r", body=body))
    stream = b"".join(c.encode() for c in cmds)
    return stream, [decode_frame(c.encode()) for c in cmds]


# chunk sizes: big ones, each followed by a few bytes (1-8), so tiny feeds land anywhere,
# also while a large frame is pending, without feeding a 700 KB stream byte by byte
_CUTS = st.lists(st.tuples(st.integers(97, 70_000), st.integers(1, 8)), min_size=1, max_size=30).map(
    lambda pairs: [n for pair in pairs for n in pair]
)


@settings(deadline=None, max_examples=40)
@given(cuts=_CUTS)
def test_large_frames_any_chunking(cuts: list[int]) -> None:
    stream, expected = _large_stream()
    dec = FrameDecoder(direct_large=True)
    got, pos, i = [], 0, 0
    while pos < len(stream):
        step = cuts[i % len(cuts)]
        got += dec.feed(stream[pos : pos + step])
        pos += step
        i += 1
    assert got == expected
    assert dec.buffered == 0


@settings(deadline=None, max_examples=40)
@given(cuts=_CUTS)
def test_large_frames_received_into_their_own_buffer(cuts: list[int]) -> None:
    # the socket reader of RemotingClient: recv_into the pending large frame, else recv + feed
    stream, expected = _large_stream()
    dec = FrameDecoder(direct_large=True)
    got, pos, i, direct = [], 0, 0, 0
    while pos < len(stream):
        step = cuts[i % len(cuts)]
        i += 1
        view = dec.pending_large()
        if view is not None:
            n = min(step, len(view))
            view[:n] = stream[pos : pos + n]
            view.release()
            got += dec.filled(n)
            direct += n
        else:
            n = step
            got += dec.feed(stream[pos : pos + n])
        pos += n
        assert dec.buffered <= 4 * LARGE_FRAME
    assert got == expected
    assert direct > 0  # chunks below LARGE_FRAME: the rest of each large frame went direct
    assert dec.pending_large() is None


def test_large_frame_bookkeeping() -> None:
    frame = RemotingCommand(code=10, body=b"z" * LARGE_FRAME).encode()
    dec = FrameDecoder(direct_large=True)
    assert dec.pending_large() is None
    with pytest.raises(ValueError, match="filled"):
        dec.filled(1)
    assert dec.feed(frame[:1000]) == []
    assert dec.buffered == 996  # the length prefix is not kept
    view = dec.pending_large()
    assert view is not None and len(view) == len(frame) - 1000
    with pytest.raises(ValueError, match="filled"):
        dec.filled(len(view) + 1)
    view[:] = frame[1000:]
    view.release()
    (cmd,) = dec.filled(len(frame) - 1000)
    assert cmd.body == b"z" * LARGE_FRAME
    assert dec.buffered == 0 and dec.pending_large() is None


def test_a_server_decoder_does_not_allocate_for_a_length_prefix_alone() -> None:
    # a peer announcing the largest frame allowed and sending a few bytes of it
    dec = FrameDecoder()
    assert dec.feed(struct.pack(">ii", MAX_FRAME_LENGTH - 4, 12) + b"x" * 12) == []
    assert dec.pending_large() is None
    assert dec.buffered == 20 and len(dec._buf) == 20
    stream, expected = _large_stream()
    plain = FrameDecoder()
    assert [c for k in range(0, len(stream), 50_000) for c in plain.feed(stream[k : k + 50_000])] == expected


# ---------------------------------------------------------------------- hostile headers (issue #21)
@pytest.mark.parametrize(
    "header",
    [
        b'{"code":1e999}',
        b'{"code":-1e999}',
        b'{"code":Infinity}',
        b'{"code":NaN}',
        b'{"code":1,"opaque":2147483648}',
        b'{"code":-2147483649}',
        b'{"code":99999999999999999999999}',
        b'{"code":true}',
        b'{"code":{"a":1}}',
        b'{"code":[1]}',
        b'{"code":1,"flag":"x"}',
        b'{"code":1,"version":1e10}',
        b'{"code":1,"language":{"x":1}}',
        b'{"code":1,"language":1e999}',
        b'{"code":1,"remark":{"a":1}}',
        b'{"code":1,"remark":[1]}',
        b'{"code":1,"extFields":{"a":{"b":"c"}}}',
        b'{"code":1,"extFields":{"a":[1]}}',
        b'{"code":1,"extFields":{"a":1e999}}',
        b'{"code":1,"extFields":{"a":NaN}}',
        b'{"code":1,"extFields":' + b'{"a":' * 5000 + b"1" + b"}" * 5000 + b"}",
        b'{"code":1,"x":' + b"[" * 100_000 + b"]" * 100_000 + b"}",
        b"[" * 100_000 + b"]" * 100_000,
        b'{"code":1' + b"0" * 5000 + b"}",
    ],
)
def test_hostile_json_headers_are_malformed_frames(header: bytes) -> None:
    # fastjson's RemotingCommand reader takes ints within int32 and a flat String map;
    # anything else ends the connection, never with an OverflowError/RecursionError
    with pytest.raises(MalformedFrameError):
        FrameDecoder().feed(_frame(header))


@pytest.mark.parametrize(
    ("header", "code", "opaque", "ext", "remark"),
    [
        (b'{"code":"12","opaque":"-3"}', 12, -3, None, None),
        (b'{"code":12.9,"opaque":2147483647}', 12, 2147483647, None, None),
        (b'{"code":-2147483648,"flag":null}', -(2**31), 0, None, None),
        (
            b'{"code":1,"extFields":{"a":1,"b":true,"c":2.5,"d":null}}',
            1,
            0,
            {"a": "1", "b": "true", "c": "2.5"},
            None,
        ),
        (b'{"code":1,"remark":7}', 1, 0, None, "7"),
    ],
)
def test_lenient_header_values_are_read_like_fastjson(
    header: bytes, code: int, opaque: int, ext: dict[str, str] | None, remark: str | None
) -> None:
    (cmd,) = FrameDecoder().feed(_frame(header))
    assert (cmd.code, cmd.opaque, cmd.ext_fields, cmd.remark) == (code, opaque, ext, remark)


def test_pending_length_reports_the_announced_frame() -> None:
    frame = RemotingCommand(code=10, body=b"x" * 1000).encode()
    dec = FrameDecoder()
    assert dec.pending_length == 0
    dec.feed(frame[:3])
    assert dec.pending_length == 0  # the length prefix is not complete yet
    dec.feed(frame[3:10])
    assert dec.pending_length == len(frame)
    assert len(dec.feed(frame[10:])) == 1
    assert dec.pending_length == 0


# ------------------------------------------------------------------ binary header codec
def _reference_binary_header(data: bytes) -> tuple[object, ...]:
    """The ROCKETMQ header read the straightforward way (``RocketMQSerializable
    .rocketMQProtocolDecode``, plus rocketq's refusals): the oracle of the fast decoder.
    Returns the fields, or the error class for a refused header."""
    try:
        code, language, version, opaque, flag, remark_len = struct.unpack_from(">hbhiii", data, 0)
        pos = 17
        if remark_len < 0 or pos + remark_len + 4 > len(data):
            return (MalformedFrameError,)
        remark = data[pos : pos + remark_len].decode() if remark_len else None
        pos += remark_len
        (ext_len,) = struct.unpack_from(">i", data, pos)
        pos += 4
        if ext_len < 0 or pos + ext_len != len(data):
            return (MalformedFrameError,)
        ext: dict[str, str] | None = {} if ext_len else None
        while ext is not None and pos < len(data):
            (klen,) = struct.unpack_from(">h", data, pos)
            pos += 2
            if klen < 0 or pos + klen + 4 > len(data):
                return (MalformedFrameError,)
            key = data[pos : pos + klen].decode()
            pos += klen
            (vlen,) = struct.unpack_from(">i", data, pos)
            pos += 4
            if vlen < 0 or pos + vlen > len(data):
                return (MalformedFrameError,)
            ext[key] = data[pos : pos + vlen].decode()
            pos += vlen
    except (struct.error, UnicodeDecodeError):
        return (MalformedFrameError,)
    return code, language, version, opaque, flag, remark, ext


def _binary_frame(header: bytes) -> bytes:
    return struct.pack(">iI", 4 + len(header), (1 << 24) | len(header)) + header


@settings(max_examples=300)
@given(
    remark=st.none() | _text.filter(bool),
    ext=st.none() | st.dictionaries(_text.filter(bool), _text, max_size=6),
    cut=st.integers(0, 400),
    flip=st.tuples(st.integers(0, 400), st.integers(0, 255)),
)
def test_binary_header_decoder_agrees_with_the_reference(
    remark: str | None, ext: dict[str, str] | None, cut: int, flip: tuple[int, int]
) -> None:
    """Well-formed, truncated and corrupted ROCKETMQ headers: the decoder returns what a
    plain struct reading returns, or a MalformedFrameError where that refuses."""
    cmd = RemotingCommand(
        code=11, opaque=5, remark=remark, ext_fields=ext, serialize_type=SerializeType.ROCKETMQ
    )
    header = cmd.encode_header()
    for data in (header, header[: min(cut, len(header))], _corrupt(header, *flip)):
        want = _reference_binary_header(data)
        if want == (MalformedFrameError,):
            with pytest.raises(MalformedFrameError):
                decode_frame(_binary_frame(data))
        else:
            got = decode_frame(_binary_frame(data))
            assert (
                got.code,
                got.language,
                got.version,
                got.opaque,
                got.flag,
                got.remark,
                got.ext_fields,
            ) == want


def _corrupt(data: bytes, index: int, value: int) -> bytes:
    if not data:
        return data
    i = index % len(data)
    return data[:i] + bytes((value,)) + data[i + 1 :]


@pytest.mark.parametrize(
    "entry",
    [
        b"\x00\x01k\xff\xff\xff\xff",  # value length -1
        b"\x80\x00k\x00\x00\x00\x00",  # key length -32768 (a Java short)
        b"\x00\x01k\x00\x00\x00\x05ab",  # value past the header
        b"\x00\x09k\x00\x00\x00\x00",  # key past the header
        b"\x00",  # a key length cut in half
    ],
)
def test_binary_header_bad_lengths_are_refused(entry: bytes) -> None:
    header = struct.pack(">hbhiii", 11, 0, 0, 1, 0, 0) + struct.pack(">i", len(entry)) + entry
    assert _reference_binary_header(header) == (MalformedFrameError,)
    with pytest.raises(MalformedFrameError):
        decode_frame(_binary_frame(header))


def _reference_json_header(cmd: RemotingCommand) -> bytes:
    """The JSON header as the general encoder writes it (fastjson's SortField key order,
    ``ensure_ascii=False``): the reference of the encoder's hand-joined fast path."""
    enc = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
    parts = [f'{{"code":{cmd.code},']
    if cmd.ext_fields is not None:
        parts.append(f'"extFields":{enc(cmd.ext_fields)},')
    parts.append(f'"flag":{cmd.flag},"language":"{LanguageCode(cmd.language).name}","opaque":{cmd.opaque},')
    if cmd.remark is not None:
        parts.append(f'"remark":{enc(cmd.remark)},')
    parts.append(f'"serializeTypeCurrentRPC":"JSON","version":{cmd.version}}}')
    return "".join(parts).encode()


# every control character, quotes, backslashes, non-ASCII and astral characters
_json_text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",)) | st.sampled_from('\x00\x01\x02\x1f"\\/\u2028\x7f'),
    max_size=24,
)


@settings(max_examples=300)
@given(
    remark=st.none() | _json_text,
    ext=st.none() | st.dictionaries(_json_text, _json_text, max_size=8),
    code=st.integers(-(2**31), 2**31 - 1),
    opaque=st.integers(-(2**31), 2**31 - 1),
    language=st.sampled_from(list(LanguageCode)),
)
def test_json_header_encoder_agrees_with_the_general_encoder(
    remark: str | None, ext: dict[str, str] | None, code: int, opaque: int, language: LanguageCode
) -> None:
    cmd = RemotingCommand(
        code=code, flag=1, opaque=opaque, language=int(language), remark=remark, ext_fields=ext
    )
    assert cmd.encode_header() == _reference_json_header(cmd)
    assert decode_frame(cmd.encode()).ext_fields == ext


def test_json_header_with_non_string_ext_values_uses_the_general_encoder() -> None:
    """A map that breaks its type (an int slipped in) is still written as JSON would."""
    ext: dict[str, object] = {"queueId": 3, "topic": "T"}
    cmd = RemotingCommand(code=10, ext_fields=ext)  # type: ignore[arg-type]
    assert cmd.encode_header() == _reference_json_header(cmd)
    assert b'"extFields":{"queueId":3,"topic":"T"}' in cmd.encode_header()


def test_remoting_command_keeps_the_dataclass_constructor_equality_and_repr() -> None:
    """RemotingCommand is a plain slotted class (a native constructor when compiled): the
    positional order, defaults, value equality, unhashability and repr are the dataclass's."""
    a = RemotingCommand(10, 0, 7, 3, 317, "r", {"k": "v"}, b"body", 0)
    b = RemotingCommand(
        code=10, opaque=7, language=3, version=317, remark="r", ext_fields={"k": "v"}, body=b"body"
    )
    assert a == b
    assert (a != b) is False
    b.ext_fields = {"k": "w"}
    assert a != b
    assert a != "not a command"
    d = RemotingCommand(code=1)
    assert (d.flag, d.opaque, d.remark, d.ext_fields, d.body) == (0, 0, None, None, b"")
    assert d.language == LanguageCode.PYTHON and d.version == CURRENT_VERSION
    assert d.serialize_type == SerializeType.JSON
    with pytest.raises(TypeError):
        hash(d)
    assert repr(a) == (
        "RemotingCommand(code=10, flag=0, opaque=7, language=3, version=317, remark='r', "
        "ext_fields={'k': 'v'}, body=b'body', serialize_type=0)"
    )
    assert not hasattr(a, "__dict__")
