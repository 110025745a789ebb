"""Column-wise record decoding (rocketq.spark.columnar) against the reference codec.

Pure: no Spark, no broker. Every batch decoded column-wise must equal what
``decode_records`` + ``MessageExt.msg_id`` + Java's property rules give row by row.
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql.pandas.types import to_arrow_schema

from rocketq.errors import MalformedFrameError
from rocketq.protocol.message import (
    MAGIC_CODE_V1,
    decode_properties,
    decode_records,
    encode_record,
)
from rocketq.spark import columnar
from rocketq.spark.columnar import arrow_schema, decode_batch, record_starts
from rocketq.spark.datasource import READ_DDL, read_schema

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
                "msg_id": m.msg_id,
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
        pairs = row["properties"]
        assert len({name for name, _ in pairs}) == len(pairs), pairs  # Spark refuses duplicate keys
        row["properties"] = dict(pairs)
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
    bare = decode(b"", properties=False)
    assert bare.num_rows == 0  # type: ignore[attr-defined]
    assert bare.schema.equals(arrow_schema(properties=False))  # type: ignore[attr-defined]


@pytest.mark.parametrize("properties", [True, False])
def test_arrow_schema_is_what_spark_expects_of_the_read_schema(properties: bool) -> None:
    # pyspark's plan_data_source_read refuses batches whose schema is not exactly this
    expected = to_arrow_schema(read_schema(properties=properties), timezone="UTC")
    assert arrow_schema(properties=properties).equals(expected)
    assert ("properties" in arrow_schema(properties=properties).names) is properties


def test_read_ddl_is_the_read_columns() -> None:
    assert ", ".join(f"{name} {kind}" for name, kind, _ in columnar.READ_COLUMNS) == READ_DDL


def test_without_properties_the_other_columns_are_unchanged() -> None:
    buf = b"".join(record(i) for i in range(50)) + record(50, props="KEYS\x01k 1\x02x\x01y")
    full = decode(buf).to_pylist()  # type: ignore[attr-defined]
    bare = decode(buf, properties=False)
    assert bare.schema.equals(arrow_schema(properties=False))  # type: ignore[attr-defined]
    for row in full:
        del row["properties"]
    assert bare.to_pylist() == full  # type: ignore[attr-defined]


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


# ----------------------------------------------------------------- fast paths
# Records of one size are read through strided views, and property strings that share
# one layout (same names, separators and value widths) are sliced as columns. These
# tests build exactly such batches (and near misses) and hold them to the reference.


def uniform(n: int, props: object, *, body: bytes = b"y" * 40, **kw: object) -> bytes:
    """``n`` records whose property string is ``props(i)`` (a callable) or constant."""
    return b"".join(
        record(i, body, props(i) if callable(props) else props, **kw)  # type: ignore[arg-type]
        for i in range(n)
    )


def test_uniform_records_take_the_strided_path_and_match() -> None:
    buf = uniform(64, lambda i: f"UNIQ_KEY\x01U{i:031d}\x02TAGS\x01{'AB'[i % 2]}\x02KEYS\x01k{i % 10}")
    size = len(record(0, b"y" * 40, "UNIQ_KEY\x01U" + "0" * 31 + "\x02TAGS\x01A\x02KEYS\x01k0"))
    assert record_starts(buf).tolist() == list(range(0, len(buf), size))
    rows = actual_rows(decode(buf))
    assert rows == expected_rows(buf)
    assert [r["tags"] for r in rows[:4]] == ["A", "B", "A", "B"]


def test_template_duplicates_dropped_segments_and_separators_in_values() -> None:
    # WAIT twice (batch sends store entry + batch properties), a segment without a value, one
    # without a separator, an empty name, and a value holding \x01: Java's lenient parse.
    props = "WAIT\x01true\x02UNIQ_KEY\x01{u}\x02EMPTY\x01\x02junk\x02\x01x\x02V\x01a\x01{c}\x02WAIT\x01{w}"
    buf = uniform(40, lambda i: props.format(u=f"{i:032X}", c="bc"[i % 2], w="tf"[i % 2]))
    rows = actual_rows(decode(buf))
    assert rows == expected_rows(buf)
    assert rows[1]["properties"] == {"WAIT": "f", "UNIQ_KEY": f"{1:032X}", "V": "a\x01c"}


def test_a_row_off_the_template_falls_back_exactly() -> None:
    # same width everywhere, but one row's value holds a \x02 and another's name differs
    def props(i: int) -> str:
        if i == 7:
            return "UNIQ_KEY\x01" + "A" * 15 + "\x02" + "B" * 16 + "\x02TAGS\x01A"
        if i == 9:
            return "UNIQ_KEX\x01" + "C" * 32 + "\x02TAGS\x01A"
        return f"UNIQ_KEY\x01{i:032d}\x02TAGS\x01A"

    buf = uniform(12, props)
    assert actual_rows(decode(buf)) == expected_rows(buf)


@pytest.mark.parametrize("name_len", [1, 2, 3, 5, 7, 12, 13, 17])
def test_every_byte_of_the_template_names_is_compared(name_len: int) -> None:
    # one row differs from row 0 in one byte of a name (or its separators): for every byte
    # the rows are off the template and must decode as the reference codec does
    name = "NabcdefghijklmnopqrstuvwxyZ"[:name_len]
    template = f"UNIQ_KEY\x01{{u}}\x02{name}\x01v\x02TAGS\x01A"
    span = template.format(u="0" * 32).index("\x02")  # \x02 name \x01 after UNIQ_KEY's value
    for at in range(len(name) + 2):

        def props(i: int, at: int = at) -> str:
            text = template.format(u=f"{i:032X}")
            if i != 3:
                return text
            cut = span + at
            return text[:cut] + ("Q" if text[cut] != "Q" else "R") + text[cut + 1 :]

        buf = uniform(6, props)
        assert actual_rows(decode(buf)) == expected_rows(buf), at


def test_template_without_uniq_key_uses_offset_msg_ids_and_empty_properties() -> None:
    buf = uniform(5, "TAGS\x01A\x02KEYS\x01k")
    rows = actual_rows(decode(buf))
    assert rows == expected_rows(buf)
    assert rows[0]["msg_id"] == "7F00000100002A9F0000000000001388"
    empty = uniform(5, "")
    assert actual_rows(decode(empty)) == expected_rows(empty)


def test_template_with_gathered_rows_of_mixed_body_sizes() -> None:
    buf = b"".join(record(i, b"z" * (i * 7), f"UNIQ_KEY\x01{i:032d}\x02TAGS\x01B") for i in range(30))
    assert actual_rows(decode(buf)) == expected_rows(buf)


def test_template_with_invalid_utf8_values_decodes_with_replacement() -> None:
    buf = bytearray(uniform(6, "UNIQ_KEY\x01" + "é" * 16 + "\x02TAGS\x01A"))
    size = len(buf) // 6
    for i in range(6):
        at = buf.index("é".encode(), i * size)
        buf[at] = 0xFF  # a lone invalid byte in every row: the layout is still uniform
    rows = actual_rows(decode(bytes(buf)))
    assert rows == expected_rows(bytes(buf))
    assert "\ufffd" in rows[0]["msg_id"]  # type: ignore[operator]


def _no_general_path(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object) -> None:
        raise AssertionError("these rows should not need the general property parse")

    monkeypatch.setattr(columnar._Props, "__init__", refuse)


def test_template_with_valid_non_ascii_values(monkeypatch: pytest.MonkeyPatch) -> None:
    _no_general_path(monkeypatch)
    buf = uniform(6, lambda i: "UNIQ_KEY\x01" + "é" * 15 + f"{i:02d}" + "\x02TAGS\x01ü")
    rows = actual_rows(decode(buf))
    assert rows == expected_rows(buf)
    assert rows[1]["msg_id"] == "é" * 15 + "01" and rows[1]["tags"] == "ü"


def test_uniform_records_with_ipv6_compressed_and_empty_bodies() -> None:
    props = "UNIQ_KEY\x01" + "0" * 32 + "\x02TAGS\x01A"
    for kw in (
        {"born": ("fe80::1", 4242)},
        {"store": ("::1", 10911)},
        {"body": zlib.compress(b"q" * 100), "sys_flag": 0x301},
        {"body": b""},
    ):
        buf = uniform(8, props, **kw)  # type: ignore[arg-type]
        assert actual_rows(decode(buf)) == expected_rows(buf), kw


def test_several_pull_bodies_decode_as_one_batch() -> None:
    parts = [uniform(3, "TAGS\x01A"), uniform(4, "TAGS\x01A", body=b"long" * 50), record(9)]
    batch = decode(parts)
    assert actual_rows(batch) == expected_rows(b"".join(parts))


def test_uniform_size_with_a_broken_chain_is_malformed() -> None:
    buf = bytearray(uniform(4, "TAGS\x01A"))
    size = len(buf) // 4
    buf[2 * size : 2 * size + 4] = (size + 1).to_bytes(4, "big")
    with pytest.raises(MalformedFrameError):
        decode(bytes(buf))


@settings(max_examples=60, deadline=None)
@given(
    widths=st.lists(
        st.tuples(st.sampled_from(["A", "B", "UNIQ_KEY", "TAGS", ""]), st.integers(0, 4)), max_size=4
    ),
    values=st.lists(st.text(alphabet="ab\x01\x02", min_size=20, max_size=20), min_size=1, max_size=8),
    same_body=st.booleans(),
)
def test_same_width_properties_match_reference_codec(
    widths: list[tuple[str, int]], values: list[str], same_body: bool
) -> None:
    def props(i: int) -> str:
        text, pos = [], 0
        for name, w in widths:
            text.append(f"{name}\x01{values[i][pos : pos + w]}")
            pos += w
        return "\x02".join(text)

    buf = b"".join(record(i, b"b" * (10 if same_body else i), props(i)) for i in range(len(values)))
    assert actual_rows(decode(buf)) == expected_rows(buf)


def test_prefixes_slice_the_longest_array_built() -> None:
    prefixes = columnar._Prefixes(entries=2, max_bytes=1000)
    built: list[int] = []

    def build(m: int) -> np.ndarray:
        built.append(m)
        return np.arange(m, dtype=np.int64) * 3

    assert prefixes.get("a", 10, build).tolist() == [k * 3 for k in range(10)]
    assert prefixes.get("a", 4, build).tolist() == [0, 3, 6, 9]  # a slice of the first
    assert prefixes.get("a", 20, build).tolist() == [k * 3 for k in range(20)]  # longer: built again
    assert built == [10, 20]
    cached = prefixes.get("a", 5, build)
    assert not cached.flags.writeable
    prefixes.get("b", 1, build)
    prefixes.get("c", 1, build)  # two entries: "a" (least recently used) is dropped
    prefixes.get("a", 5, build)
    assert built == [10, 20, 1, 1, 5]
    prefixes.get("big", 200, build)  # 1600 bytes: over max_bytes, never kept
    prefixes.get("big", 200, build)
    assert built[-2:] == [200, 200]


def test_batches_of_any_size_after_one_another_match_the_reference() -> None:
    # the constant columns and offsets are prefixes of arrays kept across batches
    for n in (50, 7, 120, 1, 50, 300, 2):
        buf = uniform(n, lambda i: f"UNIQ_KEY\x01{i:032X}\x02TAGS\x01T{i % 3}\x02KEYS\x01k")
        assert actual_rows(decode(buf)) == expected_rows(buf), n


def test_same_names_with_values_of_any_width_take_the_ordered_path(monkeypatch: pytest.MonkeyPatch) -> None:
    _no_general_path(monkeypatch)
    rows = [
        # KEYS of varying width, tags of two widths, a \x01 inside a value, a dropped
        # segment without a value, a name given twice (the later wins), non-ASCII values
        f"KEYS\x01order-{7**i}\x02UNIQ_KEY\x01U{i}\x02V\x01x\x01{'é' * i}\x02gone\x01\x02"
        f"TAGS\x01{'paid' if i % 2 else 'created'}\x02V\x01last{i}"
        for i in range(9)
    ]
    buf = b"".join(record(i, b"y" * (5 + i), props) for i, props in enumerate(rows))
    got = actual_rows(decode(buf))
    assert got == expected_rows(buf)
    assert got[2]["keys"] == "order-49" and got[2]["tags"] == "created" and got[2]["msg_id"] == "U2"
    assert got[2]["properties"] == {"KEYS": "order-49", "UNIQ_KEY": "U2", "V": "last2", "TAGS": "created"}


@pytest.mark.parametrize(
    "odd_row",
    [
        "TAGS\x01A\x02KEYS\x01k",  # the names in another order
        "KEYS\x01k\x02TAGS\x01A\x02MORE\x01m",  # one pair more
        "KEYS\x01k\x02TAGX\x01A",  # a different name of the same length
        "KEYS\x01k\x02TAGS\x01",  # an empty value: Java drops the pair in this row only
        "KEYS\x01k\x02TAGS\x01A\x02B",  # a value holding \x02
        "KEYS\x01k\x02TAGS\x01é",  # é made invalid UTF-8 below (decoded with replacement)
    ],
)
@pytest.mark.parametrize("at", [0, 4])
def test_rows_off_the_ordered_layout_decode_exactly(odd_row: str, at: int) -> None:
    props = [f"KEYS\x01k{i * 11}\x02TAGS\x01{'A' * (1 + i % 3)}" for i in range(6)]
    props[at] = odd_row
    buf = bytearray(b"".join(record(i, b"z", p) for i, p in enumerate(props)))
    if "é" in odd_row:
        buf[buf.index("é".encode())] = 0xFF
    assert actual_rows(decode(bytes(buf))) == expected_rows(bytes(buf))


def test_separators_are_counted_per_row_not_only_in_total() -> None:
    # six separators for three rows of two, but two rows' worth in row 1 and none in row 2
    for props in (
        ["K\x01a\x02", "K\x01b\x02K\x01c\x02", "junk"],
        ["j\x02K\x01a", "j\x02K\x01b\x02K\x01c", "x"],
    ):
        buf = b"".join(record(i, b"z", p) for i, p in enumerate(props))
        assert actual_rows(decode(buf)) == expected_rows(buf)


@settings(max_examples=80, deadline=None)
@given(
    names=st.lists(st.sampled_from(["KEYS", "TAGS", "UNIQ_KEY", "A", "", "é"]), max_size=5),
    values=st.lists(
        st.lists(st.text(alphabet="ab\x01é", max_size=6), min_size=5, max_size=5), min_size=1, max_size=10
    ),
    odd=st.booleans(),
)
def test_ordered_layouts_match_reference_codec(names: list[str], values: list[list[str]], odd: bool) -> None:
    def props(i: int) -> str:
        pairs = [f"{name}\x01{values[i][j]}" for j, name in enumerate(names)]
        if odd and i == len(values) - 1:
            pairs.append("X\x01y")
        return "\x02".join(pairs)

    buf = b"".join(record(i, b"b" * i, props(i)) for i in range(len(values)))
    assert actual_rows(decode(buf)) == expected_rows(buf)
