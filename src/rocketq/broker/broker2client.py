"""Requests the broker sends to its clients over their own connections.

Mirrors ``org.apache.rocketmq.broker.client.net.Broker2Client`` (4.9.7):
NOTIFY_CONSUMER_IDS_CHANGED (oneway, header ``consumerGroup``), the relay of a request
to one client (``callClient``, used by GET_CONSUMER_RUNNING_INFO / CONSUME_MESSAGE_DIRECTLY
forwarding), the online offset reset (``resetOffset``: INVOKE_BROKER_TO_RESET_OFFSET 222
computes the offsets and pushes RESET_CONSUMER_CLIENT_OFFSET 220 oneway to every live
client of the group) and ``getConsumeStatus`` (INVOKE_BROKER_TO_GET_CONSUMER_STATUS 223:
GET_CONSUMER_STATUS_FROM_CLIENT 221 to each client, answers gathered by client id).

Invariants: a failure to reach one client is logged and never raised into the caller's
path (Java catches and logs); :meth:`Broker2Client.notify_consumer_ids_changed` is
thread-safe (``Channel.invoke_oneway`` is). The reset and status answers are built like
Java's ``createResponseCommand(null)``: no extFields, ``ResetOffsetBody`` /
``GetConsumerStatusBody`` with bare MessageQueue keys (reference section 9).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from rocketq.protocol.bodies import GetConsumerStatusBody, ResetOffsetBody
from rocketq.protocol.codes import RequestCode, ResponseCode, Version
from rocketq.protocol.frame import RemotingCommand
from rocketq.protocol.headers import (
    GetConsumerStatusRequestHeader,
    NotifyConsumerIdsChangedRequestHeader,
    ResetOffsetRequestHeader,
)
from rocketq.protocol.message_queue import MessageQueue
from rocketq.remoting.server import Channel

if TYPE_CHECKING:
    from rocketq.broker.broker import BrokerController

__all__ = ["Broker2Client"]

log = logging.getLogger(__name__)

#: Broker2Client: invokeOneway(..., 5000) for the reset, invokeSync(..., 5000) for the status
_CLIENT_TIMEOUT_MS = 5000


def _version_desc(version: int) -> str:
    """``MQVersion.getVersionDesc``."""
    try:
        return Version(version).name
    except ValueError:
        return f"V{version}"


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

    # ------------------------------------------------------------------ reset offset (222 -> 220)
    def reset_offset(
        self,
        broker: BrokerController,
        request: RemotingCommand,
        topic: str,
        group: str,
        timestamp: int,
        is_force: bool,
    ) -> RemotingCommand:
        """``Broker2Client.resetOffset``: compute the group's new offsets and push them.

        For each write queue of the topic: the offset at ``timestamp`` (``-1`` = the max
        offset), kept only if ``is_force`` or it rewinds the committed offset. Errors are
        Java's: unknown topic / group without an offset -> SYSTEM_ERROR, no live client ->
        CONSUMER_NOT_ONLINE (the admin then falls back to the offline reset). The answer
        carries the table (``ResetOffsetBody``); live clients get it oneway (code 220).
        Returns the response to ``request``.
        """
        tc = broker.topic_config_manager.select_topic_config(topic)
        if tc is None:
            return _answer(
                request,
                ResponseCode.SYSTEM_ERROR,
                f"[reset-offset] reset offset failed, no topic in this broker. topic={topic}",
            )
        store = broker.store
        broker_name = broker.config.broker_name
        table: dict[MessageQueue, int] = {}
        for qid in range(tc.write_queue_nums):
            consumer_offset = broker.consumer_offset_manager.query_offset(group, topic, qid)
            if consumer_offset == -1:
                # sic: "THe" is Java's spelling
                return _answer(request, ResponseCode.SYSTEM_ERROR, f"THe consumer group <{group}> not exist")
            if timestamp == -1:
                target = store.get_max_offset_in_queue(topic, qid)
            else:
                target = store.get_offset_in_queue_by_time(topic, qid, timestamp)
            if target < 0:
                log.warning("reset offset is invalid. topic=%s, queueId=%d, offset=%d", topic, qid, target)
                target = 0
            mq = MessageQueue(topic, broker_name, qid)
            table[mq] = target if is_force or target < consumer_offset else consumer_offset
        # Java builds the pushed header without isForce (false on the wire)
        header = ResetOffsetRequestHeader(topic=topic, group=group, timestamp=timestamp)
        body = ResetOffsetBody(offset_table=table).to_json()
        info = broker.consumer_manager.get_consumer_group_info(group)
        clients = list(info.channels.values()) if info is not None else []
        if not clients:
            return _answer(
                request,
                ResponseCode.CONSUMER_NOT_ONLINE,
                f"Consumer not online, so can not reset offset, Group: {group} Topic: {topic} "
                f"Timestamp: {timestamp}",
            )
        for cci in clients:
            if cci.version < Version.V3_0_7_SNAPSHOT:
                return _answer(
                    request,
                    ResponseCode.SYSTEM_ERROR,
                    f"the client does not support this feature. version={_version_desc(cci.version)}",
                )
            push = RemotingCommand.request(
                RequestCode.RESET_CONSUMER_CLIENT_OFFSET, header.to_ext_fields(), body
            )
            try:
                cci.channel.invoke_oneway(push)
                log.info(
                    "[reset-offset] reset offset success. topic=%s, group=%s, clientId=%s",
                    topic,
                    group,
                    cci.client_id,
                )
            except Exception as exc:
                log.error(
                    "[reset-offset] reset offset exception. topic=%s, group=%s, error=%s", topic, group, exc
                )
        return _answer(request, ResponseCode.SUCCESS, None, body)

    # ------------------------------------------------------------------ consumer status (223 -> 221)
    async def get_consume_status(
        self,
        broker: BrokerController,
        request: RemotingCommand,
        topic: str,
        group: str,
        origin_client_id: str | None,
    ) -> RemotingCommand:
        """``Broker2Client.getConsumeStatus``: each client's offsets of ``topic``, by client id.

        Asks every live client (or only ``origin_client_id``) with
        GET_CONSUMER_STATUS_FROM_CLIENT; a client that fails or does not answer SUCCESS is
        logged and left out, as in Java.
        """
        info = broker.consumer_manager.get_consumer_group_info(group)
        clients = list(info.channels.values()) if info is not None else []
        if not clients:
            return _answer(
                request, ResponseCode.SYSTEM_ERROR, f"No Any Consumer online in the consumer group: [{group}]"
            )
        header = GetConsumerStatusRequestHeader(topic=topic, group=group)
        table: dict[str, dict[MessageQueue, int]] = {}
        for cci in clients:
            if cci.version < Version.V3_0_7_SNAPSHOT:
                return _answer(
                    request,
                    ResponseCode.SYSTEM_ERROR,
                    f"the client does not support this feature. version={_version_desc(cci.version)}",
                )
            if origin_client_id and origin_client_id != cci.client_id:
                continue
            ask = RemotingCommand.request(RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT, header.to_ext_fields())
            try:
                answer = await cci.channel.invoke(ask, _CLIENT_TIMEOUT_MS)
                if answer.code == ResponseCode.SUCCESS and answer.body:
                    status = GetConsumerStatusBody.from_json(answer.body)
                    table[cci.client_id] = dict(status.message_queue_table)
                else:
                    log.warning(
                        "[get-consumer-status] %s answered %d %s", cci.client_id, answer.code, answer.remark
                    )
            except Exception as exc:
                log.error(
                    "[get-consumer-status] get consumer status exception. topic=%s, group=%s, error=%s",
                    topic,
                    group,
                    exc,
                )
            if origin_client_id:
                break
        body = GetConsumerStatusBody(consumer_table=table).to_json()
        return _answer(request, ResponseCode.SUCCESS, None, body)


def _answer(request: RemotingCommand, code: int, remark: str | None, body: bytes = b"") -> RemotingCommand:
    """``createResponseCommand(null)`` + ``setCode``/``setRemark``/``setBody``: no extFields."""
    return request.make_response(int(code), remark, None, body)
