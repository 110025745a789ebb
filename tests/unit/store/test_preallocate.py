"""``preallocate`` and ``MappedFile.ensure_allocated`` (issue #21): store files are backed by
blocks before they are written through the mapping, with or without ``posix_fallocate``."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from rocketq.broker.store.mapped_file import MappedFile


def _blocks(path: Path) -> int:
    return os.stat(path).st_blocks * 512


@pytest.mark.parametrize("fallocate", ["native", "unsupported"])
def test_files_are_allocated_and_data_survives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fallocate: str
) -> None:
    if fallocate == "unsupported":  # e.g. a filesystem without fallocate: zeros are written

        def refuse(fd: int, offset: int, length: int) -> None:
            raise OSError(errno.EOPNOTSUPP, "Operation not supported")

        monkeypatch.setattr(os, "posix_fallocate", refuse)
    path = tmp_path / "00000000000000000000"
    size = 256 * 1024
    mf = MappedFile(str(path), size, keep_fd=True)
    try:
        assert os.path.getsize(path) == size and _blocks(path) >= size
        assert mf.append(b"x" * 10_000)
        mf.sync()
        mf.zero_from(10_000)  # recovery cuts the tail: it is allocated again
        assert mf.allocated and _blocks(path) >= size
        # a tail left sparse by an older version is allocated without touching the data
        os.truncate(path, 8192)
        os.truncate(path, size)
        mf.ensure_allocated(0)
        assert _blocks(path) >= size
        assert bytes(mf.view[:8192]) == b"x" * 8192 and not any(mf.view[8192:])
    finally:
        mf.close()


def test_a_file_that_cannot_be_allocated_is_not_left_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(fd: int, offset: int, length: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "posix_fallocate", full)
    path = tmp_path / "00000000000000065536"
    with pytest.raises(OSError) as info:
        MappedFile(str(path), 65536, keep_fd=False)
    assert info.value.errno == errno.ENOSPC
    assert not path.exists()
