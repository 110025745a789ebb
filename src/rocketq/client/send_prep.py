"""Send preparation and retry rules shared by the blocking and the asyncio producer.

Pure logic (no I/O) of ``DefaultMQProducerImpl`` (4.9.7): ``Validators.checkMessage``,
``tryToCompressMessage``, ``MessageBatch.generateFromList``, the request header of
``sendKernelImpl``, the explicit queue checks of ``send(msg, mq)`` / ``sendSelectImpl`` and
the retry decisions and final error of ``sendDefaultImpl``. :class:`rocketq.client.producer.Producer`
and :class:`rocketq.aio.producer.AsyncProducer` both call these, so the two can never differ on
what goes on the wire or on when a send is retried.

The blocking producer's sync and oneway attempts write their request straight from the
prepared send (:func:`send_request_of`: no header object, no generic codec) and read the
answer straight into a ``SendResult`` (:func:`send_result_of`); tests hold both equal to the
header path (``MQClientAPI.build_send_request(send_header(...))`` and
``MQClientAPI.process_send_response``), to which anything unusual in an answer falls back.
A sync attempt of a client that does not sign its requests goes further: its whole JSON
frame is one f-string (:func:`send_frame_of`, tested byte-equal to the encoded request) sent
with ``RemotingClient.invoke_sync_frame`` (:func:`send_frame_sync`; the asyncio producer:
``AsyncRemotingClient.invoke_frame``).

Invariants: every prepared message has a UNIQ_KEY (``MessageClientIDSetter.setUniqID``), which
is ``SendResult.msg_id`` (a batch joins its messages' keys with commas); bodies of
``compress_msg_body_over_howmuch`` bytes or more are zlib-compressed (batches never are);
``max_message_size`` is checked before anything is sent.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from json.encoder import encode_basestring as _json_quote
from typing import cast

from rocketq.client.api_results import SEND_STATUS_BY_CODE, SendResult, SendStatus
from rocketq.client.config import ProducerConfig, validate_topic
from rocketq.client.impl.mq_client_api import MQClientAPI
from rocketq.client.latency import MQFaultStrategy, TopicPublishInfo
from rocketq.client.request_response import is_reply_message
from rocketq.client.selectors import SelectorLike, as_selector
from rocketq.common.log_limiter import LogLimiter
from rocketq.errors import (
    BrokerError,
    ClientError,
    IllegalArgumentError,
    RemotingError,
    RequestTimeoutError,
    RocketqError,
)
from rocketq.protocol.codes import MessageSysFlag, RequestCode, SerializeType
from rocketq.protocol.frame import RemotingCommand, encode_json_request
from rocketq.protocol.headers import (
    SendMessageRequestHeader,
    SendMessageRequestHeaderV2,
    SendMessageResponseHeader,
)
from rocketq.protocol.message import (
    Message,
    MessageConst,
    compress_body,
    encode_batch,
    encode_properties,
)
from rocketq.protocol.message_id import new_unique_id, new_unique_ids
from rocketq.protocol.message_queue import MessageQueue
from rocketq.protocol.mixall import RETRY_GROUP_TOPIC_PREFIX
from rocketq.remoting.client import RemotingClient

log = logging.getLogger(__name__)
#: read once: an enum member is a class attribute lookup each time it is named
_SEND_OK = SendStatus.SEND_OK
_COMPRESSED_ZLIB = int(MessageSysFlag.COMPRESSED_FLAG | MessageSysFlag.COMPRESSION_ZLIB_TYPE)
_TRANSACTION_PREPARED = int(MessageSysFlag.TRANSACTION_PREPARED_TYPE)
#: A failed send logs "retry another broker" once per broker per 10 s (three attempts to one
#: broker would log three lines per send), with the count of the lines left out.
_log_limiter = LogLimiter(log)

__all__ = [
    "PreparedSend",
    "SendAttempts",
    "SendKernel",
    "auto_batch_body_limit",
    "check_explicit_queue",
    "check_message",
    "give_up_error",
    "prepare_batch",
    "prepare_checked_batch",
    "prepare_message",
    "prepare_send",
    "retry_after_result",
    "select_with",
    "send_code_of",
    "send_frame_for",
    "send_frame_of",
    "send_frame_sync",
    "send_header",
    "send_request_of",
    "send_result_of",
    "send_v2_fields",
]


class PreparedSend:
    """One send's wire data: everything but the queue.

    A plain class, not a dataclass: compiled, its ``__init__`` is native, where a dataclass
    keeps the interpreted ``__init__`` the dataclass decorator generates (one Python call
    per send)."""

    __slots__ = (
        "batch",
        "body",
        "flag",
        "max_reconsume_times",
        "properties",
        "reconsume_times",
        "sys_flag",
        "topic",
        "uniq_id",
    )

    def __init__(
        self,
        topic: str,
        body: bytes,
        sys_flag: int,
        flag: int,
        properties: str,
        uniq_id: str,
        batch: bool,
        reconsume_times: int | None,
        max_reconsume_times: int | None,
    ) -> None:
        self.topic = topic
        self.body = body
        self.sys_flag = sys_flag
        self.flag = flag
        self.properties = properties
        self.uniq_id = uniq_id
        self.batch = batch
        self.reconsume_times = reconsume_times
        self.max_reconsume_times = max_reconsume_times

    def __repr__(self) -> str:
        return (
            f"PreparedSend(topic={self.topic!r}, body=<{len(self.body)} bytes>, sys_flag={self.sys_flag}, "
            f"flag={self.flag}, properties={self.properties!r}, uniq_id={self.uniq_id!r}, batch={self.batch}, "
            f"reconsume_times={self.reconsume_times}, max_reconsume_times={self.max_reconsume_times})"
        )


def check_message(msg: Message, config: ProducerConfig) -> None:
    """``Validators.checkMessage``: topic, non-empty body, ``max_message_size``."""
    if not isinstance(msg, Message):
        raise IllegalArgumentError(f"the message is not a Message: {msg!r}")
    validate_topic(msg.topic, for_send=True)  # (it remembers the valid names)
    if not msg.body:
        raise IllegalArgumentError("the message body length is zero")
    if len(msg.body) > config.max_message_size:
        raise IllegalArgumentError(f"the message body size over max value, MAX: {config.max_message_size}")


def auto_batch_body_limit(config: ProducerConfig) -> int:
    """Bodies of this many bytes or more are not auto-batched: they are compressed (batches
    never are) or refused (over ``max_message_size``)."""
    return min(config.compress_msg_body_over_howmuch, config.max_message_size + 1)


def prepare_message(msg: Message, config: ProducerConfig) -> PreparedSend:
    """One message: UNIQ_KEY set, body compressed past the threshold, retry fields moved."""
    check_message(msg, config)
    props = msg.properties
    uniq = props.get(MessageConst.UNIQ_KEY)
    if not uniq:
        uniq = new_unique_id()
        props[MessageConst.UNIQ_KEY] = uniq
    body = msg.body
    sys_flag = 0
    if len(body) >= config.compress_msg_body_over_howmuch:
        # DefaultMQProducerImpl.tryToCompressMessage: COMPRESSED_FLAG plus the type bits (ZLIB)
        body = compress_body(body, config.compress_level)
        sys_flag |= _COMPRESSED_ZLIB
    tran = props.get(MessageConst.TRAN_MSG)
    if tran is not None and tran.lower() == "true":
        sys_flag |= _TRANSACTION_PREPARED
    reconsume: int | None = 0
    max_reconsume: int | None = None
    wire = props
    if msg.topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
        # sendKernelImpl moves these two properties into header fields j and l (of the
        # request, not of the message: a copy)
        wire = dict(props)
        rt = wire.pop(MessageConst.RECONSUME_TIME, None)
        mrt = wire.pop(MessageConst.MAX_RECONSUME_TIMES, None)
        reconsume = int(rt) if rt and rt.lstrip("-").isdigit() else 0
        max_reconsume = int(mrt) if mrt and mrt.lstrip("-").isdigit() else None
    return PreparedSend(
        topic=msg.topic,
        body=body,
        sys_flag=sys_flag,
        flag=msg.flag,
        properties=encode_properties(wire, java_order=True),
        uniq_id=uniq,
        batch=False,
        reconsume_times=reconsume,
        max_reconsume_times=max_reconsume,
    )


def prepare_batch(msgs: Sequence[Message], config: ProducerConfig) -> PreparedSend:
    """``MessageBatch.generateFromList`` + ``DefaultMQProducer.batch``."""
    if not msgs:
        raise IllegalArgumentError("a batch needs at least one message")
    first = msgs[0]
    topic = first.topic
    wait = first.wait_store_msg_ok  # a property lookup: read once, not per message
    for msg in msgs:
        check_message(msg, config)
        if msg.topic != topic:
            raise IllegalArgumentError("The topic of the messages in one batch should be the same")
        if msg.delay_time_level > 0:
            raise IllegalArgumentError("TimeDelayLevel is not supported for batching")
        if msg.topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            raise IllegalArgumentError("Retry Group is not supported for batching")
        if msg.wait_store_msg_ok != wait:
            raise IllegalArgumentError("The waitStoreMsgOK of the messages in one batch should the same")
    return prepare_checked_batch(msgs, config)


def prepare_checked_batch(msgs: Sequence[Message], config: ProducerConfig) -> PreparedSend:
    """:func:`prepare_batch` of messages known to pass its checks (each checked, one topic, no
    delay, no retry topic, one WAIT value: the auto-batch accumulator's batches), without
    checking each message again: UNIQ_KEYs set, entries encoded, the batch's size checked."""
    uniq_key = MessageConst.UNIQ_KEY
    props_of = [msg.properties for msg in msgs]
    missing = [props for props in props_of if not props.get(uniq_key)]
    if missing:  # the usual case: every message of the batch, one id generation for all
        for props, uniq in zip(missing, new_unique_ids(len(missing)), strict=True):
            props[uniq_key] = uniq
    uniq_ids = [props[uniq_key] for props in props_of]
    body = encode_batch(msgs)
    if len(body) > config.max_message_size:
        raise IllegalArgumentError(f"the message body size over max value, MAX: {config.max_message_size}")
    batch_props = {MessageConst.WAIT: "true" if msgs[0].wait_store_msg_ok else "false"}
    return PreparedSend(
        topic=msgs[0].topic,
        body=body,
        sys_flag=0,
        flag=0,
        properties=encode_properties(batch_props, java_order=True),
        uniq_id=",".join(uniq_ids),
        batch=True,
        reconsume_times=0,
        max_reconsume_times=None,
    )


def prepare_send(msg: Message | Sequence[Message], config: ProducerConfig) -> PreparedSend:
    """A message, or a list of messages as one batch."""
    if isinstance(msg, Message):
        return prepare_message(msg, config)
    if isinstance(cast(object, msg), (str, bytes)):
        raise IllegalArgumentError("send() takes a Message or a list of Messages")
    return prepare_batch(list(msg), config)


def send_header(prep: PreparedSend, mq: MessageQueue, config: ProducerConfig) -> SendMessageRequestHeader:
    """The request header of ``sendKernelImpl`` for one attempt to ``mq``."""
    return SendMessageRequestHeader(
        producer_group=config.producer_group,
        topic=prep.topic,
        default_topic=config.create_topic_key,
        default_topic_queue_nums=config.default_topic_queue_nums,
        queue_id=mq.queue_id,
        sys_flag=prep.sys_flag,
        born_timestamp=time.time_ns() // 1_000_000,
        flag=prep.flag,
        properties=prep.properties,
        reconsume_times=prep.reconsume_times,
        unit_mode=False,
        batch=prep.batch,
        max_reconsume_times=prep.max_reconsume_times,
        bname=mq.broker_name,
    )


#: SendMessageRequestHeaderV2's wire names by attribute (``a``..``n``)
_V2_WIRE = {field.attr: field.wire for field in SendMessageRequestHeaderV2.wire_fields()}
_W_GROUP = _V2_WIRE["producer_group"]
_W_TOPIC = _V2_WIRE["topic"]
_W_DEFAULT_TOPIC = _V2_WIRE["default_topic"]
_W_DEFAULT_QUEUES = _V2_WIRE["default_topic_queue_nums"]
_W_QUEUE_ID = _V2_WIRE["queue_id"]
_W_SYS_FLAG = _V2_WIRE["sys_flag"]
_W_BORN = _V2_WIRE["born_timestamp"]
_W_FLAG = _V2_WIRE["flag"]
_W_PROPERTIES = _V2_WIRE["properties"]
_W_RECONSUME = _V2_WIRE["reconsume_times"]
_W_UNIT_MODE = _V2_WIRE["unit_mode"]
_W_MAX_RECONSUME = _V2_WIRE["max_reconsume_times"]
_W_BATCH = _V2_WIRE["batch"]
_W_BNAME = _V2_WIRE["bname"]
_ROCKETMQ = int(SerializeType.ROCKETMQ)
_JSON = int(SerializeType.JSON)
#: SendMessageResponseHeader's wire names
_R_WIRE = {field.attr: field.wire for field in SendMessageResponseHeader.wire_fields()}
_R_MSG_ID = _R_WIRE["msg_id"]
_R_QUEUE_ID = _R_WIRE["queue_id"]
_R_QUEUE_OFFSET = _R_WIRE["queue_offset"]
_R_TRANSACTION_ID = _R_WIRE["transaction_id"]
_SEND_V2 = int(RequestCode.SEND_MESSAGE_V2)
_SEND_BATCH = int(RequestCode.SEND_BATCH_MESSAGE)
_SEND_REPLY_V2 = int(RequestCode.SEND_REPLY_MESSAGE_V2)


def _v2_order(serialize_type: int, reconsume: bool, max_reconsume: bool) -> tuple[str, ...]:
    """The V2 map's key order as the header codec writes it for a send with (or without) the
    two optional fields: worked out once by that codec, as the broker's ``_ANSWER_ORDER``."""
    sample = PreparedSend(
        "", b"", 0, 0, "", "", False, 0 if reconsume else None, 0 if max_reconsume else None
    )
    header = send_header(sample, MessageQueue("", "", 0), ProducerConfig())
    return tuple(SendMessageRequestHeaderV2.ext_fields_from_v1(header, serialize_type=serialize_type))


#: (ROCKETMQ serialization?, reconsume_times set?, max_reconsume_times set?) -> key order
_V2_ORDERS: dict[tuple[bool, bool, bool], tuple[str, ...]] = {
    (st == _ROCKETMQ, r, m): _v2_order(st, r, m)
    for st in (int(SerializeType.JSON), _ROCKETMQ)
    for r in (False, True)
    for m in (False, True)
}


def send_v2_fields(
    prep: PreparedSend, mq: MessageQueue, config: ProducerConfig, serialize_type: int, born_ms: int
) -> dict[str, str]:
    """``SendMessageRequestHeaderV2.ext_fields_from_v1(send_header(prep, mq, config))`` with
    ``born_timestamp=born_ms``, written straight from the prepared send: no header object,
    no generic codec; the keys in that codec's order (tested equal)."""
    values = {
        _W_GROUP: config.producer_group,
        _W_TOPIC: prep.topic,
        _W_DEFAULT_TOPIC: config.create_topic_key,
        _W_DEFAULT_QUEUES: str(config.default_topic_queue_nums),
        _W_QUEUE_ID: str(mq.queue_id),
        _W_SYS_FLAG: str(prep.sys_flag),
        _W_BORN: str(born_ms),
        _W_FLAG: str(prep.flag),
        _W_PROPERTIES: prep.properties,
        _W_UNIT_MODE: "false",
        _W_BATCH: "true" if prep.batch else "false",
        _W_BNAME: mq.broker_name,
    }
    reconsume = prep.reconsume_times
    if reconsume is not None:
        values[_W_RECONSUME] = str(reconsume)
    max_reconsume = prep.max_reconsume_times
    if max_reconsume is not None:
        values[_W_MAX_RECONSUME] = str(max_reconsume)
    order = _V2_ORDERS[(serialize_type == _ROCKETMQ, reconsume is not None, max_reconsume is not None)]
    return {key: values[key] for key in order}


def send_request_of(
    prep: PreparedSend, mq: MessageQueue, config: ProducerConfig, language: int, serialize_type: int
) -> RemotingCommand:
    """The request of one send attempt to ``mq``: what ``MQClientAPI.build_send_request`` makes
    of :func:`send_header`, without the header (SEND_MESSAGE_V2, SEND_BATCH_MESSAGE, or
    SEND_REPLY_MESSAGE_V2 for a reply message, as ``MQClientAPIImpl.sendMessage``)."""
    return RemotingCommand(
        code=send_code_of(prep),
        language=language,
        ext_fields=send_v2_fields(prep, mq, config, serialize_type, time.time_ns() // 1_000_000),
        body=prep.body,
        serialize_type=serialize_type,
    )


#: the JSON V2 map's keys in the order :func:`send_frame_of` writes them (``j`` and ``l`` only
#: when set); checked against the header codec's order at import
_FRAME_ORDER = ("a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n")
for _key, _order in _V2_ORDERS.items():
    if not _key[0] and _order != tuple(k for k in _FRAME_ORDER if k in _order):  # pragma: no cover
        raise RuntimeError(f"send_frame_of writes the V2 keys in another order than the codec: {_order}")


def send_code_of(prep: PreparedSend) -> int:
    """The request code of a send (``MQClientAPIImpl.sendMessage``): SEND_MESSAGE_V2,
    SEND_BATCH_MESSAGE for a batch, SEND_REPLY_MESSAGE_V2 for a reply message."""
    if prep.batch:
        return _SEND_BATCH
    if MessageConst.MSG_TYPE in prep.properties and is_reply_message(prep.properties):
        return _SEND_REPLY_V2
    return _SEND_V2


def send_frame_of(
    prep: PreparedSend,
    mq: MessageQueue,
    config: ProducerConfig,
    language: int,
    serialize_type: int,
    opaque: int,
    code: int,
) -> bytes | None:
    """The whole frame of ``send_request_of(prep, mq, config, language, serialize_type)``
    sent with ``opaque`` (``code`` is :func:`send_code_of`), written straight from the
    fields: one f-string for the JSON map, no dict, no command object (tested equal byte
    for byte). None for the binary (ROCKETMQ) header, which takes :func:`send_request_of`."""
    if serialize_type != _JSON:
        return None
    reconsume = prep.reconsume_times
    max_reconsume = prep.max_reconsume_times
    j = "" if reconsume is None else f'"j":"{reconsume}",'
    ml = "" if max_reconsume is None else f'"l":"{max_reconsume}",'
    ext = (
        f'{{"a":{_json_quote(config.producer_group)},"b":{_json_quote(prep.topic)},'
        f'"c":{_json_quote(config.create_topic_key)},"d":"{config.default_topic_queue_nums}",'
        f'"e":"{mq.queue_id}","f":"{prep.sys_flag}","g":"{time.time_ns() // 1_000_000}",'
        f'"h":"{prep.flag}","i":{_json_quote(prep.properties)},{j}"k":"false",{ml}'
        f'"m":"{"true" if prep.batch else "false"}","n":{_json_quote(mq.broker_name)}}}'
    )
    return encode_json_request(code, ext, language, opaque, prep.body)


def send_frame_sync(
    remoting: RemotingClient,
    addr: str,
    prep: PreparedSend,
    mq: MessageQueue,
    config: ProducerConfig,
    language: int,
    serialize_type: int,
    timeout_ms: int,
) -> SendResult | None:
    """One sync send attempt as a frame (:func:`send_frame_of`, ``invoke_sync_frame``,
    :func:`send_result_of`), for a client that does not sign its requests; None (nothing
    sent) when the request must go as a command object (the binary header)."""
    framed = send_frame_for(remoting.next_opaque, prep, mq, config, language, serialize_type)
    if framed is None:
        return None
    frame, opaque, code = framed
    return send_result_of(
        remoting.invoke_sync_frame(addr, frame, opaque, code, timeout_ms), mq, prep.uniq_id, addr
    )


def send_frame_for(
    next_opaque: Callable[[], int],
    prep: PreparedSend,
    mq: MessageQueue,
    config: ProducerConfig,
    language: int,
    serialize_type: int,
) -> tuple[bytes, int, int] | None:
    """(frame, opaque, code) of one send attempt written as a frame (:func:`send_frame_of`
    with a fresh opaque from ``next_opaque``), for the blocking and the asyncio producer;
    None (no opaque taken) for the binary header, which goes as a command object."""
    if serialize_type != _JSON:
        return None
    opaque = next_opaque()
    code = send_code_of(prep)
    frame = send_frame_of(prep, mq, config, language, serialize_type, opaque, code)
    return None if frame is None else (frame, opaque, code)


def _plain_digits(text: str | None, most: int) -> bool:
    return text is not None and 0 < len(text) <= most and text.isascii() and text.isdigit()


def send_result_of(response: RemotingCommand, mq: MessageQueue, uniq_msg_id: str, addr: str) -> SendResult:
    """``MQClientAPI.process_send_response(mq.broker_name, mq.topic, mq.queue_id, ...)`` for
    the usual answer (its three required fields present, the numbers plain decimal digits),
    read straight from the map; ``mq`` itself is the result's queue when the broker used it.
    Anything else (an error code, a missing field, a sign, a long number) goes to that
    method, which decodes with the header codec and raises its errors."""
    status = SEND_STATUS_BY_CODE.get(response.code)
    ext = response.ext_fields
    if status is None or ext is None:
        return MQClientAPI.process_send_response(
            mq.broker_name, mq.topic, mq.queue_id, uniq_msg_id, response, addr
        )
    msg_id = ext.get(_R_MSG_ID)
    qid = ext.get(_R_QUEUE_ID)
    offset = ext.get(_R_QUEUE_OFFSET)
    if (
        msg_id is None
        or qid is None
        or offset is None
        or not (_plain_digits(qid, 9) and _plain_digits(offset, 18))
    ):
        return MQClientAPI.process_send_response(
            mq.broker_name, mq.topic, mq.queue_id, uniq_msg_id, response, addr
        )
    queue_id = int(qid)
    return SendResult(
        status,
        uniq_msg_id,
        msg_id,
        mq if queue_id == mq.queue_id else MessageQueue(mq.topic, mq.broker_name, queue_id),
        int(offset),
        ext.get(_R_TRANSACTION_ID),
        ext.get(MessageConst.MSG_REGION),
        ext.get(MessageConst.TRACE_ON, "true") != "false",
    )


def check_explicit_queue(
    topic: str, queue: MessageQueue | None, selector: SelectorLike | None
) -> MessageQueue | None:
    """``send(msg, mq)``: the queue itself, checked against the message's topic; None when a
    selector is to choose (``sendSelectImpl``)."""
    if queue is not None and selector is not None:
        raise IllegalArgumentError("pass either queue= or selector=, not both")
    if queue is not None and queue.topic != topic:
        raise IllegalArgumentError(f"message's topic not equal mq's topic: {topic} != {queue.topic}")
    return queue


def select_with(
    info: TopicPublishInfo, topic: str, selector: SelectorLike, msg: Message | Sequence[Message], arg: object
) -> MessageQueue:
    """``sendSelectImpl``: the selector's choice from the publish list (first message of a batch)."""
    if not info.ok():
        raise ClientError(f"No route info for this topic, {topic}")
    first = msg if isinstance(msg, Message) else next(iter(msg))
    mq = as_selector(selector).select(list(info.message_queue_list), first, arg)
    if not isinstance(mq, MessageQueue):
        raise ClientError("select message queue return null.")
    return mq


def retry_after_result(result: SendResult | None, config: ProducerConfig) -> bool:
    """``sendDefaultImpl``: a stored-but-not-OK result is retried on another broker only with
    ``retryAnotherBrokerWhenNotStoreOK``."""
    return (
        result is not None and result.status is not _SEND_OK and config.retry_another_broker_when_not_store_ok
    )


def give_up_error(
    last_exc: RocketqError | None, brokers_sent: Sequence[str], topic: str, cost_ms: int
) -> RocketqError:
    """The error ``sendDefaultImpl`` raises after its last attempt failed."""
    info_text = (
        f"Send [{len(brokers_sent)}] times, still failed, cost [{cost_ms}]ms, "
        f"Topic: {topic}, BrokersSent: {list(brokers_sent)}"
    )
    if isinstance(last_exc, BrokerError):
        return last_exc
    if isinstance(last_exc, RequestTimeoutError):
        # Timeout contract: the message may still have been stored.
        err: RocketqError = RequestTimeoutError(f"{info_text}: {last_exc}")
        err.__cause__ = last_exc
        return err
    if isinstance(last_exc, RemotingError):
        err = type(last_exc)(f"{info_text}: {last_exc}")
        err.__cause__ = last_exc
        return err
    return ClientError(info_text)


#: ``kernel(prep, mq, mode, timeout_ms)``: one send attempt (:meth:`SendAttempts.run`)
SendKernel = Callable[[PreparedSend, MessageQueue, str, int], "SendResult | None"]


class SendAttempts:
    """The attempt loop of ``sendDefaultImpl``, sans-IO: the caller does each send itself.

    ::

        attempts = SendAttempts(fault, info, config, topic, begin, timeout, clock, retries=2)
        while (mq := attempts.next_queue()) is not None:
            start = clock()
            try:
                result = send(mq, attempts.remaining_ms(start))
            except (RemotingError, BrokerError) as exc:
                attempts.failed(mq, start, exc)  # re-raises a non-retriable broker error
                continue
            if attempts.succeeded(mq, start, result):
                return result
        raise attempts.give_up()

    Each queue is chosen by ``MQFaultStrategy`` avoiding the broker that just failed; every
    outcome feeds the latency fault tolerance; the whole loop keeps within ``timeout_ms``.
    """

    def __init__(
        self,
        fault: MQFaultStrategy,
        info: TopicPublishInfo,
        config: ProducerConfig,
        topic: str,
        begin_ms: int,
        timeout_ms: int,
        clock_ms: Callable[[], int],
        *,
        retries: int,
    ) -> None:
        self._fault = fault
        self._info = info
        self._config = config
        self._topic = topic
        self._begin = begin_ms
        self._timeout = timeout_ms
        self._clock = clock_ms
        self._left = 1 + retries
        self._last_broker: str | None = None
        self._last_exc: RocketqError | None = None
        self.brokers_sent: list[str] = []
        #: the clock when :meth:`next_queue` chose the latest queue: that attempt's start
        self.started_ms = begin_ms

    def next_queue(self) -> MessageQueue | None:
        """The queue of the next attempt; None when no attempt (or no time) is left."""
        if self._left <= 0:
            return None
        self._left -= 1
        mq = self._fault.select_one_message_queue(self._info, self._last_broker)
        self.brokers_sent.append(mq.broker_name)
        self.started_ms = now = self._clock()
        if now - self._begin >= self._timeout:
            self._last_exc = RequestTimeoutError(f"sendDefaultImpl call timeout after {self._timeout}ms")
            self._left = 0
            return None
        return mq

    def remaining_ms(self, now_ms: int) -> int:
        return self._timeout - (now_ms - self._begin)

    def failed(self, mq: MessageQueue, start_ms: int, exc: RemotingError | BrokerError) -> None:
        """A transport error or broker refusal: isolate the broker; re-raise if not retriable."""
        self._fault.update_fault_item(mq.broker_name, self._clock() - start_ms, True)
        _log_limiter.warning(
            ("send", mq.broker_name), "send to %s failed (%s); retry another broker", mq, exc
        )
        self._last_exc, self._last_broker = exc, mq.broker_name
        if isinstance(exc, BrokerError) and not exc.retriable:
            raise exc

    def succeeded(self, mq: MessageQueue, start_ms: int, result: SendResult | None) -> bool:
        """An answer: True when it is final, False when it is retried on another broker."""
        if self._fault.enabled:  # (the latency feeds nothing else: no clock read without it)
            self._fault.update_fault_item(mq.broker_name, self._clock() - start_ms, False)
        if retry_after_result(result, self._config):
            self._last_broker = mq.broker_name
            return False
        return True

    def give_up(self) -> RocketqError:
        return give_up_error(self._last_exc, self.brokers_sent, self._topic, self._clock() - self._begin)

    def run(self, prep: PreparedSend, mode: str, kernel: SendKernel) -> SendResult | None:
        """The loop of the class docstring with ``kernel(prep, mq, mode, remaining_ms)`` as
        the send (the blocking producer's ``sendKernelImpl``): the result of the first
        final answer, else the error of :meth:`give_up`."""
        while (mq := self.next_queue()) is not None:
            start = self.started_ms  # next_queue's clock read (beginTimestampPrev)
            try:
                result = kernel(prep, mq, mode, self.remaining_ms(start))
            except (RemotingError, BrokerError) as exc:
                self.failed(mq, start, exc)
                continue
            if self.succeeded(mq, start, result):
                return result
        raise self.give_up()
