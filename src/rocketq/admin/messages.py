"""Message operations of the admin API: find, read, track, resend and send messages.

Mirrors ``MQAdminImpl.viewMessage/queryMessage/queryMessageByUniqKey``,
``DefaultMQAdminExtImpl.messageTrackDetail/consumed/consumeMessageDirectly`` and the mqadmin
commands ``queryMsgById``, ``queryMsgByKey``, ``queryMsgByUniqueKey``, ``queryMsgByOffset``,
``consumeMessage`` and ``sendMessage`` (4.9.7). :class:`~rocketq.admin.Admin` exposes each
function as a method; they take the admin as their first argument.

Invariants:

* Reads never commit an offset: pulls use group ``TOOLS_CONSUMER`` (``MixAll.TOOLS_CONSUMER_GROUP``)
  with sysFlag SUBSCRIPTION only and subscription ``*``.
* A 32-character id is tried as an offsetMsgId only when its store host is a broker the
  name server knows (a UNIQ_KEY of an IPv4 client has the same length); otherwise, with a
  topic, it is looked up as a UNIQ_KEY.
* Resending never changes the original message or any offset; see
  :class:`~rocketq.admin.models.ResendMethod` for the two ways.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from rocketq.admin.models import MessageTrack, ResendMethod, ResendResult, TrackType
from rocketq.client.api_results import PullStatus, SendResult
from rocketq.errors import BrokerError, ClientError, IllegalArgumentError, RocketqError
from rocketq.protocol.bodies import CMResult
from rocketq.protocol.codes import ResponseCode
from rocketq.protocol.message import Message, MessageConst, MessageExt, decode_records
from rocketq.protocol.message_id import decode_offset_msg_id
from rocketq.protocol.message_queue import MessageQueue
from rocketq.protocol.mixall import TOOLS_CONSUMER_GROUP, dlq_topic, retry_topic
from rocketq.remoting.helper import host_addr_to_string, parse_addr

if TYPE_CHECKING:
    from rocketq.admin.admin import Admin

__all__ = [
    "TOOLS_CONSUMER_GROUP",
    "message_track",
    "pull_messages",
    "query_all_by_unique_key",
    "query_by_key",
    "query_by_offset",
    "query_by_unique_key",
    "resend_dlq",
    "resend_message",
    "send_messages",
    "view_message",
]


#: ``Long.MAX_VALUE``: the end of every time range mqadmin queries with
_MAX_TIME = 2**63 - 1
_PULL_BATCH = 32
#: properties that describe one stored copy, not the message: dropped from a re-produced copy
_NOT_COPIED = frozenset(
    {
        MessageConst.UNIQ_KEY,
        MessageConst.DELAY,
        MessageConst.WAIT,
        MessageConst.REAL_TOPIC,
        MessageConst.REAL_QID,
        MessageConst.CLUSTER,
        MessageConst.MSG_REGION,
        MessageConst.TRACE_ON,
        MessageConst.RECONSUME_TIME,
        MessageConst.MAX_RECONSUME_TIMES,
        MessageConst.TRAN_MSG,
        MessageConst.PGROUP,
        MessageConst.MIN_OFFSET,
        MessageConst.MAX_OFFSET,
        MessageConst.CONSUME_START_TIME,
        MessageConst.TRAN_PREPARED_QUEUE_OFFSET,
        MessageConst.TRANSACTION_CHECK_TIMES,
        MessageConst.INNER_MULTI_DISPATCH,
        MessageConst.INNER_MULTI_QUEUE_OFFSET,
    }
)


def _known_broker_hosts(admin: Admin) -> set[tuple[str, int]]:
    info = admin.cluster_info()
    return {parse_addr(addr) for bd in info.broker_addr_table.values() for addr in bd.broker_addrs.values()}


# --------------------------------------------------------------------------- find
def view_message(admin: Admin, msg_id: str, topic: str | None = None) -> MessageExt:
    """``MQAdminImpl.viewMessage``: by offsetMsgId (VIEW_MESSAGE_BY_ID on its store host),
    else by UNIQ_KEY within ``topic``.

    The store host decoded from an id is asked only when it is a broker the name server
    knows: a client message id (UNIQ_KEY) decodes to a nonsense host, which is never dialled.
    Without ``topic`` such an id is refused with an error that says to give the topic.
    """
    msg_id = msg_id.strip()
    try:
        host, offset = decode_offset_msg_id(msg_id)
    except (IllegalArgumentError, ValueError):
        host, offset = None, -1
    if host is not None and host in _known_broker_hosts(admin):
        addr = host_addr_to_string(host)
        try:
            msg = admin.client.view_message(addr, offset, admin.timeout_ms)
            if topic is None or msg.topic == topic or msg.msg_id == msg_id:
                return msg
        except RocketqError:
            if topic is None:
                raise
    if topic is None:
        raise IllegalArgumentError(
            f"{msg_id!r} is not the offset message id of a known broker; a client message id "
            "(the msg id a send returns, UNIQ_KEY) is looked up within its topic: add -t TOPIC"
        )
    return query_by_unique_key(admin, topic, msg_id)


def _query(
    admin: Admin, topic: str, key: str, max_num: int, begin: int, end: int, unique: bool
) -> list[MessageExt]:
    """QUERY_MESSAGE on every broker of the topic (``MQAdminImpl.queryMessage``), merged."""
    seen: dict[str, MessageExt] = {}
    for name, addr in admin.topic_brokers(topic):
        for msg in admin.client.query_message(
            addr, topic, key, max_num, begin, end, admin.timeout_ms, unique_key=unique
        ):
            if msg.topic == topic:
                msg.broker_name = name
                seen.setdefault(msg.offset_msg_id, msg)
    return sorted(seen.values(), key=lambda m: (m.store_timestamp, m.commit_log_offset))


def query_by_key(
    admin: Admin, topic: str, key: str, *, max_num: int = 64, begin_ms: int = 0, end_ms: int = _MAX_TIME
) -> list[MessageExt]:
    """``mqadmin queryMsgByKey`` (maxNum 64, whole time range): [] when nothing matches."""
    return _query(admin, topic, key, max_num, begin_ms, end_ms, False)


def query_by_unique_key(admin: Admin, topic: str, uniq_key: str) -> MessageExt:
    """``queryMessageByUniqKey`` (maxNum 32): the oldest copy; BrokerError 22 when none."""
    found = _query(admin, topic, uniq_key.strip(), 32, 0, _MAX_TIME, True)
    if not found:
        raise BrokerError(
            ResponseCode.QUERY_NOT_FOUND, f"no message with unique key {uniq_key} in topic {topic}"
        )
    return found[0]


def query_all_by_unique_key(admin: Admin, topic: str, uniq_key: str) -> list[MessageExt]:
    """Every stored copy with that UNIQ_KEY in ``topic``, oldest first (at most 32)."""
    return _query(admin, topic, uniq_key.strip(), 32, 0, _MAX_TIME, True)


def _pull(
    admin: Admin, broker_name: str, topic: str, queue_id: int, offset: int, max_nums: int
) -> tuple[PullStatus, int, list[MessageExt]]:
    """One non-committing PULL_MESSAGE through the admin's
    :class:`~rocketq.client.impl.pull_api_wrapper.PullAPIWrapper`: (status, next offset, messages)."""
    mq = MessageQueue(topic, broker_name, queue_id)
    result = admin.reader.pull_read_only(mq, offset, max_nums, admin.timeout_ms)
    msgs = decode_records(result.message_binary) if result.pull_status is PullStatus.FOUND else []
    return result.pull_status, result.next_begin_offset, msgs


def query_by_offset(admin: Admin, topic: str, broker_name: str, queue_id: int, offset: int) -> MessageExt:
    """``mqadmin queryMsgByOffset``: pull one message at ``offset``; BrokerError 22 when none."""
    addr = next((a for n, a in admin.topic_brokers(topic) if n == broker_name), None)
    if addr is None:
        raise ClientError(f"broker [{broker_name}] does not serve topic [{topic}]")
    status, _, msgs = _pull(admin, broker_name, topic, queue_id, offset, 1)
    for msg in msgs:
        if msg.queue_offset == offset:
            msg.broker_name = broker_name
            return msg
    raise BrokerError(
        ResponseCode.QUERY_NOT_FOUND,
        f"no message at offset {offset} of {topic} {broker_name} queue {queue_id} ({status.name})",
    )


def pull_messages(
    admin: Admin,
    topic: str,
    *,
    broker_name: str | None = None,
    queue_id: int | None = None,
    offset: int | None = None,
    count: int = 32,
    begin_ms: int | None = None,
    end_ms: int | None = None,
) -> list[MessageExt]:
    """``mqadmin consumeMessage``: up to ``count`` messages, queue by queue, never committing.

    Each selected queue is read from ``offset`` (else the offset at ``begin_ms``, else its
    min offset) to its end, or to the first message stored after ``end_ms``.
    """
    if count <= 0:
        raise IllegalArgumentError(f"count must be > 0, got {count}")
    route = admin.topic_route(topic)
    readable = {qd.broker_name: qd.read_queue_nums for qd in route.queue_datas}
    out: list[MessageExt] = []
    for name, addr in admin.topic_brokers(topic):
        if broker_name is not None and name != broker_name:
            continue
        for qid in range(readable.get(name, 0)):
            if queue_id is not None and qid != queue_id:
                continue
            if offset is not None:
                pos = offset
            elif begin_ms is not None:
                pos = admin.client.search_offset(addr, topic, qid, begin_ms, admin.timeout_ms, bname=name)
            else:
                pos = admin.client.get_min_offset(addr, topic, qid, admin.timeout_ms, bname=name)
            while len(out) < count:
                status, next_offset, msgs = _pull(
                    admin, name, topic, qid, pos, min(_PULL_BATCH, count - len(out))
                )
                if status is PullStatus.OFFSET_ILLEGAL and next_offset != pos:
                    pos = next_offset
                    continue
                if status is not PullStatus.FOUND or next_offset <= pos:
                    break
                stop = False
                for msg in msgs:
                    if end_ms is not None and msg.store_timestamp > end_ms:
                        stop = True
                        break
                    msg.broker_name = name
                    out.append(msg)
                pos = next_offset
                if stop:
                    break
            if len(out) >= count:
                return out
    return out


# --------------------------------------------------------------------------- track
def _consumed(admin: Admin, msg: MessageExt, group: str) -> bool:
    """``DefaultMQAdminExtImpl.consumed``: the group's offset of the message's queue is past it."""
    stats = admin.consume_stats(group, None)
    info = admin.cluster_info()
    for mq, w in stats.offset_table.items():
        if mq.topic != msg.topic or mq.queue_id != msg.queue_id:
            continue
        bd = info.broker_addr_table.get(mq.broker_name)
        master = bd.master_addr() if bd is not None else None
        if (
            master is not None
            and parse_addr(master) == msg.store_host
            and w.consumer_offset > msg.queue_offset
        ):
            return True
    return False


def _failed_track(group: str, exc: RocketqError) -> MessageTrack:
    """The track of a group whose state could not be read (``messageTrackDetail``'s catch blocks)."""
    if isinstance(exc, BrokerError):
        track = TrackType.NOT_ONLINE if exc.code == ResponseCode.CONSUMER_NOT_ONLINE else TrackType.UNKNOWN
        return MessageTrack(group, track, f"CODE:{exc.code} DESC:{exc.remark}")
    return MessageTrack(group, TrackType.UNKNOWN, str(exc))


def message_track(admin: Admin, msg: MessageExt) -> list[MessageTrack]:
    """``messageTrackDetail``: for each group consuming ``msg.topic``, its :class:`TrackType`."""
    out: list[MessageTrack] = []
    for group in admin.topic_consumed_by(msg.topic):
        try:
            conns = admin.consumer_connections(group)
        except RocketqError as exc:
            out.append(_failed_track(group, exc))
            continue
        if conns.consume_type == "CONSUME_ACTIVELY":
            out.append(MessageTrack(group, TrackType.PULL))
            continue
        if conns.consume_type != "CONSUME_PASSIVELY":
            out.append(MessageTrack(group, TrackType.UNKNOWN))
            continue
        try:
            consumed = _consumed(admin, msg, group)
        except RocketqError as exc:
            out.append(_failed_track(group, exc))
            continue
        if not consumed:
            out.append(MessageTrack(group, TrackType.NOT_CONSUME_YET))
            continue
        track = TrackType.CONSUMED
        sub = conns.subscriptions.get(msg.topic)
        if sub is not None:
            # consumed but not delivered: the subscription's tags do not include the message's
            tags = {t.strip() for t in sub.split("||") if t.strip()}
            if tags and "*" not in tags and msg.tags not in tags:
                track = TrackType.CONSUMED_BUT_FILTERED
        out.append(MessageTrack(group, track))
    return out


# --------------------------------------------------------------------------- resend
def _resend_direct(admin: Admin, msg: MessageExt, group: str, client_id: str | None) -> ResendResult:
    clients = (
        [client_id] if client_id else [c.client_id for c in admin.consumer_connections(group).connections]
    )
    addr = host_addr_to_string(msg.store_host)
    last: ResendResult | None = None
    error: RocketqError | None = None
    for cid in clients:
        try:
            # DefaultMQAdminExtImpl.consumeMessageDirectly: timeoutMillis * 3, to the store host
            answer = admin.api.consume_message_directly(
                addr, group, cid, msg.offset_msg_id, admin.timeout_ms * 3
            )
        except RocketqError as exc:
            error = exc
            continue
        result = answer.consume_result.name if answer.consume_result is not None else "UNKNOWN"
        last = ResendResult(
            msg_id=msg.msg_id,
            group=group,
            method=ResendMethod.DIRECT,
            ok=answer.consume_result is CMResult.CR_SUCCESS,
            detail=result,
            client_id=cid,
            remark=answer.remark,
        )
        if last.ok:
            return last
    if last is not None:
        return last
    if error is not None:
        raise error
    raise BrokerError(ResponseCode.CONSUMER_NOT_ONLINE, f"the consumer group[{group}] not online")


def _copy_for_group(msg: MessageExt, group: str) -> Message:
    """The message re-addressed to ``%RETRY%<group>``, remembering its original topic."""
    props = {k: v for k, v in msg.properties.items() if k not in _NOT_COPIED}
    origin = msg.properties.get(MessageConst.RETRY_TOPIC) or msg.topic
    props[MessageConst.RETRY_TOPIC] = origin
    if not props.get(MessageConst.ORIGIN_MESSAGE_ID):
        props[MessageConst.ORIGIN_MESSAGE_ID] = msg.offset_msg_id
    return Message(retry_topic(group), msg.body, flag=msg.flag, properties=props)


def _resend_produce(admin: Admin, msg: MessageExt, group: str) -> ResendResult:
    result = admin.producer().send(_copy_for_group(msg, group))
    return ResendResult(
        msg_id=msg.msg_id,
        group=group,
        method=ResendMethod.PRODUCE,
        ok=True,
        detail=result.status.name,
        new_msg_id=result.msg_id,
    )


def _resend(
    admin: Admin, msg: MessageExt, group: str, method: ResendMethod, client_id: str | None
) -> ResendResult:
    if method is ResendMethod.DIRECT:
        return _resend_direct(admin, msg, group, client_id)
    return _resend_produce(admin, msg, group)


def resend_message(
    admin: Admin,
    msg_id: str,
    group: str,
    *,
    topic: str | None = None,
    method: ResendMethod = ResendMethod.DIRECT,
    client_id: str | None = None,
) -> ResendResult:
    """Find the message (offsetMsgId, or UNIQ_KEY within ``topic``) and hand it to ``group``."""
    return _resend(admin, view_message(admin, msg_id, topic), group, method, client_id)


def resend_dlq(
    admin: Admin,
    group: str,
    *,
    method: ResendMethod = ResendMethod.PRODUCE,
    msg_ids: Sequence[str] | None = None,
    max_messages: int = 10_000,
    progress: Callable[[int, int], None] | None = None,
) -> list[ResendResult]:
    """Resend the dead letters of ``group`` (``%DLQ%<group>``; all, or those in ``msg_ids``).

    A message that fails to resend yields a result with ``ok`` False and the error as
    ``detail``; the others go on.
    """
    dlq = dlq_topic(group)
    try:
        msgs = pull_messages(admin, dlq, count=max_messages)
    except BrokerError as exc:
        if exc.code == ResponseCode.TOPIC_NOT_EXIST:
            raise ClientError(f"group [{group}] has no dead-letter queue ({dlq} does not exist)") from exc
        raise
    if msg_ids is not None:
        wanted = {m.strip() for m in msg_ids}
        msgs = [m for m in msgs if m.msg_id in wanted or m.offset_msg_id in wanted]
    results: list[ResendResult] = []
    for i, msg in enumerate(msgs):
        try:
            results.append(_resend(admin, msg, group, method, None))
        except RocketqError as exc:
            results.append(ResendResult(msg.msg_id, group, method, False, f"{type(exc).__name__}: {exc}"))
        if progress is not None:
            progress(i + 1, len(msgs))
    return results


# --------------------------------------------------------------------------- send
def send_messages(
    admin: Admin, messages: Sequence[Message], *, progress: Callable[[int, int], None] | None = None
) -> list[SendResult]:
    """Send each message synchronously with the admin's producer, in order."""
    producer = admin.producer()
    results: list[SendResult] = []
    for i, msg in enumerate(messages):
        results.append(producer.send(msg))
        if progress is not None:
            progress(i + 1, len(messages))
    return results
