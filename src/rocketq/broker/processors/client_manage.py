"""HEART_BEAT, UNREGISTER_CLIENT and CHECK_CLIENT_CONFIG.

Mirrors ``org.apache.rocketmq.broker.processor.ClientManageProcessor`` (4.9.7; reference
2.4 HEART_BEAT / UNREGISTER_CLIENT / CHECK_CLIENT_CONFIG).

Invariants:

* HEART_BEAT: per consumer group, find (or auto-create) the subscription group, create
  ``%RETRY%<group>`` (``retryQueueNums`` queues, perm RW, UNIT_SUB sys flag in unit mode)
  and register the channel with the request's clientID, ``language`` and ``version``;
  a change of channels or topics sends NOTIFY_CONSUMER_IDS_CHANGED to every channel of the
  group before the response (as the golden capture shows). Producer groups are registered
  per channel. The answer is SUCCESS without extFields or remark.
* UNREGISTER_CLIENT answers SUCCESS with ``"extFields":{}`` (a header class response).
* HEART_BEAT also registers each group's SQL92 subscriptions with the
  ``ConsumerFilterManager`` (Java does it on the REGISTER event every heartbeat fires).
* CHECK_CLIENT_CONFIG: TAG subscriptions pass; anything else needs
  ``enable_property_filter`` (else SYSTEM_ERROR: 4.9.7 has no FILTER_NOT_SUPPORTED code)
  and must compile (else SUBSCRIPTION_PARSE_FAILED with the compiler's message).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from rocketq.broker.clients import ClientChannelInfo
from rocketq.broker.processors import decode_request_header, header_response, plain_response
from rocketq.errors import RocketqError
from rocketq.filter import FilterParseError, compile_expression
from rocketq.protocol.bodies import CheckClientRequestBody
from rocketq.protocol.codes import PermName, RequestCode, ResponseCode, TopicSysFlag
from rocketq.protocol.frame import RemotingCommand
from rocketq.protocol.headers import UnregisterClientRequestHeader
from rocketq.protocol.heartbeat import (
    ConsumeFromWhere,
    ConsumeType,
    ExpressionType,
    HeartbeatData,
    MessageModel,
)
from rocketq.protocol.mixall import retry_topic
from rocketq.remoting.server import Channel

if TYPE_CHECKING:
    from rocketq.broker.broker import BrokerController

__all__ = ["ClientManageProcessor"]

log = logging.getLogger(__name__)

#: TopicSysFlag.buildSysFlag(false, true): FLAG_UNIT_SUB
_FLAG_UNIT_SUB = int(TopicSysFlag.FLAG_UNIT_SUB)


class ClientManageProcessor:
    """Serves HEART_BEAT (34), UNREGISTER_CLIENT (35) and CHECK_CLIENT_CONFIG (46)."""

    CODES = (RequestCode.HEART_BEAT, RequestCode.UNREGISTER_CLIENT, RequestCode.CHECK_CLIENT_CONFIG)

    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker

    def reject_request(self) -> bool:
        return False

    async def process(self, channel: Channel, request: RemotingCommand) -> RemotingCommand | None:
        code = request.code
        if code == RequestCode.HEART_BEAT:
            return self.heart_beat(channel, request)
        if code == RequestCode.UNREGISTER_CLIENT:
            return self.unregister_client(channel, request)
        if code == RequestCode.CHECK_CLIENT_CONFIG:
            return self.check_client_config(channel, request)
        return None

    # ------------------------------------------------------------------ HEART_BEAT
    def heart_beat(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        broker = self.broker
        try:
            data = HeartbeatData.from_json(request.body)
        except RocketqError as exc:
            return plain_response(request, ResponseCode.SYSTEM_ERROR, f"bad heartbeat body: {exc}")
        client_id = data.client_id or ""
        info = ClientChannelInfo(channel, client_id, request.language, request.version)
        for consumer in data.consumer_data_set:
            group = consumer.group_name
            if not group:
                continue
            sgc = broker.subscription_group_manager.find_subscription_group_config(group)
            notify = True
            if sgc is not None:
                notify = sgc.notify_consumer_ids_changed_enable
                sys_flag = _FLAG_UNIT_SUB if consumer.unit_mode else 0
                broker.topic_config_manager.create_topic_in_send_message_back_method(
                    retry_topic(group),
                    sgc.retry_queue_nums,
                    int(PermName.PERM_WRITE | PermName.PERM_READ),
                    sys_flag,
                )
            changed = broker.consumer_manager.register_consumer(
                group,
                ClientChannelInfo(channel, client_id, request.language, request.version),
                consumer.consume_type or ConsumeType.CONSUME_ACTIVELY,
                consumer.message_model or MessageModel.CLUSTERING,
                consumer.consume_from_where or ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET,
                consumer.subscription_data_set,
                notify,
            )
            broker.consumer_filter_manager.register_subscriptions(group, consumer.subscription_data_set)
            if changed:
                log.info(
                    "registered consumer group %s changed by %s (%s)", group, client_id, channel.remote_addr
                )
        for producer in data.producer_data_set:
            if producer.group_name:
                broker.producer_manager.register_producer(
                    producer.group_name, ClientChannelInfo(channel, client_id, info.language, info.version)
                )
        return plain_response(request, ResponseCode.SUCCESS)

    # ------------------------------------------------------------------ UNREGISTER_CLIENT
    def unregister_client(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        header = decode_request_header(request, UnregisterClientRequestHeader)
        if isinstance(header, RemotingCommand):
            return header
        broker = self.broker
        info = ClientChannelInfo(channel, header.client_id or "", request.language, request.version)
        if header.producer_group is not None:
            broker.producer_manager.unregister_producer(header.producer_group, info)
        if header.consumer_group is not None:
            sgc = broker.subscription_group_manager.find_subscription_group_config(header.consumer_group)
            notify = True if sgc is None else sgc.notify_consumer_ids_changed_enable
            broker.consumer_manager.unregister_consumer(header.consumer_group, channel, notify)
        # createResponseCommand(UnregisterClientResponseHeader.class): "extFields":{}
        return header_response(request)

    # ------------------------------------------------------------------ CHECK_CLIENT_CONFIG
    def check_client_config(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        try:
            body = CheckClientRequestBody.from_json(request.body) if request.body else None
        except RocketqError as exc:
            return plain_response(request, ResponseCode.SYSTEM_ERROR, f"bad body: {exc}")
        sub = body.subscription_data if body is not None else None
        if sub is not None:
            if ExpressionType.is_tag_type(sub.expression_type):
                return plain_response(request, ResponseCode.SUCCESS)
            if not self.broker.config.enable_property_filter:
                return plain_response(
                    request,
                    ResponseCode.SYSTEM_ERROR,
                    f"The broker does not support consumer to filter message by {sub.expression_type}",
                )
            try:
                compile_expression(sub.expression_type, sub.sub_string or "")
            except FilterParseError as exc:
                log.warning(
                    "client %s@%s filters by %r, which does not compile: %s",
                    body.client_id if body is not None else None,
                    body.group if body is not None else None,
                    sub.sub_string,
                    exc,
                )
                return plain_response(request, ResponseCode.SUBSCRIPTION_PARSE_FAILED, str(exc))
        return plain_response(request, ResponseCode.SUCCESS)
