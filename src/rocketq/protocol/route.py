"""Name-server bodies: routes, cluster info, broker registration, topic configs, KV tables.

Mirrors ``org.apache.rocketmq.common.protocol.route.{TopicRouteData, BrokerData,
QueueData}``, ``protocol.body.{ClusterInfo, TopicConfigSerializeWrapper,
RegisterBrokerBody, KVTable, TopicList}``, ``TopicConfig``, ``TopicFilterType`` and
``DataVersion`` of RocketMQ 4.9.7 (protocol reference sections 2.4 and 2.5).

Invariants and quirks:

* ``brokerAddrs`` maps brokerId (``long``, 0 = master) to ``ip:port``; fastjson writes
  these keys bare (``{0:"..."}``). The name server answers GET_ROUTEINFO_BY_TOPIC with
  standard JSON (BrowserCompatible + MapSortField: ``{"0":"..."}``) when the request
  version is >= V4_9_4 (401) or ``acceptStandardJsonOnly`` is set
  (``DefaultRequestProcessor.getRouteInfoByTopic``): :meth:`TopicRouteData.to_json`
  takes that as ``standard_json``. GET_BROKER_CLUSTER_INFO is always bare
  (``ClusterInfo``).
* Maps keep insertion order, so a parsed Java body re-serializes byte for byte.
* ``RegisterBrokerBody`` also has a zlib "compressed" form (``encode(compress=true)``)
  that keeps only ``name read write perm filterType`` per topic.
"""

from __future__ import annotations

import enum
import struct
import time
import zlib
from dataclasses import dataclass, field

from rocketq.protocol.codes import PermName, Version
from rocketq.protocol.fastjson import JsonBean, JsonError, dumps, loads
from rocketq.protocol.mixall import MASTER_ID

__all__ = [
    "MAX_INFLATED_REGISTER_BODY",
    "BrokerData",
    "ClusterInfo",
    "DataVersion",
    "KVTable",
    "QueueData",
    "RegisterBrokerBody",
    "TopicConfig",
    "TopicConfigSerializeWrapper",
    "TopicFilterType",
    "TopicList",
    "TopicRouteData",
]

#: Upper bound rocketq accepts for an inflated compressed RegisterBrokerBody (Java has none).
MAX_INFLATED_REGISTER_BODY = 64 * 1024 * 1024


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class TopicFilterType(enum.Enum):
    """``org.apache.rocketmq.common.TopicFilterType``; value = Java ordinal."""

    SINGLE_TAG = 0
    MULTI_TAG = 1


@dataclass(kw_only=True)
class DataVersion(JsonBean):
    """``DataVersion``: (timestamp ms, counter) stamp of a broker's topic/group tables.

    Java defaults: ``timestamp`` = creation time, ``counter`` 0 (an ``AtomicLong`` in Java,
    written as a plain number).
    """

    JAVA_CLASS = "org.apache.rocketmq.common.DataVersion"

    timestamp: int = field(default_factory=_now_ms)
    counter: int = 0

    def next_version(self, now_ms: int | None = None) -> None:
        """``DataVersion.nextVersion``: bump the counter and stamp the time."""
        self.timestamp = _now_ms() if now_ms is None else now_ms
        self.counter += 1


@dataclass(kw_only=True)
class TopicConfig(JsonBean):
    """``TopicConfig`` with Java defaults: 16 read/write queues, perm RW (6), SINGLE_TAG."""

    JAVA_CLASS = "org.apache.rocketmq.common.TopicConfig"

    topic_name: str | None = None
    read_queue_nums: int = 16
    write_queue_nums: int = 16
    perm: int = int(PermName.PERM_READ | PermName.PERM_WRITE)
    topic_filter_type: TopicFilterType | None = TopicFilterType.SINGLE_TAG
    topic_sys_flag: int = 0
    order: bool = False

    def encode_compact(self) -> str:
        """``TopicConfig.encode``: ``"name read write perm filterType"`` (compressed register)."""
        ftype = self.topic_filter_type.name if self.topic_filter_type else "null"
        return f"{self.topic_name} {self.read_queue_nums} {self.write_queue_nums} {self.perm} {ftype}"

    @classmethod
    def decode_compact(cls, text: str) -> TopicConfig:
        """``TopicConfig.decode``; raises :class:`JsonError` unless there are exactly 5 fields."""
        parts = text.split(" ")
        if len(parts) != 5:
            raise JsonError(f"bad compact TopicConfig {text!r}")
        name, read, write, perm, ftype = parts
        try:
            return cls(
                topic_name=name,
                read_queue_nums=int(read),
                write_queue_nums=int(write),
                perm=int(perm),
                topic_filter_type=TopicFilterType[ftype],
            )
        except (ValueError, KeyError) as exc:
            raise JsonError(f"bad compact TopicConfig {text!r}: {exc}") from None


@dataclass(kw_only=True)
class TopicConfigSerializeWrapper(JsonBean):
    """``TopicConfigSerializeWrapper``: GET_ALL_TOPIC_CONFIG body and ``config/topics.json``."""

    JAVA_CLASS = "org.apache.rocketmq.common.protocol.body.TopicConfigSerializeWrapper"

    topic_config_table: dict[str, TopicConfig] = field(default_factory=dict)
    data_version: DataVersion = field(default_factory=DataVersion)


@dataclass(kw_only=True)
class RegisterBrokerBody(JsonBean):
    """``RegisterBrokerBody``: the REGISTER_BROKER (103) request body.

    :meth:`to_json` / :meth:`from_json` are the plain form (``compressed=false``);
    :meth:`encode` / :meth:`decode` select the form from the header's ``compressed`` flag.
    """

    JAVA_CLASS = "org.apache.rocketmq.common.protocol.body.RegisterBrokerBody"

    topic_config_serialize_wrapper: TopicConfigSerializeWrapper = field(
        default_factory=TopicConfigSerializeWrapper
    )
    filter_server_list: list[str] = field(default_factory=list)

    def encode(self, compress: bool = False) -> bytes:
        """``RegisterBrokerBody.encode(compress)``.

        Compressed: a zlib stream (``Deflater.BEST_COMPRESSION``) of: int length +
        DataVersion JSON; int topic count; per topic int length + :meth:`TopicConfig.encode_compact`;
        int length + filterServerList JSON. Ints are big-endian. Topic sysFlag and order are lost.
        """
        if not compress:
            return self.to_json()
        wrapper = self.topic_config_serialize_wrapper
        chunks: list[bytes] = []

        def put(blob: bytes) -> None:
            chunks.append(struct.pack(">i", len(blob)))
            chunks.append(blob)

        put(wrapper.data_version.to_json())
        chunks.append(struct.pack(">i", len(wrapper.topic_config_table)))
        for config in wrapper.topic_config_table.values():
            put(config.encode_compact().encode("utf-8"))
        put(dumps(self.filter_server_list).encode("utf-8"))
        return zlib.compress(b"".join(chunks), 9)

    @classmethod
    def decode(cls, data: bytes, compressed: bool = False) -> RegisterBrokerBody:
        """``RegisterBrokerBody.decode(data, compressed)``; :class:`JsonError` if malformed."""
        if not compressed:
            return cls.from_json(data)
        inflater = zlib.decompressobj()
        try:
            raw = inflater.decompress(data, MAX_INFLATED_REGISTER_BODY)
        except zlib.error as exc:
            raise JsonError(f"compressed RegisterBrokerBody: {exc}") from None
        if inflater.unconsumed_tail:
            raise JsonError("compressed RegisterBrokerBody inflates beyond the size limit")
        pos = 0

        def take(n: int) -> bytes:
            nonlocal pos
            if n < 0 or pos + n > len(raw):
                raise JsonError("compressed RegisterBrokerBody: End of compressed data has reached")
            pos += n
            return raw[pos - n : pos]

        def take_int() -> int:
            value: int = struct.unpack(">i", take(4))[0]
            return value

        body = cls()
        wrapper = body.topic_config_serialize_wrapper
        wrapper.data_version = DataVersion.from_json(take(take_int()))
        for _ in range(take_int()):
            try:
                text = take(take_int()).decode("utf-8")
            except UnicodeDecodeError as exc:
                raise JsonError(f"compressed RegisterBrokerBody: {exc}") from None
            config = TopicConfig.decode_compact(text)
            wrapper.topic_config_table[config.topic_name or ""] = config
        servers = loads(take(take_int()))
        if not isinstance(servers, list):
            raise JsonError("compressed RegisterBrokerBody: filterServerList is not an array")
        body.filter_server_list = [s if isinstance(s, str) else dumps(s) for s in servers]
        return body


@dataclass(kw_only=True)
class QueueData(JsonBean):
    """``QueueData``: one broker's queues of a topic in a route."""

    JAVA_CLASS = "org.apache.rocketmq.common.protocol.route.QueueData"

    broker_name: str | None = None
    read_queue_nums: int = 0
    write_queue_nums: int = 0
    perm: int = 0
    topic_sys_flag: int = 0


@dataclass(kw_only=True)
class BrokerData(JsonBean):
    """``BrokerData``: a broker name's addresses by brokerId (0 = master)."""

    JAVA_CLASS = "org.apache.rocketmq.common.protocol.route.BrokerData"

    cluster: str | None = None
    broker_name: str | None = None
    broker_addrs: dict[int, str] = field(default_factory=dict)

    def master_addr(self) -> str | None:
        """The master's address (``MixAll.MASTER_ID``), or ``None``."""
        return self.broker_addrs.get(MASTER_ID)

    def select_broker_addr(self) -> str | None:
        """``BrokerData.selectBrokerAddr``: the master, else the lowest-id slave (Java picks a
        random one; the lowest id keeps answers reproducible)."""
        if not self.broker_addrs:
            return None
        master = self.broker_addrs.get(MASTER_ID)
        return master if master is not None else self.broker_addrs[min(self.broker_addrs)]


@dataclass(kw_only=True)
class TopicRouteData(JsonBean):
    """``TopicRouteData``: the GET_ROUTEINFO_BY_TOPIC (105) answer.

    ``order_topic_conf`` (``"brokerName:queueNums;..."``) is present only for ordered topics
    configured in the name server's KV store.
    """

    JAVA_CLASS = "org.apache.rocketmq.common.protocol.route.TopicRouteData"

    order_topic_conf: str | None = None
    queue_datas: list[QueueData] = field(default_factory=list)
    broker_datas: list[BrokerData] = field(default_factory=list)
    filter_server_table: dict[str, list[str]] = field(default_factory=dict)

    def to_json(self, *, standard_json: bool = False) -> bytes:
        """The route body; ``standard_json`` for requests per :meth:`wants_standard_json`.

        Default: fastjson's own output (bare ``{0:"addr"}`` keys). ``standard_json``: the
        name server's ``BrowserCompatible`` + ``MapSortField`` encoding (quoted, sorted keys,
        non-ASCII escaped).
        """
        if not standard_json:
            return super().to_json()
        return dumps(self, browser_compatible=True, map_sort=True).encode("utf-8")

    @staticmethod
    def wants_standard_json(version: int, accept_standard_json_only: bool | None = None) -> bool:
        """Whether the name server answers a route request in standard JSON (4.9.4+ rule)."""
        return version >= Version.V4_9_4 or bool(accept_standard_json_only)


@dataclass(kw_only=True)
class ClusterInfo(JsonBean):
    """``ClusterInfo``: the GET_BROKER_CLUSTER_INFO (106) answer (always bare long keys)."""

    JAVA_CLASS = "org.apache.rocketmq.common.protocol.body.ClusterInfo"

    broker_addr_table: dict[str, BrokerData] = field(default_factory=dict)
    # Java HashMap<String, Set<String>>: the set is a list here to keep wire order.
    cluster_addr_table: dict[str, list[str]] = field(default_factory=dict)


@dataclass(kw_only=True)
class KVTable(JsonBean):
    """``KVTable``: GET_BROKER_RUNTIME_INFO (28) and GET_KVLIST_BY_NAMESPACE (219) bodies."""

    JAVA_CLASS = "org.apache.rocketmq.common.protocol.body.KVTable"

    table: dict[str, str] = field(default_factory=dict)


@dataclass(kw_only=True)
class TopicList(JsonBean):
    """``TopicList``: GET_ALL_TOPIC_LIST_FROM_NAMESERVER (206), 224 and 304 answers."""

    JAVA_CLASS = "org.apache.rocketmq.common.protocol.body.TopicList"

    topic_list: list[str] = field(default_factory=list)
    broker_addr: str | None = None
