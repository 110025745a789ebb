"""Message trace records: ``TraceType``, ``TraceBean``, ``TraceContext``, ``TraceConstants``.

Mirrors ``org.apache.rocketmq.client.trace`` (4.9.7). A context is one event (a send, or
the start / end of one listener call over a batch); its beans are the messages involved.

Defaults follow Java's field initialisers: strings ``""``, the host fields this machine's
IPv4 address (``UtilAll.getIP``), ``time_stamp`` the creation time, ``request_id`` a fresh
unique id (``MessageClientIDSetter.createUniqID``). Java fields a hook may leave null
(tags, keys, region) are ``None`` here and are written as the text ``null``, as a Java
``StringBuilder`` does.
"""

from __future__ import annotations

import enum
import socket
import time
from dataclasses import dataclass, field
from typing import Final

from rocketq.protocol.message_id import local_ip_bytes, new_unique_id

__all__ = [
    "CONTENT_SPLITOR",
    "FIELD_SPLITOR",
    "TRACE_GROUP_NAME_PREFIX",
    "TRACE_INSTANCE_NAME",
    "MessageType",
    "TraceBean",
    "TraceContext",
    "TraceType",
]

#: ``TraceConstants.CONTENT_SPLITOR``: between the fields of one record.
CONTENT_SPLITOR: Final = "\x01"
#: ``TraceConstants.FIELD_SPLITOR``: after each record.
FIELD_SPLITOR: Final = "\x02"
#: ``TraceConstants.GROUP_NAME_PREFIX`` of the trace producer's group.
TRACE_GROUP_NAME_PREFIX: Final = "_INNER_TRACE_PRODUCER"
#: ``TraceConstants.TRACE_INSTANCE_NAME`` of the trace producer's client instance.
TRACE_INSTANCE_NAME: Final = "PID_CLIENT_INNER_TRACE_PRODUCER"


def _local_address() -> str:
    return socket.inet_ntoa(local_ip_bytes())


_LOCAL_ADDRESS: Final = _local_address()


class TraceType(enum.Enum):
    """``TraceType``: the record kinds (their names are written in the records)."""

    Pub = "Pub"
    SubBefore = "SubBefore"
    SubAfter = "SubAfter"
    EndTransaction = "EndTransaction"


class MessageType(enum.Enum):
    """``org.apache.rocketmq.common.message.MessageType``; the ordinal is written."""

    Normal_Msg = 0
    Trans_Msg_Half = 1
    Trans_msg_Commit = 2
    Delay_Msg = 3


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass
class TraceBean:
    """``TraceBean``: one message of a trace event."""

    topic: str = ""
    msg_id: str = ""
    offset_msg_id: str = ""
    tags: str | None = ""
    keys: str | None = ""
    store_host: str | None = _LOCAL_ADDRESS
    client_host: str = _LOCAL_ADDRESS
    store_time: int = 0
    retry_times: int = 0
    body_length: int = 0
    msg_type: MessageType = MessageType.Normal_Msg


@dataclass
class TraceContext:
    """``TraceContext``: one trace event and its messages."""

    trace_type: TraceType
    time_stamp: int = field(default_factory=_now_ms)
    region_id: str | None = ""
    group_name: str = ""
    cost_time: int = 0
    is_success: bool = True
    request_id: str = field(default_factory=new_unique_id)
    context_code: int = 0
    trace_beans: list[TraceBean] = field(default_factory=list)
