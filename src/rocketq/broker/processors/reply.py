"""SEND_REPLY_MESSAGE / SEND_REPLY_MESSAGE_V2: hand a reply to the client that asked.

Mirrors ``org.apache.rocketmq.broker.processor.ReplyMessageProcessor`` (4.9.7).

* The header is the send header (V1 for 324, V2 for 325) and goes through the send checks
  (``msgCheck``); a negative queue id becomes a random writable one.
* The reply is pushed with PUSH_REPLY_MESSAGE_TO_CLIENT (326, two-way, 10 s) over the
  connection of the producer whose client id is the reply's ``REPLY_TO_CLIENT`` (the
  requester registered it with its heartbeat). The pushed properties gain
  ``PUSH_REPLY_TIME``; the header adds the born host (the replier's address), this broker's
  address and the push time.
* The answer is SUCCESS with msgId ``"0"`` and queue offset 0 once the push succeeded, else
  SYSTEM_ERROR with Java's remark. With ``storeReplyMessageEnable`` (default) the reply is
  also stored in its topic with the replier's property string unchanged, and a stored
  reply's answer names its real msgId and offset; a failed store is only logged.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from rocketq.broker.processors.send import SendMessageProcessor
from rocketq.broker.store import MessageExtBrokerInner, PutMessageStatus
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frame import RemotingCommand
from rocketq.protocol.headers import (
    ReplyMessageRequestHeader,
    SendMessageRequestHeader,
    SendMessageRequestHeaderV2,
    SendMessageResponseHeader,
)
from rocketq.protocol.message import MessageConst, decode_properties, encode_properties, tags_code
from rocketq.remoting.helper import parse_addr
from rocketq.remoting.server import Channel

if TYPE_CHECKING:
    from rocketq.broker.broker import BrokerController

__all__ = ["ReplyMessageProcessor"]

log = logging.getLogger(__name__)

#: Broker2Client.callClient: invokeSync(channel, request, 10000)
_PUSH_TIMEOUT_MS = 10_000
_STORED_OK = frozenset(
    {
        PutMessageStatus.PUT_OK,
        PutMessageStatus.FLUSH_DISK_TIMEOUT,
        PutMessageStatus.FLUSH_SLAVE_TIMEOUT,
        PutMessageStatus.SLAVE_NOT_AVAILABLE,
    }
)


def _wall_ms() -> int:
    return time.time_ns() // 1_000_000


class ReplyMessageProcessor(SendMessageProcessor):
    """Serves SEND_REPLY_MESSAGE (324) and SEND_REPLY_MESSAGE_V2 (325)."""

    def __init__(self, broker: BrokerController) -> None:
        super().__init__(broker)

    async def process(self, channel: Channel, request: RemotingCommand) -> RemotingCommand | None:
        checked = self._decode_and_check(channel, request, request.code == RequestCode.SEND_REPLY_MESSAGE)
        if isinstance(checked, RemotingCommand):
            return checked
        header, queue_id = checked
        broker = self.broker
        props_string = header.properties or ""
        props = decode_properties(props_string)
        code, remark = await self._push_reply(channel, header, props, request.body)
        response = self._response(request, code, remark)
        reply_header = SendMessageResponseHeader()
        if code == ResponseCode.SUCCESS:
            # "set to zero to avoid client decoding exception"
            reply_header = SendMessageResponseHeader(msg_id="0", queue_id=queue_id, queue_offset=0)
        if broker.config.store_reply_message_enable:
            inner = MessageExtBrokerInner(
                topic=str(header.topic),
                queue_id=queue_id,
                body=request.body,
                flag=int(header.flag or 0),
                properties_string=props_string,
                tags_code=tags_code(props.get(MessageConst.TAGS)),
                born_timestamp=int(header.born_timestamp or 0),
                born_host=parse_addr(channel.remote_addr),
                store_host=broker.store_host,
                reconsume_times=int(header.reconsume_times or 0),
            )
            result = broker.store.put_message(inner)
            if result.status in _STORED_OK and result.append is not None:
                broker.stats.inc_topic_put(inner.topic, 1, len(request.body))
                reply_header = SendMessageResponseHeader(
                    msg_id=result.append.msg_id, queue_id=queue_id, queue_offset=result.append.logics_offset
                )
            else:
                log.warning("storing the reply to %s failed: %s", header.topic, result.status.name)
        response.ext_fields = reply_header.to_ext_fields(
            response.ext_fields, serialize_type=request.serialize_type
        )
        return response

    async def _push_reply(
        self,
        channel: Channel,
        header: SendMessageRequestHeader | SendMessageRequestHeaderV2,
        props: dict[str, str],
        body: bytes,
    ) -> tuple[int, str | None]:
        """``pushReplyMessage`` + ``handlePushReplyResult``: (response code, remark)."""
        broker = self.broker
        sender = props.get(MessageConst.REPLY_TO_CLIENT)
        if sender is None:
            log.warning("%s is null, can not reply message", MessageConst.REPLY_TO_CLIENT)
            return (
                ResponseCode.SYSTEM_ERROR,
                f"reply message properties[{MessageConst.REPLY_TO_CLIENT}] is null",
            )
        target = broker.producer_manager.find_channel(sender)
        if target is None:
            remark = f"push reply message fail, channel of <{sender}> not found."
            log.warning(remark)
            return ResponseCode.SYSTEM_ERROR, remark
        pushed = dict(props)
        pushed[MessageConst.PUSH_REPLY_TIME] = str(_wall_ms())
        push_header = ReplyMessageRequestHeader(
            producer_group=header.producer_group,
            topic=header.topic,
            default_topic=header.default_topic,
            default_topic_queue_nums=header.default_topic_queue_nums,
            queue_id=header.queue_id,
            sys_flag=header.sys_flag,
            born_timestamp=header.born_timestamp,
            flag=header.flag,
            properties=encode_properties(pushed, java_order=True),
            reconsume_times=header.reconsume_times,
            unit_mode=header.unit_mode,
            born_host=channel.remote_addr,
            store_host=broker.broker_addr,
            store_timestamp=_wall_ms(),
        )
        push = RemotingCommand.request(
            RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT, push_header.to_ext_fields(), body
        )
        failed = ResponseCode.SYSTEM_ERROR, f"push reply message to {sender}fail."  # sic: no space
        try:
            answer = await broker.broker2client.call_client(target, push, _PUSH_TIMEOUT_MS)
        except Exception as exc:
            log.warning("push reply message to <%s> failed: %s", sender, exc)
            return failed
        if answer.code != ResponseCode.SUCCESS:
            log.warning("push reply message to <%s> answered %d: %s", sender, answer.code, answer.remark)
            return failed
        return ResponseCode.SUCCESS, None
