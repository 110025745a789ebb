"""Message queue selectors: which queue of a topic an ordered (selector) send goes to.

Mirrors ``org.apache.rocketmq.client.producer.MessageQueueSelector`` and the built-in
``org.apache.rocketmq.client.producer.selector.*`` classes (reference 7.3).

Invariants:

* :class:`SelectMessageQueueByHash` is STABLE across processes and languages: a ``str``
  key hashes with Java's ``String.hashCode`` (:func:`rocketq.protocol.java.string_hash`),
  an ``int`` key is its own hash (``Integer.hashCode``; values outside 32 bits use
  ``Long.hashCode``), so the same key maps to the same queue as in a Java producer
  (``abs(hash % n)`` with Java's truncating ``%``). Python's ``hash()`` is never used: it is
  salted per process for strings.
* The queue list handed to a selector is the topic's publish list in route order (brokers
  sorted by name, queue ids ascending), identical in every client.
* Any callable ``(queues, message, arg) -> MessageQueue`` is a selector too.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

from rocketq.errors import IllegalArgumentError
from rocketq.protocol.java import string_hash
from rocketq.protocol.message import Message
from rocketq.protocol.message_queue import MessageQueue

__all__ = [
    "MessageQueueSelector",
    "SelectMessageQueueByHash",
    "SelectMessageQueueByRandom",
    "SelectMessageQueueByRoundRobin",
    "SelectorLike",
    "as_selector",
    "java_hash_code",
]


@runtime_checkable
class MessageQueueSelector(Protocol):
    """``MessageQueueSelector.select(mqs, msg, arg)``."""

    def select(self, mqs: Sequence[MessageQueue], msg: Message, arg: object) -> MessageQueue: ...


#: What the producer accepts as a selector: an object with ``select`` or a plain function.
SelectorLike = MessageQueueSelector | Callable[[Sequence[MessageQueue], Message, object], MessageQueue]


def java_hash_code(key: object) -> int:
    """Java ``hashCode()`` of a sharding key: ``String``, ``Integer``/``Long`` or ``Boolean``.

    Raises :class:`IllegalArgumentError` for other types: their Java hash is not defined
    here and Python's ``hash()`` is not stable across processes.
    """
    if isinstance(key, bool):
        return 1231 if key else 1237  # Boolean.hashCode
    if isinstance(key, int):
        if -(2**31) <= key < 2**31:
            return key  # Integer.hashCode
        v = key & 0xFFFFFFFFFFFFFFFF
        h = (v ^ (v >> 32)) & 0xFFFFFFFF  # Long.hashCode
        return h - 0x100000000 if h & 0x80000000 else h
    if isinstance(key, str):
        return string_hash(key)
    raise IllegalArgumentError(
        f"SelectMessageQueueByHash needs a str or int key for a stable hash, got {type(key).__name__}"
    )


class SelectMessageQueueByHash:
    """``SelectMessageQueueByHash``: ``abs(arg.hashCode() % len(mqs))`` (Java ``%`` truncates)."""

    def select(self, mqs: Sequence[MessageQueue], msg: Message, arg: object) -> MessageQueue:
        if not mqs:
            raise IllegalArgumentError("no message queue to select from")
        h = java_hash_code(arg)
        n = len(mqs)
        # Java's remainder keeps the dividend's sign; then Math.abs.
        value = abs(h) % n
        return mqs[value]


class SelectMessageQueueByRandom:
    """``SelectMessageQueueByRandom``; ``rng`` may be injected for tests."""

    def __init__(self, rng: random.Random | None = None) -> None:
        self._rng = rng or random.Random()
        self._lock = threading.Lock()

    def select(self, mqs: Sequence[MessageQueue], msg: Message, arg: object) -> MessageQueue:
        if not mqs:
            raise IllegalArgumentError("no message queue to select from")
        with self._lock:
            return mqs[self._rng.randrange(len(mqs))]


class SelectMessageQueueByRoundRobin:
    """Round robin over the queue list (one counter per selector, thread-safe)."""

    def __init__(self, start: int = 0) -> None:
        self._next = start
        self._lock = threading.Lock()

    def select(self, mqs: Sequence[MessageQueue], msg: Message, arg: object) -> MessageQueue:
        if not mqs:
            raise IllegalArgumentError("no message queue to select from")
        with self._lock:
            index = self._next
            self._next += 1
        return mqs[index % len(mqs)]


class _CallableSelector:
    __slots__ = ("_fn",)

    def __init__(self, fn: Callable[[Sequence[MessageQueue], Message, object], MessageQueue]) -> None:
        self._fn = fn

    def select(self, mqs: Sequence[MessageQueue], msg: Message, arg: object) -> MessageQueue:
        return self._fn(mqs, msg, arg)


def as_selector(selector: SelectorLike) -> MessageQueueSelector:
    """Wrap a plain callable as a :class:`MessageQueueSelector` (objects pass through)."""
    if isinstance(selector, MessageQueueSelector):
        return selector
    if callable(selector):
        return _CallableSelector(selector)
    raise IllegalArgumentError(f"not a message queue selector: {selector!r}")
