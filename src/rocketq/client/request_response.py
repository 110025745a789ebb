"""Request/reply over RocketMQ: the pending-request table, the reply helper, the request flow.

Mirrors ``org.apache.rocketmq.client.producer.RequestResponseFuture``,
``RequestFutureHolder``, ``org.apache.rocketmq.client.utils.MessageUtil``,
``CorrelationIdUtil`` and the ``request`` methods of ``DefaultMQProducerImpl`` (4.9.7).

How a request travels: the requester stamps the message with ``CORRELATION_ID`` (a random
UUID), ``REPLY_TO_CLIENT`` (its client id) and ``TTL`` (the timeout in ms), registers a
:class:`RequestResponseFuture` under the correlation id and sends the message
asynchronously. A consumer of the request topic builds the answer with
:func:`create_reply_message` and sends it with any producer: it goes to
``<cluster>_REPLY_TOPIC`` as SEND_REPLY_MESSAGE_V2, and the broker pushes it
(PUSH_REPLY_MESSAGE_TO_CLIENT) over the connection of the client named in
``REPLY_TO_CLIENT``, whose instance completes the future with that correlation id.

Invariants:

* One :class:`RequestFutureHolder` per client instance (Java keeps one per process; replies
  arrive at an instance, so its table is enough). Its housekeeping thread starts with the
  first request and stops with the instance; it fails requests whose timeout has passed
  (first scan after 3 s, then every second, as ``RequestHouseKeepingService``), so an
  abandoned asynchronous request never stays in the table.
* A request is completed by whoever removes it from the table (its reply, the
  housekeeping, a failed send, the instance's shutdown), so exactly once; a reply with no
  pending request (late, or crossed from another process) is logged and dropped, never
  handed to another request.
* Timeout contract: a request that raised :class:`RequestTimeoutError` may still have been
  delivered and answered; the late answer is dropped.
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
import time
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from rocketq.common.service_thread import PeriodicService
from rocketq.errors import ClientError, RequestTimeoutError, RocketqError
from rocketq.protocol.codes import ResponseCode
from rocketq.protocol.frame import RemotingCommand
from rocketq.protocol.headers import ReplyMessageRequestHeader
from rocketq.protocol.message import (
    Message,
    MessageConst,
    MessageExt,
    decode_properties,
    decompress_body,
)
from rocketq.protocol.mixall import REPLY_MESSAGE_FLAG, reply_topic
from rocketq.remoting.helper import parse_addr

if TYPE_CHECKING:
    from rocketq.client.api_results import SendResult

__all__ = [
    "RequestCallback",
    "RequestFutureHolder",
    "RequestResponseFuture",
    "begin_request",
    "create_correlation_id",
    "create_reply_message",
    "decode_reply_push",
    "get_reply_to_client",
    "is_reply_message",
    "receive_reply_message",
    "reply_timeout_error",
    "request_send_error",
    "send_request",
    "stamp_request",
    "wait_response",
]

log = logging.getLogger(__name__)

#: ``callback(future)`` run on the client's callback pool once an async request is done.
RequestCallback = Callable[["concurrent.futures.Future[Message]"], object]

#: RequestFutureHolder.startScheduledTask: first scan after 3 s, then every second
_SCAN_INITIAL_S = 3.0
_SCAN_PERIOD_S = 1.0


def _now_ms() -> int:
    return time.monotonic_ns() // 1_000_000


def create_correlation_id() -> str:
    """``CorrelationIdUtil.createCorrelationId``: a random UUID."""
    return str(uuid.uuid4())


def create_reply_message(request: Message, body: bytes) -> Message:
    """``MessageUtil.createReplyMessage``: the reply to ``request`` carrying ``body``.

    Its topic is ``<cluster>_REPLY_TOPIC`` (the broker stamped ``CLUSTER`` on the request)
    and it carries ``MSG_TYPE=reply`` and the request's ``CORRELATION_ID``,
    ``REPLY_TO_CLIENT`` and ``TTL``. Raises :class:`ClientError` for a message that did not
    come through a broker (no ``CLUSTER``).
    """
    if request is None:
        raise ClientError("create reply message fail, requestMessage cannot be null.")
    props = request.properties
    cluster = props.get(MessageConst.CLUSTER)
    if cluster is None:
        raise ClientError(
            f"create reply message fail, requestMessage error, property[{MessageConst.CLUSTER}] is null."
        )
    reply = Message(reply_topic(cluster), body)
    reply.properties[MessageConst.MSG_TYPE] = REPLY_MESSAGE_FLAG
    for key in (MessageConst.CORRELATION_ID, MessageConst.REPLY_TO_CLIENT, MessageConst.TTL):
        value = props.get(key)
        if value is not None:  # MessageAccessor.putProperty would refuse a null
            reply.properties[key] = value
    return reply


def is_reply_message(properties: str | None) -> bool:
    """Whether a send request's encoded properties mark a reply (``MSG_TYPE=reply``): such a
    message goes as SEND_REPLY_MESSAGE_V2 (``MQClientAPIImpl.sendMessage``)."""
    return bool(
        properties
        and MessageConst.MSG_TYPE in properties
        and decode_properties(properties).get(MessageConst.MSG_TYPE) == REPLY_MESSAGE_FLAG
    )


def stamp_request(msg: Message, client_id: str, timeout_ms: int) -> str:
    """``prepareSendRequest``'s stamping: a new ``CORRELATION_ID`` (returned),
    ``REPLY_TO_CLIENT`` and ``TTL``."""
    cid = create_correlation_id()
    msg.properties[MessageConst.CORRELATION_ID] = cid
    msg.properties[MessageConst.REPLY_TO_CLIENT] = client_id
    msg.properties[MessageConst.TTL] = str(timeout_ms)
    return cid


def reply_timeout_error(topic: str, timeout_ms: int) -> RequestTimeoutError:
    """The error of a request sent but not answered within ``timeout_ms`` (``waitResponse``)."""
    return RequestTimeoutError(
        f"send request message to <{topic}> OK, but wait reply message timeout, {timeout_ms} ms."
    )


def request_send_error(topic: str, cause: BaseException | None) -> ClientError:
    """The error of a request that could not be sent (``waitResponse``), ``cause`` chained."""
    err = ClientError(f"send request message to <{topic}> fail: {cause}")
    err.__cause__ = cause
    return err


def get_reply_to_client(msg: Message) -> str | None:
    """``MessageUtil.getReplyToClient``."""
    return msg.properties.get(MessageConst.REPLY_TO_CLIENT)


class RequestResponseFuture:
    """One pending request (``RequestResponseFuture``); completed by the reply or a failure."""

    def __init__(
        self,
        correlation_id: str,
        timeout_ms: int,
        future: concurrent.futures.Future[Message] | None = None,
        *,
        clock_ms: Callable[[], int] = _now_ms,
    ) -> None:
        self.correlation_id = correlation_id
        self.timeout_ms = timeout_ms
        #: the async request's future (None for a sync request, which waits on the event)
        self.future = future
        self._clock_ms = clock_ms
        self.begin_ms = clock_ms()
        self._event = threading.Event()
        self.response: Message | None = None
        self.send_request_ok = True
        self.cause: BaseException | None = None

    def is_timeout(self) -> bool:
        return self._clock_ms() - self.begin_ms > self.timeout_ms

    def wait_response_message(self, timeout_ms: int) -> Message | None:
        """``waitResponseMessage``: the reply, or None if none came within ``timeout_ms``."""
        self._event.wait(max(timeout_ms, 0) / 1000.0)
        return self.response

    def put_response_message(self, msg: Message | None) -> None:
        self.response = msg
        self._event.set()

    def fail(self, cause: BaseException) -> None:
        """The request could not be sent (``setSendRequestOk(false)`` + ``setCause``)."""
        self.send_request_ok = False
        self.cause = cause
        self.put_response_message(None)

    def execute_request_callback(self) -> None:
        """``executeRequestCallback``: complete the async future with the reply or the cause."""
        future = self.future
        if future is None or future.done():
            return
        if self.send_request_ok and self.cause is None and self.response is not None:
            future.set_result(self.response)
        else:
            future.set_exception(self.cause or ClientError("request failed"))


class RequestFutureHolder:
    """The pending requests of one client instance (``RequestFutureHolder``). Thread-safe."""

    def __init__(self, name: str, *, scan_initial_s: float = _SCAN_INITIAL_S) -> None:
        self._name = name
        self._scan_initial_s = scan_initial_s
        self._lock = threading.Lock()
        self._table: dict[str, RequestResponseFuture] = {}
        self._scanner: PeriodicService | None = None
        self._closed = False

    def start(self) -> None:
        """Start the housekeeping thread (once; later calls do nothing)."""
        with self._lock:
            if self._scanner is not None or self._closed:
                return
            self._scanner = PeriodicService(
                self._name, _SCAN_PERIOD_S, self.scan_expired_request, initial_s=self._scan_initial_s
            )
            self._scanner.start()

    def shutdown(self) -> None:
        """Stop the housekeeping thread; pending requests fail as timed out."""
        with self._lock:
            self._closed = True
            scanner, self._scanner = self._scanner, None
            pending = list(self._table.values())
            self._table.clear()
        if scanner is not None:
            scanner.shutdown()
        for rf in pending:
            rf.fail(ClientError("the client instance was shut down before the reply came"))
            rf.execute_request_callback()

    def put(self, rf: RequestResponseFuture) -> None:
        with self._lock:
            self._table[rf.correlation_id] = rf

    def remove(self, correlation_id: str) -> RequestResponseFuture | None:
        with self._lock:
            return self._table.pop(correlation_id, None)

    def __len__(self) -> int:
        with self._lock:
            return len(self._table)

    def process_reply_message(self, reply: Message, born_host: str) -> bool:
        """``ClientRemotingProcessor.processReplyMessage``: complete the matching request."""
        cid = reply.properties.get(MessageConst.CORRELATION_ID, "")
        rf = self.remove(cid)
        if rf is None:
            log.warning(
                "receive reply message, but not matched any request, CorrelationId: %s , reply from host: %s",
                cid,
                born_host,
            )
            return False
        rf.put_response_message(reply)
        rf.execute_request_callback()
        return True

    def scan_expired_request(self) -> None:
        """``scanExpiredRequest``: fail every request whose timeout has passed."""
        with self._lock:
            expired = [rf for rf in self._table.values() if rf.is_timeout()]
            for rf in expired:
                del self._table[rf.correlation_id]
        for rf in expired:
            log.warning("remove timeout request, CorrelationId=%s", rf.correlation_id)
            rf.cause = RequestTimeoutError("request timeout, no reply message.")
            rf.put_response_message(None)
            try:
                rf.execute_request_callback()
            except Exception:
                log.exception("request callback of %s failed", rf.correlation_id)


def _wall_ms() -> int:
    return time.time_ns() // 1_000_000


def receive_reply_message(holder: RequestFutureHolder, request: RemotingCommand) -> RemotingCommand:
    """``ClientRemotingProcessor.receiveReplyMessage``: PUSH_REPLY_MESSAGE_TO_CLIENT (326).

    The reply is rebuilt from the header (topic, queue, hosts, times, flag, properties plus
    ``ARRIVE_TIME``) and the body (decompressed if its sysFlag says so), then handed to the
    pending request with its correlation id. The answer is SUCCESS (no extFields) unless
    the push could not be read.
    """
    try:
        reply, born_host = decode_reply_push(request)
        holder.process_reply_message(reply, born_host)
    except Exception as exc:
        log.warning("unknown err when receiveReplyMsg", exc_info=True)
        log.debug("reply push could not be read: %s", exc)
        return request.make_response(ResponseCode.SYSTEM_ERROR, "process reply message fail")
    return request.make_response(ResponseCode.SUCCESS, None)


def decode_reply_push(request: RemotingCommand) -> tuple[MessageExt, str]:
    """The reply a PUSH_REPLY_MESSAGE_TO_CLIENT carries and its born host: rebuilt from the
    header (topic, queue, hosts, times, flag, properties plus ``ARRIVE_TIME``) and the body
    (decompressed if its sysFlag says so). Raises on a push that cannot be read."""
    received = _wall_ms()
    header = ReplyMessageRequestHeader.from_ext_fields(request.ext_fields)
    sys_flag = int(header.sys_flag or 0)
    body = decompress_body(request.body, sys_flag)
    props = decode_properties(header.properties or "")
    props[MessageConst.ARRIVE_TIME] = str(received)
    reply = MessageExt(
        header.topic or "",
        body,
        flag=int(header.flag or 0),
        properties=props,
        queue_id=int(header.queue_id or 0),
        store_timestamp=header.store_timestamp,
        born_timestamp=int(header.born_timestamp or 0),
        born_host=parse_addr(header.born_host) if header.born_host else ("0.0.0.0", 0),
        store_host=parse_addr(header.store_host) if header.store_host else ("0.0.0.0", 0),
        reconsume_times=int(header.reconsume_times or 0),
    )
    return reply, header.born_host or ""


def wait_response(rf: RequestResponseFuture, topic: str, timeout_ms: int, remaining_ms: int) -> Message:
    """``DefaultMQProducerImpl.waitResponse``: the reply, or the error Java raises."""
    reply = rf.wait_response_message(remaining_ms)
    if reply is not None:
        return reply
    if rf.send_request_ok:
        raise reply_timeout_error(topic, timeout_ms)
    raise request_send_error(topic, rf.cause)


class _RequestHost(Protocol):
    """What :func:`begin_request` needs from the client instance."""

    @property
    def client_id(self) -> str: ...

    @property
    def request_future_holder(self) -> RequestFutureHolder: ...

    def topic_route_data(self, topic: str) -> object: ...

    def send_heartbeat_to_all_broker_with_lock(self) -> bool: ...


def begin_request(
    host: _RequestHost,
    msg: Message,
    timeout_ms: int,
    future: concurrent.futures.Future[Message] | None,
    find_route: Callable[[str], object],
    clock_ms: Callable[[], int] = _now_ms,
) -> tuple[RequestResponseFuture, RequestFutureHolder, int]:
    """``prepareSendRequest`` + registration: stamp ``msg``, make sure the brokers know this
    client (a reply is pushed over this client's connection, found by its heartbeat), and
    register the pending request. Returns it, the holder and the time left in ms."""
    begin = clock_ms()
    cid = stamp_request(msg, host.client_id, timeout_ms)
    if host.topic_route_data(msg.topic) is None:
        find_route(msg.topic)
        host.send_heartbeat_to_all_broker_with_lock()
    holder = host.request_future_holder
    holder.start()
    rf = RequestResponseFuture(cid, timeout_ms, future, clock_ms=clock_ms)
    holder.put(rf)
    return rf, holder, timeout_ms - (clock_ms() - begin)


def send_request(
    holder: RequestFutureHolder,
    rf: RequestResponseFuture,
    send_async: Callable[[], concurrent.futures.Future[SendResult]],
) -> None:
    """Send the request; a failed send fails the request at once (``requestFail``)."""

    def sent(f: concurrent.futures.Future[SendResult]) -> None:
        exc = f.exception()
        # whoever removes the request from the table completes it: a reply or the
        # housekeeping may have done so already
        if exc is not None and holder.remove(rf.correlation_id) is rf:
            rf.fail(exc)
            rf.execute_request_callback()

    try:
        fut = send_async()
    except RocketqError:
        holder.remove(rf.correlation_id)
        raise
    fut.add_done_callback(sent)
