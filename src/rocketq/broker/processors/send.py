"""SEND_MESSAGE, SEND_MESSAGE_V2, SEND_BATCH_MESSAGE and CONSUMER_SEND_MSG_BACK.

Mirrors ``org.apache.rocketmq.broker.processor.SendMessageProcessor`` and
``AbstractSendMessageProcessor`` (4.9.x; reference 2.4 "Broker send-side behaviour", 3.7,
5.3). Invariants:

* Checks run in Java's order (``msgCheck``): an ordered topic on a broker without
  PERM_WRITE is refused (any other topic is still stored there), topic name valid and not a
  system topic, topic exists or is auto-created (TBW102 rules, ``%RETRY%`` topics with one
  queue), queue id in range. Codes and remarks are Java's.
* The batch path is chosen by the header's ``batch``/``m`` flag, not the request code
  (``asyncProcessRequest``); a batch is stored atomically with consecutive queue offsets.
* Stored property strings are rebuilt in Java HashMap order with ``CLUSTER`` added and
  ``WAIT`` removed (single messages), so records are byte-identical to Java's.
* Under SYNC_FLUSH the response is written only once the bytes are durable (or with
  FLUSH_DISK_TIMEOUT); a message sent with ``WAIT=false`` does not wait. The puts of one loop
  iteration wait together (``MessageStore.loop_group_commit``): on one request to the
  ``GroupCommitService`` thread (Java's), or with ``sync_flush_on_loop`` on one sync made on the
  loop.
* The server calls :meth:`SendMessageProcessor.process_now` (its immediate handler): checks,
  put and answer are plain calls, no coroutine per send; an ack that waits for the disk (the
  put is already in the commit log then) is a ``DeferredResponse`` that the wait answers:
  the loop's group commit calls the put's ``_DurableAck`` from the sync's completion itself
  (no future, no task, no loop iteration per send), the ``GroupCommitService`` thread's
  request through its future.
* A message with ``TRAN_MSG=true`` is stored as a half message in
  ``RMQ_SYS_TRANS_HALF_TOPIC`` (:mod:`rocketq.broker.transaction`), or refused with
  NO_PERMISSION under ``rejectTransactionMessage``; the answer names the half's offsets.
* Send responses always carry the ``MSG_REGION`` and ``TRACE_ON`` extFields: the Java
  client reads them without a null check (``MQClientAPIImpl.processSendResponse``).
* The usual send request (every ``@CFNotNull`` field present, numbers short runs of ASCII
  digits with at most a ``-``, ``batch`` absent or ``true``/``false``) is read straight from
  its extFields into a :class:`SendFields` (:func:`read_send_fields`: no header object, no
  generic codec); anything else goes through the header codec, so every refusal keeps its
  code and remark. Tests hold the two equal on the values the processor reads.
* A JSON send answer carries its extFields map written once from its values
  (:func:`answer_ext_json`, ``RemotingCommand.ext_json``): the frame encoder does not walk
  the map again. Byte-identical to the generic map encoding (checked at import, and by
  tests on generated answers).
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from json.encoder import encode_basestring as _json_quote
from typing import TYPE_CHECKING

from rocketq.broker.processors import decode_request_header
from rocketq.broker.store import (
    MessageExtBatch,
    MessageExtBrokerInner,
    PutMessageResult,
    PutMessageStatus,
)
from rocketq.broker.topics import is_not_allowed_send_topic, validate_topic
from rocketq.errors import IllegalArgumentError, MalformedFrameError
from rocketq.protocol.codes import PermName, RequestCode, ResponseCode, SerializeType, Version
from rocketq.protocol.frame import RemotingCommand, _json_flat_map
from rocketq.protocol.headers import (
    ConsumerSendMsgBackRequestHeader,
    SendMessageRequestHeader,
    SendMessageRequestHeaderV2,
    SendMessageResponseHeader,
)
from rocketq.protocol.java import plain_int
from rocketq.protocol.message import (
    MessageConst,
    decode_properties,
    decode_record,
    encode_properties,
    tags_code,
)
from rocketq.protocol.message_id import HostAddr, create_offset_msg_id
from rocketq.protocol.mixall import RETRY_GROUP_TOPIC_PREFIX, dlq_topic, retry_topic
from rocketq.remoting.helper import parse_addr
from rocketq.remoting.server import Channel, DeferredResponse

if TYPE_CHECKING:
    from rocketq.broker.broker import BrokerController

__all__ = [
    "V1_WIRE",
    "V2_WIRE",
    "SendFields",
    "SendMessageProcessor",
    "read_send_fields",
]

log = logging.getLogger(__name__)

#: ``AbstractSendMessageProcessor.DLQ_NUMS_PER_GROUP``
DLQ_NUMS_PER_GROUP = 1
_FAQ = " https://rocketmq.apache.org/docs/bestPractice/06FAQ"
_PERM_RW = int(PermName.PERM_READ | PermName.PERM_WRITE)
_PERM_WRITE = int(PermName.PERM_WRITE)  # plain int: no IntFlag arithmetic per request

_PUT_STATUS_RESPONSE: dict[PutMessageStatus, tuple[int, str | None]] = {
    PutMessageStatus.PUT_OK: (ResponseCode.SUCCESS, None),
    PutMessageStatus.FLUSH_DISK_TIMEOUT: (ResponseCode.FLUSH_DISK_TIMEOUT, None),
    PutMessageStatus.FLUSH_SLAVE_TIMEOUT: (ResponseCode.FLUSH_SLAVE_TIMEOUT, None),
    PutMessageStatus.SLAVE_NOT_AVAILABLE: (ResponseCode.SLAVE_NOT_AVAILABLE, None),
    PutMessageStatus.CREATE_MAPEDFILE_FAILED: (
        ResponseCode.SYSTEM_ERROR,
        "create mapped file failed, server is busy or broken.",
    ),
    PutMessageStatus.MESSAGE_ILLEGAL: (
        ResponseCode.MESSAGE_ILLEGAL,
        "the message is illegal, maybe msg body or properties length not matched. "
        "msg body length limit 128k, msg properties length limit 32k.",
    ),
    PutMessageStatus.PROPERTIES_SIZE_EXCEEDED: (
        ResponseCode.MESSAGE_ILLEGAL,
        "the message is illegal, maybe msg body or properties length not matched. "
        "msg body length limit 128k, msg properties length limit 32k.",
    ),
    PutMessageStatus.SERVICE_NOT_AVAILABLE: (
        ResponseCode.SERVICE_NOT_AVAILABLE,
        "service not available now. It may be caused by one of the following reasons: "
        "the broker's disk is full, messages are put to the slave, message store has been shut down, etc.",
    ),
    PutMessageStatus.OS_PAGECACHE_BUSY: (
        ResponseCode.SYSTEM_ERROR,
        "[PC_SYNCHRONIZED]broker busy, start flow control for a while",
    ),
    PutMessageStatus.UNKNOWN_ERROR: (ResponseCode.SYSTEM_ERROR, "UNKNOWN_ERROR"),
}


def _max_reconsume_times(request: RemotingCommand, from_header: int | None, group_max: int) -> int:
    """The group's ``retryMaxTimes``, or from V3_4_9 on the header's ``maxReconsumeTimes``
    (``handleRetryAndDLQ`` and ``asyncConsumerSendMsgBack`` alike)."""
    if request.version >= Version.V3_4_9 and from_header is not None:
        return int(from_header)
    return group_max


#: Peer addresses whose parsed born host is kept (SendMessageProcessor._born_host).
_BORN_HOSTS_MAX = 4096
#: Topic names remembered as valid send targets (SendMessageProcessor._msg_check).
_SENDABLE_TOPICS_MAX = 4096
_SUCCESS = int(ResponseCode.SUCCESS)

#: Answers to a message that was stored: they carry the SendMessageResponseHeader fields.
_STORED_CODES = frozenset(
    (
        ResponseCode.SUCCESS,
        ResponseCode.FLUSH_DISK_TIMEOUT,
        ResponseCode.FLUSH_SLAVE_TIMEOUT,
        ResponseCode.SLAVE_NOT_AVAILABLE,
    )
)


#: The send answer's extFields: what ``SendMessageResponseHeader.to_ext_fields`` writes for a
#: JSON answer over the preSend keys (MSG_REGION, TRACE_ON), in its (HashMap) order, worked
#: out once by that codec; ``_handle_put_result`` fills the same keys in the same order.
_ANSWER_ORDER: tuple[str, ...] = tuple(
    SendMessageResponseHeader(msg_id="", queue_id=0, queue_offset=0).to_ext_fields(
        {MessageConst.MSG_REGION: "", MessageConst.TRACE_ON: ""}
    )
)
_ANSWER_WIRE = {field.attr: field.wire for field in SendMessageResponseHeader.wire_fields()}
_MSG_ID = _ANSWER_WIRE["msg_id"]
_QUEUE_ID = _ANSWER_WIRE["queue_id"]
_QUEUE_OFFSET = _ANSWER_WIRE["queue_offset"]
#: The order :meth:`SendMessageProcessor._answer` builds its map in, literally (one dict, no
#: second pass): checked against the codec's order here, so a codec change fails at import.
_ANSWER_LITERAL_ORDER = (_QUEUE_ID, MessageConst.TRACE_ON, MessageConst.MSG_REGION, _MSG_ID, _QUEUE_OFFSET)
if _ANSWER_ORDER != _ANSWER_LITERAL_ORDER:  # pragma: no cover - a codec change
    raise AssertionError(f"send answer order {_ANSWER_ORDER} != {_ANSWER_LITERAL_ORDER}")


def answer_ext_json(queue_id: str, trace_on: str, region: str, msg_id: str, queue_offset: str) -> str:
    """The send answer's extFields map as JSON, in :data:`_ANSWER_LITERAL_ORDER`: what
    ``_json_flat_map`` writes for the map :meth:`SendMessageProcessor._answer` builds, from
    one template (the keys pre-written; ``queue_id``, ``trace_on`` and ``queue_offset`` are
    digits or ``true``/``false``, which JSON quoting leaves alone; region and msgId are
    quoted as the map encoder quotes them)."""
    return (
        f'{{"queueId":"{queue_id}","TRACE_ON":"{trace_on}","MSG_REGION":{_json_quote(region)},'
        f'"msgId":{_json_quote(msg_id)},"queueOffset":"{queue_offset}"}}'
    )


def _check_answer_template() -> None:
    values = ("3", "true", 'Region "\\x\u00e9\n', "C0A8000100002A9F0000000000000001", "-1")
    literal = _json_flat_map(dict(zip(_ANSWER_LITERAL_ORDER, values, strict=True)))
    if answer_ext_json(*values) != literal:  # pragma: no cover - a codec change
        raise AssertionError(f"send answer template {answer_ext_json(*values)} != {literal}")


_check_answer_template()

#: SEND_MESSAGE's V1 header or the V2 one (same attributes, one-letter wire names)
_SendHeader = SendMessageRequestHeader | SendMessageRequestHeaderV2


class SendFields:
    """The send header's values the processor reads, taken straight from the extFields of
    the usual request (:func:`read_send_fields`). A plain class (native ``__init__`` when
    compiled); its attributes are named and typed as the header's."""

    __slots__ = (
        "batch",
        "born_timestamp",
        "default_topic",
        "default_topic_queue_nums",
        "flag",
        "max_reconsume_times",
        "properties",
        "queue_id",
        "reconsume_times",
        "sys_flag",
        "topic",
    )

    def __init__(
        self,
        topic: str,
        default_topic: str,
        default_topic_queue_nums: int,
        queue_id: int,
        sys_flag: int,
        born_timestamp: int,
        flag: int,
        properties: str | None,
        reconsume_times: int | None,
        max_reconsume_times: int | None,
        batch: bool,
    ) -> None:
        self.topic = topic
        self.default_topic = default_topic
        self.default_topic_queue_nums = default_topic_queue_nums
        self.queue_id = queue_id
        self.sys_flag = sys_flag
        self.born_timestamp = born_timestamp
        self.flag = flag
        self.properties = properties
        self.reconsume_times = reconsume_times
        self.max_reconsume_times = max_reconsume_times
        self.batch = batch


#: what the send paths read: a decoded header, or the same values read directly
_SendValues = SendMessageRequestHeader | SendMessageRequestHeaderV2 | SendFields


class _StoredPut:
    """A put made for one send request: what its answer needs. Returned instead of the
    answer when the producer waits for the disk (SYNC_FLUSH, ``WAIT`` not false), for
    :meth:`SendMessageProcessor._durable_answer` to answer later."""

    __slots__ = ("msgs", "queue_id", "request", "result", "size", "started", "topic")

    def __init__(
        self,
        request: RemotingCommand,
        result: PutMessageResult,
        topic: str,
        queue_id: int,
        msgs: int,
        size: int,
    ) -> None:
        self.request = request
        self.result = result
        self.topic = topic
        self.queue_id = queue_id
        self.msgs = msgs
        self.size = size
        #: when the request's processing began (its send latency ends at the answer)
        self.started = 0.0


class _DurableAck:
    """The ack of a put that waits for the disk: called on the loop thread with whether a
    sync covered the put, it answers the send's :class:`DeferredResponse` at once."""

    __slots__ = ("deferred", "processor", "put")

    def __init__(self, processor: SendMessageProcessor, put: _StoredPut) -> None:
        self.processor = processor
        self.put = put
        self.deferred = DeferredResponse()

    def __call__(self, durable: bool) -> None:
        try:
            response = self.processor._durable_answer(self.put, durable)
        except Exception as exc:  # answered as the processor's error would be
            self.deferred.fail(exc)
            return
        self.deferred.answer(response)

    def from_future(self, fut: asyncio.Future[bool]) -> None:
        """The done-callback of the GroupCommitService thread's future (a cancelled one, at
        shutdown, answers nothing)."""
        if fut.cancelled():
            return
        try:
            durable = fut.result()
        except Exception as exc:
            self.deferred.fail(exc)
            return
        self(durable)


def _wire_names(cls: type[SendMessageRequestHeader] | type[SendMessageRequestHeaderV2]) -> tuple[str, ...]:
    """The wire names of ``cls``'s fields in :data:`_WIRE_ATTRS` order."""
    wire = {field.attr: field.wire for field in cls.wire_fields()}
    return tuple(wire[attr] for attr in _WIRE_ATTRS)


_WIRE_ATTRS = (
    "producer_group",
    "topic",
    "default_topic",
    "default_topic_queue_nums",
    "queue_id",
    "sys_flag",
    "born_timestamp",
    "flag",
    "properties",
    "reconsume_times",
    "max_reconsume_times",
    "batch",
)
#: SEND_MESSAGE's names, and SEND_MESSAGE_V2 / SEND_BATCH_MESSAGE's one-letter ones
V1_WIRE = _wire_names(SendMessageRequestHeader)
V2_WIRE = _wire_names(SendMessageRequestHeaderV2)


#: "-1".."999" -> value: the usual small numbers, looked up before any parsing
_SMALL_INTS: dict[str, int] = {str(i): i for i in range(-1, 1000)}


def read_send_fields(ext: dict[str, str] | None, wire: tuple[str, ...]) -> SendFields | None:
    """The send header's values read straight from ``ext`` (``wire``: :data:`V1_WIRE` or
    :data:`V2_WIRE`), or None when the request is unusual (a required field missing, a number
    with a ``+``, a long run of digits or anything but ASCII digits, a ``batch`` other than
    ``true``/``false``): then the header codec decides, and reports the refusal."""
    if ext is None:
        return None
    topic = ext.get(wire[1])
    default_topic = ext.get(wire[2])
    nums_text = ext.get(wire[3])
    qid_text = ext.get(wire[4])
    sys_text = ext.get(wire[5])
    born_text = ext.get(wire[6])
    flag_text = ext.get(wire[7])
    if (
        wire[0] not in ext
        or topic is None
        or default_topic is None
        or nums_text is None
        or qid_text is None
        or sys_text is None
        or born_text is None
        or flag_text is None
    ):
        return None
    small = _SMALL_INTS
    queue_nums = small.get(nums_text)
    if queue_nums is None and (queue_nums := plain_int(nums_text, 9)) is None:
        return None
    queue_id = small.get(qid_text)
    if queue_id is None and (queue_id := plain_int(qid_text, 9)) is None:
        return None
    sys_flag = small.get(sys_text)
    if sys_flag is None and (sys_flag := plain_int(sys_text, 9)) is None:
        return None
    flag = small.get(flag_text)
    if flag is None and (flag := plain_int(flag_text, 9)) is None:
        return None
    if born_text.isdigit() and len(born_text) <= 18 and born_text.isascii():
        born = int(born_text)
    elif (born_or_none := plain_int(born_text, 18)) is not None:
        born = born_or_none
    else:
        return None
    reconsume_text = ext.get(wire[9])
    reconsume: int | None = None
    if reconsume_text is not None:
        reconsume = small.get(reconsume_text)
        if reconsume is None and (reconsume := plain_int(reconsume_text, 9)) is None:
            return None
    max_text = ext.get(wire[10])
    max_reconsume: int | None = None
    if max_text is not None:
        max_reconsume = small.get(max_text)
        if max_reconsume is None and (max_reconsume := plain_int(max_text, 9)) is None:
            return None
    batch_text = ext.get(wire[11])
    if batch_text is None or batch_text == "false":
        batch = False
    elif batch_text == "true":
        batch = True
    else:
        return None
    return SendFields(
        topic,
        default_topic,
        queue_nums,
        queue_id,
        sys_flag,
        born,
        flag,
        ext.get(wire[8]),
        reconsume,
        max_reconsume,
        batch,
    )


class SendMessageProcessor:
    """Serves the send codes and CONSUMER_SEND_MSG_BACK."""

    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker
        self._random = random.Random()
        self._born_hosts: dict[str, HostAddr] = {}
        #: Topic names that passed ``validate_topic`` and ``is_not_allowed_send_topic`` (both
        #: depend on the name alone): the usual send checks its name with one set lookup.
        self._sendable_topics: set[str] = set()
        #: ``broker.store_host``, read once the server is bound (the first request comes after)
        self._store_host: HostAddr | None = None

    async def process(self, channel: Channel, request: RemotingCommand) -> RemotingCommand | None:
        outcome = self.process_now(channel, request)
        if isinstance(outcome, DeferredResponse):
            return await outcome.wait()
        return outcome

    def process_now(
        self, channel: Channel, request: RemotingCommand
    ) -> RemotingCommand | DeferredResponse | None:
        """The server's immediate handler (:data:`~rocketq.remoting.server.ImmediateHandler`):
        the answer, without a coroutine, unless the ack waits for the disk (SYNC_FLUSH): then
        a :class:`DeferredResponse` that the sync's completion answers (no task, no future
        and no loop iteration per send)."""
        started = time.perf_counter()
        try:
            outcome = self._process(channel, request)
        except BaseException:
            self._observe_latency(started)
            raise
        if isinstance(outcome, _StoredPut):
            outcome.started = started
            result = outcome.result
            ack = _DurableAck(self, outcome)
            if result.flush_offset >= 0:
                # the loop's group commit (one sync for the puts it covers)
                self.broker.store.loop_group_commit(channel.loop).on_durable(result.flush_offset, ack)
            else:
                # the GroupCommitService thread's request (_handle_put_result: one of the two)
                assert result.flush_future is not None
                asyncio.wrap_future(result.flush_future, loop=channel.loop).add_done_callback(ack.from_future)
            return ack.deferred
        self._observe_latency(started)
        return outcome

    def _durable_answer(self, pending: _StoredPut, durable: bool) -> RemotingCommand:
        """The answer once the disk has the put (``durable`` False: the flush timed out,
        FLUSH_DISK_TIMEOUT; the message *is* stored)."""
        self._observe_latency(pending.started)
        return self._answer(
            pending, PutMessageStatus.PUT_OK if durable else PutMessageStatus.FLUSH_DISK_TIMEOUT
        )

    def _observe_latency(self, started: float) -> None:
        self.broker.stats.send_latency.observe((time.perf_counter() - started) * 1000.0)

    def _process(self, channel: Channel, request: RemotingCommand) -> RemotingCommand | _StoredPut | None:
        """Everything but the wait for the disk, without suspending (:meth:`process_now`):
        the answer, or the stored put whose ack waits for its flush."""
        if request.code == RequestCode.CONSUMER_SEND_MSG_BACK:
            return self._consumer_send_msg_back(channel, request)
        v1 = request.code == RequestCode.SEND_MESSAGE
        header: _SendValues
        fields = read_send_fields(request.ext_fields, V1_WIRE if v1 else V2_WIRE)
        if fields is None:
            checked = self._decode_and_check(channel, request, v1)
            if isinstance(checked, RemotingCommand):
                return checked
            header, queue_id = checked
        else:
            error, queue_id = self._msg_check(channel, request, fields)
            if error is not None:
                return error
            header = fields
        try:
            if header.batch:
                return self._send_batch(channel, request, header, queue_id)
            return self._send_one(channel, request, header, queue_id)
        except IllegalArgumentError as exc:
            # encode_properties refuses a property value holding a separator (Java's
            # string2messageProperties keeps the rest of the segment, \x01 included, and
            # stores a corrupt property string): bad input, answered MESSAGE_ILLEGAL.
            return self._response(request, ResponseCode.MESSAGE_ILLEGAL, f"the message is illegal: {exc}")

    # ------------------------------------------------------------------ checks
    def _decode_and_check(
        self, channel: Channel, request: RemotingCommand, v1: bool
    ) -> RemotingCommand | tuple[_SendHeader, int]:
        """The send header (V1 names, or V2 one-letter ones) and ``msgCheck``: an error
        response, or the header and the queue id to use."""
        header: _SendHeader | RemotingCommand
        if v1:
            header = decode_request_header(request, SendMessageRequestHeader)
        else:
            # V2 one-letter fields; a missing one is reported by its wire name, as in Java.
            # Java maps V2 to V1 (createSendMessageRequestHeaderV1); both carry the same
            # attributes here, so the V2 header is used as it is.
            header = decode_request_header(request, SendMessageRequestHeaderV2)
        if isinstance(header, RemotingCommand):
            return header
        error, queue_id = self._msg_check(channel, request, header)
        if error is not None:
            return error
        return header, queue_id

    def _born_host(self, channel: Channel) -> HostAddr:
        """The peer's (ip, port), parsed once per peer address (bounded, cleared when full)."""
        addr = channel.remote_addr
        hosts = self._born_hosts
        host = hosts.get(addr)
        if host is None:
            if len(hosts) >= _BORN_HOSTS_MAX:
                hosts.clear()
            host = hosts[addr] = parse_addr(addr)
        return host

    def _store_host_of(self, broker: BrokerController) -> HostAddr:
        """``broker.store_host``, one tuple for every record (the port is bound before the
        first request arrives)."""
        host = self._store_host
        if host is None:
            host = self._store_host = broker.store_host
        return host

    def _response(self, request: RemotingCommand, code: int, remark: str | None) -> RemotingCommand:
        cfg = self.broker.config
        resp = request.make_response(code, remark)
        # preSend: these two ride on every send response
        resp.ext_fields = {
            MessageConst.MSG_REGION: cfg.region_id,
            MessageConst.TRACE_ON: "true" if cfg.trace_on else "false",
        }
        return resp

    def _msg_check(
        self, channel: Channel, request: RemotingCommand, header: _SendValues
    ) -> tuple[RemotingCommand | None, int]:
        """``msgCheck``: an error response, or (None, queue id to use)."""
        broker = self.broker
        topic = str(header.topic)
        tcm = broker.topic_config_manager
        # A broker without PERM_WRITE refuses only sends to ordered topics: the name server
        # already hides its queues from producers (the route carries the broker's perm), and
        # an ordered message must not land on a queue its consumers do not read in order.
        if not broker.config.broker_permission & _PERM_WRITE and tcm.is_order_topic(topic):
            return (
                self._response(
                    request,
                    ResponseCode.NO_PERMISSION,
                    f"the broker[{broker.config.broker_ip1}] sending message is forbidden",
                ),
                0,
            )
        sendable = self._sendable_topics
        if topic not in sendable:
            problem = validate_topic(topic)
            if problem is not None:
                return self._response(request, ResponseCode.SYSTEM_ERROR, problem), 0
            if is_not_allowed_send_topic(topic):
                return (
                    self._response(
                        request,
                        ResponseCode.NO_PERMISSION,
                        f"Sending message to topic[{topic}] is forbidden.",
                    ),
                    0,
                )
            if len(sendable) >= _SENDABLE_TOPICS_MAX:
                sendable.clear()
            sendable.add(topic)
        tc = tcm.select_topic_config(topic)
        if tc is None:
            tc = tcm.create_topic_in_send_message_method(
                topic,
                str(header.default_topic or ""),
                channel.remote_addr,
                int(header.default_topic_queue_nums or 4),
                0,
            )
            if tc is None and topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
                tc = tcm.create_topic_in_send_message_back_method(topic, 1, _PERM_RW, 0)
            if tc is None:
                return (
                    self._response(
                        request,
                        ResponseCode.TOPIC_NOT_EXIST,
                        f"topic[{topic}] not exist, apply first please!{_FAQ}",
                    ),
                    0,
                )
        queue_id = int(header.queue_id if header.queue_id is not None else -1)
        id_valid = max(tc.write_queue_nums, tc.read_queue_nums)
        if queue_id >= id_valid:
            return (
                self._response(
                    request,
                    ResponseCode.SYSTEM_ERROR,
                    f"request queueId[{queue_id}] is illegal, {tc} Producer: {channel.remote_addr}",
                ),
                0,
            )
        if queue_id < 0:
            queue_id = self._random.randrange(max(tc.write_queue_nums, 1))
        return None, queue_id

    # ------------------------------------------------------------------ single message
    def _send_one(
        self, channel: Channel, request: RemotingCommand, header: _SendValues, queue_id: int
    ) -> RemotingCommand | _StoredPut:
        broker = self.broker
        topic = str(header.topic)
        props = decode_properties(header.properties or "")
        reconsume_times = int(header.reconsume_times or 0)
        if topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            redirected = self._handle_retry_and_dlq(request, header, queue_id, props, reconsume_times)
            if isinstance(redirected, RemotingCommand):
                return redirected
            topic, queue_id = redirected
        props[MessageConst.CLUSTER] = broker.config.broker_cluster_name
        wait = props.pop(MessageConst.WAIT, None)
        props_string = encode_properties(props, java_order=True)
        if wait is not None:
            props[MessageConst.WAIT] = wait
        inner = MessageExtBrokerInner(
            topic=topic,
            queue_id=queue_id,
            flag=int(header.flag or 0),
            body=request.body,
            properties=props,
            properties_string=props_string,
            tags_code=tags_code(props.get(MessageConst.TAGS)),
            sys_flag=int(header.sys_flag or 0),
            born_timestamp=int(header.born_timestamp or 0),
            born_host=self._born_host(channel),
            store_host=self._store_host_of(broker),
            reconsume_times=reconsume_times,
        )
        if (props.get(MessageConst.TRAN_MSG) or "").lower() == "true":  # Boolean.parseBoolean
            if broker.config.reject_transaction_message:
                return self._response(
                    request,
                    ResponseCode.NO_PERMISSION,
                    f"the broker[{broker.config.broker_ip1}] sending transaction message is forbidden",
                )
            # TransactionalMessageService.prepareMessage: stored as a half message
            result = broker.transactional_message_bridge.put_half_message(inner)
        else:
            result = broker.store.put_message(inner, defer_flush=True)
        wait_flush = wait != "false"
        put = _StoredPut(request, result, topic, queue_id, 1, len(request.body))
        return self._handle_put_result(put, wait_flush)

    def _handle_retry_and_dlq(
        self,
        request: RemotingCommand,
        header: _SendValues,
        queue_id: int,
        props: dict[str, str],
        reconsume_times: int,
    ) -> RemotingCommand | tuple[str, int]:
        """``handleRetryAndDLQ``: a retry-topic message over its max goes to the group's DLQ;
        any other keeps ``queue_id``, the queue ``msgCheck`` chose (a negative header queueId
        was replaced by a random writable queue there)."""
        broker = self.broker
        topic = str(header.topic)
        group = topic[len(RETRY_GROUP_TOPIC_PREFIX) :]
        sgc = broker.subscription_group_manager.find_subscription_group_config(group)
        if sgc is None:
            return self._response(
                request,
                ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                f"subscription group not exist, {group}{_FAQ}",
            )
        max_reconsume = _max_reconsume_times(request, header.max_reconsume_times, sgc.retry_max_times)
        if reconsume_times >= max_reconsume:
            topic = dlq_topic(group)
            queue_id = self._random.randrange(DLQ_NUMS_PER_GROUP)
            broker.topic_config_manager.create_topic_in_send_message_back_method(
                topic, DLQ_NUMS_PER_GROUP, _PERM_RW, 0
            )
            props[MessageConst.DELAY] = "0"
        return topic, queue_id

    # ------------------------------------------------------------------ batch
    def _send_batch(
        self, channel: Channel, request: RemotingCommand, header: _SendValues, queue_id: int
    ) -> RemotingCommand | _StoredPut:
        broker = self.broker
        topic = str(header.topic)
        if topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            return self._response(
                request, ResponseCode.MESSAGE_ILLEGAL, "batch request does not support retry group " + topic
            )
        body = request.body
        if not body:
            return self._response(request, ResponseCode.MESSAGE_ILLEGAL, "the batch is empty")
        batch_props = decode_properties(header.properties or "")
        batch_props[MessageConst.CLUSTER] = broker.config.broker_cluster_name
        batch = MessageExtBatch(
            topic=topic,
            queue_id=queue_id,
            body=body,
            born_host=self._born_host(channel),
            store_host=broker.store_host,
            properties=batch_props,
            sys_flag=int(header.sys_flag or 0),
            born_timestamp=int(header.born_timestamp or 0),
            reconsume_times=int(header.reconsume_times or 0),
        )
        try:
            result = broker.store.put_batch(batch, defer_flush=True)
        except MalformedFrameError as exc:
            return self._response(
                request, ResponseCode.MESSAGE_ILLEGAL, f"the batch body is malformed: {exc}"
            )
        wait_flush = batch_props.get(MessageConst.WAIT) != "false"
        return self._handle_put_result(
            _StoredPut(request, result, topic, queue_id, batch.msgs, batch.body_size), wait_flush
        )

    # ------------------------------------------------------------------ result
    def _handle_put_result(self, put: _StoredPut, wait_flush: bool) -> RemotingCommand | _StoredPut:
        """The answer to a put, or (SYNC_FLUSH, the producer waits) the put itself, whose
        answer :meth:`_durable_answer` writes once the disk has it."""
        result = put.result
        if (
            wait_flush
            and result.status is PutMessageStatus.PUT_OK
            and (result.flush_offset >= 0 or result.flush_future is not None)
        ):
            return put
        return self._answer(put, result.status)

    def _answer(self, put: _StoredPut, status: PutMessageStatus) -> RemotingCommand:
        """The send answer for ``put`` with ``status`` (the put's, or its flush outcome)."""
        request = put.request
        queue_id = put.queue_id
        if status is PutMessageStatus.PUT_OK:  # no Enum hash (a Python-level call) when stored
            code, remark = _SUCCESS, None
        else:
            code, remark = _PUT_STATUS_RESPONSE.get(status, (ResponseCode.SYSTEM_ERROR, status.name))
        append = put.result.append
        if append is None or code not in _STORED_CODES:
            return self._response(request, code, remark)
        self.broker.stats.inc_topic_put(put.topic, put.msgs, put.size)
        if request.serialize_type == SerializeType.JSON:
            # the map the header codec would build, in its order, without the header object
            # (in _ANSWER_LITERAL_ORDER, checked against the codec at import)
            # and the same map written once from the answer template (answer_ext_json)
            cfg = self.broker.config
            qid = str(queue_id)
            trace = "true" if cfg.trace_on else "false"
            region = cfg.region_id
            msg_id = append.msg_id
            offset = str(append.logics_offset)
            response = request.make_response(
                code,
                remark,
                {
                    _QUEUE_ID: qid,
                    MessageConst.TRACE_ON: trace,
                    MessageConst.MSG_REGION: region,
                    _MSG_ID: msg_id,
                    _QUEUE_OFFSET: offset,
                },
            )
            response.ext_json = answer_ext_json(qid, trace, region, msg_id, offset)
            return response
        response = self._response(request, code, remark)
        header = SendMessageResponseHeader(
            msg_id=append.msg_id, queue_id=queue_id, queue_offset=append.logics_offset
        )
        # MSG_REGION/TRACE_ON were put into the map first (preSend); the header fields join them
        response.ext_fields = header.to_ext_fields(response.ext_fields, serialize_type=request.serialize_type)
        return response

    # ------------------------------------------------------------------ send back
    def _consumer_send_msg_back(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        """``asyncConsumerSendMsgBack`` (5.3): re-store a failed message to %RETRY% or %DLQ%."""
        broker = self.broker
        header = decode_request_header(request, ConsumerSendMsgBackRequestHeader)
        if isinstance(header, RemotingCommand):
            return header
        group = str(header.group)
        sgc = broker.subscription_group_manager.find_subscription_group_config(group)
        if sgc is None:
            return request.make_response(
                ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, f"subscription group not exist, {group}{_FAQ}"
            )
        if not broker.config.broker_permission & _PERM_WRITE:
            return request.make_response(
                ResponseCode.NO_PERMISSION,
                f"the broker[{broker.config.broker_ip1}] sending message is forbidden",
            )
        if sgc.retry_queue_nums <= 0:
            return request.make_response(ResponseCode.SUCCESS)
        tcm = broker.topic_config_manager
        new_topic = retry_topic(group)
        queue_id = self._random.randrange(sgc.retry_queue_nums)
        tc = tcm.create_topic_in_send_message_back_method(new_topic, sgc.retry_queue_nums, _PERM_RW, 0)
        if not tc.perm & _PERM_WRITE:
            return request.make_response(
                ResponseCode.NO_PERMISSION, f"the topic[{new_topic}] sending message is forbidden"
            )
        offset = int(header.offset or 0)
        # lookMessageByOffset decodes without decompressing: the body is re-stored as it was
        raw = broker.store.select_one_message_by_offset(offset)
        msg = decode_record(raw, decompress=False) if raw is not None else None
        if msg is None:
            return request.make_response(
                ResponseCode.SYSTEM_ERROR, f"look message by offset failed, {offset}"
            )
        props = dict(msg.properties)
        if MessageConst.RETRY_TOPIC not in props:
            props[MessageConst.RETRY_TOPIC] = msg.topic
        props[MessageConst.WAIT] = "false"
        delay_level = int(header.delay_level or 0)
        max_reconsume = _max_reconsume_times(request, header.max_reconsume_times, sgc.retry_max_times)
        if msg.reconsume_times >= max_reconsume or delay_level < 0:
            new_topic = dlq_topic(group)
            queue_id = self._random.randrange(DLQ_NUMS_PER_GROUP)
            tcm.create_topic_in_send_message_back_method(new_topic, DLQ_NUMS_PER_GROUP, _PERM_RW, 0)
        else:
            if delay_level == 0:
                delay_level = 3 + msg.reconsume_times
            props[MessageConst.DELAY] = str(delay_level)
        if not props.get(MessageConst.ORIGIN_MESSAGE_ID):
            props[MessageConst.ORIGIN_MESSAGE_ID] = create_offset_msg_id(
                msg.store_host, msg.commit_log_offset
            )
        inner = MessageExtBrokerInner(
            topic=new_topic,
            queue_id=queue_id,
            flag=msg.flag,
            body=msg.body,
            properties=props,
            properties_string=encode_properties(props, java_order=True),
            tags_code=tags_code(props.get(MessageConst.TAGS)),
            sys_flag=msg.sys_flag,
            born_timestamp=msg.born_timestamp,
            born_host=msg.born_host,
            store_host=msg.store_host,
            reconsume_times=msg.reconsume_times + 1,
        )
        result = broker.store.put_message(inner)
        if result.status == PutMessageStatus.PUT_OK:
            broker.stats.inc_topic_put(new_topic, 1, len(msg.body))
            return request.make_response(ResponseCode.SUCCESS)
        return request.make_response(ResponseCode.SYSTEM_ERROR, result.status.name)
