"""Under SYNC_FLUSH the commit log is written through its descriptor (``pwrite``) and read
through its mapping (``rocketq.broker.store.mapped_file``); under ASYNC_FLUSH it is stored
into the mapping. Either way what a put wrote is what a get reads; a write the kernel refuses
publishes nothing (no queue offset used up, nothing readable), and the next write goes on
from the same place."""

from __future__ import annotations

import os

import pytest

from rocketq.broker.store import MessageStore, PutMessageStatus
from rocketq.broker.store.commit_log import BLANK_MAGIC_CODE
from rocketq.protocol.message import decode_records
from tests.unit.store.conftest import StoreFactory, make_msg


def _bodies(store: MessageStore, topic: str, queue_id: int) -> list[bytes]:
    got = store.get_message("g", topic, queue_id, 0, 32)
    return [m.body for m in decode_records(got.body())] if got.message_count else []


def test_only_sync_flush_writes_through_the_descriptor(factory: StoreFactory) -> None:
    for policy, through in (("SYNC_FLUSH", True), ("ASYNC_FLUSH", False)):
        store = factory(root=factory.root / policy, flush_disk_type=policy)
        assert store.put_message(make_msg(body=b"x")).ok
        mf = store.commit_log.queue.last_file()
        assert mf is not None
        assert mf.write_through is through
        assert _bodies(store, "TopicA", 0) == [b"x"]


def test_a_refused_write_publishes_nothing_and_the_next_put_takes_its_place(factory: StoreFactory) -> None:
    store = factory(flush_disk_type="SYNC_FLUSH")
    assert store.put_message(make_msg(body=b"first")).ok
    mf = store.commit_log.queue.last_file()
    assert mf is not None
    assert mf.write_through
    wrote = mf.wrote_position
    rw_fd = mf._fd
    assert rw_fd is not None  # the commit log keeps its descriptor
    ro_fd = os.open(mf.path, os.O_RDONLY)
    try:
        mf._fd = ro_fd  # the kernel refuses pwrite on it (EBADF): a real failed write
        batch = store.put_messages([make_msg(body=b"lost-1"), make_msg(body=b"lost-2")])
        single = store.put_message(make_msg(body=b"lost-3"))
    finally:
        mf._fd = rw_fd
        os.close(ro_fd)
    assert batch.status is PutMessageStatus.UNKNOWN_ERROR
    assert single.status is PutMessageStatus.UNKNOWN_ERROR
    assert mf.wrote_position == wrote
    assert store.commit_log.topic_queue_table[("TopicA", 0)] == 1
    after = store.put_message(make_msg(body=b"second"))
    assert after.ok
    assert after.append is not None
    assert after.append.logics_offset == 1
    assert after.append.wrote_offset == wrote
    assert _bodies(store, "TopicA", 0) == [b"first", b"second"]


@pytest.mark.parametrize("policy", ["SYNC_FLUSH", "ASYNC_FLUSH"])
def test_the_end_of_file_filler_is_written_too(factory: StoreFactory, policy: str) -> None:
    store = factory(flush_disk_type=policy)
    size = store.config.mapped_file_size_commit_log
    body = b"y" * 3000
    n = 0
    while len(store.commit_log.queue.files) < 2:
        assert store.put_message(make_msg(body=body)).ok
        n += 1
    first = store.commit_log.queue.files[0]
    with open(first.path, "rb") as f:  # through the file, not the mapping
        data = f.read(size)
    end = 0
    while True:
        total = int.from_bytes(data[end : end + 4], "big", signed=True)
        magic = int.from_bytes(data[end + 4 : end + 8], "big", signed=True)
        if magic == BLANK_MAGIC_CODE:
            assert end + total == size
            break
        end += total
    assert len(_bodies(store, "TopicA", 0)) == min(n, 32)


def _quiet_sync_flush_store(factory: StoreFactory) -> MessageStore:
    """A started SYNC_FLUSH store whose GroupCommitService thread is stopped (its idle
    passes would flush behind the test's back)."""
    store = factory(flush_disk_type="SYNC_FLUSH")  # 64 KiB segments
    group_commit = store._group_commit
    assert group_commit is not None
    group_commit.shutdown()
    return store


def test_a_sync_made_outside_flush_is_recorded(factory: StoreFactory) -> None:
    """``sync_targets`` / ``mark_synced`` (the loop's native AIO syncs): the descriptors of
    the segments with unsynced bytes, across a segment roll; once recorded, ``flush`` has
    nothing left to do and the checkpoint's store time moves."""
    store = _quiet_sync_flush_store(factory)
    log = store.commit_log
    assert log.sync_targets() is None  # nothing written
    assert store.put_message(make_msg(body=b"a" * 40_000)).ok
    log.flush(0)
    assert log.sync_targets() is None  # durable already
    assert store.put_message(make_msg(body=b"b" * 20_000)).ok
    assert store.put_message(make_msg(body=b"c" * 20_000)).ok  # rolls to the next segment
    files = log.queue.files
    assert len(files) == 2
    targets = log.sync_targets()
    assert targets is not None
    fds, target, ts = targets
    assert fds == [files[0].fileno(), files[1].fileno()]
    assert target == log.queue.max_offset()
    assert ts == files[1].store_timestamp
    for fd in fds:
        os.fdatasync(fd)
    log.mark_synced(target, ts)
    assert log.flushed_where == target
    assert log.flushed_store_timestamp == ts
    assert [mf.flushed_position for mf in files] == [files[0].wrote_position, files[1].wrote_position]
    assert log.flush(0) is False  # nothing was left to sync
    assert log.sync_targets() is None


def test_recording_a_sync_does_not_wait_for_a_flush_in_progress(factory: StoreFactory) -> None:
    store = _quiet_sync_flush_store(factory)
    log = store.commit_log
    assert store.put_message(make_msg(body=b"x")).ok
    targets = log.sync_targets()
    assert targets is not None
    _fds, target, ts = targets
    with log._flush_lock:  # a flush thread in the middle of its sync
        log.mark_synced(target, ts)  # would deadlock if it waited
        assert log.flushed_where == target  # counted at once
        assert log.queue.flushed_where < target  # the flush's own bookkeeping is left alone
    assert log.sync_targets() is None


def test_the_idle_flush_leaves_a_sync_in_flight_its_bytes(factory: StoreFactory) -> None:
    """The GroupCommitService's pass without waiters (``flush_unclaimed``) syncs what WAIT=false
    puts wrote, but not the bytes a native AIO sync in flight already covers."""
    store = _quiet_sync_flush_store(factory)
    log = store.commit_log
    assert store.put_message(make_msg(body=b"x")).ok
    targets = log.sync_targets()
    assert targets is not None
    log.sync_started(targets[1])
    assert log.flush_unclaimed() is False  # the loop's sync covers everything written
    assert log.queue.flushed_where == 0
    assert store.put_message(make_msg(body=b"y")).ok  # not covered by that sync
    assert log.flush_unclaimed() is True
    assert log.flushed_where == log.queue.max_offset()
