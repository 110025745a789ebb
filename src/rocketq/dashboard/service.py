"""DashboardService: the view models of the web dashboard, computed over :class:`rocketq.admin.Admin`.

Everything the dashboard shows or changes goes through the admin API (so it works unchanged
against an Apache RocketMQ 4.x cluster); this module only shapes the answers for pages:
merged figures across brokers (cluster totals, a group's lag over every broker), topic
categories (rocketmq-dashboard's normal / retry / DLQ / system filter), and the small JSON
documents the live charts poll. Mirrors the service layer of rocketmq-dashboard
(``ClusterServiceImpl``, ``TopicServiceImpl``, ``ConsumerServiceImpl``, ``MessageServiceImpl``,
``DlqMessageServiceImpl``).

Invariants: no state besides the admin; every method is a blocking call safe to run on any
worker thread (the admin is thread-safe).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from rocketq.admin import Admin, MessageTrace, ResendMethod, ResendResult
from rocketq.admin.groups import GroupSummary
from rocketq.errors import BrokerError, RocketqError
from rocketq.protocol.codes import ResponseCode
from rocketq.protocol.message import Message, MessageExt
from rocketq.protocol.mixall import (
    DLQ_GROUP_TOPIC_PREFIX,
    REPLY_TOPIC_POSTFIX,
    RETRY_GROUP_TOPIC_PREFIX,
    SYSTEM_TOPIC_PREFIX,
    SYSTEM_TOPICS,
    dlq_topic,
)

__all__ = ["TOPIC_CATEGORIES", "DashboardService", "TopicRow", "topic_category"]

#: rocketmq-dashboard's topic filter.
TOPIC_CATEGORIES: tuple[str, ...] = ("normal", "retry", "dlq", "system")


def topic_category(topic: str, system_names: frozenset[str] = frozenset()) -> str:
    """``retry`` / ``dlq`` / ``system`` / ``normal`` for one topic name."""
    if topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
        return "retry"
    if topic.startswith(DLQ_GROUP_TOPIC_PREFIX):
        return "dlq"
    # TopicValidator.SYSTEM_TOPIC_SET, the rmq_sys_ prefix, <cluster>_REPLY_TOPIC, and the
    # cluster and broker names the name server lists as system topics
    if (
        topic in SYSTEM_TOPICS
        or topic in system_names
        or topic.endswith("_" + REPLY_TOPIC_POSTFIX)
        or topic.startswith(SYSTEM_TOPIC_PREFIX)
    ):
        return "system"
    return "normal"


@dataclass(frozen=True)
class TopicRow:
    name: str
    category: str


class DashboardService:
    """The dashboard's reads and writes, one method per page or action."""

    def __init__(self, admin: Admin) -> None:
        self.admin = admin

    # ------------------------------------------------------------------ cluster
    def cluster(self) -> dict[str, Any]:
        view = self.admin.cluster_list()
        brokers = view.brokers
        return {
            "clusters": view.clusters,
            "brokers": brokers,
            "in_tps": sum(b.in_tps for b in brokers),
            "out_tps": sum(b.out_tps for b in brokers),
            "in_today": sum(b.in_today for b in brokers),
            "out_today": sum(b.out_today for b in brokers),
        }

    def broker(self, addr: str) -> dict[str, Any]:
        return {
            "addr": addr,
            "runtime": dict(sorted(self.admin.broker_runtime_info(addr).items())),
            "config": self.admin.broker_config(addr),
        }

    def overview(self) -> dict[str, Any]:
        """Live chart data: cluster-wide in/out TPS and per-broker figures, now."""
        data = self.cluster()
        return {
            "ts": int(time.time() * 1000),
            "in_tps": round(data["in_tps"], 2),
            "out_tps": round(data["out_tps"], 2),
            "brokers": {
                f"{b.broker_name}/{b.broker_id}": {"in_tps": b.in_tps, "out_tps": b.out_tps}
                for b in data["brokers"]
            },
        }

    # ------------------------------------------------------------------ topics
    def _system_names(self) -> frozenset[str]:
        info = self.admin.cluster_info()
        return frozenset(info.cluster_addr_table) | frozenset(info.broker_addr_table)

    def topics(self, category: str | None = None) -> list[TopicRow]:
        names = self._system_names()
        rows = [TopicRow(t, topic_category(t, names)) for t in self.admin.topic_list()]
        if category in TOPIC_CATEGORIES:
            rows = [r for r in rows if r.category == category]
        return rows

    def topic(self, topic: str) -> dict[str, Any]:
        admin = self.admin
        route = admin.topic_route(topic)
        status = admin.topic_status(topic)
        groups = admin.topic_consumed_by(topic)
        read = sum(qd.read_queue_nums for qd in route.queue_datas)
        write = sum(qd.write_queue_nums for qd in route.queue_datas)
        perms = sorted({qd.perm for qd in route.queue_datas})
        return {
            "topic": topic,
            "route": route,
            "status": status,
            "groups": groups,
            "read_queue_nums": max((qd.read_queue_nums for qd in route.queue_datas), default=0),
            "write_queue_nums": max((qd.write_queue_nums for qd in route.queue_datas), default=0),
            "total_read": read,
            "total_write": write,
            "perm": perms[0] if perms else 6,
            "category": topic_category(topic, self._system_names()),
        }

    def send_test_message(self, topic: str, body: str, tags: str | None, keys: str | None) -> dict[str, Any]:
        msg = Message(topic, body.encode("utf-8"), tags=tags or None, keys=keys or None)
        result = self.admin.send_messages([msg])[0]
        return {
            "status": result.status.name,
            "msg_id": result.msg_id,
            "offset_msg_id": result.offset_msg_id,
            "queue": f"{result.message_queue.broker_name}/{result.message_queue.queue_id}",
            "queue_offset": result.queue_offset,
        }

    # ------------------------------------------------------------------ groups
    def groups(self) -> list[GroupSummary]:
        return self.admin.group_summaries()

    def group(self, group: str) -> dict[str, Any]:
        admin = self.admin
        out: dict[str, Any] = {"group": group, "progress": None, "connections": None, "running": {}}
        try:
            progress = admin.consumer_progress(group)
        except RocketqError as exc:
            out["progress_error"] = str(exc)
        else:
            out["progress"] = progress
            topics = [q.topic for q in progress.queues if not q.topic.startswith(RETRY_GROUP_TOPIC_PREFIX)]
            out["main_topic"] = topics[0] if topics else None
        try:
            out["connections"] = admin.consumer_connections(group)
        except BrokerError as exc:
            if exc.code != ResponseCode.CONSUMER_NOT_ONLINE:
                raise
        if out["connections"] is not None:
            for conn in out["connections"].connections:
                try:
                    out["running"][conn.client_id] = admin.consumer_running_info(group, conn.client_id)
                except RocketqError as exc:
                    out["running"][conn.client_id] = str(exc)
        return out

    def group_lag(self, group: str) -> dict[str, Any]:
        """Live chart data: the group's total lag and consume TPS, now (merged over brokers)."""
        try:
            stats = self.admin.consume_stats(group)
        except RocketqError:
            return {"ts": int(time.time() * 1000), "lag": 0, "tps": 0.0, "queues": {}}
        queues = {
            f"{mq.topic}/{mq.broker_name}/{mq.queue_id}": max(0, w.broker_offset - w.consumer_offset)
            for mq, w in sorted(stats.offset_table.items())
        }
        return {
            "ts": int(time.time() * 1000),
            "lag": sum(queues.values()),
            "tps": round(stats.consume_tps, 2),
            "queues": queues,
        }

    # ------------------------------------------------------------------ messages
    def messages_by_time(
        self, topic: str, begin_ms: int | None, end_ms: int | None, count: int
    ) -> list[MessageExt]:
        return self.admin.pull_messages(topic, begin_ms=begin_ms, end_ms=end_ms, count=count)

    def messages_by_key(self, topic: str, key: str) -> list[MessageExt]:
        return self.admin.query_by_key(topic, key)

    def message(self, msg_id: str, topic: str | None) -> dict[str, Any]:
        msg = self.admin.view_message(msg_id, topic)
        try:
            tracks = self.admin.message_track(msg)
        except RocketqError as exc:
            tracks = []
            track_error: str | None = str(exc)
        else:
            track_error = None
        return {"msg": msg, "tracks": tracks, "track_error": track_error}

    def resend(self, msg_id: str, topic: str | None, group: str, method: ResendMethod) -> ResendResult:
        return self.admin.resend_message(msg_id, group, topic=topic, method=method)

    # ------------------------------------------------------------------ trace
    def trace(self, msg_id: str, trace_topic: str) -> dict[str, Any]:
        """A message's trace timeline, plus the stored message of each Pub record when found."""
        trace: MessageTrace = self.admin.query_msg_trace(msg_id, trace_topic=trace_topic)
        stored: dict[str, MessageExt | None] = {}
        for pub in trace.pubs:
            if pub.topic in stored:
                continue
            try:  # the store time comes from the message itself (a Pub record holds the send time)
                stored[pub.topic] = self.admin.query_by_unique_key(pub.topic, trace.msg_id)
            except RocketqError:
                stored[pub.topic] = None
        return {"trace": trace, "stored": stored}

    # ------------------------------------------------------------------ DLQ
    def dlq(self, group: str, count: int = 100) -> list[MessageExt]:
        try:
            return self.admin.pull_messages(dlq_topic(group), count=count)
        except BrokerError as exc:
            if exc.code == ResponseCode.TOPIC_NOT_EXIST:
                return []
            raise

    def resend_dlq(self, group: str, msg_ids: list[str] | None) -> list[ResendResult]:
        return self.admin.resend_dlq(group, method=ResendMethod.PRODUCE, msg_ids=msg_ids)
