"""Typed results of the admin API, each with a plain-JSON form for ``--json`` output.

Mirrors what ``mqadmin`` prints and what its Java model classes hold:
``org.apache.rocketmq.common.admin.{TopicStatsTable, ConsumeStats, RollbackStats}``,
``org.apache.rocketmq.tools.admin.api.{MessageTrack, TrackType}``, the rows of
``ClusterListSubCommand``, ``ConsumerProgressSubCommand`` and ``StatsAllSubCommand``.

Invariants: every model is a frozen dataclass built by :class:`~rocketq.admin.Admin`;
``to_json_obj()`` returns only ``dict``/``list``/``str``/``int``/``float``/``bool``/``None``
(so ``json.dumps`` always works); names in the JSON form are snake_case, times are epoch
milliseconds.
"""

from __future__ import annotations

import base64
import enum
from dataclasses import dataclass, field
from typing import Any

from rocketq.protocol.message import MessageExt
from rocketq.protocol.message_queue import MessageQueue

__all__ = [
    "BrokerSummary",
    "ClientConnection",
    "ClusterView",
    "ConsumerProgress",
    "GroupConnections",
    "JsonObj",
    "MessageTrack",
    "QueueProgress",
    "QueueReset",
    "QueueStatus",
    "ResendMethod",
    "ResendResult",
    "ResetMode",
    "ResetOffsetResult",
    "TopicGroupStats",
    "TopicStatus",
    "TrackType",
    "message_to_json",
    "mq_to_json",
]

#: A JSON object as produced by ``to_json_obj`` (genuinely JSON, hence ``Any``).
JsonObj = dict[str, Any]


def mq_to_json(mq: MessageQueue) -> JsonObj:
    """A MessageQueue as ``{"topic", "broker_name", "queue_id"}``."""
    return {"topic": mq.topic, "broker_name": mq.broker_name, "queue_id": mq.queue_id}


def _host(host: tuple[str, int]) -> str:
    return f"{host[0]}:{host[1]}"


def message_to_json(msg: MessageExt) -> JsonObj:
    """Everything ``mqadmin queryMsgById`` prints about a message, as JSON.

    The body is UTF-8 text when it decodes, else base64 (``body_encoding`` says which).
    """
    try:
        body: str = msg.body.decode("utf-8")
        encoding = "utf-8"
    except UnicodeDecodeError:
        body = base64.b64encode(msg.body).decode("ascii")
        encoding = "base64"
    return {
        "topic": msg.topic,
        "msg_id": msg.msg_id,
        "offset_msg_id": msg.offset_msg_id,
        "tags": msg.tags,
        "keys": list(msg.keys),
        "queue_id": msg.queue_id,
        "queue_offset": msg.queue_offset,
        "commit_log_offset": msg.commit_log_offset,
        "reconsume_times": msg.reconsume_times,
        "born_timestamp": msg.born_timestamp,
        "store_timestamp": msg.store_timestamp,
        "born_host": _host(msg.born_host),
        "store_host": _host(msg.store_host),
        "sys_flag": msg.sys_flag,
        "body_crc": msg.body_crc,
        "store_size": msg.store_size,
        "properties": dict(msg.properties),
        "body": body,
        "body_encoding": encoding,
    }


# --------------------------------------------------------------------------- cluster
@dataclass(frozen=True)
class BrokerSummary:
    """One row of ``mqadmin clusterList``: a broker and its GET_BROKER_RUNTIME_INFO figures.

    ``error`` is set (and the figures are empty) when the broker did not answer.
    """

    cluster: str
    broker_name: str
    broker_id: int
    addr: str
    version: str = ""
    #: ``putTps`` / ``getTransferedTps`` (first window: the last 10 s)
    in_tps: float = 0.0
    out_tps: float = 0.0
    #: messages put / got since this morning (``msgPutTotalTodayNow - msgPutTotalTodayMorning``)
    in_today: int = 0
    out_today: int = 0
    #: ``earliestMessageTimeStamp`` (-1 when the store is empty)
    earliest_message_timestamp: int = -1
    commit_log_disk_ratio: str = ""
    runtime: dict[str, str] = field(default_factory=dict)
    error: str | None = None

    def to_json_obj(self, *, with_runtime: bool = False) -> JsonObj:
        out: JsonObj = {
            "cluster": self.cluster,
            "broker_name": self.broker_name,
            "broker_id": self.broker_id,
            "addr": self.addr,
            "version": self.version,
            "in_tps": self.in_tps,
            "out_tps": self.out_tps,
            "in_today": self.in_today,
            "out_today": self.out_today,
            "earliest_message_timestamp": self.earliest_message_timestamp,
            "commit_log_disk_ratio": self.commit_log_disk_ratio,
            "error": self.error,
        }
        if with_runtime:
            out["runtime"] = dict(self.runtime)
        return out


@dataclass(frozen=True)
class ClusterView:
    """``mqadmin clusterList``: clusters -> broker names, and a summary per broker address."""

    clusters: dict[str, list[str]]
    brokers: list[BrokerSummary]

    def to_json_obj(self) -> JsonObj:
        return {
            "clusters": {k: list(v) for k, v in self.clusters.items()},
            "brokers": [b.to_json_obj() for b in self.brokers],
        }


# --------------------------------------------------------------------------- topics
@dataclass(frozen=True)
class QueueStatus:
    """One queue of ``mqadmin topicStatus`` (``TopicOffset``)."""

    broker_name: str
    queue_id: int
    min_offset: int
    max_offset: int
    last_update_timestamp: int

    def to_json_obj(self) -> JsonObj:
        return {
            "broker_name": self.broker_name,
            "queue_id": self.queue_id,
            "min_offset": self.min_offset,
            "max_offset": self.max_offset,
            "last_update_timestamp": self.last_update_timestamp,
        }


@dataclass(frozen=True)
class TopicStatus:
    """GET_TOPIC_STATS_INFO merged over the topic's brokers, queues in MessageQueue order."""

    topic: str
    queues: list[QueueStatus]

    @property
    def total_messages(self) -> int:
        """Messages still stored: the sum of ``max_offset - min_offset``."""
        return sum(q.max_offset - q.min_offset for q in self.queues)

    def to_json_obj(self) -> JsonObj:
        return {
            "topic": self.topic,
            "total_messages": self.total_messages,
            "queues": [q.to_json_obj() for q in self.queues],
        }


@dataclass(frozen=True)
class TopicGroupStats:
    """One row of ``mqadmin statsAll``: a topic (and one consuming group, if any).

    ``in_tps``/``in_msg_24h`` come from TOPIC_PUT_NUMS, ``out_tps``/``out_msg_24h`` from
    GROUP_GET_NUMS (VIEW_BROKER_STATS_DATA, minute TPS and day sum), ``accumulation`` is the
    group's lag (``ConsumeStats.computeTotalDiff``).
    """

    topic: str
    group: str | None
    accumulation: int
    in_tps: float
    out_tps: float
    in_msg_24h: int
    out_msg_24h: int

    def to_json_obj(self) -> JsonObj:
        return {
            "topic": self.topic,
            "group": self.group,
            "accumulation": self.accumulation,
            "in_tps": self.in_tps,
            "out_tps": self.out_tps,
            "in_msg_24h": self.in_msg_24h,
            "out_msg_24h": self.out_msg_24h,
        }


# --------------------------------------------------------------------------- groups
@dataclass(frozen=True)
class QueueProgress:
    """One queue of ``mqadmin consumerProgress -g``: offsets, lag and the client holding it."""

    topic: str
    broker_name: str
    queue_id: int
    broker_offset: int
    consumer_offset: int
    #: store time of the last consumed message (``lastTimestamp``; 0 = none)
    last_timestamp: int
    #: the client id whose running info lists this queue (None: offline or unassigned)
    client_id: str | None = None

    @property
    def lag(self) -> int:
        """``brokerOffset - consumerOffset`` (mqadmin's "Diff")."""
        return self.broker_offset - self.consumer_offset

    def to_json_obj(self) -> JsonObj:
        return {
            "topic": self.topic,
            "broker_name": self.broker_name,
            "queue_id": self.queue_id,
            "broker_offset": self.broker_offset,
            "consumer_offset": self.consumer_offset,
            "lag": self.lag,
            "client_id": self.client_id,
            "last_timestamp": self.last_timestamp,
        }


@dataclass(frozen=True)
class ConsumerProgress:
    """``mqadmin consumerProgress -g``: per-queue progress, total lag and consume TPS."""

    group: str
    queues: list[QueueProgress]
    consume_tps: float

    @property
    def total_lag(self) -> int:
        """``ConsumeStats.computeTotalDiff`` ("Diff Total")."""
        return sum(q.lag for q in self.queues)

    def to_json_obj(self) -> JsonObj:
        return {
            "group": self.group,
            "total_lag": self.total_lag,
            "consume_tps": self.consume_tps,
            "queues": [q.to_json_obj() for q in self.queues],
        }


@dataclass(frozen=True)
class ClientConnection:
    """``Connection``: one client as a broker sees it."""

    client_id: str
    client_addr: str
    language: str
    version: int
    version_desc: str

    def to_json_obj(self) -> JsonObj:
        return {
            "client_id": self.client_id,
            "client_addr": self.client_addr,
            "language": self.language,
            "version": self.version,
            "version_desc": self.version_desc,
        }


@dataclass(frozen=True)
class GroupConnections:
    """``mqadmin consumerConnection``: the live clients of a group and its subscriptions."""

    group: str
    connections: list[ClientConnection]
    #: topic -> subscription expression
    subscriptions: dict[str, str]
    consume_type: str | None = None
    message_model: str | None = None
    consume_from_where: str | None = None

    def to_json_obj(self) -> JsonObj:
        return {
            "group": self.group,
            "consume_type": self.consume_type,
            "message_model": self.message_model,
            "consume_from_where": self.consume_from_where,
            "subscriptions": dict(self.subscriptions),
            "connections": [c.to_json_obj() for c in self.connections],
        }


# --------------------------------------------------------------------------- offsets
class ResetMode(enum.Enum):
    """How a group's offsets were reset.

    ONLINE: INVOKE_BROKER_TO_RESET_OFFSET; the broker pushes RESET_CONSUMER_CLIENT_OFFSET to
    every live client, which drops its queues and resumes from the new offsets.
    OFFLINE: UPDATE_CONSUMER_OFFSET per queue (``resetOffsetByTimestampOld``); only safe
    while no client of the group runs (a live one would overwrite the offsets).
    """

    ONLINE = "online"
    OFFLINE = "offline"


@dataclass(frozen=True)
class QueueReset:
    """One queue of a reset (``RollbackStats``): the offset before (if known) and after."""

    message_queue: MessageQueue
    new_offset: int
    old_offset: int | None = None
    broker_offset: int | None = None

    def to_json_obj(self) -> JsonObj:
        return {
            **mq_to_json(self.message_queue),
            "old_offset": self.old_offset,
            "new_offset": self.new_offset,
            "broker_offset": self.broker_offset,
        }


@dataclass(frozen=True)
class ResetOffsetResult:
    """The outcome of :meth:`~rocketq.admin.Admin.reset_offset_by_time`."""

    group: str
    topic: str
    timestamp: int
    mode: ResetMode
    queues: list[QueueReset]

    def to_json_obj(self) -> JsonObj:
        return {
            "group": self.group,
            "topic": self.topic,
            "timestamp": self.timestamp,
            "mode": self.mode.value,
            "queues": [q.to_json_obj() for q in self.queues],
        }


# --------------------------------------------------------------------------- messages
class TrackType(enum.Enum):
    """``TrackType`` (4.9.7): a message's consume state for one group."""

    CONSUMED = "CONSUMED"
    CONSUMED_BUT_FILTERED = "CONSUMED_BUT_FILTERED"
    PULL = "PULL"
    NOT_CONSUME_YET = "NOT_CONSUME_YET"
    NOT_ONLINE = "NOT_ONLINE"
    UNKNOWN = "UNKNOWN"


@dataclass(frozen=True)
class MessageTrack:
    """``MessageTrack``: one group that subscribes the message's topic, and its state."""

    consumer_group: str
    track_type: TrackType
    exception_desc: str | None = None

    def to_json_obj(self) -> JsonObj:
        return {
            "consumer_group": self.consumer_group,
            "track_type": self.track_type.value,
            "exception_desc": self.exception_desc,
        }


class ResendMethod(enum.Enum):
    """How :meth:`~rocketq.admin.Admin.resend_message` hands a message to a group again.

    DIRECT: CONSUME_MESSAGE_DIRECTLY through the broker to one live client of the group,
    whose listener runs on it at once (offsets untouched; needs a live concurrent
    consumer); the answer says whether it consumed it (``CR_SUCCESS``...). This is what
    ``mqadmin queryMsgById -g -d`` and the dashboard's "resend" do.
    PRODUCE: a copy is produced into ``%RETRY%<group>`` (new message id, reconsume count
    0, ``RETRY_TOPIC`` = the original topic): only that group receives it, through its
    normal pull path, now or when it comes back online.
    """

    DIRECT = "direct"
    PRODUCE = "produce"


@dataclass(frozen=True)
class ResendResult:
    """The outcome of one resend.

    ``ok``: DIRECT -> the client answered ``CR_SUCCESS``; PRODUCE -> the copy was stored.
    ``detail``: the client's CMResult name or the SendStatus name; ``new_msg_id``: the
    copy's id (PRODUCE).
    """

    msg_id: str
    group: str
    method: ResendMethod
    ok: bool
    detail: str
    client_id: str | None = None
    new_msg_id: str | None = None
    remark: str | None = None

    def to_json_obj(self) -> JsonObj:
        return {
            "msg_id": self.msg_id,
            "group": self.group,
            "method": self.method.value,
            "ok": self.ok,
            "detail": self.detail,
            "client_id": self.client_id,
            "new_msg_id": self.new_msg_id,
            "remark": self.remark,
        }
