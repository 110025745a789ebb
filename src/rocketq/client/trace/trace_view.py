"""One row of a message's trace timeline: ``TraceView``.

Mirrors ``org.apache.rocketmq.client.trace.TraceView`` (4.9.7):
``decodeFromTraceTransData(key, messageExt)`` keeps the records of one trace message
whose msgId is ``key``; the client host is the trace message's born host (the machine
whose dispatcher sent it), the status ``success``/``failed``.
"""

from __future__ import annotations

from dataclasses import dataclass

from rocketq.client.trace.trace_data_encoder import decode_trace_data
from rocketq.protocol.message import MessageExt

__all__ = ["TraceView", "decode_trace_views"]


@dataclass(frozen=True)
class TraceView:
    """``TraceView``: one trace record of one message."""

    msg_type: str  # the TraceType name: Pub, SubBefore, SubAfter
    msg_id: str
    tags: str | None
    keys: str | None
    topic: str
    offset_msg_id: str
    group_name: str
    time_stamp: int
    cost_time: int
    status: str
    store_host: str | None
    client_host: str

    def to_json_obj(self) -> dict[str, object]:
        return {
            "msgType": self.msg_type,
            "msgId": self.msg_id,
            "tags": self.tags,
            "keys": self.keys,
            "topic": self.topic,
            "offSetMsgId": self.offset_msg_id,
            "groupName": self.group_name,
            "timeStamp": self.time_stamp,
            "costTime": self.cost_time,
            "status": self.status,
            "storeHost": self.store_host,
            "clientHost": self.client_host,
        }


def decode_trace_views(key: str, message: MessageExt) -> list[TraceView]:
    """``TraceView.decodeFromTraceTransData``: the records about msgId ``key``."""
    body = message.body.decode("utf-8", "replace") if message.body else ""
    views: list[TraceView] = []
    for ctx in decode_trace_data(body):
        bean = ctx.trace_beans[0]
        if bean.msg_id != key:
            continue
        views.append(
            TraceView(
                msg_type=ctx.trace_type.value,
                msg_id=bean.msg_id,
                tags=bean.tags,
                keys=bean.keys,
                topic=bean.topic,
                offset_msg_id=bean.offset_msg_id,
                group_name=ctx.group_name,
                time_stamp=ctx.time_stamp,
                cost_time=ctx.cost_time,
                status="success" if ctx.is_success else "failed",
                store_host=bean.store_host,
                client_host=message.born_host[0],
            )
        )
    return views
