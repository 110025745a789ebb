"""The message index: ``<root>/index/<yyyyMMddHHmmssSSS>`` hash files for key lookups.

Mirrors ``org.apache.rocketmq.store.index.IndexFile``, ``IndexHeader`` and ``IndexService``
(4.9.7), file format byte for byte:

* header (40 bytes): beginTimestamp, endTimestamp, beginPhyOffset, endPhyOffset (longs),
  hashSlotCount, indexCount (ints; indexCount starts at 1, entry 0 is never used);
* ``max_hash_slot_num`` slots of 4 bytes: the number of the newest entry in that slot;
* ``max_index_num`` entries of 20 bytes: keyHash (int), phyOffset (long), timeDiff
  (int, seconds since beginTimestamp), prevIndex (int, the older entry of the slot).

Index keys are ``topic#key`` for every KEYS entry and the UNIQ_KEY; the hash is
``abs(String.hashCode)`` (``Integer.MIN_VALUE`` -> 0), the slot ``hash % slots``.

Invariants: entries are appended in commit-log order (under the store's append lock), so
``end_phy_offset`` is the last record indexed and crash recovery can cut a file back to
the entries below the commit log's valid end (``IndexFile.rollback_to``, a rocketq
addition that keeps recovery from having to rebuild whole files). Queries read the files
without the append lock: a slot value beyond the published count is ignored.
"""

from __future__ import annotations

import logging
import os
import struct
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Final

from rocketq.broker.store.mapped_file import MappedFile
from rocketq.common.log_limiter import LogLimiter
from rocketq.protocol.java import ascii_hash, string_hash
from rocketq.protocol.message import MessageConst

__all__ = [
    "IndexFile",
    "IndexService",
    "index_file_name",
    "index_key_hash",
    "index_key_hashes",
    "uniq_key_hash",
]

_log = logging.getLogger("rocketq.broker.store")
_INDEX_LOG = LogLimiter(_log)

INDEX_HEADER_SIZE = 40
HASH_SLOT_SIZE = 4
INDEX_SIZE = 20
INVALID_INDEX = 0

_HEADER = struct.Struct(">qqqqii")
_ENTRY = struct.Struct(">iqii")
_INT = struct.Struct(">i")
# the put path's methods bound once: a compiled call on a module-level Struct looks its
# method up on every call
_pack_entry: Final = _ENTRY.pack_into
_pack_int: Final = _INT.pack_into
_unpack_int: Final = _INT.unpack_from


def _index_hash(h: int) -> int:
    # IndexFile.indexKeyHashMethod: abs() of the signed hash, Integer.MIN_VALUE -> 0.
    if h & 0x80000000:
        h = 0x100000000 - h
        return 0 if h == 0x80000000 else h
    return h


def index_key_hash(key: str) -> int:
    """``IndexFile.indexKeyHashMethod``: ``abs(key.hashCode())``, with Integer.MIN_VALUE -> 0."""
    return _index_hash(string_hash(key) & 0xFFFFFFFF)


#: A UNIQ_KEY (``MessageClientIDSetter.createUniqID``) is a fixed per-producer prefix (ip,
#: pid, class-loader hash) then 12 hex digits (time diff, counter) that change per message.
_UNIQ_TAIL = 12
_PREFIX_CACHE_MAX = 4096
#: hash of "topic#" + fixed UNIQ_KEY prefix, by (topic, prefix); bounded, cleared when full.
_uniq_prefix_hashes: dict[tuple[str, str], int] = {}


class _LastPrefix:
    """The (topic, UNIQ_KEY prefix, its hash) looked up last, as one tuple (read and replaced
    whole, so threads putting at once never see one entry's topic with another's hash):
    a run of messages from one producer to one topic skips the slice, the tuple key and the
    dict lookup."""

    entry: tuple[str, str, int] = ("", "", 0)


_last_prefix = _LastPrefix()


def uniq_key_hash(topic: str, uniq: str) -> int:
    """``index_key_hash(f"{topic}#{uniq}")``, the hash of the per-message fixed part cached.

    ``hashCode(a + b)`` is Horner's rule over ``b`` started from ``hashCode(a)`` (mod
    2^32): only the 12-digit tail is hashed per message once a producer's prefix is known.
    """
    if len(uniq) <= _UNIQ_TAIL or not uniq.isascii() or not topic.isascii():
        return index_key_hash(f"{topic}#{uniq}")
    cut = len(uniq) - _UNIQ_TAIL
    last = _last_prefix.entry
    prefix = last[1]
    if len(prefix) == cut and last[0] == topic and uniq.startswith(prefix):
        head = last[2]
    else:
        prefix = uniq[:cut]
        key = (topic, prefix)
        cached = _uniq_prefix_hashes.get(key)
        if cached is None:
            if len(_uniq_prefix_hashes) >= _PREFIX_CACHE_MAX:
                _uniq_prefix_hashes.clear()
            cached = _uniq_prefix_hashes[key] = ascii_hash(f"{topic}#{prefix}".encode())
        head = cached
        _last_prefix.entry = (topic, prefix, head)
    return _index_hash(ascii_hash(uniq[cut:].encode(), head))


def index_key_hashes(topic: str, properties: Mapping[str, str]) -> list[int]:
    """Hashes of the index keys of one message, in ``IndexService.buildIndex`` order:
    ``topic#UNIQ_KEY`` then ``topic#k`` for each non-empty space-separated KEYS entry."""
    out = []
    uniq = properties.get(MessageConst.UNIQ_KEY)
    if uniq is not None:
        out.append(uniq_key_hash(topic, uniq))
    keys = properties.get(MessageConst.KEYS)
    if keys:
        for key in keys.split(MessageConst.KEY_SEPARATOR):
            if key:
                out.append(index_key_hash(f"{topic}#{key}"))
    return out


def index_file_name(ms: int) -> str:
    """``UtilAll.timeMillisToHumanString``: local time as ``yyyyMMddHHmmssSSS``."""
    return time.strftime("%Y%m%d%H%M%S", time.localtime(ms / 1000)) + f"{ms % 1000:03d}"


class IndexFile:
    """One index file (``IndexFile`` + ``IndexHeader``)."""

    def __init__(
        self,
        path: str,
        hash_slot_num: int,
        index_num: int,
        end_phy_offset: int = 0,
        end_timestamp: int = 0,
    ) -> None:
        self.hash_slot_num = hash_slot_num
        self.index_num = index_num
        size = INDEX_HEADER_SIZE + hash_slot_num * HASH_SLOT_SIZE + index_num * INDEX_SIZE
        # MappedFile wants a numeric name; the index is named by time, which is numeric too.
        self.file = MappedFile(path, size, keep_fd=False)
        self.file.set_positions(size)
        self._entries_base = INDEX_HEADER_SIZE + hash_slot_num * HASH_SLOT_SIZE
        self.begin_timestamp = 0
        self.end_timestamp = 0
        self.begin_phy_offset = 0
        self.end_phy_offset = 0
        self.hash_slot_count = 0
        self.index_count = 1
        if end_phy_offset > 0:
            self.begin_phy_offset = self.end_phy_offset = end_phy_offset
        if end_timestamp > 0:
            self.begin_timestamp = self.end_timestamp = end_timestamp
        self._dirty = True

    @property
    def path(self) -> str:
        return self.file.path

    def load(self) -> None:
        """``IndexHeader.load``."""
        (
            self.begin_timestamp,
            self.end_timestamp,
            self.begin_phy_offset,
            self.end_phy_offset,
            self.hash_slot_count,
            self.index_count,
        ) = _HEADER.unpack_from(self.file.mm, 0)
        self.index_count = max(self.index_count, 1)
        self._dirty = False

    def write_header(self) -> None:
        """Write the in-memory header values to the file's first 40 bytes."""
        _HEADER.pack_into(
            self.file.mm,
            0,
            self.begin_timestamp,
            self.end_timestamp,
            self.begin_phy_offset,
            self.end_phy_offset,
            self.hash_slot_count,
            self.index_count,
        )

    @property
    def is_write_full(self) -> bool:
        return self.index_count >= self.index_num

    def put_key(
        self, key_hash: int, phy_offset: int, store_timestamp: int, *, write_header: bool = True
    ) -> bool:
        """``IndexFile.putKey``; False when the file is full.

        ``write_header=False`` leaves the mapped header to :meth:`write_header` (one write
        for a batch of keys; the in-memory counts are up to date either way)."""
        count = self.index_count
        if count >= self.index_num:
            return False
        mm = self.file.mm
        abs_slot = INDEX_HEADER_SIZE + (key_hash % self.hash_slot_num) * HASH_SLOT_SIZE
        slot_value: int = _unpack_int(mm, abs_slot)[0]
        if slot_value <= INVALID_INDEX or slot_value > count:
            slot_value = INVALID_INDEX
        if self.begin_timestamp <= 0:
            time_diff = 0
        else:
            # Java: (store - begin) / 1000 on longs (truncates), clamped to [0, MAX_INT]
            delta = store_timestamp - self.begin_timestamp
            time_diff = 0 if delta < 0 else min(delta // 1000, 0x7FFFFFFF)
        _pack_entry(mm, self._entries_base + count * INDEX_SIZE, key_hash, phy_offset, time_diff, slot_value)
        _pack_int(mm, abs_slot, count)
        if count <= 1:
            self.begin_phy_offset = phy_offset
            self.begin_timestamp = store_timestamp
        if slot_value == INVALID_INDEX:
            self.hash_slot_count += 1
        self.index_count = count + 1
        self.end_phy_offset = phy_offset
        self.end_timestamp = store_timestamp
        if write_header:
            self.write_header()
        self._dirty = True
        return True

    def is_time_matched(self, begin: int, end: int) -> bool:
        """``IndexFile.isTimeMatched``."""
        b, e = self.begin_timestamp, self.end_timestamp
        return (begin < b and end > e) or (b <= begin <= e) or (b <= end <= e)

    def select_phy_offsets(self, out: list[int], key_hash: int, max_num: int, begin: int, end: int) -> None:
        """``IndexFile.selectPhyOffset``: walk the slot's chain, newest first."""
        count = self.index_count
        if count <= 1:
            return
        mm = self.file.mm
        next_index = _INT.unpack_from(
            mm, INDEX_HEADER_SIZE + (key_hash % self.hash_slot_num) * HASH_SLOT_SIZE
        )[0]
        if next_index <= INVALID_INDEX or next_index > count:
            return
        while len(out) < max_num:
            hash_read, phy_read, time_diff, prev = _ENTRY.unpack_from(
                mm, self._entries_base + next_index * INDEX_SIZE
            )
            if time_diff < 0:
                break
            time_read = self.begin_timestamp + time_diff * 1000
            if hash_read == key_hash and begin <= time_read <= end:
                out.append(phy_read)
            if prev <= INVALID_INDEX or prev > count or prev == next_index or time_read < begin:
                break
            next_index = prev

    def rollback_to(self, valid_end: int, store_time_of: Callable[[int], int]) -> None:
        """Forget the entries pointing at or past commit-log offset ``valid_end``, restoring
        the slots they had replaced (newest first, so each slot gets back its older
        entry). Entries ascend by offset, so the cut is found by bisection. rocketq
        recovery helper; Java drops the whole file instead."""
        mm = self.file.mm
        count = self.index_count
        base = self._entries_base

        def phy_at(i: int) -> int:
            value: int = _ENTRY.unpack_from(mm, base + i * INDEX_SIZE)[1]
            return value

        lo, hi = 1, count
        while lo < hi:
            mid = (lo + hi) // 2
            if phy_at(mid) < valid_end:
                lo = mid + 1
            else:
                hi = mid
        keep = lo
        if keep >= count:
            return
        for i in range(count - 1, keep - 1, -1):
            pos = base + i * INDEX_SIZE
            key_hash, _phy, _diff, prev = _ENTRY.unpack_from(mm, pos)
            abs_slot = INDEX_HEADER_SIZE + (key_hash % self.hash_slot_num) * HASH_SLOT_SIZE
            if _INT.unpack_from(mm, abs_slot)[0] == i:
                # newest first: a prev that is dropped too is unwound when its turn comes
                restored = prev if 0 < prev < i else INVALID_INDEX
                _INT.pack_into(mm, abs_slot, restored)
                if restored == INVALID_INDEX:
                    self.hash_slot_count = max(0, self.hash_slot_count - 1)
            _ENTRY.pack_into(mm, pos, 0, 0, 0, 0)
        self.index_count = keep
        if keep > 1:
            self.end_phy_offset = phy_at(keep - 1)
            store_time = store_time_of(self.end_phy_offset)
            if store_time > 0:
                self.end_timestamp = store_time
        else:
            self.end_phy_offset = self.begin_phy_offset
            self.end_timestamp = self.begin_timestamp
        self.write_header()
        self._dirty = True

    def flush(self) -> None:
        """``IndexFile.flush``: header then msync."""
        if self._dirty:
            self._dirty = False
            self.write_header()
            self.file.sync()

    def close(self) -> None:
        self.file.close()

    def destroy(self) -> bool:
        return self.file.destroy()


class IndexService:
    """The list of index files (``IndexService``)."""

    def __init__(
        self,
        store_path: str,
        hash_slot_num: int,
        index_num: int,
        max_msgs_num_batch: int,
        clock_ms: Callable[[], int],
    ) -> None:
        self.store_path = store_path
        self.hash_slot_num = hash_slot_num
        self.index_num = index_num
        self.max_msgs_num_batch = max_msgs_num_batch
        self._clock_ms = clock_ms
        self._lock = threading.Lock()
        #: Snapshot list, oldest first; replaced on change.
        self.files: list[IndexFile] = []
        #: Commit-log offset of the last record indexed (re-dispatch skips up to it).
        self.last_indexed_offset = -1

    def load(self) -> None:
        if not os.path.isdir(self.store_path):
            return
        files = []
        for name in sorted(os.listdir(self.store_path)):
            if not (name.isdigit() and len(name) == 17):
                continue
            f = IndexFile(os.path.join(self.store_path, name), self.hash_slot_num, self.index_num)
            f.load()
            files.append(f)
        self.files = files
        self._refresh_last_indexed()

    def _refresh_last_indexed(self) -> None:
        self.last_indexed_offset = -1
        for f in reversed(self.files):
            if f.index_count > 1:
                self.last_indexed_offset = f.end_phy_offset
                break

    def rollback_to(self, valid_end: int, store_time_of: Callable[[int], int]) -> None:
        """Recovery: drop index entries pointing at or past ``valid_end`` (newest files
        first, stopping at the first file that keeps entries)."""
        for f in reversed(self.files):
            if f.index_count > 1 and f.end_phy_offset < valid_end:
                break
            f.rollback_to(valid_end, store_time_of)
            if f.index_count > 1:
                break
        self._refresh_last_indexed()

    # -- writing (caller holds the append lock) -----------------------------------------

    def _last_writable(self) -> IndexFile | None:
        files = self.files
        if files and not files[-1].is_write_full:
            return files[-1]
        end_phy = end_ts = 0
        if files:  # the full file is flushed by the periodic logics flush, not here
            end_phy, end_ts = files[-1].end_phy_offset, files[-1].end_timestamp
        os.makedirs(self.store_path, exist_ok=True)
        ms = self._clock_ms()
        path = os.path.join(self.store_path, index_file_name(ms))
        while os.path.exists(path) or any(f.path == path for f in files):
            ms += 1
            path = os.path.join(self.store_path, index_file_name(ms))
        try:
            f = IndexFile(path, self.hash_slot_num, self.index_num, end_phy, end_ts)
        except OSError as exc:
            # a full disk fails every put in a row: one line per 10 s (the put goes on, unindexed)
            _INDEX_LOG.log(logging.ERROR, "create", "cannot create index file %s: %s", path, exc)
            return None
        with self._lock:
            self.files = [*self.files, f]
        return f

    def build_index(self, key_hashes: Sequence[int], phy_offset: int, store_timestamp: int) -> None:
        """``IndexService.buildIndex`` for one record: one entry per key hash.

        Records at or before ``last_indexed_offset`` are skipped (re-dispatch); the
        caller leaves out rolled-back transactional messages.
        """
        self.build_index_batch(((key_hashes, phy_offset, store_timestamp),))

    def build_index_batch(self, records: Iterable[tuple[Sequence[int], int, int]]) -> None:
        """:meth:`build_index` for consecutive records ``(key hashes, phy offset, store
        time)``, each file's header written once at the end."""
        f: IndexFile | None = None
        touched: list[IndexFile] = []
        for key_hashes, phy_offset, store_timestamp in records:
            if phy_offset <= self.last_indexed_offset:
                continue
            self.last_indexed_offset = phy_offset
            for key_hash in key_hashes:
                if f is None or not f.put_key(key_hash, phy_offset, store_timestamp, write_header=False):
                    f = self._last_writable()
                    if f is None or not f.put_key(key_hash, phy_offset, store_timestamp, write_header=False):
                        f = None
                        break
                    if not touched or touched[-1] is not f:
                        touched.append(f)
        for written in touched:
            written.write_header()

    # -- reading ------------------------------------------------------------------------

    def query_offsets(
        self, topic: str, key: str, max_num: int, begin: int, end: int
    ) -> tuple[list[int], int, int]:
        """``IndexService.queryOffset``: commit-log offsets of ``topic#key`` stored within
        [begin, end], newest files first; plus the newest file's end timestamp and offset."""
        offsets: list[int] = []
        last_ts = last_phy = 0
        max_num = min(max_num, self.max_msgs_num_batch)
        key_hash = index_key_hash(f"{topic}#{key}")
        files = self.files
        for i in range(len(files) - 1, -1, -1):
            f = files[i]
            if i == len(files) - 1:
                last_ts, last_phy = f.end_timestamp, f.end_phy_offset
            if f.is_time_matched(begin, end):
                f.select_phy_offsets(offsets, key_hash, max_num, begin, end)
            if f.begin_timestamp < begin or len(offsets) >= max_num:
                break
        return offsets, last_ts, last_phy

    # -- retention / durability ---------------------------------------------------------

    def delete_expired_file(self, min_phy_offset: int) -> int:
        """``IndexService.deleteExpiredFile``: delete leading files (never the last) whose
        entries all point before ``min_phy_offset``."""
        files = self.files
        doomed = []
        for f in files[:-1]:
            if f.end_phy_offset < min_phy_offset:
                doomed.append(f)
            else:
                break
        if not doomed:
            return 0
        with self._lock:
            self.files = [f for f in self.files if f not in doomed]
        for f in doomed:
            f.destroy()
        return len(doomed)

    def flush(self) -> int:
        """Flush every file; returns the end timestamp now durable (0 if none)."""
        files = self.files
        for f in files:
            f.flush()
        return files[-1].end_timestamp if files else 0

    def flush_full(self) -> int:
        """Flush the full files not flushed yet (``IndexService.flush`` of the file a roll left
        behind); the file being written is left to the page cache. Returns the end timestamp
        of the newest full file, now durable (0 if none is full)."""
        end = 0
        for f in self.files:
            if not f.is_write_full:
                break  # only the last file is ever being written
            f.flush()  # a no-op once it was flushed
            end = f.end_timestamp
        return end

    def close(self) -> None:
        for f in self.files:
            f.close()

    def destroy(self) -> None:
        with self._lock:
            files, self.files = self.files, []
        for f in files:
            f.destroy()
        self.last_indexed_offset = -1
