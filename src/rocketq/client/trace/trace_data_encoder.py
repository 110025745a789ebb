"""The stored text of trace records: ``TraceDataEncoder``.

Mirrors ``org.apache.rocketmq.client.trace.TraceDataEncoder`` (4.9.7). Each record is its
fields joined by CONTENT_SPLITOR (``\\x01``) and closed by FIELD_SPLITOR (``\\x02``);
a trace message's body is records concatenated. Field order:

* Pub: ``Pub, timeStamp, regionId, groupName, topic, msgId, tags, keys, storeHost,
  bodyLength, costTime, msgType ordinal, offsetMsgId, success``
* SubBefore (one record per message): ``SubBefore, timeStamp, regionId, groupName,
  requestId, msgId, retryTimes, keys``
* SubAfter (one record per message): ``SubAfter, requestId, msgId, costTime, success,
  keys, contextCode, timeStamp, groupName`` — note the ``\\x01`` after contextCode
  before timeStamp, and no ``\\x01`` before the closing ``\\x02`` (LOCAL access channel).

Booleans are ``true``/``false`` and a null string is ``null``, as Java writes them. The
keys a trace message is stored under (``TraceTransferBean.transKey``) are every bean's
msgId plus each of its space-separated keys, so QUERY_MESSAGE by a msgId finds it.

:func:`decode_trace_data` is ``decoderFromTraceDataString`` for the record kinds written
here (it reads the older, shorter Pub and SubAfter forms too).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rocketq.client.trace.trace_context import (
    CONTENT_SPLITOR,
    FIELD_SPLITOR,
    MessageType,
    TraceBean,
    TraceContext,
    TraceType,
)

__all__ = ["TraceTransferBean", "decode_trace_data", "encode_trace_context"]


@dataclass
class TraceTransferBean:
    """``TraceTransferBean``: the encoded records of one context and the keys to store them under."""

    trans_data: str
    trans_key: set[str] = field(default_factory=set)


def _s(value: object) -> str:
    """Java ``StringBuilder.append``: null -> ``null``, booleans lower case."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _record(*fields: object) -> str:
    return CONTENT_SPLITOR.join(_s(f) for f in fields) + FIELD_SPLITOR


def encode_trace_context(ctx: TraceContext) -> TraceTransferBean:
    """``encoderFromContextBean``: the records of ``ctx`` and their keys."""
    t = ctx.trace_type
    if t is TraceType.Pub:
        bean = ctx.trace_beans[0]
        data = _record(
            t.value,
            ctx.time_stamp,
            ctx.region_id,
            ctx.group_name,
            bean.topic,
            bean.msg_id,
            bean.tags,
            bean.keys,
            bean.store_host,
            bean.body_length,
            ctx.cost_time,
            bean.msg_type.value,
            bean.offset_msg_id,
            ctx.is_success,
        )
    elif t is TraceType.SubBefore:
        data = "".join(
            _record(
                t.value,
                ctx.time_stamp,
                ctx.region_id,
                ctx.group_name,
                ctx.request_id,
                bean.msg_id,
                bean.retry_times,
                bean.keys,
            )
            for bean in ctx.trace_beans
        )
    elif t is TraceType.SubAfter:
        data = "".join(
            CONTENT_SPLITOR.join(
                _s(f)
                for f in (t.value, ctx.request_id, bean.msg_id, ctx.cost_time, ctx.is_success, bean.keys)
            )
            + CONTENT_SPLITOR
            + _s(ctx.context_code)
            + CONTENT_SPLITOR
            + _record(ctx.time_stamp, ctx.group_name)
            for bean in ctx.trace_beans
        )
    else:
        raise ValueError(f"trace type {t.value} is not written by rocketq")
    keys: set[str] = set()
    for bean in ctx.trace_beans:
        keys.add(bean.msg_id)
        if bean.keys:
            keys.update(bean.keys.split(" "))
    return TraceTransferBean(data, keys)


def _bool(text: str) -> bool:
    return text.lower() == "true"  # Boolean.parseBoolean


def decode_trace_data(data: str) -> list[TraceContext]:
    """``decoderFromTraceDataString``: the Pub, SubBefore and SubAfter records of ``data``."""
    out: list[TraceContext] = []
    if not data:
        return out
    for record in data.split(FIELD_SPLITOR):
        line = record.split(CONTENT_SPLITOR)
        kind = line[0]
        if kind == TraceType.Pub.value:
            bean = TraceBean(
                topic=line[4],
                msg_id=line[5],
                tags=line[6],
                keys=line[7],
                store_host=line[8],
                body_length=int(line[9]),
                msg_type=MessageType(int(line[11])),
            )
            ctx = TraceContext(
                TraceType.Pub,
                time_stamp=int(line[1]),
                region_id=line[2],
                group_name=line[3],
                cost_time=int(line[10]),
                trace_beans=[bean],
            )
            if len(line) == 13:
                ctx.is_success = _bool(line[12])
            elif len(line) >= 14:
                bean.offset_msg_id = line[12]
                ctx.is_success = _bool(line[13])
                if len(line) >= 15:
                    bean.client_host = line[14]
            out.append(ctx)
        elif kind == TraceType.SubBefore.value:
            bean = TraceBean(msg_id=line[5], retry_times=int(line[6]), keys=line[7])
            out.append(
                TraceContext(
                    TraceType.SubBefore,
                    time_stamp=int(line[1]),
                    region_id=line[2],
                    group_name=line[3],
                    request_id=line[4],
                    trace_beans=[bean],
                )
            )
        elif kind == TraceType.SubAfter.value:
            bean = TraceBean(msg_id=line[2], keys=line[5])
            ctx = TraceContext(
                TraceType.SubAfter,
                request_id=line[1],
                cost_time=int(line[3]),
                is_success=_bool(line[4]),
                trace_beans=[bean],
            )
            if len(line) >= 7:
                ctx.context_code = int(line[6])
            if len(line) >= 9:
                ctx.time_stamp = int(line[7])
                ctx.group_name = line[8]
            out.append(ctx)
    return out
