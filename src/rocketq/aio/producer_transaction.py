"""AsyncTransactionProducer: transactional messages on the caller's event loop.

The asyncio counterpart of :class:`rocketq.client.producer_transaction.TransactionProducer`
(Java's ``TransactionMQProducer`` and the transaction half of ``DefaultMQProducerImpl``). The
rules are the blocking producer's own, from :mod:`rocketq.client.transaction`: the half's
stamping (:func:`~rocketq.client.transaction.prepare_half_message`), when the local
transaction runs (:func:`~rocketq.client.transaction.half_stored`), the END_TRANSACTION
headers and remarks (:func:`~rocketq.client.transaction.end_transaction_request`,
:func:`~rocketq.client.transaction.check_answer`) and the listener's answer
(:func:`~rocketq.client.transaction.state_or_unknown`).

The listener's two methods may be coroutines (``async def``) or plain functions; a plain one
runs on the loop itself, so it must not block (no thread is started for it: rocketq.aio owns
no thread). :meth:`AsyncTransactionProducer.send_message_in_transaction`:

1. the message gets ``TRAN_MSG=true`` and ``PGROUP`` and loses any delay level, and is sent
   (awaited) as a half message;
2. on SEND_OK ``execute_local_transaction(msg, arg)`` is awaited (raising or returning None
   counts as UNKNOW); a send stored with a flush/slave warning counts as ROLLBACK_MESSAGE;
3. END_TRANSACTION goes oneway; its failure is logged, never raised (the broker's check
   settles the message).

A CHECK_TRANSACTION_STATE the broker sends over this client's connection (the client
instance routes it here when the half's ``PGROUP`` is this producer's group) runs
``check_local_transaction`` as a task of the loop, at most ``check_request_hold_max`` at
once (more are dropped with a warning; the broker asks again), and answers with
END_TRANSACTION ``fromTransactionCheck=true``. :meth:`AsyncTransactionProducer.shutdown`
cancels and awaits the check tasks still running.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Sequence
from typing import Protocol

from rocketq.aio.producer import AsyncProducer
from rocketq.aio.remoting import RequestHook
from rocketq.client.config import ClientConfig, ProducerConfig
from rocketq.client.send_prep import check_message
from rocketq.client.transaction import (
    LocalTransactionState,
    TransactionSendResult,
    check_answer,
    end_transaction_request,
    half_stored,
    prepare_half_message,
    state_or_unknown,
    transaction_send_result,
)
from rocketq.errors import ClientError, RocketqError
from rocketq.protocol.headers import CheckTransactionStateRequestHeader
from rocketq.protocol.message import Message, MessageExt

__all__ = ["AsyncTransactionListener", "AsyncTransactionProducer"]

log = logging.getLogger(__name__)


class AsyncTransactionListener(Protocol):
    """A ``TransactionListener`` whose methods may be coroutines (or plain, non-blocking)."""

    def execute_local_transaction(
        self, msg: Message, arg: object
    ) -> Awaitable[LocalTransactionState] | LocalTransactionState:
        """Run the local transaction after the half message was stored."""
        ...

    def check_local_transaction(
        self, msg: MessageExt
    ) -> Awaitable[LocalTransactionState] | LocalTransactionState:
        """Answer the broker's check for a half message still unresolved."""
        ...


async def _outcome(answer: object) -> LocalTransactionState:
    """A listener's answer, awaited when it is awaitable; anything but a state is UNKNOW."""
    if inspect.isawaitable(answer):
        answer = await answer
    return state_or_unknown(answer)


class AsyncTransactionProducer(AsyncProducer):
    """A transactional producer on the running loop (``TransactionMQProducer``).

    ``transaction_listener`` is required for :meth:`send_message_in_transaction` and for
    answering checks; ``check_request_hold_max`` (Java ``checkRequestHoldMax``, 2000) bounds
    the checks running at once. Other arguments as :class:`AsyncProducer`.
    """

    def __init__(
        self,
        producer_group: str | None = None,
        *,
        transaction_listener: AsyncTransactionListener | None = None,
        namesrv_addr: str | None = None,
        config: ProducerConfig | None = None,
        client_config: ClientConfig | None = None,
        request_hooks: Sequence[RequestHook] = (),
        enable_msg_trace: bool = False,
        custom_trace_topic: str | None = None,
        check_request_hold_max: int = 2000,
    ) -> None:
        super().__init__(
            producer_group,
            namesrv_addr=namesrv_addr,
            config=config,
            client_config=client_config,
            request_hooks=request_hooks,
            enable_msg_trace=enable_msg_trace,
            custom_trace_topic=custom_trace_topic,
        )
        if check_request_hold_max < 1:
            raise ClientError("check_request_hold_max must be >= 1")
        self.transaction_listener = transaction_listener
        self._check_hold_max = check_request_hold_max
        self._checks: set[asyncio.Task[None]] = set()

    async def shutdown(self) -> None:
        """Cancel and await the running checks, then the producer's shutdown."""
        checks, self._checks = self._checks, set()
        for task in checks:
            task.cancel()
        if checks:
            await asyncio.gather(*checks, return_exceptions=True)
        await super().shutdown()

    # ================================================================== send
    async def send_message_in_transaction(self, msg: Message, arg: object = None) -> TransactionSendResult:
        """Send ``msg`` as a half message, run the local transaction, end it (see module).

        Raises :class:`ClientError` without a listener or when the half could not be sent
        (the cause is chained); invalid messages raise :class:`IllegalArgumentError`.
        """
        listener = self.transaction_listener
        if listener is None:
            raise ClientError("TransactionListener is null")
        group = self.config.producer_group
        check_message(msg, self.config)
        prepare_half_message(msg, group)
        try:
            result = await self._send_now(msg)  # never auto-batched
        except RocketqError as exc:
            raise ClientError(f"send message Exception: {exc}") from exc
        state = LocalTransactionState.UNKNOW
        local_exc: BaseException | None = None
        if half_stored(msg, result):
            try:
                state = await _outcome(listener.execute_local_transaction(msg, arg))
            except Exception as exc:
                log.info("executeLocalTransactionBranch exception", exc_info=True)
                local_exc = exc
            if state is not LocalTransactionState.COMMIT_MESSAGE:
                log.info("executeLocalTransactionBranch return %s: %r", state.name, msg)
        else:  # FLUSH_DISK_TIMEOUT, FLUSH_SLAVE_TIMEOUT, SLAVE_NOT_AVAILABLE
            state = LocalTransactionState.ROLLBACK_MESSAGE
        try:
            header, remark = end_transaction_request(group, result, state, local_exc)
            addr = await self._broker_addr(result.message_queue)
            await self._running().api.end_transaction_oneway(addr, header, remark)
        except Exception:
            log.warning(
                "local transaction execute %s, but end broker transaction failed", state.name, exc_info=True
            )
        return transaction_send_result(result, state)

    # ================================================================== check
    def check_transaction_state(
        self, addr: str, msg: MessageExt, header: CheckTransactionStateRequestHeader
    ) -> None:
        """``checkTransactionState``: answer the broker's check in a task of the loop."""
        if len(self._checks) >= self._check_hold_max:
            log.warning("transaction check of %s dropped: %d checks running", msg.msg_id, len(self._checks))
            return
        task = asyncio.get_running_loop().create_task(self._answer_check(addr, msg, header))
        self._checks.add(task)
        task.add_done_callback(self._checks.discard)

    async def _answer_check(
        self, addr: str, msg: MessageExt, header: CheckTransactionStateRequestHeader
    ) -> None:
        listener = self.transaction_listener
        if listener is None:
            log.warning(
                "CheckTransactionState, pick transactionListener by group[%s] failed",
                self.config.producer_group,
            )
            return
        state = LocalTransactionState.UNKNOW
        exc: BaseException | None = None
        try:
            state = await _outcome(listener.check_local_transaction(msg))
        except Exception as err:
            log.error(
                "Broker call checkTransactionState, but checkLocalTransactionState exception", exc_info=True
            )
            exc = err
        end, remark = check_answer(self.config.producer_group, msg, header, state, exc)
        try:
            await self._running().api.end_transaction_oneway(addr, end, remark)
        except RocketqError:
            log.error("endTransactionOneway exception", exc_info=True)
