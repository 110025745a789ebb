"""fastjson-compatible reader/writer: the section 9 traps, escapes, doubles, PrettyFormat."""

from __future__ import annotations

import contextlib
import enum
from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketq.errors import ProtocolError
from rocketq.protocol.codes import LanguageCode, PermName
from rocketq.protocol.fastjson import (
    MAX_DEPTH,
    JsonBean,
    JsonError,
    ObjectKey,
    dumps,
    java_double_to_string,
    java_prop,
    loads,
)
from rocketq.protocol.message_queue import MessageQueue

MQ_TEXT = '{"brokerName":"b","queueId":0,"topic":"T"}'

# --- reader -------------------------------------------------------------------------------


def test_loads_strict_json() -> None:
    assert loads('{"a":[1,-2,3.5,1E3,true,false,null,"x"],"b":{}}') == {
        "a": [1, -2, 3.5, 1000.0, True, False, None, "x"],
        "b": {},
    }
    assert loads(b" [ ] ") == []
    assert loads("12345678901234567890123") == 12345678901234567890123
    assert isinstance(loads("1"), int)
    assert isinstance(loads("1.0"), float)


def test_loads_bare_integer_keys() -> None:
    # ClusterInfo / consumerOffset.json: Map<Long|Integer, ...> keys written bare.
    assert loads('{"brokerAddrs":{0:"127.0.0.1:10911",1:"x",-3:"y"}}') == {
        "brokerAddrs": {0: "127.0.0.1:10911", 1: "x", -3: "y"}
    }
    # quoted numeric keys stay strings (the bean layer converts them)
    assert loads('{"0":"a"}') == {"0": "a"}


def test_loads_object_keys() -> None:
    value = loads("{" + MQ_TEXT + ':{"x":1},' + MQ_TEXT.replace("0", "1") + ":2}")
    assert isinstance(value, dict)
    keys = list(value)
    assert keys[0] == ObjectKey((("brokerName", "b"), ("queueId", 0), ("topic", "T")))
    assert keys[0].thaw() == {"brokerName": "b", "queueId": 0, "topic": "T"}
    assert value[keys[0]] == {"x": 1}
    assert value[keys[1]] == 2
    assert hash(keys[0]) == hash(ObjectKey.of({"brokerName": "b", "queueId": 0, "topic": "T"}))


def test_loads_array_and_nested_object_keys() -> None:
    value = loads('{[1,{"a":[2]}]:"v"}')
    assert isinstance(value, dict)
    (key,) = value
    assert isinstance(key, ObjectKey)
    assert key.is_array
    assert key.thaw() == [1, {"a": [2]}]


def test_loads_lenient_forms() -> None:
    # fastjson defaults: AllowSingleQuotes, AllowUnQuotedFieldNames; \f and \b as whitespace.
    assert loads("{'a':'b'}") == {"a": "b"}
    assert loads("{abc:1,true:2,null:3}") == {"abc": 1, True: 2, None: 3}
    assert loads('\ufeff{\f"a"\b:\t1\r\n}') == {"a": 1}
    assert loads(r'"\x41\v\'\/"') == "A\v'/"


def test_loads_string_escapes() -> None:
    assert loads(r'"a\"b\\c\/d\b\f\n\r\t\u0001\u00e9"') == 'a"b\\c/d\b\f\n\r\t\x01é'
    # an escaped UTF-16 surrogate pair is one code point; a lone surrogate is kept
    assert loads(r'"\ud83d\ude00"') == "\U0001f600"
    assert loads(r'"\ud83d"') == "\ud83d"
    assert loads('"tag-中文"'.encode()) == "tag-中文"
    assert loads('"raw\x01control"') == "raw\x01control"


def test_loads_duplicate_keys_last_wins() -> None:
    assert loads('{"a":1,"b":2,"a":3}') == {"a": 3, "b": 2}


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "   ",
        "{",
        "}",
        "[1,",
        "[1,]",
        '{"a"}',
        '{"a":}',
        '{"a":1,}',
        '{"a":1 "b":2}',
        "[1 2]",
        "tru",
        "nul",
        "01x",
        "-",
        "1.",
        ".5",
        '"abc',
        r'"\q"',
        r'"\u12"',
        r'"\x4"',
        "1 2",
        "{:1}",
        "{1:}",
        "[}",
        "@",
        "undefined",
        "\x00",
        b"\xff\xfe",
        b'{"a":"\xc3"}',
        "9" * 5000,
    ],
)
def test_loads_rejects_with_typed_error(bad: str | bytes) -> None:
    with pytest.raises(JsonError) as info:
        loads(bad)
    assert isinstance(info.value, ProtocolError)


def test_loads_depth_limit() -> None:
    assert loads("[" * MAX_DEPTH + "]" * MAX_DEPTH) is not None
    for text in ("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), "[" * 100_000, '{"a":' * 100_000):
        with pytest.raises(JsonError, match="deep"):
            loads(text)


def test_loads_rejects_every_prefix_of_a_body() -> None:
    body = '{"clientId":"c","consumerGroup":"G","mqSet":[' + MQ_TEXT + "]," + '"m":{0:1.5E-7}}'
    assert loads(body)
    for i in range(len(body)):
        with pytest.raises(JsonError):
            loads(body[:i])


def test_loads_wrong_argument_type() -> None:
    with pytest.raises(TypeError):
        loads(123)  # type: ignore[arg-type]


# --- writer -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0.0, "0.0"),
        (-0.0, "-0.0"),
        (1.0, "1.0"),
        (12.5, "12.5"),
        (-3.25, "-3.25"),
        (0.03333333333333333, "0.03333333333333333"),
        (0.001, "0.001"),
        (9.99e-4, "9.99E-4"),
        (1e-10, "1.0E-10"),
        (9999999.0, "9999999.0"),
        (1e7, "1.0E7"),
        (123456789.0, "1.23456789E8"),
        (-2.5e20, "-2.5E20"),
        (1e22, "1.0E22"),
        (1e23, "1.0E23"),
        (5e-324, "4.9E-324"),
        (1.7976931348623157e308, "1.7976931348623157E308"),
        (273.22727272727275, "273.22727272727275"),
    ],
)
def test_java_double_to_string(value: float, text: str) -> None:
    assert java_double_to_string(value) == text


def test_dumps_scalars() -> None:
    assert dumps(None) == "null"
    assert dumps(True) == "true"
    assert dumps(False) == "false"
    assert dumps(-5) == "-5"
    assert dumps(2.0) == "2.0"
    assert dumps(float("nan")) == "null"  # fastjson writes NaN/Infinity as null
    assert dumps([float("inf")]) == "[null]"
    assert dumps(b"hi") == '"aGk="'  # byte[] as base64


def test_dumps_default_escapes() -> None:
    # SerializeWriter.writeStringWithDoubleQuote without BrowserCompatible
    s = 'q"b\\/\b\f\n\r\t\x00\x01\x0b\x1f\x7f\x9f\xa0é中\u2028\u2029\U0001f600'
    assert dumps(s) == (
        '"q\\"b\\\\/\\b\\f\\n\\r\\t\\u0000\\u0001\\u000B\\u001F\\u007F\\u009F\xa0é中\\u2028\\u2029\U0001f600"'
    )
    assert loads(dumps(s)) == s


def test_dumps_browser_compatible_escapes() -> None:
    s = 'q"/\n\x01é中\U0001f600~'
    assert dumps(s, browser_compatible=True) == '"q\\"\\/\\n\\u0001\\u00E9\\u4E2D\\uD83D\\uDE00~"'
    assert loads(dumps(s, browser_compatible=True)) == s
    assert dumps(s, browser_compatible=True).isascii()


def test_dumps_maps_keep_order_skip_nulls_and_write_bare_keys() -> None:
    assert dumps({"b": 1, "a": None, "c": [None]}) == '{"b":1,"c":[null]}'
    assert dumps({2: "x", 0: "y"}) == '{2:"x",0:"y"}'
    assert dumps({MessageQueue("T", "b", 0): 1}) == "{" + MQ_TEXT + ":1}"
    assert dumps({ObjectKey.of([1, 2]): 1}) == "{[1,2]:1}"


def test_dumps_browser_compatible_keys_and_longs() -> None:
    assert dumps({0: "a", "k": 1}, browser_compatible=True) == '{"0":"a","k":1}'
    assert dumps({MessageQueue("T", "b", 0): 1}, browser_compatible=True) == (
        '{"{\\"brokerName\\":\\"b\\",\\"queueId\\":0,\\"topic\\":\\"T\\"}":1}'
    )
    big = 2**53
    assert dumps([big - 1, big, -big], browser_compatible=True) == f'[{big - 1},"{big}","{-big}"]'
    assert dumps([big]) == f"[{big}]"


def test_dumps_map_sort() -> None:
    assert dumps({"b": 1, "a": 2}, map_sort=True) == '{"a":2,"b":1}'
    assert dumps({10: "x", 2: "y"}, map_sort=True, browser_compatible=True) == '{"2":"y","10":"x"}'
    assert dumps({1: "x", "a": "y"}, map_sort=True) == '{1:"x","a":"y"}'  # unsortable: as is


class Color(enum.Enum):
    RED = 7


def test_dumps_enums_by_name() -> None:
    assert dumps([Color.RED, LanguageCode.JAVA]) == '["RED","JAVA"]'
    assert dumps({Color.RED: 1}, browser_compatible=True) == '{"RED":1}'


def test_dumps_sets() -> None:
    # HashSet<String> iteration order (Java): "TagB" hashes to the bucket after "TagA"
    assert dumps({"TagB", "TagA"}) == '["TagA","TagB"]'
    assert dumps(frozenset({3, 1, 2})) == "[1,2,3]"
    assert dumps(set()) == "[]"


def test_dumps_rejects_unknown_types() -> None:
    with pytest.raises(TypeError):
        dumps(object())


def test_pretty_format_matches_fastjson() -> None:
    obj = {"offsetTable": {"T@G": {0: 5, 1: 4}, "U@G": {}}, "list": [1, {"a": []}], "e": []}
    assert dumps(obj, pretty=True) == (
        '{\n\t"offsetTable":{\n\t\t"T@G":{0:5,1:4\n\t\t},\n\t\t"U@G":{}\n\t},'
        '\n\t"list":[\n\t\t1,\n\t\t{\n\t\t\t"a":[]\n\t\t}\n\t],\n\t"e":[]\n}'
    )
    assert loads(dumps(obj, pretty=True)) == obj


# --- beans --------------------------------------------------------------------------------


@dataclass(kw_only=True)
class Inner(JsonBean):
    value: int = 0


@dataclass(kw_only=True)
class Sample(JsonBean):
    zeta: str | None = None
    client_id: str | None = field(default=None, metadata=java_prop("clientID"))
    rate: float = 0.0
    perm: int = 6
    color: Color | None = None
    flag: bool = False
    mq: MessageQueue | None = None
    inners: list[Inner] = field(default_factory=list)
    by_queue: dict[MessageQueue, Inner] = field(default_factory=dict)
    by_id: dict[int, str] = field(default_factory=dict)
    sorted_map: dict[str, int] = field(default_factory=dict, metadata=java_prop(tree=True))
    anything: object = None


def test_bean_properties_sorted_nulls_omitted_names_mapped() -> None:
    sample = Sample(client_id="c", rate=1, perm=PermName.PERM_READ | PermName.PERM_WRITE)
    assert sample.to_json() == (
        b'{"byId":{},"byQueue":{},"clientID":"c","flag":false,"inners":[],"perm":6,"rate":1.0,"sortedMap":{}}'
    )
    assert sample.to_json_obj()["rate"] == 1.0
    assert dumps(sample, pretty=True).startswith('{\n\t"byId":{},\n\t"byQueue":{},')


def test_bean_round_trip_and_tree_sorting() -> None:
    mq0, mq1 = MessageQueue("T", "b", 0), MessageQueue("T", "b", 1)
    sample = Sample(
        zeta="ü",
        color=Color.RED,
        flag=True,
        mq=mq0,
        inners=[Inner(value=1)],
        by_queue={mq1: Inner(value=2), mq0: Inner(value=3)},
        by_id={1: "x", 0: "y"},
        sorted_map={"b": 1, "a": 2},
        anything={"k": [1]},
    )
    text = sample.to_json()
    assert b'"sortedMap":{"a":2,"b":1}' in text
    assert b'"byId":{1:"x",0:"y"}' in text
    again = Sample.from_json(text)
    assert again == Sample(**{**sample.__dict__, "sorted_map": {"a": 2, "b": 1}})
    assert list(again.by_queue) == [mq1, mq0]


def test_from_json_is_lenient_like_fastjson() -> None:
    sample = Sample.from_json(
        '{"unknown":{"x":[1]},"perm":"7","rate":"2.5","flag":"true","color":0,'
        '"byId":{"3":"q"},"zeta":12,"inners":[{"value":1.9}],"client_id":"ignored",'
        '"byQueue":{"{\\"brokerName\\":\\"b\\",\\"queueId\\":\\"4\\",\\"topic\\":\\"T\\"}":{}},'
        '"mq":null,"sortedMap":null}'
    )
    assert sample.perm == 7
    assert sample.rate == 2.5
    assert sample.flag is True
    assert sample.color is Color.RED
    assert sample.by_id == {3: "q"}
    assert sample.zeta == "12"
    assert sample.inners == [Inner(value=1)]
    assert sample.client_id is None
    assert sample.by_queue == {MessageQueue("T", "b", 4): Inner()}
    assert sample.mq is None
    assert sample.sorted_map == {}
    assert Sample.from_json("{}") == Sample()


@pytest.mark.parametrize(
    "bad",
    [
        "[]",
        '{"perm":"x"}',
        '{"perm":true}',
        '{"flag":"yes"}',
        '{"color":"BLUE"}',
        '{"color":5}',
        '{"inners":{}}',
        '{"inners":[1]}',
        '{"byId":[]}',
        '{"byId":{"k":"v"}}',
        '{"mq":"T"}',
        '{"rate":"fast"}',
        '{"perm":',
    ],
)
def test_from_json_rejects_unconvertible_values(bad: str) -> None:
    with pytest.raises(JsonError):
        Sample.from_json(bad)


# --- properties ---------------------------------------------------------------------------

_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
)
_leaf_values = _scalars.filter(lambda v: v is not None)
_object_keys = st.builds(
    ObjectKey.of, st.dictionaries(st.text(max_size=6), _leaf_values, max_size=3)
) | st.builds(ObjectKey.of, st.lists(_scalars, max_size=3))
_keys = st.text(max_size=8) | st.integers(min_value=-(2**63), max_value=2**63 - 1) | _object_keys


def _extend(children: st.SearchStrategy[object]) -> st.SearchStrategy[object]:
    # map values are never None: fastjson skips null map values when writing
    return st.lists(children, max_size=4) | st.dictionaries(
        _keys, children.filter(lambda v: v is not None), max_size=4
    )


_json_values = st.recursive(_scalars, _extend, max_leaves=20)


@settings(max_examples=200, deadline=None)
@given(_json_values)
def test_round_trip_compact_and_pretty(value: object) -> None:
    text = dumps(value)
    assert loads(text) == value
    assert loads(text.encode()) == value
    assert dumps(loads(text)) == text
    assert loads(dumps(value, pretty=True)) == value


_browser_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53) + 1, max_value=2**53 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12),
    lambda c: (
        st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=6), c.filter(lambda v: v is not None))
    ),
    max_leaves=20,
)


@settings(max_examples=100, deadline=None)
@given(_browser_values)
def test_round_trip_browser_compatible(value: object) -> None:
    text = dumps(value, browser_compatible=True)
    assert text.isascii()
    assert loads(text) == value


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=64) | st.text(alphabet="{}[]:,'\"\\0123456789-.eEtrufalsnx \n", max_size=40))
def test_garbage_gives_value_or_typed_error(data: bytes | str) -> None:
    with contextlib.suppress(JsonError):
        loads(data)


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_mutated_bodies_give_value_or_typed_error(data: st.DataObject) -> None:
    body = bytearray(b'{"mqTable":{' + MQ_TEXT.encode() + b':{"droped":false,"x":[1.5,"\\u00e9"]}}}')
    for _ in range(data.draw(st.integers(1, 4))):
        pos = data.draw(st.integers(0, len(body) - 1))
        body[pos] = data.draw(st.integers(0, 255))
    with contextlib.suppress(JsonError):
        loads(bytes(body))


@dataclass
class _Longs(JsonBean):
    value: int = 0


@pytest.mark.parametrize(
    "text", ['{"value":9223372036854775808}', '{"value":-1e30}', '{"value":"1' + "0" * 80 + '"}']
)
def test_an_integer_past_a_java_long_is_refused(text: str) -> None:
    # fastjson fails a number that does not fit the long/int property (issue #21)
    with pytest.raises(JsonError):
        _Longs.from_json(text)


def test_integers_within_a_java_long_are_read() -> None:
    assert _Longs.from_json('{"value":9223372036854775807}').value == 2**63 - 1
    assert _Longs.from_json('{"value":"-9223372036854775808"}').value == -(2**63)
