"""GET_CONSUMER_LIST_BY_GROUP, UPDATE_CONSUMER_OFFSET and QUERY_CONSUMER_OFFSET.

Mirrors ``org.apache.rocketmq.broker.processor.ConsumerManageProcessor`` (4.9.7; reference
2.4 and 6.4).

Invariants:

* GET_CONSUMER_LIST_BY_GROUP answers ``{"consumerIdList":[...]}`` with ``"extFields":{}``,
  or SYSTEM_ERROR ``"no consumer for this group, <group>"`` when the group has no live
  channel.
* QUERY_CONSUMER_OFFSET: a stored offset -> SUCCESS; none stored -> SUCCESS with 0 when the
  queue's min offset is <= 0 and offset 0 is not "in disk"
  (``store.check_in_disk_by_consume_offset``: golden caveat 7, a young store always says
  "in memory"); otherwise QUERY_NOT_FOUND "Not found, V3_0_6_SNAPSHOT maybe this group
  consumer boot first".
* UPDATE_CONSUMER_OFFSET commits the offset (the client host is the channel's peer) and
  answers SUCCESS with ``"extFields":{}`` unless the request was oneway.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rocketq.broker.processors import decode_request_header, header_response
from rocketq.protocol.bodies import GetConsumerListByGroupResponseBody
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frame import RemotingCommand
from rocketq.protocol.headers import (
    GetConsumerListByGroupRequestHeader,
    QueryConsumerOffsetRequestHeader,
    QueryConsumerOffsetResponseHeader,
    UpdateConsumerOffsetRequestHeader,
)
from rocketq.remoting.server import Channel

if TYPE_CHECKING:
    from rocketq.broker.broker import BrokerController

__all__ = ["ConsumerManageProcessor"]


class ConsumerManageProcessor:
    """Serves GET_CONSUMER_LIST_BY_GROUP (38), UPDATE_CONSUMER_OFFSET (15), QUERY_CONSUMER_OFFSET (14)."""

    CODES = (
        RequestCode.GET_CONSUMER_LIST_BY_GROUP,
        RequestCode.UPDATE_CONSUMER_OFFSET,
        RequestCode.QUERY_CONSUMER_OFFSET,
    )

    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker

    def reject_request(self) -> bool:
        return False

    async def process(self, channel: Channel, request: RemotingCommand) -> RemotingCommand | None:
        code = request.code
        if code == RequestCode.GET_CONSUMER_LIST_BY_GROUP:
            return self.get_consumer_list_by_group(channel, request)
        if code == RequestCode.UPDATE_CONSUMER_OFFSET:
            return self.update_consumer_offset(channel, request)
        if code == RequestCode.QUERY_CONSUMER_OFFSET:
            return self.query_consumer_offset(channel, request)
        return None

    def get_consumer_list_by_group(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        header = decode_request_header(request, GetConsumerListByGroupRequestHeader)
        if isinstance(header, RemotingCommand):
            return header
        group = header.consumer_group or ""
        info = self.broker.consumer_manager.get_consumer_group_info(group)
        if info is not None:
            ids = info.get_all_client_ids()
            if ids:
                body = GetConsumerListByGroupResponseBody(consumer_id_list=ids).to_json()
                return header_response(request, body=body)
        # createResponseCommand(GetConsumerListByGroupResponseHeader.class) -> extFields {}
        return header_response(
            request, code=ResponseCode.SYSTEM_ERROR, remark=f"no consumer for this group, {group}"
        )

    def update_consumer_offset(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        header = decode_request_header(request, UpdateConsumerOffsetRequestHeader)
        if isinstance(header, RemotingCommand):
            return header
        assert header.consumer_group is not None
        assert header.topic is not None
        assert header.queue_id is not None
        assert header.commit_offset is not None
        self.broker.consumer_offset_manager.commit_offset(
            channel.remote_addr, header.consumer_group, header.topic, header.queue_id, header.commit_offset
        )
        return header_response(request)

    def query_consumer_offset(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        header = decode_request_header(request, QueryConsumerOffsetRequestHeader)
        if isinstance(header, RemotingCommand):
            return header
        assert header.consumer_group is not None
        assert header.topic is not None
        assert header.queue_id is not None
        broker = self.broker
        offset = broker.consumer_offset_manager.query_offset(
            header.consumer_group, header.topic, header.queue_id
        )
        if offset >= 0:
            return header_response(request, QueryConsumerOffsetResponseHeader(offset=offset))
        store = broker.store
        min_offset = store.get_min_offset_in_queue(header.topic, header.queue_id)
        # ConsumerManageProcessor.queryConsumerOffset: a young queue whose first message is
        # still in memory answers SUCCESS 0 instead of QUERY_NOT_FOUND (golden caveat 7).
        if min_offset <= 0 and not store.check_in_disk_by_consume_offset(header.topic, header.queue_id, 0):
            return header_response(request, QueryConsumerOffsetResponseHeader(offset=0))
        return header_response(
            request,
            code=ResponseCode.QUERY_NOT_FOUND,
            remark="Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first",
        )
