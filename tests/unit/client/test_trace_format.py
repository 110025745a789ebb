"""Trace records in TraceDataEncoder's text format (RocketMQ 4.9.7), and the bounded queue.

The expected strings are written out field by field from the documented layout (fields
joined by \\x01, each record closed by \\x02), not produced by the encoder under test.
"""

from __future__ import annotations

import time

from rocketq.cli.message_trace import format_trace_timeline
from rocketq.client.trace import (
    AsyncTraceDispatcher,
    MessageType,
    TraceBean,
    TraceContext,
    TraceType,
    decode_trace_data,
    encode_trace_context,
)
from rocketq.client.trace.trace_view import decode_trace_views
from rocketq.protocol.message import MessageExt

A, B = "\x01", "\x02"


def _pub() -> TraceContext:
    bean = TraceBean(
        topic="T",
        msg_id="7F00000100002A9F0000000000000001",
        offset_msg_id="0A0000010000271F0000000000000100",
        tags="TagA",
        keys="k1 k2",
        store_host="10.0.0.1:10911",
        body_length=11,
        msg_type=MessageType.Normal_Msg,
    )
    return TraceContext(
        TraceType.Pub,
        time_stamp=1700000000123,
        region_id="DefaultRegion",
        group_name="pg",
        cost_time=7,
        is_success=True,
        trace_beans=[bean],
    )


def test_pub_record_field_order() -> None:
    out = encode_trace_context(_pub())
    assert out.trans_data == (
        "Pub" + A + "1700000000123" + A + "DefaultRegion" + A + "pg" + A + "T" + A
        + "7F00000100002A9F0000000000000001" + A + "TagA" + A + "k1 k2" + A + "10.0.0.1:10911" + A
        + "11" + A + "7" + A + "0" + A + "0A0000010000271F0000000000000100" + A + "true" + B
    )  # fmt: skip
    assert out.trans_key == {"7F00000100002A9F0000000000000001", "k1", "k2"}


def test_null_fields_are_written_as_java_does() -> None:
    ctx = _pub()
    ctx.trace_beans[0].tags = None
    ctx.trace_beans[0].keys = None
    ctx.trace_beans[0].msg_type = MessageType.Delay_Msg
    ctx.is_success = False
    fields = encode_trace_context(ctx).trans_data.rstrip(B).split(A)
    assert fields[6] == "null" and fields[7] == "null"
    assert fields[11] == "3"
    assert fields[13] == "false"
    assert encode_trace_context(ctx).trans_key == {"7F00000100002A9F0000000000000001"}


def _sub(kind: TraceType) -> TraceContext:
    beans = [
        TraceBean(msg_id="M1", keys="a", retry_times=0),
        TraceBean(msg_id="M2", keys="b", retry_times=2),
    ]
    return TraceContext(
        kind,
        time_stamp=1700000000999,
        region_id="DefaultRegion",
        group_name="cg",
        request_id="REQ1",
        cost_time=3,
        is_success=False,
        context_code=4,
        trace_beans=beans,
    )


def test_sub_before_is_one_record_per_message() -> None:
    data = encode_trace_context(_sub(TraceType.SubBefore)).trans_data
    assert data == (
        "SubBefore" + A + "1700000000999" + A + "DefaultRegion" + A + "cg" + A + "REQ1" + A + "M1" + A + "0" + A + "a" + B
        + "SubBefore" + A + "1700000000999" + A + "DefaultRegion" + A + "cg" + A + "REQ1" + A + "M2" + A + "2" + A + "b" + B
    )  # fmt: skip


def test_sub_after_layout_with_context_code_then_time_and_group() -> None:
    data = encode_trace_context(_sub(TraceType.SubAfter)).trans_data
    assert data == (
        "SubAfter" + A + "REQ1" + A + "M1" + A + "3" + A + "false" + A + "a" + A + "4" + A + "1700000000999" + A + "cg" + B
        + "SubAfter" + A + "REQ1" + A + "M2" + A + "3" + A + "false" + A + "b" + A + "4" + A + "1700000000999" + A + "cg" + B
    )  # fmt: skip


def test_decode_reads_what_java_writes() -> None:
    data = "".join(
        encode_trace_context(c).trans_data
        for c in (_pub(), _sub(TraceType.SubBefore), _sub(TraceType.SubAfter))
    )
    decoded = decode_trace_data(data)
    assert [c.trace_type for c in decoded] == [TraceType.Pub] + [TraceType.SubBefore] * 2 + [
        TraceType.SubAfter
    ] * 2
    pub = decoded[0]
    assert pub.trace_beans[0].offset_msg_id == "0A0000010000271F0000000000000100"
    assert (pub.time_stamp, pub.cost_time, pub.is_success) == (1700000000123, 7, True)
    after = decoded[4]
    assert (after.request_id, after.context_code, after.group_name, after.is_success) == (
        "REQ1",
        4,
        "cg",
        False,
    )
    # an older, 13-field Pub record (no offsetMsgId) still decodes
    old = (
        "Pub"
        + A
        + "1"
        + A
        + "r"
        + A
        + "g"
        + A
        + "T"
        + A
        + "M"
        + A
        + "t"
        + A
        + "k"
        + A
        + "h"
        + A
        + "1"
        + A
        + "2"
        + A
        + "0"
        + A
        + "true"
        + B
    )
    (ctx,) = decode_trace_data(old)
    assert ctx.is_success and ctx.trace_beans[0].offset_msg_id == ""


def test_timeline_lines_match_mqadmin_layout() -> None:
    data = "".join(encode_trace_context(c).trans_data for c in (_pub(), _sub(TraceType.SubAfter)))
    msg = MessageExt(topic="RMQ_SYS_TRACE_TOPIC", body=data.encode())
    msg.born_host = ("10.1.2.3", 5555)
    views = decode_trace_views("7F00000100002A9F0000000000000001", msg)
    assert [v.msg_type for v in views] == ["Pub"]
    lines = format_trace_timeline(views + decode_trace_views("M1", msg))
    assert (
        lines[0]
        == f"{'#Type':<10} {'#ProducerGroup':<20} {'#ClientHost':<20} {'#SendTime':<20} {'#CostTimes':<10} {'#Status':<10}"
    )
    assert lines[1].startswith(f"{'Pub':<10} {'pg':<20} {'10.1.2.3':<20} ")
    assert lines[1].endswith(f"{'7ms':<10} {'success':<10}")
    assert lines[3].startswith(f"{'#Type':<10} {'#ConsumerGroup':<20}")
    assert lines[4].startswith(f"{'Sub':<10} {'cg':<20} {'10.1.2.3':<20} ")
    assert lines[4].endswith(f"{'3ms':<10} {'failed':<10}")


def test_full_queue_drops_and_counts_without_blocking() -> None:
    dispatcher = AsyncTraceDispatcher("g", "PRODUCE")  # not started: nothing drains the queue
    start = time.monotonic()
    results = [dispatcher.append(_pub()) for _ in range(1024 + 10)]
    assert time.monotonic() - start < 1.0
    assert results.count(False) == 10
    assert dispatcher.dropped == 10
    dispatcher.shutdown()
