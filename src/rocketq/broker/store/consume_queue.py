"""``ConsumeQueue``: the per topic-queue index of commit-log positions.

Mirrors ``org.apache.rocketmq.store.ConsumeQueue`` (4.9.7). Files live in
``<root>/consumequeue/<topic>/<queueId>/<20-digit start>``; logical offset *n* is the 20-byte
unit at byte ``n * 20``: commit-log offset (long), record size (int), tagsCode (long), all
big-endian. tagsCode is the Java ``String.hashCode`` of TAGS, or the delivery time for
``SCHEDULE_TOPIC_XXXX``.

Invariants:

* Units are appended in commit-log order (dispatch runs under the store's append lock), so
  ``max_physic_offset`` is the end of the last record referenced and a unit whose record
  ends at or before it is a duplicate (``putMessagePositionInfo`` skips it).
* A queue whose first file is created at a non-zero offset is padded with "pre-blank"
  units {0, Integer.MAX_VALUE, 0} (``fillPreBlank``) and ``min_logic_offset`` starts
  after them.
* ``min_logic_offset`` (bytes) moves forward when retention removes commit-log files
  (``correctMinOffset``); units below it are never served.
"""

from __future__ import annotations

import logging
import os
import struct
from collections.abc import Callable, Sequence

from rocketq.broker.store.config import CQ_STORE_UNIT_SIZE
from rocketq.broker.store.mapped_file import MappedFile, MappedFileQueue

__all__ = ["ConsumeQueue"]

_log = logging.getLogger("rocketq.broker.store")

_UNIT = struct.Struct(">qiq")
_PRE_BLANK = _UNIT.pack(0, 0x7FFFFFFF, 0)  # ConsumeQueue.fillPreBlank


class ConsumeQueue:
    """The consume queue of one (topic, queueId)."""

    def __init__(self, topic: str, queue_id: int, root_dir: str, mapped_file_size: int) -> None:
        self.topic = topic
        self.queue_id = queue_id
        self.mapped_file_size = mapped_file_size
        self.queue = MappedFileQueue(
            os.path.join(root_dir, topic, str(queue_id)), mapped_file_size, keep_fd=False
        )
        #: End (offset + size) of the last record referenced; -1 when empty.
        self.max_physic_offset = -1
        #: First servable unit, in bytes (``minLogicOffset``).
        self.min_logic_offset = 0

    # -- load / recovery ----------------------------------------------------------------

    def load(self) -> None:
        self.queue.load()

    def recover(self) -> None:
        """``ConsumeQueue.recover``: find the end of the valid units (scanning from the third
        file from the end) and cut everything after it."""
        files = self.queue.files
        if not files:
            return
        size = self.mapped_file_size
        index = max(0, len(files) - 3)
        process_offset = files[index].file_from_offset
        while True:
            mf = files[index]
            valid = 0
            for offset, msg_size, _tags in _UNIT.iter_unpack(mf.view[:size]):
                if offset >= 0 and msg_size > 0:
                    valid += CQ_STORE_UNIT_SIZE
                    self.max_physic_offset = offset + msg_size
                else:
                    break
            process_offset = mf.file_from_offset + valid
            if valid == size and index + 1 < len(files):
                index += 1
                continue
            break
        self.queue.flushed_where = process_offset
        self.queue.truncate_dirty_files(process_offset)

    def truncate_dirty_logic_files(self, phy_offset: int) -> None:
        """``truncateDirtyLogicFiles``: drop every unit pointing at or past ``phy_offset``."""
        self.max_physic_offset = -1
        while True:
            mf = self.queue.last_file()
            if mf is None:
                return
            first = _UNIT.unpack_from(mf.view, 0)
            if mf.wrote_position == 0 or first[0] >= phy_offset:
                self.queue.delete_last_file()
                continue
            pos = 0
            for offset, msg_size, _tags in _UNIT.iter_unpack(mf.view[: mf.wrote_position]):
                if offset < 0 or msg_size <= 0 or offset >= phy_offset:
                    break
                self.max_physic_offset = offset + msg_size
                pos += CQ_STORE_UNIT_SIZE
            self.queue.truncate_dirty_files(mf.file_from_offset + pos)
            return

    def correct_min_offset(self, phy_min_offset: int) -> None:
        """``correctMinOffset``: the first unit of the first file that points at or after the
        commit log's minimum becomes the queue's minimum."""
        mf = self.queue.first_file()
        if mf is None:
            return
        data = mf.select_from(0)
        if data is None:
            return
        for i, (offset, _size, _tags) in enumerate(_UNIT.iter_unpack(data[: len(data) - len(data) % 20])):
            if offset >= phy_min_offset:
                self.min_logic_offset = mf.file_from_offset + i * CQ_STORE_UNIT_SIZE
                return

    # -- writing ------------------------------------------------------------------------

    def reserve(self, cq_offset: int, count: int, store_timestamp: int | None) -> None:
        """Make sure ``count`` units from logical offset ``cq_offset`` can be written
        without creating a file then: the file they start in (and, when they run past its
        end, the next one) is created and allocated now. Called under the append lock
        *before* the commit log is written, so a full disk refuses the put instead of
        leaving a record without its unit. Raises ``OSError`` (ENOSPC)."""
        mf = self.queue.last_file()
        if mf is None or mf.is_full:
            mf = self._new_file(cq_offset * CQ_STORE_UNIT_SIZE, cq_offset, store_timestamp)
        if mf.file_size - mf.wrote_position < count * CQ_STORE_UNIT_SIZE:
            self.queue.prepare_next_file(store_timestamp)

    def _new_file(self, expect: int, cq_offset: int, store_timestamp: int | None) -> MappedFile:
        mf = self.queue.create_next_file(expect, store_timestamp)
        if mf.first_create_in_queue and cq_offset != 0 and mf.wrote_position == 0:
            # ConsumeQueue.putMessagePositionInfo: a queue (re)starting past 0 keeps its
            # numbering by padding the new file with pre-blank units.
            self.min_logic_offset = expect
            self.queue.flushed_where = expect
            for _ in range(expect % self.mapped_file_size // CQ_STORE_UNIT_SIZE):
                mf.append(_PRE_BLANK)
        return mf

    def put(self, offset: int, size: int, tags_code: int, cq_offset: int, store_timestamp: int) -> None:
        """``putMessagePositionInfo``: append the unit for logical offset ``cq_offset``.

        A unit already present (recovery re-dispatch, a duplicate) is left as it is. Caller
        holds the append lock.
        """
        if offset + size <= self.max_physic_offset:
            return  # already dispatched (recovery re-dispatch)
        expect = cq_offset * CQ_STORE_UNIT_SIZE
        mf = self.queue.last_file()
        if mf is None or mf.is_full:
            mf = self._new_file(expect, cq_offset, store_timestamp)
        if cq_offset != 0:
            current = mf.file_from_offset + mf.wrote_position
            if expect < current:
                return  # duplicate unit: Java logs and ignores it
            if expect != current:
                _log.warning(
                    "[BUG] logic queue order maybe wrong %s-%d: expect %d, current %d",
                    self.topic,
                    self.queue_id,
                    expect,
                    current,
                )
        pos = mf.wrote_position
        _UNIT.pack_into(mf.mm, pos, offset, size, tags_code)
        mf.wrote_position = pos + CQ_STORE_UNIT_SIZE
        mf.last_modified_ms = store_timestamp
        self.max_physic_offset = offset + size

    def put_many(
        self, units: Sequence[tuple[int, int, int]], first_cq_offset: int, store_timestamp: int
    ) -> None:
        """:meth:`put` for consecutive logical offsets from ``first_cq_offset``: units
        ``(commit-log offset, size, tagsCode)`` in order. Caller holds the append lock.

        The first unit goes through :meth:`put` (file creation, pre-blank padding, order
        checks); the rest are packed together and written at once when they fit the same
        file right after it, and one by one through :meth:`put` otherwise.
        """
        if not units:
            return
        offset, size, tags = units[0]
        self.put(offset, size, tags, first_cq_offset, store_timestamp)
        rest = len(units) - 1
        if not rest:
            return
        mf = self.queue.last_file()
        nbytes = rest * CQ_STORE_UNIT_SIZE
        if (
            mf is None
            or mf.file_from_offset + mf.wrote_position != (first_cq_offset + 1) * CQ_STORE_UNIT_SIZE
            or mf.wrote_position + nbytes > mf.file_size
            or units[1][0] + units[1][1] <= self.max_physic_offset
        ):
            for i in range(1, len(units)):
                offset, size, tags = units[i]
                self.put(offset, size, tags, first_cq_offset + i, store_timestamp)
            return
        # one pack of all the rest (struct caches the compiled format itself)
        struct.pack_into(
            ">" + "qiq" * rest, mf.mm, mf.wrote_position, *[v for unit in units[1:] for v in unit]
        )
        pos = mf.wrote_position
        mf.wrote_position = pos + nbytes
        mf.last_modified_ms = store_timestamp
        last = units[-1]
        self.max_physic_offset = last[0] + last[1]

    # -- reading ------------------------------------------------------------------------

    def get_index_buffer(self, start_index: int) -> memoryview | None:
        """``getIndexBuffer``: units from ``start_index`` to the end of the written part of
        the file that holds it (never across files); None below the minimum or if absent."""
        offset = start_index * CQ_STORE_UNIT_SIZE
        if offset < self.min_logic_offset:
            return None
        mf = self.queue.find_by_offset(offset)
        if mf is None:
            return None
        return mf.select_from(offset % self.mapped_file_size)

    def get_unit(self, index: int) -> tuple[int, int, int] | None:
        """(commit-log offset, size, tagsCode) of logical offset ``index``, if readable."""
        buf = self.get_index_buffer(index)
        if buf is None or len(buf) < CQ_STORE_UNIT_SIZE:
            return None
        unit: tuple[int, int, int] = _UNIT.unpack_from(buf)
        return unit

    @property
    def max_offset_in_queue(self) -> int:
        """``getMaxOffsetInQueue``: the next logical offset to be written."""
        return self.queue.max_offset() // CQ_STORE_UNIT_SIZE

    @property
    def min_offset_in_queue(self) -> int:
        """``getMinOffsetInQueue``."""
        return self.min_logic_offset // CQ_STORE_UNIT_SIZE

    def roll_next_file(self, index: int) -> int:
        """``rollNextFile``: first logical offset of the file after the one holding ``index``."""
        units = self.mapped_file_size // CQ_STORE_UNIT_SIZE
        return index + units - index % units

    def get_offset_in_queue_by_time(
        self,
        timestamp: int,
        min_phy_offset: int,
        pickup_store_timestamp: Callable[[int, int], int],
    ) -> int:
        """``getOffsetInQueueByTime`` (4.9): binary search of store times in one file.

        The file is the first one last modified at or after ``timestamp`` (else the last
        one, ``MappedFileQueue.getMappedFileByTime``). Returns the exact match, else the
        nearer neighbour (the earlier one on a tie), else the only side found; 0 if
        nothing is readable.
        """
        files = self.queue.files
        if not files:
            return 0
        mf: MappedFile = files[-1]
        for candidate in files:
            if candidate.last_modified_ms >= timestamp:
                mf = candidate
                break
        data = mf.select_from(0)
        if data is None:
            return 0
        low = (
            self.min_logic_offset - mf.file_from_offset if self.min_logic_offset > mf.file_from_offset else 0
        )
        high = len(data) - CQ_STORE_UNIT_SIZE
        target = left = right = -1
        left_value = right_value = -1
        while high >= low:
            mid = (low + high) // (2 * CQ_STORE_UNIT_SIZE) * CQ_STORE_UNIT_SIZE
            phy, size, _tags = _UNIT.unpack_from(data, mid)
            if phy < min_phy_offset:
                low = mid + CQ_STORE_UNIT_SIZE
                left = mid
                continue
            store_time = pickup_store_timestamp(phy, size)
            if store_time < 0:
                return 0
            if store_time == timestamp:
                target = mid
                break
            if store_time > timestamp:
                high = mid - CQ_STORE_UNIT_SIZE
                right, right_value = mid, store_time
            else:
                low = mid + CQ_STORE_UNIT_SIZE
                left, left_value = mid, store_time
        if target != -1:
            offset = target
        elif left_value == -1:
            offset = right
        elif right_value == -1:
            offset = left
        else:
            # Java: abs(ts - left) > abs(ts - right) ? right : left
            offset = right if abs(timestamp - left_value) > abs(timestamp - right_value) else left
        # Java divides a possibly negative long: truncation towards zero.
        return max(0, mf.file_from_offset + offset) // CQ_STORE_UNIT_SIZE

    # -- retention / durability / lifecycle ---------------------------------------------

    def delete_expired_file(self, phy_min_offset: int) -> int:
        """``deleteExpiredFile``: drop leading files that only point before the commit log's
        new minimum, then move ``min_logic_offset``."""
        count = self.queue.delete_expired_by_offset(phy_min_offset, CQ_STORE_UNIT_SIZE)
        self.correct_min_offset(phy_min_offset)
        return count

    def flush(self, least_pages: int = 0) -> bool:
        return self.queue.flush(least_pages)

    def close(self) -> None:
        self.queue.close()

    def destroy(self) -> None:
        """Delete the queue's files and folder (``ConsumeQueue.destroy``)."""
        self.max_physic_offset = -1
        self.min_logic_offset = 0
        self.queue.destroy()
