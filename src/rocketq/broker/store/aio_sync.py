"""``fdatasync`` without a thread: Linux native AIO (``IOCB_CMD_FDSYNC``), its completion
signalled on an ``eventfd`` an event loop watches.

A SYNC_FLUSH broker must not acknowledge a put before the commit log is on disk, and must
not block its event loop while the disk works (a slow disk would stall every connection).
Java hands the sync to ``GroupCommitService``; so does this broker by default where AIO is
not available. That hand-off costs a thread wake-up, the GIL and an ``eventfd`` write back
to the loop for every sync (measured: ~20 us of CPU per durable send). With AIO the loop
submits the sync itself (one ``io_submit``), the kernel runs it on a kernel worker, and
the completion makes the ``eventfd`` readable, which wakes the loop like a socket does.

Linux has run ``IOCB_CMD_FDSYNC`` for any file system with an ``fsync`` since 4.18. The
system calls go through ``ctypes`` and libc's ``syscall`` (x86-64 and AArch64 numbers);
:meth:`AioSync.open` returns None wherever that is not available (another OS or
architecture, ``io_setup`` refused by a seccomp policy or ``fs.aio-max-nr``), and
:meth:`AioSync.submit` raises ``OSError`` (EINVAL on an older kernel); callers then fall back
to the thread.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
import platform
import struct
import sys
from collections.abc import Sequence

__all__ = ["AioSync"]

#: (io_setup, io_destroy, io_getevents, io_submit) by machine
_SYSCALLS = {
    "x86_64": (206, 207, 208, 209),
    "amd64": (206, 207, 208, 209),
    "aarch64": (0, 1, 4, 2),
    "arm64": (0, 1, 4, 2),
}
#: include/uapi/linux/aio_abi.h
_IOCB_CMD_FDSYNC = 3
_IOCB_FLAG_RESFD = 1
#: struct iocb (64 bytes, little-endian layout: aio_key before aio_rw_flags): aio_data,
#: aio_key, aio_rw_flags, aio_lio_opcode, aio_reqprio, aio_fildes, aio_buf, aio_nbytes,
#: aio_offset, aio_reserved2, aio_flags, aio_resfd
_IOCB = struct.Struct("<QIIHhIQQqQII")
#: struct io_event: data, obj, res, res2
_EVENT = struct.Struct("<QQqq")
#: iocbs in flight at most (one per commit-log segment a sync covers; two at a roll)
_MAX_EVENTS = 8


@functools.cache
def _libc_syscall() -> ctypes._NamedFuncPointer | None:
    """libc's ``syscall`` (loaded once), None where it cannot be loaded."""
    try:
        fn = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True).syscall
    except (OSError, AttributeError):
        return None
    fn.restype = ctypes.c_long
    return fn


class AioSync:
    """One AIO context and its ``eventfd``: :meth:`submit` starts ``fdatasync`` of some
    files, and once the ``eventfd`` (:attr:`fd`) is readable :meth:`reap` returns the
    completions. Not thread-safe: one event loop owns it."""

    __slots__ = ("_ctx", "_events", "_iocbs", "_nr", "_ptrs", "_syscall", "_timeout", "fd")

    def __init__(self, syscall: ctypes._NamedFuncPointer, nr: tuple[int, int, int, int]) -> None:
        self._syscall = syscall
        self._nr = nr
        self._ctx = ctypes.c_ulong(0)
        if syscall(nr[0], _MAX_EVENTS, ctypes.byref(self._ctx)) < 0:
            err = ctypes.get_errno()
            raise OSError(err, f"io_setup: {os.strerror(err)}")
        try:
            self.fd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
        except OSError:
            syscall(nr[1], self._ctx)
            raise
        self._iocbs = [ctypes.create_string_buffer(_IOCB.size) for _ in range(_MAX_EVENTS)]
        self._ptrs = (ctypes.c_void_p * _MAX_EVENTS)(*[ctypes.addressof(b) for b in self._iocbs])
        self._events = ctypes.create_string_buffer(_EVENT.size * _MAX_EVENTS)
        self._timeout = (ctypes.c_long * 2)(0, 0)

    @classmethod
    def open(cls) -> AioSync | None:
        """An AIO context, or None where native AIO cannot be used."""
        if not sys.platform.startswith("linux") or not hasattr(os, "eventfd"):
            return None
        nr = _SYSCALLS.get(platform.machine().lower())
        syscall = _libc_syscall()
        if nr is None or syscall is None:
            return None
        try:
            return cls(syscall, nr)
        except OSError:
            return None

    def submit(self, fds: Sequence[int]) -> int:
        """Start ``fdatasync`` of each of ``fds`` (1 to 8 of them); each completes on its own
        and makes :attr:`fd` readable. Returns how many the kernel took (fewer than asked
        only on a fault: the rest did not start); raises ``OSError`` if it took none."""
        n = len(fds)
        if not 0 < n <= _MAX_EVENTS:
            raise ValueError(f"1 to {_MAX_EVENTS} files per submission, not {n}")
        for i in range(n):
            _IOCB.pack_into(
                self._iocbs[i], 0, i, 0, 0, _IOCB_CMD_FDSYNC, 0, fds[i], 0, 0, 0, 0, _IOCB_FLAG_RESFD, self.fd
            )
        taken = int(self._syscall(self._nr[3], self._ctx, n, self._ptrs))
        if taken <= 0:
            err = ctypes.get_errno()
            raise OSError(err, f"io_submit: {os.strerror(err)}")
        return taken

    def reap(self, wait: int = 0) -> list[int]:
        """The results of the syncs completed since the last call (0, or -errno), after
        clearing the ``eventfd``; empty if none completed. ``wait``: block until at least
        that many have completed."""
        try:
            os.eventfd_read(self.fd)
        except BlockingIOError:
            if wait <= 0:
                return []
        timeout = None if wait > 0 else self._timeout
        got = self._syscall(self._nr[2], self._ctx, wait, _MAX_EVENTS, self._events, timeout)
        if got < 0:
            err = ctypes.get_errno()
            raise OSError(err, f"io_getevents: {os.strerror(err)}")
        return [_EVENT.unpack_from(self._events, i * _EVENT.size)[2] for i in range(got)]

    def close(self) -> None:
        """Destroy the context (the kernel waits for syncs still running) and the eventfd."""
        fd, self.fd = self.fd, -1
        if fd >= 0:
            self._syscall(self._nr[1], self._ctx)
            os.close(fd)
