"""MQClientAPI: one typed method per remoting RPC a client makes.

Mirrors ``org.apache.rocketmq.client.impl.MQClientAPIImpl`` (and the name-server channel
choice of ``NettyRemotingClient``). It is the only place that turns request parameters
into :class:`~rocketq.protocol.frame.RemotingCommand` frames and response frames back into
typed results; the producer, the consumers and the admin API all call it.

Invariants:

* Requests carry the declarative header classes of :mod:`rocketq.protocol.headers`
  (``extFields`` in Java ``HashMap`` order) and the JSON bodies of
  :mod:`rocketq.protocol.heartbeat`, :mod:`rocketq.protocol.route` and
  :mod:`rocketq.protocol.bodies`, so frames match the Java client's (golden/producer.jsonl,
  golden/pull.jsonl) except for ``language`` (PYTHON) and ``version`` (409). Requests
  without a custom header (HEART_BEAT, LOCK_BATCH_MQ, ...) have no ``extFields``, as in Java.
* A non-success response code raises :class:`~rocketq.errors.BrokerError` carrying the
  code, remark and address, except where Java maps codes to statuses (send: 0/10/11/12;
  pull: 0/19/20/21; route: 17 -> ``None``; query message: 22 -> ``[]``).
* Transport failures raise :class:`~rocketq.errors.RemotingError` subclasses. Timeout
  contract: a request that raised :class:`~rocketq.errors.RequestTimeoutError` may still
  have been executed; in particular a timed-out send may have been stored.
* Name servers: one is chosen (random start, like ``NettyRemotingClient.namesrvIndex``) and
  kept while it works; a connect failure moves to the next one within the same call.
"""

from __future__ import annotations

import concurrent.futures
import logging
import random
import ssl
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

from rocketq.client.api_results import (
    PullResult,
    SendResult,
    pull_status_of,
    send_status_of,
)
from rocketq.client.request_response import is_reply_message
from rocketq.errors import BrokerError, ClientError, ConnectError, MalformedFrameError, RemotingError
from rocketq.protocol.bodies import (
    CheckClientRequestBody,
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
    CreateTopicRequestHeader,
    EndTransactionRequestHeader,
    GetConsumerListByGroupRequestHeader,
    GetEarliestMsgStoretimeRequestHeader,
    GetEarliestMsgStoretimeResponseHeader,
    GetMaxOffsetRequestHeader,
    GetMaxOffsetResponseHeader,
    GetMinOffsetRequestHeader,
    GetMinOffsetResponseHeader,
    GetRouteInfoRequestHeader,
    PullMessageRequestHeader,
    PullMessageResponseHeader,
    QueryConsumerOffsetRequestHeader,
    QueryConsumerOffsetResponseHeader,
    QueryMessageRequestHeader,
    SearchOffsetRequestHeader,
    SearchOffsetResponseHeader,
    SendMessageRequestHeader,
    SendMessageRequestHeaderV2,
    SendMessageResponseHeader,
    UnregisterClientRequestHeader,
    UpdateConsumerOffsetRequestHeader,
    ViewMessageRequestHeader,
)
from rocketq.protocol.heartbeat import HeartbeatData, SubscriptionData
from rocketq.protocol.message import (
    MessageExt,
    decode_record,
    decode_records,
)
from rocketq.protocol.message_queue import MessageQueue
from rocketq.protocol.route import ClusterInfo, TopicConfig, TopicList, TopicRouteData
from rocketq.remoting.client import RemotingClient, RpcHook
from rocketq.remoting.connection import AsyncCallback

__all__ = ["UNIQUE_KEY_QUERY", "MQClientAPI", "check_response"]

log = logging.getLogger(__name__)

#: ``MixAll.UNIQUE_MSG_QUERY_FLAG``: extField of QUERY_MESSAGE (not a header field).
UNIQUE_KEY_QUERY = "_UNIQUE_KEY_QUERY"

_H = TypeVar("_H", bound=CommandHeader)
_T = TypeVar("_T")


def check_response(response: RemotingCommand, addr: str | None) -> RemotingCommand:
    """``response`` itself when it is SUCCESS; otherwise :class:`BrokerError` (code, remark, addr)."""
    if response.code != ResponseCode.SUCCESS:
        raise BrokerError(response.code, response.remark, addr=addr)
    return response


def _response_header(cls: type[_H], response: RemotingCommand, addr: str | None) -> _H:
    header, missing = cls.from_ext_fields_checked(response.ext_fields)
    if missing is not None:
        raise MalformedFrameError(
            f"response to code {response.code} from {addr} lacks required fields {header.missing_required()}"
        )
    return header


def send_request_command(
    header: SendMessageRequestHeader, body: bytes, *, batch: bool, language: int, serialize_type: int
) -> RemotingCommand:
    """The send request of :meth:`MQClientAPI.build_send_request`, as a pure function: the
    blocking and the asyncio client (``AsyncMQClientAPI``) both build their sends here."""
    header.batch = batch
    code = RequestCode.SEND_BATCH_MESSAGE if batch else RequestCode.SEND_MESSAGE_V2
    if not batch and is_reply_message(header.properties):
        # MQClientAPIImpl.sendMessage: a reply (MSG_TYPE=reply) goes as SEND_REPLY_MESSAGE_V2
        code = RequestCode.SEND_REPLY_MESSAGE_V2
    return RemotingCommand(
        code=code,
        language=language,
        ext_fields=SendMessageRequestHeaderV2.ext_fields_from_v1(header, serialize_type=serialize_type),
        body=body,
        serialize_type=serialize_type,
    )


class MQClientAPI:
    """Typed RPCs over one :class:`RemotingClient` (``MQClientAPIImpl``).

    ``namesrv_addrs`` may be replaced later with :meth:`update_name_server_address_list`.
    ``language`` and ``serialize_type`` are stamped on every request.
    """

    def __init__(
        self,
        remoting: RemotingClient,
        namesrv_addrs: Sequence[str] = (),
        *,
        language: int = LanguageCode.PYTHON,
        serialize_type: int = SerializeType.JSON,
    ) -> None:
        self.remoting = remoting
        self.language = int(language)
        self.serialize_type = int(serialize_type)
        self._ns_lock = threading.Lock()
        self._namesrv_addrs: list[str] = list(namesrv_addrs)
        self._namesrv_index = random.randrange(997)
        self._chosen_namesrv: str | None = None

    # ================================================================== plumbing
    @classmethod
    def standalone(
        cls,
        namesrv_addrs: Sequence[str],
        *,
        name: str,
        connect_timeout_ms: int = 3000,
        language: int = LanguageCode.PYTHON,
        serialize_type: int = SerializeType.JSON,
        rpc_hook: RpcHook | None = None,
        ssl_context: ssl.SSLContext | None = None,
    ) -> MQClientAPI:
        """An API over a remoting client of its own (not started: :meth:`start`, :meth:`close`).

        For users without an :class:`~rocketq.client.instance.MQClientInstance` (the admin
        API, the Spark connector): one I/O thread, no background loop. ``rpc_hook`` and
        ``ssl_context`` secure it (:func:`rocketq.acl.client_security.client_security`).
        """
        remoting = RemotingClient(
            name=name, connect_timeout_ms=connect_timeout_ms, rpc_hook=rpc_hook, ssl_context=ssl_context
        )
        return cls(remoting, namesrv_addrs, language=language, serialize_type=serialize_type)

    def start(self) -> None:
        """Start the remoting client's I/O thread (idempotent)."""
        self.remoting.start()

    def close(self) -> None:
        """Close the remoting client: every connection, its I/O thread joined (idempotent)."""
        self.remoting.close()

    def update_name_server_address_list(self, addrs: Sequence[str]) -> None:
        """``updateNameServerAddressList``: replace the name-server list."""
        with self._ns_lock:
            self._namesrv_addrs = list(addrs)
            if self._chosen_namesrv not in self._namesrv_addrs:
                self._chosen_namesrv = None

    @property
    def namesrv_addrs(self) -> list[str]:
        with self._ns_lock:
            return list(self._namesrv_addrs)

    def request(self, code: int, header: CommandHeader | None = None, body: bytes = b"") -> RemotingCommand:
        """A request command (``RemotingCommand.createRequestCommand``)."""
        ext = None if header is None else header.to_ext_fields(serialize_type=self.serialize_type)
        return RemotingCommand(
            code=code,
            language=self.language,
            ext_fields=ext,
            body=body,
            serialize_type=self.serialize_type,
        )

    def invoke_checked(
        self, addr: str, code: int, header: CommandHeader | None, timeout_ms: int, body: bytes = b""
    ) -> RemotingCommand:
        """One synchronous request to ``addr``; a non-success answer raises BrokerError."""
        return check_response(
            self.remoting.invoke_sync(addr, self.request(code, header, body), timeout_ms), addr
        )

    def _namesrv_candidates(self) -> list[str]:
        with self._ns_lock:
            addrs = list(self._namesrv_addrs)
            if not addrs:
                raise ClientError("no name server address is configured")
            chosen = self._chosen_namesrv
            if chosen is None:
                # NettyRemotingClient.getAndCreateNameserverChannel: round robin from a random start
                chosen = addrs[self._namesrv_index % len(addrs)]
                self._namesrv_index += 1
                self._chosen_namesrv = chosen
        start = addrs.index(chosen)
        return addrs[start:] + addrs[:start]

    def invoke_namesrv(self, request: RemotingCommand, timeout_ms: int) -> RemotingCommand:
        """Send to the chosen name server; on a connect failure try the next ones."""
        deadline = time.monotonic() + timeout_ms / 1000.0
        last: RemotingError | None = None
        for addr in self._namesrv_candidates():
            remaining = int((deadline - time.monotonic()) * 1000)
            if remaining <= 0:
                break
            try:
                response = self.remoting.invoke_sync(addr, request, remaining)
            except ConnectError as exc:
                last = exc
                with self._ns_lock:
                    if self._chosen_namesrv == addr:
                        self._chosen_namesrv = None
                log.warning("name server %s unreachable: %s", addr, exc)
                continue
            with self._ns_lock:
                self._chosen_namesrv = addr
            return response
        if last is not None:
            raise ConnectError(f"no name server reachable ({last})")
        raise ConnectError("no name server reachable within the timeout")

    # ================================================================== name server
    def get_topic_route_info_from_name_server(self, topic: str, timeout_ms: int) -> TopicRouteData | None:
        """GET_ROUTEINFO_BY_TOPIC (105); ``None`` when the topic does not exist (code 17)."""
        request = self.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, GetRouteInfoRequestHeader(topic=topic))
        response = self.invoke_namesrv(request, timeout_ms)
        if response.code == ResponseCode.TOPIC_NOT_EXIST:
            return None
        check_response(response, None)
        if not response.body:
            return None
        return TopicRouteData.from_json(response.body)

    def get_broker_cluster_info(self, timeout_ms: int) -> ClusterInfo:
        """GET_BROKER_CLUSTER_INFO (106)."""
        response = self.invoke_namesrv(self.request(RequestCode.GET_BROKER_CLUSTER_INFO), timeout_ms)
        check_response(response, None)
        return ClusterInfo.from_json(response.body)

    def get_topic_list_from_name_server(self, timeout_ms: int) -> list[str]:
        """GET_ALL_TOPIC_LIST_FROM_NAMESERVER (206)."""
        request = self.request(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)
        response = self.invoke_namesrv(request, timeout_ms)
        check_response(response, None)
        return list(TopicList.from_json(response.body).topic_list) if response.body else []

    # ================================================================== send
    def build_send_request(
        self, header: SendMessageRequestHeader, body: bytes, *, batch: bool = False
    ) -> RemotingCommand:
        """SEND_MESSAGE_V2 (310), SEND_BATCH_MESSAGE (320) or, for a reply message,
        SEND_REPLY_MESSAGE_V2 (325), with the V2 one-letter header.

        ``MQClientAPIImpl.sendMessage``: the Java producer always uses V2 names; the broker
        picks its batch path from header ``m`` (batch), so it must be set for code 320.
        """
        return send_request_command(
            header, body, batch=batch, language=self.language, serialize_type=self.serialize_type
        )

    @staticmethod
    def process_send_response(
        broker_name: str, topic: str, queue_id: int, uniq_msg_id: str, response: RemotingCommand, addr: str
    ) -> SendResult:
        """``MQClientAPIImpl.processSendResponse``: a SendResult or a BrokerError."""
        status = send_status_of(response.code)
        if status is None:
            raise BrokerError(response.code, response.remark, addr=addr)
        header = _response_header(SendMessageResponseHeader, response, addr)
        ext = response.ext_fields or {}
        # The broker names the queue it really used (e.g. a negative queueId = broker's choice).
        qid = header.queue_id if header.queue_id is not None else queue_id
        return SendResult(
            status=status,
            msg_id=uniq_msg_id,
            offset_msg_id=header.msg_id or "",
            message_queue=MessageQueue(topic, broker_name, qid),
            queue_offset=header.queue_offset if header.queue_offset is not None else -1,
            transaction_id=header.transaction_id,
            region_id=ext.get("MSG_REGION"),
            trace_on=ext.get("TRACE_ON", "true") != "false",
        )

    def send_message_sync(
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
        """One synchronous send attempt (no retries: the producer owns those)."""
        request = self.build_send_request(header, body, batch=batch)
        response = self.remoting.invoke_sync(addr, request, timeout_ms)
        return self.process_send_response(
            broker_name, header.topic or "", header.queue_id or 0, uniq_msg_id, response, addr
        )

    def send_message_async(
        self,
        addr: str,
        broker_name: str,
        header: SendMessageRequestHeader,
        body: bytes,
        uniq_msg_id: str,
        timeout_ms: int,
        *,
        batch: bool = False,
    ) -> concurrent.futures.Future[SendResult]:
        """One asynchronous send attempt; the future completes on the remoting I/O thread."""
        request = self.build_send_request(header, body, batch=batch)
        topic, queue_id = header.topic or "", header.queue_id or 0
        return self._map_future(
            self.remoting.invoke_async(addr, request, timeout_ms),
            lambda r: self.process_send_response(broker_name, topic, queue_id, uniq_msg_id, r, addr),
        )

    def send_request_async(
        self,
        addr: str,
        request: RemotingCommand,
        read: Callable[[RemotingCommand], SendResult],
        timeout_ms: int,
    ) -> concurrent.futures.Future[SendResult]:
        """An asynchronous send of a request built by the caller (the blocking producer's
        ``send_prep.send_request_of``); ``read`` turns the answer into the result on the
        remoting I/O thread (``send_prep.send_result_of``)."""
        return self._map_future(self.remoting.invoke_async(addr, request, timeout_ms), read)

    def send_message_oneway(
        self, addr: str, header: SendMessageRequestHeader, body: bytes, *, batch: bool = False
    ) -> None:
        """A oneway send (flag 2): no response, no result."""
        self.remoting.invoke_oneway(addr, self.build_send_request(header, body, batch=batch))

    @staticmethod
    def _map_future(
        source: concurrent.futures.Future[RemotingCommand], fn: Callable[[RemotingCommand], _T]
    ) -> concurrent.futures.Future[_T]:
        out: concurrent.futures.Future[_T] = concurrent.futures.Future()

        def done(f: concurrent.futures.Future[RemotingCommand]) -> None:
            exc = f.exception()
            if exc is not None:
                out.set_exception(exc)
                return
            try:
                out.set_result(fn(f.result()))
            except BaseException as err:  # delivered through the future, never lost
                out.set_exception(err)

        source.add_done_callback(done)
        return out

    # ================================================================== pull
    def build_pull_request(self, header: PullMessageRequestHeader) -> RemotingCommand:
        return self.request(RequestCode.PULL_MESSAGE, header)

    @staticmethod
    def process_pull_response(response: RemotingCommand, addr: str) -> PullResult:
        """``MQClientAPIImpl.processPullResponse``: FOUND/NO_NEW_MSG/NO_MATCHED_MSG/OFFSET_ILLEGAL."""
        status = pull_status_of(response.code)
        if status is None:
            raise BrokerError(response.code, response.remark, addr=addr)
        header = _response_header(PullMessageResponseHeader, response, addr)
        return PullResult(
            pull_status=status,
            next_begin_offset=header.next_begin_offset or 0,
            min_offset=header.min_offset or 0,
            max_offset=header.max_offset or 0,
            suggest_which_broker_id=header.suggest_which_broker_id or 0,
            message_binary=response.body,
            remark=response.remark,
        )

    def pull_message_sync(self, addr: str, header: PullMessageRequestHeader, timeout_ms: int) -> PullResult:
        """PULL_MESSAGE (11), blocking; the records stay undecoded in ``message_binary``."""
        response = self.remoting.invoke_sync(addr, self.build_pull_request(header), timeout_ms)
        return self.process_pull_response(response, addr)

    def pull_message_async(
        self, addr: str, header: PullMessageRequestHeader, timeout_ms: int
    ) -> concurrent.futures.Future[PullResult]:
        """PULL_MESSAGE (11); the future completes on the remoting I/O thread."""
        fut = self.remoting.invoke_async(addr, self.build_pull_request(header), timeout_ms)
        return self._map_future(fut, lambda r: self.process_pull_response(r, addr))

    def pull_message_async_callback(
        self, addr: str, header: PullMessageRequestHeader, timeout_ms: int, callback: AsyncCallback
    ) -> None:
        """PULL_MESSAGE (11) whose ``callback(answer, None)`` / ``callback(None, error)``
        gets the broker's answer as it came, exactly once, on the I/O thread (Java's
        ``pullMessageAsync`` with its ``InvokeCallback``): the caller runs
        :meth:`process_pull_response` on its own thread; no Future per pull. Failures before
        the request is written raise here (and the callback is not called)."""
        self.remoting.invoke_async_callback(addr, self.build_pull_request(header), timeout_ms, callback)

    # ================================================================== consumer offsets
    def query_consumer_offset(
        self, addr: str, group: str, topic: str, queue_id: int, timeout_ms: int, *, bname: str | None = None
    ) -> int:
        """QUERY_CONSUMER_OFFSET (14); BrokerError (e.g. 22 QUERY_NOT_FOUND) when there is none."""
        header = QueryConsumerOffsetRequestHeader(
            consumer_group=group, topic=topic, queue_id=queue_id, bname=bname
        )
        response = self.invoke_checked(addr, RequestCode.QUERY_CONSUMER_OFFSET, header, timeout_ms)
        offset = _response_header(QueryConsumerOffsetResponseHeader, response, addr).offset
        return offset if offset is not None else -1

    def _update_offset_request(
        self, group: str, topic: str, queue_id: int, offset: int, bname: str | None
    ) -> RemotingCommand:
        header = UpdateConsumerOffsetRequestHeader(
            consumer_group=group, topic=topic, queue_id=queue_id, commit_offset=offset, bname=bname
        )
        return self.request(RequestCode.UPDATE_CONSUMER_OFFSET, header)

    def update_consumer_offset(
        self,
        addr: str,
        group: str,
        topic: str,
        queue_id: int,
        offset: int,
        timeout_ms: int,
        *,
        bname: str | None = None,
    ) -> None:
        """UPDATE_CONSUMER_OFFSET (15), waiting for the broker's answer."""
        request = self._update_offset_request(group, topic, queue_id, offset, bname)
        check_response(self.remoting.invoke_sync(addr, request, timeout_ms), addr)

    def update_consumer_offset_oneway(
        self, addr: str, group: str, topic: str, queue_id: int, offset: int, *, bname: str | None = None
    ) -> None:
        """UPDATE_CONSUMER_OFFSET (15) oneway, as the periodic persist task sends it."""
        self.remoting.invoke_oneway(addr, self._update_offset_request(group, topic, queue_id, offset, bname))

    # ================================================================== clients
    def send_heartbeat(self, addr: str, heartbeat: HeartbeatData, timeout_ms: int) -> int:
        """HEART_BEAT (34) with the HeartbeatData body; returns the broker's version."""
        response = self.invoke_checked(addr, RequestCode.HEART_BEAT, None, timeout_ms, heartbeat.to_json())
        return response.version

    def unregister_client(
        self,
        addr: str,
        client_id: str,
        timeout_ms: int,
        *,
        producer_group: str | None = None,
        consumer_group: str | None = None,
    ) -> None:
        """UNREGISTER_CLIENT (35) for one producer or consumer group."""
        header = UnregisterClientRequestHeader(
            client_id=client_id, producer_group=producer_group, consumer_group=consumer_group
        )
        self.invoke_checked(addr, RequestCode.UNREGISTER_CLIENT, header, timeout_ms)

    def check_client_in_broker(
        self, addr: str, group: str, client_id: str, subscription: SubscriptionData, timeout_ms: int
    ) -> None:
        """CHECK_CLIENT_CONFIG (46): does the broker accept this subscription's filter?
        A refusal raises BrokerError (``MQClientAPIImpl.checkClientInBroker``)."""
        body = CheckClientRequestBody(client_id=client_id, group=group, subscription_data=subscription)
        self.invoke_checked(addr, RequestCode.CHECK_CLIENT_CONFIG, None, timeout_ms, body.to_json())

    def get_consumer_id_list_by_group(self, addr: str, group: str, timeout_ms: int) -> list[str]:
        """GET_CONSUMER_LIST_BY_GROUP (38): the client ids of the group's live consumers."""
        header = GetConsumerListByGroupRequestHeader(consumer_group=group)
        response = self.invoke_checked(addr, RequestCode.GET_CONSUMER_LIST_BY_GROUP, header, timeout_ms)
        if not response.body:
            return []
        return list(GetConsumerListByGroupResponseBody.from_json(response.body).consumer_id_list)

    # ================================================================== queue offsets
    def get_max_offset(
        self, addr: str, topic: str, queue_id: int, timeout_ms: int, *, bname: str | None = None
    ) -> int:
        """GET_MAX_OFFSET (30): the offset the next message of the queue will get."""
        header = GetMaxOffsetRequestHeader(topic=topic, queue_id=queue_id, bname=bname)
        response = self.invoke_checked(addr, RequestCode.GET_MAX_OFFSET, header, timeout_ms)
        return _response_header(GetMaxOffsetResponseHeader, response, addr).offset or 0

    def get_min_offset(
        self, addr: str, topic: str, queue_id: int, timeout_ms: int, *, bname: str | None = None
    ) -> int:
        """GET_MIN_OFFSET (31): the smallest offset still stored."""
        header = GetMinOffsetRequestHeader(topic=topic, queue_id=queue_id, bname=bname)
        response = self.invoke_checked(addr, RequestCode.GET_MIN_OFFSET, header, timeout_ms)
        return _response_header(GetMinOffsetResponseHeader, response, addr).offset or 0

    def get_earliest_msg_storetime(
        self, addr: str, topic: str, queue_id: int, timeout_ms: int, *, bname: str | None = None
    ) -> int:
        """GET_EARLIEST_MSG_STORETIME (32): store time (ms) of the oldest message, -1 if unknown."""
        header = GetEarliestMsgStoretimeRequestHeader(topic=topic, queue_id=queue_id, bname=bname)
        response = self.invoke_checked(addr, RequestCode.GET_EARLIEST_MSG_STORETIME, header, timeout_ms)
        ts = _response_header(GetEarliestMsgStoretimeResponseHeader, response, addr).timestamp
        return ts if ts is not None else -1

    def search_offset(
        self,
        addr: str,
        topic: str,
        queue_id: int,
        timestamp_ms: int,
        timeout_ms: int,
        *,
        bname: str | None = None,
    ) -> int:
        """SEARCH_OFFSET_BY_TIMESTAMP (29): the queue offset whose store time is nearest."""
        header = SearchOffsetRequestHeader(
            topic=topic, queue_id=queue_id, timestamp=timestamp_ms, bname=bname
        )
        response = self.invoke_checked(addr, RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, header, timeout_ms)
        return _response_header(SearchOffsetResponseHeader, response, addr).offset or 0

    # ================================================================== messages
    def view_message(self, addr: str, phy_offset: int, timeout_ms: int) -> MessageExt:
        """VIEW_MESSAGE_BY_ID (33): the record at a commit-log offset (from an offsetMsgId)."""
        header = ViewMessageRequestHeader(offset=phy_offset)
        response = self.invoke_checked(addr, RequestCode.VIEW_MESSAGE_BY_ID, header, timeout_ms)
        return decode_record(response.body)

    def query_message(
        self,
        addr: str,
        topic: str,
        key: str,
        max_num: int,
        begin_timestamp_ms: int,
        end_timestamp_ms: int,
        timeout_ms: int,
        *,
        unique_key: bool = False,
    ) -> list[MessageExt]:
        """QUERY_MESSAGE (12) by key (or by UNIQ_KEY with ``unique_key``); [] when not found.

        Like ``MQAdminImpl.queryMessage`` the answer is re-filtered: the index matches hashes,
        so only records whose KEYS (or UNIQ_KEY) really contain ``key`` are returned.
        """
        header = QueryMessageRequestHeader(
            topic=topic,
            key=key,
            max_num=max_num,
            begin_timestamp=begin_timestamp_ms,
            end_timestamp=end_timestamp_ms,
        )
        request = self.request(RequestCode.QUERY_MESSAGE, header)
        # MQAdminImpl.queryMessage adds the flag as a plain extField next to the header.
        request.ext_fields = header.to_ext_fields(
            {UNIQUE_KEY_QUERY: "true" if unique_key else "false"}, serialize_type=self.serialize_type
        )
        response = self.remoting.invoke_sync(addr, request, timeout_ms)
        if response.code == ResponseCode.QUERY_NOT_FOUND:
            return []
        check_response(response, addr)
        out = []
        for msg in decode_records(response.body):
            if unique_key:
                if msg.properties.get("UNIQ_KEY") == key:
                    out.append(msg)
            elif key in msg.keys:
                out.append(msg)
        return out

    def consumer_send_message_back(
        self,
        addr: str,
        msg: MessageExt,
        group: str,
        delay_level: int,
        timeout_ms: int,
        max_reconsume_times: int,
        *,
        bname: str | None = None,
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
            bname=bname,
        )
        self.invoke_checked(addr, RequestCode.CONSUMER_SEND_MSG_BACK, header, timeout_ms)

    def end_transaction_oneway(
        self, addr: str, header: EndTransactionRequestHeader, remark: str | None
    ) -> None:
        """END_TRANSACTION (37), oneway as in Java."""
        request = self.request(RequestCode.END_TRANSACTION, header)
        request.remark = remark
        self.remoting.invoke_oneway(addr, request)

    # ================================================================== topics
    def create_topic(self, addr: str, default_topic: str, topic_config: TopicConfig, timeout_ms: int) -> None:
        """UPDATE_AND_CREATE_TOPIC (17) on one broker."""
        filter_type = topic_config.topic_filter_type
        header = CreateTopicRequestHeader(
            topic=topic_config.topic_name,
            default_topic=default_topic,
            read_queue_nums=topic_config.read_queue_nums,
            write_queue_nums=topic_config.write_queue_nums,
            perm=topic_config.perm,
            topic_filter_type=filter_type.name if filter_type is not None else "SINGLE_TAG",
            topic_sys_flag=topic_config.topic_sys_flag,
            order=topic_config.order,
        )
        self.invoke_checked(addr, RequestCode.UPDATE_AND_CREATE_TOPIC, header, timeout_ms)

    # ================================================================== orderly locks
    def lock_batch_mq(
        self, addr: str, group: str, client_id: str, mqs: Iterable[MessageQueue], timeout_ms: int
    ) -> set[MessageQueue]:
        """LOCK_BATCH_MQ (41): the queues this client now holds locked on that broker."""
        body = LockBatchRequestBody(consumer_group=group, client_id=client_id, mq_set=list(mqs))
        response = self.invoke_checked(addr, RequestCode.LOCK_BATCH_MQ, None, timeout_ms, body.to_json())
        if not response.body:
            return set()
        return set(LockBatchResponseBody.from_json(response.body).lock_ok_mq_set)

    def unlock_batch_mq(
        self,
        addr: str,
        group: str,
        client_id: str,
        mqs: Iterable[MessageQueue],
        timeout_ms: int,
        *,
        oneway: bool = False,
    ) -> None:
        """UNLOCK_BATCH_MQ (42), sync or oneway."""
        body = UnlockBatchRequestBody(consumer_group=group, client_id=client_id, mq_set=list(mqs))
        request = self.request(RequestCode.UNLOCK_BATCH_MQ, None, body.to_json())
        if oneway:
            self.remoting.invoke_oneway(addr, request)
            return
        check_response(self.remoting.invoke_sync(addr, request, timeout_ms), addr)
