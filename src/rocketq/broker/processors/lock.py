"""LOCK_BATCH_MQ (41) and UNLOCK_BATCH_MQ (42): orderly consumers' queue leases.

Mirrors the lock handling of ``AdminBrokerProcessor`` (``lockBatchMQ``/``unlockBatchMQ``):
the request body names the group, the client (lowercase ``clientId``) and the queues; the
lock answer lists the queues the client now holds (``{"lockOKMQSet":[...]}``), the unlock
answer is an empty SUCCESS (clients often send it oneway).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rocketq.errors import ProtocolError
from rocketq.protocol.bodies import LockBatchRequestBody, LockBatchResponseBody, UnlockBatchRequestBody
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frame import RemotingCommand
from rocketq.remoting.server import Channel

if TYPE_CHECKING:
    from rocketq.broker.locks import RebalanceLockManager

__all__ = ["LockBatchProcessor"]


class LockBatchProcessor:
    """Serves LOCK_BATCH_MQ and UNLOCK_BATCH_MQ from a :class:`RebalanceLockManager`."""

    def __init__(self, locks: RebalanceLockManager) -> None:
        self.locks = locks

    async def process(self, channel: Channel, request: RemotingCommand) -> RemotingCommand | None:
        try:
            if request.code == RequestCode.LOCK_BATCH_MQ:
                body = LockBatchRequestBody.from_json(request.body)
                granted = self.locks.try_lock_batch(
                    body.consumer_group or "", body.mq_set, body.client_id or ""
                )
                answer = LockBatchResponseBody(lock_ok_mq_set=sorted(granted))
                return request.make_response(ResponseCode.SUCCESS, body=answer.to_json())
            unlock = UnlockBatchRequestBody.from_json(request.body)
            self.locks.unlock_batch(unlock.consumer_group or "", unlock.mq_set, unlock.client_id or "")
            return request.make_response(ResponseCode.SUCCESS)
        except ProtocolError as exc:
            return request.make_response(ResponseCode.SYSTEM_ERROR, f"malformed lock request body: {exc}")
