"""A value made on first use in each process: :class:`ProcessLocal` (below every floor: the
protocol floor uses it, so it imports nothing of rocketq).

Owns the pattern every process-wide singleton of the client needs: created lazily (once,
under a lock, by whichever thread asks first) and forgotten in a forked child, which makes
its own on first use. A forked child shares no thread with its parent (only the forking
thread survives a fork) and must not share identity either: the UNIQ_KEY generator
(``rocketq.protocol.message_id``) embeds the process id and a counter, so a child that kept
its parent's would hand out the parent's ids; the consume threads
(``rocketq.client.consumer.listener``) do not exist in the child.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["ProcessLocal"]

_T = TypeVar("_T")

#: every ProcessLocal alive, reset in a forked child (weak: a dropped one is not kept alive)
_instances: weakref.WeakSet[ProcessLocal[object]] = weakref.WeakSet()


class ProcessLocal(Generic[_T]):
    """``factory()``'s value, made by the first :meth:`get` of each process."""

    __slots__ = ("__weakref__", "_factory", "_lock", "_value")

    def __init__(self, factory: Callable[[], _T]) -> None:
        self._factory = factory
        self._lock = threading.Lock()
        self._value: _T | None = None
        _instances.add(self)  # type: ignore[arg-type]

    def get(self) -> _T:
        """The value of this process, made now if this is the first call here."""
        value = self._value
        if value is None:
            with self._lock:
                value = self._value
                if value is None:
                    value = self._value = self._factory()
        return value

    def peek(self) -> _T | None:
        """The value of this process if made already (never makes it)."""
        return self._value

    def _forget(self) -> None:
        self._value = None
        self._lock = threading.Lock()  # a lock held by a parent thread at the fork stays held


def _forget_all_in_child() -> None:
    for instance in list(_instances):
        instance._forget()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_all_in_child)
