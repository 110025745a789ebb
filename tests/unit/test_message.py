"""Message records, properties, compression, batches and the Message classes."""

from __future__ import annotations

import contextlib
import copy
import ipaddress
import pickle
import struct
import zlib
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketq.errors import IllegalArgumentError, MalformedFrameError, ProtocolError
from rocketq.protocol.codes import MessageSysFlag
from rocketq.protocol.java import hashmap_order
from rocketq.protocol.message import (
    BLANK_MAGIC_CODE,
    MAGIC_CODE_V1,
    MAGIC_CODE_V2,
    POS_PHYSICAL_OFFSET,
    POS_QUEUE_OFFSET,
    BatchEntry,
    HostAddr,
    Message,
    MessageConst,
    MessageExt,
    compress_body,
    decode_batch,
    decode_properties,
    decode_record,
    decode_records,
    decompress_body,
    encode_batch,
    encode_properties,
    encode_record,
    put_properties_lazily_each,
    record_size,
    store_timestamp_pos,
    tags_code,
)

# --------------------------------------------------------------------------- §11 vectors
VECTOR_111 = bytes.fromhex(
    "0000006f daa320a7 58932aac 00000000 00000000 0000000000000000 0000000000000000"
    "00000000 0000018bcfe56800 7f000001 0000c350 0000018bcfe56801 7f000001 00002a9f"
    "00000000 0000000000000000 00000002 6869 01 54 0011 544147530161024b455953016b31206b32"
)
VECTOR_FIELDS: dict[str, Any] = {
    "topic": "T",
    "queue_id": 0,
    "flag": 0,
    "queue_offset": 0,
    "physical_offset": 0,
    "sys_flag": 0,
    "born_timestamp": 1700000000000,
    "born_host": ("127.0.0.1", 50000),
    "store_timestamp": 1700000000001,
    "store_host": ("127.0.0.1", 10911),
    "reconsume_times": 0,
    "prepared_transaction_offset": 0,
    "body": b"hi",
    "properties": "TAGS\x01a\x02KEYS\x01k1 k2",
}


def _encode(**overrides: object) -> bytes:
    return encode_record(**{**VECTOR_FIELDS, **overrides})


def test_magic_constants() -> None:
    assert MAGIC_CODE_V1 == struct.unpack(">i", bytes.fromhex("daa320a7"))[0] == -626843481
    assert BLANK_MAGIC_CODE == struct.unpack(">i", bytes.fromhex("cbd43194"))[0] == -875286124
    assert struct.unpack(">i", bytes.fromhex("daa320ab"))[0] == MAGIC_CODE_V2


def test_record_vector_111_bytes() -> None:
    assert len(VECTOR_111) == 111
    assert _encode() == VECTOR_111
    assert record_size(2, 1, 17) == 111
    msg = decode_record(VECTOR_111)
    assert msg.body_crc == 0x58932AAC == zlib.crc32(b"hi") & 0x7FFFFFFF
    assert msg.topic == "T" and msg.body == b"hi"
    assert msg.tags == "a" and msg.keys == ["k1", "k2"]
    assert msg.born_host == ("127.0.0.1", 50000) and msg.store_host == ("127.0.0.1", 10911)
    assert (msg.born_timestamp, msg.store_timestamp) == (1700000000000, 1700000000001)
    assert msg.offset_msg_id == msg.msg_id == "7F00000100002A9F0000000000000000"
    assert msg.store_size == 111
    assert decode_records(VECTOR_111 * 3)[2].stored_properties == "TAGS\x01a\x02KEYS\x01k1 k2"


def test_tag_hash_vectors() -> None:
    assert tags_code("TagA") == 2598919
    assert tags_code("TagB") == 2598920
    assert tags_code("*") == 42
    assert tags_code("tag-中文") == -880646131
    assert tags_code(None) == 0 and tags_code("") == 0


def test_batch_entry_vector() -> None:
    uniq = "FD000000000000000000000000000002" + "2AE05FFD2B276C4A4AD30000"
    msg = Message("T", b"hello", tags="TagA", properties={MessageConst.UNIQ_KEY: uniq})
    body = encode_batch([msg])
    props = f"UNIQ_KEY\x01{uniq}\x02WAIT\x01true\x02TAGS\x01TagA".encode()
    assert len(props) == 85
    assert body == bytes.fromhex("00000070 00000000 00000000 00000000 00000005 68656c6c6f 0055") + props
    assert decode_batch(body) == [BatchEntry(flag=0, body=b"hello", properties=props.decode())]


# --------------------------------------------------------------------------- layout details
def test_ipv6_hosts_set_flags_and_shift_fields() -> None:
    rec = _encode(born_host=("fd00::2", 40000), sys_flag=MessageSysFlag.STOREHOSTADDRESS_V6_FLAG)
    assert len(rec) == record_size(2, 1, 17, born_v6=True) == 123
    sys_flag = struct.unpack_from(">i", rec, 36)[0]
    assert sys_flag == MessageSysFlag.BORNHOST_V6_FLAG  # store bit cleared: the store host is IPv4
    assert store_timestamp_pos(sys_flag) == 68
    assert struct.unpack_from(">q", rec, 68)[0] == 1700000000001
    msg = decode_record(rec)
    assert msg.born_host == ("fd00::2", 40000)
    both = _encode(born_host=("::1", 1), store_host=("fd00::2", 10911))
    assert len(both) == record_size(2, 1, 17, born_v6=True, store_v6=True)
    msg = decode_record(both)
    assert msg.sys_flag == 0x30 and msg.store_host == ("fd00::2", 10911)
    assert msg.offset_msg_id == "FD00000000000000000000000000000200002A9F0000000000000000"


def test_store_timestamp_pos_ipv4() -> None:
    assert store_timestamp_pos(0) == 56
    assert store_timestamp_pos(MessageSysFlag.STOREHOSTADDRESS_V6_FLAG) == 56
    assert struct.unpack_from(">q", VECTOR_111, POS_QUEUE_OFFSET)[0] == 0
    rec = _encode(queue_offset=7, physical_offset=12345)
    assert struct.unpack_from(">qq", rec, POS_QUEUE_OFFSET) == (7, 12345)
    assert struct.unpack_from(">q", rec, POS_PHYSICAL_OFFSET)[0] == 12345


def test_encode_record_limits() -> None:
    assert len(_encode(topic="t" * 127)) == 111 + 126
    with pytest.raises(IllegalArgumentError):
        _encode(topic="t" * 128)
    with pytest.raises(IllegalArgumentError):
        _encode(topic="中" * 43)  # 129 bytes
    assert len(_encode(properties="p" * 32767)) == 111 - 17 + 32767
    with pytest.raises(IllegalArgumentError):
        _encode(properties="p" * 32768)
    with pytest.raises(IllegalArgumentError):
        _encode(store_host=("not-an-ip", 1))
    with pytest.raises(IllegalArgumentError):
        _encode(born_host=("127.0.0.1", 2**31))
    with pytest.raises(IllegalArgumentError):
        _encode(queue_id=2**31)
    assert decode_record(_encode(body_crc=5)).body_crc == 5


def test_v2_magic_record_decodes() -> None:
    # 5.x MessageVersion V2: same layout with a 2-byte topic length
    v1 = bytearray(_encode(topic="TopicV2"))
    tpos = 88 + 2
    v2 = v1[:4] + struct.pack(">i", MAGIC_CODE_V2) + v1[8:tpos] + b"\x00" + v1[tpos:]
    v2[0:4] = struct.pack(">i", len(v2))
    msg = decode_record(bytes(v2))
    assert msg.topic == "TopicV2" and msg.tags == "a"


# --------------------------------------------------------------------------- malformed
def test_bad_magic_and_blank_filler() -> None:
    bad = bytearray(VECTOR_111)
    bad[4:8] = b"\x00\x00\x00\x01"
    with pytest.raises(MalformedFrameError, match="magic"):
        decode_record(bytes(bad))
    blank = struct.pack(">ii", 64, BLANK_MAGIC_CODE) + bytes(56)
    with pytest.raises(MalformedFrameError):
        decode_record(blank)
    with pytest.raises(MalformedFrameError):
        decode_records(VECTOR_111 + bytes(bad))


def test_size_past_buffer() -> None:
    big = bytearray(VECTOR_111)
    big[0:4] = struct.pack(">i", 112)
    with pytest.raises(MalformedFrameError):
        decode_record(bytes(big))
    with pytest.raises(MalformedFrameError):
        decode_record(memoryview(bytes(big)))
    small = bytearray(VECTOR_111 + b"\x00")
    small[0:4] = struct.pack(">i", 112)  # size fits the buffer but not the parts
    with pytest.raises(MalformedFrameError):
        decode_record(bytes(small))


def test_every_truncation_is_a_typed_error() -> None:
    assert decode_records(b"") == []
    for cut in range(1, len(VECTOR_111)):
        with pytest.raises(MalformedFrameError):
            decode_records(VECTOR_111[:cut])
        with pytest.raises(MalformedFrameError):
            decode_record(bytearray(VECTOR_111[:cut]))
        with pytest.raises(MalformedFrameError):
            decode_records(VECTOR_111 + VECTOR_111[:cut])


def test_bad_offsets_and_lengths() -> None:
    with pytest.raises(MalformedFrameError):
        decode_record(VECTOR_111, -1)
    with pytest.raises(MalformedFrameError):
        decode_record(VECTOR_111, 200)
    with pytest.raises(MalformedFrameError):
        decode_record(memoryview(VECTOR_111), 110)
    neg_topic = bytearray(VECTOR_111)
    neg_topic[90] = 0x80  # signed byte -128 in Java
    with pytest.raises(MalformedFrameError):
        decode_record(bytes(neg_topic))
    neg_body = bytearray(VECTOR_111)
    neg_body[84:88] = struct.pack(">i", -1)
    with pytest.raises(MalformedFrameError):
        decode_record(bytes(neg_body))


def test_verify_crc() -> None:
    assert decode_record(VECTOR_111, verify_crc=True).body == b"hi"
    with pytest.raises(MalformedFrameError, match="BODYCRC"):
        decode_record(_encode(body_crc=1), verify_crc=True)


@settings(max_examples=300)
@given(st.binary(max_size=200), st.integers(0, 110), st.integers(0, 255))
def test_fuzzed_records_never_crash(prefix: bytes, index: int, value: int) -> None:
    data = bytearray(VECTOR_111)
    data[index] = value
    for buf in (bytes(data), prefix + bytes(data)):
        with contextlib.suppress(ProtocolError):
            decode_records(buf)


# --------------------------------------------------------------------------- round trips
def _norm(host: HostAddr) -> tuple[object, int]:
    return ipaddress.ip_address(host[0]), host[1]


def _plain_record(properties: str, *, queue_offset: int = 0, body: bytes = b"") -> bytes:
    """A V1 record of topic T on loopback hosts with the given properties."""
    return encode_record(
        topic="T",
        queue_id=0,
        flag=0,
        queue_offset=queue_offset,
        physical_offset=1000 + queue_offset,
        sys_flag=0,
        born_timestamp=1,
        born_host=("127.0.0.1", 1),
        store_timestamp=2,
        store_host=("127.0.0.1", 2),
        reconsume_times=0,
        prepared_transaction_offset=0,
        body=body,
        properties=properties,
    )


_v4 = st.ip_addresses(v=4).map(str)
_v6 = st.ip_addresses(v=6).map(str)
hosts = st.tuples(st.one_of(_v4, _v6), st.integers(0, 65535))
int32 = st.integers(-(2**31), 2**31 - 1)
int64 = st.integers(-(2**63), 2**63 - 1)
prop_text = st.text(st.characters(codec="utf-8", exclude_characters="\x01\x02"), min_size=1)
props_maps = st.dictionaries(prop_text, prop_text, max_size=8)
topics = st.text(st.characters(codec="utf-8"), max_size=40).filter(lambda t: len(t.encode()) <= 127)


@st.composite
def records(draw: st.DrawFn) -> dict[str, Any]:
    return {
        "topic": draw(topics),
        "queue_id": draw(int32),
        "flag": draw(int32),
        "queue_offset": draw(int64),
        "physical_offset": draw(int64),
        "sys_flag": draw(int32) & ~MessageSysFlag.COMPRESSED_FLAG,
        "born_timestamp": draw(int64),
        "born_host": draw(hosts),
        "store_timestamp": draw(int64),
        "store_host": draw(hosts),
        "reconsume_times": draw(int32),
        "prepared_transaction_offset": draw(int64),
        "body": draw(st.binary(max_size=300)),
        "properties": encode_properties(draw(props_maps)),
    }


def _check(msg: MessageExt, fields: dict[str, Any]) -> None:
    assert msg.topic == fields["topic"]
    assert msg.queue_id == fields["queue_id"] and msg.flag == fields["flag"]
    assert msg.queue_offset == fields["queue_offset"]
    assert msg.commit_log_offset == fields["physical_offset"]
    assert msg.born_timestamp == fields["born_timestamp"]
    assert msg.store_timestamp == fields["store_timestamp"]
    assert _norm(msg.born_host) == _norm(fields["born_host"])
    assert _norm(msg.store_host) == _norm(fields["store_host"])
    assert msg.reconsume_times == fields["reconsume_times"]
    assert msg.prepared_transaction_offset == fields["prepared_transaction_offset"]
    assert msg.body == fields["body"]
    assert msg.stored_properties == fields["properties"]
    assert msg.properties == decode_properties(fields["properties"])
    assert msg.body_crc == zlib.crc32(fields["body"]) & 0x7FFFFFFF
    v6 = (0x10 if ":" in msg.born_host[0] else 0) | (0x20 if ":" in msg.store_host[0] else 0)
    assert msg.sys_flag == (fields["sys_flag"] & ~0x30) | v6


@given(st.lists(records(), min_size=1, max_size=4))
def test_record_round_trip(items: list[dict[str, Any]]) -> None:
    encoded = [encode_record(**f) for f in items]
    for rec, fields in zip(encoded, items, strict=True):
        assert len(rec) == record_size(
            len(fields["body"]),
            len(fields["topic"].encode()),
            len(fields["properties"].encode()),
            born_v6=":" in fields["born_host"][0],
            store_v6=":" in fields["store_host"][0],
        )
        msg = decode_record(rec, verify_crc=True)
        _check(msg, fields)
        again = encode_record(
            topic=msg.topic, queue_id=msg.queue_id, flag=msg.flag, queue_offset=msg.queue_offset,
            physical_offset=msg.commit_log_offset, sys_flag=msg.sys_flag, born_timestamp=msg.born_timestamp,
            born_host=msg.born_host, store_timestamp=msg.store_timestamp, store_host=msg.store_host,
            reconsume_times=msg.reconsume_times, prepared_transaction_offset=msg.prepared_transaction_offset,
            body=msg.body, properties=msg.stored_properties, body_crc=msg.body_crc,
        )  # fmt: skip
        assert again == rec
    joined = b"".join(encoded)
    decoded = decode_records(joined)
    assert len(decoded) == len(items)
    for msg, fields in zip(decoded, items, strict=True):
        _check(msg, fields)
    offset = len(encoded[0])
    if len(items) > 1:
        _check(decode_record(memoryview(joined), offset), items[1])
        _check(decode_record(joined, offset), items[1])


@given(st.binary(max_size=5000), st.sampled_from([0x1, 0x301]))
def test_compressed_record_round_trip(body: bytes, sys_flag: int) -> None:
    packed = compress_body(body)
    assert zlib.decompress(packed) == body
    rec = _encode(body=packed, sys_flag=sys_flag)
    assert decode_record(rec).body == body
    assert decode_records(rec)[0].body == body
    assert decode_record(rec, decompress=False).body == packed
    assert decode_records(rec, decompress=False)[0].body == packed
    assert decode_record(rec, read_body=False).body == b""


def test_decompress_body_types() -> None:
    packed = compress_body(b"x" * 100)
    assert decompress_body(packed, 0x1) == b"x" * 100
    assert decompress_body(packed, 0x301) == b"x" * 100
    assert decompress_body(packed, 0x300) == packed  # no COMPRESSED_FLAG: untouched
    for bad_type in (0x101, 0x201, 0x401, 0x701):
        with pytest.raises(ProtocolError, match="compression type"):
            decompress_body(packed, bad_type)
    with pytest.raises(MalformedFrameError):
        decompress_body(b"not zlib", 0x1)
    with pytest.raises(MalformedFrameError):
        decode_record(_encode(body=b"not zlib", sys_flag=1))


# --------------------------------------------------------------------------- properties
@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("", {}),
        ("a\x01b", {"a": "b"}),
        ("a\x01b\x02", {"a": "b"}),  # trailing separator
        ("\x02\x02a\x01b\x02\x02", {"a": "b"}),  # empty segments
        ("ab", {}),  # no \x01
        ("abc", {}),
        ("\x01bc", {}),  # \x01 first: empty name
        ("ab\x01", {}),  # \x01 last: empty value
        ("a\x01", {}),  # shorter than 3 chars
        ("\x01\x01\x01", {}),  # first \x01 is first
        ("k\x01v\x01w", {"k": "v\x01w"}),  # value runs to the segment end
        ("k\x011\x02k\x012", {"k": "2"}),  # HashMap.put: the later one wins
        ("x\x02k\x01v\x02\x01y\x02z\x01", {"k": "v"}),
        ("名\x01値", {"名": "値"}),
    ],
)
def test_decode_properties_java_quirks(raw: str, expected: dict[str, str]) -> None:
    assert decode_properties(raw) == expected


@given(
    st.dictionaries(
        st.text(alphabet="ab\x01\x02", max_size=3), st.text(alphabet="ab\x01\x02", max_size=3), max_size=4
    )
)
def test_encode_properties_refuses_exactly_the_maps_with_a_separator_inside(props: dict[str, str]) -> None:
    bad = any("\x01" in x or "\x02" in x for item in props.items() for x in item)
    for java_order in (False, True):
        if bad:
            with pytest.raises(IllegalArgumentError):
                encode_properties(props, java_order=java_order)
        else:
            text = encode_properties(props, java_order=java_order)
            assert text == "\x02".join(
                f"{k}\x01{v}"
                for k, v in (props if not java_order else {k: props[k] for k in hashmap_order(props)}).items()
            )


def test_encode_properties_java_order_is_memoized_by_insertion_order() -> None:
    """The memo is keyed by the names in insertion order: keys sharing a Java bucket keep
    their insertion order, so each order of the same names gets its own (correct) answer,
    the first time and from the memo."""
    import itertools

    names = ["UNIQ_KEY", "WAIT", "TAGS", "KEYS", "CLUSTER", "a", "q", "Aa", "BB"]  # "Aa"/"BB" collide
    for perm in itertools.islice(itertools.permutations(names), 0, 200, 7):
        props = {name: name.lower() for name in perm}
        want = "\x02".join(f"{k}\x01{props[k]}" for k in hashmap_order(list(perm)))
        assert encode_properties(props, java_order=True) == want
        assert encode_properties(props, java_order=True) == want


def test_encode_properties() -> None:
    assert encode_properties({}) == ""
    assert encode_properties({"a": "1", "b": "2"}) == "a\x011\x02b\x012"
    assert encode_properties({"TAGS": "a", "WAIT": "true", "UNIQ_KEY": "X"}, java_order=True) == (
        "UNIQ_KEY\x01X\x02WAIT\x01true\x02TAGS\x01a"
    )
    with pytest.raises(IllegalArgumentError):
        encode_properties({"a\x01": "b"})
    with pytest.raises(IllegalArgumentError):
        encode_properties({"a": "b\x02c"})


@given(props_maps)
def test_properties_round_trip(props: dict[str, str]) -> None:
    assert decode_properties(encode_properties(props)) == props
    assert decode_properties(encode_properties(props, java_order=True)) == props
    assert list(decode_properties(encode_properties(props))) == list(props)


# --------------------------------------------------------------------------- batches
messages = st.builds(
    Message,
    st.just("T"),
    st.binary(max_size=200),
    tags=st.none() | prop_text,
    keys=st.none() | st.lists(st.text("abc", min_size=1), max_size=3),
    flag=int32,
    properties=props_maps,
)


@given(st.lists(messages, max_size=5))
def test_batch_round_trip(msgs: list[Message]) -> None:
    body = encode_batch(msgs)
    entries = decode_batch(body)
    assert len(entries) == len(msgs)
    for entry, msg in zip(entries, msgs, strict=True):
        assert entry.flag == msg.flag and entry.body == msg.body
        assert entry.property_map() == msg.properties
    rebuilt = [Message("T", e.body, flag=e.flag, properties=e.property_map()) for e in entries]
    assert encode_batch(rebuilt) == body
    assert decode_batch(memoryview(body)) == entries


def test_batch_malformed() -> None:
    body = encode_batch([Message("T", b"hello", tags="a"), Message("T", b"x")])
    for cut in range(1, len(body)):
        if cut == len(encode_batch([Message("T", b"hello", tags="a")])):
            continue  # a whole first entry is a valid batch
        with pytest.raises(MalformedFrameError):
            decode_batch(body[:cut])
    wrong = bytearray(body)
    wrong[0:4] = struct.pack(">i", 1)
    with pytest.raises(MalformedFrameError, match="TOTALSIZE"):
        decode_batch(bytes(wrong))
    neg = bytearray(body)
    neg[16:20] = struct.pack(">i", -5)
    with pytest.raises(MalformedFrameError):
        decode_batch(bytes(neg))
    with pytest.raises(IllegalArgumentError):
        encode_batch([Message("T", properties={"p": "v" * 40000})])


# --------------------------------------------------------------------------- Message API
def test_message_constructor_and_views() -> None:
    msg = Message("T", b"body", tags="TagA", keys=["k1", "k2"], flag=3, delay_time_level=2)
    assert msg.properties == {"TAGS": "TagA", "KEYS": "k1 k2", "DELAY": "2", "WAIT": "true"}
    assert msg.keys == ["k1", "k2"] and msg.tags == "TagA" and msg.flag == 3
    assert msg.delay_time_level == 2 and msg.wait_store_msg_ok
    msg.keys = "single key"
    assert msg.keys == ["single", "key"]
    msg.keys = []
    assert "KEYS" not in msg.properties and msg.keys == []
    msg.tags = None
    assert msg.tags is None and "TAGS" not in msg.properties
    msg.wait_store_msg_ok = False
    assert msg.get_property("WAIT") == "false" and not msg.wait_store_msg_ok
    plain = Message("T")
    assert plain.properties == {"WAIT": "true"} and plain.body == b"" and plain.delay_time_level == 0
    plain.remove_property("WAIT")
    assert plain.wait_store_msg_ok  # absent means true
    plain.put_property("DELAY", "x")
    assert plain.delay_time_level == 0
    plain.properties = {"a": "b"}
    assert plain.properties == {"a": "b"}
    overridden = Message("T", tags="B", properties={"TAGS": "A", "WAIT": "false"})
    assert overridden.tags == "B" and overridden.wait_store_msg_ok


def test_put_user_property() -> None:
    msg = Message("T")
    msg.put_user_property("color", "red")
    assert msg.get_property("color") == "red"
    for name in ("KEYS", "TAGS", "UNIQ_KEY", "DELAY", "WAIT", "CLUSTER", "TRACE_ON"):
        assert name in MessageConst.RESERVED
        with pytest.raises(IllegalArgumentError, match="used by system"):
            msg.put_user_property(name, "x")
    for name, value in (("", "v"), ("  ", "v"), ("n", ""), ("n", " ")):
        with pytest.raises(IllegalArgumentError, match="blank"):
            msg.put_user_property(name, value)
    with pytest.raises(IllegalArgumentError):
        msg.put_user_property("a\x01", "v")


def test_message_const_names() -> None:
    assert MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX == MessageConst.UNIQ_KEY == "UNIQ_KEY"
    assert MessageConst.PROPERTY_WAIT_STORE_MSG_OK == "WAIT"
    assert MessageConst.PROPERTY_REAL_QUEUE_ID == MessageConst.REAL_QID == "REAL_QID"
    assert MessageConst.PROPERTY_TRACE_SWITCH == "TRACE_ON"
    assert MessageConst.PROPERTY_CONSUME_START_TIMESTAMP == "CONSUME_START_TIME"
    assert MessageConst.KEY_SEPARATOR == " "
    assert "color" not in MessageConst.RESERVED
    assert MessageConst.STRING_HASH_SET is MessageConst.RESERVED


def test_every_property_key_is_also_named_by_its_wire_key() -> None:
    """The aliases are separate constants (a compiled class takes no chained assignment): each
    ``PROPERTY_*`` whose wire key is a plain identifier has that key as an alias, same value."""
    names = [n for n in dir(MessageConst) if n.startswith("PROPERTY_")]
    assert len(names) > 40
    for name in names:
        key = getattr(MessageConst, name)
        if key.isidentifier() and not key.startswith("_"):
            assert getattr(MessageConst, key) == key, name


def test_keys_setter_takes_a_str_any_iterable_or_none() -> None:
    msg = Message("T")
    msg.keys = {"only"}
    assert msg.keys == ["only"]
    msg.keys = (k for k in ("a", "b"))
    assert msg.properties["KEYS"] == "a b" and msg.keys == ["a", "b"]
    msg.keys = None
    assert "KEYS" not in msg.properties and msg.keys == []


def test_messages_pickle_and_copy_with_their_properties() -> None:
    msg = Message("T", b"body", tags="A", keys=["k1", "k2"], flag=7)
    for back in (pickle.loads(pickle.dumps(msg)), copy.copy(msg), copy.deepcopy(msg)):
        assert type(back) is Message
        assert (back.topic, back.body, back.flag, back.properties) == ("T", b"body", 7, msg.properties)
    older = Message("T")
    # the state older versions pickled: (None, slots)
    older.__setstate__((None, {"topic": "U", "body": b"b", "flag": 1, "_raw_props": "", "_props": {}}))
    assert (older.topic, older.body, older.flag, older.properties) == ("U", b"b", 1, {})
    lazy = decode_record(VECTOR_111)  # properties not parsed yet
    back_ext = pickle.loads(pickle.dumps(lazy))
    assert type(back_ext) is MessageExt
    assert (back_ext.properties, back_ext.queue_offset, back_ext.born_host) == (
        lazy.properties,
        lazy.queue_offset,
        lazy.born_host,
    )


def test_repr_is_short() -> None:
    msg = Message("T", b"x" * 1_000_000, tags="A", keys="k")
    text = repr(msg)
    assert len(text) < 200 and "1000000 bytes" in text and text.startswith("Message(topic='T'")
    ext = decode_record(VECTOR_111)
    assert "MessageExt(" in repr(ext) and "7F00000100002A9F0000000000000000" in repr(ext)


def test_message_ext_defaults_and_msg_id() -> None:
    ext = MessageExt("T", b"b", store_host=("127.0.0.1", 10911), commit_log_offset=280, queue_id=2)
    assert ext.msg_id == ext.offset_msg_id == "7F00000100002A9F0000000000000118"
    assert ext.broker_name == "" and ext.stored_properties == "" and ext.properties == {}
    ext.put_property(MessageConst.UNIQ_KEY, "ABC")
    assert ext.msg_id == "ABC"
    decoded = decode_record(VECTOR_111)
    assert decoded.broker_name == ""
    decoded.broker_name = "broker-a"
    decoded.properties["MIN_OFFSET"] = "0"  # the client adds these after a pull
    assert decoded.properties["MIN_OFFSET"] == "0" and decoded.tags == "a"


def test_put_properties_lazily_wins_over_stored_values_without_parsing_first() -> None:
    record = _plain_record("TAGS\x01a\x02MAX_OFFSET\x01old", body=b"b")
    msg = decode_record(record)
    msg.put_properties_lazily({"MAX_OFFSET": "9", "MIN_OFFSET": "0"})
    assert msg.stored_properties == "TAGS\x01a\x02MAX_OFFSET\x01old"  # the record is untouched
    assert msg.properties == {"TAGS": "a", "MAX_OFFSET": "9", "MIN_OFFSET": "0"}
    msg.put_properties_lazily({"MIN_OFFSET": "1"})  # already parsed: a plain update
    assert msg.properties["MIN_OFFSET"] == "1"


def test_message_refuses_a_str_body_at_once() -> None:
    # issue #20: a str body used to fail inside send() with "can't concat str to bytes"
    with pytest.raises(TypeError, match=r"body.encode\('utf-8'\)"):
        Message("T", "a str body")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="not int"):
        Message("T", 42)  # type: ignore[arg-type]
    assert Message("T", bytearray(b"ab")).body == b"ab"
    assert type(Message("T", memoryview(b"cd")).body) is bytes


# --------------------------------------------------------------------------- lazy MessageExt
_COLD = (
    "born_timestamp",
    "born_host",
    "store_timestamp",
    "store_host",
    "commit_log_offset",
    "body_crc",
    "prepared_transaction_offset",
)


def _reference_fields(rec: bytes) -> dict[str, Any]:
    """Every fixed field of one V1 record, read with plain struct calls (the decoder's oracle)."""
    sys_flag = struct.unpack_from(">i", rec, 36)[0]
    born_len = 20 if sys_flag & 0x10 else 8
    store_len = 20 if sys_flag & 0x20 else 8
    head = struct.Struct(f">iiiiiqqiq{born_len}sq{store_len}siqi")
    f = head.unpack_from(rec, 0)

    def host(raw: bytes) -> HostAddr:
        return (str(ipaddress.ip_address(raw[:-4])), int.from_bytes(raw[-4:], "big", signed=True))

    return {
        "body_crc": f[2], "queue_id": f[3], "flag": f[4], "queue_offset": f[5], "commit_log_offset": f[6],
        "sys_flag": f[7], "born_timestamp": f[8], "born_host": host(f[9]), "store_timestamp": f[10],
        "store_host": host(f[11]), "reconsume_times": f[12], "prepared_transaction_offset": f[13],
        "store_size": f[0],
    }  # fmt: skip


@given(st.lists(records(), min_size=1, max_size=3), st.sampled_from(_COLD), st.data())
def test_lazy_cold_fields_agree_with_a_full_decode(
    items: list[dict[str, Any]], first: str, data: st.DataObject
) -> None:
    """The decoder unpacks only the hot fields; whichever cold field is read or set first,
    every field equals what a full struct decode of the record says."""
    encoded = [encode_record(**f) for f in items]
    for msg, rec in zip(decode_records(b"".join(encoded)), encoded, strict=True):
        want = _reference_fields(rec)
        if data.draw(st.booleans()):  # set one cold field before anything was decoded
            value = ("::1", 7) if first.endswith("host") else 12345
            setattr(msg, first, value)
            want[first] = value
        for name, value in want.items():
            got = getattr(msg, name)
            assert (_norm(got) if name.endswith("host") else got) == (
                _norm(value) if name.endswith("host") else value
            ), name


def test_lazy_message_pickles_decoded_without_the_shared_body() -> None:
    body = b"".join(
        _plain_record(encode_properties({"UNIQ_KEY": f"u{i}"}), queue_offset=i, body=b"b" * 1000)
        for i in range(20)
    )
    msgs = decode_records(body)
    one = pickle.dumps(msgs[3])
    assert len(one) < 2 * 1000 + 500  # the message's own body, not the 20-record pull body
    back = pickle.loads(one)
    for name in (*_COLD, "topic", "body", "queue_offset", "stored_properties", "msg_id", "properties"):
        assert getattr(back, name) == getattr(msgs[3], name), name
    assert back.offset_msg_id == msgs[3].offset_msg_id
    assert back.store_host == ("127.0.0.1", 2) and back.commit_log_offset == 1003


@given(st.lists(records(), min_size=1, max_size=3), props_maps, st.text(max_size=20))
def test_decode_records_stamps_like_put_properties_lazily(
    items: list[dict[str, Any]], extra: dict[str, str], broker: str
) -> None:
    """Stamping in the decoder is the same as the former per-message loop over the result."""
    joined = b"".join(encode_record(**f) for f in items)
    stamped = decode_records(joined, broker_name=broker, extra_properties=extra)
    plain = decode_records(joined)
    for msg in plain:
        msg.put_properties_lazily(extra)
        msg.broker_name = broker
    for a, b in zip(stamped, plain, strict=True):
        assert a.properties == b.properties
        assert a.stored_properties == b.stored_properties
        assert a.broker_name == b.broker_name == broker
        assert a.topic == b.topic and a.body == b.body and a.queue_offset == b.queue_offset


@given(st.lists(props_maps, min_size=1, max_size=4), props_maps, st.booleans())
def test_put_properties_lazily_each_matches_one_by_one(
    stored: list[dict[str, str]], props: dict[str, str], parse_first: bool
) -> None:
    def make() -> list[MessageExt]:  # decoded, so the properties are still unparsed
        msgs = decode_records(b"".join(_plain_record(encode_properties(p)) for p in stored))
        if parse_first:
            for m in msgs:
                _ = m.properties
        return msgs

    each, one_by_one = make(), make()
    put_properties_lazily_each(each, props)
    for m in one_by_one:
        m.put_properties_lazily(props)
    assert [m.properties for m in each] == [m.properties for m in one_by_one]
