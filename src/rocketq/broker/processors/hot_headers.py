"""The send path's headers without the generic dict <-> dataclass machinery.

``SEND_MESSAGE_V2`` is the request a broker serves most, one per message sent. The generic
codec of :mod:`rocketq.protocol.headers_base` walks a per-class plan field by field and
then merges and re-orders the answer's map; here the same results come from straight-line
code:

* :func:`decode_send_header_v2` reads a ``SendMessageRequestHeaderV2`` from ``extFields``
  when every present value is in its plain form (required fields there, integers as short
  runs of ASCII digits, booleans ``true``/``false``) and returns None otherwise, so the
  caller falls back to ``from_ext_fields`` for anything unusual (a missing field is then
  reported by the generic check, a signed or odd number parsed by Java's rules).
* :func:`send_response_fields` builds the ``extFields`` of a stored message's answer
  (``MSG_REGION`` and ``TRACE_ON`` from ``AbstractSendMessageProcessor``'s preSend, then
  ``SendMessageResponseHeader``) in the ``HashMap`` order fastjson writes them, worked out
  once from the header class.

Invariant (tested against the generic codec): whenever these return a value, it equals what
``SendMessageRequestHeaderV2.from_ext_fields`` / ``SendMessageResponseHeader.to_ext_fields``
give, key order included. Wire names come from the header classes, never spelled here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from rocketq.protocol.headers import SendMessageRequestHeaderV2, SendMessageResponseHeader
from rocketq.protocol.java import hashmap_order
from rocketq.protocol.message import MessageConst

__all__ = ["decode_send_header_v2", "send_response_fields"]

_V2 = {wf.attr: wf.wire for wf in SendMessageRequestHeaderV2.wire_fields()}
_GROUP: Final = _V2["producer_group"]
_TOPIC: Final = _V2["topic"]
_DEFAULT_TOPIC: Final = _V2["default_topic"]
_DEFAULT_QUEUE_NUMS: Final = _V2["default_topic_queue_nums"]
_QUEUE_ID: Final = _V2["queue_id"]
_SYS_FLAG: Final = _V2["sys_flag"]
_BORN_TIMESTAMP: Final = _V2["born_timestamp"]
_FLAG: Final = _V2["flag"]
_PROPERTIES: Final = _V2["properties"]
_RECONSUME_TIMES: Final = _V2["reconsume_times"]
_UNIT_MODE: Final = _V2["unit_mode"]
_MAX_RECONSUME_TIMES: Final = _V2["max_reconsume_times"]
_BATCH: Final = _V2["batch"]
_BNAME: Final = _V2["bname"]
_BOOLEANS: Final = frozenset(("true", "false"))


def _plain(text: str, digits: int) -> bool:
    """Fewer than ``digits`` ASCII digits: an int that fits the Java type (9 for int, 18 for long)."""
    return 0 < len(text) < digits and text.isdigit() and text.isascii()


def decode_send_header_v2(ext: Mapping[str, str] | None) -> SendMessageRequestHeaderV2 | None:
    """The V2 send header of ``ext``, or None when a value needs the generic decoder."""
    if not ext:
        return None
    get = ext.get
    group = get(_GROUP)
    topic = get(_TOPIC)
    default_topic = get(_DEFAULT_TOPIC)
    queue_nums = get(_DEFAULT_QUEUE_NUMS)
    queue_id = get(_QUEUE_ID)
    sys_flag = get(_SYS_FLAG)
    born = get(_BORN_TIMESTAMP)
    flag = get(_FLAG)
    if (
        group is None
        or topic is None
        or default_topic is None
        or queue_nums is None
        or queue_id is None
        or sys_flag is None
        or born is None
        or flag is None
    ):
        return None
    reconsume = get(_RECONSUME_TIMES)
    max_reconsume = get(_MAX_RECONSUME_TIMES)
    unit_mode = get(_UNIT_MODE)
    batch = get(_BATCH)
    if not (
        _plain(queue_nums, 10)
        and _plain(queue_id, 10)
        and _plain(sys_flag, 10)
        and _plain(flag, 10)
        and _plain(born, 19)
        and (reconsume is None or _plain(reconsume, 10))
        and (max_reconsume is None or _plain(max_reconsume, 10))
        and (unit_mode is None or unit_mode in _BOOLEANS)
        and (batch is None or batch in _BOOLEANS)
    ):
        return None
    return SendMessageRequestHeaderV2(
        producer_group=group,
        topic=topic,
        default_topic=default_topic,
        default_topic_queue_nums=int(queue_nums),
        queue_id=int(queue_id),
        sys_flag=int(sys_flag),
        born_timestamp=int(born),
        flag=int(flag),
        properties=get(_PROPERTIES),
        reconsume_times=None if reconsume is None else int(reconsume),
        unit_mode=unit_mode == "true",
        max_reconsume_times=None if max_reconsume is None else int(max_reconsume),
        batch=batch == "true",
        bname=get(_BNAME),
    )


_RESPONSE = {wf.attr: wf.wire for wf in SendMessageResponseHeader.wire_fields()}
_MSG_ID: Final = _RESPONSE["msg_id"]
_RESPONSE_QUEUE_ID: Final = _RESPONSE["queue_id"]
_QUEUE_OFFSET: Final = _RESPONSE["queue_offset"]
#: preSend's two keys first, then the header's in makeCustomHeaderToNet order (transactionId
#: is null on the send path), as one HashMap iterates them
_RESPONSE_ORDER: Final = tuple(
    hashmap_order(
        [
            MessageConst.MSG_REGION,
            MessageConst.TRACE_ON,
            *(
                w
                for w in SendMessageResponseHeader.java_insertion_order()
                if w in (_MSG_ID, _RESPONSE_QUEUE_ID, _QUEUE_OFFSET)
            ),
        ]
    )
)


def send_response_fields(
    region: str, trace_on: str, msg_id: str, queue_id: int, queue_offset: int
) -> dict[str, str]:
    """The JSON-serialized answer's ``extFields`` for a stored message (or batch)."""
    values = {
        MessageConst.MSG_REGION: region,
        MessageConst.TRACE_ON: trace_on,
        _MSG_ID: msg_id,
        _RESPONSE_QUEUE_ID: str(queue_id),
        _QUEUE_OFFSET: str(queue_offset),
    }
    return {key: values[key] for key in _RESPONSE_ORDER}
