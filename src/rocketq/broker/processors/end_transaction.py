"""END_TRANSACTION: commit or roll back a half message.

Mirrors ``org.apache.rocketmq.broker.processor.EndTransactionProcessor`` (4.9.7).

* A slave answers SLAVE_NOT_AVAILABLE. ``commitOrRollback`` must be 0 (unknown), 8 (commit)
  or 12 (rollback) (``EndTransactionRequestHeader.checkFields``); 0 changes nothing and
  gets no answer, whether it comes from the send or from a check.
* The half is looked up by ``commitLogOffset`` and must match the request's producer group,
  ``tranStateTableOffset`` (its half-queue offset) and ``commitLogOffset``; otherwise
  SYSTEM_ERROR with Java's remarks.
* Commit stores the half's body into its real topic and queue (``endMessageTransaction``):
  same flag, born time and hosts, sysFlag with TRANSACTION_COMMIT_TYPE, a new queue offset,
  ``preparedTransactionOffset`` = the half's commit-log offset, and the half's property
  string. Java clears REAL_TOPIC, REAL_QID and TRAN_MSG only from the property *map*,
  after the string was fixed, so the stored record keeps them; rocketq stores the same
  bytes. Only once that is stored is the op record written.
* Rollback writes the op record only. END_TRANSACTION is oneway from every client, so the
  answers below are only ever read by tests and tools that send it two-way.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from rocketq.broker.processors import decode_request_header, plain_response
from rocketq.broker.store import MessageExtBrokerInner, PutMessageStatus
from rocketq.protocol.codes import TRANSACTION_TYPE_MASK, MessageSysFlag, ResponseCode
from rocketq.protocol.frame import RemotingCommand
from rocketq.protocol.headers import EndTransactionRequestHeader
from rocketq.protocol.message import MessageConst, MessageExt, encode_properties
from rocketq.remoting.server import Channel

if TYPE_CHECKING:
    from rocketq.broker.broker import BrokerController

__all__ = ["EndTransactionProcessor"]

log = logging.getLogger(__name__)

_NOT = 0  # MessageSysFlag.TRANSACTION_NOT_TYPE
_COMMIT = int(MessageSysFlag.TRANSACTION_COMMIT_TYPE)
_ROLLBACK = int(MessageSysFlag.TRANSACTION_ROLLBACK_TYPE)
_TRANSACTION_BITS = TRANSACTION_TYPE_MASK

#: EndTransactionProcessor.sendFinalMessage: put status -> (code, remark)
_FINAL_PUT: dict[PutMessageStatus, tuple[int, str | None]] = {
    PutMessageStatus.PUT_OK: (ResponseCode.SUCCESS, None),
    PutMessageStatus.FLUSH_DISK_TIMEOUT: (ResponseCode.SUCCESS, None),
    PutMessageStatus.FLUSH_SLAVE_TIMEOUT: (ResponseCode.SUCCESS, None),
    PutMessageStatus.SLAVE_NOT_AVAILABLE: (ResponseCode.SUCCESS, None),
    PutMessageStatus.CREATE_MAPEDFILE_FAILED: (ResponseCode.SYSTEM_ERROR, "Create mapped file failed."),
    PutMessageStatus.SERVICE_NOT_AVAILABLE: (
        ResponseCode.SERVICE_NOT_AVAILABLE,
        "Service not available now.",
    ),
    PutMessageStatus.OS_PAGECACHE_BUSY: (
        ResponseCode.SYSTEM_ERROR,
        "OS page cache busy, please try another machine",
    ),
    PutMessageStatus.UNKNOWN_ERROR: (ResponseCode.SYSTEM_ERROR, "UNKNOWN_ERROR"),
}


class EndTransactionProcessor:
    """Serves END_TRANSACTION (37)."""

    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker

    async def process(self, channel: Channel, request: RemotingCommand) -> RemotingCommand | None:
        broker = self.broker
        header = decode_request_header(request, EndTransactionRequestHeader)
        if isinstance(header, RemotingCommand):
            return header
        if broker.config.broker_role == "SLAVE":
            log.warning("end transaction refused: this broker is a slave")
            return plain_response(request, ResponseCode.SLAVE_NOT_AVAILABLE)
        action = header.commit_or_rollback
        if action not in (_NOT, _COMMIT, _ROLLBACK):
            return plain_response(request, ResponseCode.SYSTEM_ERROR, "commitOrRollback field wrong")
        origin = "check" if header.from_transaction_check else "send"
        if action == _NOT:
            log.warning(
                "producer %s answered unknown for %s (%s): %s",
                channel.remote_addr,
                header.msg_id,
                origin,
                request.remark,
            )
            return None
        if action == _ROLLBACK:
            log.warning("producer %s rolls back %s (%s)", channel.remote_addr, header.msg_id, origin)
        service = broker.transactional_message_service
        half = service.look_half(int(header.commit_log_offset or 0))
        check = _check_prepare_message(request, half, header)
        if check is not None or half is None:
            return check or plain_response(
                request, ResponseCode.SYSTEM_ERROR, "Find prepared transaction message failed"
            )
        if action == _ROLLBACK:
            service.delete_prepare_message(half)
            return plain_response(request)
        inner = _end_message_transaction(half, int(header.commit_log_offset or 0))
        result = broker.store.put_message(inner)
        code, remark = _FINAL_PUT.get(result.status, (ResponseCode.SYSTEM_ERROR, "UNKNOWN_ERROR DEFAULT"))
        if result.status in (PutMessageStatus.MESSAGE_ILLEGAL, PutMessageStatus.PROPERTIES_SIZE_EXCEEDED):
            code = ResponseCode.MESSAGE_ILLEGAL
            remark = (
                "The message is illegal, maybe msg body or properties length not matched. msg body length "
                f"limit {broker.config.message_store.max_message_size}B, msg properties length limit 32KB."
            )
        if code == ResponseCode.SUCCESS:
            if result.append is not None:
                broker.stats.inc_topic_put(inner.topic, 1, len(inner.body))
            service.delete_prepare_message(half)
        return plain_response(request, code, remark)


def _check_prepare_message(
    request: RemotingCommand, half: MessageExt | None, header: EndTransactionRequestHeader
) -> RemotingCommand | None:
    """``checkPrepareMessage``: None when the half matches the request."""
    if half is None:
        return None
    remark = None
    if half.properties.get(MessageConst.PGROUP) != header.producer_group:
        remark = "The producer group wrong"
    elif half.queue_offset != header.tran_state_table_offset:
        remark = "The transaction state table offset wrong"
    elif half.commit_log_offset != header.commit_log_offset:
        remark = "The commit log offset wrong"
    return None if remark is None else plain_response(request, ResponseCode.SYSTEM_ERROR, remark)


def _end_message_transaction(half: MessageExt, commit_log_offset: int) -> MessageExtBrokerInner:
    """``endMessageTransaction`` + the commit settings of ``processRequest``."""
    props = half.properties
    return MessageExtBrokerInner(
        topic=props.get(MessageConst.REAL_TOPIC, ""),
        queue_id=int(props.get(MessageConst.REAL_QID, "0") or 0),
        body=half.body,
        flag=half.flag,
        born_timestamp=half.born_timestamp,
        born_host=half.born_host,
        store_host=half.store_host,
        reconsume_times=half.reconsume_times,
        sys_flag=(half.sys_flag & ~_TRANSACTION_BITS) | _COMMIT,
        prepared_transaction_offset=commit_log_offset,
        properties_string=encode_properties(props, java_order=True),
    )
