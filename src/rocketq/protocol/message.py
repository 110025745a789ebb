"""Message records, properties, compression and batch bodies (sans-IO).

Mirrors ``org.apache.rocketmq.common.message.{Message, MessageExt, MessageClientExt,
MessageConst, MessageDecoder, MessageBatch}`` and the record layout written by
``org.apache.rocketmq.store.CommitLog`` (``calMsgLength``, ``DefaultAppendMessageCallback``).

One codec serves the commit log, pull/query/view bodies and the client: the stored record
*is* the wire unit. A V1 record (all integers big-endian)::

    0 TOTALSIZE int | 4 MAGICCODE int | 8 BODYCRC int | 12 QUEUEID int | 16 FLAG int
    20 QUEUEOFFSET long | 28 PHYSICALOFFSET long | 36 SYSFLAG int | 40 BORNTIMESTAMP long
    48 BORNHOST 4|16 + port int | STORETIMESTAMP long | STOREHOST 4|16 + port int
    RECONSUMETIMES int | PREPAREDTRANSACTIONOFFSET long | BODYLENGTH int + body
    TOPICLENGTH byte + topic | PROPERTIESLENGTH short + properties

Invariants:

* ``TOTALSIZE`` always equals the sum of the parts; the decoder checks it and every
  length against the buffer and raises :class:`~rocketq.errors.MalformedFrameError`
  (never ``IndexError``/``struct.error``) for bad magic, sizes or truncation.
* The BORNHOST_V6 / STOREHOSTADDRESS_V6 sys-flag bits always agree with the host
  address families (the encoder sets them, the decoder obeys them).
* A decoded :class:`MessageExt` keeps the stored property string in
  ``stored_properties``; ``properties`` is parsed from it on first access (a real dict).
* Property strings are ``name\\x01value\\x02name\\x01value`` with no trailing ``\\x02``;
  callers choose the order (``java_order=True`` gives Java ``HashMap`` order, which is
  what a Java producer or broker writes).
"""

from __future__ import annotations

import socket
import struct
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from rocketq._build import state as _build_state
from rocketq.errors import IllegalArgumentError, MalformedFrameError, ProtocolError
from rocketq.protocol.codes import COMPRESSION_TYPE_MASK, MessageSysFlag
from rocketq.protocol.java import hashmap_order, string_hash
from rocketq.protocol.message_id import HostAddr, create_offset_msg_id, host_to_bytes

__all__ = [
    "BLANK_MAGIC_CODE",
    "MAGIC_CODE_V1",
    "MAGIC_CODE_V2",
    "MAX_PROPERTIES_LENGTH",
    "MAX_TOPIC_LENGTH",
    "NAME_VALUE_SEPARATOR",
    "POS_BORN_TIMESTAMP",
    "POS_FLAG",
    "POS_MAGIC_CODE",
    "POS_PHYSICAL_OFFSET",
    "POS_QUEUE_OFFSET",
    "POS_SYS_FLAG",
    "PROPERTY_SEPARATOR",
    "BatchEntry",
    "HostAddr",
    "Message",
    "MessageConst",
    "MessageExt",
    "RecordEncoder",
    "batch_entry_at",
    "compress_body",
    "decode_batch",
    "decode_properties",
    "decode_record",
    "decode_record_properties",
    "decode_records",
    "decompress_body",
    "encode_batch",
    "encode_properties",
    "encode_record",
    "put_properties_lazily_each",
    "record_size",
    "store_timestamp_pos",
    "tags_code",
]

#: ``MessageDecoder.MESSAGE_MAGIC_CODE`` (0xDAA320A7): a message record, 1-byte topic length.
MAGIC_CODE_V1: Final = -626843481
#: 5.x ``MessageVersion.MESSAGE_VERSION_V2`` (0xDAA320AB): 2-byte topic length. Decoded only.
MAGIC_CODE_V2: Final = -626843477
#: ``CommitLog.BLANK_MAGIC_CODE`` (0xCBD43194): end-of-file filler, not a message.
BLANK_MAGIC_CODE = -875286124

#: Field positions used by a store that patches records in place (``MessageDecoder``
#: ``MESSAGE_*_POSTION`` constants and ``CommitLog`` append callback).
POS_MAGIC_CODE = 4
POS_FLAG = 16
POS_QUEUE_OFFSET = 20
POS_PHYSICAL_OFFSET = 28
POS_SYS_FLAG = 36
POS_BORN_TIMESTAMP = 40

#: The V1 topic length is a *signed* byte (``MessageDecoder.decode``: ``byte topicLen``).
MAX_TOPIC_LENGTH: Final = 127
#: The properties length is a signed short (``Short.MAX_VALUE``).
MAX_PROPERTIES_LENGTH = 32767

NAME_VALUE_SEPARATOR = "\x01"
PROPERTY_SEPARATOR = "\x02"

# MessageSysFlag bits as plain ints (hot paths)
_BORN_V6 = int(MessageSysFlag.BORNHOST_V6_FLAG)
_STORE_V6 = int(MessageSysFlag.STOREHOSTADDRESS_V6_FLAG)
_V6_BITS: Final = _BORN_V6 | _STORE_V6
_COMPRESSED: Final = int(MessageSysFlag.COMPRESSED_FLAG)
_COMPRESSION_TYPE_MASK = COMPRESSION_TYPE_MASK


def _layout(born_len: int, store_len: int) -> struct.Struct:
    # fields 1..15 up to and including BODYLENGTH; hosts as raw "address + port" bytes
    return struct.Struct(f">iiiiiqqiq{born_len}sq{store_len}siqi")


# Indexed by sysFlag & 0x30 (BORNHOST_V6 = 0x10, STOREHOST_V6 = 0x20).
_LAYOUTS = {0x00: _layout(8, 8), 0x10: _layout(20, 8), 0x20: _layout(8, 20), 0x30: _layout(20, 20)}
_INT = struct.Struct(">i")
_BATCH_HEAD = struct.Struct(">iiiii")  # TOTALSIZE, MAGICCODE, BODYCRC, FLAG, BODYLENGTH
_unpack_batch_head: Final = _BATCH_HEAD.unpack_from  # bound once (see RecordEncoder)


#: ``MessageConst.STRING_HASH_SET`` of 4.9.x (module level: a compiled class constant may not
#: refer to another one).
_RESERVED: Final[frozenset[str]] = frozenset(
    {
        "TRACE_ON", "MSG_REGION", "KEYS", "TAGS", "WAIT", "DELAY", "RETRY_TOPIC", "REAL_TOPIC",
        "REAL_QID", "TRAN_MSG", "PGROUP", "MIN_OFFSET", "MAX_OFFSET", "BUYER_ID", "ORIGIN_MESSAGE_ID",
        "TRANSFER_FLAG", "CORRECTION_FLAG", "MQ2_FLAG", "RECONSUME_TIME", "UNIQ_KEY",
        "MAX_RECONSUME_TIMES", "CONSUME_START_TIME", "TRAN_PREPARED_QUEUE_OFFSET",
        "TRANSACTION_CHECK_TIMES", "CHECK_IMMUNITY_TIME_IN_SECONDS", "INSTANCE_ID", "CORRELATION_ID",
        "REPLY_TO_CLIENT", "TTL", "ARRIVE_TIME", "PUSH_REPLY_TIME", "CLUSTER", "MSG_TYPE",
        "INNER_MULTI_QUEUE_OFFSET",
    }
)  # fmt: skip


class MessageConst:
    """``org.apache.rocketmq.common.message.MessageConst``: property keys.

    Every key is available under its Java constant name (``PROPERTY_KEYS``,
    ``PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX``, ...) and, when the wire key is a valid
    identifier, also under the wire key itself (``MessageConst.KEYS == "KEYS"``,
    ``MessageConst.UNIQ_KEY == "UNIQ_KEY"``). :attr:`RESERVED` is Java's
    ``STRING_HASH_SET`` of 4.9.x: names ``Message.putUserProperty`` refuses.
    """

    PROPERTY_KEYS: Final = "KEYS"
    KEYS: Final = "KEYS"
    PROPERTY_TAGS: Final = "TAGS"
    TAGS: Final = "TAGS"
    PROPERTY_WAIT_STORE_MSG_OK: Final = "WAIT"
    WAIT: Final = "WAIT"
    PROPERTY_DELAY_TIME_LEVEL: Final = "DELAY"
    DELAY: Final = "DELAY"
    PROPERTY_RETRY_TOPIC: Final = "RETRY_TOPIC"
    RETRY_TOPIC: Final = "RETRY_TOPIC"
    PROPERTY_REAL_TOPIC: Final = "REAL_TOPIC"
    REAL_TOPIC: Final = "REAL_TOPIC"
    PROPERTY_REAL_QUEUE_ID: Final = "REAL_QID"
    REAL_QID: Final = "REAL_QID"
    PROPERTY_TRANSACTION_PREPARED: Final = "TRAN_MSG"
    TRAN_MSG: Final = "TRAN_MSG"
    PROPERTY_PRODUCER_GROUP: Final = "PGROUP"
    PGROUP: Final = "PGROUP"
    PROPERTY_MIN_OFFSET: Final = "MIN_OFFSET"
    MIN_OFFSET: Final = "MIN_OFFSET"
    PROPERTY_MAX_OFFSET: Final = "MAX_OFFSET"
    MAX_OFFSET: Final = "MAX_OFFSET"
    PROPERTY_BUYER_ID: Final = "BUYER_ID"
    BUYER_ID: Final = "BUYER_ID"
    PROPERTY_ORIGIN_MESSAGE_ID: Final = "ORIGIN_MESSAGE_ID"
    ORIGIN_MESSAGE_ID: Final = "ORIGIN_MESSAGE_ID"
    PROPERTY_TRANSFER_FLAG: Final = "TRANSFER_FLAG"
    TRANSFER_FLAG: Final = "TRANSFER_FLAG"
    PROPERTY_CORRECTION_FLAG: Final = "CORRECTION_FLAG"
    CORRECTION_FLAG: Final = "CORRECTION_FLAG"
    PROPERTY_MQ2_FLAG: Final = "MQ2_FLAG"
    MQ2_FLAG: Final = "MQ2_FLAG"
    PROPERTY_RECONSUME_TIME: Final = "RECONSUME_TIME"
    RECONSUME_TIME: Final = "RECONSUME_TIME"
    PROPERTY_MSG_REGION: Final = "MSG_REGION"
    MSG_REGION: Final = "MSG_REGION"
    PROPERTY_TRACE_SWITCH: Final = "TRACE_ON"
    TRACE_ON: Final = "TRACE_ON"
    PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX: Final = "UNIQ_KEY"
    UNIQ_KEY: Final = "UNIQ_KEY"
    PROPERTY_MAX_RECONSUME_TIMES: Final = "MAX_RECONSUME_TIMES"
    MAX_RECONSUME_TIMES: Final = "MAX_RECONSUME_TIMES"
    PROPERTY_CONSUME_START_TIMESTAMP: Final = "CONSUME_START_TIME"
    CONSUME_START_TIME: Final = "CONSUME_START_TIME"
    PROPERTY_TRANSACTION_PREPARED_QUEUE_OFFSET: Final = "TRAN_PREPARED_QUEUE_OFFSET"
    TRAN_PREPARED_QUEUE_OFFSET: Final = "TRAN_PREPARED_QUEUE_OFFSET"
    PROPERTY_TRANSACTION_CHECK_TIMES: Final = "TRANSACTION_CHECK_TIMES"
    TRANSACTION_CHECK_TIMES: Final = "TRANSACTION_CHECK_TIMES"
    PROPERTY_CHECK_IMMUNITY_TIME_IN_SECONDS: Final = "CHECK_IMMUNITY_TIME_IN_SECONDS"
    CHECK_IMMUNITY_TIME_IN_SECONDS: Final = "CHECK_IMMUNITY_TIME_IN_SECONDS"
    PROPERTY_INSTANCE_ID: Final = "INSTANCE_ID"
    INSTANCE_ID: Final = "INSTANCE_ID"
    PROPERTY_CORRELATION_ID: Final = "CORRELATION_ID"
    CORRELATION_ID: Final = "CORRELATION_ID"
    PROPERTY_MESSAGE_REPLY_TO_CLIENT: Final = "REPLY_TO_CLIENT"
    REPLY_TO_CLIENT: Final = "REPLY_TO_CLIENT"
    PROPERTY_MESSAGE_TTL: Final = "TTL"
    TTL: Final = "TTL"
    PROPERTY_REPLY_MESSAGE_ARRIVE_TIME: Final = "ARRIVE_TIME"
    ARRIVE_TIME: Final = "ARRIVE_TIME"
    PROPERTY_PUSH_REPLY_TIME: Final = "PUSH_REPLY_TIME"
    PUSH_REPLY_TIME: Final = "PUSH_REPLY_TIME"
    PROPERTY_CLUSTER: Final = "CLUSTER"
    CLUSTER: Final = "CLUSTER"
    PROPERTY_MESSAGE_TYPE: Final = "MSG_TYPE"
    MSG_TYPE: Final = "MSG_TYPE"
    PROPERTY_INNER_MULTI_DISPATCH: Final = "INNER_MULTI_DISPATCH"
    INNER_MULTI_DISPATCH: Final = "INNER_MULTI_DISPATCH"
    PROPERTY_INNER_MULTI_QUEUE_OFFSET: Final = "INNER_MULTI_QUEUE_OFFSET"
    INNER_MULTI_QUEUE_OFFSET: Final = "INNER_MULTI_QUEUE_OFFSET"
    # 5.x additions (not reserved for a 4.9.x producer; listed for brokers and tools)
    PROPERTY_TRANSACTION_ID: Final = "__transactionId__"
    PROPERTY_SHARDING_KEY: Final = "__SHARDINGKEY"
    PROPERTY_TIMER_DELAY_SEC: Final = "TIMER_DELAY_SEC"
    TIMER_DELAY_SEC: Final = "TIMER_DELAY_SEC"
    PROPERTY_TIMER_DELIVER_MS: Final = "TIMER_DELIVER_MS"
    TIMER_DELIVER_MS: Final = "TIMER_DELIVER_MS"
    PROPERTY_TIMER_DELAY_MS: Final = "TIMER_DELAY_MS"
    TIMER_DELAY_MS: Final = "TIMER_DELAY_MS"
    PROPERTY_BORN_HOST: Final = "__BORNHOST"
    PROPERTY_BORN_TIMESTAMP: Final = "BORN_TIMESTAMP"
    BORN_TIMESTAMP: Final = "BORN_TIMESTAMP"
    PROPERTY_DLQ_ORIGIN_TOPIC: Final = "DLQ_ORIGIN_TOPIC"
    DLQ_ORIGIN_TOPIC: Final = "DLQ_ORIGIN_TOPIC"
    PROPERTY_DLQ_ORIGIN_MESSAGE_ID: Final = "DLQ_ORIGIN_MESSAGE_ID"
    DLQ_ORIGIN_MESSAGE_ID: Final = "DLQ_ORIGIN_MESSAGE_ID"

    #: ``MessageConst.KEY_SEPARATOR``: between several keys in ``KEYS``.
    KEY_SEPARATOR: Final = " "

    #: ``MessageConst.STRING_HASH_SET`` (4.9.x): refused by ``put_user_property``.
    RESERVED: Final = _RESERVED
    #: The Java name of :attr:`RESERVED`.
    STRING_HASH_SET: Final = _RESERVED


def store_timestamp_pos(sys_flag: int) -> int:
    """Offset of STORETIMESTAMP: 56 after an IPv4 born host, 68 after an IPv6 one."""
    return 68 if sys_flag & _BORN_V6 else 56


def record_size(
    body_len: int, topic_len: int, properties_len: int, *, born_v6: bool = False, store_v6: bool = False
) -> int:
    """``CommitLog.calMsgLength``: 91 + body + topic + properties, + 12 per IPv6 host (byte lengths)."""
    return 91 + body_len + topic_len + properties_len + (12 if born_v6 else 0) + (12 if store_v6 else 0)


def tags_code(tags: str | None) -> int:
    """``MessageExtBrokerInner.tagsString2tagsCode``: Java ``String.hashCode``, 0 if no tag."""
    return string_hash(tags) if tags else 0


# --------------------------------------------------------------------------- properties
#: property-name tuple -> its Java HashMap order: the same few name sets come back on every
#: send (a dict lookup here instead of a call into java.hashmap_order's memo)
_JAVA_ORDER: dict[tuple[str, ...], tuple[str, ...]] = {}
_JAVA_ORDER_MAX = 4096


def encode_properties(props: Mapping[str, str], *, java_order: bool = False) -> str:
    """``MessageDecoder.messageProperties2String``: ``n\\x01v\\x02...``, no trailing ``\\x02``.

    Keeps the mapping's order, or Java ``HashMap`` order with ``java_order=True`` (what a
    Java client sends in header ``i`` and in batch entries). Raises
    :class:`IllegalArgumentError` when a name or value contains ``\\x01`` or ``\\x02``
    (Java would silently corrupt the string).
    """
    keys: Iterable[str] = props
    if java_order:
        names = tuple(props)
        order = _JAVA_ORDER.get(names)
        if order is None:
            if len(_JAVA_ORDER) >= _JAVA_ORDER_MAX:
                _JAVA_ORDER.clear()
            order = _JAVA_ORDER[names] = tuple(hashmap_order(names))
        keys = order
    parts = []
    for name in keys:
        value = props[name]
        if "\x01" in name or "\x02" in name or "\x01" in value or "\x02" in value:
            raise IllegalArgumentError(f"property {name!r} contains a separator character")
        parts.append(f"{name}\x01{value}")
    return "\x02".join(parts)


def decode_properties(s: str) -> dict[str, str]:
    """``MessageDecoder.string2messageProperties`` (4.9.x): Java's lenient parsing.

    Split on ``\\x02``; in each segment the name runs to the first ``\\x01`` and the value
    is the rest (it may contain ``\\x01``). Segments without ``\\x01``, or whose first
    ``\\x01`` is the first or last character (empty name or value; this also covers
    segments shorter than 3 characters) are ignored. A later duplicate name wins.
    """
    out: dict[str, str] = {}
    for seg in s.split("\x02"):
        name, _, value = seg.partition("\x01")
        if name and value:
            out[name] = value
    return out


def put_properties_lazily_each(msgs: Iterable[Message], props: Mapping[str, str]) -> None:
    """:meth:`Message.put_properties_lazily` on every message, ``props`` encoded once (the
    consume services stamp CONSUME_START_TIME on each message of a batch this way)."""
    encoded = encode_properties(props)
    for msg in msgs:
        parsed = msg._props
        if parsed is None:
            raw = msg._raw_props
            msg._raw_props = f"{raw}\x02{encoded}" if raw else encoded
        else:
            parsed.update(props)


# --------------------------------------------------------------------------- compression
def compress_body(body: bytes, level: int = 5) -> bytes:
    """``ZlibCompressor.compress``/``UtilAll.compress``: a zlib (RFC 1950) stream, level 5."""
    return zlib.compress(body, level)


def decompress_body(body: bytes, sys_flag: int) -> bytes:
    """Undo the producer's compression according to ``sys_flag``.

    Without COMPRESSED_FLAG the body is returned unchanged. Compression type 0 (pre-4.9.4
    clients) and 3 (ZLIB) are zlib (``CompressionType.findByValue``); LZ4 (1), ZSTD (2)
    and unknown types raise :class:`ProtocolError`, a corrupt stream
    :class:`MalformedFrameError`.
    """
    if not sys_flag & _COMPRESSED:
        return body
    ctype = (sys_flag & _COMPRESSION_TYPE_MASK) >> 8
    if ctype not in (0, 3):
        raise ProtocolError(f"unsupported compression type {ctype} (sysFlag {sys_flag:#x})")
    try:
        return zlib.decompress(body)
    except zlib.error as exc:
        raise MalformedFrameError(f"corrupt zlib body: {exc}") from exc


# --------------------------------------------------------------------------- Message
class Message:
    """A user-facing message (``org.apache.rocketmq.common.message.Message``).

    ``properties`` is a real dict; ``tags``, ``keys``, ``delay_time_level`` and
    ``wait_store_msg_ok`` are views over it, like the Java getters. The constructor
    copies ``properties`` as given (no reserved-name check: it is also how system
    properties such as ``UNIQ_KEY`` are set), then applies the keyword arguments, which
    win: non-empty ``tags``/``keys``, ``DELAY`` when ``delay_time_level > 0``, and
    ``WAIT`` always (Java's constructors always set it; default ``true``).

    ``body`` must be bytes (``bytearray``/``memoryview`` are copied to bytes): a ``str`` is
    refused at once with ``TypeError`` rather than failing deep inside ``send``, since the
    encoding is the caller's choice (``text.encode("utf-8")``).
    """

    __slots__ = ("_props", "_raw_props", "body", "flag", "topic")

    def __init__(
        self,
        topic: str,
        body: bytes | bytearray | memoryview = b"",
        *,
        tags: str | None = None,
        keys: str | Iterable[str] | None = None,
        flag: int = 0,
        properties: Mapping[str, str] | None = None,
        delay_time_level: int = 0,
        wait_store_msg_ok: bool = True,
    ) -> None:
        if type(body) is not bytes:
            if not isinstance(body, bytes | bytearray | memoryview):
                raise TypeError(
                    f"Message body must be bytes, not {type(body).__name__}"
                    + (": encode the text, e.g. body.encode('utf-8')" if isinstance(body, str) else "")
                )
            body = bytes(body)
        self.topic = topic
        self.body = body
        self.flag = flag
        self._raw_props = ""
        self._props: dict[str, str] | None = dict(properties) if properties else {}
        if tags:
            self.tags = tags
        if keys:
            self.keys = keys
        if delay_time_level > 0:
            self.delay_time_level = delay_time_level
        self.wait_store_msg_ok = wait_store_msg_ok

    # ------------------------------------------------------------------ properties
    @property
    def properties(self) -> dict[str, str]:
        """All properties (system and user); parsed lazily for decoded records."""
        props = self._props
        if props is None:
            props = self._props = decode_properties(self._raw_props)
        return props

    @properties.setter
    def properties(self, value: Mapping[str, str]) -> None:
        self._props = dict(value)

    def get_property(self, name: str) -> str | None:
        """``Message.getProperty``: the value or ``None``."""
        return self.properties.get(name)

    def put_properties_lazily(self, props: Mapping[str, str], encoded: str | None = None) -> None:
        """Set properties without parsing the stored ones first (they win over stored values).

        For hot paths that tag every received message (MIN_OFFSET/MAX_OFFSET after a pull,
        CONSUME_START_TIME before a listener call): while the stored string has not been
        parsed, the entries are appended to it — a later entry wins when it is parsed.
        ``encoded`` is ``encode_properties(props)`` when the caller has it already (the
        same entries go onto every message of a pull).
        """
        if self._props is None:
            extra = encode_properties(props) if encoded is None else encoded
            self._raw_props = f"{self._raw_props}\x02{extra}" if self._raw_props else extra
        else:
            self._props.update(props)

    def put_property(self, name: str, value: str) -> None:
        """``Message.putProperty``: set any property, system ones included (no checks)."""
        self.properties[name] = value

    def remove_property(self, name: str) -> None:
        """``Message.clearProperty``."""
        self.properties.pop(name, None)

    def put_user_property(self, name: str, value: str) -> None:
        """``Message.putUserProperty``: refuses reserved names and blank names or values.

        Raises :class:`IllegalArgumentError` for a name in :attr:`MessageConst.RESERVED`,
        a blank name or value, or either containing ``\\x01``/``\\x02``.
        """
        if name in MessageConst.RESERVED:
            raise IllegalArgumentError(f"The Property<{name}> is used by system, input another please")
        if not name or not name.strip() or not value or not value.strip():
            raise IllegalArgumentError("The name or value of property can not be null or blank string!")
        if "\x01" in name or "\x02" in name or "\x01" in value or "\x02" in value:
            raise IllegalArgumentError(f"property {name!r} contains a separator character")
        self.properties[name] = value

    @property
    def tags(self) -> str | None:
        """Property ``TAGS``; setting ``None`` or ``""`` removes it."""
        return self.properties.get(MessageConst.PROPERTY_TAGS)

    @tags.setter
    def tags(self, value: str | None) -> None:
        if value:
            self.properties[MessageConst.PROPERTY_TAGS] = value
        else:
            self.properties.pop(MessageConst.PROPERTY_TAGS, None)

    @property
    def keys(self) -> Sequence[str]:
        """Property ``KEYS`` split on the space ``KEY_SEPARATOR`` (empty parts dropped): a new
        list. (Typed as a Sequence: a compiled class types the setter by the getter, and the
        setter takes a str, any iterable of str, or None.)"""
        raw = self.properties.get(MessageConst.PROPERTY_KEYS)
        return raw.split() if raw else []

    @keys.setter
    def keys(self, value: str | Iterable[str] | None) -> None:
        # Message.setKeys(Collection): joined with MessageConst.KEY_SEPARATOR (" ")
        joined = value if isinstance(value, str) or value is None else MessageConst.KEY_SEPARATOR.join(value)
        if joined:
            self.properties[MessageConst.PROPERTY_KEYS] = joined
        else:
            self.properties.pop(MessageConst.PROPERTY_KEYS, None)

    @property
    def delay_time_level(self) -> int:
        """Property ``DELAY`` (1..18 on a 4.x broker); 0 when absent or not a number."""
        raw = self.properties.get(MessageConst.PROPERTY_DELAY_TIME_LEVEL)
        try:
            return int(raw) if raw else 0
        except ValueError:
            return 0

    @delay_time_level.setter
    def delay_time_level(self, level: int) -> None:
        self.properties[MessageConst.PROPERTY_DELAY_TIME_LEVEL] = str(level)

    @property
    def wait_store_msg_ok(self) -> bool:
        """Property ``WAIT``: absent means ``True``; else Java ``Boolean.parseBoolean``."""
        raw = self.properties.get(MessageConst.PROPERTY_WAIT_STORE_MSG_OK)
        return raw is None or raw.lower() == "true"

    @wait_store_msg_ok.setter
    def wait_store_msg_ok(self, value: bool) -> None:
        self.properties[MessageConst.PROPERTY_WAIT_STORE_MSG_OK] = "true" if value else "false"

    # ------------------------------------------------------------------ pickling
    # Explicit, by attribute name: a mypyc-compiled class has no ``__slots__`` to walk and its
    # ``__new__`` runs ``__init__``, so the default slots protocol cannot rebuild it.
    def __reduce__(self) -> tuple[object, tuple[str], dict[str, object]]:
        return type(self), (self.topic,), self.__getstate__()

    def __getstate__(self) -> dict[str, object]:
        return {
            "topic": self.topic,
            "body": self.body,
            "flag": self.flag,
            "_raw_props": self._raw_props,
            "_props": self._props,
        }

    def __setstate__(self, state: Mapping[str, object] | tuple[None, Mapping[str, object]]) -> None:
        # (None, slots) is what an interpreted class pickled before pickling was explicit
        items = state[1] if isinstance(state, tuple) else state
        for name, value in items.items():
            setattr(self, name, value)

    def _repr_fields(self) -> list[str]:
        fields = [f"topic={self.topic!r}"]
        tags = self.tags
        if tags:
            fields.append(f"tags={tags!r}")
        keys = self.keys
        if keys:
            fields.append(f"keys={keys!r}")
        if self.flag:
            fields.append(f"flag={self.flag}")
        preview = self.body[:32]
        more = "..." if len(self.body) > 32 else ""
        fields.append(f"body=<{len(self.body)} bytes {preview!r}{more}>")
        return fields

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(self._repr_fields())})"


class MessageExt(Message):
    """A stored or received message (``MessageExt`` + ``MessageClientExt``).

    ``stored_properties`` is the property string exactly as found in the record (``""``
    for messages built in memory); ``properties`` is parsed from it on first access.

    A decoded message is lazy: the fields a consumer seldom reads (born and store
    timestamps and hosts, BODYCRC, the commit-log offset, PREPAREDTRANSACTIONOFFSET, hence
    also ``offset_msg_id``) stay in the record's bytes, which the message keeps, until one
    of them is first read or set; then all of them are decoded at once and the bytes
    dropped. They read and write like plain attributes either way.
    """

    __slots__ = (
        "_body_crc",
        "_born_host",
        "_born_timestamp",
        "_commit_log_offset",
        "_prepared_transaction_offset",
        "_rec",
        "_rec_pos",
        "_store_host",
        "_store_timestamp",
        "broker_name",
        "queue_id",
        "queue_offset",
        "reconsume_times",
        "store_size",
        "stored_properties",
        "sys_flag",
    )

    queue_id: int
    store_size: int
    queue_offset: int
    sys_flag: int
    reconsume_times: int
    broker_name: str
    stored_properties: str
    _born_timestamp: int
    _born_host: HostAddr
    _store_timestamp: int
    _store_host: HostAddr
    _commit_log_offset: int
    _body_crc: int
    _prepared_transaction_offset: int
    #: the buffer holding the record whose cold fields are not decoded yet, else None
    _rec: bytes | None
    _rec_pos: int

    def __init__(
        self,
        topic: str = "",
        body: bytes = b"",
        *,
        flag: int = 0,
        properties: Mapping[str, str] | None = None,
        queue_id: int = 0,
        store_size: int = 0,
        queue_offset: int = 0,
        sys_flag: int = 0,
        born_timestamp: int = 0,
        born_host: HostAddr = ("0.0.0.0", 0),
        store_timestamp: int = 0,
        store_host: HostAddr = ("0.0.0.0", 0),
        commit_log_offset: int = 0,
        body_crc: int = 0,
        reconsume_times: int = 0,
        prepared_transaction_offset: int = 0,
        broker_name: str = "",
    ) -> None:
        self.topic = topic
        self.body = body
        self.flag = flag
        self._raw_props = ""
        self._props = dict(properties) if properties else {}
        self.stored_properties = ""
        self.queue_id = queue_id
        self.store_size = store_size
        self.queue_offset = queue_offset
        self.sys_flag = sys_flag
        self._rec = None
        self._rec_pos = 0
        self._born_timestamp = born_timestamp
        self._born_host = born_host
        self._store_timestamp = store_timestamp
        self._store_host = store_host
        self._commit_log_offset = commit_log_offset
        self._body_crc = body_crc
        self.reconsume_times = reconsume_times
        self._prepared_transaction_offset = prepared_transaction_offset
        self.broker_name = broker_name

    # ------------------------------------------------------------------ cold fields
    def _decode_cold(self) -> None:
        """Decode the cold fields from the kept record bytes (which the decoder checked)."""
        rec = self._rec
        if rec is None:
            return
        fields = _LAYOUTS[self.sys_flag & _V6_BITS].unpack_from(rec, self._rec_pos)
        self._body_crc = fields[2]
        self._commit_log_offset = fields[6]
        self._born_timestamp = fields[8]
        self._born_host = _cached_host(fields[9])
        self._store_timestamp = fields[10]
        self._store_host = _cached_host(fields[11])
        self._prepared_transaction_offset = fields[13]
        self._rec = None

    @property
    def born_timestamp(self) -> int:
        """BORNTIMESTAMP: when the producer built the message (wall-clock ms)."""
        if self._rec is not None:
            self._decode_cold()
        return self._born_timestamp

    @born_timestamp.setter
    def born_timestamp(self, value: int) -> None:
        if self._rec is not None:
            self._decode_cold()
        self._born_timestamp = value

    @property
    def born_host(self) -> HostAddr:
        """BORNHOST: the producer's (address, port)."""
        if self._rec is not None:
            self._decode_cold()
        return self._born_host

    @born_host.setter
    def born_host(self, value: HostAddr) -> None:
        if self._rec is not None:
            self._decode_cold()
        self._born_host = value

    @property
    def store_timestamp(self) -> int:
        """STORETIMESTAMP: when the broker stored the message (wall-clock ms)."""
        if self._rec is not None:
            self._decode_cold()
        return self._store_timestamp

    @store_timestamp.setter
    def store_timestamp(self, value: int) -> None:
        if self._rec is not None:
            self._decode_cold()
        self._store_timestamp = value

    @property
    def store_host(self) -> HostAddr:
        """STOREHOSTADDRESS: the storing broker's (address, port)."""
        if self._rec is not None:
            self._decode_cold()
        return self._store_host

    @store_host.setter
    def store_host(self, value: HostAddr) -> None:
        if self._rec is not None:
            self._decode_cold()
        self._store_host = value

    @property
    def commit_log_offset(self) -> int:
        """PHYSICALOFFSET: the record's offset in the broker's commit log."""
        if self._rec is not None:
            self._decode_cold()
        return self._commit_log_offset

    @commit_log_offset.setter
    def commit_log_offset(self, value: int) -> None:
        if self._rec is not None:
            self._decode_cold()
        self._commit_log_offset = value

    @property
    def body_crc(self) -> int:
        """BODYCRC: ``crc32(body) & 0x7FFFFFFF`` of the stored body."""
        if self._rec is not None:
            self._decode_cold()
        return self._body_crc

    @body_crc.setter
    def body_crc(self, value: int) -> None:
        if self._rec is not None:
            self._decode_cold()
        self._body_crc = value

    @property
    def prepared_transaction_offset(self) -> int:
        """PREPAREDTRANSACTIONOFFSET: the half message's commit-log offset (transactions)."""
        if self._rec is not None:
            self._decode_cold()
        return self._prepared_transaction_offset

    @prepared_transaction_offset.setter
    def prepared_transaction_offset(self, value: int) -> None:
        if self._rec is not None:
            self._decode_cold()
        self._prepared_transaction_offset = value

    def __getstate__(self) -> dict[str, object]:
        # pickled decoded, without the record bytes (a pull body shared by its messages)
        self._decode_cold()
        state = super().__getstate__()
        state.update(
            stored_properties=self.stored_properties,
            queue_id=self.queue_id,
            store_size=self.store_size,
            queue_offset=self.queue_offset,
            sys_flag=self.sys_flag,
            reconsume_times=self.reconsume_times,
            broker_name=self.broker_name,
            _born_timestamp=self._born_timestamp,
            _born_host=self._born_host,
            _store_timestamp=self._store_timestamp,
            _store_host=self._store_host,
            _commit_log_offset=self._commit_log_offset,
            _body_crc=self._body_crc,
            _prepared_transaction_offset=self._prepared_transaction_offset,
            _rec=None,
            _rec_pos=0,
        )
        return state

    @property
    def offset_msg_id(self) -> str:
        """``MessageDecoder.createMessageId`` from store host + commit-log offset."""
        return create_offset_msg_id(self.store_host, self.commit_log_offset)

    @property
    def msg_id(self) -> str:
        """``MessageClientExt.getMsgId``: UNIQ_KEY when present, else the offsetMsgId."""
        uniq = self.properties.get(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
        return uniq if uniq else self.offset_msg_id

    def _repr_fields(self) -> list[str]:
        fields = super()._repr_fields()
        fields[1:1] = [f"queue_id={self.queue_id}", f"queue_offset={self.queue_offset}"]
        fields.append(f"msg_id={self.msg_id!r}")
        if self.reconsume_times:
            fields.append(f"reconsume_times={self.reconsume_times}")
        return fields


# --------------------------------------------------------------------------- records
#: host -> its stored bytes: a broker sees few distinct hosts, and this runs per record.
_HOST_BYTES: dict[HostAddr, bytes] = {}


def _host_bytes(host: HostAddr) -> bytes:
    raw = _HOST_BYTES.get(host)
    if raw is None:
        raw = host_to_bytes(host)  # raises for a bad host: nothing cached
        if len(_HOST_BYTES) >= 1024:
            _HOST_BYTES.clear()
        _HOST_BYTES[host] = raw
    return raw


def encode_record(
    *,
    topic: str,
    queue_id: int,
    flag: int,
    queue_offset: int,
    physical_offset: int,
    sys_flag: int,
    born_timestamp: int,
    born_host: HostAddr,
    store_timestamp: int,
    store_host: HostAddr,
    reconsume_times: int,
    prepared_transaction_offset: int,
    body: bytes,
    properties: str,
    body_crc: int | None = None,
) -> bytes:
    """One V1 record exactly as ``CommitLog`` stores it (and a pull body carries it).

    ``body`` is written as given (compress it first and set COMPRESSED_FLAG yourself).
    The V6 host bits of ``sys_flag`` are set or cleared from the host families.
    ``body_crc`` defaults to ``crc32(body) & 0x7FFFFFFF`` (``UtilAll.crc32``). Raises
    :class:`IllegalArgumentError` for a topic over 127 bytes, properties over 32767
    bytes, a bad host or an integer out of its Java range.
    """
    topic_b = topic.encode()
    if len(topic_b) > MAX_TOPIC_LENGTH:
        raise IllegalArgumentError(f"topic longer than {MAX_TOPIC_LENGTH} bytes: {len(topic_b)}")
    props_b = properties.encode()
    if len(props_b) > MAX_PROPERTIES_LENGTH:
        raise IllegalArgumentError(f"properties longer than {MAX_PROPERTIES_LENGTH} bytes: {len(props_b)}")
    return RecordEncoder(topic_b, born_host, store_host, sys_flag).encode(
        queue_id, flag, queue_offset, physical_offset, born_timestamp, store_timestamp,
        reconsume_times, prepared_transaction_offset, body, props_b, body_crc,
    )  # fmt: skip


class RecordEncoder:
    """:func:`encode_record` for many records of one topic, hosts and sysFlag.

    What is the same for all of them (topic bytes, host bytes, the V6 bits of sysFlag, the
    header layout) is worked out once; :meth:`encode` takes the rest positionally. The
    per-batch path of the store (``CommitLog.MessageExtBatchEncoder`` encodes a batch the
    same way). The caller checked the topic and property lengths.
    """

    __slots__ = ("_born", "_layout", "_pack", "_store", "_tail", "sys_flag")

    def __init__(self, topic_b: bytes, born_host: HostAddr, store_host: HostAddr, sys_flag: int) -> None:
        born = self._born = _host_bytes(born_host)
        store = self._store = _host_bytes(store_host)
        #: sysFlag with the V6 host bits set or cleared from the host families
        self.sys_flag = (
            (sys_flag & ~_V6_BITS)
            | (_BORN_V6 if len(born) == 20 else 0)
            | (_STORE_V6 if len(store) == 20 else 0)
        )
        self._layout = _LAYOUTS[self.sys_flag & _V6_BITS]
        #: the layout's ``pack``, bound once: a compiled call of a method on a Struct
        #: attribute looks the method up every time
        self._pack = self._layout.pack
        self._tail = bytes((len(topic_b),)) + topic_b

    def encode(
        self,
        queue_id: int,
        flag: int,
        queue_offset: int,
        physical_offset: int,
        born_timestamp: int,
        store_timestamp: int,
        reconsume_times: int,
        prepared_transaction_offset: int,
        body: bytes,
        props_b: bytes,
        body_crc: int | None = None,
    ) -> bytes:
        """One record; raises :class:`IllegalArgumentError` for an integer out of range."""
        if body_crc is None:
            body_crc = zlib.crc32(body) & 0x7FFFFFFF
        head = self._head(
            queue_id, flag, queue_offset, physical_offset, born_timestamp, store_timestamp,
            reconsume_times, prepared_transaction_offset, len(body), len(props_b), body_crc,
        )  # fmt: skip
        return b"".join((head, body, self._tail, len(props_b).to_bytes(2, "big"), props_b))

    def append_record(
        self,
        buf: bytearray,
        queue_id: int,
        flag: int,
        born_timestamp: int,
        reconsume_times: int,
        body: bytes | memoryview,
        props_b: bytes,
    ) -> int:
        """Append one record to ``buf`` with its queue offset, physical offset and store
        timestamp zero (the commit log patches them in) and no prepared-transaction offset;
        returns its size. What ``CommitLog.MessageExtBatchEncoder`` writes for each entry
        of a batch, into one buffer. Raises :class:`IllegalArgumentError` for an integer out
        of range (``buf`` is then unchanged)."""
        head = self._head(
            queue_id, flag, 0, 0, born_timestamp, 0, reconsume_times, 0,
            len(body), len(props_b), zlib.crc32(body) & 0x7FFFFFFF,
        )  # fmt: skip
        buf += head
        buf += body
        buf += self._tail
        buf += len(props_b).to_bytes(2, "big")
        buf += props_b
        return len(head) + len(body) + len(self._tail) + 2 + len(props_b)

    def _head(
        self,
        queue_id: int,
        flag: int,
        queue_offset: int,
        physical_offset: int,
        born_timestamp: int,
        store_timestamp: int,
        reconsume_times: int,
        prepared_transaction_offset: int,
        body_len: int,
        props_len: int,
        body_crc: int,
    ) -> bytes:
        """The record's fixed fields up to its body."""
        total = self._layout.size + body_len + len(self._tail) + 2 + props_len
        try:
            return self._pack(
                total, MAGIC_CODE_V1, body_crc, queue_id, flag, queue_offset, physical_offset, self.sys_flag,
                born_timestamp, self._born, store_timestamp, self._store, reconsume_times,
                prepared_transaction_offset, body_len,
            )  # fmt: skip
        except struct.error as exc:
            raise IllegalArgumentError(f"record field out of range: {exc}") from exc


#: stored "address + port" bytes -> host, for the lazily decoded hosts of MessageExt
_HOSTS: dict[bytes, HostAddr] = {}


def _cached_host(raw: bytes) -> HostAddr:
    host = _HOSTS.get(raw)
    if host is None:
        family = socket.AF_INET if len(raw) == 8 else socket.AF_INET6
        host = (socket.inet_ntop(family, raw[:-4]), int.from_bytes(raw[-4:], "big", signed=True))
        if len(_HOSTS) >= 1024:
            _HOSTS.clear()
        _HOSTS[raw] = host
    return host


def _hot_layout(born_len: int, store_len: int) -> struct.Struct:
    # _layout without the cold fields (skipped as pad bytes): TOTALSIZE, MAGICCODE, QUEUEID,
    # FLAG, QUEUEOFFSET, SYSFLAG, RECONSUMETIMES, BODYLENGTH
    return struct.Struct(f">ii4xiiq8xi8x{born_len}x8x{store_len}xi8xi")


_HOT_LAYOUTS: Final = {
    0x00: _hot_layout(8, 8),
    0x10: _hot_layout(20, 8),
    0x20: _hot_layout(8, 20),
    0x30: _hot_layout(20, 20),
}
_HOT_V4: Final = _HOT_LAYOUTS[0]
#: whether this module runs compiled (the build is all or nothing: see ``rocketq._build``)
_COMPILED: Final = _build_state().compiled
#: the IPv4 layout's size: where an IPv4 record's body starts
_HOT_V4_SIZE: Final = _HOT_V4.size


def _decode_at(
    b: bytes,
    pos: int,
    end: int,
    read_body: bool,
    decompress: bool,
    topics: dict[bytes, str],
    broker_name: str = "",
    extra: str = "",
) -> MessageExt:
    """Decode the record at ``b[pos:]`` that must end by ``end``. The hot path.

    Only the hot fields are unpacked; the message keeps ``b`` for the cold ones
    (:class:`MessageExt`). ``topics`` caches the topic from record to record of one body;
    ``extra`` is an encoded property string appended after the stored ones (a later entry
    wins when they are parsed), ``broker_name`` is stamped as is."""
    # the fields typed: compiled, the arithmetic below is then native, not generic
    size: int
    magic: int
    qid: int
    flag: int
    qoff: int
    sysflag: int
    recon: int
    blen: int
    head = _HOT_V4_SIZE
    try:
        size, magic, qid, flag, qoff, sysflag, recon, blen = _HOT_V4.unpack_from(b, pos)
        v6 = sysflag & _V6_BITS
        if v6:
            layout = _HOT_LAYOUTS[v6]
            head = layout.size
            size, magic, qid, flag, qoff, sysflag, recon, blen = layout.unpack_from(b, pos)
    except struct.error:
        raise MalformedFrameError(f"record at {pos} truncated: {end - pos} bytes left") from None
    rec_end = pos + size
    if magic != MAGIC_CODE_V1 and magic != MAGIC_CODE_V2:  # noqa: PLR1714 - ints, hot path
        raise MalformedFrameError(f"record at {pos}: bad magic code {magic & 0xFFFFFFFF:#010x}")
    if rec_end > end or size < head + 3:
        raise MalformedFrameError(
            f"record at {pos}: size {size} past the end of the buffer ({end - pos} left)"
        )
    tpos = pos + head + blen
    if blen < 0 or tpos + 3 > rec_end:
        raise MalformedFrameError(f"record at {pos}: body length {blen} inconsistent with size {size}")
    if magic == MAGIC_CODE_V1:
        # MessageDecoder.decode reads the topic length as a signed byte
        tlen = b[tpos]
        tstart = tpos + 1
        if tlen > MAX_TOPIC_LENGTH:
            raise MalformedFrameError(f"record at {pos}: negative topic length")
    else:
        # 5.x MessageVersion V2: the topic length is a short
        tlen = (b[tpos] << 8) | b[tpos + 1]
        tstart = tpos + 2
    ppos = tstart + tlen
    if ppos + 2 > rec_end:
        raise MalformedFrameError(f"record at {pos}: topic length {tlen} inconsistent with size {size}")
    plen = (b[ppos] << 8) | b[ppos + 1]
    if ppos + 2 + plen != rec_end:
        raise MalformedFrameError(f"record at {pos}: properties length {plen} inconsistent with size {size}")
    # Every attribute is stored below. Interpreted, MessageExt.__new__ skips __init__; compiled,
    # it runs __init__ without arguments anyway (hence the defaulted topic), and the direct
    # call does the same without looking ``__new__`` up; object.__new__, which skips it in
    # both, is refused by a mypyc-compiled class.
    m = MessageExt() if _COMPILED else MessageExt.__new__(MessageExt)
    if read_body:
        body = b[pos + head : tpos]
        if decompress and sysflag & _COMPRESSED:
            body = decompress_body(body, sysflag)
        m.body = body
    else:
        m.body = b""
    raw_topic = b[tstart:ppos]
    topic = topics.get(raw_topic)
    if topic is None:
        topic = topics[raw_topic] = raw_topic.decode("utf-8", "replace")
    m.topic = topic
    stored = m.stored_properties = b[ppos + 2 : rec_end].decode("utf-8", "replace")
    if extra:
        m._raw_props = f"{stored}\x02{extra}" if stored else extra
    else:
        m._raw_props = stored
    m._props = None
    m.flag = flag
    m.store_size = size
    m.queue_id = qid
    m.queue_offset = qoff
    m.sys_flag = sysflag
    m.reconsume_times = recon
    m.broker_name = broker_name
    m._rec = b
    m._rec_pos = pos
    return m


def decode_record(
    buf: bytes | bytearray | memoryview,
    offset: int = 0,
    *,
    read_body: bool = True,
    decompress: bool = True,
    verify_crc: bool = False,
) -> MessageExt:
    """Decode the one record starting at ``offset`` (``MessageDecoder.decode``).

    Only that record's bytes are copied, so ``buf`` may be a memoryview of a whole mapped
    commit-log file. ``read_body=False`` leaves ``body`` empty; ``decompress`` undoes
    COMPRESSED_FLAG (``sys_flag`` keeps the stored value). ``verify_crc`` checks BODYCRC
    (Java clients do not). Raises :class:`MalformedFrameError` for bad magic (including
    the BLANK end-of-file filler), sizes past the buffer and truncation.
    """
    if isinstance(buf, bytes):
        b, start, end = buf, offset, len(buf)
    else:
        mv = memoryview(buf).cast("B")
        if offset < 0 or offset + 4 > len(mv):
            raise MalformedFrameError(f"record at {offset} truncated: {len(mv) - offset} bytes left")
        size = _INT.unpack_from(mv, offset)[0]
        b = bytes(mv[offset : offset + max(size, 0)])
        start, end = 0, len(b)
    if offset < 0 or start > end:
        raise MalformedFrameError(f"record offset {offset} outside the buffer")
    m = _decode_at(b, start, end, read_body, decompress, {})
    if verify_crc:
        body_pos = start + _LAYOUTS[m.sys_flag & _V6_BITS].size
        blen = _INT.unpack_from(b, body_pos - 4)[0]
        if (zlib.crc32(b[body_pos : body_pos + blen]) & 0x7FFFFFFF) != m.body_crc:
            raise MalformedFrameError(f"record at {offset}: BODYCRC mismatch")
    return m


def decode_record_properties(record: bytes | memoryview) -> dict[str, str]:
    """``MessageDecoder.decodeProperties``: the properties of the record at ``record[0:]``,
    without decoding anything else (the broker's SQL92 filter reads them per pulled record).

    Raises :class:`MalformedFrameError` when the lengths point past the record.
    """
    try:
        magic = _INT.unpack_from(record, 4)[0]
        sysflag = _INT.unpack_from(record, 36)[0]
        head = _LAYOUTS[sysflag & _V6_BITS].size
        tpos = head + _INT.unpack_from(record, head - 4)[0]
        if magic == MAGIC_CODE_V2:
            tlen, tstart = (record[tpos] << 8) | record[tpos + 1], tpos + 2
        else:
            tlen, tstart = record[tpos], tpos + 1
        ppos = tstart + tlen
        plen = (record[ppos] << 8) | record[ppos + 1]
    except (struct.error, IndexError):
        raise MalformedFrameError("record truncated before its properties") from None
    raw = record[ppos + 2 : ppos + 2 + plen]
    return decode_properties(bytes(raw).decode("utf-8", "replace"))


def decode_records(
    buf: bytes | bytearray | memoryview,
    *,
    decompress: bool = True,
    broker_name: str = "",
    extra_properties: Mapping[str, str] | None = None,
) -> list[MessageExt]:
    """Decode back-to-back records: a PULL_MESSAGE / QUERY_MESSAGE / VIEW_MESSAGE_BY_ID body.

    Unlike Java's ``MessageDecoder.decodes`` (which silently stops at the first bad
    record) this raises :class:`MalformedFrameError` on any malformed or truncated one.
    ``broker_name`` is stamped on every message; ``extra_properties`` are put on every
    message as :meth:`Message.put_properties_lazily` would (they win over stored values,
    nothing is parsed here; ``stored_properties`` keeps the record's own string): what
    ``PullAPIWrapper.processPullResult`` adds (MIN_OFFSET/MAX_OFFSET) in the same pass.
    """
    b = buf if isinstance(buf, bytes) else bytes(buf)
    end = len(b)
    pos = 0
    topics: dict[bytes, str] = {}
    extra = encode_properties(extra_properties) if extra_properties else ""
    out: list[MessageExt] = []
    append = out.append
    while pos < end:
        m = _decode_at(b, pos, end, True, decompress, topics, broker_name, extra)
        append(m)
        pos += m.store_size
    return out


# --------------------------------------------------------------------------- batches
@dataclass(frozen=True, slots=True)
class BatchEntry:
    """One message of a SEND_BATCH_MESSAGE body (``MessageDecoder.encodeMessage`` layout)."""

    flag: int
    body: bytes
    properties: str

    def property_map(self) -> dict[str, str]:
        """The entry's properties parsed with :func:`decode_properties`."""
        return decode_properties(self.properties)


def encode_batch(messages: Sequence[Message]) -> bytes:
    """``MessageDecoder.encodeMessages``: the SEND_BATCH_MESSAGE body.

    Each entry is ``TOTALSIZE, MAGICCODE=0, BODYCRC=0, FLAG, BODYLENGTH + body,
    PROPERTIESLENGTH (short) + properties`` with the message's own properties in Java
    ``HashMap`` order (as the Java client writes them). Bodies are not compressed.
    Batch rules (same topic, no delay, ...) are the producer's business.
    """
    parts: list[bytes] = []
    for msg in messages:
        props = encode_properties(msg.properties, java_order=True).encode()
        if len(props) > MAX_PROPERTIES_LENGTH:
            raise IllegalArgumentError(f"properties longer than {MAX_PROPERTIES_LENGTH} bytes: {len(props)}")
        body = msg.body
        try:
            head = _BATCH_HEAD.pack(20 + len(body) + 2 + len(props), 0, 0, msg.flag, len(body))
        except struct.error as exc:
            raise IllegalArgumentError(f"batch entry field out of range: {exc}") from exc
        parts += (head, body, len(props).to_bytes(2, "big"), props)
    return b"".join(parts)


def batch_entry_at(b: bytes, pos: int) -> tuple[int, int, int]:
    """The entry of a SEND_BATCH_MESSAGE body at ``b[pos:]``: (FLAG, where its properties
    length is, where the entry ends). Its body is ``b[pos + 20 : properties length]``, its
    properties ``b[properties length + 2 : end]``.

    Java's broker ignores TOTALSIZE; here it must match the entry, and any truncation or
    inconsistent length raises :class:`MalformedFrameError`.
    """
    end = len(b)
    if pos + 22 > end:
        raise MalformedFrameError(f"batch entry at {pos} truncated: {end - pos} bytes left")
    size, _magic, _crc, flag, blen = _unpack_batch_head(b, pos)
    ppos = pos + 20 + blen
    if blen < 0 or ppos + 2 > end:
        raise MalformedFrameError(f"batch entry at {pos}: body length {blen} past the end")
    plen = (b[ppos] << 8) | b[ppos + 1]
    if plen >= 0x8000:  # a Java short
        plen -= 0x10000
    entry_end = ppos + 2 + plen
    if plen < 0 or entry_end > end:
        raise MalformedFrameError(f"batch entry at {pos}: properties length {plen} past the end")
    if size != entry_end - pos:
        raise MalformedFrameError(f"batch entry at {pos}: TOTALSIZE {size} != {entry_end - pos}")
    return flag, ppos, entry_end


def decode_batch(body: bytes | memoryview) -> list[BatchEntry]:
    """Split a SEND_BATCH_MESSAGE body (``CommitLog.MessageExtBatchEncoder`` reads it);
    :class:`MalformedFrameError` as for :func:`batch_entry_at`."""
    b = body if isinstance(body, bytes) else bytes(body)
    end = len(b)
    pos = 0
    out: list[BatchEntry] = []
    while pos < end:
        flag, ppos, entry_end = batch_entry_at(b, pos)
        props = b[ppos + 2 : entry_end].decode("utf-8", "replace")
        out.append(BatchEntry(flag=flag, body=b[pos + 20 : ppos], properties=props))
        pos = entry_end
    return out
