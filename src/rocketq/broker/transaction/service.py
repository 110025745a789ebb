"""Half-message bookkeeping: prepare, commit/rollback lookups, op records and the check scan.

Mirrors ``org.apache.rocketmq.broker.transaction.queue.TransactionalMessageServiceImpl``
(4.9.7).

The check scan (:meth:`TransactionalMessageService.check`), per queue of
``RMQ_SYS_TRANS_HALF_TOPIC``, from the stored progress of both the half and the op queue:

* op records (read 32 at a time) name the half offsets already resolved; a half with one is
  skipped, and the op queue's progress advances over the contiguous run of op offsets used;
* a half checked ``transactionCheckMax`` times (property ``TRANSACTION_CHECK_TIMES``) or
  older than the commit log's retention is handed to the listener's discard;
* the scan stops at a half stored after the scan began or younger than
  ``transactionTimeOut`` (or its ``CHECK_IMMUNITY_TIME_IN_SECONDS``): it is looked at again
  on the next round;
* a half that needs a check is first re-put at the end of the half queue with its check
  count raised (so the progress can move past it and the next round finds the copy), then
  the listener asks a producer of its group. The producer's END_TRANSACTION names the copy.

Each round handles a queue for at most 60 s (``MAX_PROCESS_TIME_LIMIT``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Protocol

from rocketq.broker.store import PutMessageStatus
from rocketq.broker.transaction.bridge import (
    REMOVETAG,
    PullStatus,
    QueueRead,
    TransactionalMessageBridge,
)
from rocketq.protocol.message import MessageConst, MessageExt
from rocketq.protocol.mixall import RMQ_SYS_TRANS_HALF_TOPIC, RMQ_SYS_TRANS_OP_HALF_TOPIC

__all__ = ["TransactionCheckListener", "TransactionalMessageService"]

log = logging.getLogger(__name__)

#: TransactionalMessageServiceImpl.MAX_PROCESS_TIME_LIMIT
_MAX_PROCESS_TIME_LIMIT_MS = 60_000
#: MAX_RETRY_COUNT_WHEN_HALF_NULL
_MAX_RETRY_COUNT_WHEN_HALF_NULL = 1
#: ops read per fillOpRemoveMap
_OP_BATCH = 32


class TransactionCheckListener(Protocol):
    """What the scan hands halves to (``AbstractTransactionalMessageCheckListener``)."""

    def resolve_half_msg(self, msg: MessageExt) -> None: ...

    def resolve_discard_msg(self, msg: MessageExt) -> None: ...


def _wall_ms() -> int:
    return time.time_ns() // 1_000_000


def _to_int(text: str | None) -> int:
    """``getLong``/``getInt``: -1 for anything that does not parse."""
    try:
        return int(text or "")
    except ValueError:
        return -1


class TransactionalMessageService:
    """``TransactionalMessageServiceImpl``."""

    def __init__(
        self,
        bridge: TransactionalMessageBridge,
        *,
        file_reserved_time_ms: int,
        wall_ms: Callable[[], int] = _wall_ms,
    ) -> None:
        self.bridge = bridge
        self._file_reserved_time_ms = file_reserved_time_ms
        self._wall_ms = wall_ms

    # ------------------------------------------------------------------ END_TRANSACTION
    def look_half(self, commit_log_offset: int) -> MessageExt | None:
        """``commitMessage``/``rollbackMessage``: the half stored at ``commit_log_offset``."""
        return self.bridge.look_message_by_offset(commit_log_offset)

    def delete_prepare_message(self, half: MessageExt) -> bool:
        """``deletePrepareMessage``: write the op record that resolves ``half``."""
        return self.bridge.put_op_message(half)

    # ------------------------------------------------------------------ check
    def check(self, transaction_timeout_ms: int, check_max: int, listener: TransactionCheckListener) -> None:
        """One scan of every half queue (see the module docstring). Never raises."""
        try:
            for queue_id in self.bridge.fetch_message_queues(RMQ_SYS_TRANS_HALF_TOPIC):
                self._check_queue(queue_id, transaction_timeout_ms, check_max, listener)
        except Exception:
            log.exception("transaction check failed")

    def _check_queue(
        self, queue_id: int, timeout_ms: int, check_max: int, listener: TransactionCheckListener
    ) -> None:
        bridge = self.bridge
        start = self._wall_ms()
        half_offset = bridge.fetch_consume_offset(RMQ_SYS_TRANS_HALF_TOPIC, queue_id)
        op_offset = bridge.fetch_consume_offset(RMQ_SYS_TRANS_OP_HALF_TOPIC, queue_id)
        if half_offset < 0 or op_offset < 0:
            log.error("half queue %d: illegal offsets %d / op %d, skipped", queue_id, half_offset, op_offset)
            return
        done_op: list[int] = []
        remove: dict[int, int] = {}
        op_read = self._fill_op_remove_map(remove, queue_id, op_offset, half_offset, done_op)
        null_count = 1
        new_offset = i = half_offset
        while self._wall_ms() - start <= _MAX_PROCESS_TIME_LIMIT_MS:
            if i in remove:
                done_op.append(remove.pop(i))
            else:
                read = bridge.get_half_message(queue_id, i, 1)
                msg = read.messages[0] if read.messages else None
                if msg is None:
                    null_count += 1
                    if (
                        null_count - 1 > _MAX_RETRY_COUNT_WHEN_HALF_NULL
                        or read.status == PullStatus.NO_NEW_MSG
                    ):
                        break
                    i = new_offset = read.next_begin_offset  # an illegal offset: jump
                    continue
                if self._need_discard(msg, check_max) or self._need_skip(msg):
                    listener.resolve_discard_msg(msg)
                    new_offset = i = i + 1
                    continue
                if msg.store_timestamp >= start:
                    break  # stored after this round began: next round
                age = self._wall_ms() - msg.born_timestamp
                immunity = timeout_ms
                immunity_text = msg.properties.get(MessageConst.CHECK_IMMUNITY_TIME_IN_SECONDS)
                if immunity_text is not None:
                    immunity = _immunity_ms(immunity_text, timeout_ms)
                    if age < immunity and self._check_prepare_queue_offset(remove, done_op, msg):
                        new_offset = i = i + 1
                        continue
                elif 0 <= age < immunity:
                    break  # too young: next round
                ops = op_read.messages if op_read.status == PullStatus.FOUND else None
                # Java: opMsg == null && age > immunity. With age == immunity that never
                # holds and the scan re-reads the op queue until its time limit; >= ends it.
                need_check = (
                    (ops is None and age >= immunity)
                    or (ops is not None and ops[-1].born_timestamp - start > timeout_ms)
                    or age <= -1
                )
                if not need_check:
                    op_read = self._fill_op_remove_map(
                        remove, queue_id, op_read.next_begin_offset, half_offset, done_op
                    )
                    continue
                if not self._put_back_half_msg_queue(msg):
                    continue
                listener.resolve_half_msg(msg)
            new_offset = i = i + 1
        if new_offset != half_offset:
            bridge.update_consume_offset(RMQ_SYS_TRANS_HALF_TOPIC, queue_id, new_offset)
        new_op_offset = _calculate_op_offset(done_op, op_offset)
        if new_op_offset != op_offset:
            bridge.update_consume_offset(RMQ_SYS_TRANS_OP_HALF_TOPIC, queue_id, new_op_offset)

    def _fill_op_remove_map(
        self, remove: dict[int, int], queue_id: int, op_offset: int, mini_offset: int, done_op: list[int]
    ) -> QueueRead:
        """``fillOpRemoveMap``: half offset -> op offset for the next op records."""
        read = self.bridge.get_op_message(queue_id, op_offset, _OP_BATCH)
        if read.status in (PullStatus.OFFSET_ILLEGAL, PullStatus.NO_MATCHED_MSG):
            log.warning("op queue %d: offset %d is illegal (%s)", queue_id, op_offset, read.status)
            self.bridge.update_consume_offset(RMQ_SYS_TRANS_OP_HALF_TOPIC, queue_id, read.next_begin_offset)
            return read
        for op in read.messages:
            half_offset = _to_int(op.body.decode("utf-8", "replace"))
            if op.tags != REMOVETAG:
                log.error("op queue %d: illegal tag %r at %d", queue_id, op.tags, op.queue_offset)
            elif half_offset < mini_offset:
                done_op.append(op.queue_offset)
            else:
                remove[half_offset] = op.queue_offset
        return read

    @staticmethod
    def _need_discard(msg: MessageExt, check_max: int) -> bool:
        """``needDiscard``: count this check in TRANSACTION_CHECK_TIMES, or give up."""
        text = msg.properties.get(MessageConst.TRANSACTION_CHECK_TIMES)
        times = 1
        if text is not None:
            times = _to_int(text)
            if times >= check_max:
                return True
            times += 1
        msg.properties[MessageConst.TRANSACTION_CHECK_TIMES] = str(times)
        return False

    def _need_skip(self, msg: MessageExt) -> bool:
        """``needSkip``: born before the commit log's retention (fileReservedTime)."""
        if self._wall_ms() - msg.born_timestamp > self._file_reserved_time_ms:
            log.info("half message %s is older than the file reserved time: skipped", msg.msg_id)
            return True
        return False

    def _check_prepare_queue_offset(
        self, remove: dict[int, int], done_op: list[int], msg: MessageExt
    ) -> bool:
        """``checkPrepareQueueOffset`` (a half with its own immunity time): True = skip it."""
        text = msg.properties.get(MessageConst.TRAN_PREPARED_QUEUE_OFFSET)
        if text is None:
            return self._put_immunity_msg_back(msg)
        prepared = _to_int(text)
        if prepared == -1:
            return False
        if prepared in remove:
            done_op.append(remove.pop(prepared))
            return True
        return self._put_immunity_msg_back(msg)

    def _put_immunity_msg_back(self, msg: MessageExt) -> bool:
        """``putImmunityMsgBackToHalfQueue``: re-put, remembering the first queue offset."""
        inner = self.bridge.renew_half_message_inner(msg)
        key = MessageConst.TRAN_PREPARED_QUEUE_OFFSET
        inner.put_property(key, msg.properties.get(key) or str(msg.queue_offset))
        return self.bridge.put_message(inner).status == PutMessageStatus.PUT_OK

    def _put_back_half_msg_queue(self, msg: MessageExt) -> bool:
        """``putBackHalfMsgQueue``: re-put ``msg``; it then names the copy's offsets."""
        result = self.bridge.put_message(self.bridge.renew_half_message_inner(msg))
        append = result.append
        if result.status != PutMessageStatus.PUT_OK or append is None:
            log.error("re-putting half message %s failed: %s", msg.msg_id, result.status)
            return False
        msg.queue_offset = append.logics_offset
        msg.commit_log_offset = append.wrote_offset
        return True


def _immunity_ms(text: str, timeout_ms: int) -> int:
    """``getImmunityTime``: seconds in the property, -1 = the transaction timeout."""
    value = _to_int(text)
    return timeout_ms if value == -1 else value * 1000


def _calculate_op_offset(done: list[int], old: int) -> int:
    """``calculateOpOffset``: advance over the contiguous run of used op offsets."""
    new = old
    for offset in sorted(done):
        if offset != new:
            break
        new += 1
    return new
