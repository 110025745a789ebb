"""``String.hashCode`` as rocketq computes it (``rocketq.protocol.java``): both loops of
:func:`ascii_hash` (the compiled build's native ``i64`` one and the interpreted build's),
whichever this process runs, against an independent reference and values Java prints."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.broker.store.index import index_key_hash, uniq_key_hash
from rocketq.protocol import java
from rocketq.protocol.java import ascii_hash, string_hash


def _reference(data: bytes, h: int = 0) -> int:
    """The polynomial written out: ``h * 31**n + sum(c_i * 31**(n-1-i))`` mod 2**32."""
    n = len(data)
    return (h * 31**n + sum(c * 31 ** (n - 1 - i) for i, c in enumerate(data))) % 2**32


_LOOPS = [java._ascii_hash_native, java._ascii_hash_interpreted]


@pytest.mark.parametrize("loop", _LOOPS, ids=["native", "interpreted"])
@given(data=st.binary(max_size=80).map(lambda b: bytes(c & 0x7F for c in b)), h=st.integers(0, 2**32 - 1))
def test_both_loops_are_the_polynomial(loop: object, data: bytes, h: int) -> None:
    assert callable(loop)
    assert loop(data, h) == _reference(data, h)


def test_the_build_picks_one_of_the_loops() -> None:
    assert ascii_hash in _LOOPS


@pytest.mark.parametrize(
    ("text", "java_value"),
    [
        ("", 0),
        ("hello", 99162322),
        ("Aa", 2112),
        ("BB", 2112),
        ("polygenelubricants", -(2**31)),
        ("é", 233),
    ],
)
def test_string_hash_matches_java(text: str, java_value: int) -> None:
    assert string_hash(text) == java_value


def test_uniq_key_hash_last_prefix_memo_never_mixes_entries() -> None:
    """Runs of one producer's ids, interleaved with another topic's and another prefix of the
    same length, and ids of other lengths: the memo of the last prefix only serves a match."""
    a, b = "7F0000011A2B0C5E7F2A", "7F0000011A2B0C5E7F2B"
    cases = [
        ("T1", f"{a}{1:012X}"),
        ("T1", f"{a}{2:012X}"),
        ("T2", f"{a}{3:012X}"),  # same prefix, other topic
        ("T1", f"{b}{4:012X}"),  # same length, other prefix
        ("T1", f"{a}{5:012X}"),
        ("T1", f"X{a}{6:012X}"),  # longer prefix that ends with the memo's
        ("T1", f"{a[1:]}{7:012X}"),  # shorter prefix
        ("T1", f"{8:012X}"),  # no prefix at all
        ("T1", f"{a}{9:012X}"),
    ]
    for topic, uniq in cases * 2:
        assert uniq_key_hash(topic, uniq) == index_key_hash(f"{topic}#{uniq}")
