"""``warmMapedFileEnable``: commit-log segments written with zeros and synced ahead of use, on a
thread (``AllocateMappedFileService``), so that a sync after a put only writes the data back.

Checked on real files: the warm file's extents are written (FIEMAP), a fallocated one's are
not; the queue hands the warmed file to the roll that needs it and warms the next; a roll waits
for the file being warmed (and fails after ``warm_wait_s``, as Java's allocation wait does);
closing cancels a warm in progress; a store with warm segments recovers from a clean stop and a
crash with every message, and the spare it left is not taken for data."""

from __future__ import annotations

import fcntl
import os
import struct
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from rocketq.broker.store import MessageStore
from rocketq.broker.store.mapped_file import MappedFile, MappedFileQueue, file_name_for, write_warm_file
from rocketq.protocol.message import decode_records
from tests.unit.store.conftest import StoreFactory, make_msg

SIZE = 256 * 1024

_FS_IOC_FIEMAP = 0xC020660B
_FIEMAP_HEAD = struct.Struct("=QQIIII")
_FIEMAP_EXTENT = struct.Struct("=QQQQQIIII")
_FIEMAP_EXTENT_UNWRITTEN = 0x800
_FIEMAP_FLAG_SYNC = 0x1


def unwritten_extents(path: Path) -> int | None:
    """How many of the file's extents are allocated but unwritten (FIEMAP); None where the
    filesystem does not say (tmpfs, no FIEMAP)."""
    count = 64
    buf = bytearray(_FIEMAP_HEAD.size + count * _FIEMAP_EXTENT.size)
    _FIEMAP_HEAD.pack_into(buf, 0, 0, 2**64 - 1, _FIEMAP_FLAG_SYNC, 0, count, 0)
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.ioctl(fd, _FS_IOC_FIEMAP, buf)
    except OSError:
        return None
    finally:
        os.close(fd)
    mapped = _FIEMAP_HEAD.unpack_from(buf, 0)[3]
    flags = [
        _FIEMAP_EXTENT.unpack_from(buf, _FIEMAP_HEAD.size + i * _FIEMAP_EXTENT.size)[5] for i in range(mapped)
    ]
    return sum(1 for f in flags if f & _FIEMAP_EXTENT_UNWRITTEN)


def _all_bodies(store: MessageStore) -> list[bytes]:
    bodies: list[bytes] = []
    while True:
        got = store.get_message("g", "TopicA", 0, len(bodies), 32)
        if not got.message_count:
            return bodies
        bodies += [m.body for m in decode_records(got.body())]


def _never() -> bool:
    return False


def _settled(queue: MappedFileQueue, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while queue._warming >= 0:
        assert time.monotonic() < deadline, "the warm thread never finished"
        time.sleep(0.005)


def test_a_warm_file_is_written_zeros_and_a_fallocated_one_is_not(tmp_path: Path) -> None:
    warm = tmp_path / "warm"
    assert write_warm_file(str(warm), SIZE, _never)
    assert warm.read_bytes() == bytes(SIZE)
    assert os.stat(warm).st_blocks * 512 >= SIZE
    plain = tmp_path / file_name_for(0)
    MappedFile(str(plain), SIZE, keep_fd=True).close()
    fallocated = unwritten_extents(plain)
    if fallocated is None:
        pytest.skip("the filesystem does not report extents (FIEMAP)")
    if fallocated == 0:
        pytest.skip("this filesystem's fallocate leaves no unwritten extents")
    assert unwritten_extents(warm) == 0


def test_a_warm_file_never_replaces_an_existing_one_and_can_be_cancelled(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"data")
    with pytest.raises(FileExistsError):
        write_warm_file(str(path), SIZE, _never)
    assert path.read_bytes() == b"data"
    assert not write_warm_file(str(tmp_path / "g"), SIZE, lambda: True)
    assert not (tmp_path / "g").exists()


def test_the_roll_takes_the_warmed_file_and_warms_the_next(tmp_path: Path) -> None:
    queue = MappedFileQueue(str(tmp_path), SIZE, keep_fd=True, write_through=True, warm=True)
    try:
        queue.warm_next_file()
        _settled(queue)
        spare = queue._spare
        assert spare is not None and spare.file_from_offset == 0
        first = queue.create_next_file(0)
        assert first is spare and first.write_through and first.first_create_in_queue
        _settled(queue)  # the roll started warming the one after
        second_spare = queue._spare
        assert second_spare is not None and second_spare.file_from_offset == SIZE
        assert first.append(b"x" * 100)
        first.wrote_position = SIZE  # full
        second = queue.create_next_file(0)
        assert second is second_spare
        assert [mf.file_from_offset for mf in queue.files] == [0, SIZE]
        _settled(queue)
        assert queue._spare is not None and queue._spare.file_from_offset == 2 * SIZE
    finally:
        queue.close()


class _Held:
    """A queue whose warm thread holds each file back until :attr:`release` is set (then
    writes it for real; gives up when cancelled); :attr:`started` says the thread began."""

    def __init__(self, path: Path, warm_wait_s: float = 5.0) -> None:
        self.release, self.started = threading.Event(), threading.Event()
        self.queue = MappedFileQueue(
            str(path), SIZE, keep_fd=True, warm=True, warm_wait_s=warm_wait_s, warm_writer=self._write
        )

    def _write(self, path: str, size: int, cancelled: Callable[[], bool]) -> bool:
        self.started.set()
        while not self.release.wait(0.01):
            if cancelled():
                return False
        return write_warm_file(path, size, cancelled)

    def warming(self) -> MappedFileQueue:
        """The queue, its first file's warm begun and held."""
        self.queue.warm_next_file()
        assert self.started.wait(5)
        return self.queue

    def close(self) -> None:
        self.release.set()
        self.queue.close()


def test_a_roll_waits_for_the_file_being_warmed(tmp_path: Path) -> None:
    held = _Held(tmp_path)
    try:
        queue = held.warming()
        timer = threading.Timer(0.2, held.release.set)
        timer.start()
        begin = time.monotonic()
        first = queue.create_next_file(0)
        assert time.monotonic() - begin >= 0.15  # it waited for the warm file ...
        assert first.file_from_offset == 0
        assert (tmp_path / file_name_for(0)).read_bytes() == bytes(SIZE)  # ... and took it
        timer.join()
    finally:
        held.close()


def test_a_roll_fails_when_the_warm_file_is_late_and_the_next_one_works(tmp_path: Path) -> None:
    held = _Held(tmp_path, warm_wait_s=0.1)
    try:
        queue = held.warming()
        with pytest.raises(OSError, match="not warmed"):
            queue.create_next_file(0)
        assert queue.files == []
        held.release.set()
        _settled(queue)
        assert queue.create_next_file(0).file_from_offset == 0
    finally:
        held.close()


def test_close_cancels_a_warm_in_progress_and_removes_its_file(tmp_path: Path) -> None:
    held = _Held(tmp_path)
    queue = held.warming()
    queue.close()  # returns once the warm thread gave up (the file is still held back)
    assert queue._warming == -1 and queue._spare is None
    assert not (tmp_path / file_name_for(0)).exists()
    assert not [t for t in threading.enumerate() if t.name == "AllocateMappedFileService"]


def test_a_failed_warm_leaves_the_roll_to_create_the_file_itself(tmp_path: Path) -> None:
    def failing(path: str, size: int, cancelled: Callable[[], bool]) -> bool:
        raise OSError(28, "No space left on device")

    queue = MappedFileQueue(str(tmp_path), SIZE, keep_fd=True, warm=True, warm_writer=failing)
    try:
        queue.warm_next_file()
        _settled(queue)
        assert queue._spare is None
        mf = queue.create_next_file(0)
        assert mf.file_from_offset == 0 and os.path.getsize(mf.path) == SIZE
    finally:
        queue.close()


@pytest.mark.parametrize("stop", ["clean", "crash"])
def test_a_store_with_warm_segments_recovers_every_message(factory: StoreFactory, stop: str) -> None:
    conf = {"flush_disk_type": "SYNC_FLUSH", "warm_maped_file_enable": True}
    store = factory(**conf)
    bodies = [f"m{i:02d}".encode() * 600 for i in range(40)]  # 2,400 bytes each: 64 KiB segments roll
    for body in bodies:
        assert store.put_message(make_msg(body=body)).ok
    queue = store.commit_log.queue
    _settled(queue)
    assert queue._spare is not None  # a warmed segment waits on disk beyond the data
    spare_path = queue._spare.path
    segments = len(queue.files)
    assert segments > 1
    max_phy = store.get_max_phy_offset()
    if stop == "clean":
        store.shutdown()
        factory.stores.remove(store)
    else:
        factory.crash(store)
    again = factory(**conf)
    assert again.get_max_phy_offset() == max_phy
    assert _all_bodies(again) == bodies
    assert again.put_message(make_msg(body=b"after")).ok
    assert _all_bodies(again) == [*bodies, b"after"]
    # the spare of the first run holds no data and is the next segment, or is gone
    files = [mf.path for mf in again.commit_log.queue.files]
    assert spare_path not in files[: segments - 1]
