"""The bulk read path of ``MessageStore.get_message`` for the common case.

No message filter, data in memory, and the wanted records back to back in one commit-log
file (one queue written at a time, or batches): the ``isTheBatchFull`` limits come from a
bisection over the consume-queue units, contiguity is checked without a Python object per
unit (:func:`back_to_back`), and the answer is one memoryview slice.
"""

from __future__ import annotations

import bisect
import struct
from typing import Final

from rocketq.broker.store.commit_log import CommitLog
from rocketq.broker.store.config import CQ_STORE_UNIT_SIZE, MessageStoreConfig

__all__ = ["back_to_back", "contiguous_run"]

_UNIT_HEAD: Final = struct.Struct(">qi")  # commit-log offset, size (the tags code is not needed)
_LANE: Final = 8


def back_to_back(buf: memoryview | bytes, n: int, max_bytes: int) -> tuple[int, int, int] | None:
    """How many of the first ``n`` consume-queue units in ``buf`` one bulk read returns, if
    their records lie back to back in the commit log: ``(count, bytes, last offset)``.

    ``count`` follows ``DefaultMessageStore.isTheBatchFull`` for data in memory: units are
    taken while their records total at most ``max_bytes`` (the first always goes), at most
    ``n``. Returns None when the taken units are not back to back (unit ``k + 1`` starts
    where unit ``k`` ends) or hold a negative offset or size; it may also return None
    (conservatively) when only units past the taken ones are out of place, since the cut is
    bisected over the units' ends: then the caller's per-unit scan decides.

    The check is exact and costs no Python object per unit: the offsets of units
    ``1..count-1`` and ``0..count-2``, and the sizes of units ``0..count-2``, are laid out
    as 8-byte big-endian lanes of three integers, and the units are back to back exactly
    when ``offsets[1:] == offsets[:-1] + sizes[:-1]`` holds for the integers. With offsets
    below 2**63 and sizes below 2**31 no lane of the sum carries into the next, so the one
    integer comparison is the comparison of every lane.
    """
    if n <= 0:
        return None
    unit = CQ_STORE_UNIT_SIZE
    first = _UNIT_HEAD.unpack_from(buf, 0)[0]
    limit = first + max_bytes

    def end(k: int) -> int:
        offset, size = _UNIT_HEAD.unpack_from(buf, k * unit)
        return int(offset + size)

    count = n if end(n - 1) <= limit else max(1, bisect.bisect_right(range(n), limit, key=end))
    raw = bytes(buf[: count * unit])
    # sign bytes: offsets and sizes must be non-negative (no lane may carry)
    if not (raw[0::unit].isascii() and raw[8::unit].isascii()):
        return None
    last_offset, last_size = _UNIT_HEAD.unpack_from(raw, (count - 1) * unit)
    total = last_offset + last_size - first
    if count > 1:
        offsets = bytearray(_LANE * count)
        sizes = bytearray(_LANE * count)
        for j in range(8):
            offsets[j::_LANE] = raw[j::unit]
        for j in range(4):
            sizes[4 + j :: _LANE] = raw[8 + j :: unit]
        every = int.from_bytes(offsets, "big")
        later = every & ((1 << (64 * (count - 1))) - 1)  # units 1..count-1
        earlier = every >> 64  # units 0..count-2
        if later != earlier + (int.from_bytes(sizes, "big") >> 64):
            return None
    # The bisection assumed ascending ends; now that the run is known to be back to back,
    # confirm it stopped where isTheBatchFull does (on sizes alone, wherever unit count lies).
    if count > 1 and total > max_bytes:
        return None
    if count < n and total + _UNIT_HEAD.unpack_from(buf, count * unit)[1] <= max_bytes:
        return None
    return count, total, last_offset


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
