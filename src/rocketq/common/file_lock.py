"""An exclusive lock on a file, held for as long as a server uses the files next to it.

Mirrors the lock of ``org.apache.rocketmq.store.DefaultMessageStore``: on start it opens
``<storePathRootDir>/lock`` and takes an exclusive, non-blocking lock on it
(``FileChannel.tryLock``); when another process holds it, the broker refuses to start
("Lock failed, MQ already started") instead of sharing the commit log, the config files
and the ``abort`` marker with the broker already running there. rocketq uses the same lock
for the name server's KV config file (``<kvConfig.json>.lock``), which Java does not lock.

Invariants:

* POSIX record locks (``fcntl.lockf``): the kernel drops the lock when the process exits,
  however it exits (SIGKILL included), so a crashed server never leaves a stale lock behind.
* The lock belongs to the process, not to the :class:`FileLock` object: two objects of one
  process locking the same file both succeed (a second server in one process is not caught;
  the guard is against a second *process*). Nothing else in the process may open and close
  the lock file, since closing any descriptor of it releases a POSIX lock.
* The lock file's content is never relied on; it is created if missing and left in place.
"""

from __future__ import annotations

import contextlib
import fcntl
import os

from rocketq.errors import RocketqError

__all__ = ["FileLock", "FileLockedError"]


class FileLockedError(RocketqError):
    """Another process holds the lock: its server is running on these files."""


class FileLock:
    """An exclusive lock on ``path``: :meth:`acquire` raises :class:`FileLockedError` when held."""

    def __init__(self, path: str, what: str) -> None:
        #: the lock file.
        self.path = path
        #: what the lock guards, for the error message (``"store /tmp/rq"``).
        self.what = what
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> None:
        """Take the lock now or raise :class:`FileLockedError` (never waits)."""
        if self._fd is not None:
            return
        os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            raise FileLockedError(
                f"Lock failed, MQ already started: another process holds {self.path}, "
                f"so a server is already running on {self.what}"
            ) from exc
        self._fd = fd

    def release(self) -> None:
        """Drop the lock (idempotent); the file stays."""
        fd, self._fd = self._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                fcntl.lockf(fd, fcntl.LOCK_UN)
            os.close(fd)
