"""The transaction service's door to the store: half/op puts, reads and check progress.

Mirrors ``org.apache.rocketmq.broker.transaction.queue.TransactionalMessageBridge`` and
``TransactionalMessageUtil`` (4.9.7).

Invariants:

* A half message is stored in ``RMQ_SYS_TRANS_HALF_TOPIC`` queue 0 with its real topic and
  queue in ``REAL_TOPIC`` / ``REAL_QID`` and the transaction bits of its sysFlag cleared
  (``parseHalfMessageInner``): it is an ordinary message of a system topic that no consumer
  subscribes to, so it is never delivered.
* An op record (``addRemoveTagInTransactionOp``) goes to ``RMQ_SYS_TRANS_OP_HALF_TOPIC``,
  same queue id as its half, tag ``d``, body = the half's queue offset as decimal UTF-8
  text, born/store host = this broker, properties ``TAGS`` and ``WAIT`` only.
* The check's progress through both queues is the consume offset of group
  ``CID_RMQ_SYS_TRANS`` in the consumer offset manager, so it is persisted with
  consumerOffset.json and a restarted broker resumes from it; no offset yet means the
  queue's min offset (``fetchConsumeOffset``).
* Every method is thread-safe (the store and the managers are); the check thread and the
  request loop both call in.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from typing import TYPE_CHECKING

from rocketq.broker.store import MessageExtBrokerInner, PutMessageResult, PutMessageStatus
from rocketq.broker.store.status import GetMessageStatus
from rocketq.protocol.codes import TRANSACTION_TYPE_MASK, PermName
from rocketq.protocol.message import MessageConst, MessageExt, decode_record, tags_code
from rocketq.protocol.mixall import (
    CID_SYS_RMQ_TRANS,
    RMQ_SYS_TRANS_HALF_TOPIC,
    RMQ_SYS_TRANS_OP_HALF_TOPIC,
)
from rocketq.remoting.helper import host_addr_to_string

if TYPE_CHECKING:
    from rocketq.broker.broker import BrokerController

__all__ = ["REMOVETAG", "PullStatus", "QueueRead", "TransactionalMessageBridge"]

log = logging.getLogger(__name__)

#: ``TransactionalMessageUtil.REMOVETAG``: the tag of every op record
REMOVETAG = "d"
_TRANSACTION_BITS = TRANSACTION_TYPE_MASK
_PERM_RW = int(PermName.PERM_READ | PermName.PERM_WRITE)


class PullStatus:
    """``PullStatus`` names as the bridge's ``getMessage`` maps store statuses to them."""

    FOUND = "FOUND"
    NO_NEW_MSG = "NO_NEW_MSG"
    NO_MATCHED_MSG = "NO_MATCHED_MSG"
    OFFSET_ILLEGAL = "OFFSET_ILLEGAL"


_STATUS = {
    GetMessageStatus.FOUND: PullStatus.FOUND,
    GetMessageStatus.NO_MATCHED_MESSAGE: PullStatus.NO_MATCHED_MSG,
    GetMessageStatus.NO_MESSAGE_IN_QUEUE: PullStatus.NO_NEW_MSG,
    GetMessageStatus.OFFSET_OVERFLOW_ONE: PullStatus.NO_NEW_MSG,
}


@dataclasses.dataclass(slots=True)
class QueueRead:
    """``PullResult`` of one read of a half or op queue (decoded, bodies not decompressed)."""

    status: str
    next_begin_offset: int
    messages: list[MessageExt]


def _wall_ms() -> int:
    return time.time_ns() // 1_000_000


class TransactionalMessageBridge:
    """``TransactionalMessageBridge`` over one broker's store and managers."""

    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker

    # ------------------------------------------------------------------ progress
    def fetch_consume_offset(self, topic: str, queue_id: int) -> int:
        """``fetchConsumeOffset``: the stored progress, else the queue's min offset."""
        broker = self.broker
        offset = broker.consumer_offset_manager.query_offset(CID_SYS_RMQ_TRANS, topic, queue_id)
        if offset == -1:
            offset = broker.store.get_min_offset_in_queue(topic, queue_id)
        return offset

    def update_consume_offset(self, topic: str, queue_id: int, offset: int) -> None:
        """``updateConsumeOffset``: commit the check's progress (persisted with the offsets)."""
        self.broker.consumer_offset_manager.commit_offset(
            host_addr_to_string(self.broker.store_host), CID_SYS_RMQ_TRANS, topic, queue_id, offset
        )

    def fetch_message_queues(self, topic: str) -> list[int]:
        """``fetchMessageQueues``: the queue ids of ``topic``, creating it (1 queue) if absent."""
        tcm = self.broker.topic_config_manager
        tc = tcm.select_topic_config(topic)
        if tc is None:
            tc = tcm.create_topic_in_send_message_back_method(topic, 1, _PERM_RW, 0)
        return list(range(tc.read_queue_nums))

    # ------------------------------------------------------------------ reads
    def get_half_message(self, queue_id: int, offset: int, nums: int) -> QueueRead:
        return self._read(RMQ_SYS_TRANS_HALF_TOPIC, queue_id, offset, nums)

    def get_op_message(self, queue_id: int, offset: int, nums: int) -> QueueRead:
        return self._read(RMQ_SYS_TRANS_OP_HALF_TOPIC, queue_id, offset, nums)

    def _read(self, topic: str, queue_id: int, offset: int, nums: int) -> QueueRead:
        result = self.broker.store.get_message(CID_SYS_RMQ_TRANS, topic, queue_id, offset, nums)
        status = _STATUS.get(result.status, PullStatus.OFFSET_ILLEGAL)
        messages: list[MessageExt] = []
        if status == PullStatus.FOUND:
            # MessageDecoder.decode(bb, true, false): bodies stay as stored
            messages = [decode_record(bytes(buf), decompress=False) for buf in result.buffers]
        return QueueRead(status, result.next_begin_offset, messages)

    def look_message_by_offset(self, commit_log_offset: int) -> MessageExt | None:
        return self.broker.store.look_message_by_offset(commit_log_offset)

    # ------------------------------------------------------------------ writes
    def put_half_message(self, inner: MessageExtBrokerInner) -> PutMessageResult:
        """``putHalfMessage``: store ``inner`` as a half message (``inner`` is rewritten)."""
        inner.put_property(MessageConst.REAL_TOPIC, inner.topic)
        inner.put_property(MessageConst.REAL_QID, str(inner.queue_id))
        inner.sys_flag &= ~_TRANSACTION_BITS  # resetTransactionValue(.., TRANSACTION_NOT_TYPE)
        inner.topic = RMQ_SYS_TRANS_HALF_TOPIC
        inner.queue_id = 0
        return self.broker.store.put_message(inner)

    def put_message(self, inner: MessageExtBrokerInner) -> PutMessageResult:
        """``putMessageReturnResult``: the flush is never awaited (WAIT is false in Java)."""
        return self.broker.store.put_message(inner)

    def renew_half_message_inner(self, msg: MessageExt) -> MessageExtBrokerInner:
        """``renewHalfMessageInner``: a copy of a half for re-putting into the half queue.

        Java copies neither ``flag`` nor ``reconsumeTimes`` here, so a half that was checked
        once carries flag 0 from then on (and so does its committed message).
        """
        return MessageExtBrokerInner(
            topic=msg.topic,
            queue_id=msg.queue_id,
            body=msg.body,
            born_host=msg.born_host,
            store_host=msg.store_host,
            properties=msg.properties,
            tags_code=tags_code(msg.tags),
            sys_flag=msg.sys_flag,
            born_timestamp=msg.born_timestamp,
        )

    def put_op_message(self, half: MessageExt) -> bool:
        """``putOpMessage(msg, REMOVETAG)``: record that ``half`` was committed or rolled back."""
        broker = self.broker
        # Message(topic, tags, body) sets TAGS and WAIT=true; makeOpMessageInner fixes the
        # property string before setUniqID, so the stored record carries no UNIQ_KEY
        props = {MessageConst.TAGS: REMOVETAG, MessageConst.WAIT: "true"}
        inner = MessageExtBrokerInner(
            topic=RMQ_SYS_TRANS_OP_HALF_TOPIC,
            queue_id=half.queue_id,
            body=str(half.queue_offset).encode(),
            born_host=broker.store_host,
            store_host=broker.store_host,
            properties=props,
            born_timestamp=_wall_ms(),
        )
        result = broker.store.put_message(inner)
        if result.status != PutMessageStatus.PUT_OK:
            log.error("transaction op record for half offset %d failed: %s", half.queue_offset, result.status)
            return False
        return True
