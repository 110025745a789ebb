"""Where a transactional message stands: prepared, committed, rolled back or discarded.

Java's tools have no such command; this reads what a 4.9.7 broker stores for transactions
(``TransactionalMessageBridge``) through ordinary admin requests:

* every copy of the half message is found by its UNIQ_KEY in ``RMQ_SYS_TRANS_HALF_TOPIC``
  (the check re-puts a half each time it asks the producer);
* COMMITTED: a record with that UNIQ_KEY and the TRANSACTION_COMMIT sysFlag is in the real
  topic (``REAL_TOPIC`` of the half);
* DISCARDED: a copy was moved to ``TRANS_CHECK_MAX_TIME_TOPIC`` after ``transactionCheckMax``
  checks;
* ROLLED_BACK: nothing was committed or discarded, and the broker's check progress (group
  ``CID_RMQ_SYS_TRANS``) has passed the newest copy, which it only does once an op record
  resolved it (the op topic itself has no topic config, so no pull reaches it);
* PREPARED: none of these yet (the broker will check it). A rollback shows as PREPARED
  until the next check round has passed its half;
* UNKNOWN: no half with that key (not a transactional message, or its files were deleted).

Reads never commit anything.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import TYPE_CHECKING

from rocketq.admin import messages as _messages
from rocketq.errors import RocketqError
from rocketq.protocol.codes import TRANSACTION_TYPE_MASK, MessageSysFlag
from rocketq.protocol.message import MessageConst, MessageExt
from rocketq.protocol.mixall import (
    CID_SYS_RMQ_TRANS,
    RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC,
    RMQ_SYS_TRANS_HALF_TOPIC,
)

if TYPE_CHECKING:
    from rocketq.admin.admin import Admin

__all__ = ["HalfMessageState", "TransactionState", "half_message_state"]

_TRANSACTION_BITS = TRANSACTION_TYPE_MASK


class TransactionState(enum.Enum):
    """The outcome of a transactional message as the broker's files tell it."""

    UNKNOWN = "UNKNOWN"
    PREPARED = "PREPARED"
    COMMITTED = "COMMITTED"
    ROLLED_BACK = "ROLLED_BACK"
    DISCARDED = "DISCARDED"


@dataclasses.dataclass(frozen=True, slots=True)
class HalfMessageState:
    """:func:`half_message_state`'s answer."""

    uniq_key: str
    state: TransactionState
    real_topic: str | None = None
    producer_group: str | None = None
    #: copies of the half in the half queue (1 + checks sent)
    half_copies: int = 0
    #: TRANSACTION_CHECK_TIMES of the newest copy (0: never checked)
    check_times: int = 0
    #: offsetMsgId of the committed (or discarded) record
    resolved_msg_id: str | None = None


def _by_key(admin: Admin, topic: str, uniq_key: str) -> list[MessageExt]:
    try:
        return _messages.query_all_by_unique_key(admin, topic, uniq_key)
    except RocketqError:  # no route (topic never created), or nothing indexed
        return []


def half_message_state(admin: Admin, uniq_key: str) -> HalfMessageState:
    """The state of the transactional message whose client id (UNIQ_KEY) is ``uniq_key``."""
    halves = _by_key(admin, RMQ_SYS_TRANS_HALF_TOPIC, uniq_key)
    if not halves:
        return HalfMessageState(uniq_key, TransactionState.UNKNOWN)
    newest = max(halves, key=lambda m: (m.store_timestamp, m.commit_log_offset))
    props = newest.properties
    real_topic = props.get(MessageConst.REAL_TOPIC)
    times = props.get(MessageConst.TRANSACTION_CHECK_TIMES, "0")
    base = HalfMessageState(
        uniq_key,
        TransactionState.PREPARED,
        real_topic=real_topic,
        producer_group=props.get(MessageConst.PGROUP),
        half_copies=len(halves),
        check_times=int(times) if times.isdigit() else 0,
    )
    committed_flag = int(MessageSysFlag.TRANSACTION_COMMIT_TYPE)
    if real_topic:
        for msg in _by_key(admin, real_topic, uniq_key):
            if msg.sys_flag & _TRANSACTION_BITS == committed_flag:
                return dataclasses.replace(
                    base, state=TransactionState.COMMITTED, resolved_msg_id=msg.offset_msg_id
                )
    discarded = _by_key(admin, RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC, uniq_key)
    if discarded:
        return dataclasses.replace(
            base, state=TransactionState.DISCARDED, resolved_msg_id=discarded[0].offset_msg_id
        )
    # a rollback leaves only an op record, which no route reaches (Java never creates the op
    # topic's config); once the check has passed the newest copy, it found that record
    addr = dict(admin.topic_brokers(RMQ_SYS_TRANS_HALF_TOPIC)).get(newest.broker_name)
    if addr is not None:
        try:
            progress = admin.client.query_consumer_offset(
                addr, CID_SYS_RMQ_TRANS, RMQ_SYS_TRANS_HALF_TOPIC, newest.queue_id, admin.timeout_ms
            )
        except RocketqError:  # no progress stored yet
            progress = -1
        if progress > newest.queue_offset:
            return dataclasses.replace(base, state=TransactionState.ROLLED_BACK)
    return base
