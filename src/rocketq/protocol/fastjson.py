"""fastjson 1.2.x compatible JSON: a tolerant reader, a byte-exact writer and JSON beans.

Every JSON body of the RocketMQ remoting protocol is written by Java with fastjson 1.x
(``RemotingSerializable.encode`` / ``toJson``; 4.9.x pins 1.2.69), which differs from
strict JSON in ways that matter on the wire (protocol reference section 9):

* **Non-string map keys are written bare**: ``Map<Long, String>`` as ``{0:"a"}`` and
  ``Map<MessageQueue, ...>`` as ``{{"brokerName":"b","queueId":0,"topic":"T"}:{...}}``
  (fastjson ``MapSerializer``). :func:`loads` accepts any JSON value as an object key:
  numbers come back as ``int``/``float``, objects and arrays as a hashable
  :class:`ObjectKey` (bodies turn those into :class:`MessageQueue`).
* **Bean properties are sorted alphabetically** (``SerializerFeature.SortField``), null
  properties are omitted, map entries keep the map's iteration order (``MapSortField`` is
  off by default), enums are written by name, ``double`` like ``Double.toString`` and
  non-ASCII characters are not escaped.
* ``BrowserCompatible`` (the name server's route answer for request version >= 401)
  escapes everything outside printable ASCII as ``\\uXXXX``, escapes ``/``, writes
  non-string keys as JSON strings and longs beyond +-2^53 as strings.
* ``PrettyFormat`` (the broker's ``config/*.json`` files) indents with one TAB per level
  and, because ``MapSerializer`` only calls ``println`` before *string* keys, writes
  integer-keyed maps as ``{0:5,1:4\\n\\t\\t}``.

Bodies are :class:`JsonBean` dataclasses. A bean's Java property names are derived from
its snake_case attribute names (``consumer_group`` -> ``consumerGroup``) unless the field
declares ``metadata=java_prop("clientID")``; that one declaration drives both
:func:`dumps` and :meth:`JsonBean.from_json`, so no body has a hand-written encoder.

Invariants: :func:`loads` never raises anything but :class:`JsonError` on bad input
(including invalid UTF-8 and excessive nesting) and runs in linear time;
``loads(dumps(x)) == x`` for JSON values built from ``dict``/``list``/``str``/``int``/
finite ``float``/``bool``/``None`` with ``str``, ``int`` and :class:`ObjectKey` keys, and
``dumps(loads(text)) == text`` for fastjson's own compact and pretty output.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import enum
import math
import re
import types
import typing
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from typing import Any, ClassVar, TypeVar

from rocketq.errors import ProtocolError
from rocketq.protocol.java import hashmap_order
from rocketq.protocol.message_queue import MessageQueue

__all__ = [
    "MAX_DEPTH",
    "JsonBean",
    "JsonError",
    "JsonKey",
    "ObjectKey",
    "dumps",
    "java_double_to_string",
    "java_prop",
    "loads",
]

#: Deepest nesting :func:`loads` accepts; RocketMQ bodies nest fewer than 10 levels.
MAX_DEPTH = 256

#: Largest magnitude fastjson writes as a bare number under BrowserCompatible
#: (``SerializeWriter.writeLong``: 2^53 - 1).
_BROWSER_SAFE_LONG = 9007199254740991


class JsonError(ProtocolError):
    """A JSON body that fastjson would reject, or that does not fit the expected bean."""


# ---------------------------------------------------------------------------------------
# Object keys
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ObjectKey:
    """A JSON object (or array) that fastjson wrote as a map key, in hashable form.

    ``items`` holds ``(key, value)`` pairs in document order for an object, or the
    elements for an array (``is_array=True``); nested objects/arrays are ObjectKeys too.
    :meth:`thaw` gives the plain ``dict``/``list``; :func:`dumps` writes it back bare,
    byte for byte. Bodies convert these keys to :class:`MessageQueue`.
    """

    items: tuple[Any, ...]
    is_array: bool = False

    @classmethod
    def of(cls, value: Mapping[Any, Any] | Sequence[Any]) -> ObjectKey:
        """Freeze a parsed ``dict`` or ``list`` (recursively) into a key."""
        if isinstance(value, Mapping):
            return cls(tuple((k, _freeze(v)) for k, v in value.items()))
        return cls(tuple(_freeze(v) for v in value), is_array=True)

    def thaw(self) -> dict[JsonKey, object] | list[object]:
        """The plain ``dict`` (or ``list``) this key was frozen from."""
        if self.is_array:
            return [_thaw(v) for v in self.items]
        return {k: _thaw(v) for k, v in self.items}


JsonKey = str | int | float | bool | ObjectKey | None
"""What :func:`loads` can return as an object key."""


def _freeze(value: object) -> object:
    if isinstance(value, (dict, list)):
        return ObjectKey.of(value)
    return value


def _thaw(value: object) -> object:
    return value.thaw() if isinstance(value, ObjectKey) else value


# ---------------------------------------------------------------------------------------
# Reader
# ---------------------------------------------------------------------------------------

# fastjson's lexer also skips \f and \b between tokens (JSONLexerBase.skipWhitespace).
_WS = re.compile(r"[ \t\n\r\f\b]*")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?")
_IDENT = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
_STR_CHUNK = {'"': re.compile(r'[^"\\]*'), "'": re.compile(r"[^'\\]*")}
_HEX4 = re.compile(r"[0-9a-fA-F]{4}")
_HEX2 = re.compile(r"[0-9a-fA-F]{2}")
_SIMPLE_ESCAPES = {
    '"': '"',
    "\\": "\\",
    "/": "/",
    "'": "'",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",  # fastjson accepts \v (JSONLexerBase.scanString)
}
_SURROGATE_PAIR = re.compile("[\ud800-\udbff][\udc00-\udfff]")


def _join_pair(m: re.Match[str]) -> str:
    pair = m.group()
    return chr(0x10000 + ((ord(pair[0]) - 0xD800) << 10) + (ord(pair[1]) - 0xDC00))


_LITERALS: dict[str, object] = {"true": True, "false": False, "null": None}


class _Parser:
    __slots__ = ("pos", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def error(self, what: str) -> JsonError:
        return JsonError(f"invalid JSON at offset {self.pos}: {what}")

    def skip_ws(self) -> str:
        m = _WS.match(self.text, self.pos)
        self.pos = m.end() if m else self.pos
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def document(self) -> object:
        if self.skip_ws() == "\ufeff":  # a UTF-8 BOM is tolerated like fastjson does
            self.pos += 1
        value = self.value(0)
        if self.skip_ws():
            raise self.error("trailing characters")
        return value

    def value(self, depth: int) -> object:
        ch = self.skip_ws()
        if ch == "{":
            return self.obj(depth + 1)
        if ch == "[":
            return self.array(depth + 1)
        if ch in ('"', "'"):
            return self.string(ch)
        if ch == "-" or ch.isdigit():
            return self.number()
        m = _IDENT.match(self.text, self.pos)
        if m and m.group() in _LITERALS:
            self.pos = m.end()
            return _LITERALS[m.group()]
        raise self.error("unexpected end of input" if not ch else f"unexpected {ch!r}")

    def key(self, depth: int) -> object:
        # Keys may be any JSON value (fastjson MapSerializer writes Long and bean keys
        # bare); unquoted identifiers are accepted as strings (Feature.AllowUnQuotedFieldNames).
        ch = self.skip_ws()
        if ch in ("{", "["):
            return _freeze(self.value(depth))
        if ch in ('"', "'") or ch == "-" or ch.isdigit():
            return self.value(depth)
        m = _IDENT.match(self.text, self.pos)
        if m:
            self.pos = m.end()
            return _LITERALS.get(m.group(), m.group())
        raise self.error("expected an object key")

    def obj(self, depth: int) -> dict[object, object]:
        if depth > MAX_DEPTH:
            raise self.error("nesting too deep")
        self.pos += 1
        out: dict[object, object] = {}
        if self.skip_ws() == "}":
            self.pos += 1
            return out
        while True:
            key = self.key(depth)
            if self.skip_ws() != ":":
                raise self.error("expected ':'")
            self.pos += 1
            out[key] = self.value(depth)
            ch = self.skip_ws()
            self.pos += 1
            if ch == "}":
                return out
            if ch != ",":
                self.pos -= 1
                raise self.error("expected ',' or '}'")

    def array(self, depth: int) -> list[object]:
        if depth > MAX_DEPTH:
            raise self.error("nesting too deep")
        self.pos += 1
        out: list[object] = []
        if self.skip_ws() == "]":
            self.pos += 1
            return out
        while True:
            out.append(self.value(depth))
            ch = self.skip_ws()
            self.pos += 1
            if ch == "]":
                return out
            if ch != ",":
                self.pos -= 1
                raise self.error("expected ',' or ']'")

    def number(self) -> int | float:
        m = _NUMBER.match(self.text, self.pos)
        if not m:
            raise self.error("malformed number")
        self.pos = m.end()
        if m.group(1) is None and m.group(2) is None:
            try:
                return int(m.group())
            except ValueError:  # beyond sys.get_int_max_str_digits()
                raise self.error("integer too long") from None
        return float(m.group())

    def string(self, quote: str) -> str:
        text = self.text
        chunk = _STR_CHUNK[quote]
        self.pos += 1
        parts: list[str] = []
        surrogates = False
        while True:
            m = chunk.match(text, self.pos)
            assert m is not None  # the pattern matches the empty string
            parts.append(m.group())
            self.pos = m.end()
            if self.pos >= len(text):
                raise self.error("unterminated string")
            if text[self.pos] == quote:
                self.pos += 1
                break
            esc = text[self.pos + 1 : self.pos + 2]
            self.pos += 2
            if esc in _SIMPLE_ESCAPES:
                parts.append(_SIMPLE_ESCAPES[esc])
            elif esc in ("u", "x"):
                hex_m = (_HEX4 if esc == "u" else _HEX2).match(text, self.pos)
                if not hex_m:
                    raise self.error(f"bad \\{esc} escape")
                code = int(hex_m.group(), 16)
                surrogates = surrogates or 0xD800 <= code <= 0xDFFF
                parts.append(chr(code))
                self.pos = hex_m.end()
            else:
                raise self.error(f"bad escape {esc!r}")
        out = "".join(parts)
        if surrogates:
            # Join escaped UTF-16 surrogate pairs into one code point; lone ones stay.
            out = _SURROGATE_PAIR.sub(_join_pair, out)
        return out


def loads(data: str | bytes) -> object:
    """Parse fastjson output (strict JSON plus bare/object keys) into Python values.

    Objects become ``dict`` (document order kept; duplicate keys: last value wins),
    arrays ``list``, integers ``int``, other numbers ``float``. Object keys may be any
    JSON value: ``{0:"a"}`` gives ``{0: "a"}``, an object key gives an :class:`ObjectKey`.
    Raises :class:`JsonError` on invalid input or invalid UTF-8.
    """
    if isinstance(data, (bytes, bytearray, memoryview)):
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise JsonError(f"body is not valid UTF-8: {exc}") from None
    elif isinstance(data, str):
        text = data
    else:
        raise TypeError(f"loads() needs str or bytes, not {type(data).__name__}")
    try:
        return _Parser(text).document()
    except RecursionError:  # only reachable when the caller's own stack is already deep
        raise JsonError("JSON nested too deeply for the current stack") from None


# ---------------------------------------------------------------------------------------
# Writer
# ---------------------------------------------------------------------------------------

_HEX = "0123456789ABCDEF"  # fastjson IOUtils.DIGITS: upper case


def _u_escape(code: int) -> str:
    return "\\u" + _HEX[(code >> 12) & 15] + _HEX[(code >> 8) & 15] + _HEX[(code >> 4) & 15] + _HEX[code & 15]


# SerializeWriter.writeStringWithDoubleQuote, default features: short escapes for
# \b \t \n \f \r " \\, \uXXXX for the other C0 controls, DEL..U+009F, U+2028 and U+2029.
_SHORT = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}
_DEFAULT_SPECIAL = re.compile('[\x00-\x1f"\\\\\x7f-\x9f\u2028\u2029]')
# BrowserCompatible: also "/" and every UTF-16 code unit >= 0x7F as \uXXXX.
_BROWSER_SPECIAL = re.compile('[\x00-\x1f"\\\\/\x7f-\U0010ffff]')


def _default_escape(m: re.Match[str]) -> str:
    ch = m.group()
    return _SHORT.get(ch) or _u_escape(ord(ch))


def _browser_escape(m: re.Match[str]) -> str:
    ch = m.group()
    if ch == "/":
        return "\\/"
    short = _SHORT.get(ch)
    if short:
        return short
    code = ord(ch)
    if code > 0xFFFF:  # Java escapes UTF-16 code units: a surrogate pair
        code -= 0x10000
        return _u_escape(0xD800 + (code >> 10)) + _u_escape(0xDC00 + (code & 0x3FF))
    return _u_escape(code)


def java_double_to_string(value: float) -> str:
    """``Double.toString`` as fastjson writes it (``RyuDouble``): ``0.0``, ``12.5``, ``1.0E7``.

    Shortest round-trip digits; plain notation for magnitudes in [1e-3, 1e7), otherwise
    ``d.dddE[-]n``; at least one digit after the point. NaN/infinity are the caller's
    business (fastjson writes ``null``).
    """
    if value == 0.0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    sign = "-" if value < 0 else ""
    tup = Decimal(repr(abs(value))).as_tuple()
    digits = "".join(map(str, tup.digits)).rstrip("0") or "0"
    assert isinstance(tup.exponent, int)
    # value = 0.d1d2d3... * 10^(point); sci exponent = point - 1
    point = len(tup.digits) + tup.exponent
    exp = point - 1
    if -3 <= exp < 7:
        if point <= 0:
            return f"{sign}0.{'0' * -point}{digits}"
        whole = digits[:point].ljust(point, "0")
        frac = digits[point:] or "0"
        return f"{sign}{whole}.{frac}"
    if len(digits) == 1:
        # RyuDouble keeps two significant digits in scientific notation, rounded from
        # the exact binary value: 5e-324 is "4.9E-324", 1e22 is "1.0E22".
        exact = Decimal(abs(value)).scaleb(-exp).quantize(Decimal("0.1"), rounding=ROUND_HALF_UP)
        two = f"{exact:.1f}"
        if two != "10.0":
            return f"{sign}{two}E{exp}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{exp}"


class _Writer:
    __slots__ = ("browser", "indent", "map_sort", "out", "pretty")

    def __init__(self, *, pretty: bool, browser: bool, map_sort: bool) -> None:
        self.out: list[str] = []
        self.indent = 0
        self.pretty = pretty
        self.browser = browser
        self.map_sort = map_sort

    def println(self) -> None:  # JSONSerializer.println: newline + one TAB per level
        self.out.append("\n" + "\t" * self.indent)

    def string(self, s: str) -> None:
        if self.browser:
            self.out.append('"' + _BROWSER_SPECIAL.sub(_browser_escape, s) + '"')
        else:
            self.out.append('"' + _DEFAULT_SPECIAL.sub(_default_escape, s) + '"')

    def value(self, v: object) -> None:
        if v is None:
            self.out.append("null")
        elif v is True:
            self.out.append("true")
        elif v is False:
            self.out.append("false")
        elif isinstance(v, enum.Enum):  # WriteEnumUsingName (before int: IntEnum)
            self.string(v.name)
        elif isinstance(v, int):
            if self.browser and not -_BROWSER_SAFE_LONG <= v <= _BROWSER_SAFE_LONG:
                self.out.append(f'"{v}"')
            else:
                self.out.append(str(v))
        elif isinstance(v, float):
            self.out.append(java_double_to_string(v) if math.isfinite(v) else "null")
        elif isinstance(v, str):
            self.string(v)
        elif isinstance(v, JsonBean):
            self.bean([(p.name, p.wire_value(getattr(v, p.attr))) for p in _bean_props(type(v))])
        elif isinstance(v, MessageQueue):
            self.bean(list(v.to_json_obj().items()))
        elif isinstance(v, ObjectKey):
            if v.is_array:
                self.array(v.items)
            else:
                self.mapping(v.items, len(v.items))
        elif isinstance(v, Mapping):
            self.mapping(v.items(), len(v))
        elif isinstance(v, (list, tuple)):
            self.array(v)
        elif isinstance(v, (set, frozenset)):
            self.collection(_set_order(v))
        elif isinstance(v, (bytes, bytearray)):  # byte[] is written as base64
            self.string(base64.b64encode(v).decode("ascii"))
        else:
            raise TypeError(f"fastjson.dumps cannot write {type(v).__name__}")

    def bean(self, props: Sequence[tuple[str, object]]) -> None:
        # JavaBeanSerializer.write: '{', println after it only if the class has getters,
        # ',' + println between properties, null properties skipped.
        out = self.out
        out.append("{")
        pretty = self.pretty and len(props) > 0
        if pretty:
            self.indent += 1
            self.println()
        first = True
        for name, val in props:
            if val is None:
                continue
            if not first:
                out.append(",")
                if pretty:
                    self.println()
            first = False
            self.string(name)
            out.append(":")
            self.value(val)
        if pretty:
            self.indent -= 1
            self.println()
        out.append("}")

    def mapping(self, entries: Iterable[tuple[object, object]], size: int) -> None:
        # MapSerializer.write: println only before String keys; other keys are written
        # bare (or as a JSON string under BrowserCompatible); null values are skipped.
        out = self.out
        if self.map_sort:
            entries = list(entries)
            # MapSortField: new TreeMap(map), natural key order; left unsorted on failure.
            with contextlib.suppress(TypeError):
                entries.sort(key=lambda kv: kv[0])  # type: ignore[arg-type,return-value]
        out.append("{")
        self.indent += 1
        first = True
        for key, val in entries:
            if val is None:
                continue
            if not first:
                out.append(",")
            first = False
            if isinstance(key, str):
                if self.pretty:
                    self.println()
                self.string(key)
            elif self.browser and not isinstance(key, enum.Enum):
                self.string(dumps(key))  # JSON.toJSONString(key), then quoted
            else:
                self.value(key)
            out.append(":")
            self.value(val)
        self.indent -= 1
        if self.pretty and size > 0:
            self.println()
        out.append("}")

    def array(self, items: Sequence[object]) -> None:
        # ListSerializer: "[]" when empty; in PrettyFormat println before each element.
        if not items:
            self.out.append("[]")
            return
        if not self.pretty:
            self.collection(items)
            return
        self.out.append("[")
        self.indent += 1
        for i, item in enumerate(items):
            if i:
                self.out.append(",")
            self.println()
            self.value(item)
        self.indent -= 1
        self.println()
        self.out.append("]")

    def collection(self, items: Iterable[object]) -> None:
        # CollectionCodec (sets): never pretty-printed itself.
        self.out.append("[")
        for i, item in enumerate(items):
            if i:
                self.out.append(",")
            self.value(item)
        self.out.append("]")


def _set_order(items: set[Any] | frozenset[Any]) -> list[object]:
    """A deterministic order for Python sets: Java HashSet order for strings, else sorted."""
    if all(isinstance(x, str) for x in items):
        return hashmap_order(items)
    try:
        return sorted(items)
    except TypeError:
        return list(items)


def dumps(
    obj: object, *, pretty: bool = False, browser_compatible: bool = False, map_sort: bool = False
) -> str:
    """Serialize like fastjson 1.2.x ``JSON.toJSONString`` with RocketMQ's features.

    Beans (:class:`JsonBean`, :class:`MessageQueue`) are written with properties sorted
    by Java name and ``None`` omitted; mappings in iteration order with ``None`` values
    skipped, ``str`` keys quoted and every other key bare; enums by name; floats like
    ``Double.toString`` (NaN/infinity as ``null``); lists/tuples as arrays; sets as arrays
    in Java ``HashSet`` order for strings (sorted otherwise); ``bytes`` as base64.

    ``pretty`` reproduces ``PrettyFormat`` (TAB indentation, as in the broker's config
    files); ``browser_compatible`` the ``BrowserCompatible`` feature (ASCII-only output,
    ``\\/``, non-string keys as strings, longs beyond 2^53 as strings); ``map_sort`` the
    ``MapSortField`` feature (map entries in natural key order), which the name server
    combines with ``browser_compatible`` for its standard-JSON route answer.
    """
    writer = _Writer(pretty=pretty, browser=browser_compatible, map_sort=map_sort)
    writer.value(obj)
    return "".join(writer.out)


# ---------------------------------------------------------------------------------------
# Beans
# ---------------------------------------------------------------------------------------

_B = TypeVar("_B", bound="JsonBean")
_JSON_META = "rocketq.json_name"
_TREE_META = "rocketq.tree"


def java_prop(name: str | None = None, *, tree: bool = False) -> dict[str, object]:
    """Field metadata for a bean property (use as ``field(..., metadata=java_prop(...))``).

    ``name``: the Java property name when it is not the camelCase of the attribute
    (``clientID``, ``droped``, ``cachedMsgSizeInMiB``). ``tree``: the Java field is a
    ``TreeMap``/``TreeSet``, so Java's output is sorted (map keys in natural order, set
    elements by their ``sort_key()`` or natural order); :func:`dumps` sorts it likewise.
    """
    meta: dict[str, object] = {_TREE_META: tree}
    if name is not None:
        meta[_JSON_META] = name
    return meta


def _camel(attr: str) -> str:
    head, *rest = attr.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


@dataclass(frozen=True, slots=True)
class _Prop:
    attr: str
    name: str
    hint: Any
    tree: bool

    def wire_value(self, value: object) -> object:
        if isinstance(value, int) and not isinstance(value, bool):
            # A Java double property holds 0.0, never 0: write Python ints as doubles;
            # an int property holding an IntEnum/IntFlag (PermName) is a plain number.
            if self.hint is float:
                return float(value)
            if self.hint is int:
                return int(value)
        if self.tree:  # TreeMap / TreeSet iterate in sorted order
            if isinstance(value, dict):
                return dict(sorted(value.items(), key=lambda kv: _tree_key(kv[0])))
            if isinstance(value, list):
                return sorted(value, key=_tree_key)
        return value


def _tree_key(item: Any) -> Any:
    sort_key = getattr(item, "sort_key", None)
    return sort_key() if callable(sort_key) else item


_PROPS: dict[type, tuple[_Prop, ...]] = {}


def _bean_props(cls: type) -> tuple[_Prop, ...]:
    cached = _PROPS.get(cls)
    if cached is not None:
        return cached
    hints = typing.get_type_hints(cls)
    props = [
        _Prop(
            attr=f.name,
            name=f.metadata.get(_JSON_META) or _camel(f.name),
            hint=hints[f.name],
            tree=bool(f.metadata.get(_TREE_META)),
        )
        for f in dataclasses.fields(cls)
        if f.init
    ]
    # SerializerFeature.SortField: properties in String.compareTo order (UTF-16 units;
    # Java property names are ASCII, where that equals Python's order).
    result = _PROPS[cls] = tuple(sorted(props, key=lambda p: p.name))
    return result


class JsonBean:
    """Base of every JSON body: a dataclass whose fields are Java bean properties.

    Subclasses are ``@dataclass(kw_only=True)`` with a default for every field (the Java
    default). ``to_json`` gives the fastjson bytes; ``from_json`` is tolerant like fastjson:
    missing keys keep the default, unknown keys are ignored, numbers and booleans given as
    strings are converted, enums are read by name or ordinal, ``Map<MessageQueue, ...>``
    keys may be bare objects or quoted JSON text. Values that cannot be converted raise
    :class:`JsonError`.
    """

    __slots__ = ()
    #: Java class this bean mirrors (documentation only).
    JAVA_CLASS: ClassVar[str] = ""

    def to_json(self) -> bytes:
        """The body as Java writes it (``RemotingSerializable.encode``), UTF-8."""
        return dumps(self).encode("utf-8")

    def to_json_obj(self) -> dict[str, object]:
        """The non-null properties by Java name, in SortField order."""
        return {
            p.name: p.wire_value(v)
            for p in _bean_props(type(self))
            if (v := getattr(self, p.attr)) is not None
        }

    @classmethod
    def from_json(cls: type[_B], data: bytes | str) -> _B:
        """Parse a body (``RemotingSerializable.decode``); :class:`JsonError` if invalid."""
        return cls.from_obj(loads(data))

    @classmethod
    def from_obj(cls: type[_B], obj: object) -> _B:
        """Build the bean from an already parsed JSON object."""
        result = _convert(cls, obj, cls.__name__)
        assert isinstance(result, cls)
        return result


def _convert(tp: Any, value: object, path: str) -> object:
    """Convert a parsed JSON value to the Python type ``tp`` (fastjson's lenient rules)."""
    origin = typing.get_origin(tp)
    if origin is typing.Union or isinstance(tp, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if value is None:
            return None
        if len(args) != 1:
            raise TypeError(f"unsupported union {tp!r} at {path}")
        return _convert(args[0], value, path)
    if origin in (list, set, frozenset, tuple):
        if not isinstance(value, (list, ObjectKey)):
            raise JsonError(f"{path}: expected an array, got {type(value).__name__}")
        items = value.items if isinstance(value, ObjectKey) else value
        (item_tp, *_) = typing.get_args(tp) or (object,)
        converted = [_convert(item_tp, x, f"{path}[{i}]") for i, x in enumerate(items)]
        return converted if origin is list else origin(converted)
    if origin is dict:
        if isinstance(value, ObjectKey) and not value.is_array:
            pairs: Iterable[tuple[object, object]] = value.items
        elif isinstance(value, dict):
            pairs = value.items()
        else:
            raise JsonError(f"{path}: expected an object, got {type(value).__name__}")
        key_tp, val_tp = typing.get_args(tp) or (object, object)
        return {_convert_key(key_tp, k, path): _convert(val_tp, v, f"{path}[{k!r}]") for k, v in pairs}
    if tp is object or tp is Any:
        return value
    if isinstance(tp, type):
        if isinstance(value, ObjectKey):
            value = value.thaw()
        return _convert_scalar(tp, value, path)
    raise TypeError(f"unsupported type {tp!r} at {path}")


def _convert_key(tp: Any, key: object, path: str) -> object:
    if tp is MessageQueue and isinstance(key, str):
        # fastjson also reads the quoted spelling "{\"brokerName\":...}" of a bean key.
        key = loads(key)
    elif tp is int and isinstance(key, str):
        key = _to_int(key, path)
    elif tp is str and not isinstance(key, str):
        key = dumps(key)
    return _convert(tp, key, f"{path} key")


#: The range of a Java ``long``: fastjson refuses a number past it for an int/long field.
_LONG_MIN = -(1 << 63)
_LONG_MAX = (1 << 63) - 1


def _to_int(value: object, path: str) -> int:
    if isinstance(value, bool):
        raise JsonError(f"{path}: expected a number, got a boolean")
    result: int | None = None
    if isinstance(value, int):
        result = value
    elif isinstance(value, float) and math.isfinite(value):
        result = int(value)  # fastjson casts (truncates) decimals read into int/long
    elif isinstance(value, str) and len(value) <= 64:
        with contextlib.suppress(ValueError):
            result = int(value.strip())
    if result is None:
        raise JsonError(f"{path}: expected an integer, got {value!r:.80}")
    if not _LONG_MIN <= result <= _LONG_MAX:
        raise JsonError(f"{path}: {str(result)[:40]} is out of the range of a Java long")
    return result


def _convert_scalar(tp: type, value: object, path: str) -> object:
    if issubclass(tp, JsonBean):
        if not isinstance(value, dict):
            raise JsonError(f"{path}: expected an object, got {type(value).__name__}")
        kwargs: dict[str, object] = {}
        for p in _bean_props(tp):
            if p.name in value:
                raw = value[p.name]
                if raw is None and not _is_optional(p.hint):
                    continue  # null into a primitive keeps the Java default
                kwargs[p.attr] = _convert(p.hint, raw, f"{path}.{p.name}")
        return tp(**kwargs)
    if tp is MessageQueue:
        if not isinstance(value, dict):
            raise JsonError(f"{path}: expected a MessageQueue object, got {value!r}")
        return MessageQueue(
            topic=_to_str(value.get("topic", "")),
            broker_name=_to_str(value.get("brokerName", "")),
            queue_id=_to_int(value.get("queueId", 0), f"{path}.queueId"),
        )
    if issubclass(tp, enum.Enum):
        if isinstance(value, str) and value in tp.__members__:
            return tp.__members__[value]
        members = list(tp)
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < len(members):
            return members[value]  # fastjson also accepts the ordinal
        raise JsonError(f"{path}: {value!r} is not a {tp.__name__}")
    if tp is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
        if isinstance(value, int) and value in (0, 1):
            return bool(value)
        raise JsonError(f"{path}: expected a boolean, got {value!r}")
    if tp is int:
        return _to_int(value, path)
    if tp is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, str):
            try:
                return float(value)
            except ValueError:
                pass
        raise JsonError(f"{path}: expected a number, got {value!r}")
    if tp is str:
        return _to_str(value)
    raise TypeError(f"unsupported type {tp!r} at {path}")


def _to_str(value: object) -> str:
    # fastjson is lenient: a number/boolean/object read into a String is its JSON text.
    return value if isinstance(value, str) else dumps(value)


def _is_optional(tp: Any) -> bool:
    return type(None) in typing.get_args(tp)
