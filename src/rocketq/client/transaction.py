"""Transactional message types and the client's handling of a broker's check.

Mirrors ``org.apache.rocketmq.client.producer.LocalTransactionState``,
``TransactionListener``, ``TransactionSendResult`` and ``ClientRemotingProcessor
.checkTransactionState`` (4.9.7). The producer itself is
:class:`rocketq.client.producer_transaction.TransactionProducer`; this module does not
import it, so the client instance can dispatch checks without an import cycle.
"""

from __future__ import annotations

import dataclasses
import enum
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from rocketq.client.api_results import SendResult
from rocketq.errors import RocketqError
from rocketq.protocol.codes import MessageSysFlag
from rocketq.protocol.frame import RemotingCommand
from rocketq.protocol.headers import CheckTransactionStateRequestHeader
from rocketq.protocol.message import Message, MessageConst, MessageExt, decode_record

if TYPE_CHECKING:
    from rocketq.client.instance import MQClientInstance

__all__ = [
    "END_TRANSACTION_CODES",
    "LocalTransactionState",
    "TransactionListener",
    "TransactionSendResult",
    "check_transaction_state",
    "state_or_unknown",
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


@dataclasses.dataclass(frozen=True, slots=True)
class TransactionSendResult(SendResult):
    """``TransactionSendResult``: the half message's send result and the local outcome."""

    local_transaction_state: LocalTransactionState = LocalTransactionState.UNKNOW


def state_or_unknown(state: object) -> LocalTransactionState:
    """A listener's answer, with anything but a LocalTransactionState (None) as UNKNOW."""
    return state if isinstance(state, LocalTransactionState) else LocalTransactionState.UNKNOW


def check_transaction_state(instance: MQClientInstance, request: RemotingCommand, addr: str) -> None:
    """``ClientRemotingProcessor.checkTransactionState``: hand a check to the half's producer.

    The body is the half message (real topic and queue); its ``PGROUP`` selects the
    producer of this instance. Nothing is answered (the request is oneway).
    """
    header = CheckTransactionStateRequestHeader.from_ext_fields(request.ext_fields)
    try:
        msg = decode_record(request.body)
    except RocketqError:
        log.warning("checkTransactionState, decode message failed", exc_info=True)
        return
    group = msg.properties.get(MessageConst.PGROUP)
    if group is None:
        log.warning("checkTransactionState, pick producer group failed")
        return
    producer = instance.select_producer(group)
    handler: Callable[[str, MessageExt, CheckTransactionStateRequestHeader], None] | None = getattr(
        producer, "check_transaction_state", None
    )
    if handler is None:
        log.debug("checkTransactionState, pick producer by group[%s] failed", group)
        return
    handler(addr, msg, header)
