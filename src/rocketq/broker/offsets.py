"""Committed consumer offsets: ``ConsumerOffsetManager``.

Mirrors ``org.apache.rocketmq.broker.offset.ConsumerOffsetManager`` (4.9.7).

Invariants:

* The table is keyed ``"<topic>@<group>"`` (``TOPIC_GROUP_SEPARATOR``), then by queue id;
  a value is the *next* offset to consume. Commits overwrite (a smaller value is accepted,
  Java only logs it).
* :meth:`ConsumerOffsetManager.query_offset` returns -1 when nothing was committed.
* :meth:`ConsumerOffsetManager.persist` writes ``<root>/config/consumerOffset.json`` in
  fastjson pretty format with bare integer keys (``{0:5,1:4\\n\\t\\t}``), entries in Java
  ``ConcurrentHashMap`` order: the outer map was created with capacity 512, each inner map
  with 32. The broker calls it every ``flush_consumer_offset_interval`` ms and at shutdown.
* Thread-safe (one lock); :meth:`encode` works on a snapshot.
"""

from __future__ import annotations

import logging
import threading

from rocketq.broker.config import BrokerConfig, ConfigManager, config_file_path
from rocketq.protocol import fastjson
from rocketq.protocol.bodies import ConsumerOffsetSerializeWrapper
from rocketq.protocol.java import concurrent_hashmap_order

__all__ = ["TOPIC_GROUP_SEPARATOR", "ConsumerOffsetManager"]

log = logging.getLogger(__name__)

#: ``ConsumerOffsetManager.TOPIC_GROUP_SEPARATOR``
TOPIC_GROUP_SEPARATOR = "@"
#: ``offsetTable = new ConcurrentHashMap<>(512)``
_TABLE_CAPACITY = 512
#: ``new ConcurrentHashMap<Integer, Long>(32)`` per topic@group
_QUEUE_TABLE_CAPACITY = 32


class ConsumerOffsetManager(ConfigManager):
    """``topic@group -> queueId -> offset`` (``ConsumerOffsetManager``)."""

    def __init__(self, config: BrokerConfig) -> None:
        self._config = config
        self._lock = threading.Lock()
        self.offset_table: dict[str, dict[int, int]] = {}

    @staticmethod
    def key(topic: str, group: str) -> str:
        return f"{topic}{TOPIC_GROUP_SEPARATOR}{group}"

    def commit_offset(self, client_host: str, group: str, topic: str, queue_id: int, offset: int) -> None:
        """``commitOffset``: store ``offset`` (the next offset to consume) for the queue."""
        key = self.key(topic, group)
        with self._lock:
            table = self.offset_table.get(key)
            if table is None:
                self.offset_table[key] = {queue_id: offset}
                return
            old = table.get(queue_id)
            table[queue_id] = offset
        if old is not None and offset < old:
            log.debug("offset of %s q%d moved back %d -> %d by %s", key, queue_id, old, offset, client_host)

    def query_offset(self, group: str, topic: str, queue_id: int) -> int:
        """The committed offset, or -1 (``queryOffset``)."""
        table = self.offset_table.get(self.key(topic, group))
        if table is None:
            return -1
        return table.get(queue_id, -1)

    def query_offsets(self, group: str, topic: str) -> dict[int, int]:
        """Every committed queue offset of ``group`` on ``topic`` (a copy; may be empty)."""
        with self._lock:
            return dict(self.offset_table.get(self.key(topic, group), {}))

    def which_topic_by_consumer(self, group: str) -> set[str]:
        """``whichTopicByConsumer``: topics ``group`` has offsets for."""
        out: set[str] = set()
        with self._lock:
            keys = list(self.offset_table)
        for k in keys:
            parts = k.split(TOPIC_GROUP_SEPARATOR)
            if len(parts) == 2 and parts[1] == group:
                out.add(parts[0])
        return out

    def which_group_by_topic(self, topic: str) -> set[str]:
        """``whichGroupByTopic``: groups with offsets on ``topic``."""
        out: set[str] = set()
        with self._lock:
            keys = list(self.offset_table)
        for k in keys:
            parts = k.split(TOPIC_GROUP_SEPARATOR)
            if len(parts) == 2 and parts[0] == topic:
                out.add(parts[1])
        return out

    def remove_offset(self, group: str) -> None:
        """``removeOffset``: drop every offset of ``group`` (DELETE_SUBSCRIPTIONGROUP removeOffset)."""
        with self._lock:
            for k in list(self.offset_table):
                parts = k.split(TOPIC_GROUP_SEPARATOR)
                if len(parts) == 2 and parts[1] == group:
                    del self.offset_table[k]

    def clean_offset_by_topic(self, topic: str) -> None:
        """Drop every group's offsets of ``topic`` (5.x ``cleanOffsetByTopic``, used on topic deletion)."""
        with self._lock:
            for k in list(self.offset_table):
                parts = k.split(TOPIC_GROUP_SEPARATOR)
                if len(parts) == 2 and parts[0] == topic:
                    del self.offset_table[k]

    def clone_offset(self, src_group: str, dest_group: str, topic: str) -> None:
        """``cloneOffset``."""
        with self._lock:
            src = self.offset_table.get(self.key(topic, src_group))
            if src is not None:
                self.offset_table[self.key(topic, dest_group)] = dict(src)

    # ------------------------------------------------------------------ persistence
    def snapshot(self) -> dict[str, dict[int, int]]:
        """The table in Java iteration order (outer and inner maps)."""
        with self._lock:
            table = {k: dict(v) for k, v in self.offset_table.items()}
        out: dict[str, dict[int, int]] = {}
        for k in concurrent_hashmap_order(list(table), _TABLE_CAPACITY):
            inner = table[k]
            out[k] = {q: inner[q] for q in concurrent_hashmap_order(list(inner), _QUEUE_TABLE_CAPACITY)}
        return out

    def config_file_path(self) -> str:
        return config_file_path(self._config.store_path_root_dir, "consumerOffset.json")

    def encode(self, pretty: bool = False) -> str:
        return fastjson.dumps(ConsumerOffsetSerializeWrapper(offset_table=self.snapshot()), pretty=pretty)

    def decode(self, text: str) -> None:
        wrapper = ConsumerOffsetSerializeWrapper.from_json(text)
        with self._lock:
            self.offset_table = {
                str(k): {int(q): int(o) for q, o in v.items()} for k, v in wrapper.offset_table.items()
            }
