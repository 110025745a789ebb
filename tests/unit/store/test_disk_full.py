"""The store on a full disk (issue #21 item 1): puts are refused with Java's statuses, never
a SIGBUS; what was acknowledged stays readable; writes resume once space is freed; a store
loaded on a full disk comes up read-only.

Each test runs on two volumes: a real 1 MiB tmpfs (mounted when the test may mount, as root
on Linux) and a simulated one (``os.posix_fallocate`` refusing past a capacity, with the
store's disk usage measured against it), which always runs.
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from rocketq.broker.store import MessageStore, MessageStoreConfig, PutMessageStatus
from rocketq.broker.store.clean_service import default_disk_usage
from rocketq.protocol.message import decode_records
from tests.unit.store.conftest import TINY, FakeClock, make_msg

_VOLUME = 1024 * 1024
_REFUSALS = {PutMessageStatus.SERVICE_NOT_AVAILABLE, PutMessageStatus.CREATE_MAPEDFILE_FAILED}


class Volume:
    """A small volume at ``path``: ``ballast(n)`` takes space, ``free_ballast()`` gives it back."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.ballast_files: list[Path] = []

    def usage(self, _path: str) -> float:
        return default_disk_usage(str(self.path))

    def ballast(self, nbytes: int) -> None:
        """Take ``nbytes`` (or as much as is left) with an allocated file."""
        path = self.path / f"ballast-{len(self.ballast_files)}"
        self.ballast_files.append(path)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            chunk = 4096
            done = 0
            while done < nbytes:
                try:
                    os.posix_fallocate(fd, done, chunk)
                except OSError as exc:
                    if exc.errno == errno.ENOSPC:
                        return
                    raise
                done += chunk
        finally:
            os.close(fd)

    def free_ballast(self) -> None:
        for path in self.ballast_files:
            path.unlink(missing_ok=True)
        self.ballast_files = []

    def mark_sparse(self, path: str, from_byte: int) -> None:
        """What an older rocketq left behind: the file's tail not allocated."""
        size = os.path.getsize(path)
        os.truncate(path, from_byte)
        os.truncate(path, size)


class SimulatedVolume(Volume):
    """``os.posix_fallocate`` refuses (ENOSPC) once files under ``path`` would hold more than
    the capacity; usage is measured against it. Used where no tmpfs can be mounted."""

    def __init__(self, path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        super().__init__(path)
        self.allocated: dict[str, int] = {}
        real = os.posix_fallocate

        def fallocate(fd: int, offset: int, length: int) -> None:
            name = os.readlink(f"/proc/self/fd/{fd}")
            if not name.startswith(str(self.path)):
                real(fd, offset, length)
                return
            want = max(self.allocated.get(name, 0), offset + length)
            if self.used() - self.allocated.get(name, 0) + want > _VOLUME:
                raise OSError(errno.ENOSPC, "No space left on device (simulated)")
            self.allocated[name] = want
            os.ftruncate(fd, max(os.fstat(fd).st_size, offset + length))

        monkeypatch.setattr(os, "posix_fallocate", fallocate)

    def used(self) -> int:
        return sum(n for p, n in self.allocated.items() if os.path.exists(p))

    def usage(self, _path: str) -> float:
        return self.used() / _VOLUME

    def mark_sparse(self, path: str, from_byte: int) -> None:
        super().mark_sparse(path, from_byte)
        self.allocated[path] = from_byte


def _can_mount() -> bool:
    return os.geteuid() == 0 and shutil.which("mount") is not None


@pytest.fixture(params=["tmpfs", "simulated"])
def volume(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Volume]:
    path = tmp_path / "vol"
    path.mkdir()
    if request.param == "simulated":
        yield SimulatedVolume(path, monkeypatch)
        return
    mounted = _can_mount() and (
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={_VOLUME}", "tmpfs", str(path)],
            capture_output=True,
            check=False,
        ).returncode
        == 0
    )
    if not mounted:
        pytest.skip("cannot mount a tmpfs here; the simulated volume covers the same test")
    try:
        yield Volume(path)
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def _store(volume: Volume) -> MessageStore:
    config = MessageStoreConfig(store_path_root_dir=str(volume.path / "store"), **TINY)
    store = MessageStore(config, clock_ms=FakeClock(), disk_usage=volume.usage)
    assert store.load()
    store.start()
    return store


def _fill(store: MessageStore, start: int = 0) -> tuple[dict[int, bytes], set[PutMessageStatus]]:
    """Put 1 KiB messages until 20 in a row are refused; (acked offset -> body, statuses)."""
    acked: dict[int, bytes] = {}
    refused: set[PutMessageStatus] = set()
    in_a_row = 0
    i = start
    while in_a_row < 20:
        body = f"m{i:06d}".encode() * 128
        i += 1
        result = store.put_message(make_msg("Full", 0, body, keys=f"k{i}"))
        if result.ok:
            assert result.append is not None
            acked[result.append.logics_offset] = body
            in_a_row = 0
        else:
            refused.add(result.status)
            in_a_row += 1
        assert i - start < 5000, "the volume never filled up"
    return acked, refused


def _read_all(store: MessageStore) -> dict[int, bytes]:
    out: dict[int, bytes] = {}
    offset = 0
    while True:
        got = store.get_message("g", "Full", 0, offset, 32)
        if not got.buffers:
            return out
        for msg in decode_records(got.body()):
            out[msg.queue_offset] = msg.body
        offset = got.next_begin_offset


def test_a_full_volume_refuses_puts_keeps_reads_and_recovers(volume: Volume) -> None:
    store = _store(volume)
    try:
        volume.ballast(_VOLUME // 4)
        acked, refused = _fill(store)
        assert acked and refused and refused <= _REFUSALS, refused
        assert _read_all(store) == acked  # nothing acknowledged is lost, reads go on
        volume.free_ballast()
        store.check_space()
        assert not store.is_disk_full
        more, _ = _fill(store, 100_000)
        assert more, "writes must be accepted again once space is freed"
        assert _read_all(store) == {**acked, **more}
    finally:
        store.shutdown()


def test_a_store_loaded_on_a_full_disk_is_read_only_until_space_returns(volume: Volume) -> None:
    store = _store(volume)
    acked = {}
    for i in range(50):
        result = store.put_message(make_msg("Full", 0, b"x%d" % i))
        assert result.ok and result.append is not None
        acked[result.append.logics_offset] = b"x%d" % i
    last = store.commit_log.queue.last_file()
    assert last is not None
    wrote, path = last.wrote_position, last.path
    store.shutdown()
    volume.mark_sparse(path, wrote)  # as an older version left its segments
    volume.ballast(_VOLUME)  # and now the disk is full
    store = _store(volume)
    try:
        assert store.read_only_reason is not None
        assert store.put_message(make_msg("Full", 0, b"no")).status is PutMessageStatus.SERVICE_NOT_AVAILABLE
        assert _read_all(store) == acked
        volume.free_ballast()
        store.check_space()
        assert store.read_only_reason is None
        result = store.put_message(make_msg("Full", 0, b"yes"))
        assert result.ok
        assert _read_all(store) == {**acked, 50: b"yes"}
    finally:
        store.shutdown()
