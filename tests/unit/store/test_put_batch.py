"""``MessageStore.put_batch``: a SEND_BATCH_MESSAGE stored straight from its body
(``CommitLog.MessageExtBatchEncoder``) must leave the commit log, the consume queue and the
index exactly as ``put_messages`` leaves them for the same messages, and refuse what
``put_messages`` refuses without storing any of it."""

from __future__ import annotations

import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocketq.broker.store import (
    SYNC_FLUSH,
    MessageExtBatch,
    MessageExtBrokerInner,
    MessageStore,
    PutMessageStatus,
)
from rocketq.errors import IllegalArgumentError, MalformedFrameError
from rocketq.protocol.message import (
    RecordEncoder,
    decode_properties,
    decode_records,
    encode_properties,
    tags_code,
)
from rocketq.protocol.message_id import HostAddr
from tests.unit.store.conftest import BORN, STORE_HOST, T0, StoreFactory

TOPIC = "BatchT"


def _entries(items: list[tuple[int, bytes, str]]) -> bytes:
    """A SEND_BATCH_MESSAGE body of (flag, body, property string)."""
    out = b""
    for flag, body, props in items:
        raw = props.encode()
        out += struct.pack(">iiiii", 20 + len(body) + 2 + len(raw), 0, 0, flag, len(body)) + body
        out += len(raw).to_bytes(2, "big") + raw
    return out


def _batch(body: bytes, props: dict[str, str], **overrides: int) -> MessageExtBatch:
    return MessageExtBatch(
        topic=TOPIC,
        queue_id=0,
        body=body,
        born_host=BORN,
        store_host=STORE_HOST,
        properties=dict(props),
        born_timestamp=overrides.get("born_timestamp", T0 - 5),
        sys_flag=overrides.get("sys_flag", 0),
        reconsume_times=overrides.get("reconsume_times", 0),
    )


def _inners(items: list[tuple[int, bytes, str]], batch_props: dict[str, str]) -> list[MessageExtBrokerInner]:
    """The same batch as message objects, built as the send processor built them before
    ``put_batch``: the entry's string, a separator unless it ends with one, the batch's."""
    suffix = encode_properties(batch_props, java_order=True)
    out = []
    for flag, body, pstr in items:
        props = decode_properties(pstr)
        tags = props.get("TAGS")
        stored = pstr
        if suffix:
            if stored and not stored.endswith("\x02"):
                stored += "\x02"
            stored += suffix
        inner = MessageExtBrokerInner(
            topic=TOPIC,
            queue_id=0,
            flag=flag,
            body=body,
            properties={**props, **batch_props},
            properties_string=stored,
            born_host=BORN,
            store_host=STORE_HOST,
            born_timestamp=T0 - 5,
        )
        # tagsCode from the entry's own TAGS, as the send processor computed it
        inner.tags_code = tags_code(tags)
        out.append(inner)
    return out


def _state(store: MessageStore) -> tuple[bytes, bytes, list[bytes]]:
    log = b"".join(bytes(mf.view[: mf.wrote_position]) for mf in store.commit_log.queue.files)
    cq = store.consume_queue_table[(TOPIC, 0)]
    units = b"".join(bytes(mf.view[: mf.wrote_position]) for mf in cq.queue.files)
    index = [bytes(f.file.view) for f in store.index_service.files]
    return log, units, index


_prop_name = st.sampled_from(["TAGS", "KEYS", "UNIQ_KEY", "WAIT", "a", "Zz"])
_prop_value = st.text(
    alphabet=st.characters(blacklist_characters="\x01\x02", blacklist_categories=["Cs"]),
    min_size=1,
    max_size=12,
)
_entry = st.tuples(
    st.integers(min_value=-(2**31), max_value=2**31 - 1),
    st.binary(max_size=200),
    st.dictionaries(_prop_name, _prop_value, max_size=4).map(encode_properties),
    st.booleans(),  # a trailing separator, as some clients write
).map(lambda t: (t[0], t[1], t[2] + "\x02" if t[3] and t[2] else t[2]))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    batches=st.lists(st.lists(_entry, min_size=1, max_size=8), min_size=1, max_size=4),
    batch_props=st.dictionaries(st.sampled_from(["CLUSTER", "WAIT", "KEYS"]), _prop_value, max_size=2),
)
def test_put_batch_stores_what_put_messages_stores(
    tmp_path_factory: pytest.TempPathFactory,
    batches: list[list[tuple[int, bytes, str]]],
    batch_props: dict[str, str],
) -> None:
    factory = StoreFactory(tmp_path_factory.mktemp("store"))
    try:
        by_body = factory(root=factory.root / "body")
        by_objects = factory(root=factory.root / "objects")
        factory.clock.step = 0  # both stores see the same store times
        for items in batches:
            body = _entries(items)
            batch = _batch(body, batch_props)
            got = by_body.put_batch(batch)
            want = by_objects.put_messages(_inners(items, batch_props), batch_body_size=len(body))
            assert got.status is want.status is PutMessageStatus.PUT_OK
            assert got.append is not None and want.append is not None
            assert got.append.msg_id == want.append.msg_id
            assert got.append.logics_offset == want.append.logics_offset
            assert got.append.wrote_bytes == want.append.wrote_bytes
            assert batch.msgs == len(items)
            assert batch.body_size == sum(len(b) for _, b, _ in items)
        assert _state(by_body) == _state(by_objects)
        # and what a reader gets back: the same messages, properties merged
        got_msgs = by_body.get_message("G", TOPIC, 0, 0, 64)
        want_msgs = by_objects.get_message("G", TOPIC, 0, 0, 64)
        assert [bytes(b) for b in got_msgs.buffers] == [bytes(b) for b in want_msgs.buffers]
    finally:
        for store in factory.stores:
            store.shutdown()


def test_arrival_listeners_see_each_record_with_the_merged_properties(factory: StoreFactory) -> None:
    store = factory()
    seen: list[tuple[int, int, dict[str, str]]] = []
    store.add_arrival_listener(lambda topic, qid, offset, tags, ts, props: seen.append((offset, tags, props)))
    body = _entries([(0, b"a", "TAGS\x01x\x02KEYS\x01k"), (0, b"b", "")])
    assert store.put_batch(_batch(body, {"CLUSTER": "C"})).ok
    assert [offset for offset, _, _ in seen] == [1, 2]
    assert seen[0][2] == {"TAGS": "x", "KEYS": "k", "CLUSTER": "C"}
    assert seen[1] == (2, 0, {"CLUSTER": "C"})
    assert seen[0][1] != 0  # the entry's TAGS hash


@pytest.mark.parametrize(
    "body",
    [
        b"\x00\x00",  # shorter than an entry header
        _entries([(0, b"abc", "")])[:-1],  # cut short
        struct.pack(">iiiii", 99, 0, 0, 0, 3) + b"abc\x00\x00",  # TOTALSIZE disagrees
        _entries([(0, b"ok", "")]) + b"\x00" * 5,  # a good entry, then garbage
    ],
)
def test_a_malformed_body_raises_and_stores_nothing(factory: StoreFactory, body: bytes) -> None:
    store = factory()
    with pytest.raises(MalformedFrameError):
        store.put_batch(_batch(body, {}))
    assert store.get_max_offset_in_queue(TOPIC, 0) == 0
    assert store.commit_log.max_offset() == 0


def test_a_delayed_entry_refuses_the_batch(factory: StoreFactory) -> None:
    store = factory()
    body = _entries([(0, b"a", ""), (0, b"b", "DELAY\x013")])
    with pytest.raises(IllegalArgumentError, match="Delay message is not supported in batch"):
        store.put_batch(_batch(body, {}))
    assert store.commit_log.max_offset() == 0
    # the batch's own delay level refuses it too (CommitLog.asyncPutMessages)
    with pytest.raises(IllegalArgumentError, match="Delay message is not supported in batch"):
        store.put_batch(_batch(_entries([(0, b"a", "")]), {"DELAY": "2"}))
    assert store.commit_log.max_offset() == 0
    # Message.getDelayTimeLevel: a level that is not a number, or 0, is no delay
    body = _entries([(0, b"a", "DELAY\x01x"), (0, b"b", "DELAY\x010")])
    assert store.put_batch(_batch(body, {})).ok


def test_refusals_carry_put_messages_statuses(factory: StoreFactory) -> None:
    store = factory(max_message_size=2_000)
    failed = store.stats.put_message_failed_times
    # an entry's properties fit their signed short; with the batch's appended they do not
    big_props = _entries([(0, b"a", "a\x01" + "v" * 32_700)])
    store_big = factory(root=factory.root / "big")
    refused = store_big.put_batch(_batch(big_props, {"CLUSTER": "c" * 100}))
    assert refused.status is PutMessageStatus.PROPERTIES_SIZE_EXCEEDED
    too_big = _entries([(0, b"x" * 1_000, ""), (0, b"y" * 1_000, "")])
    assert store.put_batch(_batch(too_big, {})).status is PutMessageStatus.MESSAGE_ILLEGAL
    assert store.put_batch(_batch(b"", {})).status is PutMessageStatus.MESSAGE_ILLEGAL
    prepared = _entries([(0, b"a", "")])
    assert store.put_batch(_batch(prepared, {}, sys_flag=4)).status is PutMessageStatus.MESSAGE_ILLEGAL
    out_of_range = _batch(prepared, {}, reconsume_times=2**31)
    assert store.put_batch(out_of_range).status is PutMessageStatus.MESSAGE_ILLEGAL
    assert store.stats.put_message_failed_times == failed + 4
    assert store.commit_log.max_offset() == 0
    assert store_big.commit_log.max_offset() == 0


def test_the_first_entry_says_whether_the_put_waits_for_the_disk(factory: StoreFactory) -> None:
    store = factory(flush_disk_type=SYNC_FLUSH)
    body = _entries([(0, b"a", "WAIT\x01false"), (0, b"b", "")])
    result = store.put_batch(_batch(body, {}), defer_flush=True)
    assert result.ok and result.flush_offset < 0
    body = _entries([(0, b"a", ""), (0, b"b", "WAIT\x01false")])
    result = store.put_batch(_batch(body, {}), defer_flush=True)
    assert result.ok and result.flush_offset == store.commit_log.max_offset()
    # the batch's own WAIT wins over its entries'
    body = _entries([(0, b"a", "WAIT\x01true")])
    result = store.put_batch(_batch(body, {"WAIT": "false"}), defer_flush=True)
    assert result.ok and result.flush_offset < 0


def test_a_sync_flush_batch_is_written_from_its_buffer(factory: StoreFactory) -> None:
    # SYNC_FLUSH writes the commit log through its descriptor: the buffer put_batch built is
    # patched in place and written; what lands on disk must be the records, offsets set
    store = factory(flush_disk_type=SYNC_FLUSH)
    body = _entries([(0, b"first", "TAGS\x01t"), (7, b"second", "")])
    assert store.put_batch(_batch(body, {"CLUSTER": "C"})).ok
    result = store.get_message("G", TOPIC, 0, 0, 8)
    msgs = decode_records(result.body())
    assert [m.body for m in msgs] == [b"first", b"second"]
    assert [m.queue_offset for m in msgs] == [0, 1]
    assert [m.flag for m in msgs] == [0, 7]
    assert msgs[1].commit_log_offset == msgs[0].store_size
    assert msgs[0].properties == {"TAGS": "t", "CLUSTER": "C"}


def test_the_record_encoder_cache_is_bounded_and_refuses_what_cannot_be_encoded() -> None:
    """``_encoder_for`` (every put's encoder, single or batch): one encoder per topic, hosts
    and sysFlag, kept until the cache holds ``_ENCODER_CACHE_MAX``, then the cache starts
    over; a topic over 127 bytes gets none."""
    from rocketq.broker.store.message_store import _ENCODER_CACHE_MAX, _encoder_for

    cache: dict[tuple[str, HostAddr, HostAddr, int], RecordEncoder] = {}
    first = _encoder_for(cache, "t0", BORN, STORE_HOST, 0)
    assert first is not None
    assert _encoder_for(cache, "t0", BORN, STORE_HOST, 0) is first  # kept
    for i in range(1, _ENCODER_CACHE_MAX):
        assert _encoder_for(cache, f"t{i}", BORN, STORE_HOST, 0) is not None
    assert len(cache) == _ENCODER_CACHE_MAX
    assert _encoder_for(cache, "one more", BORN, STORE_HOST, 0) is not None
    assert len(cache) == 1  # emptied, then the new one kept
    assert _encoder_for(cache, "t0", BORN, STORE_HOST, 0) is not first
    assert _encoder_for(cache, "x" * 128, BORN, STORE_HOST, 0) is None
    assert _encoder_for(None, "t0", BORN, STORE_HOST, 0) is not None  # uncached
