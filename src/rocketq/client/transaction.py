"""Transactional message types and the client's handling of a broker's check.

Mirrors ``org.apache.rocketmq.client.producer.LocalTransactionState``,
``TransactionListener``, ``TransactionSendResult`` and ``ClientRemotingProcessor
.checkTransactionState`` (4.9.7). The producer itself is
:class:`rocketq.client.producer_transaction.TransactionProducer`; this module does not
import it, so the client instance can dispatch checks without an import cycle.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from rocketq.client.api_results import SendResult, SendStatus
from rocketq.errors import RocketqError
from rocketq.protocol.codes import MessageSysFlag
from rocketq.protocol.frame import RemotingCommand
from rocketq.protocol.headers import CheckTransactionStateRequestHeader, EndTransactionRequestHeader
from rocketq.protocol.message import Message, MessageConst, MessageExt, decode_record
from rocketq.protocol.message_id import decode_offset_msg_id
from rocketq.protocol.message_queue import MessageQueue

if TYPE_CHECKING:
    from rocketq.client.instance import MQClientInstance

__all__ = [
    "END_TRANSACTION_CODES",
    "LocalTransactionState",
    "TransactionListener",
    "TransactionSendResult",
    "check_answer",
    "check_transaction_state",
    "decode_check_request",
    "end_transaction_request",
    "half_stored",
    "prepare_half_message",
    "state_or_unknown",
    "transaction_send_result",
]

log = logging.getLogger(__name__)


class LocalTransactionState(enum.Enum):
    """``LocalTransactionState``: the outcome of a local transaction (Java member names)."""

    COMMIT_MESSAGE = "COMMIT_MESSAGE"
    ROLLBACK_MESSAGE = "ROLLBACK_MESSAGE"
    UNKNOW = "UNKNOW"


#: LocalTransactionState -> EndTransactionRequestHeader.commitOrRollback (MessageSysFlag)
END_TRANSACTION_CODES = {
    LocalTransactionState.COMMIT_MESSAGE: int(MessageSysFlag.TRANSACTION_COMMIT_TYPE),
    LocalTransactionState.ROLLBACK_MESSAGE: int(MessageSysFlag.TRANSACTION_ROLLBACK_TYPE),
    LocalTransactionState.UNKNOW: 0,  # TRANSACTION_NOT_TYPE
}


@runtime_checkable
class TransactionListener(Protocol):
    """``TransactionListener``: runs and checks the local transaction of a half message."""

    def execute_local_transaction(self, msg: Message, arg: object) -> LocalTransactionState:
        """Run the local transaction after the half message was stored."""
        ...

    def check_local_transaction(self, msg: MessageExt) -> LocalTransactionState:
        """Answer the broker's check for a half message still unresolved."""
        ...


class TransactionSendResult(SendResult):
    """``TransactionSendResult``: the half message's send result and the local outcome
    (a plain slotted class like :class:`SendResult`: same fields plus the outcome)."""

    __slots__ = ("_local_transaction_state",)
    __match_args__ = (*SendResult.__match_args__, "local_transaction_state")

    def __init__(
        self,
        status: SendStatus,
        msg_id: str,
        offset_msg_id: str,
        message_queue: MessageQueue,
        queue_offset: int,
        transaction_id: str | None = None,
        region_id: str | None = None,
        trace_on: bool = True,
        local_transaction_state: LocalTransactionState = LocalTransactionState.UNKNOW,
    ) -> None:
        super().__init__(
            status, msg_id, offset_msg_id, message_queue, queue_offset, transaction_id, region_id, trace_on
        )
        self._local_transaction_state = local_transaction_state

    @property
    def local_transaction_state(self) -> LocalTransactionState:
        return self._local_transaction_state

    def _astuple(self) -> tuple[object, ...]:
        return (*super()._astuple(), self._local_transaction_state)


def state_or_unknown(state: object) -> LocalTransactionState:
    """A listener's answer, with anything but a LocalTransactionState (None) as UNKNOW."""
    return state if isinstance(state, LocalTransactionState) else LocalTransactionState.UNKNOW


# ---------------------------------------------------------------------- pure steps
# The transaction rules both producers (TransactionProducer and the asyncio
# AsyncTransactionProducer) follow; only the calls to the listener and the I/O differ.


def prepare_half_message(msg: Message, producer_group: str) -> None:
    """``sendMessageInTransaction``'s stamping of a checked message: the delay level is
    dropped ("ignore DelayTimeLevel parameter"), ``TRAN_MSG=true`` and ``PGROUP`` are set."""
    if msg.delay_time_level != 0:
        msg.properties.pop(MessageConst.DELAY, None)
    msg.properties[MessageConst.TRAN_MSG] = "true"
    msg.properties[MessageConst.PGROUP] = producer_group


def half_stored(msg: Message, result: SendResult) -> bool:
    """Whether the local transaction runs after the half's send: only on SEND_OK (the
    message then carries the broker's transaction id); a flush/slave warning rolls back."""
    if result.status is not SendStatus.SEND_OK:
        return False
    if result.transaction_id is not None:
        msg.properties[MessageConst.PROPERTY_TRANSACTION_ID] = result.transaction_id
    return True


def end_transaction_request(
    producer_group: str,
    result: SendResult,
    state: LocalTransactionState,
    local_exc: BaseException | None,
) -> tuple[EndTransactionRequestHeader, str | None]:
    """``endTransaction``'s END_TRANSACTION header and remark for the half ``result``."""
    _, commit_log_offset = decode_offset_msg_id(result.offset_msg_id or result.msg_id)
    header = EndTransactionRequestHeader(
        producer_group=producer_group,
        tran_state_table_offset=result.queue_offset,
        commit_log_offset=commit_log_offset,
        commit_or_rollback=END_TRANSACTION_CODES[state],
        msg_id=result.msg_id,
        transaction_id=result.transaction_id,
        bname=result.message_queue.broker_name,
    )
    remark = f"executeLocalTransactionBranch exception: {local_exc!r}" if local_exc is not None else None
    return header, remark


def transaction_send_result(result: SendResult, state: LocalTransactionState) -> TransactionSendResult:
    """The half's send result with the local transaction's outcome."""
    return TransactionSendResult(
        status=result.status,
        msg_id=result.msg_id,
        offset_msg_id=result.offset_msg_id,
        message_queue=result.message_queue,
        queue_offset=result.queue_offset,
        transaction_id=result.transaction_id,
        region_id=result.region_id,
        trace_on=result.trace_on,
        local_transaction_state=state,
    )


def check_answer(
    producer_group: str,
    msg: MessageExt,
    header: CheckTransactionStateRequestHeader,
    state: LocalTransactionState,
    exc: BaseException | None,
) -> tuple[EndTransactionRequestHeader, str | None]:
    """``checkTransactionState``'s answer: END_TRANSACTION ``fromTransactionCheck=true`` for
    the checked half, named by its UNIQ_KEY (its msgId when it has none), and the remark."""
    uniq = msg.properties.get(MessageConst.UNIQ_KEY) or msg.msg_id
    end = EndTransactionRequestHeader(
        producer_group=producer_group,
        tran_state_table_offset=header.tran_state_table_offset,
        commit_log_offset=header.commit_log_offset,
        commit_or_rollback=END_TRANSACTION_CODES[state],
        from_transaction_check=True,
        msg_id=uniq,
        transaction_id=header.transaction_id,
        bname=header.bname,
    )
    if state is not LocalTransactionState.COMMIT_MESSAGE:
        log.warning("when broker check, client answers %s: %s", state.name, end)
    remark = f"checkLocalTransactionState Exception: {exc!r}" if exc is not None else None
    return end, remark


def decode_check_request(
    request: RemotingCommand,
) -> tuple[str, MessageExt, CheckTransactionStateRequestHeader] | None:
    """A CHECK_TRANSACTION_STATE request's producer group, half message and header; None
    (logged) when the body does not decode or names no group."""
    header = CheckTransactionStateRequestHeader.from_ext_fields(request.ext_fields)
    try:
        msg = decode_record(request.body)
    except RocketqError:
        log.warning("checkTransactionState, decode message failed", exc_info=True)
        return None
    group = msg.properties.get(MessageConst.PGROUP)
    if group is None:
        log.warning("checkTransactionState, pick producer group failed")
        return None
    return group, msg, header


def check_transaction_state(instance: MQClientInstance, request: RemotingCommand, addr: str) -> None:
    """``ClientRemotingProcessor.checkTransactionState``: hand a check to the half's producer.

    The body is the half message (real topic and queue); its ``PGROUP`` selects the
    producer of this instance. Nothing is answered (the request is oneway).
    """
    decoded = decode_check_request(request)
    if decoded is None:
        return
    group, msg, header = decoded
    producer = instance.select_producer(group)
    handler: Callable[[str, MessageExt, CheckTransactionStateRequestHeader], None] | None = getattr(
        producer, "check_transaction_state", None
    )
    if handler is None:
        log.debug("checkTransactionState, pick producer by group[%s] failed", group)
        return
    handler(addr, msg, header)
