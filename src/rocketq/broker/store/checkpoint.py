"""``StoreCheckpoint``: the 4 KiB ``<root>/checkpoint`` file.

Mirrors ``org.apache.rocketmq.store.StoreCheckpoint`` byte for byte: three big-endian longs
at offsets 0, 8 and 16 -- the store timestamp (ms) of the last record known durable in the
commit log (``physicMsgTimestamp``), in the consume queues (``logicsMsgTimestamp``) and in
the index (``indexMsgTimestamp``) -- in a file of one OS page.

Invariant: each value only describes data already flushed; crash recovery starts from the
first commit-log file whose first record is no newer than ``min_timestamp_index()``.
"""

from __future__ import annotations

import os
import struct

from rocketq.broker.store.mapped_file import OS_PAGE_SIZE, preallocate

__all__ = ["StoreCheckpoint"]

_LAYOUT = struct.Struct(">qqq")


class StoreCheckpoint:
    """The three recovery timestamps, read at open and written by ``flush()``."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.physic_msg_timestamp = 0
        self.logics_msg_timestamp = 0
        self.index_msg_timestamp = 0
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        exists = os.path.exists(path)
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        size = os.fstat(self._fd).st_size
        if size < OS_PAGE_SIZE:
            try:  # allocated, so a flush on a full disk still has its page
                preallocate(self._fd, size, OS_PAGE_SIZE - size)
            except OSError:
                os.ftruncate(self._fd, OS_PAGE_SIZE)
        if exists:
            raw = os.pread(self._fd, _LAYOUT.size, 0)
            if len(raw) == _LAYOUT.size:
                self.physic_msg_timestamp, self.logics_msg_timestamp, self.index_msg_timestamp = (
                    _LAYOUT.unpack(raw)
                )

    def flush(self) -> None:
        """Write the three values and fsync (``StoreCheckpoint.flush``)."""
        if self._fd < 0:
            return
        os.pwrite(
            self._fd,
            _LAYOUT.pack(self.physic_msg_timestamp, self.logics_msg_timestamp, self.index_msg_timestamp),
            0,
        )
        os.fdatasync(self._fd)

    def min_timestamp(self) -> int:
        """``getMinTimestamp``: min(physic, logics) minus 3 s, floored at 0."""
        return max(0, min(self.physic_msg_timestamp, self.logics_msg_timestamp) - 3000)

    def min_timestamp_index(self) -> int:
        """``getMinTimestampIndex``: also bounded by the index timestamp."""
        return min(self.min_timestamp(), self.index_msg_timestamp)

    def shutdown(self) -> None:
        """Flush and close."""
        if self._fd < 0:
            return
        self.flush()
        self.close()

    def close(self) -> None:
        """Close without writing (what a crash leaves behind)."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
