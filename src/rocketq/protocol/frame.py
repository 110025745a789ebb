"""RemotingCommand frames: encoding, decoding and incremental framing (sans-IO).

Mirrors ``RemotingCommand``, ``RocketMQSerializable`` and ``NettyDecoder`` of
``org.apache.rocketmq.remoting``. A frame is::

    int totalLength          = 4 + headerLength + bodyLength (not counting itself)
    int headerMark           = serializeType << 24 | headerLength
    headerLength bytes       JSON text or the ROCKETMQ binary header
    body                     the rest

Invariants:

* Decoding accepts both header serializations on every frame (the broker answers
  long-poll wake-ups in JSON even to ROCKETMQ clients; golden/binary_header.jsonl).
* JSON headers are written in Java's canonical key order (fastjson SortField:
  ``code, extFields, flag, language, opaque, remark, serializeTypeCurrentRPC, version``),
  ``extFields`` entries keep insertion order (Java HashMap order on the way in), nulls
  are omitted and control characters are escaped as ``\\u00XX``. A decoded golden frame
  therefore re-encodes to the same bytes.
* ``ext_fields is None`` means "no custom header" (the key is omitted); an empty dict is
  written as ``"extFields":{}``, as Java does for a header object whose fields are null.
* :class:`FrameDecoder` enforces the 16 MiB frame limit and raises typed
  :class:`~rocketq.errors.ProtocolError` subclasses; it never blocks and never raises
  anything else on hostile input.
* JSON header fields are type- and range-checked as fastjson's ``RemotingCommand`` reader
  effectively does: ``code``/``flag``/``opaque``/``version`` within int32 (integers,
  decimals truncated, numeric strings), ``language`` a name or an ordinal, ``remark`` a
  scalar, ``extFields`` a flat map of scalars (stringified); NaN, Infinity, 1e999, deeper
  values and excessive nesting make the frame malformed.
"""

from __future__ import annotations

import json
import json.scanner
import math
import struct
from collections.abc import Callable
from json.encoder import encode_basestring as _json_quote
from typing import cast

from rocketq.errors import FrameTooLargeError, MalformedFrameError
from rocketq.protocol.codes import CURRENT_VERSION, LanguageCode, SerializeType

__all__ = [
    "FLAG_ONEWAY",
    "FLAG_RESPONSE",
    "LARGE_FRAME",
    "MAX_FRAME_LENGTH",
    "FrameDecoder",
    "RemotingCommand",
    "decode_frame",
    "encode_json_request",
]

#: ``com.rocketmq.remoting.frameMaxLength``: the whole frame, including the length prefix.
MAX_FRAME_LENGTH = 16 * 1024 * 1024
#: Frames this long or longer are collected in a buffer of their own (:class:`FrameDecoder`).
LARGE_FRAME = 128 * 1024
#: Flag bit 0: the command is a response (``RemotingCommand.RPC_TYPE``).
FLAG_RESPONSE = 0x1
#: Flag bit 1: a oneway request, never answered (``RemotingCommand.RPC_ONEWAY``).
FLAG_ONEWAY = 0x2

_INT = struct.Struct(">i")
_PREFIX = struct.Struct(">iI")
_MARK = struct.Struct(">I")  # headerMark: serialize type << 24 | header length
_BIN_FIXED = struct.Struct(">hbhiii")  # code, language, version, opaque, flag, remarkLength
_MAX_HEADER_LENGTH = 0xFFFFFF

_LANG_VALUE = {lang.name: int(lang) for lang in LanguageCode}
_LANG_OTHER = int(LanguageCode.OTHER)
_LANG_NAME = {int(lang): lang.name for lang in LanguageCode}

# fastjson escapes every control character below 0x20 (short forms for \b \t \n \f \r)
# and leaves non-ASCII characters alone; ``json.dumps(ensure_ascii=False)`` does the same.
_json_str = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def _json_flat_map(ext: dict[str, str]) -> str:
    """``_json_str(ext)`` for a flat map of strings, without the general encoder's per-call
    setup: every key and value through the same C string encoder, joined as the encoder
    joins them (``{"k":"v",...}``). Anything but strings goes to :data:`_json_str`."""
    parts = []
    # typed as objects: a compiled build would otherwise refuse a non-string with TypeError
    for key, value in cast("dict[object, object]", ext).items():
        if type(key) is not str or type(value) is not str:
            return _json_str(ext)
        parts.append(f"{_json_quote(key)}:{_json_quote(value)}")
    return "{" + ",".join(parts) + "}"


_LANG_PYTHON = int(LanguageCode.PYTHON)
_JSON = int(SerializeType.JSON)
_JSON_TYPE = SerializeType.JSON  # what a decoded JSON frame's serialize_type holds (the enum)


class RemotingCommand:
    """One request or response (``org.apache.rocketmq.remoting.protocol.RemotingCommand``).

    A plain slotted class with the constructor, equality and repr a ``dataclass`` would
    generate: a compiled build gets a native ``__init__`` (a dataclass's is generated
    Python, run twice per request: the decoded request and its response)."""

    __slots__ = (
        "body",
        "code",
        "ext_fields",
        "ext_json",
        "flag",
        "language",
        "opaque",
        "remark",
        "serialize_type",
        "version",
    )

    def __init__(
        self,
        code: int,
        flag: int = 0,
        opaque: int = 0,
        language: int = _LANG_PYTHON,
        version: int = CURRENT_VERSION,
        remark: str | None = None,
        ext_fields: dict[str, str] | None = None,
        body: bytes = b"",
        serialize_type: int = _JSON,
        ext_json: str | None = None,
    ) -> None:
        self.code = code
        self.flag = flag
        self.opaque = opaque
        self.language = language
        self.version = version
        self.remark = remark
        self.ext_fields = ext_fields
        self.body = body
        self.serialize_type = serialize_type
        #: ``ext_fields`` already written as a JSON map, exactly as :func:`_json_flat_map`
        #: writes it, by a sender that builds both from its own values (the broker's send
        #: answer): the JSON header takes it instead of encoding the map again. A cache of
        #: ``ext_fields``, not part of equality: whoever changes the map resets it to None.
        self.ext_json = ext_json

    def _astuple(self) -> tuple[object, ...]:
        return (
            self.code,
            self.flag,
            self.opaque,
            self.language,
            self.version,
            self.remark,
            self.ext_fields,
            self.body,
            self.serialize_type,
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RemotingCommand):
            return NotImplemented
        return self._astuple() == other._astuple()

    def __hash__(self) -> int:  # mutable and compared by value: unhashable, as the dataclass was
        raise TypeError("unhashable type: 'RemotingCommand'")

    def __repr__(self) -> str:
        return (
            f"RemotingCommand(code={self.code!r}, flag={self.flag!r}, opaque={self.opaque!r}, "
            f"language={self.language!r}, version={self.version!r}, remark={self.remark!r}, "
            f"ext_fields={self.ext_fields!r}, body={self.body!r}, serialize_type={self.serialize_type!r})"
        )

    # ------------------------------------------------------------------ factories
    @classmethod
    def request(
        cls,
        code: int,
        ext_fields: dict[str, str] | None = None,
        body: bytes = b"",
        *,
        oneway: bool = False,
        serialize_type: int = SerializeType.JSON,
    ) -> RemotingCommand:
        """A request; the opaque is assigned by the connection that sends it."""
        return cls(
            code=code,
            flag=FLAG_ONEWAY if oneway else 0,
            ext_fields=ext_fields,
            body=body,
            serialize_type=serialize_type,
        )

    def make_response(
        self,
        code: int = 0,
        remark: str | None = None,
        ext_fields: dict[str, str] | None = None,
        body: bytes = b"",
    ) -> RemotingCommand:
        """The response to this request: same opaque and, normally, same serialize type."""
        return RemotingCommand(
            code=code,
            flag=FLAG_RESPONSE,
            opaque=self.opaque,
            remark=remark,
            ext_fields=ext_fields,
            body=body,
            serialize_type=self.serialize_type,
        )

    # ------------------------------------------------------------------ flags
    @property
    def is_response(self) -> bool:
        return bool(self.flag & FLAG_RESPONSE)

    @property
    def is_oneway(self) -> bool:
        return bool(self.flag & FLAG_ONEWAY)

    def ext(self, name: str, default: str | None = None) -> str | None:
        """One extFields value, or ``default``."""
        ext = self.ext_fields
        if ext is None:
            return default
        return ext.get(name, default)

    # ------------------------------------------------------------------ encoding
    def encode_header(self) -> bytes:
        """The header bytes in this command's serialize type."""
        if self.serialize_type == SerializeType.ROCKETMQ:
            return self._encode_binary_header()
        return self._encode_json_header()

    def _encode_json_header(self) -> bytes:
        ext_json = self.ext_json
        if ext_json is None and self.ext_fields is not None:
            ext_json = _json_flat_map(self.ext_fields)
        return _json_header(
            self.code, ext_json, self.flag, self.language, self.opaque, self.remark, self.version
        )

    def _encode_binary_header(self) -> bytes:
        # RocketMQSerializable.rocketMQProtocolEncode: fixed part, remark, then the map as
        # (short key length, key, int value length, value) entries behind their total length
        remark = self.remark.encode() if self.remark else b""
        parts = [
            _BIN_FIXED.pack(self.code, self.language, self.version, self.opaque, self.flag, len(remark)),
            remark,
            b"",  # the map's length, known once it is encoded
        ]
        size = 0
        ext = self.ext_fields
        if ext:
            for key, value in ext.items():
                k = key.encode()
                v = value.encode()
                parts += (len(k).to_bytes(2, "big"), k, len(v).to_bytes(4, "big"), v)
                size += 6 + len(k) + len(v)
        parts[2] = size.to_bytes(4, "big")
        return b"".join(parts)

    def encode(self) -> bytes:
        """The whole frame, length prefix included."""
        head, body = self.encode_parts()
        return head + body if body else head

    def encode_parts(self) -> tuple[bytes, bytes]:
        """The frame as (length prefix + header, body): :meth:`encode` without copying the
        body, for writers that hand a large body to the socket on its own."""
        return self.encode_head(len(self.body)), self.body

    def encode_head(self, body_length: int) -> bytes:
        """Length prefix and header of a frame whose body of ``body_length`` bytes is
        written after it by the caller (``RemotingCommand.encodeHeader(bodyLength)``), not
        taken from :attr:`body`."""
        return _frame_head(self.encode_header(), body_length, self.serialize_type)


def _json_header(
    code: int, ext_json: str | None, flag: int, language: int, opaque: int, remark: str | None, version: int
) -> bytes:
    """A JSON header as fastjson writes ``RemotingCommand`` (keys sorted, nulls left out),
    with the ``extFields`` map given already written (``{...}``, :func:`_json_flat_map`)."""
    lang = _LANG_NAME.get(language, "OTHER")
    ext_part = "" if ext_json is None else f'"extFields":{ext_json},'
    remark_part = "" if remark is None else f'"remark":{_json_quote(remark)},'
    return (
        f'{{"code":{code},{ext_part}"flag":{flag},"language":"{lang}",'
        f'"opaque":{opaque},{remark_part}"serializeTypeCurrentRPC":"JSON",'
        f'"version":{version}}}'
    ).encode()


def _frame_head(header: bytes, body_length: int, serialize_type: int) -> bytes:
    """Length prefix, header mark and ``header`` of a frame whose body of ``body_length``
    bytes follows; the header must fit 24 bits and the frame ``MAX_FRAME_LENGTH``."""
    hlen = len(header)
    if hlen > _MAX_HEADER_LENGTH:
        raise MalformedFrameError(f"header of {hlen} bytes does not fit in 24 bits")
    total = 4 + hlen + body_length
    if total + 4 > MAX_FRAME_LENGTH:
        raise FrameTooLargeError(f"frame of {total + 4} bytes exceeds {MAX_FRAME_LENGTH}")
    return _PREFIX.pack(total, (serialize_type << 24) | hlen) + header


def encode_json_request(code: int, ext_json: str, language: int, opaque: int, body: bytes) -> bytes:
    """The whole frame of a JSON request (flag 0, no remark, the current version) whose
    ``extFields`` map is given already serialized (``{...}``, as :func:`_json_flat_map` writes
    it): what ``RemotingCommand(code, opaque=opaque, language=language, ext_fields=...,
    body=body).encode()`` makes, for a sender that writes the map straight from its own
    fields (``rocketq.client.send_prep.send_frame_of``; tested equal)."""
    header = _json_header(code, ext_json, 0, language, opaque, None, CURRENT_VERSION)
    return _frame_head(header, len(body), _JSON) + body


# ---------------------------------------------------------------------- decoding
_INT32_MIN = -(1 << 31)
_INT32_MAX = (1 << 31) - 1


def _reject_constant(name: str) -> object:
    # fastjson reads no NaN/Infinity literal into a number field: the frame is malformed.
    raise MalformedFrameError(f"JSON header holds the non-number {name}")


# One decoder for every header (json.loads with options would build one per call).
_header_decoder = json.JSONDecoder(parse_constant=_reject_constant)
_loads_header = _header_decoder.decode
# Its C scanner called directly: what ``decode`` does for a header that starts with its
# object and ends with it, without the two Python frames and whitespace matches around it.
_scan_header: Callable[[str, int], tuple[object, int]] = json.scanner.make_scanner(_header_decoder)  # type: ignore[arg-type]


def _parse_json_header(text: str) -> object:
    """``_loads_header(text)``; a header as every peer writes it (``{...}`` and nothing
    around it) takes the scanner directly, anything else the decoder's general path, which
    also raises its errors."""
    if text[:1] == "{":
        try:
            obj, end = _scan_header(text, 0)
        except StopIteration:  # no JSON value at all: the general path says so
            return _loads_header(text)
        if end == len(text):
            return obj
    return _loads_header(text)


def _int32_field(obj: dict[str, object], name: str, default: int) -> int:
    """One int header field as fastjson's ``RemotingCommand`` reader effectively takes it:
    a JSON integer (or decimal, truncated, or numeric string) within int32; anything else
    (a boolean, an object, 1e999, a value past int32) makes the frame malformed."""
    raw = obj.get(name, default)
    if type(raw) is int:
        if _INT32_MIN <= raw <= _INT32_MAX:
            return raw
        value = raw
    elif type(raw) is float and math.isfinite(raw) and abs(raw) < 1e10:
        value = int(raw)
    elif type(raw) is str and 0 < len(raw) <= 11:
        try:
            value = int(raw.strip())
        except ValueError:
            raise MalformedFrameError(f"JSON header field {name} is not a number: {raw!r}") from None
    elif raw is None:
        value = default
    else:
        raise MalformedFrameError(f"JSON header field {name} is not an int: {type(raw).__name__}")
    if not _INT32_MIN <= value <= _INT32_MAX:
        raise MalformedFrameError(f"JSON header field {name} is out of the int32 range: {value}")
    return value


def _flat_string(value: object, where: str) -> str:
    """A scalar read into a Java ``String`` (fastjson stringifies numbers and booleans);
    objects and arrays are refused: ``extFields`` is a flat ``HashMap<String, String>``."""
    if type(value) is str:
        return value
    if type(value) is bool:
        return "true" if value else "false"
    if type(value) is int or (type(value) is float and math.isfinite(value)):
        return str(value)
    raise MalformedFrameError(f"JSON header {where} is not a string: {type(value).__name__}")


def _decode_json_header(data: bytes | memoryview) -> RemotingCommand:
    try:
        obj = _parse_json_header(str(data, "utf-8"))  # decoded from the view: no bytes copy
    except UnicodeDecodeError as exc:
        raise MalformedFrameError(f"header is not valid UTF-8: {exc}") from exc
    except RecursionError:
        raise MalformedFrameError("JSON header is nested too deeply") from None
    except ValueError as exc:  # JSONDecodeError, and integers past the digit limit
        raise MalformedFrameError(f"header is not valid JSON: {exc}") from exc
    if type(obj) is not dict:
        raise MalformedFrameError("JSON header is not an object")
    code = obj.get("code")
    flag = obj.get("flag", 0)
    opaque = obj.get("opaque", 0)
    version = obj.get("version", 0)
    if not (
        type(code) is int
        and type(flag) is int
        and type(opaque) is int
        and type(version) is int
        and _INT32_MIN <= code <= _INT32_MAX
        and _INT32_MIN <= flag <= _INT32_MAX
        and _INT32_MIN <= opaque <= _INT32_MAX
        and _INT32_MIN <= version <= _INT32_MAX
    ):  # anything but four plain int32s (what every peer writes) takes the careful path
        if "code" not in obj:
            raise MalformedFrameError("JSON header has no code")
        code = _int32_field(obj, "code", 0)
        flag = _int32_field(obj, "flag", 0)
        opaque = _int32_field(obj, "opaque", 0)
        version = _int32_field(obj, "version", 0)
    lang_raw = obj.get("language", "JAVA")
    if type(lang_raw) is str:
        language = _LANG_VALUE.get(lang_raw, _LANG_OTHER)
    elif type(lang_raw) is int and 0 <= lang_raw <= 0x7F:  # an ordinal (the binary header's byte)
        language = lang_raw
    elif lang_raw is None:
        language = int(LanguageCode.JAVA)
    else:
        raise MalformedFrameError(f"JSON header field language is invalid: {lang_raw!r:.40}")
    remark_raw = obj.get("remark")
    remark = None if remark_raw is None else _flat_string(remark_raw, "remark")
    ext_raw = obj.get("extFields")
    ext: dict[str, str] | None = None
    if type(ext_raw) is dict:
        flat = True
        for v in ext_raw.values():  # a loop, not all(<generator>): no generator per frame
            if type(v) is not str:
                flat = False
                break
        if flat:
            ext = ext_raw  # the common case: already a flat map of strings
        else:
            # fastjson is lenient: scalar values are accepted and stringified, nulls dropped.
            ext = {}
            for k, v in ext_raw.items():
                if v is not None:
                    ext[k] = v if type(v) is str else _flat_string(v, f"extFields value of {k!r:.40}")
    elif ext_raw is not None:
        raise MalformedFrameError("extFields is not an object")
    # positional (code, flag, opaque, language, version, remark, ext_fields, body, serialize
    # type): an interpreted call binds no keywords
    return RemotingCommand(code, flag, opaque, language, version, remark, ext, b"", _JSON_TYPE)


def _decode_binary_header(data: bytes | memoryview) -> RemotingCommand:
    b = bytes(data)  # one copy of the (small) header; slicing bytes is cheaper than a view
    end = len(b)
    if end < _BIN_FIXED.size + 4:
        raise MalformedFrameError(f"binary header of {end} bytes is shorter than 21")
    # typed ints: a compiled build then compares, indexes and slices natively (struct
    # answers Any, which would make every length below a boxed object)
    fixed: tuple[int, int, int, int, int, int] = _BIN_FIXED.unpack_from(b, 0)
    code, language, version, opaque, flag, remark_len = fixed
    pos: int = _BIN_FIXED.size
    if remark_len < 0 or pos + remark_len + 4 > end:
        raise MalformedFrameError("binary header remark length runs past the header")
    unpack_int = _INT.unpack_from
    try:
        remark = b[pos : pos + remark_len].decode() if remark_len else None
        pos += remark_len
        ext_len: int = unpack_int(b, pos)[0]
        pos += 4
        if ext_len < 0 or pos + ext_len != end:
            raise MalformedFrameError("binary header extFields length does not match the header")
        ext: dict[str, str] | None = None
        if ext_len:
            ext = {}
            while pos < end:
                if pos + 2 > end:
                    raise MalformedFrameError("truncated extFields key length")
                klen = (b[pos] << 8) | b[pos + 1]
                key_end = pos + 2 + klen
                if klen > 0x7FFF or key_end + 4 > end:  # a Java short: past 0x7FFF it is negative
                    raise MalformedFrameError("extFields key runs past the header")
                vlen: int = unpack_int(b, key_end)[0]
                value_end = key_end + 4 + vlen
                if vlen < 0 or value_end > end:
                    raise MalformedFrameError("extFields value runs past the header")
                ext[b[pos + 2 : key_end].decode()] = b[key_end + 4 : value_end].decode()
                pos = value_end
    except UnicodeDecodeError as exc:
        raise MalformedFrameError(f"binary header string is not valid UTF-8: {exc}") from exc
    return RemotingCommand(
        code=code,
        flag=flag,
        opaque=opaque,
        language=language,
        version=version,
        remark=remark,
        ext_fields=ext,
        serialize_type=SerializeType.ROCKETMQ,
    )


def _decode_after_length(mv: memoryview) -> RemotingCommand:
    """Decode ``headerMark + header + body`` (the frame without its length prefix)."""
    if len(mv) < 4:
        raise MalformedFrameError(f"frame of {len(mv)} bytes has no header mark")
    (mark,) = _MARK.unpack_from(mv, 0)
    stype = mark >> 24
    hlen = mark & 0xFFFFFF
    if 4 + hlen > len(mv):
        raise MalformedFrameError(f"header length {hlen} runs past the frame of {len(mv)} bytes")
    header = mv[4 : 4 + hlen]
    if stype == SerializeType.JSON:
        cmd = _decode_json_header(header)
    elif stype == SerializeType.ROCKETMQ:
        cmd = _decode_binary_header(header)
    else:
        raise MalformedFrameError(f"unknown serialize type {stype}")
    cmd.body = bytes(mv[4 + hlen :])
    return cmd


def decode_frame(frame: bytes | bytearray | memoryview) -> RemotingCommand:
    """Decode one complete frame, length prefix included."""
    mv = memoryview(frame)
    if len(mv) < 4:
        raise MalformedFrameError("frame shorter than its length prefix")
    (total,) = _INT.unpack_from(mv, 0)
    if total + 4 != len(mv):
        raise MalformedFrameError(f"length prefix {total} does not match a frame of {len(mv)} bytes")
    return _decode_after_length(mv[4:])


class FrameDecoder:
    """Incremental framing: ``feed(bytes)`` returns every frame completed so far.

    Accepts any chunking. Raises :class:`FrameTooLargeError` as soon as a length prefix
    announces a frame over :data:`MAX_FRAME_LENGTH`, and :class:`MalformedFrameError`
    for negative lengths or inconsistent headers; after an error the stream is unusable
    (the connection must be closed, as Netty does).

    With ``direct_large`` (a client: the peer is the server it chose), a frame of at least
    :data:`LARGE_FRAME` bytes (a pull answer in bulk) is collected in a buffer of its own
    size instead of the shared one, which would grow and copy it again on every chunk,
    and the socket reader can receive the rest of it straight into that buffer:
    :meth:`pending_large` gives the unfilled part (for ``socket.recv_into``) and
    :meth:`filled` takes the count received. A server leaves it off: there a length
    prefix alone must not make it allocate up to :data:`MAX_FRAME_LENGTH` bytes per
    connection (the shared buffer only grows with the bytes that arrive, as Netty's).
    """

    __slots__ = ("_buf", "_direct", "_filled", "_large", "_max", "_pos")

    def __init__(self, max_frame_length: int = MAX_FRAME_LENGTH, *, direct_large: bool = False) -> None:
        self._buf = bytearray()
        self._pos = 0
        self._max = max_frame_length
        self._direct = direct_large
        self._large: bytearray | None = None  # a large frame without its length prefix
        self._filled = 0  # bytes of it received (0 without one)

    @property
    def buffered(self) -> int:
        """Bytes received but not yet part of a complete frame."""
        return len(self._buf) - self._pos + self._filled

    @property
    def pending_length(self) -> int:
        """The whole length (prefix included) announced for the frame being received: 0
        when none is started or its length prefix is still incomplete."""
        large = self._large
        if large is not None:
            return len(large) + 4
        buf = self._buf
        pos = self._pos
        if len(buf) - pos < 4:
            return 0
        total: int = _INT.unpack_from(buf, pos)[0]
        return total + 4

    def pending_large(self) -> memoryview | None:
        """The unfilled rest of the large frame being received, or None."""
        large = self._large
        return None if large is None else memoryview(large)[self._filled :]

    def filled(self, count: int) -> list[RemotingCommand]:
        """``count`` bytes were written at the start of :meth:`pending_large`'s view: the
        frame once it is complete (else nothing)."""
        large = self._large
        if large is None or not 0 <= count <= len(large) - self._filled:
            raise ValueError(f"filled({count}) does not match the pending large frame")
        self._filled += count
        if self._filled < len(large):
            return []
        self._large = None
        self._filled = 0
        with memoryview(large) as mv:
            return [_decode_after_length(mv)]

    def feed(self, data: bytes | bytearray | memoryview) -> list[RemotingCommand]:
        out: list[RemotingCommand] = []
        large = self._large
        if large is not None:
            view = memoryview(data)
            take = min(len(view), len(large) - self._filled)
            large[self._filled : self._filled + take] = view[:take]
            out.extend(self.filled(take))
            if take == len(view):
                return out
            data = view[take:]
        buf = self._buf
        if self._pos and self._pos == len(buf):
            buf.clear()
            self._pos = 0
        buf += data
        pos = self._pos
        end = len(buf)
        while end - pos >= 4:
            (total,) = _INT.unpack_from(buf, pos)
            if total < 4:
                raise MalformedFrameError(f"frame length {total} is smaller than the header mark")
            if total + 4 > self._max:
                raise FrameTooLargeError(f"frame of {total + 4} bytes exceeds {self._max}")
            if end - pos - 4 < total:
                if self._direct and total + 4 >= LARGE_FRAME:  # the rest into a buffer of its own
                    self._large = large = bytearray(total)
                    self._filled = end - pos - 4
                    large[: self._filled] = memoryview(buf)[pos + 4 : end]
                    pos = end
                break
            mv = memoryview(buf)  # released by hand: a with block costs two method calls
            try:
                out.append(_decode_after_length(mv[pos + 4 : pos + 4 + total]))
            finally:
                mv.release()
            pos += 4 + total
        if pos == end:
            buf.clear()
            pos = 0
        elif pos > 65536:
            del buf[:pos]
            pos = 0
        self._pos = pos
        return out
