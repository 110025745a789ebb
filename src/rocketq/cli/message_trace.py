"""``rocketq message trace -i <msgId>``: a message's trace timeline (mqadmin ``queryMsgTraceById``).

Mirrors ``org.apache.rocketmq.tools.command.message.QueryMsgTraceByIdSubCommand`` (4.9.7).
The query (QUERY_MESSAGE on the trace topic, ``-t``, default ``RMQ_SYS_TRACE_TOPIC``, by the
message id as key, at most 64 trace messages) is :meth:`rocketq.admin.Admin.query_msg_trace`,
shared with the web dashboard; this module prints every Pub record as its own block and
the SubAfter records grouped by consumer group, in Java's fixed-width layout
(``%-10s %-20s %-20s %-20s %-10s %-10s``, times ``yyyy-MM-dd HH:mm:ss`` local). ``--json``
prints the decoded records instead.
"""

from __future__ import annotations

import argparse
import datetime as _dt
from typing import Any

from rocketq.admin import Admin
from rocketq.cli._output import Output, add_admin_command
from rocketq.client.trace.trace_view import TraceView
from rocketq.protocol.java import hashmap_order
from rocketq.protocol.mixall import RMQ_SYS_TRACE_TOPIC

__all__ = ["format_trace_timeline", "register_trace"]

_ROW = "{:<10} {:<20} {:<20} {:<20} {:<10} {:<10}"


def register_trace(sub: Any) -> None:
    """Add ``trace`` to the ``message`` subcommands."""
    p = sub.add_parser(
        "trace",
        help="a message's trace timeline: who sent it, which groups consumed it (mqadmin queryMsgTraceById)",
        description="Reads the trace records producers and push consumers with message trace on "
        "wrote to the trace topic.",
    )
    p.add_argument("-i", "--msg-id", required=True, help="the message id (UNIQ_KEY) as the producer saw it")
    p.add_argument("-t", "--trace-topic", default=RMQ_SYS_TRACE_TOPIC, help="the trace topic")
    add_admin_command(p, _trace)


def _time(ms: int) -> str:
    return _dt.datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%d %H:%M:%S")


def _row(kind: str, view: TraceView) -> str:
    return _ROW.format(
        kind, view.group_name, view.client_host, _time(view.time_stamp), f"{view.cost_time}ms", view.status
    )


def format_trace_timeline(views: list[TraceView]) -> list[str]:
    """``QueryMsgTraceByIdSubCommand.printMessageTrace`` as lines."""
    lines: list[str] = []
    consumers: dict[str, list[TraceView]] = {}
    for view in views:
        if view.msg_type == "Pub":
            lines += [
                _ROW.format("#Type", "#ProducerGroup", "#ClientHost", "#SendTime", "#CostTimes", "#Status"),
                _row("Pub", view),
                "",
            ]
        elif view.msg_type == "SubAfter":
            consumers.setdefault(view.group_name, []).append(view)
    for group in hashmap_order(list(consumers)):
        lines.append(
            _ROW.format("#Type", "#ConsumerGroup", "#ClientHost", "#ConsumerTime", "#CostTimes", "#Status")
        )
        lines += [_row("Sub", view) for view in consumers[group]]
        lines.append("")
    return lines


def _trace(args: argparse.Namespace, admin: Admin, out: Output) -> int:
    msg_id = args.msg_id.strip()
    topic = args.trace_topic.strip()
    views = admin.query_msg_trace(msg_id, trace_topic=topic).views
    if out.json_mode:
        out.json([v.to_json_obj() for v in views])
        return 0
    if not views:
        out.line(f"no trace of {msg_id} in {topic}")
        return 0
    for line in format_trace_timeline(views):
        out.line(line)
    return 0
