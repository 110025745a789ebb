"""AsyncMQClientAPI: one awaitable method per remoting RPC the asyncio client makes.

The asyncio counterpart of :class:`rocketq.client.impl.mq_client_api.MQClientAPI` (Java's ``MQClientAPIImpl``)
over :class:`~rocketq.aio.remoting.AsyncRemotingClient`. Frames are built from the same
declarative headers and bodies, and answers are read by the sync client's own response
processors (``process_send_response``, ``check_response``; pull answers by
``pull_api_wrapper.pull_result_of``, which hands anything unusual to ``process_pull_response``),
so both clients put identical bytes on the wire and map codes to results and errors identically.

Invariants: as :mod:`rocketq.client.impl.mq_client_api` — a non-success code raises
:class:`~rocketq.errors.BrokerError` except where Java maps codes to statuses; transport
failures raise :class:`~rocketq.errors.RemotingError` subclasses; a request that raised
:class:`~rocketq.errors.RequestTimeoutError` may still have been executed. Name servers: one is
chosen (random start) and kept while it works; a connect failure moves to the next one.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Iterable, Sequence

from rocketq.aio.remoting import AsyncRemotingClient
from rocketq.client.api_results import PullResult, SendResult
from rocketq.client.impl.mq_client_api import MQClientAPI, check_response, send_request_command
from rocketq.client.impl.pull_api_wrapper import pull_result_of
from rocketq.errors import ClientError, ConnectError, RemotingError
from rocketq.protocol.bodies import (
    GetConsumerListByGroupResponseBody,
    LockBatchRequestBody,
    LockBatchResponseBody,
    UnlockBatchRequestBody,
)
from rocketq.protocol.codes import LanguageCode, RequestCode, ResponseCode, SerializeType
from rocketq.protocol.frame import RemotingCommand
from rocketq.protocol.headers import (
    CommandHeader,
    ConsumerSendMsgBackRequestHeader,
    EndTransactionRequestHeader,
    GetConsumerListByGroupRequestHeader,
    GetMaxOffsetRequestHeader,
    GetMaxOffsetResponseHeader,
    GetMinOffsetRequestHeader,
    GetMinOffsetResponseHeader,
    GetRouteInfoRequestHeader,
    PullMessageRequestHeader,
    QueryConsumerOffsetRequestHeader,
    QueryConsumerOffsetResponseHeader,
    SearchOffsetRequestHeader,
    SearchOffsetResponseHeader,
    SendMessageRequestHeader,
    UnregisterClientRequestHeader,
    UpdateConsumerOffsetRequestHeader,
)
from rocketq.protocol.heartbeat import HeartbeatData
from rocketq.protocol.message import MessageExt
from rocketq.protocol.message_queue import MessageQueue
from rocketq.protocol.route import TopicRouteData

__all__ = ["AsyncMQClientAPI"]

log = logging.getLogger(__name__)


class AsyncMQClientAPI:
    """Typed awaitable RPCs over one :class:`AsyncRemotingClient` (``MQClientAPIImpl``)."""

    def __init__(
        self,
        remoting: AsyncRemotingClient,
        namesrv_addrs: Sequence[str],
        *,
        language: int = LanguageCode.PYTHON,
        serialize_type: int = SerializeType.JSON,
    ) -> None:
        self.remoting = remoting
        self.language = int(language)
        self.serialize_type = int(serialize_type)
        self._namesrv_addrs = list(namesrv_addrs)
        self._namesrv_index = random.randrange(997)
        self._chosen_namesrv: str | None = None

    # ================================================================== plumbing
    def request(self, code: int, header: CommandHeader | None = None, body: bytes = b"") -> RemotingCommand:
        """A request command (``RemotingCommand.createRequestCommand``)."""
        ext = None if header is None else header.to_ext_fields(serialize_type=self.serialize_type)
        return RemotingCommand(
            code=code, language=self.language, ext_fields=ext, body=body, serialize_type=self.serialize_type
        )

    async def invoke_checked(
        self, addr: str, code: int, header: CommandHeader | None, timeout_ms: int, body: bytes = b""
    ) -> RemotingCommand:
        response = await self.remoting.invoke(addr, self.request(code, header, body), timeout_ms)
        return check_response(response, addr)

    async def invoke_namesrv(self, request: RemotingCommand, timeout_ms: int) -> RemotingCommand:
        """Send to the chosen name server; on a connect failure try the next ones."""
        addrs = self._namesrv_addrs
        if not addrs:
            raise ClientError("no name server address is configured")
        chosen = self._chosen_namesrv
        if chosen not in addrs:
            # NettyRemotingClient.getAndCreateNameserverChannel: round robin from a random start
            chosen = addrs[self._namesrv_index % len(addrs)]
            self._namesrv_index += 1
        start = addrs.index(chosen)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_ms / 1000.0
        last: RemotingError | None = None
        for addr in addrs[start:] + addrs[:start]:
            remaining = int((deadline - loop.time()) * 1000)
            if remaining <= 0:
                break
            try:
                response = await self.remoting.invoke(addr, request, remaining)
            except ConnectError as exc:
                last = exc
                self._chosen_namesrv = None
                log.warning("name server %s unreachable: %s", addr, exc)
                continue
            self._chosen_namesrv = addr
            return response
        if last is not None:
            raise ConnectError(f"no name server reachable ({last})")
        raise ConnectError("no name server reachable within the timeout")

    # ================================================================== name server
    async def get_topic_route(self, topic: str, timeout_ms: int) -> TopicRouteData | None:
        """GET_ROUTEINFO_BY_TOPIC (105); ``None`` when the topic does not exist (code 17)."""
        request = self.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, GetRouteInfoRequestHeader(topic=topic))
        response = await self.invoke_namesrv(request, timeout_ms)
        if response.code == ResponseCode.TOPIC_NOT_EXIST:
            return None
        check_response(response, None)
        return TopicRouteData.from_json(response.body) if response.body else None

    # ================================================================== send
    def send_request(
        self, header: SendMessageRequestHeader, body: bytes, *, batch: bool = False
    ) -> RemotingCommand:
        """SEND_MESSAGE_V2 (310), SEND_BATCH_MESSAGE (320) or, for a reply message,
        SEND_REPLY_MESSAGE_V2 (325), with the V2 header (``sendMessage``): the blocking
        client's own builder (:func:`~rocketq.client.impl.mq_client_api.send_request_command`)."""
        return send_request_command(
            header, body, batch=batch, language=self.language, serialize_type=self.serialize_type
        )

    async def send_message(
        self,
        addr: str,
        broker_name: str,
        header: SendMessageRequestHeader,
        body: bytes,
        uniq_msg_id: str,
        timeout_ms: int,
        *,
        batch: bool = False,
    ) -> SendResult:
        """One send attempt (no retries: the producer owns those)."""
        response = await self.remoting.invoke(addr, self.send_request(header, body, batch=batch), timeout_ms)
        return MQClientAPI.process_send_response(
            broker_name, header.topic or "", header.queue_id or 0, uniq_msg_id, response, addr
        )

    async def send_message_oneway(
        self, addr: str, header: SendMessageRequestHeader, body: bytes, *, batch: bool = False
    ) -> None:
        await self.remoting.invoke_oneway(addr, self.send_request(header, body, batch=batch))

    async def end_transaction_oneway(
        self, addr: str, header: EndTransactionRequestHeader, remark: str | None
    ) -> None:
        """END_TRANSACTION (37), oneway as in Java (``endTransactionOneway``)."""
        request = self.request(RequestCode.END_TRANSACTION, header)
        request.remark = remark
        await self.remoting.invoke_oneway(addr, request)

    # ================================================================== pull
    async def pull_message(self, addr: str, header: PullMessageRequestHeader, timeout_ms: int) -> PullResult:
        """PULL_MESSAGE (11); the records stay undecoded in ``message_binary``."""
        response = await self.remoting.invoke(
            addr, self.request(RequestCode.PULL_MESSAGE, header), timeout_ms
        )
        return pull_result_of(response, addr)

    # ================================================================== offsets
    async def query_consumer_offset(self, addr: str, group: str, mq: MessageQueue, timeout_ms: int) -> int:
        """QUERY_CONSUMER_OFFSET (14); BrokerError (22 QUERY_NOT_FOUND) when there is none."""
        header = QueryConsumerOffsetRequestHeader(
            consumer_group=group, topic=mq.topic, queue_id=mq.queue_id, bname=mq.broker_name
        )
        response = await self.invoke_checked(addr, RequestCode.QUERY_CONSUMER_OFFSET, header, timeout_ms)
        offset = QueryConsumerOffsetResponseHeader.from_ext_fields(response.ext_fields).offset
        return offset if offset is not None else -1

    async def update_consumer_offset(
        self, addr: str, group: str, mq: MessageQueue, offset: int, timeout_ms: int, *, oneway: bool = False
    ) -> None:
        """UPDATE_CONSUMER_OFFSET (15), acknowledged or oneway."""
        header = UpdateConsumerOffsetRequestHeader(
            consumer_group=group,
            topic=mq.topic,
            queue_id=mq.queue_id,
            commit_offset=offset,
            bname=mq.broker_name,
        )
        request = self.request(RequestCode.UPDATE_CONSUMER_OFFSET, header)
        if oneway:
            await self.remoting.invoke_oneway(addr, request)
        else:
            check_response(await self.remoting.invoke(addr, request, timeout_ms), addr)

    async def get_max_offset(self, addr: str, mq: MessageQueue, timeout_ms: int) -> int:
        header = GetMaxOffsetRequestHeader(topic=mq.topic, queue_id=mq.queue_id, bname=mq.broker_name)
        response = await self.invoke_checked(addr, RequestCode.GET_MAX_OFFSET, header, timeout_ms)
        return GetMaxOffsetResponseHeader.from_ext_fields(response.ext_fields).offset or 0

    async def get_min_offset(self, addr: str, mq: MessageQueue, timeout_ms: int) -> int:
        header = GetMinOffsetRequestHeader(topic=mq.topic, queue_id=mq.queue_id, bname=mq.broker_name)
        response = await self.invoke_checked(addr, RequestCode.GET_MIN_OFFSET, header, timeout_ms)
        return GetMinOffsetResponseHeader.from_ext_fields(response.ext_fields).offset or 0

    async def search_offset(self, addr: str, mq: MessageQueue, timestamp_ms: int, timeout_ms: int) -> int:
        header = SearchOffsetRequestHeader(
            topic=mq.topic, queue_id=mq.queue_id, timestamp=timestamp_ms, bname=mq.broker_name
        )
        response = await self.invoke_checked(addr, RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, header, timeout_ms)
        return SearchOffsetResponseHeader.from_ext_fields(response.ext_fields).offset or 0

    # ================================================================== clients
    async def send_heartbeat(self, addr: str, heartbeat: HeartbeatData, timeout_ms: int) -> int:
        """HEART_BEAT (34); returns the broker's version."""
        response = await self.invoke_checked(
            addr, RequestCode.HEART_BEAT, None, timeout_ms, heartbeat.to_json()
        )
        return response.version

    async def unregister_client(
        self,
        addr: str,
        client_id: str,
        timeout_ms: int,
        *,
        producer_group: str | None = None,
        consumer_group: str | None = None,
    ) -> None:
        header = UnregisterClientRequestHeader(
            client_id=client_id, producer_group=producer_group, consumer_group=consumer_group
        )
        await self.invoke_checked(addr, RequestCode.UNREGISTER_CLIENT, header, timeout_ms)

    async def get_consumer_id_list(self, addr: str, group: str, timeout_ms: int) -> list[str]:
        """GET_CONSUMER_LIST_BY_GROUP (38)."""
        header = GetConsumerListByGroupRequestHeader(consumer_group=group)
        response = await self.invoke_checked(addr, RequestCode.GET_CONSUMER_LIST_BY_GROUP, header, timeout_ms)
        if not response.body:
            return []
        return list(GetConsumerListByGroupResponseBody.from_json(response.body).consumer_id_list)

    async def consumer_send_message_back(
        self,
        addr: str,
        msg: MessageExt,
        group: str,
        delay_level: int,
        timeout_ms: int,
        max_reconsume_times: int,
    ) -> None:
        """CONSUMER_SEND_MSG_BACK (36): hand a failed message back for a delayed retry."""
        header = ConsumerSendMsgBackRequestHeader(
            offset=msg.commit_log_offset,
            group=group,
            delay_level=delay_level,
            origin_msg_id=msg.msg_id,
            origin_topic=msg.topic,
            unit_mode=False,
            max_reconsume_times=max_reconsume_times,
            bname=msg.broker_name,
        )
        await self.invoke_checked(addr, RequestCode.CONSUMER_SEND_MSG_BACK, header, timeout_ms)

    # ================================================================== orderly locks
    async def lock_batch_mq(
        self, addr: str, group: str, client_id: str, mqs: Iterable[MessageQueue], timeout_ms: int
    ) -> set[MessageQueue]:
        """LOCK_BATCH_MQ (41): the queues this client now holds locked on that broker."""
        body = LockBatchRequestBody(consumer_group=group, client_id=client_id, mq_set=list(mqs))
        response = await self.invoke_checked(
            addr, RequestCode.LOCK_BATCH_MQ, None, timeout_ms, body.to_json()
        )
        if not response.body:
            return set()
        return set(LockBatchResponseBody.from_json(response.body).lock_ok_mq_set)

    async def unlock_batch_mq(
        self,
        addr: str,
        group: str,
        client_id: str,
        mqs: Iterable[MessageQueue],
        timeout_ms: int,
        *,
        oneway: bool = False,
    ) -> None:
        """UNLOCK_BATCH_MQ (42), acknowledged or oneway."""
        body = UnlockBatchRequestBody(consumer_group=group, client_id=client_id, mq_set=list(mqs))
        request = self.request(RequestCode.UNLOCK_BATCH_MQ, None, body.to_json())
        if oneway:
            await self.remoting.invoke_oneway(addr, request)
        else:
            check_response(await self.remoting.invoke(addr, request, timeout_ms), addr)
