"""A batch's records are dispatched together (``MessageStore._dispatch_batch``): the consume
queue and the index must come out exactly as when each record is dispatched on its own."""

from __future__ import annotations

import shutil
import struct
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from rocketq.broker.store import MessageStore
from rocketq.broker.store.consume_queue import ConsumeQueue
from rocketq.broker.store.index import IndexService, index_key_hash
from tests.unit.store.conftest import StoreFactory, make_msg

_UNIT = struct.Struct(">qiq")


def _files(cq: ConsumeQueue) -> list[tuple[str, bytes]]:
    return [(mf.path.rsplit("/", 1)[-1], bytes(mf.view[: mf.wrote_position])) for mf in cq.queue.files]


@settings(max_examples=40, deadline=None)
@given(
    start=st.integers(min_value=0, max_value=25),
    batches=st.lists(st.integers(min_value=1, max_value=12), min_size=1, max_size=6),
)
def test_put_many_writes_what_put_writes(start: int, batches: list[int]) -> None:
    root = Path(tempfile.mkdtemp())
    try:
        _compare_put_many(root, start, batches)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _compare_put_many(root: Path, start: int, batches: list[int], units_per_file: int = 7) -> None:
    # 7 units per file: batches straddle files; a start past 0 pads with pre-blank units
    one = ConsumeQueue("T", 0, str(root / "one"), units_per_file * 20)
    many = ConsumeQueue("T", 0, str(root / "many"), units_per_file * 20)
    cq_offset, phys = start, 1000
    for n in batches:
        units = [(phys + i * 150, 150, 17 + i) for i in range(n)]
        for i, (offset, size, tags) in enumerate(units):
            one.put(offset, size, tags, cq_offset + i, 5)
        many.put_many(units, cq_offset, 5)
        cq_offset += n
        phys += n * 150
    assert _files(many) == _files(one)
    assert many.max_physic_offset == one.max_physic_offset
    assert many.min_logic_offset == one.min_logic_offset
    # a re-dispatch of the last batch (recovery) changes nothing
    last = batches[-1]
    again = [(phys - (last - i) * 150, 150, 17 + i) for i in range(last)]
    many.put_many(again, cq_offset - last, 5)
    assert _files(many) == _files(one)
    one.close()
    many.close()


def test_put_many_packs_large_batches_as_put_writes_them(tmp_path: Path) -> None:
    # batches of hundreds of units written in one pack, and one that must roll the file
    _compare_put_many(tmp_path, 3, [300, 1, 257, 600], units_per_file=1_000)


def test_build_index_batch_equals_record_by_record(tmp_path: Path) -> None:
    records = [
        ([index_key_hash(f"T#k{i}"), index_key_hash(f"T#u{i % 3}")], 100 * (i + 1), 1_000 + i)
        for i in range(40)
    ]
    one = IndexService(str(tmp_path / "one"), 8, 30, 64, lambda: 1_000)
    batch = IndexService(str(tmp_path / "batch"), 8, 30, 64, lambda: 1_000)
    for key_hashes, phy, ts in records:
        one.build_index(key_hashes, phy, ts)
    batch.build_index_batch(records[:25])
    batch.build_index_batch(records[20:])  # overlapping re-dispatch is skipped
    assert [bytes(f.file.view) for f in batch.files] == [bytes(f.file.view) for f in one.files]
    assert len(batch.files) == 3  # 30 entries per file (entry 0 unused): files roll over
    one.close()
    batch.close()


def test_batch_is_found_by_queue_and_by_key(factory: StoreFactory) -> None:
    store: MessageStore = factory()
    store.put_message(make_msg(body=b"single", keys="s"))
    batch = [make_msg(body=f"b{i}".encode(), keys=f"key{i}", tags="TagB") for i in range(20)]
    result = store.put_messages(batch)
    assert result.ok
    cq = store.find_consume_queue("TopicA", 0)
    assert cq is not None
    units = list(_UNIT.iter_unpack(bytes(cq.queue.files[0].view[: cq.queue.files[0].wrote_position])))
    assert len(units) == 21
    assert result.append is not None and result.append.logics_offset == 1
    got = store.get_message("g", "TopicA", 0, 1, 32)
    assert got.message_queue_offsets == list(range(1, 21))
    for i in (0, 7, 19):
        found = store.query_message("TopicA", f"key{i}", 10, 0, 2**62)
        assert len(found.buffers) == 1
        assert f"b{i}".encode() in bytes(found.buffers[0])
