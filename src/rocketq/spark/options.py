"""Options of the ``rocketmq`` Spark format: parsed once, validated, frozen.

Pure (no pyspark import), so executors and unit tests use it directly. Spark hands a data
source its options in a case-insensitive map; names are matched case-insensitively here and
any name not listed is an :class:`~rocketq.errors.IllegalArgumentError` (a typo must not be
silently ignored). Modelled on the options of Spark's Kafka connector
(``org.apache.spark.sql.kafka010.KafkaSourceProvider``); there is no Java RocketMQ
connector for Spark 3/4 whose names could be mirrored.

Read options (``spark.read`` / ``spark.readStream``):

========================  ==========================================================
``nameserver``            required; ``host:port[;host:port...]``
``topic``                 required; one topic or a comma-separated list
``subExpression``         tag filter (``TagA || TagB``), default ``*``
``sqlFilter``             an SQL92 expression over message properties (RocketMQ's
                          ``MessageSelector.bySql``), evaluated on the broker, which
                          must run with ``enablePropertyFilter=true``; excludes
                          ``subExpression``. Checked when the options are parsed.
``startingOffsets``       ``earliest`` (batch default) | ``latest`` (streaming default)
                          | JSON ``{"topic": {"broker-a:0": 12, ...}}`` (-2 earliest,
                          -1 latest; queues not listed start at the earliest offset)
``startingTimestamp``     epoch ms: start each queue at its first message stored at
                          or after it (exclusive with ``startingOffsets``)
``endingOffsets``         batch only: ``latest`` (default) | JSON (-1 latest)
``endingTimestamp``       batch only, epoch ms: end each queue before its first message
                          stored at or after it (latest if none; exclusive with
                          ``endingOffsets``)
``maxOffsetsPerTrigger``  streaming: at most this many offsets per micro-batch, split
                          across queues in proportion to their backlog
``failOnDataLoss``        default ``true``: offsets already deleted raise an error;
                          ``false``: skip ahead to the earliest offset with a warning
``pullBatchSize``         messages asked for per PULL_MESSAGE, default 1024 (the broker
                          caps it with ``maxTransferCountOnMessageInMemory``, 32 by
                          default; for bulk reads raise that and
                          ``maxTransferBytesOnMessageInMemory``, and set
                          ``transferMsgByHeap=false``, in the broker's config)
``consumerGroup``         streaming: after each committed micro-batch the processed
                          offsets are written to the broker for this group
``pullTimeoutMs``         per-request timeout, default 30000
``minPartitions``         at least this many Spark partitions (default: one per
                          queue); queues' offset ranges are split in proportion to
                          their sizes, as the Kafka connector's ``minPartitions``
``includeProperties``     default ``true``; ``false`` leaves the ``properties`` column
                          out of the schema (as the Kafka connector's
                          ``includeHeaders=false``): turning that map into rows is
                          about 40% of the Spark JVM's work in a read
========================  ==========================================================

Write options (``df.write`` / ``df.writeStream``): ``nameserver`` (required), ``topic``
(default for rows without a ``topic`` column value), ``producerGroup`` (default
``rocketq_spark_writer``), ``sendTimeoutMs`` (default 3000), ``batchSize`` (messages per
SEND_BATCH_MESSAGE, default 256).

Security options, for reads and writes (:class:`SecurityOptions`): ``accessKey`` and
``secretKey`` (and optionally ``securityToken``) sign every request for clusters with ACL
(``AclClientRPCHook``); ``useTls`` connects with TLS, set up by Java's ``tls.client.*``
names (``tls.client.authServer``, ``tls.client.trustCertPath``, ``tls.client.certPath``,
``tls.client.keyPath``, ``tls.client.keyPassword``). The secret key, the token and the key
password never appear in these objects' ``repr``, and Spark's default
``spark.redaction.regex`` (secret|password|token) hides them in query plans.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from rocketq.client.config import TlsConfig, validate_group, validate_topic
from rocketq.errors import IllegalArgumentError
from rocketq.filter import compile_sql
from rocketq.protocol.heartbeat import ExpressionType, build_subscription_data
from rocketq.spark.offsets import EARLIEST, LATEST, OffsetSpec, split_queue_key

__all__ = [
    "EARLIEST",
    "LATEST",
    "READ_OPTIONS",
    "WRITE_OPTIONS",
    "ReadOptions",
    "SecurityOptions",
    "WriteOptions",
    "include_properties",
    "parse_read_options",
    "parse_write_options",
]

#: The security options (lower case), accepted by reads and writes alike.
SECURITY_OPTIONS: Final[frozenset[str]] = frozenset(
    {
        "accesskey",
        "secretkey",
        "securitytoken",
        "usetls",
        "tls.client.authserver",
        "tls.client.trustcertpath",
        "tls.client.certpath",
        "tls.client.keypath",
        "tls.client.keypassword",
    }
)
#: lower-case option -> Java property of TlsConfig
_TLS_OPTIONS: Final = {
    "tls.client.authserver": "tls.client.authServer",
    "tls.client.trustcertpath": "tls.client.trustCertPath",
    "tls.client.certpath": "tls.client.certPath",
    "tls.client.keypath": "tls.client.keyPath",
    "tls.client.keypassword": "tls.client.keyPassword",
}

READ_OPTIONS: Final[frozenset[str]] = SECURITY_OPTIONS | frozenset(
    {
        "nameserver",
        "topic",
        "subexpression",
        "sqlfilter",
        "startingoffsets",
        "startingtimestamp",
        "endingoffsets",
        "maxoffsetspertrigger",
        "failondataloss",
        "pullbatchsize",
        "consumergroup",
        "pulltimeoutms",
        "includeproperties",
        "minpartitions",
        "endingtimestamp",
    }
)
WRITE_OPTIONS: Final[frozenset[str]] = SECURITY_OPTIONS | frozenset(
    {"nameserver", "topic", "producergroup", "sendtimeoutms", "batchsize"}
)
#: Keys Spark itself may put into a sink's options; accepted and ignored.
_SPARK_WRITE_KEYS: Final = frozenset({"path", "checkpointlocation"})


def _lower(options: Mapping[str, str]) -> dict[str, str]:
    return {str(k).lower(): str(v) for k, v in options.items()}


def _check_known(opts: Mapping[str, str], known: frozenset[str], what: str) -> None:
    unknown = sorted(set(opts) - known)
    if unknown:
        raise IllegalArgumentError(
            f"unknown {what} option(s) for format 'rocketmq': {', '.join(unknown)} "
            f"(known: {', '.join(sorted(known))})"
        )


def _int(opts: Mapping[str, str], name: str, default: int | None, *, minimum: int) -> int | None:
    raw = opts.get(name)
    if raw is None:
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        raise IllegalArgumentError(f"option {name} must be an integer, got {raw!r}") from None
    if value < minimum:
        raise IllegalArgumentError(f"option {name} must be >= {minimum}, got {value}")
    return value


def _bool(opts: Mapping[str, str], name: str, default: bool) -> bool:
    raw = opts.get(name)
    if raw is None:
        return default
    text = raw.strip().lower()
    if text not in ("true", "false"):
        raise IllegalArgumentError(f"option {name} must be true or false, got {raw!r}")
    return text == "true"


def _nameserver(opts: Mapping[str, str]) -> str:
    ns = opts.get("nameserver", "").strip()
    if not ns:
        raise IllegalArgumentError("option nameserver is required (host:port[;host:port...])")
    for addr in ns.split(";"):
        host, sep, port = addr.strip().rpartition(":")
        if not sep or not host or not port.isdigit():
            raise IllegalArgumentError(f"option nameserver: {addr!r} is not host:port")
    return ns


@dataclass(frozen=True)
class SecurityOptions:
    """Credentials and TLS settings of a read or a write; secrets stay out of ``repr``."""

    access_key: str | None = None
    secret_key: str | None = field(default=None, repr=False)
    security_token: str | None = field(default=None, repr=False)
    use_tls: bool = False
    tls: TlsConfig | None = None


def _security(opts: Mapping[str, str]) -> SecurityOptions:
    access_key = opts.get("accesskey", "").strip() or None
    secret_key = opts.get("secretkey", "").strip() or None
    if bool(access_key) != bool(secret_key):
        raise IllegalArgumentError("options accessKey and secretKey must be given together")
    tls_props = {java: opts[key] for key, java in _TLS_OPTIONS.items() if key in opts}
    tls = TlsConfig.from_properties(tls_props) if tls_props else None
    return SecurityOptions(
        access_key=access_key,
        secret_key=secret_key,
        security_token=opts.get("securitytoken", "").strip() or None,
        use_tls=_bool(opts, "usetls", False) or tls is not None,
        tls=tls,
    )


def parse_offsets_json(text: str, name: str, topics: tuple[str, ...]) -> OffsetSpec:
    """``{"topic": {"broker-a:0": 12}}`` -> the same dict, checked (ints, known topics)."""
    try:
        raw = json.loads(text)
    except ValueError as exc:
        raise IllegalArgumentError(f"option {name} is not JSON nor earliest/latest: {exc}") from None
    if not isinstance(raw, dict):
        raise IllegalArgumentError(
            f'option {name} must be a JSON object {{"topic": {{"broker:queueId": n}}}}'
        )
    out: OffsetSpec = {}
    for topic, queues in raw.items():
        if topic not in topics:
            raise IllegalArgumentError(f"option {name} names topic {topic!r}, which is not read ({topics})")
        if not isinstance(queues, dict):
            raise IllegalArgumentError(f"option {name}: offsets of {topic!r} must be an object")
        per: dict[str, int] = {}
        for key, value in queues.items():
            split_queue_key(key)
            if not isinstance(value, int) or isinstance(value, bool) or value < EARLIEST:
                raise IllegalArgumentError(f"option {name}: offset of {topic} {key} must be an int >= -2")
            per[key] = value
        out[topic] = per
    return out


@dataclass(frozen=True)
class ReadOptions:
    """Validated read options (see the module docstring for meanings and defaults)."""

    nameserver: str
    topics: tuple[str, ...]
    sub_expression: str = "*"
    #: an SQL92 selector (expressionType SQL92) filtered on the broker; None: tags only
    sql_filter: str | None = None
    #: "earliest", "latest" or parsed JSON offsets.
    starting_offsets: str | OffsetSpec = "earliest"
    starting_timestamp_ms: int | None = None
    ending_offsets: str | OffsetSpec = "latest"
    ending_timestamp_ms: int | None = None
    max_offsets_per_trigger: int | None = None
    fail_on_data_loss: bool = True
    pull_batch_size: int = 1024
    consumer_group: str | None = None
    pull_timeout_ms: int = 30_000
    include_properties: bool = True
    min_partitions: int | None = None
    security: SecurityOptions = SecurityOptions()

    @property
    def tags(self) -> tuple[str, ...]:
        """The tag set of ``sub_expression`` (empty for ``*`` and with ``sqlFilter``), for
        the client-side re-check."""
        if self.sql_filter is not None:
            return ()
        sd = build_subscription_data(self.topics[0], self.sub_expression, sub_version=0)
        return tuple(sd.tags_set)

    @property
    def filtered(self) -> bool:
        """Whether the broker may skip offsets (a tag filter or an SQL92 filter)."""
        return self.sql_filter is not None or bool(self.tags)

    @property
    def subscription(self) -> tuple[str, str]:
        """What pulls carry: ``(subscription, expressionType)``."""
        if self.sql_filter is not None:
            return self.sql_filter, ExpressionType.SQL92.value
        return self.sub_expression, ExpressionType.TAG.value


def parse_read_options(options: Mapping[str, str], *, streaming: bool) -> ReadOptions:
    """Check and convert read options. ``streaming`` picks the ``startingOffsets`` default
    (``latest`` for streams, ``earliest`` for batches, as in the Kafka connector) and
    rejects ``endingOffsets`` on a stream."""
    opts = _lower(options)
    _check_known(opts, READ_OPTIONS, "read")
    ns = _nameserver(opts)
    topics = tuple(t.strip() for t in opts.get("topic", "").split(",") if t.strip())
    if not topics:
        raise IllegalArgumentError("option topic is required (one topic or a comma-separated list)")
    if len(set(topics)) != len(topics):
        raise IllegalArgumentError(f"option topic lists a topic twice: {opts['topic']!r}")
    for topic in topics:
        validate_topic(topic)
    sub = opts.get("subexpression", "*").strip() or "*"
    build_subscription_data(topics[0], sub, sub_version=0)  # syntax check
    sql_filter = opts.get("sqlfilter")
    if sql_filter is not None:
        if not sql_filter.strip():
            raise IllegalArgumentError("option sqlFilter is empty")
        if sub != "*":
            raise IllegalArgumentError("options subExpression and sqlFilter exclude each other")
        compile_sql(sql_filter)  # FilterParseError (an IllegalArgumentError) names the problem
    ts = _int(opts, "startingtimestamp", None, minimum=0)
    start_raw = opts.get("startingoffsets")
    if ts is not None and start_raw is not None:
        raise IllegalArgumentError("options startingOffsets and startingTimestamp exclude each other")
    starting: str | OffsetSpec = "latest" if streaming else "earliest"
    if start_raw is not None:
        text = start_raw.strip()
        if text.lower() in ("earliest", "latest"):
            starting = text.lower()
        else:
            starting = parse_offsets_json(text, "startingOffsets", topics)
    ending: str | OffsetSpec = "latest"
    end_raw = opts.get("endingoffsets")
    if end_raw is not None:
        if streaming:
            raise IllegalArgumentError("option endingOffsets is for batch reads only")
        text = end_raw.strip()
        if text.lower() == "latest":
            ending = "latest"
        elif text.lower() == "earliest":
            raise IllegalArgumentError("option endingOffsets cannot be earliest")
        else:
            ending = parse_offsets_json(text, "endingOffsets", topics)
            if any(v == EARLIEST for per in ending.values() for v in per.values()):
                raise IllegalArgumentError("option endingOffsets: -2 (earliest) is not allowed")
    end_ts = _int(opts, "endingtimestamp", None, minimum=0)
    if end_ts is not None:
        if streaming:
            raise IllegalArgumentError("option endingTimestamp is for batch reads only")
        if end_raw is not None:
            raise IllegalArgumentError("options endingOffsets and endingTimestamp exclude each other")
    max_per_trigger = _int(opts, "maxoffsetspertrigger", None, minimum=1)
    if max_per_trigger is not None and not streaming:
        raise IllegalArgumentError("option maxOffsetsPerTrigger is for streaming reads only")
    group = opts.get("consumergroup", "").strip() or None
    if group is not None:
        validate_group(group)
    return ReadOptions(
        nameserver=ns,
        topics=topics,
        sub_expression=sub,
        sql_filter=sql_filter,
        starting_offsets=starting,
        starting_timestamp_ms=ts,
        ending_offsets=ending,
        ending_timestamp_ms=end_ts,
        max_offsets_per_trigger=max_per_trigger,
        fail_on_data_loss=_bool(opts, "failondataloss", True),
        pull_batch_size=_int(opts, "pullbatchsize", 1024, minimum=1) or 1024,
        consumer_group=group,
        pull_timeout_ms=_int(opts, "pulltimeoutms", 30_000, minimum=1) or 30_000,
        include_properties=include_properties(opts),
        min_partitions=_int(opts, "minpartitions", None, minimum=1),
        security=_security(opts),
    )


def include_properties(options: Mapping[str, str]) -> bool:
    """The ``includeProperties`` read option (default true): whether the read schema has
    the ``properties`` column. Checked like every option; the schema depends on it."""
    return _bool(_lower(options), "includeproperties", True)


@dataclass(frozen=True)
class WriteOptions:
    """Validated write options (see the module docstring)."""

    nameserver: str
    topic: str | None = None
    producer_group: str = "rocketq_spark_writer"
    send_timeout_ms: int = 3000
    batch_size: int = 256
    security: SecurityOptions = SecurityOptions()


def parse_write_options(options: Mapping[str, str]) -> WriteOptions:
    """Check and convert write options (Spark's own ``path``/``checkpointLocation`` pass)."""
    opts = {k: v for k, v in _lower(options).items() if k not in _SPARK_WRITE_KEYS}
    _check_known(opts, WRITE_OPTIONS, "write")
    topic = opts.get("topic", "").strip() or None
    if topic is not None:
        validate_topic(topic)
    group = opts.get("producergroup", "").strip() or "rocketq_spark_writer"
    validate_group(group)
    return WriteOptions(
        nameserver=_nameserver(opts),
        topic=topic,
        producer_group=group,
        send_timeout_ms=_int(opts, "sendtimeoutms", 3000, minimum=1) or 3000,
        batch_size=_int(opts, "batchsize", 256, minimum=1) or 256,
        security=_security(opts),
    )
