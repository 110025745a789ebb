"""Typed, frozen client configurations with the Java defaults, and the argument validators.

Mirrors ``org.apache.rocketmq.client.ClientConfig``, the configuration fields of
``DefaultMQProducer``, ``DefaultMQPullConsumer`` and ``DefaultLitePullConsumer`` and
``org.apache.rocketmq.client.Validators`` (reference sections 7.1-7.3 and 8.1).

Invariants:

* Every config is an immutable dataclass; durations are milliseconds and say so in their
  name (``_ms``). The Java field each one mirrors is named in a comment.
* Validation happens in ``__post_init__`` and raises
  :class:`~rocketq.errors.IllegalArgumentError` with a message naming the field.
* The name-server list comes from the config (``namesrv_addr``, ``;``-separated) or, when
  that is ``None``, from the ``NAMESRV_ADDR`` environment variable (Java also reads the
  system property ``rocketmq.namesrv.addr`` and an HTTP lookup; rocketq does neither).
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import os
import re
import socket
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from rocketq.errors import ClientError, IllegalArgumentError
from rocketq.protocol.codes import LanguageCode, SerializeType
from rocketq.protocol.heartbeat import ConsumeFromWhere, MessageModel
from rocketq.protocol.mixall import (
    AUTO_CREATE_TOPIC_KEY_TOPIC,
    CLIENT_INNER_PRODUCER_GROUP,
    DEFAULT_CONSUMER_GROUP,
    DEFAULT_PRODUCER_GROUP,
    NOT_ALLOWED_SEND_TOPICS,
    TOPIC_MAX_LENGTH,
)
from rocketq.remoting.tls import TlsConfig  # re-exported: spark/ and cli/ use the client API only

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

    from rocketq.client.metrics import ClientMetrics

__all__ = [
    "CLIENT_INNER_PRODUCER_GROUP",
    "DEFAULT_CONSUMER_GROUP",
    "DEFAULT_INSTANCE_NAME",
    "DEFAULT_PRODUCER_GROUP",
    "NAMESRV_ADDR_ENV",
    "ClientConfig",
    "LitePullConsumerConfig",
    "ProducerConfig",
    "PullConsumerConfig",
    "PushConsumerConfig",
    "SubscriptionType",
    "TlsConfig",
    "change_instance_name_to_pid",
    "local_client_ip",
    "parse_namesrv_addr",
    "validate_group",
    "validate_topic",
    "with_overrides",
]

#: ``MixAll.NAMESRV_ADDR_ENV``
NAMESRV_ADDR_ENV = "NAMESRV_ADDR"
#: ``ClientConfig.instanceName`` default.
DEFAULT_INSTANCE_NAME = "DEFAULT"

# Validators.CHARACTER_MAX_LENGTH and TopicValidator's pattern.
_GROUP_MAX_LENGTH = 255
_NAME_PATTERN = re.compile(r"^[%|a-zA-Z0-9_-]+$")


_Config = TypeVar("_Config", bound="DataclassInstance")


def with_overrides(config: _Config, **overrides: object) -> _Config:
    """``config`` with the fields named in ``overrides`` replaced, leaving out those given as
    None: a client class's keyword arguments (``consumer_group=``, ``namesrv_addr=``) over the
    config object it was handed. The result is validated as any new config is."""
    changes = {name: value for name, value in overrides.items() if value is not None}
    return dataclasses.replace(config, **changes) if changes else config


def validate_topic(topic: str, *, for_send: bool = False) -> None:
    """``Validators.checkTopic`` (+ ``TopicValidator.isNotAllowedSendTopic`` for sends).

    Valid names are remembered (it runs on every send); an invalid one raises every time."""
    if not isinstance(topic, str):
        raise IllegalArgumentError("the specified topic is blank")
    _check_topic(topic, for_send)


@functools.lru_cache(maxsize=1024)
def _check_topic(topic: str, for_send: bool) -> None:
    if not topic.strip():
        raise IllegalArgumentError("the specified topic is blank")
    if len(topic) > TOPIC_MAX_LENGTH:
        raise IllegalArgumentError(f"the specified topic is longer than topic max length {TOPIC_MAX_LENGTH}")
    if not _NAME_PATTERN.match(topic):
        raise IllegalArgumentError(
            f"the specified topic[{topic}] contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"
        )
    if for_send and (topic in NOT_ALLOWED_SEND_TOPICS or topic == AUTO_CREATE_TOPIC_KEY_TOPIC):
        # Validators.checkTopic refuses the auto-create template as a send target
        raise IllegalArgumentError(f"sending message to topic[{topic}] is forbidden")


def validate_group(group: str) -> None:
    """``Validators.checkGroup``: non-blank, at most 255 characters, ``^[%|a-zA-Z0-9_-]+$``."""
    if not isinstance(group, str) or not group.strip():
        raise IllegalArgumentError("the specified group is blank")
    if len(group) > _GROUP_MAX_LENGTH:
        raise IllegalArgumentError(f"the specified group is longer than group max length {_GROUP_MAX_LENGTH}")
    if not _NAME_PATTERN.match(group):
        raise IllegalArgumentError(
            f"the specified group[{group}] contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"
        )


def parse_namesrv_addr(addr: str | None) -> list[str]:
    """Split a ``;``-separated ``host:port`` list; ``None`` reads ``NAMESRV_ADDR``.

    Raises :class:`ClientError` when no address is configured anywhere and
    :class:`IllegalArgumentError` for an entry that is not ``host:port``.
    """
    raw = addr if addr is not None else os.environ.get(NAMESRV_ADDR_ENV)
    if raw is None or not raw.strip():
        raise ClientError(
            "no name server address: pass namesrv_addr (host:port[;host:port...]) "
            f"or set the {NAMESRV_ADDR_ENV} environment variable"
        )
    out: list[str] = []
    for raw_part in raw.split(";"):
        part = raw_part.strip()
        if not part:
            continue
        host, sep, port = part.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise IllegalArgumentError(f"name server address {part!r} is not host:port")
        out.append(part)
    if not out:
        raise ClientError(f"no name server address in {raw!r}")
    return out


def local_client_ip() -> str:
    """``RemotingUtil.getLocalAddress`` simplified: the address of the default route.

    An unconnected UDP socket asks the kernel which local address it would use (no packet
    is sent); without a usable route the host name's address, else ``127.0.0.1``.
    """
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            sock.connect(("192.0.2.1", 9))  # TEST-NET-1: a routing lookup only
            ip = str(sock.getsockname()[0])
        if ip and ip != "0.0.0.0":
            return ip
    except OSError:
        pass
    try:
        return socket.gethostbyname(socket.gethostname())
    except OSError:
        return "127.0.0.1"


def change_instance_name_to_pid(instance_name: str) -> str:
    """``ClientConfig.changeInstanceNameToPID`` (4.9.x): ``DEFAULT`` -> ``<pid>#<nanoTime>``."""
    if instance_name == DEFAULT_INSTANCE_NAME:
        return f"{os.getpid()}#{time.monotonic_ns()}"
    return instance_name


def _positive(name: str, value: int) -> None:
    if value <= 0:
        raise IllegalArgumentError(f"{name} must be > 0, got {value}")


@dataclass(frozen=True, kw_only=True)
class ClientConfig:
    """``ClientConfig``: what every producer and consumer shares through its client instance."""

    #: ``namesrvAddr``; ``None`` = the ``NAMESRV_ADDR`` environment variable.
    namesrv_addr: str | None = None
    #: ``clientIP``; ``None`` = :func:`local_client_ip`.
    client_ip: str | None = None
    #: ``instanceName`` (system property ``rocketmq.client.name``).
    instance_name: str = DEFAULT_INSTANCE_NAME
    #: ``unitName``: appended to the client id as ``@unitName`` when set.
    unit_name: str | None = None
    #: ``pollNameServerInterval``: route refresh period.
    poll_name_server_interval_ms: int = 30_000
    #: ``heartbeatBrokerInterval``: heartbeat (and offline-broker cleanup) period.
    heartbeat_broker_interval_ms: int = 30_000
    #: ``persistConsumerOffsetInterval``: offset persist period.
    persist_consumer_offset_interval_ms: int = 5_000
    #: ``pullTimeDelayMillsWhenException``: pull back-off after an error.
    pull_time_delay_mills_when_exception_ms: int = 1_000
    #: ``mqClientApiTimeout``: route, heartbeat and admin RPC timeout.
    mq_client_api_timeout_ms: int = 3_000
    #: ``RebalanceService.waitInterval`` (``rocketmq.client.rebalance.waitInterval``).
    rebalance_interval_ms: int = 20_000
    #: ``NettyClientConfig.connectTimeoutMillis``.
    connect_timeout_ms: int = 3_000
    #: ``language``: rocketq identifies itself as PYTHON (reference 8.2).
    language: LanguageCode = LanguageCode.PYTHON
    #: ``rocketmq.serialize.type``: header encoding of every request, JSON or ROCKETMQ (binary);
    #: servers answer in the request's type. JSON stays the default: binary saves CPU only
    #: on the compiled build (benchmarks/README.md, "JSON or ROCKETMQ headers").
    serialize_type: SerializeType = SerializeType.JSON
    #: ``unitMode``
    unit_mode: bool = False
    #: opt-in client metrics (:mod:`rocketq.client.metrics`); None = none recorded.
    metrics: ClientMetrics | None = field(default=None, compare=False)
    #: ``SessionCredentials.accessKey``: with ``secret_key``, every request is signed
    #: (``AclClientRPCHook``), for brokers and name servers that run with ACL.
    access_key: str | None = None
    #: ``SessionCredentials.secretKey`` (never in ``repr``).
    secret_key: str | None = field(default=None, repr=False)
    #: ``SessionCredentials.securityToken``: optional, sent and signed when set.
    security_token: str | None = field(default=None, repr=False)
    #: ``ClientConfig.useTLS``: every connection speaks TLS.
    use_tls: bool = False
    #: ``tls.client.*`` settings (trust store, client certificate); None = Java's defaults
    #: (any server certificate is accepted, as with ``tls.client.authServer=false``).
    tls: TlsConfig | None = None

    def __post_init__(self) -> None:
        for name in (
            "poll_name_server_interval_ms",
            "heartbeat_broker_interval_ms",
            "persist_consumer_offset_interval_ms",
            "pull_time_delay_mills_when_exception_ms",
            "mq_client_api_timeout_ms",
            "rebalance_interval_ms",
            "connect_timeout_ms",
        ):
            _positive(name, getattr(self, name))
        if not self.instance_name or "@" in self.instance_name:
            raise IllegalArgumentError(f"instance_name {self.instance_name!r} must be non-empty without '@'")
        if self.namesrv_addr is not None:
            parse_namesrv_addr(self.namesrv_addr)
        if bool(self.access_key) != bool(self.secret_key):
            raise IllegalArgumentError("access_key and secret_key must be given together")

    def namesrv_addr_list(self) -> list[str]:
        """The name servers to use; :class:`ClientError` when none is configured."""
        return parse_namesrv_addr(self.namesrv_addr)

    def build_client_id(self) -> str:
        """``ClientConfig.buildMQClientId``: ``ip@instanceName[@unitName]``."""
        ip = self.client_ip or local_client_ip()
        cid = f"{ip}@{self.instance_name}"
        if self.unit_name:
            cid += f"@{self.unit_name}"
        return cid


@dataclass(frozen=True, kw_only=True)
class ProducerConfig:
    """``DefaultMQProducer`` fields (reference 7.3)."""

    #: ``producerGroup``
    producer_group: str = DEFAULT_PRODUCER_GROUP
    #: ``createTopicKey``: the template topic for auto-creation.
    create_topic_key: str = AUTO_CREATE_TOPIC_KEY_TOPIC
    #: ``defaultTopicQueueNums``
    default_topic_queue_nums: int = 4
    #: ``sendMsgTimeout``: the whole send, retries included.
    send_msg_timeout_ms: int = 3_000
    #: ``compressMsgBodyOverHowmuch``: bodies of at least this many bytes are zlib-compressed.
    compress_msg_body_over_howmuch: int = 4096
    #: ``rocketmq.message.compressLevel``
    compress_level: int = 5
    #: ``retryTimesWhenSendFailed``: sync sends make 1 + this many attempts.
    retry_times_when_send_failed: int = 2
    #: ``retryTimesWhenSendAsyncFailed``
    retry_times_when_send_async_failed: int = 2
    #: ``retryAnotherBrokerWhenNotStoreOK``
    retry_another_broker_when_not_store_ok: bool = False
    #: ``maxMessageSize`` (4 MiB), checked before sending.
    max_message_size: int = 4 * 1024 * 1024
    #: ``sendLatencyFaultEnable`` (``MQFaultStrategy``): avoid slow or failed brokers.
    send_latency_fault_enable: bool = False
    #: ``autoBatch`` (RocketMQ 5.x): asynchronous sends of small messages to one topic leave
    #: as SEND_BATCH_MESSAGE while batches of the topic are in flight (see
    #: :mod:`rocketq.client.produce_accumulator`); off by default, as in Java.
    auto_batch: bool = False
    #: the most messages / bytes one automatic batch carries
    auto_batch_max_messages: int = 256
    auto_batch_max_bytes: int = 1024 * 1024
    #: automatic batches of one topic in flight at once: two keep client and broker busy at
    #: the same time (workload 3 of the benchmarks: +35 % over one; four were slower than two)
    auto_batch_max_in_flight: int = 2

    def __post_init__(self) -> None:
        validate_group(self.producer_group)
        _positive("default_topic_queue_nums", self.default_topic_queue_nums)
        _positive("send_msg_timeout_ms", self.send_msg_timeout_ms)
        _positive("max_message_size", self.max_message_size)
        _positive("compress_msg_body_over_howmuch", self.compress_msg_body_over_howmuch)
        _positive("auto_batch_max_messages", self.auto_batch_max_messages)
        _positive("auto_batch_max_bytes", self.auto_batch_max_bytes)
        _positive("auto_batch_max_in_flight", self.auto_batch_max_in_flight)
        if not 0 <= self.compress_level <= 9:
            raise IllegalArgumentError(f"compress_level must be 0..9, got {self.compress_level}")
        for name in ("retry_times_when_send_failed", "retry_times_when_send_async_failed"):
            if getattr(self, name) < 0:
                raise IllegalArgumentError(f"{name} must be >= 0")


class SubscriptionType(enum.Enum):
    """``DefaultLitePullConsumerImpl.SubscriptionType``."""

    NONE = "NONE"
    SUBSCRIBE = "SUBSCRIBE"
    ASSIGN = "ASSIGN"


@dataclass(frozen=True, kw_only=True)
class PullConsumerConfig:
    """``DefaultMQPullConsumer`` fields (reference 7.2, pull consumers)."""

    #: ``consumerGroup``
    consumer_group: str = DEFAULT_CONSUMER_GROUP
    #: ``messageModel``
    message_model: MessageModel = MessageModel.CLUSTERING
    #: ``brokerSuspendMaxTimeMillis``: long-poll hold time sent to the broker.
    broker_suspend_max_time_ms: int = 20_000
    #: ``consumerTimeoutMillisWhenSuspend``: RPC timeout of a blocking pull.
    consumer_timeout_millis_when_suspend_ms: int = 30_000
    #: ``consumerPullTimeoutMillis``: RPC timeout of a non-blocking pull.
    consumer_pull_timeout_ms: int = 10_000
    #: ``maxReconsumeTimes``
    max_reconsume_times: int = 16
    #: ``registerTopics``: topics rebalanced for a MessageQueueListener.
    register_topics: frozenset[str] = frozenset()
    #: ``rocketmq.client.localOffsetStoreDir`` (broadcasting offsets); None = ``~/.rocketmq_offsets``.
    offset_store_dir: str | None = None

    def __post_init__(self) -> None:
        validate_group(self.consumer_group)
        if not isinstance(self.message_model, MessageModel):
            raise IllegalArgumentError(f"message_model must be a MessageModel, got {self.message_model!r}")
        if self.consumer_timeout_millis_when_suspend_ms <= self.broker_suspend_max_time_ms:
            # DefaultMQPullConsumerImpl.pullSyncImpl/checkConfig: the RPC must outlive the hold
            raise IllegalArgumentError(
                "consumer_timeout_millis_when_suspend_ms must be greater than broker_suspend_max_time_ms"
            )
        _positive("consumer_pull_timeout_ms", self.consumer_pull_timeout_ms)
        for topic in self.register_topics:
            validate_topic(topic)


@dataclass(frozen=True, kw_only=True)
class LitePullConsumerConfig:
    """``DefaultLitePullConsumer`` fields (reference 7.2, pull consumers)."""

    #: ``consumerGroup``
    consumer_group: str = DEFAULT_CONSUMER_GROUP
    #: ``messageModel``
    message_model: MessageModel = MessageModel.CLUSTERING
    #: ``consumeFromWhere``
    consume_from_where: ConsumeFromWhere = ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET
    #: ``consumeTimestamp`` (``yyyyMMddHHmmss``); None = now minus 30 minutes at start.
    consume_timestamp: str | None = None
    #: ``pullBatchSize``
    pull_batch_size: int = 10
    #: ``pullThresholdForAll``: stop pulling while this many messages wait for poll().
    pull_threshold_for_all: int = 10_000
    #: ``consumeMaxSpan``
    consume_max_span: int = 2_000
    #: ``pullThresholdForQueue``
    pull_threshold_for_queue: int = 1_000
    #: ``pullThresholdSizeForQueue`` (MiB)
    pull_threshold_size_for_queue_mib: int = 100
    #: ``pollTimeoutMillis``: default poll() timeout.
    poll_timeout_ms: int = 5_000
    #: ``autoCommit``
    auto_commit: bool = True
    #: ``autoCommitIntervalMillis`` (at least 1000)
    auto_commit_interval_ms: int = 5_000
    #: ``pullThreadNums``
    pull_thread_nums: int = 20
    #: ``brokerSuspendMaxTimeMillis``
    broker_suspend_max_time_ms: int = 20_000
    #: ``consumerTimeoutMillisWhenSuspend``
    consumer_timeout_millis_when_suspend_ms: int = 30_000
    #: ``consumerPullTimeoutMillis``
    consumer_pull_timeout_ms: int = 10_000
    #: ``rocketmq.client.localOffsetStoreDir`` (broadcasting offsets)
    offset_store_dir: str | None = None

    def __post_init__(self) -> None:
        validate_group(self.consumer_group)
        if not isinstance(self.message_model, MessageModel):
            raise IllegalArgumentError(f"message_model must be a MessageModel, got {self.message_model!r}")
        if self.auto_commit_interval_ms < 1000:
            # DefaultLitePullConsumer.setAutoCommitIntervalMillis refuses less than MIN_AUTOCOMMIT_INTERVAL_MILLIS
            raise IllegalArgumentError("auto_commit_interval_ms must be >= 1000")
        for name in (
            "pull_batch_size",
            "pull_threshold_for_all",
            "consume_max_span",
            "pull_threshold_for_queue",
            "pull_threshold_size_for_queue_mib",
            "poll_timeout_ms",
            "pull_thread_nums",
            "consumer_pull_timeout_ms",
        ):
            _positive(name, getattr(self, name))
        if self.consumer_timeout_millis_when_suspend_ms <= self.broker_suspend_max_time_ms:
            raise IllegalArgumentError(
                "consumer_timeout_millis_when_suspend_ms must be greater than broker_suspend_max_time_ms"
            )


def _range(name: str, value: int, low: int, high: int, *, allow_minus_one: bool = False) -> None:
    if allow_minus_one and value == -1:
        return
    if not low <= value <= high:
        raise IllegalArgumentError(f"{name} out of range [{low}, {high}]: {value}")


@dataclass(frozen=True, kw_only=True)
class PushConsumerConfig:
    """``DefaultMQPushConsumer`` settings with the Java defaults (``checkConfig`` ranges)."""

    consumer_group: str = DEFAULT_CONSUMER_GROUP
    #: CLUSTERING shares queues within the group; BROADCASTING delivers everything to everyone
    message_model: MessageModel = MessageModel.CLUSTERING
    consume_from_where: ConsumeFromWhere = ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET
    #: ``yyyyMMddHHmmss`` for CONSUME_FROM_TIMESTAMP; default now - 30 min
    consume_timestamp: str | None = None
    consume_thread_min: int = 20
    consume_thread_max: int = 20
    consume_concurrently_max_span: int = 2000
    pull_threshold_for_queue: int = 1000
    pull_threshold_size_for_queue_mib: int = 100
    pull_threshold_for_topic: int = -1
    pull_threshold_size_for_topic_mib: int = -1
    pull_interval_ms: int = 0
    consume_message_batch_max_size: int = 1
    pull_batch_size: int = 32
    post_subscription_when_pull: bool = False
    #: -1: 16 for concurrent listeners, unlimited for orderly ones
    max_reconsume_times: int = -1
    suspend_current_queue_time_millis: int = 1000
    consume_timeout_minutes: int = 15
    await_termination_millis_when_shutdown: int = 0
    #: BROADCASTING offsets live in a local file under this folder (default ~/.rocketmq_offsets)
    offset_store_dir: str | None = None
    #: orderly: renew broker queue locks this often (``rocketmq.client.rebalance.lockInterval``)
    lock_interval_ms: int = 20_000
    #: orderly: a lock not renewed for this long is treated as lost
    #: (``rocketmq.client.rebalance.lockMaxLiveTime``); keep it below the broker's 60 s lease
    lock_max_live_time_ms: int = 30_000
    #: rocketq only, on by default: a concurrent listener's batches run on the remoting I/O
    #: thread that read their pull's answer (the first batch of each answer; any more go to
    #: the consume threads), without a hand-off to a consume thread: Kafka's model, worth
    #: 1.2-2x on a drain (``benchmarks/README.md``, speed12-13). It counts as one of the
    #: ``consume_thread_max`` calls the listener may have at once (with none free it waits
    #: for a consume thread). While the listener runs there, no connection of the process
    #: is read, so it stays there only while the listener does not wait: a batch that
    #: waited over 1 ms (its time less its CPU time: it slept, did I/O, waited for a lock),
    #: or is still running 10 ms on, sends the batches to the consume threads (where they
    #: wait in parallel, up to ``consume_thread_max``) for 0.1 s, four times longer each
    #: time up to 60 s while the batch tried after each pause waits too; a listener that
    #: holds the thread over 10-20 ms has the I/O loop handed to a new thread by a watchdog,
    #: as one that makes a sync call (a send, the send-back of a failed batch) has at once.
    #: ``False``: Java's model, every batch on a consume thread (``ConsumeMessageThread_*``).
    #: Orderly listeners always run on their consume threads.
    consume_on_io_thread: bool = True

    def __post_init__(self) -> None:
        validate_group(self.consumer_group)
        _range("consume_thread_min", self.consume_thread_min, 1, 1000)
        _range("consume_thread_max", self.consume_thread_max, 1, 1000)
        if self.consume_thread_min > self.consume_thread_max:
            raise IllegalArgumentError("consume_thread_min must not exceed consume_thread_max")
        _range("consume_concurrently_max_span", self.consume_concurrently_max_span, 1, 65535)
        _range("pull_threshold_for_queue", self.pull_threshold_for_queue, 1, 65535)
        _range("pull_threshold_for_topic", self.pull_threshold_for_topic, 1, 6_553_500, allow_minus_one=True)
        _range("pull_threshold_size_for_queue_mib", self.pull_threshold_size_for_queue_mib, 1, 1024)
        _range(
            "pull_threshold_size_for_topic_mib",
            self.pull_threshold_size_for_topic_mib,
            1,
            102_400,
            allow_minus_one=True,
        )
        _range("pull_interval_ms", self.pull_interval_ms, 0, 65535)
        _range("consume_message_batch_max_size", self.consume_message_batch_max_size, 1, 1024)
        _range("pull_batch_size", self.pull_batch_size, 1, 1024)
        _range("max_reconsume_times", self.max_reconsume_times, -1, 2**31 - 1)
        _range("consume_timeout_minutes", self.consume_timeout_minutes, 1, 24 * 60)
        _range("lock_interval_ms", self.lock_interval_ms, 10, 3_600_000)
        if self.lock_max_live_time_ms <= self.lock_interval_ms:
            raise IllegalArgumentError("lock_max_live_time_ms must exceed lock_interval_ms")
