"""Column-wise decoding of pulled message records straight into Arrow record batches.

The Spark source's hot path. A PULL_MESSAGE body is a run of back-to-back stored records
(the layout of ``org.apache.rocketmq.store.CommitLog``, decoded one by one by Java's
``MessageDecoder.decodes`` and by :func:`rocketq.protocol.message.decode_records`). Here the
records of one queue are decoded *column-wise*:

* record boundaries come from the TOTALSIZE chain: checked in one strided read when every
  record has the same size (the usual case: one producer, one body size), else found with a
  speculative magic-code scan that is verified, so it is exact for any mix of sizes;
* the fixed IPv4 header of every record is read through one big-endian structured dtype
  (a zero-copy strided view for uniform records, else one gather);
* variable fields (body, properties) of one width are copied as fixed-width items; mixed
  widths become Arrow ``binary_view`` arrays pointing into the pull body, cast once to plain
  ``binary``/``string`` by Arrow's C++ kernels;
* properties that share one layout in every row (same names, separators and value widths:
  what one producer writes) are sliced as columns of a ``rows x width`` byte block; other
  property strings are split with Arrow compute functions.

No Python object is created per row except on rare paths (compressed bodies, IPv6 hosts,
invalid UTF-8), which fall back to :mod:`rocketq.protocol.message`.

Invariants:

* The output schema is :func:`arrow_schema` (the connector's read schema, see
  :data:`READ_COLUMNS`, with or without ``properties``); it equals
  ``pyspark.sql.pandas.types.to_arrow_schema`` of
  :func:`rocketq.spark.datasource.read_schema`, which pyspark checks every batch against
  (``tests/spark/test_columnar.py`` holds the two together).
* Decoding is exactly :func:`~rocketq.protocol.message.decode_records` plus
  ``MessageClientExt.getMsgId`` (UNIQ_KEY, else the offsetMsgId) and Java's lenient
  property parsing (``MessageDecoder.string2messageProperties``: segments without a name
  or a value are dropped). A malformed body raises
  :class:`~rocketq.errors.MalformedFrameError`, never ``IndexError``. Every fast path is
  an exact special case of the general one (the tests hold them to the reference codec).
* ``properties`` holds the stored properties only (not the MIN_OFFSET/MAX_OFFSET that
  ``PullAPIWrapper.processPullResult`` adds in memory). A name stored twice keeps only its
  later value (Java's ``HashMap.put``), in the position of that later pair.
* The tag filter is the client-side re-check of ``PullAPIWrapper.processPullResult``: the
  broker compares only tag hash codes, so rows whose tag is not in the set are dropped here.
"""

from __future__ import annotations

import itertools
import struct
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from typing import Any, Final

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from rocketq.errors import MalformedFrameError
from rocketq.protocol.codes import MessageSysFlag
from rocketq.protocol.message import (
    MAGIC_CODE_V1,
    MAGIC_CODE_V2,
    MessageConst,
    MessageExt,
    decode_records,
)

__all__ = [
    "READ_COLUMNS",
    "arrow_schema",
    "decode_batch",
    "empty_batch",
    "record_starts",
]

I64 = npt.NDArray[np.int64]
U8 = npt.NDArray[np.uint8]

#: The read schema: ``(name, Spark SQL type, nullable)`` in column order.
READ_COLUMNS: Final[tuple[tuple[str, str, bool], ...]] = (
    ("topic", "string", False),
    ("broker", "string", False),
    ("queue_id", "int", False),
    ("queue_offset", "bigint", False),
    ("msg_id", "string", False),
    ("keys", "string", True),
    ("tags", "string", True),
    ("body", "binary", False),
    ("properties", "map<string,string>", False),
    ("born_timestamp", "timestamp", False),
    ("store_timestamp", "timestamp", False),
    ("born_host", "string", False),
    ("reconsume_times", "int", False),
)

#: The fixed V1 header with IPv4 hosts, up to and including BODYLENGTH.
_HEAD_V4: Final = 88
#: Smallest possible record: that header, the topic length byte and the properties length
#: short (``CommitLog.calMsgLength`` with empty body, topic and properties).
_MIN_RECORD: Final = 91
_COMPRESSED: Final = int(MessageSysFlag.COMPRESSED_FLAG)
_BORN_V6: Final = int(MessageSysFlag.BORNHOST_V6_FLAG)
_STORE_V6: Final = int(MessageSysFlag.STOREHOSTADDRESS_V6_FLAG)
_INT: Final = struct.Struct(">i")
#: Zero bytes after the records: short reads near the end stay inside the buffer.
_PAD: Final = bytes(16)
#: ``CommitLog`` record header with IPv4 hosts (``MessageDecoder.decode`` field order).
#: Hosts are read as one 8-byte integer (4 address bytes, then the int port).
_HEAD: Final = np.dtype(
    {
        "names": [
            "size",
            "magic",
            "queue_offset",
            "physical_offset",
            "sysflag",
            "born_ts",
            "born_host",
            "store_ts",
            "store_host",
            "reconsume",
            "body_len",
        ],
        "formats": [">i4", ">i4", ">i8", ">i8", ">i4", ">i8", ">u8", ">i8", ">u8", ">i4", ">i4"],
        "offsets": [0, 4, 20, 28, 36, 40, 48, 56, 64, 72, 84],
        "itemsize": _HEAD_V4,
    }
)
#: Row ``k``: the 12-byte inline part of a view as three little-endian words, the first
#: ``k`` bytes kept (the value) and the rest zeroed.
_INLINE_MASK: Final = ((np.arange(12)[None, :] < np.arange(13)[:, None]).astype(np.uint8) * 0xFF).view("<u4")
_HEX: Final = np.frombuffer(b"".join(f"{i:02X}".encode() for i in range(256)), dtype=np.uint8).reshape(256, 2)

_schema_cache: list[Any] = []


class _Prefixes:
    """Read-only arrays whose first ``m`` items are the same whatever their full length
    (offsets of fixed-width values, a value repeated), built once for the longest length
    asked for so far and then sliced: every batch of a queue needs the same ones.

    At most ``entries`` arrays of at most ``max_bytes`` each are kept (least recently used
    first out); longer ones are built every time.
    """

    def __init__(self, entries: int = 16, max_bytes: int = 2 << 20) -> None:
        self._arrays: OrderedDict[Hashable, npt.NDArray[Any]] = OrderedDict()
        self._entries = entries
        self._max_bytes = max_bytes
        self._lock = threading.Lock()

    def get(self, key: Hashable, length: int, build: Callable[[int], npt.NDArray[Any]]) -> npt.NDArray[Any]:
        """``build(length)``, or the first ``length`` items of a longer one built before."""
        with self._lock:
            array = self._arrays.get(key)
            if array is not None and len(array) >= length:
                self._arrays.move_to_end(key)
                return array[:length]
        array = build(length)
        if array.nbytes <= self._max_bytes:
            array.setflags(write=False)
            with self._lock:
                self._arrays[key] = array
                self._arrays.move_to_end(key)
                while len(self._arrays) > self._entries:
                    self._arrays.popitem(last=False)
        return array


_prefixes: Final = _Prefixes()


def arrow_schema(*, properties: bool = True) -> Any:
    """The ``pyarrow.Schema`` of every batch (timestamps in microseconds, UTC); without the
    ``properties`` column when ``properties`` is false (option ``includeProperties``)."""
    if not _schema_cache:
        arrow_types = {
            "string": pa.string(),
            "int": pa.int32(),
            "bigint": pa.int64(),
            "binary": pa.binary(),
            "timestamp": pa.timestamp("us", tz="UTC"),
            "map<string,string>": pa.map_(pa.string(), pa.field("value", pa.string(), nullable=False)),
        }
        full = pa.schema(
            [pa.field(name, arrow_types[kind], nullable=null) for name, kind, null in READ_COLUMNS]
        )
        _schema_cache.extend([full, full.remove(full.get_field_index("properties"))])
    return _schema_cache[0 if properties else 1]


def empty_batch(*, properties: bool = True) -> Any:
    """A ``RecordBatch`` with the read schema (see :func:`arrow_schema`) and no rows."""
    schema = arrow_schema(properties=properties)
    return pa.RecordBatch.from_arrays([pa.array([], type=f.type) for f in schema], schema=schema)


# --------------------------------------------------------------------------- raw access
def _strided(data: bytes, dtype: Any, *, offset: int = 0, stride: int = 1, count: int | None = None) -> Any:
    """A zero-copy array of ``dtype`` items at ``offset + k * stride`` in ``data``."""
    if count is None:
        count = max((len(data) - offset - dtype.itemsize) // stride + 1, 0)
    return np.ndarray((count,), dtype=dtype, buffer=data, offset=offset, strides=(stride,))


def _gather(data: bytes, pos: I64, dtype: Any) -> Any:
    """The ``dtype`` item at every byte position (one gather; ``IndexError`` past the end)."""
    return _strided(data, np.dtype(dtype))[pos]


def _be(data: bytes, pos: I64, dtype: str) -> I64:
    """Big-endian integers of type ``dtype`` at every position."""
    out: I64 = _gather(data, pos, dtype).astype(np.int64)
    return out


def _fixed_items(data: bytes, pos: I64, width: int, starts: I64, stride: int) -> Any:
    """The ``width``-byte items at ``pos`` (a void-dtype array, ``width > 0``): a strided
    view when every record has the same size and ``pos`` is at one place in each, else a
    gathered copy."""
    item = np.dtype((np.void, width))
    if stride and len(pos) and (pos - starts == int(pos[0] - starts[0])).all():
        return _strided(data, item, offset=int(pos[0]), stride=stride, count=len(pos))
    return _gather(data, pos, item)


# --------------------------------------------------------------------------- boundaries
def _walk(buf: bytes, end: int) -> I64:
    """Record starts by following TOTALSIZE one record at a time (the exact, slow way)."""
    unpack = _INT.unpack_from
    starts: list[int] = []
    pos = 0
    while pos < end:
        if end - pos < 4:
            raise MalformedFrameError(f"record at {pos} truncated: {end - pos} bytes left")
        size = unpack(buf, pos)[0]
        if size < _MIN_RECORD or size > end - pos:
            raise MalformedFrameError(f"record at {pos}: size {size} past the end ({end - pos} left)")
        starts.append(pos)
        pos += size
    return np.asarray(starts, dtype=np.int64)


def _uniform_stride(buf: bytes, end: int) -> int:
    """The common record size when the TOTALSIZE chain is ``0, s, 2s, ... end`` (else 0)."""
    if end < _MIN_RECORD:
        return 0
    first = _INT.unpack_from(buf, 0)[0]
    if first < _MIN_RECORD or end % first:
        return 0
    sizes = _strided(buf, np.dtype(">i4"), stride=first, count=end // first)
    return first if bool((sizes == first).all()) else 0


def _record_starts(buf: bytes, end: int) -> tuple[I64, int]:
    """Record starts in ``buf[:end]`` and the common record size (0 when sizes differ)."""
    stride = _uniform_stride(buf, end)
    if stride:
        return np.arange(0, end, stride, dtype=np.int64), stride
    if end < 8:
        return _walk(buf, end), 0
    u8 = np.frombuffer(buf, dtype=np.uint8, count=end)
    hits = np.flatnonzero(u8[4 : end - 3] == 0xDA)
    if hits.size:
        ok = (u8[hits + 5] == 0xA3) & (u8[hits + 6] == 0x20)
        last = u8[hits + 7]
        cand: I64 = hits[ok & ((last == 0xA7) | (last == 0xAB))].astype(np.int64)
        if cand.size and cand[0] == 0:
            sizes = _be(buf, cand, ">i4")
            nxt = cand + sizes
            if int(nxt[-1]) == end and (sizes >= _MIN_RECORD).all() and (nxt[:-1] == cand[1:]).all():
                return cand, 0
    return _walk(buf, end), 0


def record_starts(buf: bytes) -> I64:
    """Start offsets of the back-to-back records in ``buf``.

    Fast paths: records of one size are checked in one strided read of their TOTALSIZE
    fields; otherwise every record has MAGICCODE (``0xDAA320A7``, or the 5.x
    ``0xDAA320AB``) at byte 4, so the candidates are found with one vectorised byte scan and
    accepted only if they form the exact TOTALSIZE chain from 0 to the end (each candidate
    plus its size is the next candidate). Otherwise (a body that happens to contain the magic
    bytes, or a malformed buffer) the records are walked one by one, which raises
    :class:`MalformedFrameError` for a size that is too small or runs past the buffer.
    """
    return _record_starts(buf, len(buf))[0]


# --------------------------------------------------------------------------- columns
def _views(data: bytes, pos: I64, length: I64) -> Any:
    """An Arrow ``binary_view`` views buffer (16 bytes per value) for slices of buffer 0.

    Arrow view layout: int32 length, then the value inline (zero-padded) when it has at
    most 12 bytes, else a 4-byte prefix, the data-buffer index (0) and the int32 offset.
    ``data`` must have 12 readable bytes past every position (the caller's padding).
    """
    n = len(pos)
    views = np.empty((n, 4), dtype="<i4")
    views[:, 0] = length
    if not n:
        return views
    words = _gather(data, pos, np.dtype((np.void, 12))).view("<u4").reshape(n, 3)
    words &= _INLINE_MASK[np.minimum(length, 12)]
    short = length <= 12
    views[:, 1] = words[:, 0].view("<i4")  # the inline bytes 0-3, or the prefix: the same bytes
    views[:, 2] = np.where(short, words[:, 1].view("<i4"), 0)  # inline bytes 4-7, or buffer 0
    views[:, 3] = np.where(short, words[:, 2].view("<i4"), pos)  # inline bytes 8-11, or the offset
    return views


def _steps(step: int, count: int) -> npt.NDArray[np.int32]:
    """``0, step, 2 * step, ...``: ``count`` int32 offsets (kept across batches)."""
    return _prefixes.get(("steps", step), count, lambda m: np.arange(m, dtype=np.int32) * np.int32(step))


def _from_values(values: Any, n: int, width: int, out_type: Any, *, checked: bool = False) -> Any:
    """``n`` values of ``width`` bytes each, back to back in ``values`` (buffer protocol).

    A string array is checked for UTF-8 (``pa.ArrowInvalid``) unless ``checked`` (the
    bytes are known to be valid: ASCII built here, or a slice of checked values).
    """
    offsets = _steps(width, n + 1)
    arr = pa.Array.from_buffers(out_type, n, [None, pa.py_buffer(offsets), pa.py_buffer(values)])
    if out_type == pa.string() and not checked:
        arr.validate(full=True)  # UTF-8, like the cast of the general path
    return arr


def _slices(data: bytes, pos: I64, length: I64, out_type: Any, starts: I64, stride: int) -> Any:
    """``out_type`` (binary or string) values ``data[pos:pos+length]``.

    One width: fixed-width items copied at once. Mixed widths: views, then one cast.
    Invalid UTF-8 for a string raises ``pa.ArrowInvalid``.
    """
    n = len(pos)
    if n and int(length.min()) == int(length.max()):
        width = int(length[0])
        if width == 0:
            return _from_values(b"", n, 0, out_type)
        return _from_values(
            np.ascontiguousarray(_fixed_items(data, pos, width, starts, stride)), n, width, out_type
        )
    views = _views(data, pos, length)
    arr = pa.Array.from_buffers(pa.binary_view(), n, [None, pa.py_buffer(views), pa.py_buffer(data)])
    return arr.cast(out_type)


def _fixed_strings(raw: U8) -> Any:
    """Uppercase hex of each row of ``raw`` (n x w bytes) as a string array."""
    n, w = raw.shape
    text = _HEX[raw].reshape(n, 2 * w)
    return _from_values(text, n, 2 * w, pa.string(), checked=True)


def _constant_string(value: str, n: int) -> Any:
    b = value.encode()
    data = _repeated(b, n) if b else b""
    return _from_values(data, n, len(b), pa.string(), checked=True)  # encoded from a str


def _host_label(key: int) -> str:
    b = key.to_bytes(8, "big")
    return f"{b[0]}.{b[1]}.{b[2]}.{b[3]}:{int.from_bytes(b[4:], 'big', signed=True)}"


def _hosts(keys: npt.NDArray[np.uint64]) -> Any:
    """``"ip:port"`` strings of IPv4 host fields (4 address bytes, int port: one u64 each)."""
    n = len(keys)
    if n and bool((keys == keys[0]).all()):  # one producer host: a constant column
        return _constant_string(_host_label(int(keys[0])), n)
    uniq, inverse = np.unique(keys, return_inverse=True)
    labels = [_host_label(int(key)) for key in uniq.tolist()]
    return pa.array(labels, type=pa.string()).take(pa.array(inverse.astype(np.int64).ravel()))


def _timestamps(ms: Any) -> Any:
    """Microsecond timestamps from (big-endian) epoch milliseconds, one pass."""
    us = np.multiply(ms, 1000, dtype=np.int64)
    return pa.Array.from_buffers(pa.timestamp("us", tz="UTC"), len(us), [None, pa.py_buffer(us)])


class _Props:
    """The stored property strings split into (row, name, value) triples.

    ``MessageDecoder.string2messageProperties``: segments split on ``\\x02``; the name runs
    to the first ``\\x01``; segments with an empty name or value are dropped; for a name
    that occurs twice in one row only the later pair is kept (``HashMap.put``).
    """

    def __init__(self, props: Any, n: int) -> None:
        self.n = n
        segs_list = pc.split_pattern(props, pattern="\x02")
        segs = segs_list.flatten()
        m = len(segs)
        parents = np.asarray(pc.list_parent_indices(segs_list), dtype=np.int64)
        bufs = segs.buffers()
        offs = np.frombuffer(bufs[1], dtype=np.int32, count=segs.offset + m + 1)[segs.offset :]
        seg_start = offs[:-1].astype(np.int64)
        seg_len = offs[1:].astype(np.int64) - seg_start
        pos1 = np.asarray(pc.find_substring(segs, pattern="\x01"), dtype=np.int64)  # byte offsets
        valid = (pos1 > 0) & (pos1 < seg_len - 1)
        if not valid.all():
            seg_start, seg_len, pos1, parents = seg_start[valid], seg_len[valid], pos1[valid], parents[valid]
        data = _padded(bufs[2])
        names = _slices(data, seg_start, pos1, pa.string(), seg_start, 0)
        values = _slices(data, seg_start + pos1 + 1, seg_len - pos1 - 1, pa.string(), seg_start, 0)
        keep = self._later_wins(names, parents)
        if keep is not None:
            mask = pa.array(keep)
            names, values, parents = names.filter(mask), values.filter(mask), parents[keep]
        self.names = names
        self.values = values
        self.parents = parents

    def _later_wins(self, names: Any, parents: I64) -> npt.NDArray[np.bool_] | None:
        """A keep-mask dropping earlier duplicates of a name within a row (None: none)."""
        if not len(parents):
            return None
        per_row = int(np.bincount(parents, minlength=self.n).max())
        if per_row < 2:
            return None
        encoded = pc.dictionary_encode(names)
        codes = np.asarray(encoded.indices, dtype=np.int64)
        key = parents * max(len(encoded.dictionary), 1) + codes
        drop = np.zeros(len(key), dtype=bool)
        if per_row <= 32:
            # pairs of one row are adjacent: compare each with the next per_row - 1 pairs
            for shift in range(1, per_row):
                drop[:-shift] |= key[shift:] == key[:-shift]
        else:
            _, last_rev = np.unique(key[::-1], return_index=True)
            drop[:] = True
            drop[len(key) - 1 - last_rev] = False
        return ~drop if drop.any() else None

    def map_array(self, map_type: Any) -> Any:
        counts = np.bincount(self.parents, minlength=self.n)
        offsets = np.zeros(self.n + 1, dtype=np.int32)
        np.cumsum(counts, out=offsets[1:])
        return pa.MapArray.from_arrays(pa.array(offsets), self.names, self.values, type=map_type)

    def pick(self, name: str) -> Any:
        """The value of property ``name`` per row (null where absent)."""
        hit = np.flatnonzero(np.asarray(pc.equal(self.names, name), dtype=bool))
        idx = np.full(self.n, -1, dtype=np.int64)
        idx[self.parents[hit]] = hit
        return self.values.take(pa.array(idx, mask=idx < 0))


class _TemplateProps:
    """Property strings that all share the layout of the first row, sliced as columns.

    A producer writes the same property names in the same order, often with values of the
    same widths (UNIQ_KEY is always 32 hex digits), so the property strings of a batch are
    frequently ``n`` strings of one width whose names and separators sit at the same
    places in every row. Then each value is a fixed-width column, and the parse of row 0
    (``MessageDecoder.string2messageProperties``, as in :class:`_Props`) is the parse of
    every row. :meth:`build` returns None when the rows do not share the layout.

    The strings are ``n`` items of ``width`` bytes at ``offset + k * stride`` of ``buffer``.
    """

    def __init__(self, buffer: Any, offset: int, stride: int, n: int) -> None:
        self.block_data = buffer
        self.offset = offset
        self.stride = stride
        self.n = n
        self.names: list[str] = []
        self.ranges: list[tuple[int, int]] = []
        self.values: Any = None

    def _where(self, column: int) -> dict[str, int]:
        return {"offset": self.offset + column, "stride": self.stride, "count": self.n}

    @classmethod
    def build(cls, buffer: Any, offset: int, stride: int, n: int, width: int) -> _TemplateProps | None:
        self = cls(buffer, offset, stride, n)
        block = np.ndarray((n, width), dtype=np.uint8, buffer=buffer, offset=offset, strides=(stride, 1))
        row0 = block[0].tobytes()
        entries: list[tuple[bytes, int, int]] = []  # (name, value start, value end)
        const = np.ones(width, dtype=bool)
        pos = 0
        for seg in row0.split(b"\x02"):
            cut = seg.find(b"\x01")
            if 0 < cut < len(seg) - 1:  # a name and a value: kept (else dropped, in every row)
                entries.append((seg[:cut], pos + cut + 1, pos + len(seg)))
                const[pos + cut + 1 : pos + len(seg)] = False
            pos += len(seg) + 1
        try:
            names = [name.decode() for name, _, _ in entries]
        except UnicodeDecodeError:
            return None
        # Same layout: every byte outside the values equals row 0's (names, separators,
        # dropped segments), and no value holds a \x02 (a \x01 inside a value is fine: the
        # name ends at the first one, which is in row 0's columns).
        edges = np.flatnonzero(np.diff(np.concatenate([[False], const, [False]]).astype(np.int8)))
        for a, b in zip(edges[::2].tolist(), edges[1::2].tolist(), strict=True):
            if not self._same_in_every_row(a, b):
                return None
        kept = _last_of_each(names)
        for j, (_, a, b) in enumerate(entries):
            if j not in kept and bool((block[:, a:b] == 2).any()):
                return None
        self.names = [names[j] for j in kept]
        self.ranges = [(entries[j][1], entries[j][2]) for j in kept]
        lengths = [b - a for a, b in self.ranges]
        # the kept values of a row back to back: one fixed-width item per row
        layout = np.dtype(
            {
                "names": [f"v{j}" for j in range(len(lengths))],
                "formats": [np.dtype((np.void, w)) for w in lengths],
                "offsets": np.cumsum([0, *lengths[:-1]]).tolist() if lengths else [],
                "itemsize": sum(lengths),
            }
        )
        values: Any = np.empty(n, dtype=layout) if lengths else np.zeros(0, dtype=np.uint8)
        for j, (a, b) in enumerate(self.ranges):
            values[f"v{j}"] = _strided(buffer, np.dtype((np.void, b - a)), **self._where(a))
        raw = values.tobytes()  # one copy: memchr and an ASCII scan beat element-wise compares
        if b"\x02" in raw:
            return None
        self.values = _entries(lengths, values, n)
        if not raw.isascii():  # ASCII is valid UTF-8; anything else is checked
            try:
                self.values.validate(full=True)
            except pa.ArrowInvalid:  # invalid UTF-8: the general path decodes with replacement
                return None
        return self

    def _same_in_every_row(self, a: int, b: int) -> bool:
        """Whether bytes ``[a, b)`` of every row equal row 0's: one strided column of 8-,
        4-, 2- or 1-byte words per word of the span (the last word may overlap the one
        before), not a 2-D comparison whose inner loop is a few bytes long."""
        length = b - a
        size = 8 if length >= 8 else 4 if length >= 4 else 2 if length >= 2 else 1
        word = np.dtype(f"u{size}")
        for at in [*range(a, b - size, size), b - size]:
            column = _strided(self.block_data, word, **self._where(at))
            if not bool((column == column[0]).all()):
                return False
        return True

    def map_array(self, map_type: Any) -> Any:
        return _same_names_map(self.names, self.values, self.n, map_type)

    def pick(self, name: str) -> Any:
        """The value of property ``name`` per row (null where absent)."""
        if name not in self.names:
            return pa.nulls(self.n, type=pa.string())
        a, b = self.ranges[self.names.index(name)]
        column = _strided(self.block_data, np.dtype((np.void, b - a)), **self._where(a))
        return _from_values(np.ascontiguousarray(column), self.n, b - a, pa.string(), checked=True)


class _OrderedProps:
    """Property strings whose rows all hold row 0's names in row 0's order, with values of
    any width (a producer's KEYS, or tags of different lengths).

    The property strings are gathered into one buffer, and the positions of every
    ``\x01``/``\x02`` in it are found at once. When every row has row 0's sequence of
    separators and the same bytes in each name, row 0's parse
    (``MessageDecoder.string2messageProperties``, as in :class:`_Props`) is every row's:
    the values are the slices between the separators, one column per name. :meth:`build`
    returns None when the rows do not share the layout (or hold invalid UTF-8), and the
    general :class:`_Props` decides.
    """

    def __init__(self, n: int, names: list[str], values: Any) -> None:
        self.n = n
        self.names = names
        self.values = values  # row-major: row r's values are [r * k, (r + 1) * k), k = len(names)

    @classmethod
    def build(cls, data: bytes, p_strs: I64, lens: I64, starts: I64, stride: int) -> _OrderedProps | None:
        n = len(p_strs)
        blob = _slices(data, p_strs, lens, pa.binary(), starts, stride)
        offsets = np.frombuffer(blob.buffers()[1], dtype=np.int32, count=n + 1).astype(np.int64)
        text = _padded(blob.buffers()[2])
        u8 = np.frombuffer(text, dtype=np.uint8, count=int(offsets[-1]))
        row0 = text[: offsets[1]]
        kinds = bytes(c for c in row0 if c in (1, 2))
        m = len(kinds)
        sep = np.flatnonzero((u8 == 1) | (u8 == 2))
        if len(sep) != n * m:
            return None
        grid = sep.reshape(n, m)  # sorted, so n groups of m; each must lie in its own row
        if m and not (
            bool(((grid[:, 0] >= offsets[:-1]) & (grid[:, -1] < offsets[1:])).all())
            and bool((u8[grid] == np.frombuffer(kinds, dtype=np.uint8)).all())
        ):
            return None
        # segments: between the row's edges and its \x02 separators; a name ends at the
        # segment's first \x01, its value runs to the segment's end
        cuts = [i for i, c in enumerate(kinds) if c == 2]
        bounds = [-1, *cuts, m]
        entries: list[tuple[bytes, I64, I64]] = []  # (name, value positions, value lengths)
        for lo, hi in itertools.pairwise(bounds):
            ones = [i for i in range(lo + 1, hi) if kinds[i] == 1]
            if not ones:
                continue  # no \x01 in row 0's segment, nor in any row's (same separators)
            seg_start = offsets[:-1] if lo < 0 else grid[:, lo] + 1
            seg_end = offsets[1:] if hi == m else grid[:, hi]
            cut = grid[:, ones[0]]
            name_len = cut - seg_start
            value_len = seg_end - cut - 1
            width = int(name_len[0])
            if width == 0 or int(value_len[0]) == 0:  # dropped in row 0: so in every row
                if not bool(((name_len == 0) | (value_len == 0)).all()):
                    return None
                continue
            if not (bool((name_len == width).all()) and bool((value_len > 0).all())):
                return None
            name = text[int(seg_start[0]) : int(cut[0])]
            if not bool((_gather(text, seg_start, np.dtype((np.void, width))) == np.void(name)).all()):
                return None
            entries.append((name, cut + 1, value_len))
        try:
            names = [name.decode() for name, _, _ in entries]
        except UnicodeDecodeError:
            return None
        kept = _last_of_each(names)
        k = len(kept)
        if k:
            pos = np.stack([entries[j][1] for j in kept], axis=1).ravel()
            length = np.stack([entries[j][2] for j in kept], axis=1).ravel()
            try:
                values = _slices(text, pos, length, pa.string(), pos, 0)
            except pa.ArrowInvalid:  # invalid UTF-8: the general path decodes with replacement
                return None
        else:
            values = pa.array([], type=pa.string())
        return cls(n, [names[j] for j in kept], values)

    def map_array(self, map_type: Any) -> Any:
        return _same_names_map(self.names, self.values, self.n, map_type)

    def pick(self, name: str) -> Any:
        """The value of property ``name`` per row (null where absent)."""
        if name not in self.names:
            return pa.nulls(self.n, type=pa.string())
        j = self.names.index(name)
        k = len(self.names)
        return self.values.take(pa.array(np.arange(j, self.n * k, k)))


def _padded(buffer: Any) -> bytes:
    """A binary array's data buffer (None when empty) copied once, with the read padding
    the views of :func:`_slices` need."""
    return b"".join([buffer or b"", _PAD])


def _last_of_each(names: Sequence[str]) -> list[int]:
    """Indexes of the pairs a row keeps: ``HashMap.put`` of them in order, so of a name
    given twice the later pair wins."""
    last = {name: j for j, name in enumerate(names)}
    return [j for j, name in enumerate(names) if last[name] == j]


def _same_names_map(names: list[str], values: Any, n: int, map_type: Any) -> Any:
    """The properties map when every row has ``names`` in this order and ``values`` holds
    the rows' values back to back."""
    k = len(names)
    encoded = [name.encode() for name in names]
    name_data = _repeated(b"".join(encoded), n) if k else b""
    keys = _entries([len(e) for e in encoded], name_data, n)
    return pa.MapArray.from_arrays(pa.array(_steps(k, n + 1)), keys, values, type=map_type)


def _repeated(value: bytes, n: int) -> npt.NDArray[np.uint8]:
    """``value`` ``n`` times over, as bytes."""
    one = np.frombuffer(value, dtype=np.uint8)
    return _prefixes.get(("repeat", value), n * len(value), lambda m: np.tile(one, -(-m // len(one)))[:m])


def _entry_offsets(lengths: tuple[int, ...], rows: int) -> npt.NDArray[np.int32]:
    k = len(lengths)
    ends = np.cumsum([0, *lengths]).astype(np.int32)
    offsets = np.empty(rows * k + 1, dtype=np.int32)
    offsets[:-1].reshape(rows, k)[:] = (np.arange(rows, dtype=np.int32) * ends[-1])[:, None] + ends[None, :-1]
    offsets[-1] = rows * ends[-1]
    return offsets


def _entries(lengths: list[int], data: Any, n: int) -> Any:
    """A string array of ``n`` rows of ``len(lengths)`` values each (row-major ``data``)."""
    k = len(lengths)
    if not k:
        return pa.array([], type=pa.string())
    key = tuple(lengths)
    offsets = _prefixes.get(("entries", key), n * k + 1, lambda m: _entry_offsets(key, (m - 1) // k))
    return pa.Array.from_buffers(pa.string(), n * k, [None, pa.py_buffer(offsets), pa.py_buffer(data)])


class _Exact:
    """The records decoded the slow exact way (:func:`decode_records`), at most once per batch:
    for compressed bodies, invalid UTF-8 and IPv6 hosts."""

    def __init__(self, data: bytes, end: int, n: int) -> None:
        self._data = data
        self._end = end
        self._n = n
        self._msgs: list[MessageExt] | None = None

    @property
    def msgs(self) -> list[MessageExt]:
        if self._msgs is None:
            msgs = decode_records(self._data[: self._end])
            if len(msgs) != self._n:  # pragma: no cover - both walks follow TOTALSIZE
                raise MalformedFrameError(f"record count mismatch: {len(msgs)} != {self._n}")
            self._msgs = msgs
        return self._msgs


def decode_batch(
    buf: bytes | Sequence[bytes],
    *,
    topic: str,
    broker: str,
    queue_id: int,
    tags: Sequence[str] | None = None,
    end_offset: int | None = None,
    properties: bool = True,
) -> Any:
    """Decode the records of one queue into a ``RecordBatch``.

    ``buf`` is the records (a pull body), or several pull bodies in queue order (joined
    here, once). ``topic``/``broker``/``queue_id`` fill the constant columns (a queue's
    records all belong to it). ``tags`` (a non-empty set of tag names) keeps only rows with
    one of those tags; ``end_offset`` keeps only rows whose queue offset is below it.
    ``properties=False`` leaves the ``properties`` column out (:func:`arrow_schema`).
    Raises :class:`MalformedFrameError` for a malformed body.
    """
    chunks = [buf] if isinstance(buf, bytes | bytearray | memoryview) else list(buf)
    data = b"".join([*chunks, _PAD])
    end = len(data) - len(_PAD)
    if not end:
        return empty_batch(properties=properties)
    try:
        return _decode(data, end, topic, broker, queue_id, tags, end_offset, properties)
    except (IndexError, ValueError) as exc:
        # a size walk that stayed inside the buffer but fields that do not: find the record
        decode_records(data[:end])
        raise MalformedFrameError(f"malformed records: {exc}") from exc


def _decode(
    data: bytes,
    end: int,
    topic: str,
    broker: str,
    queue_id: int,
    tags: Sequence[str] | None,
    end_offset: int | None,
    properties: bool,
) -> Any:
    starts, stride = _record_starts(data, end)
    n = len(starts)
    # The fixed IPv4 header of every record through one structured dtype: a strided view
    # when all records have one size, else one gather (every record has these 88 bytes).
    head = (
        _strided(data, _HEAD, stride=stride, count=n)
        if stride
        else _gather(data, starts, np.dtype((np.void, _HEAD_V4))).view(_HEAD)  # memcpy per row, then fields
    )
    magic = head["magic"]
    v2 = magic == MAGIC_CODE_V2
    if not ((magic == MAGIC_CODE_V1) | v2).all():
        bad = int(starts[np.flatnonzero((magic != MAGIC_CODE_V1) & ~v2)[0]])
        raise MalformedFrameError(f"record at {bad}: bad magic code")
    sysflag = head["sysflag"].astype(np.int64)
    born_v6 = (sysflag & _BORN_V6) != 0
    store_v6 = (sysflag & _STORE_V6) != 0
    any_v6 = bool(born_v6.any() or store_v6.any())
    queue_offset = head["queue_offset"].astype(np.int64)
    if not any_v6:
        store_ts = head["store_ts"]
        reconsume = head["reconsume"]
        body_len = head["body_len"].astype(np.int64)
        p_body = starts + _HEAD_V4
    else:  # MessageSysFlag BORNHOST_V6_FLAG / STOREHOSTADDRESS_V6_FLAG: 16-byte addresses
        p_store_ts = starts + 48 + np.where(born_v6, 20, 8)
        store_ts = _be(data, p_store_ts, ">i8")
        p_store_host = p_store_ts + 8
        p_recon = p_store_host + np.where(store_v6, 20, 8)
        reconsume = _be(data, p_recon, ">i4")
        p_body = p_recon + 16
        body_len = _be(data, p_body - 4, ">i4")
    p_topic = p_body + body_len
    ends = starts + (stride if stride else head["size"].astype(np.int64))
    if (body_len < 0).any() or (p_topic + 3 > ends).any():
        raise MalformedFrameError("a record's body length is inconsistent with its size")
    topic_byte = _gather(data, p_topic, np.uint8).astype(np.int64)
    if v2.any():  # 5.x MessageVersion V2: the topic length is a short
        topic_len = np.where(v2, _be(data, p_topic, ">u2"), topic_byte)
        p_props = p_topic + np.where(v2, 2, 1) + topic_len
    else:  # MessageDecoder.decode: a (signed) byte
        topic_len = topic_byte
        p_props = p_topic + 1 + topic_len
    if (topic_len > 127).any() and not v2.any():
        raise MalformedFrameError("a record has a negative topic length")
    if (p_props + 2 > ends).any():
        raise MalformedFrameError("a record's topic length is inconsistent with its size")
    props_len = _be(data, p_props, ">u2")
    if (p_props + 2 + props_len != ends).any():
        raise MalformedFrameError("a record's properties length is inconsistent with its size")

    exact = _Exact(data, end, n)
    compressed = (sysflag & _COMPRESSED) != 0
    prop_strs: list[str] | None = None
    if compressed.any():
        body = pa.array([m.body for m in exact.msgs], type=pa.binary())  # decompressed
        prop_strs = [m.stored_properties for m in exact.msgs]
    else:
        body = _slices(data, p_body, body_len, pa.binary(), starts, stride)

    parsed: _Props | _TemplateProps | _OrderedProps | None = None
    width = int(props_len[0]) if n else 0
    if prop_strs is None and n and width and int(props_len.min()) == int(props_len.max()):
        p_strs = p_props + 2
        if stride and (p_strs - starts == int(p_strs[0])).all():  # one place in every record
            parsed = _TemplateProps.build(data, int(p_strs[0]), stride, n, width)
        else:
            rows = _gather(data, p_strs, np.dtype((np.void, width)))
            parsed = _TemplateProps.build(rows, 0, width, n, width)
    elif prop_strs is None and n:
        parsed = _OrderedProps.build(data, p_props + 2, props_len, starts, stride)
    if parsed is None:
        if prop_strs is None:
            try:
                props = _slices(data, p_props + 2, props_len, pa.string(), starts, stride)
            except pa.ArrowInvalid:  # invalid UTF-8: decode with replacement like the codec
                prop_strs = [m.stored_properties for m in exact.msgs]
        if prop_strs is not None:
            props = pa.array(prop_strs, type=pa.string())
        parsed = _Props(props, n)

    uniq = parsed.pick(MessageConst.UNIQ_KEY)
    if uniq.null_count:
        if any_v6:
            offset_ids = pa.array([m.offset_msg_id for m in exact.msgs], type=pa.string())
        else:  # MessageDecoder.createMessageId: store host (address, port) + commit-log offset
            raw = np.empty((n, 2), dtype=">u8")
            raw[:, 0] = head["store_host"]
            raw[:, 1] = head["physical_offset"]
            offset_ids = _fixed_strings(raw.view(np.uint8).reshape(n, 16))
        msg_id = pc.coalesce(uniq, offset_ids)
    else:
        msg_id = uniq
    if any_v6:
        born_host = pa.array([f"{m.born_host[0]}:{m.born_host[1]}" for m in exact.msgs], type=pa.string())
    else:
        born_host = _hosts(head["born_host"])
    tag_col = parsed.pick(MessageConst.TAGS)
    schema = arrow_schema(properties=properties)
    columns = [
        _constant_string(topic, n),
        _constant_string(broker, n),
        pa.array(np.full(n, queue_id, dtype=np.int32)),
        pa.array(queue_offset),
        msg_id,
        parsed.pick(MessageConst.KEYS),
        tag_col,
        body,
        *([parsed.map_array(schema.field("properties").type)] if properties else []),
        _timestamps(head["born_ts"]),
        _timestamps(store_ts),
        born_host,
        pa.array(reconsume.astype(np.int32)),
    ]
    batch = pa.RecordBatch.from_arrays(columns, schema=schema)
    keep: Any = None
    if end_offset is not None and n and int(queue_offset[-1]) >= end_offset:
        keep = pa.array(queue_offset < end_offset)
    if tags:
        tag_mask = pc.fill_null(pc.is_in(tag_col, value_set=pa.array(list(tags), type=pa.string())), False)
        keep = tag_mask if keep is None else pc.and_(keep, tag_mask)
    if keep is not None:
        batch = batch.filter(keep)
    return batch
