"""Memory-mapped, fixed-size store files and the ordered queue of them.

Mirrors ``org.apache.rocketmq.store.MappedFile`` and ``MappedFileQueue`` (4.9.7). A file is
named by the 20-digit, zero-padded offset of its first byte in the logical stream
(commit log: physical offset; consume queue: unit index x 20) and has exactly
``file_size`` bytes, mapped read/write for its whole life.

Invariants:

* ``wrote_position`` only grows while appending (recovery may move it back) and bytes
  below it are never rewritten; readers slice ``view`` below ``wrote_position`` without a
  lock (writers publish the position *after* the bytes).
* Files are never unmapped under a reader: ``destroy()`` unlinks the file and forgets it,
  and the mapping goes away when the last slice handed out is dropped (Java counts
  references with ``hold``/``release`` for the same purpose).
* ``MappedFileQueue.files`` is replaced, never mutated in place, so readers may iterate a
  snapshot without the lock.
* Every byte a writer may touch through the mapping is backed by allocated blocks: a new or
  extended file is preallocated (:func:`preallocate`: ``posix_fallocate``, or zeros
  written where the filesystem cannot) before it is mapped, so a full disk shows up as an
  ``OSError`` (ENOSPC) when a segment is created, never as a SIGBUS on a store into a
  sparse page. A file whose tail could not be allocated (recovery on a full disk) has
  ``allocated`` False and must not be written until :meth:`MappedFile.ensure_allocated`
  succeeds; the store keeps itself read-only meanwhile.
* Durability goes through ``os.fdatasync`` on the file (Linux ``msync(MS_SYNC)`` is the
  same fsync of the page cache, and ``fdatasync`` releases the GIL, ``mmap.flush`` does
  not). Commit-log files keep their descriptor; consume-queue and index files (there can
  be thousands) reopen the file for each flush.
* A file opened ``write_through`` (the commit log under SYNC_FLUSH) is written through its
  kept descriptor (``os.pwrite``, :meth:`MappedFile.write_at`) and only read through the
  mapping: the same page cache, so a reader sees the bytes once ``wrote_position`` moves.
  When every put is synced, stores into a shared writable mapping cost the sync: writeback
  write-protects every page it cleans (a TLB shootdown across CPUs) and the next store
  into the page faults to make it writable again (measured: ``fdatasync`` under a
  1,000-in-flight SYNC_FLUSH load 1.35 -> 0.93 ms p50, a standalone writer 0.95 -> 0.40 ms;
  broker CPU per durable message -20 %). Flushed every 500 ms (ASYNC_FLUSH) the mapping
  is the cheaper path: a store is a copy, where a ``pwrite`` after an idle millisecond runs
  the kernel's cold write path (+20 us of broker CPU per message at one message per ms).
  A failed ``pwrite`` raises ``OSError``, where a store into the mapping is a SIGBUS.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import mmap
import os
import struct
import threading
import time
from collections.abc import Callable

__all__ = [
    "OS_PAGE_SIZE",
    "MappedFile",
    "MappedFileQueue",
    "file_name_for",
    "now_ms",
    "preallocate",
    "write_warm_file",
]

_log = logging.getLogger("rocketq.broker.store")

#: ``MappedFile.OS_PAGE_SIZE``: the unit of ``flush_*_least_pages``.
OS_PAGE_SIZE = 4096
#: ``MappedFileQueue.DELETE_FILES_BATCH_MAX``: at most this many files per retention pass.
DELETE_FILES_BATCH_MAX = 10

_LONG = struct.Struct(">q")


#: Errors of ``posix_fallocate`` meaning "not supported here" (then zeros are written).
_NO_FALLOCATE = frozenset({errno.EOPNOTSUPP, errno.ENOTSUP, errno.EINVAL, errno.ENOSYS})
_ZEROS = bytes(1 << 20)


def preallocate(fd: int, offset: int, length: int, *, keep_content: bool = False) -> None:
    """Back ``length`` bytes from ``offset`` of the open file ``fd`` with allocated blocks
    (the file grows to ``offset + length`` if shorter). ``os.posix_fallocate``; where the
    filesystem does not support it, the range is written: with zeros (``MappedFile.
    warmMappedFile`` writes zeros for the same purpose), or with ``keep_content`` with the
    bytes it holds (read back and rewritten, so data there is never lost). Raises
    ``OSError`` (ENOSPC on a full disk)."""
    if length <= 0:
        return
    try:
        os.posix_fallocate(fd, offset, length)
        return
    except OSError as exc:
        if exc.errno not in _NO_FALLOCATE:
            raise
    end = offset + length
    pos = offset
    while pos < end:
        n = min(len(_ZEROS), end - pos)
        chunk = os.pread(fd, n, pos) if keep_content else b""
        if len(chunk) < n:  # past the end of the file: zeros
            chunk += _ZEROS[: n - len(chunk)]
        pos += os.pwrite(fd, chunk, pos)


def write_warm_file(path: str, size: int, cancelled: Callable[[], bool]) -> bool:
    """Create ``path`` with ``size`` bytes of zeros written and synced
    (``MappedFile.warmMappedFile``): every block of it is allocated *and written*, so a later
    ``fdatasync`` after a write into it only writes the data back. A range that
    ``posix_fallocate`` reserved is still "unwritten" to ext4 and xfs, and the first sync
    after a write into each of its blocks also commits the journal that records the block as
    written (measured on this project's machine: 117 against 85 µs per ``fdatasync`` of 8 KiB,
    146 against 104 of 32 KiB; benchmarks/README.md, speed7). Returns False, with the file
    removed, when ``cancelled()`` said so between two chunks; raises ``OSError`` (ENOSPC on a
    full disk) with the file removed; an existing ``path`` is refused (FileExistsError) and
    left alone."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
    done = False
    try:
        pos = 0
        while pos < size:
            if cancelled():
                return False
            pos += os.pwrite(fd, _ZEROS[: min(len(_ZEROS), size - pos)], pos)
        os.fdatasync(fd)
        done = True
        return True
    finally:
        os.close(fd)
        if not done:
            with contextlib.suppress(OSError):
                os.unlink(path)


def file_name_for(offset: int) -> str:
    """``UtilAll.offset2FileName``: the 20-digit zero-padded start offset."""
    return f"{offset:020d}"


class MappedFile:
    """One fixed-size file mapped read/write (``MappedFile``)."""

    __slots__ = (
        "_fd",
        "allocated",
        "available",
        "file_from_offset",
        "file_size",
        "first_create_in_queue",
        "flushed_position",
        "last_modified_ms",
        "mm",
        "path",
        "store_timestamp",
        "view",
        "write_through",
        "wrote_position",
    )

    def __init__(
        self,
        path: str,
        file_size: int,
        *,
        keep_fd: bool,
        write_through: bool = False,
        now_ms: int | None = None,
    ) -> None:
        """Open ``path`` (created, or extended with allocated zeros, to ``file_size``) and map
        it. A file that existed at its full size is taken as it is (``allocated`` is then
        only known after :meth:`ensure_allocated`). Raises ``OSError`` when the blocks cannot
        be allocated; a file this call created is removed again. ``write_through`` (which
        needs ``keep_fd``): writes go through the descriptor, not into the mapping."""
        if write_through and not keep_fd:
            raise ValueError("write_through needs keep_fd")
        self.path = path
        self.file_size = file_size
        self.file_from_offset = int(os.path.basename(path))
        created = not os.path.exists(path)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            actual = os.fstat(fd).st_size
            if actual < file_size:
                if actual:
                    _log.warning("%s: %d bytes, expected %d; zero-extending", path, actual, file_size)
                preallocate(fd, actual, file_size - actual)
            elif actual > file_size:
                raise OSError(f"{path}: {actual} bytes, larger than the configured {file_size}")
            self.mm = mmap.mmap(fd, file_size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        except BaseException:
            os.close(fd)
            if created:
                with contextlib.suppress(OSError):
                    os.unlink(path)
            raise
        self.allocated = True
        self.write_through = write_through
        if keep_fd:
            self._fd: int | None = fd
        else:
            os.close(fd)
            self._fd = None
        self.view = memoryview(self.mm)
        self.wrote_position = 0
        self.flushed_position = 0
        self.store_timestamp = 0
        self.first_create_in_queue = False
        self.available = True
        self.last_modified_ms = now_ms if now_ms is not None else int(os.path.getmtime(path) * 1000)

    # -- state --------------------------------------------------------------------------

    @property
    def is_full(self) -> bool:
        return self.wrote_position >= self.file_size

    @property
    def file_name(self) -> str:
        return os.path.basename(self.path)

    def set_positions(self, position: int) -> None:
        """Set the wrote/flushed positions (recovery, load)."""
        self.wrote_position = position
        self.flushed_position = position

    # -- writing ------------------------------------------------------------------------

    def append(self, data: bytes | bytearray | memoryview) -> bool:
        """``MappedFile.appendMessage(byte[])``: append raw bytes if they fit."""
        pos = self.wrote_position
        end = pos + len(data)
        if end > self.file_size:
            return False
        self.write_at(pos, data)
        self.wrote_position = end
        return True

    def write_at(self, position: int, data: bytes | bytearray | memoryview) -> None:
        """Store ``data`` at ``position`` (not published: the caller moves ``wrote_position``):
        by ``pwrite`` when the file is ``write_through``, else into the mapping. Raises
        ``OSError`` if the kernel refuses the write."""
        fd = self._fd
        if fd is None or not self.write_through:
            self.mm[position : position + len(data)] = data
            return
        view = memoryview(data)
        done = 0
        while done < len(view):  # a regular file takes it all at once unless something fails
            wrote = os.pwrite(fd, view[done:], position + done)
            if wrote <= 0:
                raise OSError(errno.EIO, f"{self.path}: pwrite wrote nothing at {position + done}")
            done += wrote

    def zero_from(self, position: int) -> None:
        """Make every byte from ``position`` to the end of the file zero.

        Done by truncating the file and extending it again (the kernel drops the tail
        pages and the mapping then reads zeros), then allocating the tail again; when that
        fails (a full disk) ``allocated`` is False. Only call this while no other thread
        touches the file (recovery).
        """
        if position >= self.file_size:
            return
        if self._fd is not None:
            os.ftruncate(self._fd, position)
            os.ftruncate(self._fd, self.file_size)
        else:
            os.truncate(self.path, position)
            os.truncate(self.path, self.file_size)
        self.allocated = False
        with contextlib.suppress(OSError):
            self.ensure_allocated(position)

    def ensure_allocated(self, position: int | None = None) -> None:
        """Allocate the blocks from ``position`` (default: ``wrote_position``) to the end of
        the file, so writes there cannot SIGBUS; sets ``allocated``. Cheap when they are
        allocated already. Never changes a byte (the fallback rewrites what is there).
        Raises ``OSError`` (ENOSPC)."""
        start = self.wrote_position if position is None else position
        fd = self._fd if self._fd is not None else os.open(self.path, os.O_RDWR)
        try:
            preallocate(fd, start, self.file_size - start, keep_content=True)
        finally:
            if fd != self._fd:
                os.close(fd)
        self.allocated = True

    # -- reading ------------------------------------------------------------------------

    def select(self, position: int, size: int) -> memoryview | None:
        """``selectMappedBuffer(pos, size)``: a slice if it lies below ``wrote_position``."""
        if position < 0 or position + size > self.wrote_position:
            return None
        return self.view[position : position + size]

    def select_from(self, position: int) -> memoryview | None:
        """``selectMappedBuffer(pos)``: from ``position`` up to ``wrote_position``."""
        end = self.wrote_position
        if position < 0 or position >= end:
            return None
        return self.view[position:end]

    # -- durability ---------------------------------------------------------------------

    def is_able_to_flush(self, least_pages: int) -> bool:
        """``MappedFile.isAbleToFlush``."""
        wrote = self.wrote_position
        flushed = self.flushed_position
        if wrote >= self.file_size and flushed < wrote:
            return True
        if least_pages > 0:
            return (wrote // OS_PAGE_SIZE) - (flushed // OS_PAGE_SIZE) >= least_pages
        return wrote > flushed

    def flush(self, least_pages: int = 0) -> int:
        """``MappedFile.flush``: make the written bytes durable; returns the flushed position."""
        if not self.available:
            return self.flushed_position
        if self.is_able_to_flush(least_pages):
            wrote = self.wrote_position
            self.sync()
            self.flushed_position = wrote
        return self.flushed_position

    def fileno(self) -> int | None:
        """The kept descriptor (``keep_fd``), None without one or once closed."""
        return self._fd

    def sync(self) -> None:
        """fdatasync the file: on Linux the same as ``msync(MS_SYNC)`` of the mapping, but it
        releases the GIL (``mmap.flush`` does not). Without a kept descriptor the file is
        reopened for the call."""
        if self._fd is not None:
            os.fdatasync(self._fd)
            return
        try:
            fd = os.open(self.path, os.O_RDWR)
        except FileNotFoundError:
            return
        try:
            os.fdatasync(fd)
        finally:
            os.close(fd)

    # -- lifecycle ----------------------------------------------------------------------

    def close(self) -> None:
        """Unmap (best effort: a slice still held by a reader keeps the mapping alive)."""
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None
        self.view.release()
        with contextlib.suppress(BufferError):
            self.mm.close()

    def destroy(self) -> bool:
        """``MappedFile.destroy``: delete the file. The mapping stays valid for readers
        still holding slices and disappears with the last of them."""
        self.available = False
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
        except OSError:
            _log.exception("cannot delete %s", self.path)
            return False
        with contextlib.suppress(BufferError):
            self.mm.close()
        return True


class MappedFileQueue:
    """The ordered files of one logical stream (``MappedFileQueue``)."""

    def __init__(
        self,
        store_path: str,
        mapped_file_size: int,
        *,
        keep_fd: bool,
        write_through: bool = False,
        warm: bool = False,
        warm_wait_s: float = 5.0,
        warm_writer: Callable[[str, int, Callable[[], bool]], bool] | None = None,
    ) -> None:
        self.store_path = store_path
        self.mapped_file_size = mapped_file_size
        self._keep_fd = keep_fd
        self._write_through = write_through
        self._lock = threading.Lock()
        #: Snapshot list, replaced on every change.
        self.files: list[MappedFile] = []
        self.flushed_where = 0
        #: The file after the last one, created ahead by :meth:`prepare_next_file` or
        #: :meth:`warm_next_file` (not in ``files`` until :meth:`create_next_file` takes it).
        self._spare: MappedFile | None = None
        #: ``warmMapedFileEnable``: :meth:`create_next_file` has the file after the one it
        #: returns written with zeros and synced on a thread (``AllocateMappedFileService``).
        self.warm = warm
        #: How long :meth:`create_next_file` waits for the file being warmed that it needs
        #: (Java's ``AllocateMappedFileService`` waits 5 s), after which it fails.
        self.warm_wait_s = warm_wait_s
        #: Writes a warm file (:func:`write_warm_file`; tests pass a slower or failing one).
        self._warm_writer = warm_writer if warm_writer is not None else write_warm_file
        #: The start offset of the file being warmed on a thread, -1 for none (not None: a
        #: compiled build would narrow an ``int | None`` attribute to ``int`` after a comparison
        #: and not read it back as None while another thread changes it under a wait).
        self._warming = -1
        self._warm_done = threading.Condition(self._lock)
        self._closing = False

    # -- loading ------------------------------------------------------------------------

    def load(self) -> None:
        """Open every file of the folder (``MappedFileQueue.load``); positions = file size.

        Names that are not 20 digits are ignored. Raises ``OSError`` for a file larger
        than the configured size (Java refuses to start in that case too).
        """
        if not os.path.isdir(self.store_path):
            return
        names = sorted(n for n in os.listdir(self.store_path) if len(n) == 20 and n.isdigit())
        files = []
        for name in names:
            mf = MappedFile(
                os.path.join(self.store_path, name),
                self.mapped_file_size,
                keep_fd=self._keep_fd,
                write_through=self._write_through,
            )
            mf.set_positions(self.mapped_file_size)
            files.append(mf)
        self.files = files

    # -- lookup -------------------------------------------------------------------------

    def last_file(self) -> MappedFile | None:
        files = self.files
        return files[-1] if files else None

    def first_file(self) -> MappedFile | None:
        files = self.files
        return files[0] if files else None

    def create_next_file(self, start_offset: int, now_ms: int | None = None) -> MappedFile:
        """``getLastMappedFile(startOffset, true)``: the last file, or a new one when there is
        none or the last is full."""
        with self._lock:
            files = self.files
            if files:
                last = files[-1]
                if not last.is_full:
                    return last
                create_offset = last.file_from_offset + self.mapped_file_size
            else:
                create_offset = start_offset - start_offset % self.mapped_file_size
            if self._warming == create_offset:
                # being warmed on a thread: the same file cannot be created here meanwhile
                deadline = time.monotonic() + self.warm_wait_s
                while self._warming == create_offset:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise OSError(
                            f"{file_name_for(create_offset)}: not warmed within {self.warm_wait_s} s"
                        )
                    self._warm_done.wait(left)
            spare, self._spare = self._spare, None
            if spare is not None and spare.file_from_offset == create_offset:
                mf = spare
                if now_ms is not None:
                    mf.last_modified_ms = now_ms
            else:
                if spare is not None:
                    spare.destroy()
                mf = self._new_file(create_offset, now_ms)
            if not files:
                mf.first_create_in_queue = True
            self.files = [*files, mf]
            if self.warm:
                self._warm_locked(create_offset + self.mapped_file_size)
            return mf

    def warm_next_file(self) -> None:
        """With :attr:`warm`: start warming the file that will follow the last one (the
        first file when there is none) on a thread, unless it is warmed or being warmed."""
        with self._lock:
            files = self.files
            if self.warm:
                self._warm_locked(files[-1].file_from_offset + self.mapped_file_size if files else 0)

    def _warm_locked(self, create_offset: int) -> None:
        spare = self._spare
        if (
            self._closing
            or self._warming >= 0
            or (spare is not None and spare.file_from_offset == create_offset)
        ):
            return
        self._warming = create_offset
        threading.Thread(
            target=self._warm_file, args=(create_offset,), name="AllocateMappedFileService", daemon=True
        ).start()

    def _warm_file(self, create_offset: int) -> None:
        """The warming thread: the file written, synced and mapped outside the lock, then
        kept as the spare if it is still the next one."""
        mf: MappedFile | None = None
        try:
            os.makedirs(self.store_path, exist_ok=True)
            path = os.path.join(self.store_path, file_name_for(create_offset))
            if self._warm_writer(path, self.mapped_file_size, self._is_closing):
                mf = MappedFile(
                    path, self.mapped_file_size, keep_fd=self._keep_fd, write_through=self._write_through
                )
        except FileExistsError:
            pass  # a file of that name is there already (loaded, or left by a crash): keep it
        except OSError as exc:
            _log.warning("cannot warm the next file %s: %s", file_name_for(create_offset), exc)
        with self._lock:
            self._warming = -1
            self._warm_done.notify_all()
            if mf is None:
                return
            files = self.files
            wanted = files[-1].file_from_offset + self.mapped_file_size if files else create_offset
            if self._closing or self._spare is not None or wanted != create_offset:
                mf.destroy()
                return
            self._spare = mf

    def prepare_next_file(self, now_ms: int | None = None) -> None:
        """Create (and allocate) the file that will follow the last one, so the append
        that needs it later cannot fail for lack of space. No-op without files."""
        with self._lock:
            files = self.files
            if not files:
                return
            create_offset = files[-1].file_from_offset + self.mapped_file_size
            spare = self._spare
            if spare is not None:
                if spare.file_from_offset == create_offset:
                    return
                spare.destroy()
                self._spare = None
            self._spare = self._new_file(create_offset, now_ms)

    def _new_file(self, create_offset: int, now_ms: int | None) -> MappedFile:
        os.makedirs(self.store_path, exist_ok=True)
        path = os.path.join(self.store_path, file_name_for(create_offset))
        return MappedFile(
            path,
            self.mapped_file_size,
            keep_fd=self._keep_fd,
            write_through=self._write_through,
            now_ms=now_ms,
        )

    def _drop_spare(self) -> None:
        spare, self._spare = self._spare, None
        if spare is not None:
            spare.destroy()

    def find_by_offset(self, offset: int, return_first_on_not_found: bool = False) -> MappedFile | None:
        """``findMappedFileByOffset``: the file holding ``offset``."""
        files = self.files
        if not files:
            return None
        first = files[0]
        index = offset // self.mapped_file_size - first.file_from_offset // self.mapped_file_size
        if 0 <= index < len(files):
            mf = files[index]
            if mf.file_from_offset <= offset < mf.file_from_offset + self.mapped_file_size:
                return mf
        for mf in files:  # fallback: gaps left by a crash
            if mf.file_from_offset <= offset < mf.file_from_offset + self.mapped_file_size:
                return mf
        return first if return_first_on_not_found else None

    def min_offset(self) -> int:
        """``getMinOffset``: start of the first file, -1 when there is none."""
        files = self.files
        return files[0].file_from_offset if files else -1

    def max_offset(self) -> int:
        """``getMaxOffset``: end of the written bytes of the last file, 0 when empty."""
        files = self.files
        if not files:
            return 0
        last = files[-1]
        return last.file_from_offset + last.wrote_position

    # -- recovery -----------------------------------------------------------------------

    def truncate_dirty_files(self, offset: int) -> None:
        """``truncateDirtyFiles``: forget every byte at or after ``offset``: the file that
        holds it is cut there (tail zeroed), later files are deleted."""
        with self._lock:
            self._drop_spare()
            keep: list[MappedFile] = []
            for mf in self.files:
                tail = mf.file_from_offset + self.mapped_file_size
                if tail <= offset:
                    keep.append(mf)
                elif offset >= mf.file_from_offset:
                    pos = offset - mf.file_from_offset
                    mf.zero_from(pos)
                    mf.set_positions(pos)
                    keep.append(mf)
                else:
                    mf.destroy()
            self.files = keep
        self.flushed_where = min(self.flushed_where, offset)

    def delete_last_file(self) -> None:
        """``deleteLastMappedFile``."""
        with self._lock:
            self._drop_spare()
            files = self.files
            if files:
                files[-1].destroy()
                self.files = files[:-1]

    # -- retention ----------------------------------------------------------------------

    def delete_expired_by_time(self, expired_ms: int, now_ms: int, clean_immediately: bool) -> int:
        """``deleteExpiredFileByTime``: delete leading files last modified more than
        ``expired_ms`` ago (all of them when ``clean_immediately``), never the last file,
        at most ``DELETE_FILES_BATCH_MAX`` per call. Returns the number deleted."""
        files = self.files
        doomed: list[MappedFile] = []
        for mf in files[:-1]:
            if now_ms >= mf.last_modified_ms + expired_ms or clean_immediately:
                doomed.append(mf)
                if len(doomed) >= DELETE_FILES_BATCH_MAX:
                    break
            else:
                break
        return self._delete(doomed)

    def delete_expired_by_offset(self, offset: int, unit_size: int) -> int:
        """``deleteExpiredFileByOffset``: delete leading consume-queue files whose last unit
        points before commit-log offset ``offset``; never the last file."""
        files = self.files
        doomed: list[MappedFile] = []
        for mf in files[:-1]:
            last_unit = mf.select(self.mapped_file_size - unit_size, unit_size)
            if last_unit is None or _LONG.unpack_from(last_unit)[0] >= offset:
                break
            doomed.append(mf)
        return self._delete(doomed)

    def _delete(self, doomed: list[MappedFile]) -> int:
        if not doomed:
            return 0
        with self._lock:
            gone = {id(mf) for mf in doomed}
            self.files = [mf for mf in self.files if id(mf) not in gone]
        for mf in doomed:
            mf.destroy()
        return len(doomed)

    # -- durability ---------------------------------------------------------------------

    def flush(self, least_pages: int = 0) -> bool:
        """``MappedFileQueue.flush``: flush every file from ``flushed_where`` on; returns
        True when the flushed position did not move (nothing was due)."""
        before = self.flushed_where
        for mf in self.files:
            if mf.file_from_offset + self.mapped_file_size <= before:
                continue
            mf.flush(least_pages)
            self.flushed_where = mf.file_from_offset + mf.flushed_position
            if mf.flushed_position < mf.file_size:
                break
        return self.flushed_where == before

    def how_much_to_flush(self) -> int:
        return self.max_offset() - self.flushed_where

    # -- lifecycle ----------------------------------------------------------------------

    def _is_closing(self) -> bool:
        return self._closing

    def _stop_warming_locked(self) -> None:
        """Cancel a file being warmed and wait (the lock released meanwhile) until its thread
        has removed it."""
        self._closing = True
        while self._warming >= 0:
            self._warm_done.wait()

    def close(self) -> None:
        with self._lock:
            self._stop_warming_locked()
            for mf in self.files:
                mf.close()
            spare, self._spare = self._spare, None
            if spare is not None:
                spare.close()

    def destroy(self) -> None:
        """Delete every file and the folder if it is left empty."""
        with self._lock:
            self._stop_warming_locked()
            self._drop_spare()
            for mf in self.files:
                mf.destroy()
            self.files = []
            self.flushed_where = 0
        with contextlib.suppress(OSError):
            os.rmdir(self.store_path)


def now_ms() -> int:
    """Wall-clock milliseconds (the default store clock)."""
    return time.time_ns() // 1_000_000
