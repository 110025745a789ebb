"""The trace hooks: ``SendMessageTraceHookImpl`` and ``ConsumeMessageTraceHookImpl``.

Mirrors ``org.apache.rocketmq.client.trace.hook`` (4.9.7):

* send: *before* builds a Pub context (group, topic, tags, keys, broker address, body
  length, message type); *after* fills msgId, offsetMsgId, region, cost time and success
  from the send result and queues it — only when the broker answered with a region and
  ``TRACE_ON`` not ``false``; sends to the trace topic itself are never traced.
* consume: *before* queues a SubBefore context of the batch's messages (skipping those
  whose ``TRACE_ON`` property is ``false``), *after* a SubAfter context with the same
  request id, success, the cost per message and the ``ConsumeReturnType`` ordinal.

Hooks only call :meth:`AsyncTraceDispatcher.append`, which never blocks.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from rocketq.client.consumer.listener import ConsumeMessageContext, ConsumeReturnType
from rocketq.client.send_message_hook import SendMessageContext
from rocketq.client.trace.trace_context import MessageType, TraceBean, TraceContext, TraceType
from rocketq.protocol.message import MessageConst

if TYPE_CHECKING:
    from rocketq.client.trace.async_trace_dispatcher import TraceDispatcher

__all__ = ["ConsumeMessageTraceHookImpl", "SendMessageTraceHookImpl"]

_RETURN_TYPE_ORDINAL = {t.name: i for i, t in enumerate(ConsumeReturnType)}


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class SendMessageTraceHookImpl:
    """``SendMessageTraceHookImpl``: Pub records of a producer's sends."""

    def __init__(self, dispatcher: TraceDispatcher) -> None:
        self.dispatcher = dispatcher

    def hook_name(self) -> str:
        return "SendMessageTraceHook"

    def send_message_before(self, context: SendMessageContext) -> None:
        if context.topic.startswith(self.dispatcher.trace_topic):
            return
        props = context.properties
        # DefaultMQProducerImpl.sendKernelImpl: a delay property wins over a half message
        msg_type = MessageType.Normal_Msg
        if props.get(MessageConst.PROPERTY_TRANSACTION_PREPARED) == "true":
            msg_type = MessageType.Trans_Msg_Half
        if (
            props.get("__STARTDELIVERTIME") is not None
            or props.get(MessageConst.PROPERTY_DELAY_TIME_LEVEL) is not None
        ):
            msg_type = MessageType.Delay_Msg
        bean = TraceBean(
            topic=context.topic,
            tags=props.get(MessageConst.PROPERTY_TAGS),
            keys=props.get(MessageConst.PROPERTY_KEYS),
            store_host=context.broker_addr,
            body_length=context.body_length,
            msg_type=msg_type,
        )
        context.mq_trace_context = TraceContext(
            TraceType.Pub, group_name=context.producer_group, trace_beans=[bean]
        )

    def send_message_after(self, context: SendMessageContext) -> None:
        ctx = context.mq_trace_context
        result = context.send_result
        if not isinstance(ctx, TraceContext) or result is None:
            return
        if context.topic.startswith(self.dispatcher.trace_topic):
            return
        if result.region_id is None or not result.trace_on:
            return
        bean = ctx.trace_beans[0]
        ctx.cost_time = (_now_ms() - ctx.time_stamp) // len(ctx.trace_beans)
        ctx.is_success = result.status.name == "SEND_OK"
        ctx.region_id = result.region_id
        bean.msg_id = result.msg_id
        bean.offset_msg_id = result.offset_msg_id
        bean.store_time = ctx.time_stamp + ctx.cost_time // 2
        self.dispatcher.append(ctx)


class ConsumeMessageTraceHookImpl:
    """``ConsumeMessageTraceHookImpl``: SubBefore/SubAfter records of a push consumer."""

    def __init__(self, dispatcher: TraceDispatcher) -> None:
        self.dispatcher = dispatcher

    def hook_name(self) -> str:
        return "ConsumeMessageTraceHook"

    def consume_message_before(self, context: ConsumeMessageContext) -> None:
        if not context.msg_list:
            return
        ctx = TraceContext(TraceType.SubBefore, group_name=context.consumer_group)
        context.mq_trace_context = ctx
        for msg in context.msg_list:
            if msg.get_property(MessageConst.PROPERTY_TRACE_SWITCH) == "false":
                continue
            ctx.region_id = msg.get_property(MessageConst.PROPERTY_MSG_REGION)
            ctx.trace_beans.append(
                TraceBean(
                    topic=msg.topic,
                    msg_id=msg.msg_id,
                    tags=msg.get_property(MessageConst.PROPERTY_TAGS),
                    keys=msg.get_property(MessageConst.PROPERTY_KEYS),
                    store_time=msg.store_timestamp,
                    body_length=msg.store_size,
                    retry_times=msg.reconsume_times,
                )
            )
        if ctx.trace_beans:
            ctx.time_stamp = _now_ms()
            self.dispatcher.append(ctx)

    def consume_message_after(self, context: ConsumeMessageContext) -> None:
        before = context.mq_trace_context
        if not context.msg_list or not isinstance(before, TraceContext) or not before.trace_beans:
            return
        after = TraceContext(
            TraceType.SubAfter,
            region_id=before.region_id,
            group_name=before.group_name,
            request_id=before.request_id,
            is_success=context.success,
            cost_time=(_now_ms() - before.time_stamp) // len(context.msg_list),
            trace_beans=before.trace_beans,
        )
        return_type = context.props.get("ConsumeContextType")
        if return_type is not None:
            after.context_code = _RETURN_TYPE_ORDINAL.get(return_type, 0)
        self.dispatcher.append(after)
