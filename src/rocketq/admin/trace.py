"""Message trace queries of the admin API: one message's trace timeline.

Mirrors ``org.apache.rocketmq.tools.command.message.QueryMsgTraceByIdSubCommand`` (4.9.7):
QUERY_MESSAGE on the trace topic (default ``RMQ_SYS_TRACE_TOPIC``) with the message id as
key, at most 64 trace messages over all time, each decoded with
``TraceView.decodeFromTraceTransData`` (:func:`rocketq.client.trace.trace_view.decode_trace_views`).
On top of mqadmin's flat list it pairs, per consumer group, each consume attempt's
SubBefore and SubAfter records by their requestId, as rocketmq-dashboard's
``MessageTraceServiceImpl`` does for its trace graph. Both ``rocketq message trace`` and the
web dashboard's trace page use :func:`query_msg_trace` (through
:meth:`rocketq.admin.Admin.query_msg_trace`).

Invariants: ``MessageTrace.views`` keeps the records in the order decoded (what mqadmin
prints); the grouping never drops a record: every SubBefore/SubAfter of the message is in
exactly one :class:`ConsumeAttempt`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from rocketq.client.trace.trace_context import TraceType
from rocketq.client.trace.trace_data_encoder import decode_trace_data
from rocketq.client.trace.trace_view import TraceView, decode_trace_views
from rocketq.errors import IllegalArgumentError
from rocketq.protocol.mixall import RMQ_SYS_TRACE_TOPIC

if TYPE_CHECKING:
    from rocketq.admin.admin import Admin

__all__ = ["ConsumeAttempt", "MessageTrace", "build_message_trace", "query_msg_trace"]

#: ``QueryMsgTraceByIdSubCommand``: at most this many trace messages are read
TRACE_QUERY_MAX = 64


@dataclass(frozen=True)
class ConsumeAttempt:
    """One listener call of one consumer group over the message: SubBefore and/or SubAfter."""

    group: str
    request_id: str
    retry_times: int
    before: TraceView | None
    after: TraceView | None

    @property
    def _first(self) -> TraceView:
        view = self.before or self.after
        if view is None:  # never built so: an attempt exists because one of its records does
            raise ValueError(f"consume attempt {self.request_id} of {self.group} has no record")
        return view

    @property
    def client_host(self) -> str:
        return self._first.client_host

    @property
    def begin_ms(self) -> int:
        """When the consume started (SubBefore), else the SubAfter's time."""
        return self._first.time_stamp

    @property
    def cost_ms(self) -> int | None:
        return self.after.cost_time if self.after else None

    @property
    def status(self) -> str:
        """``success`` / ``failed`` from SubAfter; ``no result`` while only SubBefore is known."""
        return self.after.status if self.after else "no result"


@dataclass(frozen=True)
class MessageTrace:
    """Everything the trace topic holds about one message id."""

    msg_id: str
    trace_topic: str
    views: list[TraceView]
    pubs: list[TraceView]
    consumers: dict[str, list[ConsumeAttempt]]

    @property
    def empty(self) -> bool:
        return not self.views


def build_message_trace(
    msg_id: str, trace_topic: str, records: list[tuple[TraceView, str, int]]
) -> MessageTrace:
    """Group decoded records (view, requestId, retryTimes) into a :class:`MessageTrace`."""
    views = [view for view, _, _ in records]
    pubs = [v for v in views if v.msg_type == TraceType.Pub.value]
    halves: dict[tuple[str, str], dict[str, TraceView]] = {}
    retries: dict[tuple[str, str], int] = {}
    order: list[tuple[str, str]] = []
    for view, request_id, retry_times in records:
        if view.msg_type not in (TraceType.SubBefore.value, TraceType.SubAfter.value):
            continue
        key = (view.group_name, request_id)
        if key not in halves:
            halves[key] = {}
            order.append(key)
        halves[key].setdefault(view.msg_type, view)
        if view.msg_type == TraceType.SubBefore.value:
            retries[key] = retry_times
    consumers: dict[str, list[ConsumeAttempt]] = {}
    for key in order:
        group, request_id = key
        pair = halves[key]
        consumers.setdefault(group, []).append(
            ConsumeAttempt(
                group=group,
                request_id=request_id,
                retry_times=retries.get(key, 0),
                before=pair.get(TraceType.SubBefore.value),
                after=pair.get(TraceType.SubAfter.value),
            )
        )
    for attempts in consumers.values():
        attempts.sort(key=lambda a: a.begin_ms)
    return MessageTrace(msg_id, trace_topic, views, pubs, dict(sorted(consumers.items())))


def query_msg_trace(
    admin: Admin, msg_id: str, *, trace_topic: str = RMQ_SYS_TRACE_TOPIC, max_num: int = TRACE_QUERY_MAX
) -> MessageTrace:
    """The trace of ``msg_id`` (the producer's msgId, UNIQ_KEY) from ``trace_topic``."""
    msg_id = msg_id.strip()
    trace_topic = trace_topic.strip()
    if not msg_id:
        raise IllegalArgumentError("a message id is required to query its trace")
    if not trace_topic:
        raise IllegalArgumentError("the trace topic must not be empty")
    records: list[tuple[TraceView, str, int]] = []
    for message in admin.query_by_key(trace_topic, msg_id, max_num=max_num):
        views = decode_trace_views(msg_id, message)
        body = message.body.decode("utf-8", "replace") if message.body else ""
        # the same records decode_trace_views kept, in the same order: their requestId and retries
        contexts = [c for c in decode_trace_data(body) if c.trace_beans[0].msg_id == msg_id]
        records.extend(
            (view, ctx.request_id, ctx.trace_beans[0].retry_times)
            for view, ctx in zip(views, contexts, strict=True)
        )
    return build_message_trace(msg_id, trace_topic, records)
