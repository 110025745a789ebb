"""The readiness source of :class:`~rocketq.remoting.client.RemotingClient`'s I/O thread.

Java's ``NettyRemotingClient`` leaves this to Netty's event loop (epoll on Linux). Here it is
``epoll`` itself where the platform has it, else :mod:`selectors`' default selector.

Owns: which file descriptors the I/O thread watches, for reading and/or writing, with the
object each one stands for (a connection, or ``None`` for the wake-up socket).

Invariants:

* :meth:`Poller.set` may be called from any thread (the client serializes the calls for
  one descriptor under that connection's lock); with :attr:`Poller.shared` true the kernel
  object takes the change even while :meth:`Poller.wait` blocks, otherwise the caller wakes
  the I/O thread to make it look again.
* :meth:`Poller.wait` reports each ready descriptor once per call, with the events it is
  watched for now (a hang-up or error counts as both); a descriptor dropped meanwhile is not
  reported.
* A sync caller toggles read interest twice per call (the client's read role), so the epoll
  path costs two ``epoll_ctl`` calls and no Python bookkeeping beyond one dict entry.
"""

from __future__ import annotations

import select
import selectors
from typing import Final, Generic, TypeVar

__all__ = ["EVENT_READ", "EVENT_WRITE", "Poller", "new_poller"]

EVENT_READ: Final = selectors.EVENT_READ
EVENT_WRITE: Final = selectors.EVENT_WRITE

_T = TypeVar("_T")


class Poller(Generic[_T]):
    """Watches descriptors for the I/O thread (the base is the :mod:`selectors` fallback,
    on ``selector``, default ``selectors.DefaultSelector()``)."""

    #: whether a change made by another thread takes effect while :meth:`wait` blocks
    shared: bool

    def __init__(self, selector: selectors.BaseSelector | None = None) -> None:
        self._selector = selectors.DefaultSelector() if selector is None else selector
        self.shared = any(
            isinstance(self._selector, cls)
            for cls in (
                getattr(selectors, name, None)
                for name in ("EpollSelector", "KqueueSelector", "DevpollSelector")
            )
            if cls is not None
        )

    def set(self, fd: int, old: int, new: int, data: _T) -> None:
        """Watch ``fd`` for ``new`` events (0: stop watching) instead of ``old``."""
        if not old:
            self._selector.register(fd, new, data)
        elif not new:
            self._selector.unregister(fd)
        else:
            self._selector.modify(fd, new, data)

    def wait(self, timeout_s: float | None) -> list[tuple[_T, int]]:
        """Block up to ``timeout_s`` (``None``: until something is ready)."""
        return [(key.data, mask) for key, mask in self._selector.select(timeout_s)]

    def close(self) -> None:
        self._selector.close()


class _EpollPoller(Poller[_T]):
    """``epoll`` straight: no ``SelectorKey`` per change, one dict entry per descriptor."""

    def __init__(self) -> None:  # (no selector: this class replaces it)
        self._epoll = select.epoll()
        self._watched: dict[int, tuple[_T, int]] = {}
        self.shared = True

    def set(self, fd: int, old: int, new: int, data: _T) -> None:
        if new:
            self._watched[fd] = (data, new)
            mask = (select.EPOLLIN if new & EVENT_READ else 0) | (select.EPOLLOUT if new & EVENT_WRITE else 0)
            if old:
                self._epoll.modify(fd, mask)
            else:
                self._epoll.register(fd, mask)
        elif old:
            self._watched.pop(fd, None)
            self._epoll.unregister(fd)

    def wait(self, timeout_s: float | None) -> list[tuple[_T, int]]:
        ready = self._epoll.poll(-1 if timeout_s is None else timeout_s, max(len(self._watched), 1))
        watched = self._watched
        out: list[tuple[_T, int]] = []
        for fd, ev in ready:
            entry = watched.get(fd)
            if entry is None:
                continue  # dropped since the kernel reported it
            data, events = entry
            # as selectors.EpollSelector: anything but "writable" wakes a reader, anything
            # but "readable" a writer (so a hang-up or an error wakes both)
            mask = (EVENT_READ if ev & ~select.EPOLLOUT else 0) | (EVENT_WRITE if ev & ~select.EPOLLIN else 0)
            if mask & events:
                out.append((data, mask & events))
        return out

    def close(self) -> None:
        self._epoll.close()
        self._watched.clear()


def new_poller(*, portable: bool = False) -> Poller[_T]:
    """``epoll`` where the platform has it, else the :mod:`selectors` default; ``portable``
    forces the latter (tests of the fallback)."""
    if not portable and hasattr(select, "epoll"):
        return _EpollPoller()
    return Poller()
