"""Socket calls that cannot block, made without releasing the GIL: libc's ``send`` and
``recv`` with ``MSG_DONTWAIT``, called through ``ctypes.PyDLL``.

Every socket method of the standard library releases the GIL around its system call, so
that a call that blocks lets the other threads run. A call on a non-blocking socket never
waits, and there the release only costs: when another thread is waiting for the GIL, the
release hands the GIL over to it, and the caller, back from the kernel a few microseconds
later, has to wait until that thread lets go again (a convoy of hand-offs, each a futex
wake-up and a context switch). The client's connections are non-blocking and their threads
contend for the GIL exactly when they are busiest: the I/O thread reads pull answers while
the consume threads decode records, run listeners and send the next pulls
(``benchmarks/README.md``, speed10: half the voluntary context switches per pull, 10-15 %
less client CPU per message in a drain).

The cost is the other side of the same coin: every socket call was also a point where a
waiting thread got the GIL, and without them a busy thread keeps it until it blocks, so a
thread with one message to deliver waits longer now and then (end-to-end latency at 1,000
messages/s: p99 +30 %, p50 unchanged). So it is opt-in: :data:`ENABLED` is True only when
the environment sets ``ROCKETQ_HOLD_GIL_IO=1`` (for throughput: drains, many sends in
flight) and :func:`available` says the calls work here (the process's own libc symbols load
through ``ctypes``, and the platform has ``MSG_DONTWAIT``: not Windows). ``ctypes`` is
imported only when one of them first asks. Errors are raised as the socket methods raise
them: ``OSError(errno, strerror)``, which Python turns into ``BlockingIOError``,
``InterruptedError``, ``BrokenPipeError``, ``ConnectionResetError``...
"""

from __future__ import annotations

import functools
import os
import socket
from typing import Any

__all__ = ["ENABLED", "HOLD_ENV", "RecvBuffer", "available", "recv_into", "send"]

#: set to "1" to make the client's socket calls keep the GIL
HOLD_ENV = "ROCKETQ_HOLD_GIL_IO"

_DONTWAIT: int = getattr(socket, "MSG_DONTWAIT", 0)
#: a send to a peer that closed returns EPIPE rather than raising SIGPIPE (Linux; Python
#: ignores SIGPIPE anyway)
_SEND_FLAGS: int = _DONTWAIT | getattr(socket, "MSG_NOSIGNAL", 0)
#: the most one send offers the kernel (a C int; the kernel takes far less at once anyway)
_MAX_SEND = 1 << 30


@functools.cache
def _load() -> tuple[Any, Any] | None:
    """libc's ``send`` and ``recv`` as GIL-holding foreign functions, or None (loaded on
    first use: an opt-in should not cost every client ``ctypes``' import)."""
    if not _DONTWAIT:
        return None
    import ctypes

    try:
        libc = ctypes.PyDLL(None, use_errno=True)  # the symbols already in the process
        send_fn, recv_fn = libc.send, libc.recv
    except (OSError, AttributeError, TypeError):
        return None
    # No argtypes: declaring them costs each call ~1 us of conversions. Undeclared, ctypes
    # passes the fd, length and flags as C ints, which libffi widens to the register (the
    # lengths stay below 2**31: see _MAX_SEND), and bytes or a ctypes array as a pointer.
    for fn in (send_fn, recv_fn):
        fn.restype = ctypes.c_ssize_t
    return send_fn, recv_fn


def available() -> bool:
    """True when :func:`send` and :func:`recv_into` may be used."""
    return _load() is not None


#: True when the client's connections use them (opted in, and available)
ENABLED: bool = os.environ.get(HOLD_ENV) == "1" and available()


def _raise_errno() -> None:
    import ctypes

    err = ctypes.get_errno()
    raise OSError(err, os.strerror(err))


def send(fd: int, data: bytes) -> int:
    """``socket.send(data)`` on ``fd`` without waiting and without releasing the GIL: the
    number of bytes the kernel took (maybe fewer than ``len(data)``); ``BlockingIOError``
    when it took none because the buffer is full. Only when :func:`available`."""
    funcs = _load()
    assert funcs is not None
    sent: int = funcs[0](fd, data, min(len(data), _MAX_SEND), _SEND_FLAGS)
    if sent < 0:
        _raise_errno()
    return sent


class RecvBuffer:
    """A receive buffer libc's ``recv`` writes into: the bytes (:attr:`view`) and the C
    array over them (which keeps them exported, so they never move)."""

    __slots__ = ("_array", "view")

    def __init__(self, size: int) -> None:
        import ctypes

        data = bytearray(size)
        self.view = memoryview(data)
        self._array = (ctypes.c_char * size).from_buffer(data)


def recv_into(fd: int, buf: RecvBuffer) -> int:
    """``socket.recv_into(buf.view)`` on ``fd`` without waiting and without releasing the
    GIL: the number of bytes received at the start of the buffer, 0 at the end of the
    stream; ``BlockingIOError`` when nothing is there. Only when :func:`available`."""
    funcs = _load()
    assert funcs is not None
    got: int = funcs[1](fd, buf._array, len(buf.view), _DONTWAIT)
    if got < 0:
        _raise_errno()
    return got
