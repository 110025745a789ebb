"""The one generic mapping between header dataclasses and ``extFields`` (sans-IO).

Mirrors ``org.apache.rocketmq.remoting.CommandCustomHeader`` and the reflective codec of
``RemotingCommand`` (``makeCustomHeaderToNet`` / ``decodeCommandCustomHeader``), the
``FastCodesHeader`` binary shortcut and ``org.apache.rocketmq.common.rpc.RpcRequestHeader``
of Apache RocketMQ 4.9.7.

A header class is a ``@dataclass(slots=True, kw_only=True)`` subclass of
:class:`CommandHeader` whose fields are declared with :func:`jstring`, :func:`jint`,
:func:`jlong`, :func:`jbool` or :func:`jenum`. Each declaration names the Java field (the
wire key), its Java type and whether it is ``@CFNotNull``; nothing else is written per
header. The first use of a class builds a :class:`_Plan` (field kinds, parsers, the
Java insertion order and the resulting ``HashMap`` orders) once, and compiles it, as
``dataclasses`` compiles ``__init__``, into straight-line decode and encode functions
specialised to the class; encoding and decoding only run those. They are the one codec of
every header, the data path's included (a send and its answer per message, a pull and its
answer per batch): no header is read or written by hand elsewhere.

Invariants:

* ``to_ext_fields`` omits ``None``; ints are decimal, bools ``true``/``false``, enums
  their name. Keys come out in the iteration order of the Java ``HashMap`` that
  ``makeCustomHeaderToNet`` fills, so a JSON header re-encodes byte-identically. Keys
  sharing a bucket keep Java's *insertion* order, which is the iteration order of the
  ``HashSet<Field>`` built by ``RemotingCommand.getClazzFields`` (``Field.hashCode`` =
  declaring class name hash ^ field name hash); hence every class names its Java class in
  ``JAVA_CLASS``. Plain declaration order gets 57 of the 476 golden headers wrong.
* ROCKETMQ (binary) serialization of a ``FastCodesHeader`` class (pull request/response,
  V2 send, send response) writes its fields in ``encode()`` order, then the rest of the
  map (``RocketMQSerializable.rocketMQProtocolEncode``).
* ``from_ext_fields`` is lenient like Java: unknown keys are ignored, absent keys keep
  the field default, an unparsable number keeps the default too (Java logs the
  ``NumberFormatException`` and leaves the field untouched), and booleans follow
  ``Boolean.parseBoolean`` (case-insensitive ``"true"``, anything else ``False``).
* The compiled decoders equal the plan walked with the Java parsers
  (:func:`_decode_generic`); plain values (a small number, a short run of decimal digits,
  ``true``/``false``) are only taken inline, before the parser. The compiled encoders
  equal :func:`_encode_generic`, and with extra keys :func:`_merge_generic` (one encoder
  per class and set of extra keys, compiled on first sight of that set).
* Java primitives (``int``/``long``/``boolean`` without a box) are non-optional here
  with the Java default, so they are always sent, e.g. V2 send's ``k`` and ``m``.
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple, TypeVar

from rocketq.protocol.codes import SerializeType
from rocketq.protocol.java import hashmap_capacity, hashmap_order, string_hash

__all__ = [
    "JAVA_HEADER_PACKAGE",
    "NON_HEADER_EXT_FIELDS",
    "CommandHeader",
    "JavaType",
    "NonHeaderExtField",
    "RpcRequestHeader",
    "WireField",
    "jbool",
    "jenum",
    "jint",
    "jlong",
    "jstring",
]

_H = TypeVar("_H", bound="CommandHeader")
_E = TypeVar("_E", bound=enum.Enum)

#: Java package of the 4.9.7 header classes (``Field.hashCode`` uses the class name).
JAVA_HEADER_PACKAGE = "org.apache.rocketmq.common.protocol.header."
_RPC_REQUEST_HEADER = "org.apache.rocketmq.common.rpc.RpcRequestHeader"

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_ROCKETMQ = int(SerializeType.ROCKETMQ)


class JavaType(enum.Enum):
    """The Java field types ``RemotingCommand.decodeCommandCustomHeader`` understands."""

    STRING = "String"
    INT = "int"  # Integer or int: Integer.parseInt, 32-bit
    LONG = "long"  # Long or long: Long.parseLong, 64-bit
    BOOLEAN = "boolean"  # Boolean or boolean: Boolean.parseBoolean
    ENUM = "enum"  # by name (4.9.7 headers have none; 5.x BoundaryType)


@dataclass(frozen=True, slots=True)
class WireField:
    """One header field: Python attribute, Java field name on the wire, Java type."""

    attr: str
    wire: str
    java_type: JavaType
    required: bool
    declaring_java_class: str
    enum_type: type[enum.Enum] | None = None


class NonHeaderExtField(NamedTuple):
    """An ``extFields`` key that is not a header field, and where Java adds it."""

    before_header: bool  # put into the map before makeCustomHeaderToNet runs
    origin: str


#: Keys seen in real 4.9.7 ``extFields`` that belong to no header class. ``before_header``
#: tells where Java inserts them relative to the header fields, which decides their
#: position within a ``HashMap`` bucket.
NON_HEADER_EXT_FIELDS: Mapping[str, NonHeaderExtField] = {
    # common/rpchook/StreamTypeRPCHook.doBeforeRequest (DefaultMQPullConsumer, lite pull)
    "ReqT": NonHeaderExtField(True, "StreamTypeRPCHook: MixAll.REQ_T, RequestType.STREAM"),
    # acl/common/AclClientRPCHook.doBeforeRequest: AccessKey, then makeCustomHeaderToNet,
    # then Signature over the sorted map.
    "AccessKey": NonHeaderExtField(True, "AclClientRPCHook: SessionCredentials.ACCESS_KEY"),
    "SecurityToken": NonHeaderExtField(True, "AclClientRPCHook: SessionCredentials.SECURITY_TOKEN"),
    "Signature": NonHeaderExtField(False, "AclClientRPCHook: SessionCredentials.SIGNATURE"),
    # client/impl/MQClientAPIImpl.queryMessage: request.addExtField(UNIQUE_MSG_QUERY_FLAG)
    "_UNIQUE_KEY_QUERY": NonHeaderExtField(
        True, "MQClientAPIImpl.queryMessage: MixAll.UNIQUE_MSG_QUERY_FLAG"
    ),
    # broker/processor/SendMessageProcessor (preSend / sendMessage): response.addExtField
    "MSG_REGION": NonHeaderExtField(True, "SendMessageProcessor: MessageConst.PROPERTY_MSG_REGION"),
    "TRACE_ON": NonHeaderExtField(True, "SendMessageProcessor: MessageConst.PROPERTY_TRACE_SWITCH"),
}


# --------------------------------------------------------------------------- declaring fields
def _field(wire: str, jtype: JavaType, required: bool, default: object, etype: object = None) -> Any:
    meta = {"wire": wire, "java_type": jtype, "required": required, "enum_type": etype}
    return dataclasses.field(default=default, metadata=meta)


@typing.overload
def jstring(wire: str, *, required: bool = ..., default: None = ...) -> str | None: ...
@typing.overload
def jstring(wire: str, *, required: bool = ..., default: str) -> str: ...
def jstring(wire: str, *, required: bool = False, default: str | None = None) -> Any:
    """A Java ``String`` field; ``required`` mirrors ``@CFNotNull``."""
    return _field(wire, JavaType.STRING, required, default)


@typing.overload
def jint(wire: str, *, required: bool = ..., default: None = ...) -> int | None: ...
@typing.overload
def jint(wire: str, *, required: bool = ..., default: int) -> int: ...
def jint(wire: str, *, required: bool = False, default: int | None = None) -> Any:
    """A Java ``Integer`` (default ``None``) or ``int`` (pass ``default=0``) field."""
    return _field(wire, JavaType.INT, required, default)


@typing.overload
def jlong(wire: str, *, required: bool = ..., default: None = ...) -> int | None: ...
@typing.overload
def jlong(wire: str, *, required: bool = ..., default: int) -> int: ...
def jlong(wire: str, *, required: bool = False, default: int | None = None) -> Any:
    """A Java ``Long`` (default ``None``) or ``long`` (pass ``default=0``) field."""
    return _field(wire, JavaType.LONG, required, default)


@typing.overload
def jbool(wire: str, *, required: bool = ..., default: None = ...) -> bool | None: ...
@typing.overload
def jbool(wire: str, *, required: bool = ..., default: bool) -> bool: ...
def jbool(wire: str, *, required: bool = False, default: bool | None = None) -> Any:
    """A Java ``Boolean`` (default ``None``) or ``boolean`` (pass ``default=False``) field."""
    return _field(wire, JavaType.BOOLEAN, required, default)


@typing.overload
def jenum(wire: str, enum_type: type[_E], *, required: bool = ..., default: None = ...) -> _E | None: ...
@typing.overload
def jenum(wire: str, enum_type: type[_E], *, required: bool = ..., default: _E) -> _E: ...
def jenum(wire: str, enum_type: type[_E], *, required: bool = False, default: _E | None = None) -> Any:
    """A Java enum field, written and read by constant name (``Enum.name()``)."""
    return _field(wire, JavaType.ENUM, required, default, enum_type)


# --------------------------------------------------------------------------- value codecs
def _parse_java_integer(text: str, lo: int, hi: int) -> int | None:
    """``Integer.parseInt`` / ``Long.parseLong``: optional sign, decimal digits, in range.

    Python's ``int()`` also accepts surrounding whitespace and underscores, which Java
    rejects; out-of-range values fail in Java too. Failure -> ``None`` (keep the default).
    """
    body = text[1:] if text[:1] in "+-" else text
    if not body or not body.isdecimal():
        return None
    value = int(text)
    return value if lo <= value <= hi else None


def _parse_int(text: str) -> int | None:
    return _parse_java_integer(text, _INT32_MIN, _INT32_MAX)


def _parse_long(text: str) -> int | None:
    return _parse_java_integer(text, _INT64_MIN, _INT64_MAX)


def _parse_bool(text: str) -> bool:
    # Boolean.parseBoolean: "true".equalsIgnoreCase(s); everything else is false.
    return len(text) == 4 and text.lower() == "true"


def _format_bool(value: object) -> str:
    return "true" if value else "false"


def _format_enum(value: object) -> str:
    if not isinstance(value, enum.Enum):
        raise TypeError(f"enum field holds {value!r}")
    return value.name


def _enum_parser(enum_type: type[enum.Enum]) -> Callable[[str], object]:
    members = enum_type.__members__

    def parse(text: str) -> object:
        return members.get(text)

    return parse


def _format_str(value: object) -> str:
    return value if isinstance(value, str) else str(value)


_PARSERS: dict[JavaType, Callable[[str], object]] = {
    JavaType.STRING: str,
    JavaType.INT: _parse_int,
    JavaType.LONG: _parse_long,
    JavaType.BOOLEAN: _parse_bool,
}
#: a run of fewer decimal digits than this always fits the Java type (decoders' shortcut)
_FAST_DIGITS = {JavaType.INT: 10, JavaType.LONG: 19}
#: "0".."999" -> value: what a decoder of a Java int field looks up first
_SMALL_INTS: dict[str, int] = {str(i): i for i in range(1000)}
_FORMATTERS: dict[JavaType, Callable[[object], str]] = {
    JavaType.STRING: _format_str,
    JavaType.INT: str,
    JavaType.LONG: str,
    JavaType.BOOLEAN: _format_bool,
    JavaType.ENUM: _format_enum,
}
_ANNOTATION_TYPES: dict[JavaType, type] = {
    JavaType.STRING: str,
    JavaType.INT: int,
    JavaType.LONG: int,
    JavaType.BOOLEAN: bool,
}


# --------------------------------------------------------------------------- Java orders
def _bucket_order(items: list[tuple[str, int]], capacity: int) -> list[str]:
    """Iteration order of a ``HashMap``/``HashSet`` table of ``capacity`` slots filled with
    (name, hashCode) in this order: by bucket ``(h ^ h >>> 16) & (capacity - 1)``, a
    bucket's chain in insertion order (``sorted`` is stable)."""
    mask = capacity - 1

    def bucket(item: tuple[str, int]) -> int:
        h = item[1] & 0xFFFFFFFF
        return (h ^ (h >> 16)) & mask

    return [name for name, _ in sorted(items, key=bucket)]


_Slot = tuple[str, str, Callable[[object], str]]  # attr, wire, formatter
#: compiled extFields -> header (and, for the checked variant, the first missing wire name)
_Decoder = Callable[[Mapping[str, str]], Any]
_CheckedDecoder = Callable[[Mapping[str, str]], tuple[Any, str | None]]
_Encoder = Callable[[Any], dict[str, str]]
_MergingEncoder = Callable[[Any, Mapping[str, str]], dict[str, str]]


@dataclass(frozen=True, slots=True)
class _Plan:
    """Everything derived once per header class."""

    cls: type[CommandHeader]
    fields: tuple[WireField, ...]
    #: attr, wire, parser (str for strings): the reference decoder's steps
    decoders: tuple[tuple[str, str, Callable[[str], object]], ...]
    defaults: Mapping[str, object]  # attr -> dataclass default (what an absent key keeps)
    #: capacity of the full map -> slots in that HashMap's iteration order
    orders: Mapping[int, tuple[_Slot, ...]]
    full_capacity: int
    #: FastCodesHeader.encode order (ROCKETMQ serialization), or None
    fast_order: tuple[_Slot, ...] | None
    required: tuple[tuple[str, str], ...]  # attr, wire
    insertion: tuple[str, ...]  # wire names in makeCustomHeaderToNet insertion order
    insertion_slots: tuple[_Slot, ...]  # the same, as slots
    #: compiled from the above (:func:`_compile_decoder`, :func:`_compile_encoder`):
    #: extFields -> header, extFields -> (header, first missing @CFNotNull wire or None),
    #: header -> extFields (HashMap order, no extra keys), header -> extFields
    #: (FastCodesHeader order, or None)
    decode: _Decoder
    decode_checked: _CheckedDecoder
    encode: _Encoder
    encode_fast: _Encoder | None
    #: extra keys (in their map's order) -> compiled header + extras -> extFields in the
    #: HashMap order; filled on first sight of each key set (the broker's answers use one)
    merging: dict[tuple[str, ...], _MergingEncoder]


def _build_plan(cls: type[CommandHeader]) -> _Plan:
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"{cls.__name__} must be a dataclass")
    hints = typing.get_type_hints(cls)
    declaring: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        java = getattr(klass, "JAVA_CLASS", "")
        for name in inspect.get_annotations(klass):
            declaring[name] = java
    fields: list[WireField] = []
    for f in dataclasses.fields(cls):
        meta = f.metadata
        if "wire" not in meta:
            raise TypeError(f"{cls.__name__}.{f.name} is not declared with jstring/jint/...")
        jtype: JavaType = meta["java_type"]
        etype = meta["enum_type"]
        expected = etype if jtype is JavaType.ENUM else _ANNOTATION_TYPES[jtype]
        allowed = typing.get_args(hints[f.name]) or (hints[f.name],)
        if expected not in allowed or not set(allowed) <= {expected, type(None)}:
            raise TypeError(f"{cls.__name__}.{f.name}: annotation does not match Java {jtype.value}")
        fields.append(WireField(f.name, meta["wire"], jtype, meta["required"], declaring[f.name], etype))
    # RemotingCommand.getClazzFields collects Field objects into a HashSet (concrete class
    # first, then superclasses), so makeCustomHeaderToNet puts them into extFields in the
    # HashSet's order; Field.hashCode = declaringClass.getName().hashCode() ^ name.hashCode().
    by_class: dict[str, list[WireField]] = {}
    for wf in fields:
        by_class.setdefault(wf.declaring_java_class, []).append(wf)
    collected = [wf for java in reversed(list(by_class)) for wf in by_class[java]]
    full_capacity = hashmap_capacity(len(fields))
    insertion = _bucket_order(
        [(wf.wire, string_hash(wf.declaring_java_class) ^ string_hash(wf.wire)) for wf in collected],
        full_capacity,
    )
    slots = {wf.wire: (wf.attr, wf.wire, _FORMATTERS[wf.java_type]) for wf in fields}
    wire_orders = _hashmap_orders(insertion)
    orders = {cap: tuple(slots[w] for w in order) for cap, order in wire_orders.items()}
    fast_attrs = cls.FAST_CODES_ORDER
    fast_order = None
    if fast_attrs:
        by_attr = {wf.attr: wf for wf in fields}
        if set(fast_attrs) - set(by_attr):
            raise TypeError(f"{cls.__name__}.FAST_CODES_ORDER names unknown attributes")
        fast_order = tuple(slots[by_attr[a].wire] for a in fast_attrs)
    decoders = tuple(
        (
            wf.attr,
            wf.wire,
            _enum_parser(wf.enum_type) if wf.enum_type is not None else _PARSERS[wf.java_type],
        )
        for wf in fields
    )
    defaults = {f.name: f.default for f in dataclasses.fields(cls)}
    if dataclasses.MISSING in defaults.values():
        raise TypeError(f"{cls.__name__}: every header field needs a default (absent keys keep it)")
    required = tuple((wf.attr, wf.wire) for wf in fields if wf.required)
    return _Plan(
        cls=cls,
        fields=tuple(fields),
        decoders=decoders,
        defaults=defaults,
        orders=orders,
        full_capacity=full_capacity,
        fast_order=fast_order,
        required=required,
        insertion=tuple(insertion),
        insertion_slots=tuple(slots[w] for w in insertion),
        decode=_compile_decoder(cls, fields, decoders, defaults, None),
        decode_checked=_compile_decoder(cls, fields, decoders, defaults, required),
        encode=_compile_encoder(cls, fields, [(slot, False) for slot in orders[full_capacity]], wire_orders),
        encode_fast=None
        if fast_order is None
        else _compile_encoder(cls, fields, [(slot, False) for slot in fast_order], None),
        merging={},
    )


def _hashmap_orders(insertion: Sequence[str]) -> dict[int, tuple[str, ...]]:
    """Table capacity -> iteration order of a ``HashMap`` (initial capacity 16) filled with
    ``insertion``, for every capacity a subset of these keys can give: any subset that lands
    in a table of that size iterates in that order filtered to the subset (a bucket's chain
    keeps insertion order), so one order per size serves every combination of absent keys."""
    keyed = [(key, string_hash(key)) for key in insertion]
    orders: dict[int, tuple[str, ...]] = {}
    capacity = 16
    while capacity <= hashmap_capacity(len(insertion)):
        orders[capacity] = tuple(_bucket_order(keyed, capacity))
        capacity *= 2
    return orders


# --------------------------------------------------------------------------- compiled codecs
# The generic codec walks a plan's tuples and builds a kwargs dict per call; on the hot
# headers (a pull request and response per 32 messages, a send request and response per
# send) that walk is most of the cost. As ``dataclasses`` does for ``__init__``, the plan
# is turned once into straight-line source specialised to the class: the same rules, no
# loop, no dict of keyword arguments, no keyword call of ``__init__`` (the header is
# allocated and its slots stored directly, which is what the generated ``__init__`` does).
# Values in their plain form (short runs of decimal digits, ``true``/``false``) are taken
# inline; anything else goes through the Java parser. Tests check the compiled codecs
# against the generic walk (``_decode_generic``/``_encode_generic``/``_merge_generic``).


def _compile(name: str, source: str, env: dict[str, object]) -> Callable[..., Any]:
    namespace: dict[str, object] = {}
    exec(compile(source, f"<rocketq header codec {name}>", "exec"), env, namespace)
    fn = namespace[name]
    assert callable(fn)
    return fn


def _stores_slots_directly(cls: type[CommandHeader]) -> bool:
    """Whether ``object.__new__`` plus one store per field builds what ``__init__`` builds:
    a plain (not frozen) dataclass with no ``__post_init__``."""
    params = getattr(cls, "__dataclass_params__", None)
    return params is not None and not params.frozen and not hasattr(cls, "__post_init__")


def _compile_decoder(
    cls: type[CommandHeader],
    fields: Sequence[WireField],
    decoders: tuple[tuple[str, str, Callable[[str], object]], ...],
    defaults: Mapping[str, object],
    required: tuple[tuple[str, str], ...] | None,
) -> Callable[..., Any]:
    """``from_ext_fields`` for one class: each value parsed inline into a local, then the
    header built from the locals (absent or unparsable values keep the field default).
    With ``required`` (the ``@CFNotNull`` fields, possibly none), the result is
    ``(header, first missing wire name or None)``."""
    kinds = {wf.attr: wf.java_type for wf in fields}
    env: dict[str, object] = {"_cls": cls, "_new": object.__new__, "_small": _SMALL_INTS.get}
    lines = ["def _decode(ext):", "    get = ext.get"]
    for i, (attr, wire, parse) in enumerate(decoders):
        env[f"_d{i}"] = default = defaults[attr]
        env[f"_p{i}"] = parse
        kind = kinds[attr]
        v = f"v{i}"
        if kind is JavaType.STRING and default is None:
            lines.append(f"    {v} = get({wire!r})")  # absent -> None, the default
            continue
        lines.append(f"    t = get({wire!r})")
        lines.append(f"    if t is None: {v} = _d{i}")
        if kind is JavaType.STRING:
            lines.append(f"    else: {v} = t")
            continue
        # the Java parser, for any value not in the plain form taken inline before it
        parsed = [f"{v} = _p{i}(t)", f"if {v} is None: {v} = _d{i}"]
        if kind is JavaType.BOOLEAN:
            plain = [f"elif t == 'true': {v} = True", f"elif t == 'false': {v} = False"]
            lines.extend(f"    {line}" for line in [*plain, "else:"])
            lines.extend(f"        {line}" for line in parsed)
            continue
        if kind is JavaType.ENUM:
            lines.append("    else:")
            lines.extend(f"        {line}" for line in parsed)
            continue
        # fewer decimal digits than the type's width: int() gives what the Java parser
        # (_parse_java_integer: isdecimal, then int) gives, and the value is in range
        digits = [
            f"if len(t) < {_FAST_DIGITS[kind]} and t.isdecimal(): {v} = int(t)",
            "else:",
            *(f"    {line}" for line in parsed),
        ]
        lines.append("    else:")
        if kind is JavaType.INT:
            # Java int fields mostly hold small numbers (queue ids, flags, counts)
            lines.append(f"        {v} = _small(t)")
            lines.append(f"        if {v} is None:")
            lines.extend(f"            {line}" for line in digits)
        else:
            lines.extend(f"        {line}" for line in digits)
    if _stores_slots_directly(cls):
        lines.append("    h = _new(_cls)")
        lines.extend(f"    h.{attr} = v{i}" for i, (attr, _, _) in enumerate(decoders))
    else:
        args = ", ".join(f"{attr}=v{i}" for i, (attr, _, _) in enumerate(decoders))
        lines.append(f"    h = _cls({args})")
    if required is None:
        lines.append("    return h")
        return _compile("_decode", "\n".join(lines), env)
    index = {attr: i for i, (attr, _, _) in enumerate(decoders)}
    for attr, wire in required:
        lines.append(f"    if v{index[attr]} is None: return h, {wire!r}")
    lines.append("    return h, None")
    return _compile("_decode", "\n".join(lines), env)


#: an encoder's step: a header slot, or an extra key's name; True when the extras hold the
#: key too (a header slot: its value wins when set; an extra: it only takes the place)
_Step = tuple[_Slot | str, bool]


def _compile_encoder(
    cls: type[CommandHeader],
    fields: Sequence[WireField],
    steps: Sequence[_Step],
    orders: Mapping[int, tuple[str, ...]] | None,
) -> Callable[..., dict[str, str]]:
    """``to_ext_fields`` for one class and one set of extra keys, writing the keys in the
    order of ``steps`` (header fields whose value is None skipped). For a ``HashMap``
    order, ``orders`` holds its order per table size (:func:`_hashmap_orders`): when absent
    fields leave fewer keys, the map may get a smaller table and iterate differently, and
    the result is re-ordered for that size. ``orders=None``: a fixed order (FastCodesHeader)."""
    kinds = {wf.attr: wf.java_type for wf in fields}
    env: dict[str, object] = {"_capacity": hashmap_capacity}
    lines = ["def _encode(h, x=None):", "    out = {}"]
    for i, (step, shared) in enumerate(steps):
        if isinstance(step, str):
            lines.append(f"    out[{step!r}] = x[{step!r}]")
            continue
        attr, wire, fmt = step
        env[f"_f{i}"] = fmt
        kind = kinds[attr]
        if kind is JavaType.STRING:
            value = f"v if type(v) is str else _f{i}(v)"
        elif kind is JavaType.INT or kind is JavaType.LONG:
            value = "str(v)"
        elif kind is JavaType.BOOLEAN:
            value = "'true' if v else 'false'"
        else:
            value = f"_f{i}(v)"
        lines.append(f"    v = h.{attr}")
        lines.append(f"    if v is not None: out[{wire!r}] = {value}")
        if shared:
            lines.append(f"    else: out[{wire!r}] = x[{wire!r}]")
    total = len(steps)
    if orders is not None and hashmap_capacity(total) > 16:
        env["_orders"] = orders
        # at most 3/4 of the next smaller table: that table, not the full one
        lines.append(f"    if len(out) <= {hashmap_capacity(total) // 2 * 3 // 4}:")
        lines.append("        out = {w: out[w] for w in _orders[_capacity(len(out))] if w in out}")
    lines.append("    return out")
    return _compile("_encode", "\n".join(lines), env)


def _compile_merging(plan: _Plan, extra_keys: tuple[str, ...]) -> _MergingEncoder:
    """Header + extras -> extFields for one set of extra keys: Java put the extras into
    the map first, then ``makeCustomHeaderToNet`` the header's fields in their insertion
    order (a header value replaces an extra's value but keeps its place), and the map
    iterates in bucket order, a bucket in insertion order."""
    extra_set = set(extra_keys)
    insertion = [*extra_keys, *(w for w in plan.insertion if w not in extra_set)]
    orders = _hashmap_orders(insertion)
    slots = {slot[1]: slot for slot in plan.insertion_slots}
    steps: list[_Step] = [
        (slots[key], key in extra_set) if key in slots else (key, False) for key in orders[max(orders)]
    ]
    return _compile_encoder(plan.cls, plan.fields, steps, orders)


#: compiled merging encoders kept per class (then the generic merge serves other key sets)
_MAX_MERGING = 32
_PLANS: dict[type, _Plan] = {}  # memo of derived, immutable data; filled once per class


def _plan(cls: type[CommandHeader]) -> _Plan:
    plan = _PLANS.get(cls)
    if plan is None:
        plan = _PLANS[cls] = _build_plan(cls)
    return plan


# --------------------------------------------------------------------------- base classes
@dataclass(slots=True, kw_only=True)
class CommandHeader:
    """Base of every header (``org.apache.rocketmq.remoting.CommandCustomHeader``).

    Subclasses set ``JAVA_CLASS`` (the fully qualified Java class name, which also feeds
    the Java field-order emulation) and, for ``FastCodesHeader`` classes, the attribute
    order of their ``encode(ByteBuf)`` in ``FAST_CODES_ORDER``.
    """

    JAVA_CLASS: ClassVar[str] = "org.apache.rocketmq.remoting.CommandCustomHeader"
    FAST_CODES_ORDER: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def wire_fields(cls) -> tuple[WireField, ...]:
        """The declared fields, base-class fields first."""
        return _plan(cls).fields

    @classmethod
    def java_insertion_order(cls) -> tuple[str, ...]:
        """Wire names in the order ``makeCustomHeaderToNet`` puts them into the map."""
        return _plan(cls).insertion

    def to_ext_fields(
        self,
        extra: Mapping[str, str] | None = None,
        *,
        serialize_type: int = SerializeType.JSON,
    ) -> dict[str, str]:
        """The ``extFields`` Java would send for this header.

        ``extra`` holds keys already in the command's map before the header is merged
        (RPC-hook keys, the broker's ``MSG_REGION``/``TRACE_ON``); header values win on a
        clash, like ``HashMap.put``. For ``serialize_type=ROCKETMQ`` a ``FastCodesHeader``
        class is written in its ``encode`` order followed by ``extra``
        (``RocketMQSerializable.rocketMQProtocolEncode``); otherwise keys follow the Java
        ``HashMap`` iteration order.
        """
        plan = _PLANS.get(type(self)) or _plan(type(self))
        if serialize_type == _ROCKETMQ and plan.encode_fast is not None:
            out = plan.encode_fast(self)
            if extra:
                for key in hashmap_order(extra):
                    out.setdefault(key, extra[key])
            return out
        if not extra:
            return plan.encode(self)
        keys = tuple(extra)
        merge = plan.merging.get(keys)
        if merge is None:
            if len(plan.merging) >= _MAX_MERGING:  # key sets come from code: a few per class
                return _merge_generic(self, extra)
            merge = plan.merging[keys] = _compile_merging(plan, keys)
        return merge(self, extra)

    @classmethod
    def _ext_fields_of(cls, source: object, serialize_type: int) -> dict[str, str]:
        """``to_ext_fields(serialize_type=...)`` of a header of this class whose values are
        ``source``'s attributes of the same names, without building that header (``source``
        must have every attribute of this class, e.g. a V1 send header for V2)."""
        plan = _PLANS.get(cls) or _plan(cls)
        if serialize_type == _ROCKETMQ and plan.encode_fast is not None:
            return plan.encode_fast(source)
        return plan.encode(source)

    @classmethod
    def from_ext_fields(cls: type[_H], ext: Mapping[str, str] | None) -> _H:
        """Decode leniently (``RemotingCommand.decodeCommandCustomHeader``).

        Unknown keys are ignored; an absent or unparsable value keeps the field default
        (``None`` for boxed Java types). Never raises for bad input.
        """
        if not ext:
            return cls()
        header: _H = (_PLANS.get(cls) or _plan(cls)).decode(ext)
        return header

    @classmethod
    def from_ext_fields_checked(cls: type[_H], ext: Mapping[str, str] | None) -> tuple[_H, str | None]:
        """:meth:`from_ext_fields` and, in the same pass, the wire name of the first
        ``@CFNotNull`` field left ``None`` (the first of :meth:`missing_required`), or None."""
        if not ext:
            header = cls()
            missing = header.missing_required()
            return header, missing[0] if missing else None
        result: tuple[_H, str | None] = (_PLANS.get(cls) or _plan(cls)).decode_checked(ext)
        return result

    def missing_required(self) -> list[str]:
        """Wire names of ``@CFNotNull`` fields that are ``None`` (a server answers
        SYSTEM_ERROR for those, as the Java broker does after its NullPointerException)."""
        return [wire for attr, wire in _plan(type(self)).required if getattr(self, attr) is None]


def _decode_generic(cls: type[_H], ext: Mapping[str, str]) -> _H:
    """The plan walked generically, every value through its Java parser: the reference the
    compiled decoders are tested against."""
    kwargs: dict[str, Any] = {}
    for attr, wire, parse in _plan(cls).decoders:
        text = ext.get(wire)
        if text is not None:
            value = parse(text)
            if value is not None:
                kwargs[attr] = value
    return cls(**kwargs)


def _encode_generic(header: CommandHeader, *, fast_codes: bool = False) -> dict[str, str]:
    """The plan walked generically (no extra keys): the reference of the compiled encoders."""
    plan = _plan(type(header))
    slots = plan.fast_order if fast_codes and plan.fast_order is not None else plan.orders[plan.full_capacity]
    out = {}
    for attr, wire, fmt in slots:
        value = getattr(header, attr)
        if value is not None:
            out[wire] = fmt(value)
    if slots is not plan.fast_order and plan.full_capacity > 16:
        capacity = hashmap_capacity(len(out))
        if capacity != plan.full_capacity:
            # fewer keys -> smaller HashMap table -> a different bucket order
            out = {wire: out[wire] for _, wire, _ in plan.orders[capacity] if wire in out}
    return out


def _merge_generic(header: CommandHeader, extra: Mapping[str, str]) -> dict[str, str]:
    """Header + extras replayed through :func:`hashmap_order` (extras inserted first, then
    the header's fields in insertion order): the reference of the compiled merging encoders,
    and what serves a class's key sets past the compiled ones (``_MAX_MERGING``)."""
    values = dict(extra)
    keys = list(extra)
    for attr, wire, fmt in _plan(type(header)).insertion_slots:
        value = getattr(header, attr)
        if value is not None:
            if wire not in values:
                keys.append(wire)
            values[wire] = fmt(value)
    return {key: values[key] for key in hashmap_order(keys)}


@dataclass(slots=True, kw_only=True)
class RpcRequestHeader(CommandHeader):
    """``org.apache.rocketmq.common.rpc.RpcRequestHeader`` (4.9.5+): adds ``bname``."""

    JAVA_CLASS: ClassVar[str] = _RPC_REQUEST_HEADER

    #: broker name the request is meant for (absent before 4.9.5; brokers ignore it)
    bname: str | None = jstring("bname")
