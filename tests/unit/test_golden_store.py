"""Golden store files and record-carrying frames of a real RocketMQ 4.9.7 against the codec.

golden/store/commitlog_prefix.bin holds all 44 records of the capture session and
MESSAGES.json describes each one; the consume-queue prefixes index them. The pull,
view and query responses of the .jsonl captures carry the same records, and the
SEND_BATCH_MESSAGE request carries a batch body.
"""

from __future__ import annotations

import datetime as dt
import json
import struct
from pathlib import Path
from typing import Any

import pytest

from rocketq.protocol.frame import decode_frame
from rocketq.protocol.message import (
    POS_BORN_TIMESTAMP,
    POS_PHYSICAL_OFFSET,
    POS_QUEUE_OFFSET,
    POS_SYS_FLAG,
    Message,
    MessageConst,
    compress_body,
    decode_batch,
    decode_properties,
    decode_record,
    decode_records,
    encode_batch,
    encode_properties,
    encode_record,
    store_timestamp_pos,
    tags_code,
)
from rocketq.protocol.message_id import decode_offset_msg_id, decode_unique_id
from tests.conftest import GoldenFrame, golden_dir, load_golden_frames

STORE = golden_dir() / "store"
COMMITLOG = (STORE / "commitlog_prefix.bin").read_bytes()
MESSAGES: list[dict[str, Any]] = json.loads((STORE / "MESSAGES.json").read_text())["messages"]
BY_OFFSET = {m["commitlog_offset"]: m for m in MESSAGES}
CQ_FILES = sorted(STORE.glob("consumequeue_*_prefix.bin"))
CQ_ENTRY = struct.Struct(">qiq")
#: Default messageDelayLevel "1s 5s 10s ...": level 3 is 10 s (SCHEDULE_TOPIC_XXXX queue 2).
LEVEL3_DELAY_MS = 10_000


def _host(text: str) -> tuple[str, int]:
    ip, _, port = text.rpartition(":")
    return ip, int(port)


def _record_bytes(m: dict[str, Any]) -> bytes:
    return COMMITLOG[m["commitlog_offset"] : m["commitlog_offset"] + m["size"]]


def test_golden_prefix_is_complete() -> None:
    assert len(COMMITLOG) == 12022
    assert len(MESSAGES) == 44
    assert sum(m["size"] for m in MESSAGES) == len(COMMITLOG)


def test_decode_records_of_whole_prefix_matches_messages_json() -> None:
    decoded = decode_records(COMMITLOG)
    assert len(decoded) == 44
    for msg, exp in zip(decoded, MESSAGES, strict=True):
        assert msg.commit_log_offset == exp["commitlog_offset"]
        assert msg.store_size == exp["size"]
        assert msg.topic == exp["topic"]
        assert msg.queue_id == exp["queueId"]
        assert msg.queue_offset == exp["queueOffset"]
        assert msg.sys_flag == exp["sysFlag"]
        assert msg.flag == exp["flag"]
        assert msg.body_crc == exp["bodyCRC"]
        assert msg.reconsume_times == exp["reconsumeTimes"]
        assert msg.prepared_transaction_offset == exp["preparedTransactionOffset"]
        assert msg.born_timestamp == exp["bornTimestamp"]
        assert msg.store_timestamp == exp["storeTimestamp"]
        assert msg.born_host == _host(exp["bornHost"])
        assert msg.store_host == _host(exp["storeHost"])
        assert msg.tags == exp["tags"]
        assert tags_code(msg.tags) == exp["tagsCode"]
        assert " ".join(msg.keys) == exp["keys"]
        assert msg.body == exp["body"].encode()
        assert msg.properties == exp["properties"]
        assert msg.offset_msg_id == exp["offsetMsgId"]
        assert msg.msg_id == (exp["UNIQ_KEY"] or exp["offsetMsgId"])
        assert msg.get_property(MessageConst.UNIQ_KEY) == exp["UNIQ_KEY"]
        names = [seg.split("\x01", 1)[0] for seg in msg.stored_properties.split("\x02")]
        assert names == exp["properties_raw_order"]


@pytest.mark.parametrize("exp", MESSAGES, ids=lambda m: f"{m['commitlog_offset']}-{m['topic']}")
def test_each_record_decodes_alone_and_reencodes_byte_exact(exp: dict[str, Any]) -> None:
    raw = _record_bytes(exp)
    # through a memoryview of the whole file, as a store reading a mapped file would
    stored = decode_record(memoryview(COMMITLOG), exp["commitlog_offset"], decompress=False, verify_crc=True)
    assert len(stored.body) == exp["stored_body_length"]
    again = encode_record(
        topic=stored.topic,
        queue_id=stored.queue_id,
        flag=stored.flag,
        queue_offset=stored.queue_offset,
        physical_offset=stored.commit_log_offset,
        sys_flag=stored.sys_flag,
        born_timestamp=stored.born_timestamp,
        born_host=stored.born_host,
        store_timestamp=stored.store_timestamp,
        store_host=stored.store_host,
        reconsume_times=stored.reconsume_times,
        prepared_transaction_offset=stored.prepared_transaction_offset,
        body=stored.body,
        properties=stored.stored_properties,
    )
    assert again == raw
    if exp["body_compressed"]:
        plain = decode_record(raw).body
        assert plain == exp["body"].encode()
        # Java's Deflater at level 5 and zlib at level 5 agree byte for byte
        assert compress_body(plain) == stored.body
    else:
        assert stored.body == exp["body"].encode()
    # records without duplicate names re-encode from the parsed dict as well
    if len(set(exp["properties_raw_order"])) == len(exp["properties_raw_order"]):
        assert encode_properties(decode_properties(stored.stored_properties)) == stored.stored_properties
    # fixed positions a store patches in place
    assert struct.unpack_from(">q", raw, POS_QUEUE_OFFSET)[0] == exp["queueOffset"]
    assert struct.unpack_from(">q", raw, POS_PHYSICAL_OFFSET)[0] == exp["commitlog_offset"]
    assert struct.unpack_from(">i", raw, POS_SYS_FLAG)[0] == exp["sysFlag"]
    assert struct.unpack_from(">q", raw, POS_BORN_TIMESTAMP)[0] == exp["bornTimestamp"]
    assert struct.unpack_from(">q", raw, store_timestamp_pos(exp["sysFlag"]))[0] == exp["storeTimestamp"]


def test_compressed_record_flags() -> None:
    (exp,) = [m for m in MESSAGES if m["body_compressed"]]
    assert exp["sysFlag"] == 0x301
    msg = decode_record(_record_bytes(exp))
    assert len(msg.body) == 5023
    assert msg.sys_flag == 0x301  # kept as stored, like Java's MessageDecoder


def test_batch_records_keep_duplicate_wait_in_stored_properties() -> None:
    batch = [m for m in MESSAGES if m["keys"].startswith("GoldenBatch-")]
    assert len(batch) == 3
    for exp in batch:
        msg = decode_record(_record_bytes(exp))
        assert msg.stored_properties.endswith("\x02CLUSTER\x01DefaultCluster\x02WAIT\x01true")
        assert msg.properties["WAIT"] == "true"


def test_ipv6_uniq_keys_decode() -> None:
    utc = dt.timezone.utc
    for exp in MESSAGES:
        uniq = exp["UNIQ_KEY"]
        if uniq is None:
            assert exp["topic"] == "OFFSET_MOVED_EVENT"
            continue
        assert len(uniq) == 56
        info = decode_unique_id(uniq, now_ms=exp["storeTimestamp"] + 1, tz=utc)
        assert info.ip == "fd00::2"
        assert info.pid == int(uniq[32:36], 16)
        assert info.counter == int(uniq[52:56], 16)
        # the id is made just before the send: at or shortly before the born timestamp
        assert 0 <= exp["bornTimestamp"] - info.timestamp_ms < 1000
    first = decode_unique_id(MESSAGES[0]["UNIQ_KEY"], now_ms=MESSAGES[0]["storeTimestamp"] + 1, tz=utc)
    assert first.timestamp_ms == MESSAGES[0]["bornTimestamp"]
    assert first.counter == 0


def test_offset_msg_ids_decode_to_store_host_and_offset() -> None:
    for exp in MESSAGES:
        assert decode_offset_msg_id(exp["offsetMsgId"]) == (("127.0.0.1", 10911), exp["commitlog_offset"])


# --------------------------------------------------------------------------- consume queues
def _cq_name(path: Path) -> tuple[str, int]:
    stem = path.name.removeprefix("consumequeue_").removesuffix("_prefix.bin")
    topic, _, qid = stem.rpartition("_")
    return topic, int(qid)


def test_consume_queue_files_index_the_records() -> None:
    assert len(CQ_FILES) == 16
    expected = {(e["file"], e["index"]): (m, e) for m in MESSAGES for e in m["consumequeue_entries"]}
    seen = 0
    for path in CQ_FILES:
        data = path.read_bytes()
        assert len(data) % CQ_ENTRY.size == 0 and data
        topic, qid = _cq_name(path)
        for index in range(len(data) // CQ_ENTRY.size):
            offset, size, code = CQ_ENTRY.unpack_from(data, index * CQ_ENTRY.size)
            exp, entry = expected[(path.name, index)]
            assert (offset, size, code) == (exp["commitlog_offset"], exp["size"], entry["tagsCode_in_cq"])
            msg = decode_record(COMMITLOG, offset)
            assert msg.store_size == size
            assert (msg.topic, msg.queue_id, msg.queue_offset) == (topic, qid, index)
            if topic == "SCHEDULE_TOPIC_XXXX":
                # CommitLog.checkMessageAndReturnSize: the delivery time replaces the tag hash
                assert msg.delay_time_level == 3
                assert code == msg.store_timestamp + LEVEL3_DELAY_MS
            else:
                assert code == tags_code(msg.tags)
            seen += 1
    assert seen == len(expected) == 44


# --------------------------------------------------------------------------- frames
def _responses_to(codes: set[int], *files: str) -> list[tuple[GoldenFrame, int]]:
    out = []
    for name in files:
        frames = load_golden_frames(name)
        requests = {(f.conn, f.opaque): f.code for f in frames if not f.is_response}
        for f in frames:
            req = requests.get((f.conn, f.opaque))
            if f.is_response and f.code == 0 and req in codes and f.body:
                out.append((f, req))
    return out


RECORD_RESPONSES = _responses_to(
    {11, 12, 33},
    "pull.jsonl",
    "push_concurrently.jsonl",
    "push_orderly.jsonl",
    "binary_header.jsonl",
    "admin.jsonl",
)


def test_record_responses_found() -> None:
    assert sum(1 for _, code in RECORD_RESPONSES if code == 11) == 14
    assert {code for _, code in RECORD_RESPONSES} == {11, 12, 33}


@pytest.mark.parametrize(("frame", "req"), RECORD_RESPONSES, ids=lambda x: getattr(x, "file", str(x)))
def test_record_bodies_in_golden_responses_decode(frame: GoldenFrame, req: int) -> None:
    body = decode_frame(frame.frame).body
    assert body == frame.body
    msgs = decode_records(body)
    assert msgs
    pos = 0
    for msg in msgs:
        exp = BY_OFFSET[msg.commit_log_offset]
        assert body[pos : pos + msg.store_size] == _record_bytes(exp)
        assert msg.topic == exp["topic"]
        assert msg.properties == exp["properties"]
        assert msg.msg_id == (exp["UNIQ_KEY"] or exp["offsetMsgId"])
        pos += msg.store_size
    assert pos == len(body)


def test_push_pull_bodies_hold_only_subscribed_tags() -> None:
    for frame, req in RECORD_RESPONSES:
        if req == 11 and frame.file == "push_concurrently.jsonl":
            for msg in decode_records(frame.body or b""):
                if msg.topic == "GoldenPushTopic":
                    assert msg.tags in {"TagA", "TagB"}


def test_send_batch_body_decodes_and_reencodes() -> None:
    (req,) = [f for f in load_golden_frames("producer.jsonl") if f.code == 320 and not f.is_response]
    body = req.body
    assert body is not None
    entries = decode_batch(body)
    assert [e.body for e in entries] == [f"Hello golden batch {i}".encode() for i in (1, 2, 3)]
    assert all(e.flag == 0 for e in entries)
    # equivalent Messages built through the public constructor
    rebuilt = []
    for i, entry in enumerate(entries, start=1):
        uniq = entry.property_map()[MessageConst.UNIQ_KEY]
        rebuilt.append(
            Message(
                "GoldenProducerTopic",
                f"Hello golden batch {i}".encode(),
                tags="TagA",
                keys=[f"GoldenBatch-{i}"],
                properties={MessageConst.UNIQ_KEY: uniq},
            )
        )
    assert encode_batch(rebuilt) == body
    # and straight from the decoded entries
    same = [Message("GoldenProducerTopic", e.body, flag=e.flag, properties=e.property_map()) for e in entries]
    assert encode_batch(same) == body
    # the stored records are entry properties + "\x02" + batch properties (CLUSTER, WAIT)
    stored = [decode_record(_record_bytes(m)) for m in MESSAGES if m["keys"].startswith("GoldenBatch-")]
    for entry, msg in zip(entries, stored, strict=True):
        assert msg.stored_properties.startswith(entry.properties + "\x02")
