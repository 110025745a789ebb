"""The bulk read path's consume-queue arithmetic (:func:`back_to_back`) against the
per-unit reading of ``DefaultMessageStore.isTheBatchFull`` it replaces."""

from __future__ import annotations

import itertools
import struct

from hypothesis import given
from hypothesis import strategies as st

from rocketq.broker.store.read_path import back_to_back

_UNIT = struct.Struct(">qiq")


def units(pairs: list[tuple[int, int]]) -> bytes:
    return b"".join(_UNIT.pack(offset, size, 7) for offset, size in pairs)


def reference(pairs: list[tuple[int, int]], max_bytes: int) -> tuple[int, int, int] | None:
    """Take units while the total stays within ``max_bytes`` (the first always goes), then
    require them back to back and non-negative."""
    count = total = 0
    for _, size in pairs:
        if count and total + size > max_bytes:
            break
        count += 1
        total += size
    taken = pairs[:count]
    if any(offset < 0 or size < 0 for offset, size in taken):
        return None
    for (offset, size), (following, _) in itertools.pairwise(taken):
        if offset + size != following:
            return None
    return count, total, taken[-1][0]


def contiguous(first: int, sizes: list[int]) -> list[tuple[int, int]]:
    out = []
    for size in sizes:
        out.append((first, size))
        first += size
    return out


def test_back_to_back_units_are_one_run() -> None:
    pairs = contiguous(1_000, [200] * 4096)
    assert back_to_back(units(pairs), 4096, 4 * 1024 * 1024) == (4096, 200 * 4096, pairs[-1][0])


def test_the_byte_limit_cuts_the_run_and_the_first_unit_always_goes() -> None:
    pairs = contiguous(0, [100, 100, 100, 100])
    assert back_to_back(units(pairs), 4, 250) == (2, 200, 100)
    assert back_to_back(units(pairs), 4, 200) == (2, 200, 100)
    assert back_to_back(units(pairs), 4, 50) == (1, 100, 0)
    assert back_to_back(units(pairs), 3, 10_000) == (3, 300, 200)


def test_a_gap_or_an_overlap_is_not_a_run() -> None:
    gap = [(0, 100), (100, 100), (250, 100)]
    overlap = [(0, 100), (90, 100), (190, 100)]
    assert back_to_back(units(gap), 3, 10_000) is None
    assert back_to_back(units(overlap), 3, 10_000) is None
    # only the units the limits take must be back to back
    assert back_to_back(units(gap), 2, 10_000) == (2, 200, 100)
    assert back_to_back(units(gap), 3, 200) == (2, 200, 100)


def test_the_cut_is_on_sizes_even_where_the_next_unit_is_elsewhere() -> None:
    # unit 2 lies far away but would still fit: isTheBatchFull takes it, so no single run
    pairs = [(0, 100), (100, 100), (10_000, 10)]
    assert back_to_back(units(pairs), 3, 210) is None
    assert back_to_back(units(pairs), 3, 205) == (2, 200, 100)


def test_negative_offsets_or_sizes_are_not_a_run() -> None:
    assert back_to_back(units([(-200, 100), (-100, 100)]), 2, 10_000) is None
    assert back_to_back(units([(0, -5), (-5, 100)]), 2, 10_000) is None


def test_offsets_near_the_top_of_the_range_do_not_carry() -> None:
    top = 2**63 - 1_000
    pairs = contiguous(top, [100] * 9)
    assert back_to_back(units(pairs), 9, 10_000) == (9, 900, pairs[-1][0])
    assert back_to_back(units([*pairs[:3], (pairs[3][0] + 1, 100)]), 4, 10_000) is None


@given(
    first=st.integers(0, 2**62),
    steps=st.lists(
        st.tuples(st.integers(0, 2**31 - 1), st.sampled_from([0, 0, 0, 1, -1, 2**40, -(2**20)])),
        min_size=1,
        max_size=40,
    ),
    n=st.integers(1, 45),
    max_bytes=st.integers(1, 2**33),
)
def test_matches_the_per_unit_reading(
    first: int, steps: list[tuple[int, int]], n: int, max_bytes: int
) -> None:
    pairs = []
    offset = first
    for size, jump in steps:
        offset = max(offset + jump, 0)
        pairs.append((offset, size))
        offset += size
    n = min(n, len(pairs))
    got = back_to_back(units(pairs), n, max_bytes)
    if reference(pairs[:n], n * 2**31) is not None:  # all n back to back: always a run
        assert got == reference(pairs[:n], max_bytes)
    else:  # None sends the caller to its per-unit scan, which is always right
        assert got is None or got == reference(pairs[:n], max_bytes)


@given(
    first=st.integers(0, 2**62),
    sizes=st.lists(st.integers(0, 2**31 - 1), min_size=1, max_size=40),
    n=st.integers(1, 45),
    max_bytes=st.integers(1, 2**33),
)
def test_back_to_back_units_always_make_a_run(first: int, sizes: list[int], n: int, max_bytes: int) -> None:
    pairs = contiguous(first, sizes)
    n = min(n, len(pairs))
    assert back_to_back(units(pairs), n, max_bytes) == reference(pairs[:n], max_bytes)
