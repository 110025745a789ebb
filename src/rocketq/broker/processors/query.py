"""QUERY_MESSAGE (by key or unique key) and VIEW_MESSAGE_BY_ID (by commit-log offset).

Mirrors ``org.apache.rocketmq.broker.processor.QueryMessageProcessor``. Both answer with
raw stored records. Java writes their successful responses as zero-copy file regions,
encoded with the server's default serialize type (JSON) whatever the request used; rocketq
does the same (reference 1.7).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rocketq.broker.processors import decode_request_header
from rocketq.protocol.codes import RequestCode, ResponseCode, SerializeType
from rocketq.protocol.frame import RemotingCommand
from rocketq.protocol.headers import (
    QueryMessageRequestHeader,
    QueryMessageResponseHeader,
    ViewMessageRequestHeader,
)
from rocketq.remoting.server import Channel

if TYPE_CHECKING:
    from rocketq.broker.broker import BrokerController

__all__ = ["UNIQUE_KEY_QUERY", "QueryMessageProcessor"]

#: ``MixAll.UNIQUE_MSG_QUERY_FLAG``: an extField that is not part of the header class.
UNIQUE_KEY_QUERY = "_UNIQUE_KEY_QUERY"


class QueryMessageProcessor:
    """Serves QUERY_MESSAGE (12) and VIEW_MESSAGE_BY_ID (33)."""

    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker

    async def process(self, channel: Channel, request: RemotingCommand) -> RemotingCommand | None:
        if request.code == RequestCode.VIEW_MESSAGE_BY_ID:
            return self._view_message_by_id(request)
        return self._query_message(request)

    def _query_message(self, request: RemotingCommand) -> RemotingCommand:
        header = decode_request_header(request, QueryMessageRequestHeader)
        if isinstance(header, RemotingCommand):
            return header
        max_num = int(header.max_num or 0)
        if request.ext(UNIQUE_KEY_QUERY) == "true":
            max_num = self.broker.store.config.default_query_max_num
        result = self.broker.store.query_message(
            str(header.topic),
            str(header.key),
            max_num,
            int(header.begin_timestamp or 0),
            int(header.end_timestamp or 0),
        )
        response_header = QueryMessageResponseHeader(
            index_last_update_timestamp=result.index_last_update_timestamp,
            index_last_update_phyoffset=result.index_last_update_phyoffset,
        )
        body = b"".join(bytes(b) for b in result.buffers)
        if body:
            response = request.make_response(
                ResponseCode.SUCCESS, None, response_header.to_ext_fields(), body
            )
            response.serialize_type = SerializeType.JSON
            return response
        return request.make_response(
            ResponseCode.QUERY_NOT_FOUND,
            "can not find message, maybe time range not correct",
            response_header.to_ext_fields(),
        )

    def _view_message_by_id(self, request: RemotingCommand) -> RemotingCommand:
        header = ViewMessageRequestHeader.from_ext_fields(request.ext_fields)
        offset = int(header.offset) if header.offset is not None else -1
        raw = self.broker.store.select_one_message_by_offset(offset) if offset >= 0 else None
        if raw is None:
            return request.make_response(
                ResponseCode.SYSTEM_ERROR, f"can not find message by the offset, {offset}"
            )
        response = request.make_response(ResponseCode.SUCCESS, None, None, bytes(raw))
        response.serialize_type = SerializeType.JSON
        return response
