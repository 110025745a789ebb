"""Column-wise decoding of pulled message records straight into Arrow record batches.

The Spark source's hot path. A PULL_MESSAGE body is a run of back-to-back stored records
(the layout of ``org.apache.rocketmq.store.CommitLog``, decoded one by one by Java's
``MessageDecoder.decodes`` and by :func:`rocketq.protocol.message.decode_records`). Here the
records of one queue are decoded *column-wise*: record boundaries are found with a
speculative fixed-stride scan (verified, so it is exact for any mix of sizes), every fixed
field is gathered for all records at once with numpy, and the variable fields (body,
properties) become Arrow ``binary_view`` arrays pointing into the pull body, cast once to
plain ``binary``/``string`` by Arrow's C++ kernels. Properties are split with Arrow compute
functions. No Python object is created per row except on rare paths (compressed bodies,
IPv6 hosts, invalid UTF-8), which fall back to :mod:`rocketq.protocol.message`.

Invariants:

* The output schema is :func:`arrow_schema` (the connector's read schema, see
  :data:`READ_COLUMNS`); it equals ``pyspark.sql.pandas.types.to_arrow_schema`` of the
  Spark schema in :mod:`rocketq.spark.schema` (a test holds the two together).
* Decoding is exactly :func:`~rocketq.protocol.message.decode_records` plus
  ``MessageClientExt.getMsgId`` (UNIQ_KEY, else the offsetMsgId) and Java's lenient
  property parsing (``MessageDecoder.string2messageProperties``: segments without a name
  or a value are dropped). A malformed body raises
  :class:`~rocketq.errors.MalformedFrameError`, never ``IndexError``.
* ``properties`` holds the stored properties only (not the MIN_OFFSET/MAX_OFFSET that
  ``PullAPIWrapper.processPullResult`` adds in memory). A name stored twice (never written
  by a Java or rocketq producer) appears twice in the map; ``tags``/``keys``/``msg_id``
  take the later one, as Java's ``HashMap`` does.
* The tag filter is the client-side re-check of ``PullAPIWrapper.processPullResult``: the
  broker compares only tag hash codes, so rows whose tag is not in the set are dropped here.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any, Final

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
from numpy.lib.stride_tricks import as_strided

from rocketq.errors import MalformedFrameError
from rocketq.protocol.message import (
    MAGIC_CODE_V1,
    MAGIC_CODE_V2,
    MessageConst,
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
_COMPRESSED: Final = 0x1
_BORN_V6: Final = 0x10
_STORE_V6: Final = 0x20
_INT: Final = struct.Struct(">i")
#: Row ``k``: twelve bytes, the first ``k`` of them 1 (keeps the inline bytes of a view).
_INLINE_MASK: Final = (np.arange(12)[None, :] < np.arange(13)[:, None]).astype(np.uint8)
_HEX: Final = np.frombuffer(b"".join(f"{i:02X}".encode() for i in range(256)), dtype=np.uint8).reshape(256, 2)

_schema_cache: list[Any] = []


def arrow_schema() -> Any:
    """The ``pyarrow.Schema`` of every batch (timestamps in microseconds, UTC)."""
    if not _schema_cache:
        arrow_types = {
            "string": pa.string(),
            "int": pa.int32(),
            "bigint": pa.int64(),
            "binary": pa.binary(),
            "timestamp": pa.timestamp("us", tz="UTC"),
            "map<string,string>": pa.map_(pa.string(), pa.field("value", pa.string(), nullable=False)),
        }
        _schema_cache.append(
            pa.schema([pa.field(name, arrow_types[kind], nullable=null) for name, kind, null in READ_COLUMNS])
        )
    return _schema_cache[0]


def empty_batch() -> Any:
    """A ``RecordBatch`` with the read schema and no rows."""
    schema = arrow_schema()
    return pa.RecordBatch.from_arrays([pa.array([], type=f.type) for f in schema], schema=schema)


# --------------------------------------------------------------------------- boundaries
def _rows(u8: npt.NDArray[np.uint8], pos: I64, width: int, *, pad: bool = False) -> npt.NDArray[np.uint8]:
    """``width`` bytes at every position as an ``(n, width)`` array (one gather).

    Uses a sliding-window view of the buffer; a position too close to the end raises
    ``IndexError``, or with ``pad=True`` reads zeros past the end.
    """
    size = len(u8)
    if pad and len(pos) and int(pos.max()) > size - width:
        # only the last few positions reach past the end: fix those rows from a padded tail
        near = np.flatnonzero(pos > size - width)
        out = _rows(u8, np.minimum(pos, max(size - width, 0)), width) if size >= width else None
        if out is None:
            out = np.zeros((len(pos), width), dtype=np.uint8)
        for i in near.tolist():
            chunk = u8[int(pos[i]) : int(pos[i]) + width]
            out[i] = 0
            out[i, : len(chunk)] = chunk
        return out
    if size < width:
        raise IndexError("buffer shorter than one field")
    return as_strided(u8, shape=(size - width + 1, width), strides=(1, 1))[pos]


def _col(head: npt.NDArray[np.uint8], start: int, stop: int, dtype: str) -> I64:
    """Big-endian integers from columns ``start:stop`` of a gathered header array."""
    return np.ascontiguousarray(head[:, start:stop]).view(dtype).ravel().astype(np.int64)


def _be(u8: npt.NDArray[np.uint8], pos: I64, width: int, dtype: str) -> I64:
    """Big-endian integers of ``width`` bytes at every position."""
    return _rows(u8, pos, width).view(dtype).ravel().astype(np.int64)


def _walk(buf: bytes) -> I64:
    """Record starts by following TOTALSIZE one record at a time (the exact, slow way)."""
    end = len(buf)
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


def record_starts(buf: bytes) -> I64:
    """Start offsets of the back-to-back records in ``buf``.

    Fast path: every record has MAGICCODE (``0xDAA320A7``, or the 5.x ``0xDAA320AB``) at
    byte 4, so the candidates are found with one vectorised byte scan; they are accepted
    only if they form the exact TOTALSIZE chain from 0 to the end (each candidate plus its
    size is the next candidate). Otherwise (a body that happens to contain the magic bytes,
    or a malformed buffer) the records are walked one by one, which raises
    :class:`MalformedFrameError` for a size that is too small or runs past the buffer.
    """
    end = len(buf)
    if end < 8:
        return _walk(buf)
    u8 = np.frombuffer(buf, dtype=np.uint8)
    hits = np.flatnonzero(u8[4 : end - 3] == 0xDA)
    if hits.size:
        ok = (u8[hits + 5] == 0xA3) & (u8[hits + 6] == 0x20)
        last = u8[hits + 7]
        cand: I64 = hits[ok & ((last == 0xA7) | (last == 0xAB))].astype(np.int64)
        if cand.size and cand[0] == 0:
            sizes = _be(u8, cand, 4, ">i4")
            nxt = cand + sizes
            if int(nxt[-1]) == end and (sizes >= _MIN_RECORD).all() and (nxt[:-1] == cand[1:]).all():
                return cand
    return _walk(buf)


# --------------------------------------------------------------------------- columns
def _views(u8: npt.NDArray[np.uint8], pos: I64, length: I64) -> Any:
    """An Arrow ``binary_view`` views buffer (16 bytes per value) for slices of buffer 0.

    Arrow view layout: int32 length, then the value inline (zero-padded) when it has at
    most 12 bytes, else a 4-byte prefix, the data-buffer index (0) and the int32 offset.
    """
    n = len(pos)
    views = np.zeros((n, 4), dtype="<i4")
    views[:, 0] = length
    if not n:
        return views
    head = _rows(u8, pos, 12, pad=True)
    head *= _INLINE_MASK[np.minimum(length, 12)]
    words = head.view("<i4")
    short = length <= 12
    views[:, 1] = words[:, 0]  # the inline bytes 0-3, or the prefix: the same bytes
    views[:, 2] = np.where(short, words[:, 1], 0)  # inline bytes 4-7, or buffer index 0
    views[:, 3] = np.where(short, words[:, 2], pos)  # inline bytes 8-11, or the offset
    return views


def _slices(buf_arrow: Any, u8: npt.NDArray[np.uint8], pos: I64, length: I64, out_type: Any) -> Any:
    """``out_type`` (binary or string) values ``buf[pos:pos+length]``: views, then one cast."""
    views = _views(u8, pos, length)
    arr = pa.Array.from_buffers(pa.binary_view(), len(pos), [None, pa.py_buffer(views), buf_arrow])
    return arr.cast(out_type)


def _fixed_strings(raw: npt.NDArray[np.uint8]) -> Any:
    """Uppercase hex of each row of ``raw`` (n x w bytes) as a string array."""
    n, w = raw.shape
    text = _HEX[raw].reshape(n, 2 * w)
    offsets = (np.arange(n + 1, dtype=np.int32) * (2 * w)).astype(np.int32)
    return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(text.tobytes())])


def _constant_string(value: str, n: int) -> Any:
    b = value.encode()
    offsets = np.arange(n + 1, dtype=np.int32) * len(b)
    return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(b * n)])


def _hosts(raw: npt.NDArray[np.uint8]) -> Any:
    """``"ip:port"`` strings of IPv4 host fields (rows of 4 address bytes + int port)."""
    keys = np.ascontiguousarray(raw).view(">u8").ravel()
    uniq, inverse = np.unique(keys, return_inverse=True)
    labels = []
    for key in uniq.tolist():
        b = int(key).to_bytes(8, "big")
        labels.append(f"{b[0]}.{b[1]}.{b[2]}.{b[3]}:{int.from_bytes(b[4:], 'big', signed=True)}")
    return pa.array(labels, type=pa.string()).take(pa.array(inverse.astype(np.int64).ravel()))


def _timestamps(ms: I64) -> Any:
    return pa.array(ms * 1000, type=pa.timestamp("us", tz="UTC"))


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
        data = bufs[2] if bufs[2] is not None else pa.py_buffer(b"")
        u8 = np.frombuffer(data, dtype=np.uint8)
        names = _slices(data, u8, seg_start, pos1, pa.string())
        values = _slices(data, u8, seg_start + pos1 + 1, seg_len - pos1 - 1, pa.string())
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


def _fallback(buf: bytes, n: int) -> tuple[list[bytes], list[str]]:
    """Bodies (decompressed) and property strings of every record, the slow exact way."""
    msgs = decode_records(buf)
    if len(msgs) != n:  # pragma: no cover - both walks follow TOTALSIZE
        raise MalformedFrameError(f"record count mismatch: {len(msgs)} != {n}")
    return [m.body for m in msgs], [m.stored_properties for m in msgs]


def decode_batch(
    buf: bytes,
    *,
    topic: str,
    broker: str,
    queue_id: int,
    tags: Sequence[str] | None = None,
    end_offset: int | None = None,
) -> Any:
    """Decode the records of one queue (concatenated pull bodies) into a ``RecordBatch``.

    ``topic``/``broker``/``queue_id`` fill the constant columns (a queue's records all
    belong to it). ``tags`` (a non-empty set of tag names) keeps only rows with one of those
    tags; ``end_offset`` keeps only rows whose queue offset is below it. Raises
    :class:`MalformedFrameError` for a malformed body.
    """
    if not buf:
        return empty_batch()
    try:
        return _decode(buf, topic, broker, queue_id, tags, end_offset)
    except (IndexError, ValueError) as exc:
        # a size walk that stayed inside the buffer but fields that do not: find the record
        decode_records(buf)
        raise MalformedFrameError(f"malformed records: {exc}") from exc


def _decode(
    buf: bytes, topic: str, broker: str, queue_id: int, tags: Sequence[str] | None, end_offset: int | None
) -> Any:
    starts = record_starts(buf)
    n = len(starts)
    u8 = np.frombuffer(buf, dtype=np.uint8)
    # One gather of the fixed IPv4 header (every record has at least these 88 bytes), then
    # column slices of that dense array: one pass over the records instead of one per field.
    head = _rows(u8, starts, _HEAD_V4)
    size = _col(head, 0, 4, ">i4")
    magic = _col(head, 4, 8, ">i4")
    v2 = magic == MAGIC_CODE_V2
    if not ((magic == MAGIC_CODE_V1) | v2).all():
        bad = int(starts[np.flatnonzero((magic != MAGIC_CODE_V1) & ~v2)[0]])
        raise MalformedFrameError(f"record at {bad}: bad magic code")
    sysflag = _col(head, 36, 40, ">i4")
    born_v6 = (sysflag & _BORN_V6) != 0
    store_v6 = (sysflag & _STORE_V6) != 0
    any_v6 = bool(born_v6.any() or store_v6.any())
    queue_offset = _col(head, 20, 28, ">i8")
    born_ts = _col(head, 40, 48, ">i8")
    if not any_v6:
        store_ts = _col(head, 56, 64, ">i8")
        reconsume = _col(head, 72, 76, ">i4")
        body_len = _col(head, 84, 88, ">i4")
        p_body = starts + _HEAD_V4
    else:  # MessageSysFlag BORNHOST_V6_FLAG / STOREHOSTADDRESS_V6_FLAG: 16-byte addresses
        p_store_ts = starts + 48 + np.where(born_v6, 20, 8)
        store_ts = _be(u8, p_store_ts, 8, ">i8")
        p_store_host = p_store_ts + 8
        p_recon = p_store_host + np.where(store_v6, 20, 8)
        reconsume = _be(u8, p_recon, 4, ">i4")
        p_body = p_recon + 16
        body_len = _be(u8, p_body - 4, 4, ">i4")
    p_topic = p_body + body_len
    ends = starts + size
    if (body_len < 0).any() or (p_topic + 3 > ends).any():
        raise MalformedFrameError("a record's body length is inconsistent with its size")
    if v2.any():  # 5.x MessageVersion V2: the topic length is a short
        topic_len = np.where(v2, _be(u8, p_topic, 2, ">u2"), u8[p_topic].astype(np.int64))
        p_props = p_topic + np.where(v2, 2, 1) + topic_len
    else:  # MessageDecoder.decode: a (signed) byte
        topic_len = u8[p_topic].astype(np.int64)
        p_props = p_topic + 1 + topic_len
    if (topic_len > 127).any() and not v2.any():
        raise MalformedFrameError("a record has a negative topic length")
    if (p_props + 2 > ends).any():
        raise MalformedFrameError("a record's topic length is inconsistent with its size")
    props_len = _be(u8, p_props, 2, ">u2")
    if (p_props + 2 + props_len != ends).any():
        raise MalformedFrameError("a record's properties length is inconsistent with its size")

    buf_arrow = pa.py_buffer(buf)
    compressed = (sysflag & _COMPRESSED) != 0
    props: Any = None
    body: Any = None
    if compressed.any():
        bodies, prop_strs = _fallback(buf, n)
        body = pa.array(bodies, type=pa.binary())
        props = pa.array(prop_strs, type=pa.string())
    else:
        body = _slices(buf_arrow, u8, p_body, body_len, pa.binary())
    if props is None:
        try:
            props = _slices(buf_arrow, u8, p_props + 2, props_len, pa.string())
        except pa.ArrowInvalid:  # invalid UTF-8: decode with replacement like the codec
            props = pa.array(_fallback(buf, n)[1], type=pa.string())

    parsed = _Props(props, n)
    uniq = parsed.pick(MessageConst.UNIQ_KEY)
    if uniq.null_count:
        if any_v6:
            msgs = decode_records(buf)
            offset_ids = pa.array([m.offset_msg_id for m in msgs], type=pa.string())
        else:
            raw = np.concatenate([head[:, 64:72], head[:, 28:36]], axis=1)
            offset_ids = _fixed_strings(raw)
        msg_id = pc.coalesce(uniq, offset_ids)
    else:
        msg_id = uniq
    if any_v6:
        msgs = decode_records(buf)
        born_host = pa.array([f"{m.born_host[0]}:{m.born_host[1]}" for m in msgs], type=pa.string())
    else:
        born_host = _hosts(head[:, 48:56])
    tag_col = parsed.pick(MessageConst.TAGS)
    schema = arrow_schema()
    batch = pa.RecordBatch.from_arrays(
        [
            _constant_string(topic, n),
            _constant_string(broker, n),
            pa.array(np.full(n, queue_id, dtype=np.int32)),
            pa.array(queue_offset),
            msg_id,
            parsed.pick(MessageConst.KEYS),
            tag_col,
            body,
            parsed.map_array(schema.field("properties").type),
            _timestamps(born_ts),
            _timestamps(store_ts),
            born_host,
            pa.array(reconsume.astype(np.int32)),
        ],
        schema=schema,
    )
    keep: Any = None
    if end_offset is not None and n and int(queue_offset[-1]) >= end_offset:
        keep = pa.array(queue_offset < end_offset)
    if tags:
        tag_mask = pc.fill_null(pc.is_in(tag_col, value_set=pa.array(list(tags), type=pa.string())), False)
        keep = tag_mask if keep is None else pc.and_(keep, tag_mask)
    if keep is not None:
        batch = batch.filter(keep)
    return batch
