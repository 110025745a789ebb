"""Retry and DLQ decisions of the push consumer, shared by the blocking and the asyncio one.

Pure logic of ``ConsumeMessageConcurrentlyService.processConsumeResult``,
``ConsumeMessageOrderlyService.checkReconsumeTimes`` and the producer fallback of
``DefaultMQPushConsumerImpl.sendMessageBack`` (4.9.7):

* concurrent: CONSUME_SUCCESS acknowledges messages ``0..ack_index``; the rest, and every
  message of a RECONSUME_LATER batch, is handed back to the broker (CONSUMER_SEND_MSG_BACK with
  ``delay_level_when_next_consume``: 0 = the broker's 3 + reconsume times, < 0 = straight to
  the DLQ), or dropped with a warning in BROADCASTING mode. ``max_reconsume_times`` -1 means 16.
* orderly: a message that failed ``max_reconsume_times`` times (-1 = unlimited) is sent to
  ``%RETRY%<group>`` with RECONSUME_TIME = max, which the broker routes to ``%DLQ%<group>``.
* the fallback copy to ``%RETRY%<group>``: ORIGIN_MESSAGE_ID, RETRY_TOPIC, RECONSUME_TIME,
  MAX_RECONSUME_TIMES and DELAY (3 + reconsume times) set; the pull-time properties removed.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence

from rocketq.client.consumer.listener import (
    ConsumeConcurrentlyContext,
    ConsumeConcurrentlyStatus,
    ConsumeOrderlyStatus,
)
from rocketq.protocol.message import Message, MessageConst, MessageExt
from rocketq.protocol.mixall import retry_topic

__all__ = [
    "DEFAULT_MAX_RECONSUME_CONCURRENT",
    "SEND_BACK_TIMEOUT_MS",
    "OrderlyAction",
    "concurrent_max_reconsume_times",
    "orderly_action",
    "orderly_max_reconsume_times",
    "retry_message",
    "split_concurrent_result",
]

#: ``DefaultMQPushConsumer.maxReconsumeTimes`` -1 in concurrent mode
DEFAULT_MAX_RECONSUME_CONCURRENT = 16
#: CONSUMER_SEND_MSG_BACK timeout
SEND_BACK_TIMEOUT_MS = 5000


def concurrent_max_reconsume_times(configured: int) -> int:
    return DEFAULT_MAX_RECONSUME_CONCURRENT if configured == -1 else configured


def orderly_max_reconsume_times(configured: int) -> int:
    return 2**31 - 1 if configured == -1 else configured


def split_concurrent_result(
    status: ConsumeConcurrentlyStatus, context: ConsumeConcurrentlyContext, msgs: Sequence[MessageExt]
) -> tuple[int, list[MessageExt]]:
    """``processConsumeResult``: (how many succeeded, the messages to retry)."""
    if status == ConsumeConcurrentlyStatus.CONSUME_SUCCESS:
        ack_index = min(context.ack_index, len(msgs) - 1)
    else:
        ack_index = -1
    return ack_index + 1, list(msgs[ack_index + 1 :])


def retry_message(msg: MessageExt, group: str, reconsume_time: int, max_reconsume_times: int) -> Message:
    """The copy of ``msg`` the producer fallback sends to ``%RETRY%<group>``."""
    props = dict(msg.properties)
    props.pop(MessageConst.TRAN_MSG, None)
    if not props.get(MessageConst.ORIGIN_MESSAGE_ID):
        props[MessageConst.ORIGIN_MESSAGE_ID] = msg.msg_id
    props[MessageConst.RETRY_TOPIC] = msg.topic
    props[MessageConst.RECONSUME_TIME] = str(reconsume_time)
    props[MessageConst.MAX_RECONSUME_TIMES] = str(max_reconsume_times)
    props[MessageConst.DELAY] = str(3 + msg.reconsume_times)
    for key in (MessageConst.MIN_OFFSET, MessageConst.MAX_OFFSET, MessageConst.CONSUME_START_TIME):
        props.pop(key, None)
    new_msg = Message(retry_topic(group), msg.body, flag=msg.flag)
    new_msg.properties = props
    return new_msg


class OrderlyAction(enum.Enum):
    """What an orderly batch's status asks for (``ConsumeMessageOrderlyService.processConsumeResult``)."""

    #: commit: the batch's offset (largest + 1) becomes the queue's offset (an ok count)
    COMMIT = "COMMIT"
    #: auto_commit=False SUCCESS: consumed, the offset stays until a COMMIT (an ok count)
    KEEP = "KEEP"
    #: auto_commit=False COMMIT: commit without counting
    COMMIT_ONLY = "COMMIT_ONLY"
    #: auto_commit=False ROLLBACK: the batch goes back and is consumed again after the suspend time
    ROLLBACK = "ROLLBACK"
    #: SUSPEND_CURRENT_QUEUE_A_MOMENT or a failure: retry the same messages (or DLQ them past
    #: max_reconsume_times, then commit when auto_commit)
    SUSPEND = "SUSPEND"


def orderly_action(status: ConsumeOrderlyStatus, auto_commit: bool) -> OrderlyAction:
    """The orderly result rule; with ``auto_commit`` COMMIT and ROLLBACK count as SUCCESS."""
    if status == ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT:
        return OrderlyAction.SUSPEND
    if auto_commit:
        return OrderlyAction.COMMIT
    if status == ConsumeOrderlyStatus.SUCCESS:
        return OrderlyAction.KEEP
    if status == ConsumeOrderlyStatus.COMMIT:
        return OrderlyAction.COMMIT_ONLY
    return OrderlyAction.ROLLBACK
