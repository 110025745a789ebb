"""Recovery: clean restarts, crashes with torn tails, garbage, corrupt records, lost
consume-queue units, and the real Apache RocketMQ 4.9.7 store files (golden)."""

from __future__ import annotations

import json
import os
import shutil
import struct
from pathlib import Path

from rocketq.broker.store import GetMessageStatus, MessageExtBrokerInner, MessageStore
from rocketq.broker.store.checkpoint import StoreCheckpoint
from rocketq.protocol.message import decode_record, decode_records
from tests.conftest import golden_dir
from tests.unit.store.conftest import StoreFactory, make_msg

END = 2**62


def _drain(store: MessageStore, topic: str, queue_id: int) -> list[bytes]:
    out: list[bytes] = []
    offset = store.get_min_offset_in_queue(topic, queue_id)
    while True:
        got = store.get_message("g", topic, queue_id, offset, 32)
        if got.status is not GetMessageStatus.FOUND:
            return out
        msgs = decode_records(got.body())
        assert [m.queue_offset for m in msgs] == got.message_queue_offsets
        out += [m.body for m in msgs]
        offset = got.next_begin_offset


def _put_many(store: MessageStore, n: int, size: int = 700) -> list[int]:
    offsets = []
    for i in range(n):
        r = store.put_message(make_msg(queue_id=i % 2, body=b"%05d" % i + b"." * size, keys=f"key{i}"))
        assert r.append is not None
        offsets.append(r.append.wrote_offset)
    return offsets


def _segment(store_root: Path, offset: int, file_size: int = 64 * 1024) -> tuple[Path, int]:
    base = offset - offset % file_size
    return store_root / "commitlog" / f"{base:020d}", offset - base


def test_clean_restart_keeps_everything(factory: StoreFactory) -> None:
    store = factory()
    _put_many(store, 150)
    before = (_drain(store, "TopicA", 0), _drain(store, "TopicA", 1), store.get_max_phy_offset())
    store.shutdown()
    assert not os.path.exists(factory.root / "abort")
    cp = StoreCheckpoint(str(factory.root / "checkpoint"))
    assert cp.physic_msg_timestamp > 0 and cp.logics_msg_timestamp > 0 and cp.index_msg_timestamp > 0
    cp.close()
    store = factory()
    assert os.path.exists(factory.root / "abort")
    assert (_drain(store, "TopicA", 0), _drain(store, "TopicA", 1), store.get_max_phy_offset()) == before
    # offsets continue where they were
    r = store.put_message(make_msg(queue_id=0))
    assert r.append is not None
    assert r.append.logics_offset == 75
    assert r.append.wrote_offset == before[2]
    assert len(store.query_message("TopicA", "key42", 32, 0, END).buffers) == 1


def test_crash_with_torn_tail(factory: StoreFactory) -> None:
    store = factory()
    offsets = _put_many(store, 150)
    factory.crash(store)
    # the last record was only half written when the process died
    path, pos = _segment(factory.root, offsets[-1])
    os.truncate(path, pos + 100)
    store = factory()
    assert store.get_max_phy_offset() == offsets[-1]
    q0, q1 = _drain(store, "TopicA", 0), _drain(store, "TopicA", 1)
    assert len(q0) + len(q1) == 149
    assert store.get_max_offset_in_queue("TopicA", 1) == 74  # message 149 (queue 1) is gone
    # the file is whole again and the torn bytes are zeros
    with open(path, "rb") as fh:
        data = fh.read()
    assert len(data) == 64 * 1024
    assert data[pos:] == bytes(len(data) - pos)
    # the next put reuses the offset and the queue offset
    r = store.put_message(make_msg(queue_id=1, body=b"after"))
    assert r.append is not None
    assert (r.append.wrote_offset, r.append.logics_offset) == (offsets[-1], 74)
    assert _drain(store, "TopicA", 1)[-1] == b"after"
    # the index forgot the lost record
    assert store.query_message("TopicA", "key149", 32, 0, END).buffers == []
    assert len(store.query_message("TopicA", "key148", 32, 0, END).buffers) == 1


def test_crash_with_garbage_after_the_end(factory: StoreFactory) -> None:
    store = factory()
    _put_many(store, 20)
    end = store.get_max_phy_offset()
    factory.crash(store)
    path, pos = _segment(factory.root, end)
    with open(path, "r+b") as fh:
        fh.seek(pos)
        fh.write(os.urandom(3000))
        fh.seek(pos + 5000)
        fh.write(struct.pack(">ii", 200, -626843481) + os.urandom(192))  # looks like a record
    store = factory()
    assert store.get_max_phy_offset() == end
    assert len(_drain(store, "TopicA", 0)) == 10
    with open(path, "rb") as fh:
        assert fh.read()[pos:] == bytes(64 * 1024 - pos)


def test_crash_with_corrupt_body_truncates_from_there(factory: StoreFactory) -> None:
    store = factory()
    offsets = _put_many(store, 30)
    factory.crash(store)
    path, pos = _segment(factory.root, offsets[25])
    with open(path, "r+b") as fh:
        fh.seek(pos + 200)  # inside the body: BODYCRC no longer matches
        fh.write(b"\xff")
    store = factory()
    assert store.get_max_phy_offset() == offsets[25]
    assert len(_drain(store, "TopicA", 0)) + len(_drain(store, "TopicA", 1)) == 25
    assert store.get_max_offset_in_queue("TopicA", 0) == 13  # records 0, 2, ..., 24
    assert store.get_max_offset_in_queue("TopicA", 1) == 12


def test_crash_rebuilds_lost_consume_queues_and_index(factory: StoreFactory) -> None:
    store = factory()
    _put_many(store, 120)
    expected = _drain(store, "TopicA", 0)
    factory.crash(store)
    shutil.rmtree(factory.root / "consumequeue")
    shutil.rmtree(factory.root / "index")
    store = factory()
    assert _drain(store, "TopicA", 0) == expected
    assert store.get_max_offset_in_queue("TopicA", 1) == 60
    q = store.query_message("TopicA", "key77", 32, 0, END)
    assert [decode_record(b).body[:5] for b in q.buffers] == [b"00077"]


def test_crash_drops_consume_queue_units_past_the_end(factory: StoreFactory) -> None:
    store = factory()
    offsets = _put_many(store, 40)
    factory.crash(store)
    path, pos = _segment(factory.root, offsets[30])
    os.truncate(path, pos)  # the commit log lost its last 10 records, the queues did not
    store = factory()
    assert store.get_max_offset_in_queue("TopicA", 0) == 15
    assert store.get_max_offset_in_queue("TopicA", 1) == 15
    got = store.get_message("g", "TopicA", 0, 15, 32)
    assert got.status is GetMessageStatus.OFFSET_OVERFLOW_ONE
    r = store.put_message(make_msg(queue_id=0, body=b"new"))
    assert r.append is not None and r.append.logics_offset == 15
    assert _drain(store, "TopicA", 0)[-1] == b"new"


def test_restart_after_crash_twice_is_stable(factory: StoreFactory) -> None:
    store = factory()
    _put_many(store, 50)
    factory.crash(store)
    store = factory()
    _put_many(store, 10)
    factory.crash(store)
    store = factory()
    assert len(_drain(store, "TopicA", 0)) + len(_drain(store, "TopicA", 1)) == 60
    # keys key0..key49 from the first run, key0..key9 again from the second
    for i in (0, 9, 10, 49, 50):
        expected = 2 if i < 10 else 1 if i < 50 else 0
        assert len(store.query_message("TopicA", f"key{i}", 32, 0, END).buffers) == expected


def test_recovery_when_all_commit_log_files_are_gone(factory: StoreFactory) -> None:
    store = factory()
    _put_many(store, 10)
    store.shutdown()
    shutil.rmtree(factory.root / "commitlog")
    store = factory()
    assert store.get_max_offset_in_queue("TopicA", 0) == 0
    assert store.find_consume_queue("TopicA", 0) is None
    assert store.query_message("TopicA", "key1", 32, 0, END).buffers == []
    r = store.put_message(make_msg())
    assert r.append is not None and (r.append.wrote_offset, r.append.logics_offset) == (0, 0)


# ---------------------------------------------------------------- golden (real 4.9.7 files)


def _golden_store(root: Path) -> Path:
    (root / "commitlog").mkdir(parents=True)
    data = (golden_dir() / "store" / "commitlog_prefix.bin").read_bytes()
    with open(root / "commitlog" / f"{0:020d}", "wb") as fh:
        fh.write(data)
        fh.truncate(64 * 1024)
    return root


def test_golden_commit_log_rebuilds_identical_consume_queues(factory: StoreFactory) -> None:
    _golden_store(factory.root)
    (factory.root / "abort").touch()  # unclean: re-dispatch everything
    store = factory(start=False, mapped_file_size_consume_queue=300_000 * 20)
    prefix = golden_dir() / "store" / "commitlog_prefix.bin"
    assert store.get_max_phy_offset() == prefix.stat().st_size  # all 44 records valid (BODYCRC)
    files = sorted((golden_dir() / "store").glob("consumequeue_*_prefix.bin"))
    assert len(files) == 16
    for path in files:
        topic, qid = path.name[len("consumequeue_") : -len("_prefix.bin")].rsplit("_", 1)
        gold = path.read_bytes()
        cq = store.find_consume_queue(topic, int(qid))
        assert cq is not None, topic
        mine = bytes(cq.queue.files[0].view[: cq.queue.files[0].wrote_position])
        # byte for byte, including SCHEDULE_TOPIC_XXXX's delivery-time tagsCode
        assert mine == gold, topic
    messages = json.loads((golden_dir() / "store" / "MESSAGES.json").read_text())["messages"]
    assert len(messages) == 44
    for m in messages:
        ext = store.look_message_by_offset(m["commitlog_offset"])
        assert ext is not None
        assert (ext.topic, ext.queue_offset, ext.store_size) == (m["topic"], m["queueOffset"], m["size"])
    # keys and UNIQ_KEYs are indexed
    first = messages[0]
    q = store.query_message(first["topic"], first["UNIQ_KEY"], 32, 0, END)
    assert [decode_record(b).commit_log_offset for b in q.buffers] == [first["commitlog_offset"]]
    # pull answers from the real data (golden pull.jsonl: GoldenPullTopic q0 has 6 messages)
    got = store.get_message("g", "GoldenPullTopic", 0, 0, 3)
    assert (got.status, got.message_count, got.next_begin_offset) == (GetMessageStatus.FOUND, 3, 3)


def test_golden_delay_rewrite_is_byte_identical(factory: StoreFactory) -> None:
    """Re-storing the golden delayed message reproduces the Java record exactly (apart from
    the physical offset): REAL_TOPIC/REAL_QID added and the properties re-encoded in Java
    HashMap order, topic SCHEDULE_TOPIC_XXXX queue 2, delivery-time tagsCode."""
    messages = json.loads((golden_dir() / "store" / "MESSAGES.json").read_text())["messages"]
    gold = next(m for m in messages if m["topic"] == "SCHEDULE_TOPIC_XXXX")
    raw = (golden_dir() / "store" / "commitlog_prefix.bin").read_bytes()
    gold_record = raw[gold["commitlog_offset"] : gold["commitlog_offset"] + gold["size"]]
    props = dict(gold["properties"])
    real_topic, real_qid = props.pop("REAL_TOPIC"), props.pop("REAL_QID")
    born_ip, born_port = gold["bornHost"].rsplit(":", 1)
    store_ip, store_port = gold["storeHost"].rsplit(":", 1)
    factory.clock.now = gold["storeTimestamp"]
    store = factory()
    msg = MessageExtBrokerInner(
        topic=real_topic,
        queue_id=int(real_qid),
        body=gold["body"].encode(),
        born_host=(born_ip, int(born_port)),
        store_host=(store_ip, int(store_port)),
        born_timestamp=gold["bornTimestamp"],
        # the broker passes the properties in the order it decoded them; Java HashMap
        # order only depends on that for keys sharing a bucket
        properties={k: props[k] for k in gold["properties_raw_order"] if k in props},
    )
    r = store.put_message(msg)
    assert r.append is not None
    mine = store.select_one_message_by_offset(r.append.wrote_offset)
    assert mine is not None
    assert mine[:28] + mine[36:] == gold_record[:28] + gold_record[36:]
    cq = store.find_consume_queue("SCHEDULE_TOPIC_XXXX", 2)
    assert cq is not None
    unit = cq.get_unit(0)
    assert unit is not None
    assert unit[2] == gold["consumequeue_entries"][0]["tagsCode_in_cq"]
