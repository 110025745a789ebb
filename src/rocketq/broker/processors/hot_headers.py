"""The data path's headers without the generic dict <-> dataclass machinery.

``SEND_MESSAGE_V2`` is the request a broker serves most, one per message sent, and
``PULL_MESSAGE`` the one every consumer repeats per batch. The generic
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
* :func:`decode_pull_header` and :func:`pull_response_fields` do the same for
  ``PullMessageRequestHeader`` and the JSON ``PullMessageResponseHeader``.

Invariant (tested against the generic codec): whenever these return a value, it equals what
``from_ext_fields`` / ``to_ext_fields`` of the header class give, key order included. Wire names come from the header classes, never spelled here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from rocketq.protocol.headers import (
    PullMessageRequestHeader,
    PullMessageResponseHeader,
    SendMessageRequestHeaderV2,
    SendMessageResponseHeader,
)
from rocketq.protocol.java import hashmap_order
from rocketq.protocol.message import MessageConst

__all__ = ["decode_pull_header", "decode_send_header_v2", "pull_response_fields", "send_response_fields"]

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


_PULL = {wf.attr: wf.wire for wf in PullMessageRequestHeader.wire_fields()}
_P_GROUP: Final = _PULL["consumer_group"]
_P_TOPIC: Final = _PULL["topic"]
_P_QUEUE_ID: Final = _PULL["queue_id"]
_P_QUEUE_OFFSET: Final = _PULL["queue_offset"]
_P_MAX_MSG_NUMS: Final = _PULL["max_msg_nums"]
_P_SYS_FLAG: Final = _PULL["sys_flag"]
_P_COMMIT_OFFSET: Final = _PULL["commit_offset"]
_P_SUSPEND: Final = _PULL["suspend_timeout_millis"]
_P_SUBSCRIPTION: Final = _PULL["subscription"]
_P_SUB_VERSION: Final = _PULL["sub_version"]
_P_EXPRESSION_TYPE: Final = _PULL["expression_type"]
_P_BNAME: Final = _PULL["bname"]


def decode_pull_header(ext: Mapping[str, str] | None) -> PullMessageRequestHeader | None:
    """The pull header of ``ext``, or None when a value needs the generic decoder."""
    if not ext:
        return None
    get = ext.get
    group = get(_P_GROUP)
    topic = get(_P_TOPIC)
    queue_id = get(_P_QUEUE_ID)
    queue_offset = get(_P_QUEUE_OFFSET)
    max_msg_nums = get(_P_MAX_MSG_NUMS)
    sys_flag = get(_P_SYS_FLAG)
    commit_offset = get(_P_COMMIT_OFFSET)
    suspend = get(_P_SUSPEND)
    sub_version = get(_P_SUB_VERSION)
    if (
        group is None
        or topic is None
        or queue_id is None
        or queue_offset is None
        or max_msg_nums is None
        or sys_flag is None
        or commit_offset is None
        or suspend is None
        or sub_version is None
        or not (
            _plain(queue_id, 10)
            and _plain(queue_offset, 19)
            and _plain(max_msg_nums, 10)
            and _plain(sys_flag, 10)
            and _plain(commit_offset, 19)
            and _plain(suspend, 19)
            and _plain(sub_version, 19)
        )
    ):
        return None
    return PullMessageRequestHeader(
        consumer_group=group,
        topic=topic,
        queue_id=int(queue_id),
        queue_offset=int(queue_offset),
        max_msg_nums=int(max_msg_nums),
        sys_flag=int(sys_flag),
        commit_offset=int(commit_offset),
        suspend_timeout_millis=int(suspend),
        subscription=get(_P_SUBSCRIPTION),
        sub_version=int(sub_version),
        expression_type=get(_P_EXPRESSION_TYPE),
        bname=get(_P_BNAME),
    )


_PULL_RESPONSE = {wf.attr: wf.wire for wf in PullMessageResponseHeader.wire_fields()}
_P_SUGGEST: Final = _PULL_RESPONSE["suggest_which_broker_id"]
_P_NEXT: Final = _PULL_RESPONSE["next_begin_offset"]
_P_MIN: Final = _PULL_RESPONSE["min_offset"]
_P_MAX: Final = _PULL_RESPONSE["max_offset"]
#: the JSON map's key order, taken from the generic encoder (every field is always set)
_PULL_RESPONSE_ORDER: Final = tuple(
    PullMessageResponseHeader(
        suggest_which_broker_id=0, next_begin_offset=0, min_offset=0, max_offset=0
    ).to_ext_fields()
)


def pull_response_fields(
    suggest_which_broker_id: int, next_begin_offset: int, min_offset: int, max_offset: int
) -> dict[str, str]:
    """The JSON-serialized ``PullMessageResponseHeader`` map."""
    values = {
        _P_SUGGEST: str(suggest_which_broker_id),
        _P_NEXT: str(next_begin_offset),
        _P_MIN: str(min_offset),
        _P_MAX: str(max_offset),
    }
    return {key: values[key] for key in _PULL_RESPONSE_ORDER}
