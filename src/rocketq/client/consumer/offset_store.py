"""Consumer offset stores: the broker (clustering) or a local file (broadcasting).

Mirrors ``org.apache.rocketmq.client.consumer.store.OffsetStore``, ``ReadOffsetType``,
``RemoteBrokerOffsetStore``, ``LocalFileOffsetStore`` and ``OffsetSerializeWrapper``
(reference 6.4).

Invariants:

* An offset is "the next offset to consume". The in-memory table is the source of truth
  between persists; ``update_offset(increase_only=True)`` never moves an offset backwards.
* RemoteBrokerOffsetStore persists with oneway UPDATE_CONSUMER_OFFSET to the master of the
  queue's broker (as the Java periodic task does) and reads with QUERY_CONSUMER_OFFSET;
  a broker error on read means "no offset" (-1), any other failure -2 (4.9.x semantics).
* LocalFileOffsetStore keeps ``<dir>/<client id>/<group>/offsets.json`` (fastjson pretty
  form ``{"offsetTable":{{mq}:offset}}`` with MessageQueue keys, as Java writes it), written
  atomically (temp file + rename) with the previous version kept as ``offsets.json.bak``.
"""

from __future__ import annotations

import enum
import logging
import os
import shutil
import tempfile
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Protocol

from rocketq.client.api_results import FindBrokerResult
from rocketq.errors import BrokerError, ClientError, ProtocolError, RocketqError
from rocketq.protocol import fastjson
from rocketq.protocol.message_queue import MessageQueue

__all__ = [
    "LOCAL_OFFSET_STORE_DIR_ENV",
    "LocalFileOffsetStore",
    "OffsetBrokerHost",
    "OffsetStore",
    "OffsetTable",
    "ReadOffsetType",
    "RemoteBrokerOffsetStore",
    "default_local_offset_store_dir",
]

log = logging.getLogger(__name__)

#: Environment override of the Java system property ``rocketmq.client.localOffsetStoreDir``.
LOCAL_OFFSET_STORE_DIR_ENV = "ROCKETMQ_CLIENT_LOCAL_OFFSET_STORE_DIR"


def default_local_offset_store_dir() -> Path:
    """``~/.rocketmq_offsets`` unless ``ROCKETMQ_CLIENT_LOCAL_OFFSET_STORE_DIR`` is set."""
    env = os.environ.get(LOCAL_OFFSET_STORE_DIR_ENV)
    return Path(env) if env else Path.home() / ".rocketmq_offsets"


class ReadOffsetType(enum.Enum):
    """``ReadOffsetType``."""

    READ_FROM_MEMORY = "READ_FROM_MEMORY"
    READ_FROM_STORE = "READ_FROM_STORE"
    MEMORY_FIRST_THEN_STORE = "MEMORY_FIRST_THEN_STORE"


class OffsetStore(Protocol):
    """``OffsetStore``: where a consumer group keeps its progress."""

    def load(self) -> None: ...

    def update_offset(self, mq: MessageQueue, offset: int, increase_only: bool) -> None: ...

    def read_offset(self, mq: MessageQueue, read_type: ReadOffsetType) -> int: ...

    def persist_all(self, mqs: Iterable[MessageQueue]) -> None: ...

    def persist(self, mq: MessageQueue) -> None: ...

    def remove_offset(self, mq: MessageQueue) -> None: ...

    def clone_offset_table(self, topic: str | None = None) -> dict[MessageQueue, int]: ...

    def update_consume_offset_to_broker(self, mq: MessageQueue, offset: int, oneway: bool) -> None: ...


class OffsetBrokerHost(Protocol):
    """What RemoteBrokerOffsetStore needs from the client instance (a fake in unit tests)."""

    def find_broker_address_in_subscribe(
        self, broker_name: str, broker_id: int, only_this_broker: bool
    ) -> FindBrokerResult | None: ...

    def update_topic_route_info_from_name_server(
        self, topic: str, *, default_topic: str | None = None, default_queue_nums: int = 4
    ) -> bool: ...

    def query_consumer_offset(self, addr: str, group: str, mq: MessageQueue) -> int: ...

    def update_consumer_offset(
        self, addr: str, group: str, mq: MessageQueue, offset: int, oneway: bool
    ) -> None: ...


class OffsetTable:
    """The thread-safe offset table (``offsetTable``) every store shares, the asyncio ones too:
    ``update(increase_only=True)`` never moves an offset back."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._table: dict[MessageQueue, int] = {}

    def update(self, mq: MessageQueue, offset: int, increase_only: bool) -> None:
        with self._lock:
            old = self._table.get(mq)
            if old is None or not increase_only or offset > old:
                self._table[mq] = offset

    def get(self, mq: MessageQueue) -> int | None:
        with self._lock:
            return self._table.get(mq)

    def remove(self, mq: MessageQueue) -> None:
        with self._lock:
            self._table.pop(mq, None)

    def snapshot(self, topic: str | None = None) -> dict[MessageQueue, int]:
        with self._lock:
            return {mq: off for mq, off in self._table.items() if topic is None or mq.topic == topic}

    def replace(self, table: Mapping[MessageQueue, int]) -> None:
        with self._lock:
            self._table = dict(table)


class _MemoryBackedOffsetStore:
    """What both stores do alike: the in-memory table and the memory side of ``readOffset``."""

    def __init__(self) -> None:
        self._table = OffsetTable()

    def update_offset(self, mq: MessageQueue, offset: int, increase_only: bool) -> None:
        self._table.update(mq, offset, increase_only)

    def read_offset(self, mq: MessageQueue, read_type: ReadOffsetType) -> int:
        """``readOffset``: memory first unless READ_FROM_STORE; -1 when READ_FROM_MEMORY misses."""
        if read_type is not ReadOffsetType.READ_FROM_STORE:
            offset = self._table.get(mq)
            if offset is not None:
                return offset
            if read_type is ReadOffsetType.READ_FROM_MEMORY:
                return -1
        return self._read_from_store(mq)

    def _read_from_store(self, mq: MessageQueue) -> int:
        """The stored offset, also put into memory; negative when there is none."""
        raise NotImplementedError

    def remove_offset(self, mq: MessageQueue) -> None:
        self._table.remove(mq)

    def clone_offset_table(self, topic: str | None = None) -> dict[MessageQueue, int]:
        return self._table.snapshot(topic)


class RemoteBrokerOffsetStore(_MemoryBackedOffsetStore):
    """``RemoteBrokerOffsetStore``: offsets live on the broker (CLUSTERING).

    ``persist_all(mqs)`` sends the offsets of ``mqs`` and forgets every other queue's
    offset, as Java does after a rebalance took those queues away. ``read_offset``: -1 = no
    offset anywhere; -2 = the broker could not be asked (4.9.x semantics).
    """

    def __init__(self, host: OffsetBrokerHost, group: str) -> None:
        super().__init__()
        self._host = host
        self.group = group

    def load(self) -> None:
        """Nothing to load: the broker is asked on demand."""

    def _read_from_store(self, mq: MessageQueue) -> int:
        try:
            offset = self._host.query_consumer_offset(self._find_master(mq), self.group, mq)
        except BrokerError as exc:
            log.debug("no broker offset for %s/%s: %s", self.group, mq, exc)
            return -1
        except RocketqError as exc:
            log.warning("fetch consume offset of %s/%s failed: %s", self.group, mq, exc)
            return -2
        self._table.update(mq, offset, False)
        return offset

    def _find_master(self, mq: MessageQueue) -> str:
        found = self._host.find_broker_address_in_subscribe(mq.broker_name, 0, True)
        if found is None:
            self._host.update_topic_route_info_from_name_server(mq.topic)
            found = self._host.find_broker_address_in_subscribe(mq.broker_name, 0, True)
        if found is None:
            raise ClientError(f"The broker[{mq.broker_name}] not exist")
        return found.broker_addr

    def update_consume_offset_to_broker(self, mq: MessageQueue, offset: int, oneway: bool) -> None:
        """UPDATE_CONSUMER_OFFSET to the queue's master; ClientError if it is unknown."""
        self._host.update_consumer_offset(self._find_master(mq), self.group, mq, offset, oneway)

    def persist_all(self, mqs: Iterable[MessageQueue]) -> None:
        wanted = set(mqs)
        for mq, offset in self._table.snapshot().items():
            if mq in wanted:
                self._send(mq, offset)
            else:
                # RemoteBrokerOffsetStore.persistAll: forget queues no longer assigned
                self._table.remove(mq)

    def persist(self, mq: MessageQueue) -> None:
        offset = self._table.get(mq)
        if offset is not None:
            self._send(mq, offset)

    def _send(self, mq: MessageQueue, offset: int) -> None:
        """Oneway UPDATE_CONSUMER_OFFSET; a failure is logged (the next persist retries)."""
        try:
            self.update_consume_offset_to_broker(mq, offset, True)
        except RocketqError as exc:
            log.warning("persist offset %d of %s/%s failed: %s", offset, self.group, mq, exc)


class LocalFileOffsetStore(_MemoryBackedOffsetStore):
    """``LocalFileOffsetStore``: offsets in ``<dir>/<client id>/<group>/offsets.json`` (BROADCASTING)."""

    def __init__(
        self, client_id: str, group: str, *, store_dir: str | os.PathLike[str] | None = None
    ) -> None:
        super().__init__()
        base = Path(store_dir) if store_dir is not None else default_local_offset_store_dir()
        self.group = group
        self.path = base / client_id / group / "offsets.json"
        self._file_lock = threading.Lock()

    # ------------------------------------------------------------------ file format
    @staticmethod
    def encode(table: Mapping[MessageQueue, int]) -> str:
        """``OffsetSerializeWrapper.toJson(true)``: fastjson pretty form with MessageQueue keys."""
        return fastjson.dumps({"offsetTable": dict(table)}, pretty=True)

    @staticmethod
    def decode(text: str) -> dict[MessageQueue, int]:
        """Parse an offsets file; raises :class:`ProtocolError` for anything malformed."""
        obj = fastjson.loads(text)
        if not isinstance(obj, dict):
            raise ProtocolError("offsets file is not a JSON object")
        raw = obj.get("offsetTable", {})
        if not isinstance(raw, dict):
            raise ProtocolError("offsetTable is not an object")
        out: dict[MessageQueue, int] = {}
        for key, value in raw.items():
            if not isinstance(key, fastjson.ObjectKey) or key.is_array:
                raise ProtocolError(f"offsetTable key is not a MessageQueue: {key!r}")
            thawed = key.thaw()
            if not isinstance(thawed, dict) or isinstance(value, bool) or not isinstance(value, int):
                raise ProtocolError(f"bad offsetTable entry {key!r}: {value!r}")
            out[MessageQueue.from_json_obj({str(k): v for k, v in thawed.items()})] = value
        return out

    def _read_file(self, path: Path) -> dict[MessageQueue, int] | None:
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        if not text.strip():
            return None
        return self.decode(text)

    # ------------------------------------------------------------------ OffsetStore
    def load(self) -> None:
        """Read ``offsets.json`` (or, if it is corrupt, ``offsets.json.bak``)."""
        with self._file_lock:
            try:
                table = self._read_file(self.path)
            except (ProtocolError, OSError) as exc:
                log.warning("offsets file %s unreadable (%s); trying the backup", self.path, exc)
                table = None
            if table is None:
                try:
                    table = self._read_file(self.path.with_name("offsets.json.bak"))
                except (ProtocolError, OSError) as exc:
                    raise ClientError(
                        f"cannot load local offsets of {self.group} from {self.path}: {exc}"
                    ) from exc
            if table is not None:
                self._table.replace(table)

    def _read_from_store(self, mq: MessageQueue) -> int:
        with self._file_lock:
            try:
                table = self._read_file(self.path)
            except (ProtocolError, OSError):
                return -1
        if table is None or mq not in table:
            return -1
        offset = table[mq]
        self._table.update(mq, offset, False)
        return offset

    def persist_all(self, mqs: Iterable[MessageQueue]) -> None:
        wanted = set(mqs)
        if not wanted:
            return
        table = {mq: off for mq, off in self._table.snapshot().items() if mq in wanted}
        self._write(table)

    def persist(self, mq: MessageQueue) -> None:
        self.persist_all(self._table.snapshot())

    def update_consume_offset_to_broker(self, mq: MessageQueue, offset: int, oneway: bool) -> None:
        """Broadcasting offsets never go to the broker (Java: a no-op)."""

    def _write(self, table: Mapping[MessageQueue, int]) -> None:
        """``MixAll.string2File``: temp file, copy the previous file to ``.bak``, atomic rename."""
        text = self.encode(table)
        with self._file_lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix="offsets.", suffix=".tmp", dir=self.path.parent)
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as fh:
                    fh.write(text)
                    fh.flush()
                    os.fsync(fh.fileno())
                if self.path.exists():
                    shutil.copyfile(self.path, self.path.with_name("offsets.json.bak"))
                os.replace(tmp, self.path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
