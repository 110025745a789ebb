"""The periodic transaction check and what it does with the halves it finds.

Mirrors ``org.apache.rocketmq.broker.transaction.TransactionalMessageCheckService`` and
``AbstractTransactionalMessageCheckListener`` / ``DefaultTransactionalMessageCheckListener``
(4.9.7).

* :class:`TransactionalMessageCheckService` is a named service thread (masters only): every
  ``transactionCheckInterval`` it runs one scan with ``transactionTimeOut`` and
  ``transactionCheckMax`` (read from the config at each round, as Java does).
* :class:`DefaultTransactionalMessageCheckListener` asks one live producer channel of the
  half's ``PGROUP`` with CHECK_TRANSACTION_STATE (oneway; the body is the half re-encoded
  with its real topic and queue, ``MessageDecoder.encode(msg, false)``). No live producer:
  a warning, and the next round asks again. A discarded half is stored in
  ``TRANS_CHECK_MAX_TIME_TOPIC`` (1 queue, created on demand) and is never checked again.
  Java sends the check from a small pool; here it is sent from the check thread (the
  oneway write never blocks it).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from rocketq.broker.store import MessageExtBrokerInner, PutMessageStatus
from rocketq.broker.transaction.service import TransactionalMessageService
from rocketq.common.service_thread import ServiceThread
from rocketq.protocol.codes import PermName, RequestCode
from rocketq.protocol.frame import RemotingCommand
from rocketq.protocol.headers import CheckTransactionStateRequestHeader
from rocketq.protocol.message import MessageConst, MessageExt, encode_properties, encode_record, tags_code
from rocketq.protocol.mixall import RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC

if TYPE_CHECKING:
    from rocketq.broker.broker import BrokerController

__all__ = ["DefaultTransactionalMessageCheckListener", "TransactionalMessageCheckService"]

log = logging.getLogger(__name__)

#: AbstractTransactionalMessageCheckListener.TCMT_QUEUE_NUMS
_TCMT_QUEUE_NUMS = 1
_PERM_RW = int(PermName.PERM_READ | PermName.PERM_WRITE)


def check_request_body(msg: MessageExt) -> bytes:
    """``MessageDecoder.encode(msg, false)`` of a half about to be checked."""
    return encode_record(
        topic=msg.topic,
        queue_id=msg.queue_id,
        flag=msg.flag,
        queue_offset=msg.queue_offset,
        physical_offset=msg.commit_log_offset,
        sys_flag=msg.sys_flag,
        born_timestamp=msg.born_timestamp,
        born_host=msg.born_host,
        store_timestamp=msg.store_timestamp,
        store_host=msg.store_host,
        reconsume_times=msg.reconsume_times,
        prepared_transaction_offset=msg.prepared_transaction_offset,
        body=msg.body,
        properties=encode_properties(msg.properties, java_order=True),
        body_crc=msg.body_crc,
    )


class DefaultTransactionalMessageCheckListener:
    """``DefaultTransactionalMessageCheckListener``: ask a producer, or discard."""

    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker

    def resolve_half_msg(self, msg: MessageExt) -> None:
        """``sendCheckMessage``: CHECK_TRANSACTION_STATE to one producer of the group."""
        props = msg.properties
        uniq = props.get(MessageConst.UNIQ_KEY)
        header = CheckTransactionStateRequestHeader(
            tran_state_table_offset=msg.queue_offset,
            commit_log_offset=msg.commit_log_offset,
            msg_id=uniq,
            transaction_id=uniq,
            offset_msg_id=msg.offset_msg_id,
        )
        msg.topic = props.get(MessageConst.REAL_TOPIC, msg.topic)
        try:
            msg.queue_id = int(props.get(MessageConst.REAL_QID, ""))
        except ValueError:
            log.error("half message %s has no valid REAL_QID", msg.offset_msg_id)
            return
        group = props.get(MessageConst.PGROUP)
        channel = self.broker.producer_manager.get_available_channel(group) if group else None
        if channel is None:
            log.warning("transaction check of %s: no live producer of group %s", uniq, group)
            return
        request = RemotingCommand.request(
            RequestCode.CHECK_TRANSACTION_STATE, header.to_ext_fields(), check_request_body(msg), oneway=True
        )
        try:
            channel.invoke_oneway(request)
        except Exception as exc:
            log.error("transaction check of %s to %s failed: %s", uniq, channel.remote_addr, exc)

    def resolve_discard_msg(self, msg: MessageExt) -> None:
        """Store the half in TRANS_CHECK_MAX_TIME_TOPIC (checked too often)."""
        broker = self.broker
        # createTopicOfTranCheckMaxTime: the send-back creation with this name
        tc = broker.topic_config_manager.create_topic_in_send_message_back_method(
            RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC, _TCMT_QUEUE_NUMS, _PERM_RW, 0
        )
        inner = MessageExtBrokerInner(
            topic=tc.topic_name or RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC,
            queue_id=0,
            body=msg.body,
            flag=msg.flag,
            properties=msg.properties,
            tags_code=tags_code(msg.tags),
            sys_flag=msg.sys_flag,
            born_host=msg.born_host,
            born_timestamp=msg.born_timestamp,
            store_host=msg.store_host,
            reconsume_times=msg.reconsume_times,
        )
        result = broker.store.put_message(inner)
        if result.status == PutMessageStatus.PUT_OK:
            log.warning(
                "half message %s (real topic %s) checked too many times: moved to %s",
                msg.msg_id,
                msg.properties.get(MessageConst.REAL_TOPIC),
                RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC,
            )
        else:
            log.error("moving half message %s to %s failed: %s", msg.msg_id, tc.topic_name, result.status)


class TransactionalMessageCheckService(ServiceThread):
    """``TransactionalMessageCheckService``: one check round per ``transactionCheckInterval``."""

    def __init__(
        self,
        broker: BrokerController,
        service: TransactionalMessageService,
        listener: DefaultTransactionalMessageCheckListener,
    ) -> None:
        cfg = broker.config
        #: transactionCheckInterval, in seconds
        self.check_interval_s: float = cfg.transaction_check_interval_ms / 1000
        super().__init__("TransactionalMessageCheckService", interval_s=self.check_interval_s)
        self.broker = broker
        self.service = service
        self.listener = listener

    def run(self) -> None:
        while True:
            self.wait_for_running(self.check_interval_s)
            if self.stopped:
                return
            self.check_once()

    def check_once(self) -> None:
        """One round (``onWaitEnd``)."""
        cfg = self.broker.config
        self.service.check(cfg.transaction_time_out_ms, cfg.transaction_check_max, self.listener)
