"""``BrokerConfig``: the typed, frozen settings of a broker, and the broker's config files.

Mirrors ``org.apache.rocketmq.common.BrokerConfig`` plus the one field of
``NettyServerConfig`` a broker needs (``listenPort``) and ``BrokerStartup``'s reading of a
``broker.conf`` (a Java ``.properties`` file with camelCase keys). Every field is the Java
field name in snake_case with the Java 4.9.7 default; units appear in the name where Java
has none (``_ms``), and the Java key is derived by :func:`java_key`.

It also owns the file half of ``org.apache.rocketmq.common.ConfigManager`` /
``MixAll.string2File``: :func:`write_config_file` writes ``<file>.tmp``, moves the previous
file to ``<file>.bak`` and renames the temp file into place, so a crash never leaves a
half-written config; :func:`read_config_file` falls back to ``.bak`` like
``ConfigManager.load``/``loadBak``.

Changing a running broker (``updateBrokerConfig``, ``Configuration.update``):
:meth:`BrokerConfig.with_updates` validates the keys and returns a new frozen config. Only
the keys of :data:`LIVE_UPDATE_KEYS` may change: each is read by the broker or its store on
every request or loop pass, so swapping the config applies it at once. Every other key
(ports, host, store paths, names, role, file sizes, periods fixed at start, ...) is refused
while the broker runs, with a remark naming the keys and saying to edit ``broker.conf`` and
restart; Java accepts them and applies them at the next start (a documented deviation: an
accepted key that silently does nothing until a restart misleads). Accepted changes are
persisted to ``<storePathRootDir>/config/broker.properties``
(:func:`persist_updated_keys`), which the ``rocketq broker``/``server`` commands read at
start after ``broker.conf`` and before their options and ``--set``; Java rewrites the
``-c`` file instead (``Configuration.persist``) and loses the change when started without
one.

Invariants (``__post_init__``, violations raise ``IllegalArgumentError``): names are
non-empty, ``broker_id >= 0``, ports in ``0..65535`` (0 = OS-assigned), positive periods,
``broker_permission`` within ``PermName`` bits.
"""

from __future__ import annotations

import dataclasses
import difflib
import logging
import os
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rocketq.broker.store.config import MessageStoreConfig
from rocketq.errors import IllegalArgumentError
from rocketq.protocol.java_properties import format_properties, parse_properties
from rocketq.protocol.mixall import RMQ_SYS_TRACE_TOPIC
from rocketq.remoting.tls import TlsConfig

__all__ = [
    "LIVE_UPDATE_KEYS",
    "UPDATED_KEYS_FILE",
    "BrokerConfig",
    "ConfigManager",
    "config_file_path",
    "java_key",
    "load_properties",
    "load_updated_keys",
    "persist_updated_keys",
    "read_config_file",
    "unknown_key_message",
    "write_config_file",
]

log = logging.getLogger(__name__)


#: The ``broker.conf`` keys ``updateBrokerConfig`` applies to a running broker. Each is read on
#: every request or loop pass (audited in BrokerController, its processors, TopicConfigManager,
#: SubscriptionGroupManager, MessageStore and CleanCommitLogService), so a swapped config
#: applies at once. Note: with ``autoCreateTopicEnable`` turned on live, a broker started with
#: it off still has no TBW102 topic (created at start, as in Java), so nothing is auto-created
#: until a restart; turned off live, auto-creation stops at once.
LIVE_UPDATE_KEYS: frozenset[str] = frozenset(
    {
        # BrokerConfig
        "brokerPermission",
        "autoCreateTopicEnable",
        "autoCreateSubscriptionGroup",
        "notifyConsumerIdsChangedEnable",
        "registerBrokerTimeoutMills",
        "compressedRegister",
        "shortPollingTimeMills",
        "regionId",
        "traceOn",
        "slaveReadEnable",
        "enablePropertyFilter",
        "transferMsgByHeap",
        "sendThreadPoolQueueCapacity",
        "pullThreadPoolQueueCapacity",
        "queryThreadPoolQueueCapacity",
        "endTransactionPoolQueueCapacity",
        # MessageStoreConfig
        "maxMessageSize",
        "maxTransferBytesOnMessageInMemory",
        "maxTransferCountOnMessageInMemory",
        "maxTransferBytesOnMessageInDisk",
        "maxTransferCountOnMessageInDisk",
        "fileReservedTime",
        "deleteWhen",
        "diskMaxUsedSpaceRatio",
        "diskSpaceWarningLevelRatio",
        "diskSpaceCleanForciblyRatio",
        "cleanFileForciblyEnable",
        "defaultQueryMaxNum",
    }
)

#: BrokerPathConfigHelper's default brokerConfigPath name, under ``<storePathRootDir>/config``:
#: the keys changed by ``updateBrokerConfig``.
UPDATED_KEYS_FILE = "broker.properties"


def _default_store() -> MessageStoreConfig:
    # MessageStoreConfig.storePathRootDir = System.getProperty("user.home") + "/store"
    return MessageStoreConfig(store_path_root_dir=os.path.join(os.path.expanduser("~"), "store"))


@dataclass(frozen=True, kw_only=True)
class BrokerConfig:
    """Broker settings (``BrokerConfig`` + ``NettyServerConfig.listenPort``), Java 4.9.7 defaults."""

    #: brokerClusterName.
    broker_cluster_name: str = "DefaultCluster"
    #: brokerName (Java default: the host name; rocketq uses the documented ``broker-a``).
    broker_name: str = "broker-a"
    #: brokerId: 0 = master.
    broker_id: int = 0
    #: brokerIP1: the address published to name servers and clients.
    broker_ip1: str = "127.0.0.1"
    #: brokerIP2: the HA address (``haServerAddr`` = brokerIP2:listenPort+1); None = brokerIP1.
    broker_ip2: str | None = None
    #: NettyServerConfig.listenPort (0 = OS-assigned, rocketq only).
    listen_port: int = 10911
    #: rocketq only: the interface the server binds; loopback unless set (Java binds every
    #: interface; ``0.0.0.0`` does that here, and with ACL off the broker warns at start).
    listen_host: str = "127.0.0.1"
    #: namesrvAddr: ``;``-separated ``host:port`` list (None = no name server).
    namesrv_addr: str | None = None
    #: autoCreateTopicEnable: TBW102 exists and producers may create topics on send.
    auto_create_topic_enable: bool = True
    #: autoCreateSubscriptionGroup.
    auto_create_subscription_group: bool = True
    #: clusterTopicEnable: the cluster-name topic is readable/writable.
    cluster_topic_enable: bool = True
    #: brokerTopicEnable: the broker-name topic is readable/writable.
    broker_topic_enable: bool = True
    #: defaultTopicQueueNums: queues of TBW102.
    default_topic_queue_nums: int = 8
    #: brokerPermission (PermName: READ 4 | WRITE 2).
    broker_permission: int = 6
    #: longPollingEnable.
    long_polling_enable: bool = True
    #: shortPollingTimeMills.
    short_polling_time_mills: int = 1000
    #: notifyConsumerIdsChangedEnable.
    notify_consumer_ids_changed_enable: bool = True
    #: registerNameServerPeriod (clamped to 10..60 s by BrokerController.start).
    register_name_server_period: int = 30_000
    #: registerBrokerTimeoutMills.
    register_broker_timeout_mills: int = 6000
    #: compressedRegister: send the zlib RegisterBrokerBody.
    compressed_register: bool = False
    #: forceRegister: periodic registrations skip the QUERY_DATA_VERSION check.
    force_register: bool = True
    #: flushConsumerOffsetInterval.
    flush_consumer_offset_interval: int = 5000
    #: regionId.
    region_id: str = "DefaultRegion"
    #: traceOn: reported to producers in every send response (``TRACE_ON``).
    trace_on: bool = True
    #: traceTopicEnable.
    trace_topic_enable: bool = False
    #: msgTraceTopicName.
    msg_trace_topic_name: str = RMQ_SYS_TRACE_TOPIC
    #: slaveReadEnable.
    slave_read_enable: bool = False
    #: enablePropertyFilter: serve SQL92 subscriptions (filtered on the broker, rocketq.filter).
    enable_property_filter: bool = False
    #: transferMsgByHeap: True copies a pull answer's records into one body; False writes
    #: them to the socket from the mapped commit log (``ManyMessageTransfer``), cheaper for
    #: bulk readers, with the answer's header always in JSON as Java's does.
    transfer_msg_by_heap: bool = True
    #: sendThreadPoolQueueCapacity (reported by GET_BROKER_RUNTIME_INFO).
    send_thread_pool_queue_capacity: int = 10_000
    #: pullThreadPoolQueueCapacity.
    pull_thread_pool_queue_capacity: int = 100_000
    #: queryThreadPoolQueueCapacity.
    query_thread_pool_queue_capacity: int = 20_000
    #: endTransactionPoolQueueCapacity.
    end_transaction_pool_queue_capacity: int = 100_000
    #: rejectTransactionMessage: refuse half messages (NO_PERMISSION) instead of storing them.
    reject_transaction_message: bool = False
    #: transactionTimeOut: a half message younger than this is not checked yet.
    transaction_time_out_ms: int = 6000
    #: transactionCheckMax: checks of one half message before it is discarded into
    #: TRANS_CHECK_MAX_TIME_TOPIC.
    transaction_check_max: int = 15
    #: transactionCheckInterval: the period of TransactionalMessageCheckService.
    transaction_check_interval_ms: int = 60_000
    #: storeReplyMessageEnable: SEND_REPLY_MESSAGE also stores the reply in <cluster>_REPLY_TOPIC.
    store_reply_message_enable: bool = True
    #: MessageStoreConfig.brokerRole.
    broker_role: str = "ASYNC_MASTER"
    #: ConsumerManager/ProducerManager.CHANNEL_EXPIRED_TIMEOUT (a Java constant, 120 s).
    channel_expired_timeout_ms: int = 120_000
    #: ClientHousekeepingService scan period (a Java constant, 10 s).
    client_housekeeping_interval_ms: int = 10_000
    #: RebalanceLockManager lease of an orderly consumer's queue lock
    #: (``rocketmq.broker.rebalance.lockMaxLiveTime``); key ``rebalanceLockMaxLiveTime``.
    rebalance_lock_max_live_time_ms: int = 60_000
    #: metricsExporterType (RocketMQ 5): DISABLE, or PROM to serve Prometheus metrics
    #: (``rocketq.broker.metrics``, needs ``rocketq[metrics]``); 5.x's OTLP_GRPC/LOG are not offered.
    metrics_exporter_type: str = "DISABLE"
    #: metricsPromExporterPort (RocketMQ 5): the ``/metrics`` port with PROM (0 = OS-assigned).
    metrics_prom_exporter_port: int = 5557
    #: aclEnable: check every request against plain_acl.yml (``PlainAccessValidator``).
    acl_enable: bool = False
    #: aclPlainFile: Java's ``-Drocketmq.acl.plain.file`` (relative to ROCKETMQ_HOME, or
    #: absolute); None = ``$ROCKETMQ_HOME/conf/plain_acl.yml``.
    acl_plain_file: str | None = None
    #: accessKey: rocketq only, the account this broker signs its name-server requests with
    #: (needed when the name servers run with aclEnable=true).
    access_key: str | None = None
    #: secretKey: its secret (never reported by GET_BROKER_CONFIG nor logged).
    secret_key: str | None = field(default=None, repr=False)
    #: The ``tls.*`` settings (TlsSystemConfig): ``tls.server.mode`` etc. for the listener,
    #: ``tls.enable`` + ``tls.client.*`` for the connections to the name servers.
    tls: TlsConfig = field(default_factory=TlsConfig)
    #: The message store settings (MessageStoreConfig).
    message_store: MessageStoreConfig = field(default_factory=_default_store)

    def __post_init__(self) -> None:
        for name in ("broker_cluster_name", "broker_name", "broker_ip1"):
            if not getattr(self, name):
                raise IllegalArgumentError(f"{name} must not be empty")
        if self.broker_id < 0:
            raise IllegalArgumentError(f"broker_id must be >= 0, got {self.broker_id}")
        if not 0 <= self.listen_port <= 65535:
            raise IllegalArgumentError(f"listen_port out of range: {self.listen_port}")
        if self.broker_role not in ("ASYNC_MASTER", "SYNC_MASTER", "SLAVE"):
            raise IllegalArgumentError(
                f"broker_role must be ASYNC_MASTER, SYNC_MASTER or SLAVE: {self.broker_role!r}"
            )
        if self.metrics_exporter_type not in ("DISABLE", "PROM"):
            raise IllegalArgumentError(
                f"metrics_exporter_type must be DISABLE or PROM: {self.metrics_exporter_type!r}"
            )
        if not 0 <= self.metrics_prom_exporter_port <= 65535:
            raise IllegalArgumentError(
                f"metrics_prom_exporter_port out of range: {self.metrics_prom_exporter_port}"
            )
        if not 0 <= self.broker_permission <= 0xF:
            raise IllegalArgumentError(f"broker_permission must be PermName bits: {self.broker_permission}")
        for name in (
            "default_topic_queue_nums",
            "register_name_server_period",
            "register_broker_timeout_mills",
            "flush_consumer_offset_interval",
            "short_polling_time_mills",
            "channel_expired_timeout_ms",
            "client_housekeeping_interval_ms",
            "rebalance_lock_max_live_time_ms",
            "transaction_check_interval_ms",
        ):
            if getattr(self, name) <= 0:
                raise IllegalArgumentError(f"{name} must be > 0, got {getattr(self, name)}")
        if self.transaction_time_out_ms < 0 or self.transaction_check_max < 0:
            raise IllegalArgumentError("transaction_time_out_ms and transaction_check_max must be >= 0")

    # ------------------------------------------------------------------ derived
    @property
    def namesrv_addr_list(self) -> list[str]:
        """``BrokerOuterAPI.updateNameServerAddressList``: the ``;``-separated list."""
        if not self.namesrv_addr:
            return []
        return [a.strip() for a in self.namesrv_addr.split(";") if a.strip()]

    @property
    def store_path_root_dir(self) -> str:
        return self.message_store.store_path_root_dir

    @property
    def config_dir(self) -> str:
        """``BrokerPathConfigHelper``: ``<storePathRootDir>/config``."""
        return os.path.join(self.message_store.store_path_root_dir, "config")

    # ------------------------------------------------------------------ broker.conf
    @classmethod
    def from_properties(
        cls,
        props: Mapping[str, str],
        overrides: Mapping[str, str] | None = None,
        *,
        strict: bool = False,
    ) -> BrokerConfig:
        """Build from Java ``broker.conf`` keys (``brokerName``, ``listenPort``, ``storePathRootDir``,
        ``mappedFileSizeCommitLog``, ``flushDiskType``, ``autoCreateTopicEnable``, ...).

        ``overrides`` win over ``props`` (command-line options). A key of ``overrides`` that
        no field knows raises ``IllegalArgumentError`` naming the closest and all known keys;
        so does an unknown key of ``props`` with ``strict=True``, while without it the key is
        ignored with a warning (``MixAll.properties2Object`` ignores it silently; a Java
        ``broker.conf`` may hold keys of features rocketq does not have). A value that does
        not parse for its field's type (a number, ``true``/``false``) raises too, naming the key.
        """
        merged = dict(props)
        if overrides:
            merged.update(overrides)
        store_fields = _java_fields(MessageStoreConfig)
        known = set(_java_fields(cls)) | set(store_fields) | TlsConfig.property_names()
        for key in merged:
            if key in known:
                continue
            if strict or (overrides is not None and key in overrides):
                raise IllegalArgumentError(unknown_key_message(key))
            log.warning("broker.conf: ignoring key %s, which rocketq does not know", key)
        broker_kwargs = _apply(cls, merged, skip={"message_store", "tls"})
        broker_kwargs["tls"] = TlsConfig.from_properties(merged)
        store_kwargs: dict[str, Any] = {}
        for key, value in merged.items():
            f = store_fields.get(key)
            if f is not None:
                store_kwargs[f.name] = _convert(f, key, value)
        if "store_path_root_dir" not in store_kwargs:
            store_kwargs["store_path_root_dir"] = _default_store().store_path_root_dir
        return cls(message_store=MessageStoreConfig(**store_kwargs), **broker_kwargs)

    @classmethod
    def known_keys(cls) -> list[str]:
        """Every ``broker.conf`` key rocketq reads (Java spelling), sorted."""
        return sorted(
            [
                java_key(f.name)
                for c in (cls, MessageStoreConfig)
                for f in dataclasses.fields(c)
                if f.init and not f.name.startswith("_") and f.name not in ("message_store", "tls")
            ]
            + sorted(TlsConfig.property_names())
        )

    def with_updates(self, props: Mapping[str, str]) -> tuple[BrokerConfig, dict[str, str]]:
        """``updateBrokerConfig``: this config with ``props`` (``broker.conf`` keys) applied.

        Returns the new config and the accepted changes as Java key -> text (every given key of
        :data:`LIVE_UPDATE_KEYS`, changed or not). Raises ``IllegalArgumentError`` naming the
        key for an unknown key (:func:`unknown_key_message`), a value that does not parse or
        breaks an invariant, or a key outside :data:`LIVE_UPDATE_KEYS` whose value differs
        from the running one (it cannot change while the broker runs); nothing is applied then.
        """
        broker_fields = _java_fields(BrokerConfig)
        store_fields = _java_fields(MessageStoreConfig)
        broker_kwargs: dict[str, Any] = {}
        store_kwargs: dict[str, Any] = {}
        accepted: dict[str, str] = {}
        fixed: list[str] = []
        for key, text in props.items():
            owner: object = self
            kwargs = broker_kwargs
            f = broker_fields.get(key)
            if f is None or f.name == "message_store":
                f = store_fields.get(key)
                if f is None:
                    raise IllegalArgumentError(unknown_key_message(key))
                owner, kwargs = self.message_store, store_kwargs
            name = java_key(f.name)
            value = _convert(f, key, text)
            if name not in LIVE_UPDATE_KEYS:
                if value != getattr(owner, f.name):
                    fixed.append(name)
                continue
            kwargs[f.name] = value
            accepted[name] = "" if value is None else _java_text(value)
        if fixed:
            raise IllegalArgumentError(
                f"broker config {', '.join(sorted(fixed))} cannot change while the broker runs: "
                "edit broker.conf (or the --set options) and restart the broker. Keys that "
                f"apply at once: {', '.join(sorted(LIVE_UPDATE_KEYS))}"
            )
        store = (
            dataclasses.replace(self.message_store, **store_kwargs) if store_kwargs else self.message_store
        )
        return dataclasses.replace(self, message_store=store, **broker_kwargs), accepted

    def to_properties(self) -> dict[str, str]:
        """All settings as Java keys -> text (``Configuration.getAllConfigsFormatString``)."""
        out: dict[str, str] = {}
        for obj in (self, self.message_store):
            for f in dataclasses.fields(obj):
                if not f.init or f.name in _NOT_REPORTED:
                    continue
                value = getattr(obj, f.name)
                if value is None:
                    continue
                out[java_key(f.name)] = _java_text(value)
        return out


#: Fields to_properties leaves out: nested settings, and secrets.
_NOT_REPORTED = frozenset({"message_store", "tls", "secret_key"})


# ---------------------------------------------------------------------- key mapping
_SUFFIXES = ("_ms", "_hours", "_bytes")
#: Java keys that the snake_case rule cannot derive.
_SPECIAL_KEYS = {"broker_ip1": "brokerIP1", "broker_ip2": "brokerIP2"}


def java_key(attr: str) -> str:
    """The Java property for a field: ``flush_interval_commit_log_ms`` -> ``flushIntervalCommitLog``."""
    special = _SPECIAL_KEYS.get(attr)
    if special is not None:
        return special
    name = attr
    for suffix in _SUFFIXES:
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _java_fields(cls: type) -> dict[str, dataclasses.Field[Any]]:
    out: dict[str, dataclasses.Field[Any]] = {}
    for f in dataclasses.fields(cls):
        if f.init and not f.name.startswith("_"):
            out[java_key(f.name)] = f
            out.setdefault(f.name, f)  # the snake_case spelling is accepted too
    return out


def _apply(cls: type, props: Mapping[str, str], *, skip: set[str]) -> dict[str, Any]:
    fields = _java_fields(cls)
    out: dict[str, Any] = {}
    for key, value in props.items():
        f = fields.get(key)
        if f is None or f.name in skip:
            continue
        out[f.name] = _convert(f, key, value)
    return out


def unknown_key_message(key: str) -> str:
    """The error for a ``broker.conf`` key rocketq does not know: close matches, then every key."""
    keys = BrokerConfig.known_keys()
    close = difflib.get_close_matches(key, keys, n=3, cutoff=0.75)
    hint = f" (did you mean {' or '.join(close)}?)" if close else ""
    return f"unknown broker config key {key!r}{hint}; known keys (docs/configuration.md): {', '.join(keys)}"


def _convert(f: dataclasses.Field[Any], key: str, value: str) -> Any:
    kind = str(f.type)
    text = value.strip()
    if kind.startswith("bool"):
        # MixAll.properties2Object reads Boolean.parseBoolean (anything but "true" is false);
        # rocketq refuses a value that is neither, so "ture" is not silently false
        if text.lower() not in ("true", "false"):
            raise IllegalArgumentError(f"broker config: {key}={value!r} is not true or false")
        return text.lower() == "true"
    try:
        if kind.startswith("int"):
            return int(text)
    except ValueError as exc:
        raise IllegalArgumentError(f"broker config: {key}={value!r} is not a whole number") from exc
    if "None" in kind and text == "":
        return None
    return text


def _java_text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


# ---------------------------------------------------------------------- .properties
_CONTINUATION = re.compile(r"(?<!\\)(\\\\)*\\$")


def load_properties(path: str | Path) -> dict[str, str]:
    """Parse a Java ``.properties`` / ``broker.conf`` file (``java.util.Properties.load``).

    Handles ``#``/``!`` comments, ``=``/``:``/whitespace separators, line continuations and
    the usual escapes; later keys win.
    """
    text = Path(path).read_text(encoding="utf-8")
    return parse_properties(text)


def config_file_path(store_root: str, name: str) -> str:
    """``BrokerPathConfigHelper``: ``<root>/config/<name>`` (topics.json, consumerOffset.json, ...)."""
    return os.path.join(store_root, "config", name)


def load_updated_keys(store_root: str) -> dict[str, str]:
    """The keys ``updateBrokerConfig`` persisted under ``store_root`` (empty if none)."""
    text = read_config_file(config_file_path(store_root, UPDATED_KEYS_FILE))
    return parse_properties(text) if text is not None else {}


def persist_updated_keys(store_root: str, updates: Mapping[str, str]) -> str:
    """Add ``updates`` to ``<store_root>/config/broker.properties`` (``Configuration.persist``,
    rocketq's file: only the keys changed at run time); returns the path. Raises ``OSError``."""
    merged = load_updated_keys(store_root)
    merged.update(updates)
    path = config_file_path(store_root, UPDATED_KEYS_FILE)
    header = (
        "# Broker settings changed at run time (rocketq cluster update-config / mqadmin\n"
        "# updateBrokerConfig). Read at start after broker.conf and before --set.\n"
    )
    write_config_file(path, header + format_properties(dict(sorted(merged.items()))))
    return path


def write_config_file(path: str, text: str) -> None:
    """``MixAll.string2File``: write ``path.tmp``, keep the old file as ``path.bak``, rename.

    The temp file is fsynced before the rename, so the file at ``path`` is always complete.
    """
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    if os.path.exists(path):
        os.replace(path, path + ".bak")
    os.replace(tmp, path)


def read_config_file(path: str) -> str | None:
    """``ConfigManager.load``: the file's text, or ``path.bak``'s, or None if neither exists/is empty."""
    for candidate in (path, path + ".bak"):
        try:
            with open(candidate, encoding="utf-8") as fh:
                text = fh.read()
        except FileNotFoundError:
            continue
        if text.strip():
            return text
    return None


#: ConfigManager.persist is synchronized in Java; one lock for all managers (writes are rare).
_PERSIST_LOCK = threading.Lock()


class ConfigManager:
    """Base of the broker's JSON-file managers (``org.apache.rocketmq.common.ConfigManager``).

    Subclasses implement :meth:`encode` (``pretty=True`` for the file, fastjson PrettyFormat
    with tabs), :meth:`decode` and :meth:`config_file_path`. :meth:`load` reads the file (or
    its ``.bak``); :meth:`persist` rewrites it atomically. Errors while persisting are logged,
    never raised into the request path (Java logs them too).
    """

    #: Set by the broker (``ConfigPersistService.request``): :meth:`persist_soon` hands the
    #: write to it instead of writing on the caller's thread.
    persister: Callable[[ConfigManager], None] | None = None

    def persist_soon(self) -> None:
        """Persist now, or with a ``persister`` coalesced and off the caller's thread."""
        persister = self.persister
        if persister is None:
            self.persist()
        else:
            persister(self)

    def config_file_path(self) -> str:
        raise NotImplementedError

    def encode(self, pretty: bool = False) -> str:
        raise NotImplementedError

    def decode(self, text: str) -> None:
        raise NotImplementedError

    def load(self) -> bool:
        """Read the config file; False if it exists but cannot be parsed (Java ``load``)."""
        path = self.config_file_path()
        text = read_config_file(path)
        if text is None:
            return True
        try:
            self.decode(text)
        except Exception:
            log.exception("cannot load %s", path)
            return False
        log.info("loaded %s", path)
        return True

    def persist(self) -> None:
        """Write the config file now (``ConfigManager.persist``). Serialised with every
        other persist (the loop's and ``ConfigPersistService``'s share ``path.tmp``)."""
        path = self.config_file_path()
        try:
            with _PERSIST_LOCK:
                write_config_file(path, self.encode(pretty=True))
        except OSError as exc:  # e.g. a full disk: expected, no traceback
            log.error("cannot persist %s: %s", path, exc)
        except Exception:
            log.exception("cannot persist %s", path)
