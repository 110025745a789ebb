"""Put/get round trips: segments and fillers, consume-queue units, batches, delay rewrite,
size limits, listeners, concurrency, SYNC_FLUSH futures."""

from __future__ import annotations

import itertools
import os
import struct
import threading
import time
from concurrent.futures import Future

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocketq.broker.store import (
    GetMessageStatus,
    MessageStore,
    PutMessageResult,
    PutMessageStatus,
)
from rocketq.protocol.java import string_hash
from rocketq.protocol.message import BLANK_MAGIC_CODE, decode_record, decode_records
from rocketq.protocol.message_id import create_offset_msg_id
from tests.unit.store.conftest import STORE_HOST, StoreFactory, make_msg

_UNIT = struct.Struct(">qiq")


def _cq_units(store: MessageStore, topic: str, queue_id: int) -> list[tuple[int, int, int]]:
    cq = store.find_consume_queue(topic, queue_id)
    assert cq is not None
    out = []
    for mf in cq.queue.files:
        out += list(_UNIT.iter_unpack(mf.view[: mf.wrote_position]))
    return out


def test_put_then_get_round_trip(store: MessageStore) -> None:
    result = store.put_message(make_msg(body=b"payload", tags="TagA", keys="k1 k2", color="red"))
    assert result.ok
    assert result.status is PutMessageStatus.PUT_OK
    assert result.flush_future is None  # ASYNC_FLUSH
    append = result.append
    assert append is not None
    assert append.wrote_offset == 0
    assert append.logics_offset == 0
    assert append.msg_num == 1
    assert append.msg_id == create_offset_msg_id(STORE_HOST, 0)
    got = store.get_message("g", "TopicA", 0, 0, 32)
    assert got.status is GetMessageStatus.FOUND
    assert (got.next_begin_offset, got.min_offset, got.max_offset) == (1, 0, 1)
    assert got.message_count == 1
    assert got.buffer_total_size == append.wrote_bytes == len(got.body())
    assert got.message_queue_offsets == [0]
    msg = decode_record(got.body())
    assert msg.body == b"payload"
    assert msg.topic == "TopicA"
    assert msg.properties == {"color": "red", "TAGS": "TagA", "KEYS": "k1 k2"}
    assert msg.store_timestamp == append.store_timestamp
    assert msg.commit_log_offset == 0
    assert msg.queue_offset == 0
    assert msg.store_host == STORE_HOST
    # the consume-queue unit: offset, size, tag hash
    assert _cq_units(store, "TopicA", 0) == [(0, append.wrote_bytes, string_hash("TagA"))]


def test_records_never_span_segments(factory: StoreFactory) -> None:
    store = factory()
    size = store.config.mapped_file_size_commit_log
    body = b"x" * 1000
    results = [store.put_message(make_msg(queue_id=i % 3, body=body + bytes([i % 256]))) for i in range(200)]
    assert all(r.ok for r in results)
    files = store.commit_log.queue.files
    assert len(files) >= 3
    for r in results:
        a = r.append
        assert a is not None
        assert a.wrote_offset // size == (a.wrote_offset + a.wrote_bytes - 1) // size
    # each full segment ends with an 8-byte BLANK filler covering the rest of the file
    for mf in files[:-1]:
        pos = 0
        while True:
            total, magic = struct.unpack_from(">ii", mf.view, pos)
            if magic == BLANK_MAGIC_CODE:
                assert total == size - pos
                assert total >= 8
                break
            pos += total
        name = os.path.basename(mf.path)
        assert name == f"{mf.file_from_offset:020d}"
    # every message comes back, in order, with dense queue offsets
    for qid in range(3):
        offset = 0
        seen = []
        while True:
            got = store.get_message("g", "TopicA", qid, offset, 32)
            if got.status is not GetMessageStatus.FOUND:
                assert got.status is GetMessageStatus.OFFSET_OVERFLOW_ONE
                break
            msgs = decode_records(got.body())
            seen += [m.queue_offset for m in msgs]
            assert got.message_queue_offsets == [m.queue_offset for m in msgs]
            offset = got.next_begin_offset
        assert seen == list(range(len(seen)))
    assert sum(store.get_max_offset_in_queue("TopicA", q) for q in range(3)) == 200


def test_consume_queue_rolls_over_files(factory: StoreFactory) -> None:
    store = factory()  # 100 units per consume-queue file
    for i in range(250):
        assert store.put_message(make_msg(body=b"%d" % i)).ok
    cq = store.find_consume_queue("TopicA", 0)
    assert cq is not None
    assert [mf.file_name for mf in cq.queue.files] == [f"{n:020d}" for n in (0, 2000, 4000)]
    assert store.get_max_offset_in_queue("TopicA", 0) == 250
    # a read never crosses a consume-queue file: from 95 at most 5 units are scanned
    got = store.get_message("g", "TopicA", 0, 95, 32)
    assert got.message_count == 5
    assert got.next_begin_offset == 100
    got = store.get_message("g", "TopicA", 0, 100, 32)
    assert next(m.body for m in decode_records(got.body())) == b"100"


def test_batch_is_atomic_and_consecutive(factory: StoreFactory) -> None:
    store = factory()
    # fill the first segment so that the batch needs a filler first
    while store.get_max_phy_offset() < 60 * 1024:
        assert store.put_message(make_msg(topic="Other", body=b"y" * 500)).ok
    batch = [make_msg(body=b"b%02d" % i + b"z" * 200, uniq=f"U{i}") for i in range(30)]
    result = store.put_messages(batch)
    assert result.ok
    a = result.append
    assert a is not None
    assert a.msg_num == 30
    assert a.wrote_offset == 64 * 1024  # moved to the second segment as a whole
    assert a.logics_offset == 0
    ids = a.msg_id.split(",")
    assert len(ids) == 30
    got = store.get_message("g", "TopicA", 0, 0, 32)
    msgs = decode_records(got.body())
    assert [m.queue_offset for m in msgs] == list(range(30))
    assert [create_offset_msg_id(STORE_HOST, m.commit_log_offset) for m in msgs] == ids
    assert all(m.store_timestamp == a.store_timestamp for m in msgs)
    # consecutive physical offsets
    for prev, nxt in itertools.pairwise(msgs):
        assert nxt.commit_log_offset == prev.commit_log_offset + prev.store_size


@pytest.mark.parametrize(
    "bad",
    [
        [make_msg(queue_id=0), make_msg(queue_id=1)],
        [make_msg(topic="A"), make_msg(topic="B")],
        [make_msg(DELAY="1")],
        [],
    ],
)
def test_batch_rules(store: MessageStore, bad: list) -> None:  # type: ignore[type-arg]
    assert store.put_messages(bad).status is PutMessageStatus.MESSAGE_ILLEGAL


def test_transactional_batch_refused(store: MessageStore) -> None:
    m = make_msg()
    m.sys_flag = 0x4
    assert store.put_messages([m]).status is PutMessageStatus.MESSAGE_ILLEGAL


def test_size_limits(factory: StoreFactory) -> None:
    store = factory(max_message_size=1024)
    assert store.put_message(make_msg(body=b"x" * 1024)).ok
    assert store.put_message(make_msg(body=b"x" * 1025)).status is PutMessageStatus.MESSAGE_ILLEGAL
    assert store.put_message(make_msg(topic="T" * 128)).status is PutMessageStatus.MESSAGE_ILLEGAL
    assert store.put_message(make_msg(topic="T" * 127)).ok
    big = make_msg(big="v" * 32_800)
    assert store.put_message(big).status is PutMessageStatus.PROPERTIES_SIZE_EXCEEDED
    # multi-byte characters count in bytes
    wide = make_msg(wide="é" * 16_400)
    assert store.put_message(wide).status is PutMessageStatus.PROPERTIES_SIZE_EXCEEDED
    assert store.stats.put_message_failed_times == 4


def test_record_larger_than_a_segment(factory: StoreFactory) -> None:
    store = factory(mapped_file_size_commit_log=4096)
    assert store.put_message(make_msg(body=b"x" * 5000)).status is PutMessageStatus.MESSAGE_ILLEGAL
    assert store.put_message(make_msg(body=b"x" * 3000)).ok


def test_put_refused_when_not_started(factory: StoreFactory) -> None:
    store = factory(start=False)
    assert store.put_message(make_msg()).status is PutMessageStatus.SERVICE_NOT_AVAILABLE
    store.start()
    assert store.put_message(make_msg()).ok
    store.shutdown()
    assert store.put_message(make_msg()).status is PutMessageStatus.SERVICE_NOT_AVAILABLE


def test_delay_rewrite(factory: StoreFactory) -> None:
    store = factory()
    msg = make_msg(topic="Real", queue_id=3, tags="TagA", DELAY="3")
    result = store.put_message(msg)
    assert result.ok
    a = result.append
    assert a is not None
    assert msg.topic == "SCHEDULE_TOPIC_XXXX"
    assert msg.queue_id == 2
    assert store.get_max_offset_in_queue("Real", 3) == 0
    got = store.get_message("g", "SCHEDULE_TOPIC_XXXX", 2, 0, 32)
    stored = decode_record(got.body())
    assert stored.properties["REAL_TOPIC"] == "Real"
    assert stored.properties["REAL_QID"] == "3"
    assert stored.properties["DELAY"] == "3"
    # consume-queue tagsCode = delivery time = store time + 10 s (level 3)
    assert _cq_units(store, "SCHEDULE_TOPIC_XXXX", 2)[0][2] == a.store_timestamp + 10_000
    # levels above the max are clamped (and DELAY rewritten)
    msg = make_msg(topic="Real", DELAY="99")
    assert store.put_message(msg).ok
    assert (msg.topic, msg.queue_id, msg.properties["DELAY"]) == ("SCHEDULE_TOPIC_XXXX", 17, "18")
    assert _cq_units(store, "SCHEDULE_TOPIC_XXXX", 17)[0][2] - 7_200_000 > 0
    # prepared transactional messages are not rewritten and not consumable
    prepared = make_msg(topic="Half", DELAY="2")
    prepared.sys_flag = 0x4
    r = store.put_message(prepared)
    assert r.ok
    assert prepared.topic == "Half"
    assert r.append is not None and r.append.logics_offset == 0
    assert store.find_consume_queue("Half", 0) is None
    assert store.look_message_by_offset(r.append.wrote_offset) is not None


def test_put_counters_exact_under_concurrent_puts(store: MessageStore) -> None:
    """The put counters are updated under the append lock (CommitLogDispatcher.appended):
    exact with several putting threads, a batch counts its messages, a refused put counts
    only as a failure."""
    results: list[PutMessageResult] = []

    def put_many(queue_id: int) -> None:
        for _ in range(200):
            results.append(store.put_message(make_msg(queue_id=queue_id)))  # list.append: atomic

    threads = [threading.Thread(target=put_many, args=(q,)) for q in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    batch = store.put_messages([make_msg(queue_id=1), make_msg(queue_id=1), make_msg(queue_id=1)])
    refused = store.put_message(make_msg(topic="T" * 200))
    assert batch.append is not None and refused.status is PutMessageStatus.MESSAGE_ILLEGAL
    stats = store.stats
    assert stats.put_message_times_total == 803
    wrote = [r.append.wrote_bytes for r in [*results, batch] if r.append is not None]
    assert len(wrote) == 801
    assert stats.put_message_size_total == sum(wrote)
    assert stats.put_message_failed_times == 1


def test_listener_called_after_dispatch(store: MessageStore) -> None:
    calls: list[tuple[str, int, int, int, int, dict[str, str]]] = []

    def listener(topic: str, qid: int, max_offset: int, tags: int, ts: int, props: dict[str, str]) -> None:
        # the message is already visible to pulls when the listener runs
        assert store.get_max_offset_in_queue(topic, qid) >= max_offset
        calls.append((topic, qid, max_offset, tags, ts, props))

    store.add_arrival_listener(listener)
    r1 = store.put_message(make_msg(tags="TagB"))
    r2 = store.put_messages([make_msg(queue_id=1), make_msg(queue_id=1)])
    assert r1.append is not None and r2.append is not None
    assert [c[:4] for c in calls] == [
        ("TopicA", 0, 1, string_hash("TagB")),
        ("TopicA", 1, 1, 0),
        ("TopicA", 1, 2, 0),
    ]
    assert calls[0][4] == r1.append.store_timestamp
    assert calls[0][5]["TAGS"] == "TagB"


def test_concurrent_puts_dense_unique_offsets(store: MessageStore) -> None:
    threads = 8
    per_thread = 150
    errors: list[object] = []

    def writer(n: int) -> None:
        for i in range(per_thread):
            r = store.put_message(make_msg(queue_id=i % 2, body=b"%d-%d" % (n, i)))
            if not r.ok:
                errors.append(r)
            if i % 10 == 0:
                store.put_messages([make_msg(queue_id=2, body=b"b%d-%d" % (n, i)) for _ in range(3)])
            if i % 7 == 0:  # reads run concurrently with puts
                store.get_message("g", "TopicA", 0, 0, 8)

    ts = [threading.Thread(target=writer, args=(n,)) for n in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors
    bodies = set()
    for qid in range(3):
        offset = 0
        expected = 0
        while True:
            got = store.get_message("g", "TopicA", qid, offset, 32)
            if got.status is not GetMessageStatus.FOUND:
                break
            for m in decode_records(got.body()):
                assert m.queue_offset == expected
                expected += 1
                bodies.add(m.body)
            offset = got.next_begin_offset
        assert expected == store.get_max_offset_in_queue("TopicA", qid)
    assert len(bodies) == threads * per_thread + threads * 15
    # physical order == store time order
    msgs = []
    offset = store.get_min_phy_offset()
    while offset < store.get_max_phy_offset():
        found = store.look_message_by_offset(offset)
        if found is None:
            offset = store.commit_log.roll_next_file(offset)
            continue
        m = found
        msgs.append(m)
        offset += m.store_size
    assert [m.store_timestamp for m in msgs] == sorted(m.store_timestamp for m in msgs)


def test_sync_flush_futures(factory: StoreFactory) -> None:
    store = factory(flush_disk_type="SYNC_FLUSH")
    futures: list[Future[bool]] = []
    lock = threading.Lock()

    def writer() -> None:
        for _ in range(50):
            r = store.put_message(make_msg())
            assert r.ok and r.flush_future is not None
            with lock:
                futures.append(r.flush_future)

    ts = [threading.Thread(target=writer) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert all(f.result(timeout=10) for f in futures)
    assert store.commit_log.flushed_where == store.get_max_phy_offset()
    # WAIT=false: nothing to wait for
    r = store.put_message(make_msg(WAIT="false"))
    assert r.ok and r.flush_future is None


@pytest.mark.pure_python  # monkeypatches CommitLog.flush, a compiled method
def test_sync_flush_timeout(factory: StoreFactory) -> None:
    store = factory(flush_disk_type="SYNC_FLUSH", sync_flush_timeout_ms=50)
    gate = threading.Event()
    real_flush = store.commit_log.flush

    def stuck_flush(least_pages: int = 0) -> bool:
        gate.wait(0.2)  # the disk does not keep up
        return False

    store.commit_log.flush = stuck_flush  # type: ignore[method-assign]
    try:
        r = store.put_message(make_msg())
        assert r.flush_future is not None
        assert r.flush_future.result(timeout=5) is False
    finally:
        store.commit_log.flush = real_flush  # type: ignore[method-assign]
    r = store.put_message(make_msg())
    assert r.flush_future is not None and r.flush_future.result(timeout=5) is True


def test_async_flush_thread_flushes(factory: StoreFactory) -> None:
    store = factory()  # flush every 20 ms once 4 pages are dirty
    for _ in range(40):
        assert store.put_message(make_msg(body=b"f" * 1000)).ok
    deadline = time.monotonic() + 5
    while store.commit_log.flushed_where < 16 * 1024 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert store.commit_log.flushed_where >= 16 * 1024
    assert (
        store.commit_log.flushed_store_timestamp > 0
        or store.commit_log.flushed_where < store.get_max_phy_offset()
    )


def test_select_and_look_by_offset(store: MessageStore) -> None:
    r = store.put_message(make_msg(body=b"abc"))
    r2 = store.put_message(make_msg(body=b"def"))
    assert r.append is not None and r2.append is not None
    raw = store.select_one_message_by_offset(r2.append.wrote_offset)
    assert raw is not None and len(raw) == r2.append.wrote_bytes
    m = store.look_message_by_offset(r2.append.wrote_offset)
    assert m is not None and m.body == b"def"
    assert store.select_one_message_by_offset(r2.append.wrote_offset + 1) is None
    assert store.look_message_by_offset(10**9) is None
    assert store.get_min_phy_offset() == 0
    assert store.get_max_phy_offset() == r2.append.wrote_offset + r2.append.wrote_bytes


_props = st.dictionaries(
    st.text(st.characters(codec="utf-8", exclude_characters="\x00\x01\x02"), min_size=1, max_size=8),
    st.text(st.characters(codec="utf-8", exclude_characters="\x00\x01\x02"), min_size=1, max_size=20),
    max_size=4,
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(0, 2), st.binary(max_size=3000), _props), min_size=1, max_size=25))
def test_round_trip_property(factory: StoreFactory, items: list[tuple[int, bytes, dict[str, str]]]) -> None:
    n = len(factory.stores)
    store = factory(root=factory.root / f"example{n}")
    topic = f"Prop{n}"
    for qid, body, props in items:
        assert store.put_message(make_msg(topic=topic, queue_id=qid, body=body, extra=props)).ok
    for qid in range(3):
        expected = [(b, p) for q, b, p in items if q == qid]
        got_all = []
        offset = 0
        while True:
            got = store.get_message("g", topic, qid, offset, 32)
            if got.status is not GetMessageStatus.FOUND:
                break
            got_all += decode_records(got.body())
            offset = got.next_begin_offset
        assert [(m.body, m.properties) for m in got_all] == expected
    store.shutdown()
