"""Requests the broker sends to its clients over their own connections.

Mirrors ``org.apache.rocketmq.broker.client.net.Broker2Client`` (4.9.7):
NOTIFY_CONSUMER_IDS_CHANGED (oneway, header ``consumerGroup``) and the relay of a request
to one client (``callClient``, used by GET_CONSUMER_RUNNING_INFO / CONSUME_MESSAGE_DIRECTLY
forwarding).

Invariants: a failure to reach one client is logged and never raised into the caller's
path (Java catches and logs); :meth:`Broker2Client.notify_consumer_ids_changed` is
thread-safe (``Channel.invoke_oneway`` is).
"""

from __future__ import annotations

import logging

from rocketq.protocol.codes import RequestCode
from rocketq.protocol.frame import RemotingCommand
from rocketq.protocol.headers import NotifyConsumerIdsChangedRequestHeader
from rocketq.remoting.server import Channel

__all__ = ["Broker2Client"]

log = logging.getLogger(__name__)


class Broker2Client:
    """Broker -> client requests (``Broker2Client``)."""

    def notify_consumer_ids_changed(self, channel: Channel, consumer_group: str | None) -> None:
        """Send NOTIFY_CONSUMER_IDS_CHANGED (40) oneway to ``channel`` (``notifyConsumerIdsChanged``)."""
        if consumer_group is None:
            log.error("notify_consumer_ids_changed: consumer group is None")
            return
        header = NotifyConsumerIdsChangedRequestHeader(consumer_group=consumer_group)
        request = RemotingCommand.request(
            RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, header.to_ext_fields(), oneway=True
        )
        try:
            channel.invoke_oneway(request)
        except Exception:
            log.exception(
                "notify consumer ids changed to %s failed, group %s", channel.remote_addr, consumer_group
            )

    async def call_client(
        self, channel: Channel, request: RemotingCommand, timeout_ms: int
    ) -> RemotingCommand:
        """Forward ``request`` to the client and return its answer (``callClient``).

        Raises the remoting errors of ``Channel.invoke`` (timeout, closed channel).
        """
        return await channel.invoke(request, timeout_ms)
