"""The bulk read path of ``MessageStore.get_message`` for the common case.

No message filter, data in memory, and the wanted records back to back in one commit-log
file (one queue written at a time, or batches): the ``isTheBatchFull`` limits come from a
bisection over the units' ends, contiguity is checked in C without a Python loop per unit
(:func:`back_to_back`), and the answer is one memoryview slice.
"""

from __future__ import annotations

import bisect
import operator
import struct
from typing import Final

from rocketq.broker.store.commit_log import CommitLog
from rocketq.broker.store.config import CQ_STORE_UNIT_SIZE, MessageStoreConfig

__all__ = ["back_to_back", "contiguous_run"]

_UNIT_HEAD: Final = struct.Struct(">qi")  # commit-log offset, size (the tags code is not needed)
#: n -> the Struct reading the (offset, size) pairs of n consume-queue units at once
_RUN_STRUCTS: dict[int, struct.Struct] = {}
#: runs of at most this many units keep their Struct (the pull batch sizes in use)
_RUN_STRUCTS_MAX_UNITS: Final = 1024


def _run_struct(n: int) -> struct.Struct:
    reader = _RUN_STRUCTS.get(n)
    if reader is None:
        reader = struct.Struct(">" + f"qi{CQ_STORE_UNIT_SIZE - 12}x" * n)  # offset, size; no tags code
        if n <= _RUN_STRUCTS_MAX_UNITS:
            _RUN_STRUCTS[n] = reader
    return reader


def back_to_back(buf: memoryview | bytes, n: int, max_bytes: int) -> tuple[int, int, int] | None:
    """How many of the first ``n`` consume-queue units in ``buf`` one bulk read returns, if
    their records lie back to back in the commit log: ``(count, bytes, last offset)``.

    ``count`` follows ``DefaultMessageStore.isTheBatchFull`` for data in memory: units are
    taken while their records total at most ``max_bytes`` (the first always goes), at most
    ``n``. Returns None when the taken units are not back to back (unit ``k + 1`` starts
    where unit ``k`` ends) or hold a negative offset or size; it may also return None
    (conservatively) when only units past the taken ones are out of place, since the cut is
    bisected over the units' ends: then the caller's per-unit scan decides.

    The check is exact and runs in C, with no Python loop per unit: one ``Struct`` reads the
    ``n`` (offset, size) pairs, the units' ends are their pairwise sums, and the units are back
    to back exactly when ``offsets[1:count] == ends[:count - 1]``.
    """
    if n <= 0:
        return None
    pairs = _run_struct(n).unpack_from(buf, 0)
    offsets: tuple[int, ...] = pairs[0::2]
    sizes: tuple[int, ...] = pairs[1::2]
    ends = tuple(map(operator.add, offsets, sizes))
    first = offsets[0]
    limit = first + max_bytes
    count = n if ends[n - 1] <= limit else max(1, bisect.bisect_right(ends, limit))
    if first < 0 or min(sizes[:count]) < 0:
        return None
    if count > 1 and offsets[1:count] != ends[: count - 1]:
        return None
    total = ends[count - 1] - first
    # The bisection assumed ascending ends; now that the run is known to be back to back,
    # confirm it stopped where isTheBatchFull does (on sizes alone, wherever unit count lies).
    if count > 1 and total > max_bytes:
        return None
    if count < n and total + sizes[count] <= max_bytes:
        return None
    return count, total, offsets[count - 1]


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
    first = _UNIT_HEAD.unpack_from(buf, 0)[0]
    if max_offset_py - first > memory:
        return None  # on-disk limits apply: let the scan handle it
    run = back_to_back(buf, n, cfg.max_transfer_bytes_on_message_in_memory)
    if run is None:
        return None
    count, total, last_offset = run
    mf = commit_log.queue.find_by_offset(first)
    if mf is None or not mf.available:
        return None
    lo = mf.file_from_offset
    if first + total - lo > mf.wrote_position:
        return None
    return mf.view[first - lo : first + total - lo], count, total, last_offset
