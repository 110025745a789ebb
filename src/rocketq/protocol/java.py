"""Java semantics that leak onto the wire: ``String.hashCode`` and ``HashMap`` iteration order.

* :func:`string_hash` is ``java.lang.String#hashCode`` over UTF-16 code units (surrogate
  pairs count as two), as a signed 32-bit int. Tag codes in consume queues, the hash
  queue selector and subscription ``codeSet`` all use it.
* :func:`hashmap_order` reproduces the iteration order of a ``java.util.HashMap<String, ?>``
  filled by successive ``put`` calls from an empty default map (capacity 16, load factor
  0.75). Java serializes ``extFields`` and other maps in that order; emitting the same
  order makes rocketq's frames byte-identical to the Java client's.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Final, TypeVar

from rocketq._build import state as _build_state

try:
    from mypy_extensions import i64  # native 64-bit ints when compiled with mypyc
except ImportError:  # pure Python without mypy's extensions installed: the same arithmetic
    i64 = int  # type: ignore[misc]

_K = TypeVar("_K", str, int)

__all__ = [
    "ascii_hash",
    "concurrent_hashmap_order",
    "hashmap_capacity",
    "hashmap_order",
    "plain_int",
    "string_hash",
]


def _ascii_hash_native(data: bytes, h: int = 0) -> int:
    # masked every step, so the running value stays below 2**37 and, compiled, a native i64
    acc: i64 = h & 0xFFFFFFFF
    for i in range(len(data)):
        acc = (acc * 31 + data[i]) & 0xFFFFFFFF
    return int(acc)


def _ascii_hash_interpreted(data: bytes, h: int = 0) -> int:
    # masked once at the end: fewer bytecodes per character
    for c in data:
        h = h * 31 + c
    return h & 0xFFFFFFFF


#: ``String.hashCode()`` of ASCII ``data`` (one UTF-16 unit per byte), continued from the
#: unsigned hash ``h`` of a prefix; unsigned 32-bit. Two loops for the two builds, the same
#: arithmetic mod 2**32: compiled, the masked ``i64`` loop is native (35 ns for the 12
#: characters of a UNIQ_KEY tail, which the broker's index hashes per message, against 410-720
#: for the other loop, whose value turns into a bignum); interpreted, the loop masked once
#: costs least (580 against 870-1,050 ns). ``tests/unit/test_java_hash.py`` holds both to
#: ``String.hashCode``.
ascii_hash: Final = _ascii_hash_native if _build_state().compiled else _ascii_hash_interpreted


def string_hash(s: str) -> int:
    """``String.hashCode()``: h = 31*h + c over UTF-16 code units, signed 32-bit."""
    if s.isascii():
        h = ascii_hash(s.encode())
    else:
        h = 0
        data = s.encode("utf-16-be", "surrogatepass")
        for i in range(0, len(data), 2):
            h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - 0x100000000 if h & 0x80000000 else h


def _java_hash(key: str | int) -> int:
    """``hashCode()`` of a String or an Integer, as an unsigned 32-bit value."""
    return (string_hash(key) if isinstance(key, str) else key) & 0xFFFFFFFF


def _spread(key: str | int) -> int:
    """``HashMap.hash``: the hash code with its high half folded into the low half."""
    h = _java_hash(key)
    return h ^ (h >> 16)


def hashmap_capacity(size: int, initial_capacity: int = 16) -> int:
    """Table size of ``new HashMap<>(initial_capacity)`` holding ``size`` entries.

    ``HashMap.tableSizeFor`` rounds the initial capacity up to a power of two; the table
    doubles while the size exceeds 3/4 of it (load factor 0.75).
    """
    capacity = 1
    while capacity < initial_capacity:
        capacity <<= 1
    while size > capacity * 3 // 4:
        capacity <<= 1
    return capacity


def hashmap_order(keys: Iterable[_K], initial_capacity: int = 16) -> list[_K]:
    """Iteration order of ``new HashMap<>(initial_capacity)`` (or HashSet) after ``put`` of ``keys``.

    Keys are Strings or Integers (``Integer.hashCode`` is the value, e.g. a
    ``HashSet<Integer>`` of tag codes).

    ``HashMap.tableSizeFor`` rounds the capacity up to a power of two and the table doubles
    while the size exceeds 3/4 of it; entries iterate by bucket and, within a bucket, in
    insertion order (a resize splits buckets without reordering them). Duplicates keep
    their first position. Results are memoized: the same key sequences (header fields,
    property names) come back on every request.
    """
    return list(_hashmap_order(tuple(keys), initial_capacity))


@functools.lru_cache(maxsize=4096)
def _hashmap_order(keys: tuple[_K, ...], initial_capacity: int) -> tuple[_K, ...]:
    unique = list(dict.fromkeys(keys))
    mask = hashmap_capacity(len(unique), initial_capacity) - 1
    # sorted() is stable: keys sharing a bucket keep their insertion order.
    return tuple(sorted(unique, key=lambda k: _spread(k) & mask))


def concurrent_hashmap_order(keys: Iterable[_K], initial_capacity: int = 16) -> list[_K]:
    """Iteration order of ``new ConcurrentHashMap<>(initial_capacity)`` after ``put`` of ``keys``.

    The broker's tables are ConcurrentHashMaps (TopicConfigManager 1024, ConsumerOffsetManager
    512 and 32 per topic@group, SubscriptionGroupManager 1024) and fastjson writes them in
    iteration order. The table starts at ``tableSizeFor(c + c/2 + 1)`` slots and doubles once
    ``size >= 0.75 * n``; ``spread`` is ``(h ^ h >>> 16) & 0x7fffffff``; a bucket keeps
    insertion order. Verified against every golden ``store/*.json``.
    """
    unique = list(dict.fromkeys(keys))
    n = 1
    while n < initial_capacity + (initial_capacity >> 1) + 1:
        n <<= 1
    while len(unique) >= n - (n >> 2):
        n <<= 1
    mask = n - 1
    return sorted(unique, key=lambda k: _spread(k) & 0x7FFFFFFF & mask)


def plain_int(text: str | None, most: int) -> int | None:
    """``int(text)`` when ``text`` is at most ``most`` ASCII digits after an optional ``-``,
    else None: the numbers Java's ``Integer.parseInt`` (``most`` 9) or ``Long.parseLong``
    (``most`` 18) read as ``int`` does, so a header field read straight from a map with it
    equals the header codec's reading; anything else (a ``+``, a longer run, a non-ASCII
    digit, nothing) is left to the codec, which decides and reports."""
    if text is None:
        return None
    digits = text[1:] if text[:1] == "-" else text
    if 0 < len(digits) <= most and digits.isascii() and digits.isdigit():
        return int(text)
    return None
