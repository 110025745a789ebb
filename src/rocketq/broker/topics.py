"""The broker's topic table: ``TopicConfigManager`` and the ``TopicValidator`` rules.

Mirrors ``org.apache.rocketmq.broker.topic.TopicConfigManager`` and
``org.apache.rocketmq.common.topic.TopicValidator`` of 4.9.7.

Invariants:

* The default topics exist from construction on, exactly as a 4.9.7 broker creates them
  (``TopicConfigManager`` constructor, without bumping the data version): SELF_TEST_TOPIC,
  TBW102 (perm 7, ``default_topic_queue_nums`` queues, only with auto-creation),
  BenchmarkTest (1024 queues), the cluster-name topic (perm 7 with ``cluster_topic_enable``,
  16 queues), the broker-name topic (perm 7, 1 queue), OFFSET_MOVED_EVENT,
  SCHEDULE_TOPIC_XXXX (18 queues), the trace topic when enabled and
  ``<cluster>_REPLY_TOPIC``. ``RMQ_SYS_TRANS_HALF_TOPIC`` is *not* created at start: a 4.9.7
  broker creates it lazily (``TransactionalMessageBridge``), and the golden start-up
  registration body does not list it.
* Every change bumps :attr:`data_version` (counter + 1, timestamp = wall clock) and
  rewrites ``<root>/config/topics.json`` (auto-created topics through ``persist_soon``:
  coalesced, off the event loop, see ``ConfigPersistService``); auto-created topics also
  trigger a oneway re-registration through ``register_hook`` (``registerBrokerAll(false,
  true, true)``; the broker folds requests made while one is queued into it).
* Auto-creation from sends is bounded (rocketq only, Java has no bound):
  :data:`AUTO_CREATE_PER_SECOND` on average, :data:`AUTO_CREATE_BURST` at once; over it
  the send is answered as if the topic could not be created (TOPIC_NOT_EXIST).
* The table keeps Java insertion order; encoders list it in ``ConcurrentHashMap(1024)``
  iteration order (:func:`~rocketq.protocol.java.concurrent_hashmap_order`), like fastjson does.
* Thread-safe: one lock guards the table and the data version.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import threading
import time
from collections.abc import Callable

from rocketq.broker.config import BrokerConfig, ConfigManager, config_file_path
from rocketq.common.log_limiter import LogLimiter
from rocketq.common.token_bucket import TokenBucket
from rocketq.protocol import fastjson
from rocketq.protocol.codes import PermName
from rocketq.protocol.java import concurrent_hashmap_order
from rocketq.protocol.mixall import (
    AUTO_CREATE_TOPIC_KEY_TOPIC,
    NOT_ALLOWED_SEND_TOPICS,
    RMQ_SYS_BENCHMARK_TOPIC,
    RMQ_SYS_OFFSET_MOVED_EVENT,
    RMQ_SYS_SCHEDULE_TOPIC,
    RMQ_SYS_SELF_TEST_TOPIC,
    SYSTEM_TOPIC_PREFIX,
    SYSTEM_TOPICS,
    TOPIC_MAX_LENGTH,
    reply_topic,
)
from rocketq.protocol.route import DataVersion, TopicConfig, TopicConfigSerializeWrapper

__all__ = [
    "AUTO_CREATE_BURST",
    "AUTO_CREATE_LOG",
    "AUTO_CREATE_PER_SECOND",
    "TopicConfigManager",
    "is_not_allowed_send_topic",
    "next_data_version",
    "validate_topic",
]

log = logging.getLogger(__name__)

#: How many topics (and, separately, subscription groups) clients may make the broker
#: auto-create: on average per second, and at once (rocketq only; see TokenBucket).
AUTO_CREATE_PER_SECOND = 100.0
AUTO_CREATE_BURST = 200
#: Refusals over the bound: one line per 10 s per kind, with the count.
AUTO_CREATE_LOG = LogLimiter(log)

#: TopicConfigManager.SCHEDULE_TOPIC_QUEUE_NUM
SCHEDULE_TOPIC_QUEUE_NUM = 18
#: TopicConfig's default queue count (readQueueNums/writeQueueNums = 16)
DEFAULT_READ_WRITE_QUEUE_NUMS = 16

# TopicValidator.VALID_CHAR_BIT_MAP: ^[%|a-zA-Z0-9_-]+$
_ILLEGAL_CHAR = re.compile(r"[^%|a-zA-Z0-9_-]")

#: ``TopicConfigManager.topicConfigTable = new ConcurrentHashMap<>(1024)``
_TABLE_CAPACITY = 1024


def validate_topic(topic: str | None) -> str | None:
    """``TopicValidator.validateTopic``: None if valid, else the SYSTEM_ERROR remark Java sends."""
    if topic is None or not topic.strip():
        return "The specified topic is blank."
    if _ILLEGAL_CHAR.search(topic):
        return "The specified topic contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"
    if len(topic) > TOPIC_MAX_LENGTH:
        return "The specified topic is longer than topic max length."
    return None


def is_not_allowed_send_topic(topic: str) -> bool:
    """``TopicValidator.isNotAllowedSendTopic``: producers may not send to these."""
    return topic in NOT_ALLOWED_SEND_TOPICS


def next_data_version(dv: DataVersion, now_ms: int) -> DataVersion:
    """``DataVersion.nextVersion``: timestamp = now, counter + 1 (a new object)."""
    return DataVersion(timestamp=now_ms, counter=dv.counter + 1)


def _wall_ms() -> int:
    return time.time_ns() // 1_000_000


class TopicConfigManager(ConfigManager):
    """The topic table of one broker (``TopicConfigManager``)."""

    def __init__(
        self,
        config: BrokerConfig,
        *,
        wall_ms: Callable[[], int] = _wall_ms,
        register_hook: Callable[[], None] | None = None,
    ) -> None:
        self._config = config
        self._wall_ms = wall_ms
        #: Called (outside the lock) after a topic was auto-created: the broker schedules a
        #: oneway full registration (``registerBrokerAll(false, true, true)``).
        self.register_hook = register_hook
        #: Bounds topic auto-creation from sends (``createTopicInSendMessageMethod``).
        self.auto_create_limit = TokenBucket(AUTO_CREATE_PER_SECOND, AUTO_CREATE_BURST)
        self._lock = threading.RLock()
        self.topic_config_table: dict[str, TopicConfig] = {}
        self.data_version = DataVersion(timestamp=wall_ms(), counter=0)
        self._system_topics = set(SYSTEM_TOPICS)
        self._init_default_topics()

    # ------------------------------------------------------------------ defaults
    def _add_default(
        self, topic: str, queues: int, perm: int = PermName.PERM_READ | PermName.PERM_WRITE
    ) -> None:
        self._system_topics.add(topic)
        self.topic_config_table[topic] = TopicConfig(
            topic_name=topic, read_queue_nums=queues, write_queue_nums=queues, perm=int(perm)
        )

    def _init_default_topics(self) -> None:
        cfg = self._config
        rw = PermName.PERM_READ | PermName.PERM_WRITE
        self._add_default(RMQ_SYS_SELF_TEST_TOPIC, 1)
        if cfg.auto_create_topic_enable:
            self._add_default(
                AUTO_CREATE_TOPIC_KEY_TOPIC, cfg.default_topic_queue_nums, PermName.PERM_INHERIT | rw
            )
        self._add_default(RMQ_SYS_BENCHMARK_TOPIC, 1024)
        cluster_perm = PermName.PERM_INHERIT | (rw if cfg.cluster_topic_enable else 0)
        self._add_default(cfg.broker_cluster_name, DEFAULT_READ_WRITE_QUEUE_NUMS, cluster_perm)
        broker_perm = PermName.PERM_INHERIT | (rw if cfg.broker_topic_enable else 0)
        self._add_default(cfg.broker_name, 1, broker_perm)
        self._add_default(RMQ_SYS_OFFSET_MOVED_EVENT, 1)
        self._add_default(RMQ_SYS_SCHEDULE_TOPIC, SCHEDULE_TOPIC_QUEUE_NUM)
        if cfg.trace_topic_enable:
            self._add_default(cfg.msg_trace_topic_name, 1)
        self._add_default(reply_topic(cfg.broker_cluster_name), 1)

    # ------------------------------------------------------------------ queries
    def select_topic_config(self, topic: str) -> TopicConfig | None:
        return self.topic_config_table.get(topic)

    def is_system_topic(self, topic: str) -> bool:
        """``TopicValidator.isSystemTopic``: the fixed set, the topics added at start, ``rmq_sys_*``."""
        return topic in self._system_topics or topic.startswith(SYSTEM_TOPIC_PREFIX)

    def is_order_topic(self, topic: str) -> bool:
        tc = self.topic_config_table.get(topic)
        return tc is not None and tc.order

    def ordered_table(self) -> dict[str, TopicConfig]:
        """A snapshot of the table in Java ``ConcurrentHashMap`` iteration order."""
        with self._lock:
            table = dict(self.topic_config_table)
        return {k: table[k] for k in concurrent_hashmap_order(list(table), _TABLE_CAPACITY)}

    def build_serialize_wrapper(self) -> TopicConfigSerializeWrapper:
        """``buildTopicConfigSerializeWrapper``: the table and data version (a snapshot)."""
        with self._lock:
            dv = self.data_version
        return TopicConfigSerializeWrapper(topic_config_table=self.ordered_table(), data_version=dv)

    def update_config(self, config: BrokerConfig) -> None:
        """Read ``config`` from now on (updateBrokerConfig: ``autoCreateTopicEnable`` is read
        per auto-creation; the default topics made at start stay as they are)."""
        self._config = config

    # ------------------------------------------------------------------ changes
    def bump_data_version(self) -> None:
        """``getDataVersion().nextVersion()`` (updateBrokerConfig of ``brokerPermission``)."""
        with self._lock:
            self._bump()

    def _bump(self) -> None:
        self.data_version = next_data_version(self.data_version, self._wall_ms())

    def create_topic_in_send_message_method(
        self,
        topic: str,
        default_topic: str,
        remote_addr: str,
        client_default_topic_queue_nums: int,
        topic_sys_flag: int,
    ) -> TopicConfig | None:
        """``createTopicInSendMessageMethod``: create ``topic`` from ``default_topic`` (TBW102).

        The default topic must exist and carry PERM_INHERIT; the new topic gets
        ``min(client queues, default write queues)`` queues and the default's perm without
        INHERIT. Quirk kept from Java: with auto-creation off, a TBW102 that exists anyway
        (loaded from topics.json) loses its INHERIT bit first, so nothing is created.
        """
        created: TopicConfig | None = None
        with self._lock:
            existing = self.topic_config_table.get(topic)
            if existing is not None:
                return existing
            default_tc = self.topic_config_table.get(default_topic)
            if default_tc is None:
                log.warning(
                    "create topic %s failed: default topic %s does not exist (%s)",
                    topic,
                    default_topic,
                    remote_addr,
                )
                return None
            if default_topic == AUTO_CREATE_TOPIC_KEY_TOPIC and not self._config.auto_create_topic_enable:
                default_tc = dataclasses.replace(
                    default_tc, perm=int(PermName.PERM_READ | PermName.PERM_WRITE)
                )
                self.topic_config_table[default_topic] = default_tc
            if not default_tc.perm & PermName.PERM_INHERIT:
                log.warning(
                    "create topic %s failed: default topic %s has perm %d (%s)",
                    topic,
                    default_topic,
                    default_tc.perm,
                    remote_addr,
                )
                return None
            queues = max(0, min(client_default_topic_queue_nums, default_tc.write_queue_nums))
            created = TopicConfig(
                topic_name=topic,
                read_queue_nums=queues,
                write_queue_nums=queues,
                perm=default_tc.perm & ~PermName.PERM_INHERIT,
                topic_filter_type=default_tc.topic_filter_type,
                topic_sys_flag=topic_sys_flag,
            )
            if not self.auto_create_limit.try_acquire():
                AUTO_CREATE_LOG.warning(
                    "topic",
                    "auto-creation of topics over its bound, %s not created now (%s)",
                    topic,
                    remote_addr,
                )
                return None
            log.info("create topic %s from %s for %s: %s", topic, default_topic, remote_addr, created)
            self.topic_config_table[topic] = created
            self._bump()
        self.persist_soon()
        self._fire_register()
        return created

    def create_topic_in_send_message_back_method(
        self, topic: str, queue_nums: int, perm: int, topic_sys_flag: int
    ) -> TopicConfig:
        """``createTopicInSendMessageBackMethod``: %RETRY% / %DLQ% topics, no default topic needed."""
        existing = self.topic_config_table.get(topic)
        if existing is not None:
            return existing
        with self._lock:
            existing = self.topic_config_table.get(topic)
            if existing is not None:
                return existing
            created = TopicConfig(
                topic_name=topic,
                read_queue_nums=queue_nums,
                write_queue_nums=queue_nums,
                perm=perm,
                topic_sys_flag=topic_sys_flag,
            )
            log.info("create topic %s (send-back path): %s", topic, created)
            self.topic_config_table[topic] = created
            self._bump()
        self.persist_soon()
        self._fire_register()
        return created

    def update_topic_config(self, tc: TopicConfig) -> None:
        """``updateTopicConfig``: put (create or replace), bump the version, persist."""
        with self._lock:
            name = tc.topic_name or ""
            old = self.topic_config_table.get(name)
            self.topic_config_table[name] = tc
            self._bump()
        log.info("%s topic config %s", "update" if old is not None else "create", tc)
        self.persist()

    def delete_topic_config(self, topic: str) -> None:
        """``deleteTopicConfig``: remove; bumps and persists only if it existed."""
        with self._lock:
            old = self.topic_config_table.pop(topic, None)
            if old is None:
                log.warning("delete topic config %s: not found", topic)
                return
            self._bump()
        log.info("deleted topic config %s", old)
        self.persist()

    def update_order_topic_config(self, order_topics: set[str] | None) -> None:
        """``updateOrderTopicConfig``: set ``order`` from the name server's ORDER_TOPIC_CONFIG KV."""
        if order_topics is None:
            return
        changed = False
        with self._lock:
            for name, tc in list(self.topic_config_table.items()):
                want = name in order_topics
                if tc.order != want:
                    self.topic_config_table[name] = dataclasses.replace(tc, order=want)
                    changed = True
            if changed:
                self._bump()
        if changed:
            self.persist()

    def _fire_register(self) -> None:
        hook = self.register_hook
        if hook is not None:
            try:
                hook()
            except Exception:
                log.exception("re-registration after topic creation failed")

    # ------------------------------------------------------------------ persistence
    def config_file_path(self) -> str:
        return config_file_path(self._config.store_path_root_dir, "topics.json")

    def encode(self, pretty: bool = False) -> str:
        """The TopicConfigSerializeWrapper JSON (``encode(prettyFormat)``)."""
        return fastjson.dumps(self.build_serialize_wrapper(), pretty=pretty)

    def decode(self, text: str) -> None:
        """``decode``: merge the file's topics over the defaults; take its data version."""
        wrapper = TopicConfigSerializeWrapper.from_json(text)
        with self._lock:
            self.topic_config_table.update(wrapper.topic_config_table)
            if wrapper.data_version is not None:
                self.data_version = wrapper.data_version
