"""The index's durability (``IndexService``): Java syncs an index file once, when it is full,
and at shutdown; the periodic logics flush (FlushConsumeQueueService) syncs the consume queues
and the checkpoint, never the index file being written. The checkpoint's index timestamp moves
only with a synced index file, and bounds crash recovery only with ``messageIndexSafe``."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from rocketq.broker.store.checkpoint import StoreCheckpoint
from tests.unit.store.conftest import StoreFactory, make_msg


@pytest.fixture
def synced(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths ``os.fdatasync`` is called on, in order."""
    paths: list[str] = []
    real = os.fdatasync

    def spy(fd: int) -> None:
        paths.append(os.readlink(f"/proc/self/fd/{fd}"))
        real(fd)

    monkeypatch.setattr(os, "fdatasync", spy)
    return paths


def _index_syncs(paths: list[str]) -> list[str]:
    return [p for p in paths if f"{os.sep}index{os.sep}" in p]


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc/self/fd")
def test_only_full_index_files_are_synced_periodically_and_the_rest_at_shutdown(
    factory: StoreFactory, synced: list[str]
) -> None:
    store = factory(flush_interval_consume_queue_ms=3_600_000)  # the periodic pass only when called
    for i in range(10):
        assert store.put_message(make_msg(queue_id=i % 2, keys=f"k{i}")).append is not None
    store._periodic_flush_logics()
    assert _index_syncs(synced) == []  # the file being written is left to the page cache
    assert any(p.endswith(f"{os.sep}checkpoint") for p in synced)  # (the spy sees the pass's syncs)
    checkpoint = store.checkpoint
    assert checkpoint is not None
    assert checkpoint.logics_msg_timestamp > 0 and checkpoint.index_msg_timestamp == 0

    i = 10
    while len(store.index_service.files) < 2:  # fill the first file: the next put rolls
        assert store.put_message(make_msg(queue_id=i % 2, keys=f"k{i}")).append is not None
        i += 1
    full, current = store.index_service.files
    synced.clear()
    store._periodic_flush_logics()
    assert _index_syncs(synced) == [full.path]  # the full file, once
    assert checkpoint.index_msg_timestamp == full.end_timestamp > 0
    synced.clear()
    store._periodic_flush_logics()
    assert _index_syncs(synced) == []

    last = store.put_message(make_msg(keys="last"))
    assert last.append is not None
    synced.clear()
    store.shutdown()
    assert current.path in _index_syncs(synced)  # shutdown syncs the rest
    reopened = StoreCheckpoint(str(factory.root / "checkpoint"))
    try:
        assert reopened.index_msg_timestamp >= last.append.store_timestamp
    finally:
        reopened.close()


@pytest.mark.parametrize("safe", [False, True])
def test_crash_recovery_is_bounded_by_the_index_timestamp_only_when_the_index_is_safe(
    factory: StoreFactory, caplog: pytest.LogCaptureFixture, safe: bool
) -> None:
    store = factory(message_index_safe=safe, flush_interval_consume_queue_ms=3_600_000, max_index_num=4096)
    for i in range(300):  # several 64 KiB segments, the index file never full
        if i == 200:
            factory.clock.now += 60_000  # the last segment's records a minute newer
        assert store.put_message(make_msg(queue_id=i % 2, body=b"." * 700, keys=f"k{i}")).append is not None
    store._periodic_flush_logics()
    store.commit_log.flush(0)
    store._periodic_flush_logics()
    assert len(store.commit_log.queue.files) >= 3
    factory.crash(store)
    with caplog.at_level(logging.INFO, logger="rocketq.broker.store"):
        store = factory(message_index_safe=safe, max_index_num=4096)
    (line,) = [r.getMessage() for r in caplog.records if "scan from segment" in r.getMessage()]
    start = int(line.rsplit(" ", 1)[1].rstrip(")"))
    # no index file was ever synced, so the index timestamp is 0: a safe index re-reads all
    if safe:
        assert start == 0
    else:
        assert start > 0
    assert store.query_message("TopicA", "k299", 32, 0, 2**62).buffers  # the page cache kept it


def test_index_flush_full_is_a_no_op_without_files(tmp_path: Path) -> None:
    from rocketq.broker.store.index import IndexService

    service = IndexService(str(tmp_path / "index"), 64, 256, 64, lambda: 1)
    assert service.flush_full() == 0
