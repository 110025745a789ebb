"""Tests of rocketq.protocol.headers against real 4.9.7 frames, section 11 and hypothesis."""

from __future__ import annotations

import enum
import typing
from collections import Counter
from dataclasses import dataclass, fields
from functools import cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketq.protocol.codes import LanguageCode, RequestCode, SerializeType
from rocketq.protocol.frame import RemotingCommand, decode_frame
from rocketq.protocol.headers import (
    NON_HEADER_EXT_FIELDS,
    REQUEST_HEADERS,
    RESPONSE_HEADERS,
    CommandHeader,
    CreateTopicRequestHeader,
    GetConsumerRunningInfoRequestHeader,
    GetRouteInfoRequestHeader,
    JavaType,
    PullMessageRequestHeader,
    PullMessageResponseHeader,
    QueryConsumeQueueRequestHeader,
    QueryConsumerOffsetRequestHeader,
    RegisterBrokerRequestHeader,
    ResetOffsetRequestHeader,
    SendMessageRequestHeader,
    SendMessageRequestHeaderV2,
    SendMessageResponseHeader,
    UnregisterClientRequestHeader,
    jenum,
    jint,
    jstring,
)
from rocketq.protocol.java import hashmap_capacity, hashmap_order
from tests.conftest import GoldenFrame, load_golden_frames

# Request codes seen in the golden captures that genuinely have no custom header in
# 4.9.7 (createRequestCommand(code, null)); any other golden code must be registered.
NO_HEADER_CODES = {
    RequestCode.HEART_BEAT,
    RequestCode.LOCK_BATCH_MQ,
    RequestCode.UNLOCK_BATCH_MQ,
    RequestCode.GET_BROKER_RUNTIME_INFO,
    RequestCode.GET_BROKER_CLUSTER_INFO,
    RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER,
}

# Which non-header keys the captures contain, and on which frames (the table of such
# keys, with where Java inserts them, is rocketq.protocol.headers.NON_HEADER_EXT_FIELDS).
EXPECTED_EXTRAS = {
    "ReqT": "pull consumer (StreamTypeRPCHook) requests",
    "AccessKey": "mqadmin requests (AclClientRPCHook)",
    "Signature": "mqadmin requests (AclClientRPCHook)",
    "_UNIQUE_KEY_QUERY": "QUERY_MESSAGE requests",
    "MSG_REGION": "send responses",
    "TRACE_ON": "send responses",
}


@dataclass(frozen=True)
class _Case:
    frame: GoldenFrame
    cmd: RemotingCommand
    request_code: int
    header_class: type[CommandHeader] | None

    @property
    def id(self) -> str:
        return f"{self.frame.file}:{self.frame.seq}"


@cache
def _cases() -> tuple[_Case, ...]:
    out = []
    request_codes: dict[tuple[str, int, int], int] = {}
    for f in load_golden_frames():
        cmd = decode_frame(f.frame)
        if f.is_response:
            code = request_codes[(f.file, f.conn, f.opaque)]
            cls = RESPONSE_HEADERS.get(code)
        else:
            code = f.code
            request_codes[(f.file, f.conn, f.opaque)] = code
            cls = REQUEST_HEADERS.get(code)
        out.append(_Case(f, cmd, code, cls))
    return tuple(out)


def _java_extfields(case: _Case) -> dict[str, str]:
    """Re-create the golden extFields the way Java builds them: extras put before the
    header, the header fields, extras put after; JSON in HashMap order."""
    assert case.header_class is not None
    ext = case.cmd.ext_fields or {}
    header = case.header_class.from_ext_fields(ext)
    before = {
        k: v for k, v in ext.items() if k in NON_HEADER_EXT_FIELDS and NON_HEADER_EXT_FIELDS[k].before_header
    }
    after = {
        k: v
        for k, v in ext.items()
        if k in NON_HEADER_EXT_FIELDS and not NON_HEADER_EXT_FIELDS[k].before_header
    }
    stype = SerializeType[case.frame.serialize_type]
    out = header.to_ext_fields(before, serialize_type=stype)
    out.update(after)
    if stype == SerializeType.JSON and after:
        # The Signature put after the header lands in HashMap order too.
        out = {k: out[k] for k in hashmap_order(out)}
    return out


_HEADER_CASES = [c for c in _cases() if c.header_class is not None]


def test_golden_case_count() -> None:
    # all 7 captures, both directions; guards against the table silently shrinking
    assert len(_cases()) == 644
    assert len(_HEADER_CASES) == 481


@pytest.mark.parametrize("case", _HEADER_CASES, ids=lambda c: c.id)
def test_golden_extfields_round_trip(case: _Case) -> None:
    assert case.header_class is not None
    ext = case.cmd.ext_fields
    if ext is None:
        # binary frames carry no map for an empty header; JSON ones always do (below)
        assert case.frame.serialize_type == "ROCKETMQ"
        assert case.header_class.from_ext_fields(None) == case.header_class()
        return
    wire_names = {wf.wire for wf in case.header_class.wire_fields()}
    leftovers = [k for k in ext if k not in wire_names]
    assert set(leftovers) <= set(NON_HEADER_EXT_FIELDS), leftovers
    header = case.header_class.from_ext_fields(ext)
    # same dict AND same key order as Java
    assert list(_java_extfields(case).items()) == list(ext.items())
    # without extras: exactly the header's own keys and values
    assert header.to_ext_fields() == {k: v for k, v in ext.items() if k in wire_names}
    # and the frame re-encodes to the captured bytes
    rebuilt = RemotingCommand(
        code=case.cmd.code,
        flag=case.cmd.flag,
        opaque=case.cmd.opaque,
        language=case.cmd.language,
        version=case.cmd.version,
        remark=case.cmd.remark,
        ext_fields=_java_extfields(case),
        body=case.cmd.body,
        serialize_type=case.cmd.serialize_type,
    )
    assert rebuilt.encode() == case.frame.frame
    # real requests and successful responses never miss a required field (error
    # responses such as 25 SUBSCRIPTION_NOT_LATEST to a pull carry an empty header)
    if not case.frame.is_response or case.cmd.code == 0:
        assert header.missing_required() == []
    else:
        assert header.missing_required() in (
            [],
            [wf.wire for wf in case.header_class.wire_fields() if wf.required],
        )


def test_golden_extra_keys_are_exactly_the_documented_ones() -> None:
    seen: Counter[str] = Counter()
    for case in _cases():
        if case.header_class is None:
            continue
        wire_names = {wf.wire for wf in case.header_class.wire_fields()}
        seen.update(k for k in case.cmd.ext_fields or {} if k not in wire_names)
    assert set(seen) == set(EXPECTED_EXTRAS)
    assert set(EXPECTED_EXTRAS) <= set(NON_HEADER_EXT_FIELDS)


def test_golden_request_codes_are_covered() -> None:
    codes = {c.frame.code for c in _cases() if not c.frame.is_response}
    missing = {RequestCode(c).name for c in codes if c not in REQUEST_HEADERS and c not in NO_HEADER_CODES}
    assert missing == set()
    assert not NO_HEADER_CODES & set(REQUEST_HEADERS)
    # codes with no header really carry nothing but RPC-hook keys in the captures
    for case in _cases():
        if not case.frame.is_response and case.frame.code in NO_HEADER_CODES:
            assert set(case.cmd.ext_fields or {}) <= set(NON_HEADER_EXT_FIELDS), case.id
    assert len(codes) == 30


def test_golden_responses_have_extfields_iff_a_response_header_is_registered() -> None:
    checked = 0
    for case in _cases():
        if case.frame.is_response and case.frame.serialize_type == "JSON":
            assert (case.cmd.ext_fields is not None) == (case.request_code in RESPONSE_HEADERS), case.id
            checked += 1
    assert checked > 200


def test_golden_binary_fast_codes_order() -> None:
    """ROCKETMQ frames of FastCodesHeader classes list fields in encode() order."""
    binary = [c for c in _HEADER_CASES if c.frame.serialize_type == "ROCKETMQ" and c.cmd.ext_fields]
    classes = {c.header_class for c in binary}
    assert {
        PullMessageRequestHeader,
        PullMessageResponseHeader,
        SendMessageRequestHeaderV2,
        SendMessageResponseHeader,
    } <= classes
    pull = next(c for c in binary if c.header_class is PullMessageRequestHeader)
    assert pull.cmd.ext_fields is not None
    assert list(pull.cmd.ext_fields)[:3] == ["consumerGroup", "topic", "queueId"]
    assert list(pull.cmd.ext_fields)[-2:] == ["bname", "ReqT"]


# --------------------------------------------------------------------------- section 11 vectors
V2_VECTOR_HEADER = (
    '{"code":310,"extFields":{"a":"PG","b":"T","c":"TBW102","d":"4","e":"0","f":"0",'
    '"g":"1700000000000","h":"0","i":"TAGS\\u0001a\\u0002WAIT\\u0001true","j":"0","k":"false",'
    '"m":"false","n":"broker-a"},"flag":0,"language":"JAVA","opaque":2,'
    '"serializeTypeCurrentRPC":"JSON","version":409}'
)


def _v2_vector() -> SendMessageRequestHeaderV2:
    return SendMessageRequestHeaderV2(
        producer_group="PG",
        topic="T",
        default_topic="TBW102",
        default_topic_queue_nums=4,
        queue_id=0,
        sys_flag=0,
        born_timestamp=1700000000000,
        flag=0,
        properties="TAGS\x01a\x02WAIT\x01true",
        reconsume_times=0,
        bname="broker-a",
    )


def test_send_message_v2_vector() -> None:
    ext = _v2_vector().to_ext_fields()
    assert list(ext.items()) == [
        ("a", "PG"),
        ("b", "T"),
        ("c", "TBW102"),
        ("d", "4"),
        ("e", "0"),
        ("f", "0"),
        ("g", "1700000000000"),
        ("h", "0"),
        ("i", "TAGS\x01a\x02WAIT\x01true"),
        ("j", "0"),
        ("k", "false"),
        ("m", "false"),
        ("n", "broker-a"),
    ]
    cmd = RemotingCommand(code=310, opaque=2, language=LanguageCode.JAVA, version=409, ext_fields=ext)
    assert cmd.encode_header().decode() == V2_VECTOR_HEADER
    assert SendMessageRequestHeaderV2.from_ext_fields(ext) == _v2_vector()


def test_pull_response_vector() -> None:
    hdr = PullMessageResponseHeader(
        suggest_which_broker_id=0, next_begin_offset=10, min_offset=0, max_offset=10
    )
    cmd = RemotingCommand(
        code=0,
        flag=1,
        opaque=7,
        language=LanguageCode.JAVA,
        version=409,
        remark="FOUND",
        ext_fields=hdr.to_ext_fields(),
    )
    assert cmd.encode_header().decode() == (
        '{"code":0,"extFields":{"suggestWhichBrokerId":"0","nextBeginOffset":"10","maxOffset":"10",'
        '"minOffset":"0"},"flag":1,"language":"JAVA","opaque":7,"remark":"FOUND",'
        '"serializeTypeCurrentRPC":"JSON","version":409}'
    )
    # ROCKETMQ serialization: FastCodesHeader.encode order
    assert list(hdr.to_ext_fields(serialize_type=SerializeType.ROCKETMQ)) == [
        "suggestWhichBrokerId",
        "nextBeginOffset",
        "minOffset",
        "maxOffset",
    ]


def test_v1_v2_mapping_both_ways() -> None:
    v2 = _v2_vector()
    v2.max_reconsume_times = 16
    v2.batch = True
    v1 = v2.to_v1()
    assert isinstance(v1, SendMessageRequestHeader)
    assert v1.to_ext_fields() == {
        "producerGroup": "PG",
        "topic": "T",
        "defaultTopic": "TBW102",
        "defaultTopicQueueNums": "4",
        "queueId": "0",
        "sysFlag": "0",
        "bornTimestamp": "1700000000000",
        "flag": "0",
        "properties": "TAGS\x01a\x02WAIT\x01true",
        "reconsumeTimes": "0",
        "unitMode": "false",
        "batch": "true",
        "maxReconsumeTimes": "16",
        "bname": "broker-a",
    }
    assert SendMessageRequestHeaderV2.from_v1(v1) == v2
    v2_ext = v2.to_ext_fields()
    assert v2_ext["l"] == "16"
    assert v2_ext["m"] == "true"
    # every V1 key maps to exactly one V2 letter
    v1_by_attr = {wf.attr: wf.wire for wf in SendMessageRequestHeader.wire_fields()}
    v2_by_attr = {wf.attr: wf.wire for wf in SendMessageRequestHeaderV2.wire_fields()}
    assert set(v1_by_attr) == set(v2_by_attr)
    assert sorted(v2_by_attr.values()) == list("abcdefghijklmn")
    for attr, letter in v2_by_attr.items():
        assert v2_ext.get(letter) == v1.to_ext_fields().get(v1_by_attr[attr])


def test_golden_v2_sends_map_to_v1() -> None:
    sends = [c for c in _HEADER_CASES if c.header_class is SendMessageRequestHeaderV2]
    assert len(sends) >= 12
    for case in sends:
        assert case.cmd.ext_fields is not None
        v2 = SendMessageRequestHeaderV2.from_ext_fields(case.cmd.ext_fields)
        v1 = v2.to_v1()
        assert v1.producer_group == case.cmd.ext_fields["a"]
        assert v1.batch is (case.cmd.code == RequestCode.SEND_BATCH_MESSAGE)
        assert SendMessageRequestHeaderV2.from_v1(v1).to_ext_fields() == case.cmd.ext_fields
        # the client's path: V2's codec over the V1 header, same keys in the same order
        direct = SendMessageRequestHeaderV2.ext_fields_from_v1(v1)
        assert list(direct.items()) == list(case.cmd.ext_fields.items())


# --------------------------------------------------------------------------- lenient decoding
def test_missing_required_fields_stay_none_and_are_listed() -> None:
    hdr = QueryConsumerOffsetRequestHeader.from_ext_fields({"consumerGroup": "G"})
    assert hdr.topic is None
    assert hdr.queue_id is None
    assert hdr.missing_required() == ["topic", "queueId"]
    assert QueryConsumerOffsetRequestHeader.from_ext_fields(None).missing_required() == [
        "consumerGroup",
        "topic",
        "queueId",
    ]
    # optional fields never count; Java primitives are never None
    unreg = UnregisterClientRequestHeader.from_ext_fields({})
    assert unreg.missing_required() == ["clientID"]
    reset = ResetOffsetRequestHeader.from_ext_fields({})
    assert reset.timestamp == 0
    assert reset.is_force is False
    assert reset.missing_required() == ["topic", "group"]


def test_unknown_keys_are_ignored() -> None:
    ext = {"consumerGroup": "G", "topic": "T", "queueId": "3", "foo": "1", "ReqT": "0", "bname": "b"}
    hdr = QueryConsumerOffsetRequestHeader.from_ext_fields(ext)
    assert hdr == QueryConsumerOffsetRequestHeader(consumer_group="G", topic="T", queue_id=3, bname="b")
    assert hdr.missing_required() == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("true", True),
        ("TRUE", True),
        ("True", True),
        ("tRuE", True),
        ("false", False),
        ("yes", False),
        ("1", False),
        ("", False),
        (" true", False),
    ],
)
def test_booleans_parse_like_java(text: str, expected: bool) -> None:
    hdr = GetRouteInfoRequestHeader.from_ext_fields({"topic": "T", "acceptStandardJsonOnly": text})
    assert hdr.accept_standard_json_only is expected
    running = GetConsumerRunningInfoRequestHeader.from_ext_fields({"jstackEnable": text})
    assert running.jstack_enable is expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("7", 7),
        ("+7", 7),
        ("-7", -7),
        ("007", 7),
        ("2147483647", 2147483647),
        ("-2147483648", -2147483648),
        ("2147483648", None),
        ("99999999999", None),
        ("", None),
        ("-", None),
        (" 7", None),
        ("7 ", None),
        ("1_000", None),
        ("1e3", None),
        ("0x10", None),
        ("abc", None),
        ("٣", 3),  # Java's Character.digit accepts Unicode decimal digits too
    ],
)
def test_int_fields_parse_like_integer_parse_int(text: str, expected: int | None) -> None:
    hdr = QueryConsumerOffsetRequestHeader.from_ext_fields({"queueId": text})
    assert hdr.queue_id == expected
    # a Java primitive keeps its default when the text does not parse
    cq = QueryConsumeQueueRequestHeader.from_ext_fields({"queueId": text})
    assert cq.queue_id == (0 if expected is None else expected)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("9223372036854775807", 2**63 - 1),
        ("-9223372036854775808", -(2**63)),
        ("9223372036854775808", None),
        ("1700000000000", 1700000000000),
        ("1.5", None),
    ],
)
def test_long_fields_parse_like_long_parse_long(text: str, expected: int | None) -> None:
    assert PullMessageResponseHeader.from_ext_fields({"maxOffset": text}).max_offset == expected


def test_primitives_are_always_sent_and_boxed_defaults_follow_java() -> None:
    assert CreateTopicRequestHeader().to_ext_fields() == {"order": "false"}
    assert RegisterBrokerRequestHeader().to_ext_fields() == {"bodyCrc32": "0", "compressed": "false"}
    v2 = SendMessageRequestHeaderV2()
    assert v2.to_ext_fields() == {"k": "false", "m": "false"}
    assert SendMessageRequestHeaderV2(unit_mode=True, batch=True).to_ext_fields() == {
        "k": "true",
        "m": "true",
    }
    # a boxed Boolean can still be omitted; the receiver then sees the Java initializer
    assert CreateTopicRequestHeader(order=None).to_ext_fields() == {}
    assert CreateTopicRequestHeader.from_ext_fields({}).order is False


def test_extra_keys_merge_into_the_java_map() -> None:
    hdr = SendMessageResponseHeader(msg_id="ID", queue_id=1, queue_offset=5)
    extra = {"MSG_REGION": "DefaultRegion", "TRACE_ON": "true"}
    ext = hdr.to_ext_fields(extra)
    # the golden send responses' order
    assert list(ext) == ["queueId", "TRACE_ON", "MSG_REGION", "msgId", "queueOffset"]
    assert ext["MSG_REGION"] == "DefaultRegion"
    binary = hdr.to_ext_fields(extra, serialize_type=SerializeType.ROCKETMQ)
    assert list(binary) == ["msgId", "queueId", "queueOffset", "TRACE_ON", "MSG_REGION"]
    # header values win over a clashing extra key, like HashMap.put
    assert hdr.to_ext_fields({"queueId": "9"})["queueId"] == "1"
    # non-FastCodes classes ignore serialize_type
    q = QueryConsumerOffsetRequestHeader(consumer_group="G", topic="T", queue_id=0)
    assert q.to_ext_fields(serialize_type=SerializeType.ROCKETMQ) == q.to_ext_fields()


def test_registry_shape() -> None:
    assert REQUEST_HEADERS[RequestCode.INVOKE_BROKER_TO_RESET_OFFSET] is ResetOffsetRequestHeader
    assert REQUEST_HEADERS[RequestCode.RESET_CONSUMER_CLIENT_OFFSET] is ResetOffsetRequestHeader
    assert REQUEST_HEADERS[310] is SendMessageRequestHeaderV2
    assert REQUEST_HEADERS[320] is SendMessageRequestHeaderV2
    assert REQUEST_HEADERS[10] is SendMessageRequestHeader
    assert RESPONSE_HEADERS[320] is SendMessageResponseHeader
    for code in (*REQUEST_HEADERS, *RESPONSE_HEADERS):
        RequestCode(code)  # every key is a known request code
    with pytest.raises(TypeError):
        REQUEST_HEADERS[1] = SendMessageRequestHeader  # type: ignore[index]


# --------------------------------------------------------------------------- declarations
class _Color(enum.Enum):
    RED = 1
    BLUE = 2


@dataclass(slots=True, kw_only=True)
class _EnumHeader(CommandHeader):
    JAVA_CLASS: typing.ClassVar[str] = "test.EnumHeader"
    color: _Color | None = jenum("color", _Color, required=True)  # noqa: RUF009 (enum members are immutable)
    name: str | None = jstring("name")


def test_enum_fields_by_name() -> None:
    assert _EnumHeader(color=_Color.BLUE).to_ext_fields() == {"color": "BLUE"}
    assert _EnumHeader.from_ext_fields({"color": "RED"}).color is _Color.RED
    bad = _EnumHeader.from_ext_fields({"color": "GREEN"})
    assert bad.color is None
    assert bad.missing_required() == ["color"]
    assert [wf.java_type for wf in _EnumHeader.wire_fields()] == [JavaType.ENUM, JavaType.STRING]


@dataclass(slots=True, kw_only=True)
class _PostInitHeader(CommandHeader):
    JAVA_CLASS: typing.ClassVar[str] = "test.PostInitHeader"

    topic: str | None = jstring("topic")
    queue_id: int | None = jint("queueId")

    def __post_init__(self) -> None:
        if self.topic is not None:
            self.topic = self.topic.strip()


def test_a_header_with_post_init_is_decoded_through_its_constructor() -> None:
    """The compiled decoders store slots directly only where that is what __init__ does;
    a class with __post_init__ (none in the registry today) still gets it run."""
    decoded = _PostInitHeader.from_ext_fields({"topic": " T ", "queueId": "7"})
    assert (decoded.topic, decoded.queue_id) == ("T", 7)
    checked, missing = _PostInitHeader.from_ext_fields_checked({"topic": " T "})
    assert (checked.topic, missing) == ("T", None)


def test_declaration_mistakes_fail_loudly() -> None:
    @dataclass(slots=True, kw_only=True)
    class WrongType(CommandHeader):
        count: str | None = jint("count")  # type: ignore[assignment]

    @dataclass(slots=True, kw_only=True)
    class Undeclared(CommandHeader):
        count: int | None = None

    with pytest.raises(TypeError, match="annotation"):
        WrongType.wire_fields()
    with pytest.raises(TypeError, match="not declared"):
        Undeclared.wire_fields()


# --------------------------------------------------------------------------- hypothesis
_ALL_CLASSES = sorted({*REQUEST_HEADERS.values(), *RESPONSE_HEADERS.values()}, key=lambda c: c.__name__)
# Strings must survive UTF-8 (no lone surrogates); anything else goes, control chars included.
_TEXT = st.text(st.characters(codec="utf-8"), max_size=40)
_VALUES = {
    JavaType.STRING: _TEXT,
    JavaType.INT: st.integers(-(2**31), 2**31 - 1),
    JavaType.LONG: st.integers(-(2**63), 2**63 - 1),
    JavaType.BOOLEAN: st.booleans(),
}


def _header_strategy(cls: type[CommandHeader]) -> st.SearchStrategy[CommandHeader]:
    hints = typing.get_type_hints(cls)
    defaults = {f.name: f.default for f in fields(cls)}
    kwargs = {}
    for wf in cls.wire_fields():
        values = _VALUES[wf.java_type]
        # None is only a value when it is also the default: a boxed Java field with an
        # initializer (Boolean order = false) that is null is omitted, and the receiver
        # then sees the initializer, not null.
        if type(None) in typing.get_args(hints[wf.attr]) and defaults[wf.attr] is None:
            values = st.none() | values
        kwargs[wf.attr] = values
    return st.builds(cls, **kwargs)


_ANY_HEADER = st.sampled_from(_ALL_CLASSES).flatmap(_header_strategy)


@settings(max_examples=400, deadline=None)
@given(header=_ANY_HEADER, stype=st.sampled_from(SerializeType))
def test_round_trip_over_the_registry(header: CommandHeader, stype: SerializeType) -> None:
    ext = header.to_ext_fields(serialize_type=stype)
    assert type(header).from_ext_fields(ext) == header
    # exactly the non-None fields, as Java strings
    present = {wf.wire for wf in header.wire_fields() if getattr(header, wf.attr) is not None}
    assert set(ext) == present
    # JSON order is the Java HashMap order of the fields' insertion order
    if stype == SerializeType.JSON or not type(header).FAST_CODES_ORDER:
        insertion = [w for w in type(header).java_insertion_order() if w in present]
        assert list(ext) == hashmap_order(insertion)
    # and it survives a real frame in both serializations
    cmd = RemotingCommand(code=1, ext_fields=ext, serialize_type=stype)
    decoded = decode_frame(cmd.encode())
    assert type(header).from_ext_fields(decoded.ext_fields) == header


@pytest.mark.parametrize("cls", _ALL_CLASSES, ids=lambda c: c.__name__)
def test_every_registered_class_round_trips(cls: type[CommandHeader]) -> None:
    @settings(max_examples=15, deadline=None)
    @given(header=_header_strategy(cls))
    def check(header: CommandHeader) -> None:
        assert cls.from_ext_fields(header.to_ext_fields()) == header

    check()
    assert [f.name for f in fields(cls)] == [wf.attr for wf in cls.wire_fields()]


def test_hashmap_capacity_follows_java_resize() -> None:
    # HashMap: tableSizeFor(initialCapacity), then doubling while size > 0.75 * table;
    # to_ext_fields re-orders a header with fewer keys by the smaller table.
    assert [hashmap_capacity(n) for n in (0, 12, 13, 24, 25)] == [16, 16, 32, 32, 64]
    assert (hashmap_capacity(3, 3), hashmap_capacity(4, 3)) == (4, 8)


# ------------------------------------------------------------------ compiled codecs
def _wire_text(jtype: JavaType) -> st.SearchStrategy[str]:
    """What a peer might put in an extFields value of this Java type, hostile forms included."""
    numbers = st.integers(-(2**70), 2**70).map(str)
    odd = st.sampled_from(
        ["", "+", "-", "+7", "-0", " 1", "1_000", "٣", "true", "TRUE", "TrUe", "yes", "1e3"]
    )
    if jtype is JavaType.STRING:
        return st.text(max_size=12)
    return numbers | odd | st.text(max_size=6)


@st.composite
def _ext_for(draw: st.DrawFn, cls: type[CommandHeader]) -> dict[str, str]:
    ext: dict[str, str] = {}
    for wf in cls.wire_fields():
        if draw(st.booleans()):
            if wf.enum_type is not None:
                ext[wf.wire] = draw(st.sampled_from([*wf.enum_type.__members__, "NOPE"]))
            else:
                ext[wf.wire] = draw(_wire_text(wf.java_type))
    if draw(st.booleans()):
        ext["unknownKey"] = "1"
    return ext


@settings(max_examples=600, deadline=None)
@given(data=st.data(), cls=st.sampled_from(_ALL_CLASSES))
def test_compiled_codecs_agree_with_the_generic_walk(data: st.DataObject, cls: type[CommandHeader]) -> None:
    """Each class's compiled from_ext_fields/to_ext_fields give exactly what walking its
    plan gives (the implementation before the compiled fast path), hostile values included."""
    ext = data.draw(_ext_for(cls))
    decoded = _check_decoders(cls, ext)
    header = data.draw(_header_strategy(cls)) if data.draw(st.booleans()) else decoded
    _check_encoders(header, data.draw(_extras_for(cls)))


def _check_decoders(cls: type[CommandHeader], ext: dict[str, str]) -> CommandHeader:
    """from_ext_fields and from_ext_fields_checked give what the generic walk (every value
    through its Java parser) gives, and the checked one names the first missing field."""
    from rocketq.protocol.headers_base import _decode_generic

    want = _decode_generic(cls, ext)
    decoded = cls.from_ext_fields(ext)
    assert decoded == want
    checked, missing = cls.from_ext_fields_checked(ext)
    assert checked == want
    assert missing == next(iter(want.missing_required()), None)
    return decoded


@st.composite
def _extras_for(draw: st.DrawFn, cls: type[CommandHeader]) -> dict[str, str]:
    """Keys already in the map before the header joins it: non-header keys, and sometimes
    a header field's own key (the header's value then wins but the key keeps its place)."""
    keys = [*NON_HEADER_EXT_FIELDS, *(wf.wire for wf in cls.wire_fields())]
    chosen = draw(st.lists(st.sampled_from(keys), unique=True, max_size=4))
    return {key: draw(st.text(max_size=4)) for key in chosen}


def _check_encoders(header: CommandHeader, extra: dict[str, str]) -> None:
    """Every compiled encoder equals its generic reference, key order included."""
    from rocketq.protocol.headers_base import _encode_generic, _merge_generic

    for stype in SerializeType:
        got = header.to_ext_fields(serialize_type=stype)
        want = _encode_generic(header, fast_codes=stype == SerializeType.ROCKETMQ)
        assert list(got.items()) == list(want.items())
    if extra:
        merged = header.to_ext_fields(extra)
        assert list(merged.items()) == list(_merge_generic(header, extra).items())
        # the same extras again: the merging encoder compiled for these keys is reused
        assert list(header.to_ext_fields(dict(extra)).items()) == list(merged.items())


# The data path's four headers, from the maps real 4.9.7 peers send, mutated: most values
# stay in the plain form the compiled decoders take inline, the rest go through the parser.
_HOT_MAPS: dict[type[CommandHeader], dict[str, str]] = {
    # a producer's SEND_MESSAGE_V2
    SendMessageRequestHeaderV2: {
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
    },
    # the broker's answer to it (preSend's keys included)
    SendMessageResponseHeader: {
        "queueId": "1",
        "TRACE_ON": "true",
        "MSG_REGION": "DefaultRegion",
        "msgId": "7F00000100002A9F0000000000000C8A",
        "queueOffset": "1234",
    },
    # a push consumer's PULL_MESSAGE
    PullMessageRequestHeader: {
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
    },
    PullMessageResponseHeader: {
        "suggestWhichBrokerId": "0",
        "nextBeginOffset": "1266",
        "maxOffset": "5000",
        "minOffset": "0",
    },
}
_PLAINISH = st.one_of(
    st.integers(0, 999).map(str),  # the small-number table
    st.integers(-(2**64), 2**64).map(str),
    st.sampled_from(["", "00", "007", "+1", "-0", " 1", "1 ", "1_0", "\uff12", "\u0663\u0660", "\u00b2"]),
    st.sampled_from(["999999999", "1000000000", "2147483647", "2147483648", "9" * 18, "9" * 19]),
    st.sampled_from(["true", "false", "TRUE", "True", "tru", "yes"]),
)


@st.composite
def _hot_maps(draw: st.DrawFn, cls: type[CommandHeader]) -> dict[str, str]:
    ext = dict(_HOT_MAPS[cls])
    for wf in draw(st.lists(st.sampled_from(cls.wire_fields()), unique=True)):
        if draw(st.booleans()):
            ext.pop(wf.wire, None)
        else:
            ext[wf.wire] = draw(st.text(max_size=8) if wf.java_type is JavaType.STRING else _PLAINISH)
    return ext


@pytest.mark.parametrize("cls", list(_HOT_MAPS), ids=lambda c: c.__name__)
def test_hot_headers_decode_like_the_java_parsers(cls: type[CommandHeader]) -> None:
    """The broker's and client's per-message headers: the inline plain-value paths (small
    number table, short digit runs, true/false) never differ from the Java parsers."""
    plain = _check_decoders(cls, _HOT_MAPS[cls])
    assert plain.missing_required() == []

    @settings(max_examples=300, deadline=None)
    @given(ext=_hot_maps(cls), extra=_extras_for(cls))
    def check(ext: dict[str, str], extra: dict[str, str]) -> None:
        _check_encoders(_check_decoders(cls, ext), extra)

    check()


def test_send_answer_map_is_java_order_with_pre_send_keys() -> None:
    """SendMessageProcessor's answer: preSend put MSG_REGION and TRACE_ON first, then the
    header's fields joined; the JSON map is that HashMap's order (from a 4.9.7 capture)."""
    header = SendMessageResponseHeader(
        msg_id="7F00000100002A9F0000000000000C8A", queue_id=1, queue_offset=1234
    )
    ext = header.to_ext_fields({"MSG_REGION": "DefaultRegion", "TRACE_ON": "true"})
    assert list(ext.items()) == list(_HOT_MAPS[SendMessageResponseHeader].items())
    # a header field that is also an extra: the header's value, the extra's place
    clash = header.to_ext_fields({"msgId": "old", "MSG_REGION": "R"})
    assert list(clash) == hashmap_order(["msgId", "MSG_REGION", "queueId", "queueOffset"])
    assert clash["msgId"] == header.msg_id


def test_every_small_number_decodes_as_the_java_parser_reads_it() -> None:
    """Int fields look their value up in a table of small numbers first: every entry (and
    the first numbers past it) must equal what Integer.parseInt gives."""
    from rocketq.protocol.headers_base import _decode_generic

    for number in range(1100):
        ext = {**_HOT_MAPS[SendMessageRequestHeaderV2], "e": str(number), "d": f"{number:03d}"}
        decoded = SendMessageRequestHeaderV2.from_ext_fields(ext)
        assert decoded == _decode_generic(SendMessageRequestHeaderV2, ext)
        assert (decoded.queue_id, decoded.default_topic_queue_nums) == (number, number)


@settings(max_examples=300, deadline=None)
@given(v1=_header_strategy(SendMessageRequestHeader), stype=st.sampled_from(SerializeType))
def test_v2_ext_fields_straight_from_a_v1_header(v1: SendMessageRequestHeader, stype: SerializeType) -> None:
    """What the producer sends: the V2 map of a V1 header, in both serializations and
    with any fields absent (a smaller HashMap re-orders), equals building the V2 header."""
    want = SendMessageRequestHeaderV2.from_v1(v1).to_ext_fields(serialize_type=stype)
    got = SendMessageRequestHeaderV2.ext_fields_from_v1(v1, serialize_type=stype)
    assert list(got.items()) == list(want.items())


def test_many_sets_of_extra_keys_still_merge_in_java_order() -> None:
    """Merging encoders are compiled for a bounded number of key sets per class; past
    that the generic merge answers, with the same result."""
    from rocketq.protocol.headers_base import _merge_generic

    header = UnregisterClientRequestHeader(client_id="c", producer_group="p")
    for i in range(80):
        extra = {f"k{i}": "x", "AccessKey": "ak"}
        assert list(header.to_ext_fields(extra).items()) == list(_merge_generic(header, extra).items())
