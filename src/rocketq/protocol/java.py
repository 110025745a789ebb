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

from collections.abc import Iterable

__all__ = ["hashmap_order", "string_hash"]


def string_hash(s: str) -> int:
    """``String.hashCode()``: h = 31*h + c over UTF-16 code units, signed 32-bit."""
    h = 0
    if s.isascii():
        for ch in s.encode():
            h = (31 * h + ch) & 0xFFFFFFFF
    else:
        data = s.encode("utf-16-be", "surrogatepass")
        for i in range(0, len(data), 2):
            h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - 0x100000000 if h & 0x80000000 else h


def _spread(key: str) -> int:
    h = string_hash(key) & 0xFFFFFFFF
    return h ^ (h >> 16)


def hashmap_order(keys: Iterable[str]) -> list[str]:
    """The iteration order of a default ``HashMap`` after ``put`` of ``keys`` in order."""
    unique = list(dict.fromkeys(keys))
    capacity = 16
    while len(unique) > capacity * 3 // 4:
        capacity *= 2
    mask = capacity - 1
    # sorted() is stable: keys sharing a bucket keep their insertion order.
    return sorted(unique, key=lambda k: _spread(k) & mask)
