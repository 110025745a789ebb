"""The bulk read path of ``MessageStore.get_message`` for the common case.

No message filter, data in memory, and the wanted records back to back in one commit-log
file (one queue written at a time, or batches): the consume-queue chunk is unpacked in one
call, the ``isTheBatchFull`` limits are applied with a cumulative sum and a bisection,
contiguity is one list comparison, and the answer is one memoryview slice.
"""

from __future__ import annotations

import bisect
import itertools
import struct

from rocketq.broker.store.commit_log import CommitLog
from rocketq.broker.store.config import MessageStoreConfig

__all__ = ["contiguous_run"]


def contiguous_run(
    commit_log: CommitLog,
    cfg: MessageStoreConfig,
    buf: memoryview | bytes,
    units: int,
    max_msg_nums: int,
    max_offset_py: int,
    memory: int,
) -> tuple[memoryview, int, int, int] | None:
    """The common case of ``get_message`` in bulk: no filter, data in memory, and the
    wanted records back to back in one commit-log file (one queue written at a time, or
    batches). Returns (one slice, count, bytes, last physical offset), or None to fall back
    to the per-entry scan. The limits are ``isTheBatchFull``'s, applied to the run.
    """
    n = min(units, max_msg_nums, cfg.max_transfer_count_on_message_in_memory)
    if n <= 1:
        return None
    flat = struct.unpack_from(">" + "qiq" * n, buf, 0)
    offsets = flat[0::3]
    sizes = flat[1::3]
    first = offsets[0]
    if max_offset_py - first > memory:
        return None  # on-disk limits apply: let the scan handle it
    ends = list(itertools.accumulate(sizes, initial=first))
    # at most max_transfer_bytes in memory, but the first message always goes
    count = max(1, bisect.bisect_right(ends, first + cfg.max_transfer_bytes_on_message_in_memory) - 1)
    if ends[1:count] != list(offsets[1:count]):
        return None  # not back to back
    end = ends[count]
    mf = commit_log.queue.find_by_offset(first)
    if mf is None or not mf.available:
        return None
    lo = mf.file_from_offset
    if end - lo > mf.wrote_position:
        return None
    return mf.view[first - lo : end - lo], count, end - first, offsets[count - 1]
