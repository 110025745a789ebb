"""Callbacks around every send attempt: ``SendMessageHook`` and ``SendMessageContext``.

Mirrors ``org.apache.rocketmq.client.hook.SendMessageHook`` / ``SendMessageContext``
(4.9.7). ``Producer.register_send_message_hook`` adds one; the producer calls
``send_message_before`` just before a request goes to a broker and ``send_message_after``
once its answer (or error) is known — for async sends on the client's callback thread,
for oneway sends right after the write (without a result). A hook that raises is logged
and skipped; it never fails the send. Hooks must be quick: they run on the send path.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from rocketq.client.api_results import SendResult
from rocketq.client.send_prep import PreparedSend
from rocketq.protocol.message import decode_properties
from rocketq.protocol.message_queue import MessageQueue

__all__ = ["SendMessageContext", "SendMessageHook", "hooks_after", "hooks_before", "run_send_hooks"]

log = logging.getLogger(__name__)


@dataclass(slots=True)
class SendMessageContext:
    """What send hooks see: the message as sent to ``broker_addr`` and, after, the outcome."""

    producer_group: str
    topic: str
    properties: dict[str, str]
    body_length: int
    broker_addr: str
    broker_name: str
    send_result: SendResult | None = None
    exception: BaseException | None = None
    #: a hook's own state between before and after (Java's ``mqTraceContext``)
    mq_trace_context: object = None
    props: dict[str, str] = field(default_factory=dict)


class SendMessageHook(Protocol):
    """Before/after callbacks around each send attempt (``SendMessageHook``)."""

    def hook_name(self) -> str: ...

    def send_message_before(self, context: SendMessageContext) -> None: ...

    def send_message_after(self, context: SendMessageContext) -> None: ...


def run_send_hooks(hooks: Sequence[SendMessageHook], ctx: SendMessageContext, *, before: bool) -> None:
    """``executeSendMessageHookBefore/After``: a failing hook is logged and skipped."""
    for hook in hooks:
        try:
            if before:
                hook.send_message_before(ctx)
            else:
                hook.send_message_after(ctx)
        except Exception:
            log.exception("send hook %s failed", hook.hook_name())


def hooks_before(
    hooks: Sequence[SendMessageHook], group: str, prep: PreparedSend, mq: MessageQueue, addr: str
) -> SendMessageContext | None:
    """``executeSendMessageHookBefore`` for one attempt; None (nothing to do after) without
    hooks. Shared by the blocking and the asyncio producer."""
    if not hooks:
        return None
    ctx = SendMessageContext(
        producer_group=group,
        topic=prep.topic,
        properties=decode_properties(prep.properties),
        body_length=len(prep.body),
        broker_addr=addr,
        broker_name=mq.broker_name,
    )
    run_send_hooks(hooks, ctx, before=True)
    return ctx


def hooks_after(
    hooks: Sequence[SendMessageHook],
    ctx: SendMessageContext | None,
    result: SendResult | None,
    exc: BaseException | None,
) -> None:
    """``executeSendMessageHookAfter`` with the attempt's outcome (nothing when ``ctx`` is None)."""
    if ctx is None:
        return
    ctx.send_result = result
    ctx.exception = exc
    run_send_hooks(hooks, ctx, before=False)
