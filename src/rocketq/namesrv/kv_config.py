"""The name server's namespaced key/value table, persisted as fastjson JSON.

Mirrors ``org.apache.rocketmq.namesrv.kvconfig.KVConfigManager`` and
``KVConfigSerializeWrapper`` of Apache RocketMQ 4.9.7. The table is
``namespace -> {key -> value}``; the namespace ``ORDER_TOPIC_CONFIG`` holds
``topic -> "brokerName:queueNums;..."`` for ordered topics (``NamesrvUtil``).

Invariants:

* Every put and delete rewrites the file (``persist``), as Java does. The file is what
  ``KVConfigSerializeWrapper.toJson()`` writes: compact fastjson,
  ``{"configTable":{"<namespace>":{"<key>":"<value>"}}}``, maps in Java ``HashMap``
  order. It is written to ``<path>.tmp`` first, the previous file is kept as
  ``<path>.bak`` and the new one moved into place (``MixAll.string2File``).
* ``path=None`` keeps the table in memory only (tests, embedded use).
* A file that exists but is not valid JSON makes :meth:`KVConfigManager.load` raise
  :class:`~rocketq.protocol.fastjson.JsonError` (Java's ``fastjson`` throws out of
  ``NamesrvController.initialize`` too): the name server does not start on a corrupt file.
* Thread-safe (one lock), like Java's read-write lock.
"""

from __future__ import annotations

import logging
import os
import shutil
import threading

from rocketq.protocol import fastjson
from rocketq.protocol.java import hashmap_order
from rocketq.protocol.route import KVTable

__all__ = ["NAMESPACE_ORDER_TOPIC_CONFIG", "KVConfigManager"]

log = logging.getLogger(__name__)

#: ``NamesrvUtil.NAMESPACE_ORDER_TOPIC_CONFIG``.
NAMESPACE_ORDER_TOPIC_CONFIG = "ORDER_TOPIC_CONFIG"


class KVConfigManager:
    """``KVConfigManager``: get/put/delete by namespace and key; list a namespace."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self._lock = threading.RLock()
        self._table: dict[str, dict[str, str]] = {}

    # ------------------------------------------------------------------ persistence
    def load(self) -> None:
        """Read the file if it exists (``KVConfigManager.load``); a missing file is empty."""
        if self.path is None:
            return
        try:
            with open(self.path, encoding="utf-8") as fh:
                content = fh.read()
        except FileNotFoundError:
            return
        obj = fastjson.loads(content)
        table = obj.get("configTable") if isinstance(obj, dict) else None
        if not isinstance(table, dict):
            return
        with self._lock:
            for namespace, entries in table.items():
                if isinstance(entries, dict):
                    self._table[str(namespace)] = {
                        str(k): v if isinstance(v, str) else fastjson.dumps(v)
                        for k, v in entries.items()
                        if v is not None
                    }
        log.info("load KV config table OK")

    def to_json(self) -> str:
        """The file content: ``KVConfigSerializeWrapper.toJson()``."""
        with self._lock:
            table = {
                ns: {k: self._table[ns][k] for k in hashmap_order(self._table[ns])}
                for ns in hashmap_order(self._table)
            }
        return fastjson.dumps({"configTable": table})

    def persist(self) -> None:
        """Write the whole table (``KVConfigManager.persist``); a no-op without a path."""
        if self.path is None:
            return
        content = self.to_json()
        with self._lock:
            directory = os.path.dirname(os.path.abspath(self.path))
            os.makedirs(directory, exist_ok=True)
            tmp = self.path + ".tmp"
            with open(tmp, "w", encoding="utf-8") as fh:
                fh.write(content)
            if os.path.exists(self.path):
                shutil.copyfile(self.path, self.path + ".bak")
            os.replace(tmp, self.path)

    # ------------------------------------------------------------------ operations
    def put_kv_config(self, namespace: str, key: str, value: str) -> None:
        """``putKVConfig``: create or replace one entry, then persist."""
        with self._lock:
            entries = self._table.setdefault(namespace, {})
            prev = entries.get(key)
            entries[key] = value
        if prev is None:
            log.info(
                "putKVConfig create new config item, Namespace: %s Key: %s Value: %s", namespace, key, value
            )
        else:
            log.info("putKVConfig update config item, Namespace: %s Key: %s Value: %s", namespace, key, value)
        self.persist()

    def delete_kv_config(self, namespace: str, key: str) -> None:
        """``deleteKVConfig``: remove one entry (the namespace stays, even if empty), persist."""
        with self._lock:
            entries = self._table.get(namespace)
            if entries is not None:
                entries.pop(key, None)
        self.persist()

    def get_kv_config(self, namespace: str, key: str) -> str | None:
        """``getKVConfig``: the value, or ``None``."""
        with self._lock:
            entries = self._table.get(namespace)
            return None if entries is None else entries.get(key)

    def get_kv_list_by_namespace(self, namespace: str) -> bytes | None:
        """``getKVListByNamespace``: the namespace as a KVTable JSON body, or ``None``."""
        with self._lock:
            entries = self._table.get(namespace)
            if entries is None:
                return None
            ordered = {k: entries[k] for k in hashmap_order(entries)}
        return KVTable(table=ordered).to_json()

    def namespaces(self) -> dict[str, dict[str, str]]:
        """A copy of the whole table."""
        with self._lock:
            return {ns: dict(entries) for ns, entries in self._table.items()}
