"""Transactional messages on the client: ``TransactionProducer`` and its listener.

Mirrors ``org.apache.rocketmq.client.producer.TransactionMQProducer`` and the transaction
half of ``DefaultMQProducerImpl`` (``sendMessageInTransaction``, ``endTransaction``,
``checkTransactionState``) (4.9.7); the types are in :mod:`rocketq.client.transaction`.

The flow of :meth:`TransactionProducer.send_message_in_transaction`:

1. the message gets ``TRAN_MSG=true`` and ``PGROUP=<group>`` (and loses any delay level);
   the producer sends it synchronously with the TRANSACTION_PREPARED sysFlag, and the
   broker keeps it as a *half* message that no consumer sees;
2. on SEND_OK the listener's ``execute_local_transaction(msg, arg)`` runs in the caller's
   thread; a listener that raises (or returns None) counts as ``UNKNOW``; a send stored
   with a flush/slave warning counts as ``ROLLBACK_MESSAGE``;
3. END_TRANSACTION goes oneway to the broker with commit (8), rollback (12) or unknown
   (0); its failure is logged, never raised (the broker's check settles the message).

Later the broker may send CHECK_TRANSACTION_STATE for a half still unresolved after its
``transactionTimeOut``, to any live producer of the group. The check runs on this
producer's check pool (``check_thread_pool_size`` threads, at most
``check_request_hold_max`` queued; more are dropped with a warning, the broker asks again)
and answers with END_TRANSACTION ``fromTransactionCheck=true``. Threads of the pool are
named ``<group>-transaction-check`` and are joined by :meth:`TransactionProducer.shutdown`.
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
from typing import TYPE_CHECKING

from rocketq.client.api_results import SendResult
from rocketq.client.config import ClientConfig, ProducerConfig
from rocketq.client.producer import Producer
from rocketq.client.transaction import (
    LocalTransactionState,
    TransactionListener,
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

if TYPE_CHECKING:
    from rocketq.client.instance import MQClientManager

__all__ = ["TransactionProducer"]

log = logging.getLogger(__name__)


class TransactionProducer(Producer):
    """A transactional producer (``TransactionMQProducer``); see the module docstring.

    ``transaction_listener`` is required for :meth:`send_message_in_transaction` and for
    answering checks. ``check_thread_pool_size`` (Java ``checkThreadPoolMaxSize``, 1) and
    ``check_request_hold_max`` (2000) size the check pool; ``executor`` replaces it (Java
    ``setExecutorService``; then it is not shut down by this producer).
    """

    def __init__(
        self,
        producer_group: str | None = None,
        *,
        transaction_listener: TransactionListener | None = None,
        namesrv_addr: str | None = None,
        config: ProducerConfig | None = None,
        client_config: ClientConfig | None = None,
        manager: MQClientManager | None = None,
        check_thread_pool_size: int = 1,
        check_request_hold_max: int = 2000,
        executor: concurrent.futures.Executor | None = None,
    ) -> None:
        super().__init__(
            producer_group,
            namesrv_addr=namesrv_addr,
            config=config,
            client_config=client_config,
            manager=manager,
        )
        if check_thread_pool_size < 1 or check_request_hold_max < 1:
            raise ClientError("check_thread_pool_size and check_request_hold_max must be >= 1")
        self.transaction_listener = transaction_listener
        self._check_threads = check_thread_pool_size
        self._check_hold_max = check_request_hold_max
        self._external_executor = executor
        self._check_executor: concurrent.futures.Executor | None = executor
        self._own_executor: concurrent.futures.ThreadPoolExecutor | None = None
        self._pending_checks = 0
        self._pending_lock = threading.Lock()

    # ================================================================== lifecycle
    def start(self) -> None:
        """``initTransactionEnv`` (the check pool), then the producer's start."""
        if self._external_executor is None and self._own_executor is None:
            self._own_executor = concurrent.futures.ThreadPoolExecutor(
                max_workers=self._check_threads,
                thread_name_prefix=f"{self.config.producer_group}-transaction-check",
            )
            self._check_executor = self._own_executor
        super().start()

    def shutdown(self) -> None:
        """The producer's shutdown, then ``destroyTransactionEnv`` (joins the check pool)."""
        super().shutdown()
        pool, self._own_executor = self._own_executor, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)

    # ================================================================== send
    def send_message_in_transaction(self, msg: Message, arg: object = None) -> TransactionSendResult:
        """Send ``msg`` as a half message, run the local transaction, end it (see module).

        Raises :class:`ClientError` without a listener or when the half could not be sent
        (the cause is chained); invalid messages raise :class:`IllegalArgumentError`.
        """
        listener = self.transaction_listener
        if listener is None:
            raise ClientError("TransactionListener is null")
        self._check_message(msg)
        prepare_half_message(msg, self.config.producer_group)
        try:
            result = self.send(msg)
        except RocketqError as exc:
            raise ClientError(f"send message Exception: {exc}") from exc
        state = LocalTransactionState.UNKNOW
        local_exc: BaseException | None = None
        if half_stored(msg, result):
            try:
                state = state_or_unknown(listener.execute_local_transaction(msg, arg))
            except Exception as exc:
                log.info("executeLocalTransactionBranch exception", exc_info=True)
                local_exc = exc
            if state is not LocalTransactionState.COMMIT_MESSAGE:
                log.info("executeLocalTransactionBranch return %s: %r", state.name, msg)
        else:  # FLUSH_DISK_TIMEOUT, FLUSH_SLAVE_TIMEOUT, SLAVE_NOT_AVAILABLE
            state = LocalTransactionState.ROLLBACK_MESSAGE
        try:
            self._end_transaction(result, state, local_exc)
        except Exception:
            log.warning(
                "local transaction execute %s, but end broker transaction failed", state.name, exc_info=True
            )
        return transaction_send_result(result, state)

    def _end_transaction(
        self, result: SendResult, state: LocalTransactionState, local_exc: BaseException | None
    ) -> None:
        """``endTransaction``: END_TRANSACTION oneway to the broker that stored the half."""
        instance = self._running_instance()
        broker_name = result.message_queue.broker_name
        addr = instance.find_broker_address_in_publish(broker_name)
        if addr is None:
            raise ClientError(f"The broker[{broker_name}] not exist")
        header, remark = end_transaction_request(self.config.producer_group, result, state, local_exc)
        instance.api.end_transaction_oneway(addr, header, remark)

    # ================================================================== check
    def check_transaction_state(
        self, addr: str, msg: MessageExt, header: CheckTransactionStateRequestHeader
    ) -> None:
        """``checkTransactionState``: answer the broker's check on the check pool."""
        executor = self._check_executor
        if executor is None:
            log.warning("transaction check of %s ignored: the producer is not started", msg.msg_id)
            return
        with self._pending_lock:
            if self._pending_checks >= self._check_hold_max:
                log.warning(
                    "transaction check of %s dropped: %d checks queued", msg.msg_id, self._pending_checks
                )
                return
            self._pending_checks += 1

        def run() -> None:
            try:
                self._answer_check(addr, msg, header)
            finally:
                with self._pending_lock:
                    self._pending_checks -= 1

        try:
            executor.submit(run)
        except RuntimeError:  # shut down meanwhile
            with self._pending_lock:
                self._pending_checks -= 1

    def _answer_check(self, addr: str, msg: MessageExt, header: CheckTransactionStateRequestHeader) -> None:
        listener = self.transaction_listener
        if listener is None:
            log.warning(
                "CheckTransactionState, pick transactionListener by group[%s] failed", self.producer_group
            )
            return
        state = LocalTransactionState.UNKNOW
        exc: BaseException | None = None
        try:
            state = state_or_unknown(listener.check_local_transaction(msg))
        except Exception as err:
            log.error(
                "Broker call checkTransactionState, but checkLocalTransactionState exception", exc_info=True
            )
            exc = err
        end, remark = check_answer(self.config.producer_group, msg, header, state, exc)
        try:
            self._running_instance().api.end_transaction_oneway(addr, end, remark)
        except RocketqError:
            log.error("endTransactionOneway exception", exc_info=True)
