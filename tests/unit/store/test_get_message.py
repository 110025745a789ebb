"""``get_message``: every row of the store read table (reference 6.2, DefaultMessageStore
4.9.7), filtering, scan limits and the in-memory / on-disk transfer limits."""

from __future__ import annotations

import pytest

from rocketq.broker.store import GetMessageStatus, MessageStore
from rocketq.protocol.java import string_hash
from rocketq.protocol.message import decode_records
from tests.unit.store.conftest import StoreFactory, make_msg

S = GetMessageStatus


def _fill(store: MessageStore, n: int, topic: str = "TopicA", queue_id: int = 0, body: bytes = b"m") -> None:
    for i in range(n):
        tags = ("TagA", "TagB", "TagC")[i % 3]
        assert store.put_message(
            make_msg(topic=topic, queue_id=queue_id, body=body + b"%d" % i, tags=tags)
        ).ok


@pytest.mark.parametrize(
    ("offset", "status", "next_begin"),
    [
        (0, S.FOUND, 5),
        (3, S.FOUND, 5),
        (5, S.OFFSET_OVERFLOW_ONE, 5),  # == max: the broker long-polls
        (6, S.OFFSET_OVERFLOW_BADLY, 5),  # > max: next = max
        (1000, S.OFFSET_OVERFLOW_BADLY, 5),
    ],
)
def test_offset_rows(store: MessageStore, offset: int, status: GetMessageStatus, next_begin: int) -> None:
    _fill(store, 5)
    got = store.get_message("g", "TopicA", 0, offset, 32)
    assert (got.status, got.next_begin_offset, got.min_offset, got.max_offset) == (status, next_begin, 0, 5)
    assert got.message_count == (5 - offset if status is S.FOUND else 0)


@pytest.mark.parametrize("offset", [0, 7])
def test_unknown_queue_is_an_empty_queue(store: MessageStore, offset: int) -> None:
    # Java's findConsumeQueue creates a missing queue on lookup: NO_MESSAGE_IN_QUEUE, next 0
    # (golden pull.jsonl: empty q1 at 0 and at 7 both answer NO_MESSAGE_IN_QUEUE).
    _fill(store, 2)
    got = store.get_message("g", "TopicA", 1, offset, 32)
    assert (got.status, got.next_begin_offset, got.min_offset, got.max_offset) == (
        S.NO_MESSAGE_IN_QUEUE,
        0,
        0,
        0,
    )
    assert store.get_max_offset_in_queue("TopicA", 1) == 0
    assert store.get_min_offset_in_queue("TopicA", 1) == 0
    assert store.get_earliest_message_time("TopicA", 1) == -1


def test_no_matched_logic_queue(store: MessageStore) -> None:
    got = store.get_message("g", "TopicA", -1, 3, 32)
    assert (got.status, got.next_begin_offset) == (S.NO_MATCHED_LOGIC_QUEUE, 0)


def test_offset_too_small_after_retention(factory: StoreFactory) -> None:
    store = factory()
    _fill(store, 200, body=b"x" * 900)  # > 2 segments of 64 KiB
    factory.disk.usage = 0.95  # over the clean-forcibly ratio: delete regardless of age
    assert store.clean_expired() > 0
    min_offset = store.get_min_offset_in_queue("TopicA", 0)
    assert min_offset > 0
    got = store.get_message("g", "TopicA", 0, 0, 32)
    assert (got.status, got.next_begin_offset, got.min_offset) == (S.OFFSET_TOO_SMALL, min_offset, min_offset)
    got = store.get_message("g", "TopicA", 0, min_offset, 32)
    assert got.status is S.FOUND
    assert decode_records(got.body())[0].queue_offset == min_offset


def test_message_was_removing(factory: StoreFactory) -> None:
    store = factory()
    _fill(store, 20, topic="Early", body=b"e" * 900)  # first segment
    _fill(store, 150, topic="Late", body=b"l" * 900)  # later segments
    # the commit log lost its first segments, the consume queues were not cleaned yet
    assert store.commit_log.delete_expired_files(0, 0, True) > 0
    got = store.get_message("g", "Early", 0, 0, 32)
    assert got.status is S.MESSAGE_WAS_REMOVING
    # every unit was scanned: the first one missed, the rest skipped up to the next segment
    assert got.next_begin_offset == 20
    assert got.message_count == 0


def test_offset_found_null(factory: StoreFactory) -> None:
    store = factory(mapped_file_size_consume_queue=4 * 20)
    _fill(store, 10)
    cq = store.find_consume_queue("TopicA", 0)
    assert cq is not None and len(cq.queue.files) == 3
    missing = cq.queue.files[1]  # the consume-queue file for offsets 4..7 is gone
    cq.queue.files = [cq.queue.files[0], cq.queue.files[2]]
    missing.destroy()
    got = store.get_message("g", "TopicA", 0, 5, 32)
    assert (got.status, got.next_begin_offset) == (S.OFFSET_FOUND_NULL, 8)


def test_tag_filter_skips_and_advances(store: MessageStore) -> None:
    _fill(store, 9)  # TagA TagB TagC repeating
    tag_b = string_hash("TagB")
    got = store.get_message("g", "TopicA", 0, 0, 32, lambda code: code == tag_b)
    assert got.status is S.FOUND
    msgs = decode_records(got.body())
    assert [m.tags for m in msgs] == ["TagB"] * 3
    assert got.message_queue_offsets == [1, 4, 7]
    assert got.next_begin_offset == 9  # filtered entries advance next_begin_offset
    # nothing matches: NO_MATCHED_MESSAGE, still advancing
    got = store.get_message("g", "TopicA", 0, 0, 32, lambda code: False)
    assert (got.status, got.next_begin_offset, got.message_count) == (S.NO_MATCHED_MESSAGE, 9, 0)
    # max_msg_nums stops the batch right after the last message returned
    got = store.get_message("g", "TopicA", 0, 0, 2, lambda code: code == tag_b)
    assert got.message_queue_offsets == [1, 4]
    assert got.next_begin_offset == 5


def test_scan_limit_is_800_units_or_max_nums_x_20(factory: StoreFactory) -> None:
    store = factory(mapped_file_size_consume_queue=2000 * 20)
    _fill(store, 1200)
    got = store.get_message("g", "TopicA", 0, 0, 32, lambda code: False)
    assert (got.status, got.next_begin_offset) == (S.NO_MATCHED_MESSAGE, 800)  # max(16000, 32*20) bytes
    got = store.get_message("g", "TopicA", 0, 0, 1000, lambda code: False)
    assert got.next_begin_offset == 1000  # 1000*20 bytes > 16000


def test_in_memory_count_limit(store: MessageStore) -> None:
    _fill(store, 40)
    got = store.get_message("g", "TopicA", 0, 0, 100)
    assert (got.message_count, got.next_begin_offset) == (32, 32)
    assert not got.suggest_pulling_from_slave
    got = store.get_message("g", "TopicA", 0, 0, 5)
    assert (got.message_count, got.next_begin_offset) == (5, 5)


def test_in_memory_byte_limit_and_first_message_always(factory: StoreFactory) -> None:
    store = factory(max_transfer_bytes_on_message_in_memory=1000)
    _fill(store, 10, body=b"x" * 300)
    got = store.get_message("g", "TopicA", 0, 0, 32)
    size = got.buffer_total_size // got.message_count
    assert got.message_count == 1000 // size
    assert got.next_begin_offset == got.message_count
    assert got.buffer_total_size == size * got.message_count
    store2 = factory(root=factory.root / "big", max_transfer_bytes_on_message_in_memory=100)
    _fill(store2, 3, body=b"y" * 300)
    got = store2.get_message("g", "TopicA", 0, 0, 32)
    assert got.message_count == 1  # the first message goes through whatever its size


def test_on_disk_limits_and_slave_suggestion(factory: StoreFactory) -> None:
    # 40 % of 10 000 bytes of "RAM": anything 4000 bytes behind the head counts as on disk
    store = factory(total_physical_memory_bytes=10_000)
    _fill(store, 100, body=b"z" * 100)
    got = store.get_message("g", "TopicA", 0, 0, 32)
    assert got.message_count == 8  # maxTransferCountOnMessageInDisk
    assert got.suggest_pulling_from_slave
    assert store.check_in_disk_by_consume_offset("TopicA", 0, 0)
    assert not store.check_in_disk_by_consume_offset("TopicA", 0, 99)
    assert not store.check_in_disk_by_consume_offset("TopicA", 0, 1000)
    got = store.get_message("g", "TopicA", 0, 95, 32)
    assert got.message_count == 5
    assert not got.suggest_pulling_from_slave


def test_buffers_are_views_of_the_mapping(store: MessageStore) -> None:
    _fill(store, 3)
    got = store.get_message("g", "TopicA", 0, 0, 32)
    assert all(isinstance(b, memoryview) for b in got.buffers)
    assert store.stats.get_message_times_total_found == 1
    assert store.stats.get_message_transfered_msg_count == 3
    store.get_message("g", "TopicA", 0, 3, 32)
    assert store.stats.get_message_times_total_miss == 1


def test_store_timestamps_and_search_by_time(factory: StoreFactory) -> None:
    store = factory()
    factory.clock.step = 0
    stamps = []
    for i in range(5):  # ~300 ms apart, like golden pull.jsonl
        factory.clock.now += 300
        r = store.put_message(make_msg(body=b"%d" % i))
        assert r.append is not None
        stamps.append(r.append.store_timestamp)
    assert [store.get_message_store_timestamp("TopicA", 0, i) for i in range(5)] == stamps
    assert store.get_message_store_timestamp("TopicA", 0, 5) == -1
    assert store.get_message_store_timestamp("Nope", 0, 0) == -1
    assert store.get_earliest_message_time("TopicA", 0) == stamps[0]
    # exact, nearer neighbour, before everything, after everything (golden answers 2, 2, 0, 4)
    assert store.get_offset_in_queue_by_time("TopicA", 0, stamps[2]) == 2
    assert store.get_offset_in_queue_by_time("TopicA", 0, stamps[2] - 100) == 2
    assert store.get_offset_in_queue_by_time("TopicA", 0, stamps[2] - 200) == 1
    assert store.get_offset_in_queue_by_time("TopicA", 0, stamps[2] - 150) == 1  # tie: the earlier
    assert store.get_offset_in_queue_by_time("TopicA", 0, 0) == 0
    assert store.get_offset_in_queue_by_time("TopicA", 0, stamps[-1] + 10_000) == 4
    assert store.get_offset_in_queue_by_time("Nope", 0, 0) == 0


def test_adjacent_records_leave_as_one_slice_and_interleaved_ones_do_not(factory: StoreFactory) -> None:
    store = factory()
    _fill(store, 5, body=b"a" * 50)  # queue 0 only: back to back in the commit log
    got = store.get_message("g", "TopicA", 0, 0, 32)
    assert got.message_count == 5
    assert len(got.buffers) == 1
    records = decode_records(got.body())
    assert [m.queue_offset for m in records] == [0, 1, 2, 3, 4]
    assert got.message_queue_offsets == [0, 1, 2, 3, 4]
    for i in range(4):  # interleave two queues: every record of queue 1 stands alone
        assert store.put_message(make_msg(topic="TopicB", queue_id=i % 2, body=b"b")).ok
    got = store.get_message("g", "TopicB", 1, 0, 32)
    assert got.message_count == 2
    assert len(got.buffers) == 2
    assert [m.queue_id for m in decode_records(got.body())] == [1, 1]
