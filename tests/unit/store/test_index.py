"""The message index: Java file format, queries by KEYS entry and UNIQ_KEY, time ranges,
file rollover, recovery rollback."""

from __future__ import annotations

import os
import struct

from hypothesis import given
from hypothesis import strategies as st

from rocketq.broker.store import MessageStore
from rocketq.broker.store.index import (
    IndexFile,
    IndexService,
    index_file_name,
    index_key_hash,
    index_key_hashes,
    uniq_key_hash,
)
from rocketq.protocol.java import string_hash
from rocketq.protocol.message import decode_records
from tests.unit.store.conftest import StoreFactory, make_msg

END = 2**62


@given(st.text(max_size=60))
def test_key_hash_is_abs_java_hash(key: str) -> None:
    h = string_hash(key)
    assert index_key_hash(key) == (0 if h == -(2**31) else abs(h))


def test_key_hash_min_value_maps_to_zero() -> None:
    # "polygenelubricants".hashCode() == Integer.MIN_VALUE: Math.abs stays negative -> 0
    assert string_hash("polygenelubricants") == -(2**31)
    assert index_key_hash("polygenelubricants") == 0


def test_key_hashes_order_and_blank_keys() -> None:
    props = {"UNIQ_KEY": "U1", "KEYS": "a  b"}
    assert index_key_hashes("T", props) == [index_key_hash(k) for k in ("T#U1", "T#a", "T#b")]
    assert index_key_hashes("T", {}) == []


@given(st.text(max_size=20), st.text(max_size=40))
def test_uniq_key_hash_is_the_hash_of_topic_hash_key(topic: str, uniq: str) -> None:
    expected = index_key_hash(f"{topic}#{uniq}")
    assert uniq_key_hash(topic, uniq) == expected
    assert uniq_key_hash(topic, uniq) == expected  # second call: the prefix comes from the cache


def test_uniq_key_hash_real_ids_and_cache_bound() -> None:
    from rocketq.broker.store import index

    prefix = "7F0000011A2B0C5E7F2A"  # ip, pid, class-loader hash of one producer
    for n in range(200):
        uniq = f"{prefix}{n * 7919:012X}"
        assert uniq_key_hash("TopicTest", uniq) == index_key_hash(f"TopicTest#{uniq}")
    for n in range(index._PREFIX_CACHE_MAX + 10):
        uniq = f"{n:020X}000000000001"
        assert uniq_key_hash("T", uniq) == index_key_hash(f"T#{uniq}")
    assert len(index._uniq_prefix_hashes) <= index._PREFIX_CACHE_MAX


def test_index_file_name() -> None:
    import time

    ms = 1_795_308_008_823
    expected = time.strftime("%Y%m%d%H%M%S", time.localtime(ms / 1000)) + "823"
    assert index_file_name(ms) == expected and len(expected) == 17


def test_query_by_key_and_uniq_key(store: MessageStore) -> None:
    results = []
    for i in range(10):
        r = store.put_message(make_msg(body=b"%d" % i, keys=f"k{i} shared", uniq=f"UNIQ{i:04d}"))
        assert r.append is not None
        results.append(r.append)
    other = store.put_message(make_msg(topic="OtherTopic", keys="shared")).append
    assert other is not None
    q = store.query_message("TopicA", "k3", 32, 0, END)
    assert [m.body for m in decode_records(q.body())] == [b"3"]
    # the newest index file's end: the last record indexed
    assert q.index_last_update_phyoffset == other.wrote_offset
    assert q.index_last_update_timestamp == other.store_timestamp
    q = store.query_message("TopicA", "UNIQ0007", 32, 0, END)
    assert [m.body for m in decode_records(q.body())] == [b"7"]
    # scoped by topic, newest max_num selected, returned in commit-log order
    q = store.query_message("TopicA", "shared", 4, 0, END)
    assert [m.body for m in decode_records(q.body())] == [b"6", b"7", b"8", b"9"]
    assert len(store.query_message("OtherTopic", "shared", 32, 0, END).buffers) == 1
    assert store.query_message("TopicA", "nope", 32, 0, END).buffers == []
    # index metadata is only reported when something was found
    assert store.query_message("TopicA", "nope", 32, 0, END).index_last_update_timestamp == 0


def test_query_time_range(factory: StoreFactory) -> None:
    store = factory()
    factory.clock.step = 0
    stamps = []
    for i in range(5):
        factory.clock.now += 2000  # index time resolution is one second
        r = store.put_message(make_msg(body=b"%d" % i, keys="k"))
        assert r.append is not None
        stamps.append(r.append.store_timestamp)
    q = store.query_message("TopicA", "k", 32, stamps[1], stamps[3])
    assert [m.body for m in decode_records(q.body())] == [b"1", b"2", b"3"]


def test_query_caps_at_max_msgs_num_batch(factory: StoreFactory) -> None:
    store = factory(max_msgs_num_batch=3)
    for i in range(6):
        store.put_message(make_msg(body=b"%d" % i, keys="k"))
    q = store.query_message("TopicA", "k", 32, 0, END)
    assert [m.body for m in decode_records(q.body())] == [b"3", b"4", b"5"]


def test_index_rolls_over_files(factory: StoreFactory) -> None:
    store = factory(max_index_num=8, max_hash_slot_num=4)
    for i in range(30):
        store.put_message(make_msg(body=b"%d" % i, keys="k", uniq=f"U{i}"))
    assert len(store.index_service.files) >= 7  # 2 entries per message, 7 per file
    q = store.query_message("TopicA", "k", 64, 0, END)
    assert [m.body for m in decode_records(q.body())] == [b"%d" % i for i in range(30)]
    q = store.query_message("TopicA", "U3", 64, 0, END)
    assert [m.body for m in decode_records(q.body())] == [b"3"]


def test_index_file_format_is_java(factory: StoreFactory) -> None:
    store = factory(max_index_num=16, max_hash_slot_num=8)
    r1 = store.put_message(make_msg(keys="a"))
    r2 = store.put_message(make_msg(keys="b a"))
    assert r1.append is not None and r2.append is not None
    store.flush_logics()
    (f,) = store.index_service.files
    with open(f.path, "rb") as fh:
        raw = fh.read()
    assert len(raw) == 40 + 8 * 4 + 16 * 20
    begin_ts, end_ts, begin_phy, end_phy, slot_count, index_count = struct.unpack_from(">qqqqii", raw)
    assert (begin_ts, end_ts) == (r1.append.store_timestamp, r2.append.store_timestamp)
    assert (begin_phy, end_phy) == (0, r2.append.wrote_offset)
    assert index_count == 4  # starts at 1; three entries
    hashes = [index_key_hash(k) for k in ("TopicA#a", "TopicA#b", "TopicA#a")]
    entries = [struct.unpack_from(">iqii", raw, 40 + 32 + i * 20) for i in range(1, 4)]
    assert [e[0] for e in entries] == hashes
    assert [e[1] for e in entries] == [0, r2.append.wrote_offset, r2.append.wrote_offset]
    # the third entry ("a" again) chains to the first through its slot
    assert entries[2][3] == 1
    slot_a = struct.unpack_from(">i", raw, 40 + (hashes[0] % 8) * 4)[0]
    assert slot_a == 3
    assert slot_count == len({h % 8 for h in hashes})
    # a fresh IndexService reads the same file back
    svc = IndexService(os.path.dirname(f.path), 8, 16, 64, lambda: 0)
    svc.load()
    assert svc.query_offsets("TopicA", "a", 10, 0, END)[0] == [r2.append.wrote_offset, 0]
    assert svc.last_indexed_offset == r2.append.wrote_offset
    svc.close()


def test_rollback_restores_slots(tmp_path: object) -> None:
    path = os.path.join(str(tmp_path), "20260101000000000")
    f = IndexFile(path, 4, 32)
    for i in range(10):
        assert f.put_key(index_key_hash(f"k{i % 3}"), i * 100, 1000 + i)
    f.rollback_to(500, lambda phy: 1000 + phy // 100)
    assert f.index_count == 6
    assert f.end_phy_offset == 400
    assert f.end_timestamp == 1004
    for k in range(3):
        out: list[int] = []
        f.select_phy_offsets(out, index_key_hash(f"k{k}"), 10, 0, END)
        assert out == sorted((i * 100 for i in range(5) if i % 3 == k), reverse=True)
    f.rollback_to(0, lambda phy: -1)
    assert f.index_count == 1
    out = []
    f.select_phy_offsets(out, index_key_hash("k0"), 10, 0, END)
    assert out == []
    f.close()


def test_rolled_back_transactions_are_not_indexed(store: MessageStore) -> None:
    m = make_msg(keys="rb")
    m.sys_flag = 0xC
    assert store.put_message(m).ok
    assert store.query_message("TopicA", "rb", 32, 0, END).buffers == []
