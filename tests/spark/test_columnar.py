"""Column-wise record decoding (rocketq.spark.columnar) against the reference codec.

Pure: no Spark, no broker. Every batch decoded column-wise must equal what
``decode_records`` + ``MessageExt.msg_id`` + Java's property rules give row by row.
"""

from __future__ import annotations

import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketq.errors import MalformedFrameError
from rocketq.protocol.message import (
    MAGIC_CODE_V1,
    MessageExt,
    decode_properties,
    decode_records,
    encode_record,
)
from rocketq.spark.columnar import arrow_schema, decode_batch, record_starts

TOPIC = "orders"


def record(
    i: int,
    body: bytes = b"x" * 100,
    props: str | None = None,
    *,
    born: tuple[str, int] = ("10.1.2.3", 51000),
    store: tuple[str, int] = ("127.0.0.1", 10911),
    sys_flag: int = 0,
    topic: str = TOPIC,
) -> bytes:
    if props is None:
        props = f"KEYS\x01k{i}\x02UNIQ_KEY\x01U{i:031d}\x02TAGS\x01{'A' if i % 2 else 'B'}"
    return encode_record(
        topic=topic,
        queue_id=3,
        flag=0,
        queue_offset=100 + i,
        physical_offset=5000 + 300 * i,
        sys_flag=sys_flag,
        born_timestamp=1_700_000_000_000 + i,
        born_host=born,
        store_timestamp=1_700_000_000_500 + i,
        store_host=store,
        reconsume_times=i % 3,
        prepared_transaction_offset=0,
        body=body,
        properties=props,
    )


def expected_rows(buf: bytes) -> list[dict[str, object]]:
    rows = []
    for m in decode_records(buf):
        props = decode_properties(m.stored_properties)
        rows.append(
            {
                "topic": TOPIC,
                "broker": "broker-a",
                "queue_id": 3,
                "queue_offset": m.queue_offset,
                "msg_id": MessageExt.msg_id.fget(m),  # type: ignore[attr-defined]
                "keys": props.get("KEYS"),
                "tags": props.get("TAGS"),
                "body": m.body,
                "properties": props,
                "born_timestamp_ms": m.born_timestamp,
                "store_timestamp_ms": m.store_timestamp,
                "born_host": f"{m.born_host[0]}:{m.born_host[1]}",
                "reconsume_times": m.reconsume_times,
            }
        )
    return rows


def actual_rows(batch: object) -> list[dict[str, object]]:
    out = []
    for row in batch.to_pylist():  # type: ignore[attr-defined]
        row["properties"] = dict(row["properties"])
        row["born_timestamp_ms"] = int(row.pop("born_timestamp").timestamp() * 1000)
        row["store_timestamp_ms"] = int(row.pop("store_timestamp").timestamp() * 1000)
        out.append(row)
    return out


def decode(buf: bytes, **kw: object) -> object:
    return decode_batch(buf, topic=TOPIC, broker="broker-a", queue_id=3, **kw)  # type: ignore[arg-type]


def test_uniform_records_match_reference_codec() -> None:
    buf = b"".join(record(i) for i in range(500))
    batch = decode(buf)
    assert batch.schema.equals(arrow_schema())  # type: ignore[attr-defined]
    assert actual_rows(batch) == expected_rows(buf)


def test_empty_body_gives_empty_batch() -> None:
    batch = decode(b"")
    assert batch.num_rows == 0  # type: ignore[attr-defined]
    assert batch.schema.equals(arrow_schema())  # type: ignore[attr-defined]


props_text = st.lists(
    st.tuples(
        st.text(st.characters(blacklist_characters="\x00\x01\x02", blacklist_categories=("Cs",)), max_size=8),
        st.text(st.characters(blacklist_characters="\x00\x02", blacklist_categories=("Cs",)), max_size=20),
    ),
    max_size=6,
).map(lambda kvs: "\x02".join(f"{k}\x01{v}" for k, v in kvs))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.binary(max_size=300),
            props_text,
            st.booleans(),  # IPv6 born host
            st.booleans(),  # compressed body
        ),
        min_size=1,
        max_size=25,
    )
)
def test_any_records_match_reference_codec(items: list[tuple[bytes, str, bool, bool]]) -> None:
    parts = []
    for i, (body, props, v6, compressed) in enumerate(items):
        stored, flag = (zlib.compress(body), 0x301) if compressed else (body, 0)
        born = ("fe80::1", 4242) if v6 else ("10.0.0.9", 1234)
        parts.append(record(i, stored, props, born=born, sys_flag=flag))
    buf = b"".join(parts)
    assert actual_rows(decode(buf)) == expected_rows(buf)


def test_duplicate_property_later_one_wins_and_bad_segments_dropped() -> None:
    props = "WAIT\x01false\x02TAGS\x01A\x02\x01novalue\x02noname\x02KEYS\x01\x02WAIT\x01true\x02a\x01b\x01c"
    row = actual_rows(decode(record(0, props=props)))[0]
    assert row["properties"] == {"WAIT": "true", "TAGS": "A", "a": "b\x01c"}
    assert row["tags"] == "A"
    assert row["keys"] is None


def test_msg_id_falls_back_to_offset_msg_id_without_uniq_key() -> None:
    buf = record(0, props="TAGS\x01A") + record(1)
    rows = actual_rows(decode(buf))
    assert rows[0]["msg_id"] == "7F00000100002A9F0000000000001388"  # 127.0.0.1:10911 @ 5000
    assert rows[1]["msg_id"] == f"U{1:031d}"


def test_tag_filter_and_end_offset() -> None:
    buf = b"".join(record(i) for i in range(10))
    batch = decode(buf, tags=("A",), end_offset=107)
    assert [r["queue_offset"] for r in batch.to_pylist()] == [101, 103, 105]  # type: ignore[attr-defined]


def test_record_starts_with_magic_inside_a_body() -> None:
    evil = (b"\x00\x00\x00\x80" + MAGIC_CODE_V1.to_bytes(4, "big", signed=True)) * 3
    buf = record(0) + record(1, body=evil) + record(2)
    assert record_starts(buf).tolist() == [0, len(record(0)), len(record(0)) + len(record(1, body=evil))]
    assert actual_rows(decode(buf)) == expected_rows(buf)


@pytest.mark.parametrize(
    "mangle",
    [
        lambda b: b[:-1],  # truncated
        lambda b: b + b"\x00\x00",  # trailing garbage
        lambda b: b[:4] + b"\x00\x00\x00\x00" + b[8:],  # bad magic
        lambda b: (len(b) + 10).to_bytes(4, "big") + b[4:],  # size past the end
        lambda b: b[:84] + (10_000).to_bytes(4, "big") + b[88:],  # body length too big
    ],
)
def test_malformed_bodies_raise(mangle: object) -> None:
    buf = mangle(record(0))  # type: ignore[operator]
    with pytest.raises(MalformedFrameError):
        decode(buf + record(1) if len(buf) == len(record(0)) else buf)
