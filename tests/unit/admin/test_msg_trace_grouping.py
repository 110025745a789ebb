"""Grouping of a message's trace records (rocketq.admin.trace): Pub records apart, per
consumer group one attempt per requestId with its SubBefore and SubAfter paired, by time."""

from __future__ import annotations

import pytest

from rocketq.admin.trace import build_message_trace
from rocketq.client.trace.trace_view import TraceView
from rocketq.errors import IllegalArgumentError

MSG = "7F00000100002A9F0000000000000001"


def _view(
    kind: str, group: str, ts: int, cost: int = 0, status: str = "success", host: str = "10.0.0.9"
) -> TraceView:
    return TraceView(
        msg_type=kind,
        msg_id=MSG,
        tags=None,
        keys="k",
        topic="T" if kind == "Pub" else "",
        offset_msg_id="",
        group_name=group,
        time_stamp=ts,
        cost_time=cost,
        status=status,
        store_host=None,
        client_host=host,
    )


def test_sub_records_pair_by_request_id_per_group_in_time_order() -> None:
    records = [
        (_view("Pub", "pg", 100, cost=3), "r0", 0),
        # group a: a failed try (r1) then a retry (r2), records out of order across trace messages
        (_view("SubAfter", "a", 260, cost=40, status="success"), "r2", 0),
        (_view("SubBefore", "a", 110), "r1", 0),
        (_view("SubBefore", "a", 220), "r2", 1),
        (_view("SubAfter", "a", 130, cost=20, status="failed"), "r1", 0),
        # group b: consuming now, no SubAfter yet
        (_view("SubBefore", "b", 150, host="10.0.0.7"), "r3", 0),
    ]
    trace = build_message_trace(MSG, "RMQ_SYS_TRACE_TOPIC", records)
    assert trace.views == [v for v, _, _ in records]  # mqadmin's flat list keeps the decoded order
    assert [p.group_name for p in trace.pubs] == ["pg"]
    assert list(trace.consumers) == ["a", "b"]
    first, retry = trace.consumers["a"]
    assert (first.request_id, first.begin_ms, first.cost_ms, first.status, first.retry_times) == (
        "r1",
        110,
        20,
        "failed",
        0,
    )
    assert (retry.request_id, retry.begin_ms, retry.cost_ms, retry.status, retry.retry_times) == (
        "r2",
        220,
        40,
        "success",
        1,
    )
    assert retry.after is not None and retry.after.time_stamp == 260
    (pending,) = trace.consumers["b"]
    assert pending.after is None and pending.cost_ms is None and pending.status == "no result"
    assert pending.client_host == "10.0.0.7"
    assert not trace.empty


def test_a_sub_after_alone_is_its_own_attempt() -> None:
    trace = build_message_trace(MSG, "T", [(_view("SubAfter", "a", 500, cost=5), "r9", 0)])
    (only,) = trace.consumers["a"]
    assert only.before is None and only.begin_ms == 500 and only.status == "success"
    assert trace.pubs == []


def test_empty_id_is_refused() -> None:
    from rocketq.admin.trace import query_msg_trace

    with pytest.raises(IllegalArgumentError):
        query_msg_trace(None, "  ")  # type: ignore[arg-type]  # refused before the admin is used
