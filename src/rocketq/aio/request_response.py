"""The pending requests of one asyncio client: correlation id -> the reply's future.

The asyncio counterpart of :class:`rocketq.client.request_response.RequestFutureHolder`
(Java's ``RequestFutureHolder`` and ``ClientRemotingProcessor.receiveReplyMessage``). The
stamping of a request, the decoding of a PUSH_REPLY_MESSAGE_TO_CLIENT and the errors are the
blocking client's own (:mod:`rocketq.client.request_response`); only the waiting differs.

Invariants:

* A request waits on an :class:`asyncio.Future` of the loop with its own deadline, so no
  housekeeping task is needed: whoever awaits the future removes its entry when it stops
  waiting (reply, timeout, failed send or cancellation), so the table never keeps a request
  nobody waits for.
* A reply with no pending request (late, or crossed from another process) is logged and
  dropped, never handed to another request.
* :meth:`AsyncRequestFutureHolder.close` fails every pending request with
  :class:`~rocketq.errors.ClientError`.
"""

from __future__ import annotations

import asyncio
import logging

from rocketq.client.request_response import decode_reply_push
from rocketq.errors import ClientError
from rocketq.protocol.codes import ResponseCode
from rocketq.protocol.frame import RemotingCommand
from rocketq.protocol.message import Message, MessageConst

__all__ = ["AsyncRequestFutureHolder"]

log = logging.getLogger(__name__)


class AsyncRequestFutureHolder:
    """Correlation id -> reply future, on one loop (``RequestFutureHolder``)."""

    def __init__(self) -> None:
        self._table: dict[str, asyncio.Future[Message]] = {}

    def __len__(self) -> int:
        return len(self._table)

    def put(self, correlation_id: str) -> asyncio.Future[Message]:
        """Register a request; its future gets the reply."""
        fut: asyncio.Future[Message] = asyncio.get_running_loop().create_future()
        self._table[correlation_id] = fut
        return fut

    def remove(self, correlation_id: str) -> None:
        self._table.pop(correlation_id, None)

    def process_reply_message(self, reply: Message, born_host: str) -> bool:
        """Complete the request with the reply's correlation id; False when none waits."""
        cid = reply.properties.get(MessageConst.CORRELATION_ID, "")
        fut = self._table.pop(cid, None)
        if fut is None or fut.done():
            log.warning(
                "receive reply message, but not matched any request, CorrelationId: %s , reply from host: %s",
                cid,
                born_host,
            )
            return False
        fut.set_result(reply)
        return True

    def receive_reply_message(self, request: RemotingCommand) -> RemotingCommand:
        """PUSH_REPLY_MESSAGE_TO_CLIENT (326): SUCCESS, or SYSTEM_ERROR for an unreadable push
        (``ClientRemotingProcessor.receiveReplyMessage``)."""
        try:
            reply, born_host = decode_reply_push(request)
        except Exception:
            log.warning("unknown err when receiveReplyMsg", exc_info=True)
            return request.make_response(ResponseCode.SYSTEM_ERROR, "process reply message fail")
        self.process_reply_message(reply, born_host)
        return request.make_response(ResponseCode.SUCCESS, None)

    def close(self) -> None:
        """Fail every pending request (the client is shutting down)."""
        pending, self._table = self._table, {}
        for fut in pending.values():
            if not fut.done():
                fut.set_exception(ClientError("the client instance was shut down before the reply came"))
