"""The name server's routing tables (pure: no sockets, no threads, injected clock).

Mirrors ``org.apache.rocketmq.namesrv.routeinfo.RouteInfoManager`` (and its
``BrokerLiveInfo``) of Apache RocketMQ 4.9.7. Five tables:

* ``topic -> {brokerName -> QueueData}``   (``topicQueueTable``)
* ``brokerName -> BrokerData``             (``brokerAddrTable``: cluster, name, {brokerId -> addr})
* ``clusterName -> {brokerName}``          (``clusterAddrTable``)
* ``brokerAddr -> BrokerLiveInfo``          (``brokerLiveTable``: last registration, DataVersion,
  channel, HA address)
* ``brokerAddr -> [filter server]``        (``filterServerTable``)

Invariants (all Java behaviour):

* Only a master (brokerId 0) updates QueueData, and only when its DataVersion differs from
  the one it last registered or when this is its first registration (``registerBroker``).
* An ``ip:port`` appears under one brokerId only: registering it under a new id removes
  the old one (a slave promoted to master).
* A broker whose last registration is older than ``broker_channel_expired_time_ms`` is
  dropped by :meth:`RouteInfoManager.scan_not_active_broker`, and a broker whose
  connection closes by :meth:`RouteInfoManager.on_channel_destroy`; dropping the last
  address of a broker name removes that name from its cluster and from every topic, and
  a topic left without brokers disappears.
* Channels are opaque objects here (compared by identity); the caller closes them.

Output order: the Java tables are ``HashMap``/``HashSet`` with known initial capacities
(topics 1024, brokers 128, clusters 32, everything else 16), and fastjson writes maps and
sets in their iteration order. Python dicts here keep insertion order and every answer is
re-ordered with :func:`rocketq.protocol.java.hashmap_order`, so single-threaded histories produce the bytes a
Java name server would (Java's tables never shrink after removals; ours are re-sized for
the current count, which only matters after many deletions).

Thread safety: every public method holds one re-entrant lock (Java uses a read-write
lock), so the tables may be read from other threads than the event loop's.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from rocketq.protocol.codes import PermName, TopicSysFlag
from rocketq.protocol.java import hashmap_order
from rocketq.protocol.mixall import MASTER_ID
from rocketq.protocol.route import (
    BrokerData,
    ClusterInfo,
    DataVersion,
    QueueData,
    TopicConfig,
    TopicList,
    TopicRouteData,
)

__all__ = [
    "MASTER_ID",
    "BrokerLiveInfo",
    "RegisterBrokerResult",
    "RouteInfoManager",
    "monotonic_ms",
]

log = logging.getLogger(__name__)

#: ``TopicSysFlag.FLAG_UNIT`` / ``FLAG_UNIT_SUB`` as plain ints.
_FLAG_UNIT = int(TopicSysFlag.FLAG_UNIT)
_FLAG_UNIT_SUB = int(TopicSysFlag.FLAG_UNIT_SUB)

# Initial capacities of the Java tables (RouteInfoManager constructor; HashMap/HashSet
# default 16 elsewhere). They decide the iteration order fastjson writes.
_TOPIC_TABLE_CAPACITY = 1024
_BROKER_TABLE_CAPACITY = 128
_CLUSTER_TABLE_CAPACITY = 32
_DEFAULT_CAPACITY = 16


def monotonic_ms() -> int:
    """The default clock: ``time.monotonic`` in whole milliseconds."""
    return time.monotonic_ns() // 1_000_000


def _dv_key(dv: DataVersion) -> tuple[int, int]:
    # DataVersion.equals: timestamp and counter (5.x adds stateVersion; 4.9.7 has none).
    return (int(dv.timestamp), int(dv.counter))


@dataclass
class BrokerLiveInfo:
    """``BrokerLiveInfo``: when a broker last registered, with what, over which channel."""

    last_update_ms: int
    data_version: DataVersion
    channel: object | None
    ha_server_addr: str | None


@dataclass(frozen=True)
class RegisterBrokerResult:
    """``RegisterBrokerResult``: the master's HA and broker address, for slaves only."""

    ha_server_addr: str | None = None
    master_addr: str | None = None


@dataclass
class _BrokerEntry:
    cluster: str
    broker_name: str
    # brokerId -> "ip:port"; a Java HashMap<Long, String> (small ids iterate ascending).
    broker_addrs: dict[int, str]

    def to_broker_data(self) -> BrokerData:
        return BrokerData(
            cluster=self.cluster,
            broker_name=self.broker_name,
            broker_addrs=dict(sorted(self.broker_addrs.items())),
        )


class RouteInfoManager:
    """The routing tables and the Java operations on them (see the module docstring).

    ``clock_ms`` gives "now" for registrations and expiry (default :func:`monotonic_ms`);
    ``broker_channel_expired_time_ms`` is ``BROKER_CHANNEL_EXPIRED_TIME`` (120 000).
    """

    def __init__(
        self,
        *,
        clock_ms: Callable[[], int] = monotonic_ms,
        broker_channel_expired_time_ms: int = 120_000,
    ) -> None:
        self._clock_ms = clock_ms
        self.broker_channel_expired_time_ms = broker_channel_expired_time_ms
        self._lock = threading.RLock()
        self._topic_queue_table: dict[str, dict[str, QueueData]] = {}
        self._broker_addr_table: dict[str, _BrokerEntry] = {}
        self._cluster_addr_table: dict[str, dict[str, None]] = {}  # ordered sets
        self._broker_live_table: dict[str, BrokerLiveInfo] = {}
        self._filter_server_table: dict[str, list[str]] = {}

    # ------------------------------------------------------------------ registration
    def register_broker(
        self,
        cluster_name: str,
        broker_addr: str,
        broker_name: str,
        broker_id: int,
        ha_server_addr: str | None,
        data_version: DataVersion,
        topic_config_table: Mapping[str, TopicConfig] | None,
        filter_server_list: Sequence[str] | None,
        channel: object | None,
    ) -> RegisterBrokerResult:
        """``registerBroker``: record a broker and, for a changed master, its topics."""
        with self._lock:
            self._cluster_addr_table.setdefault(cluster_name, {})[broker_name] = None

            register_first = False
            entry = self._broker_addr_table.get(broker_name)
            if entry is None:
                register_first = True
                entry = _BrokerEntry(cluster_name, broker_name, {})
                self._broker_addr_table[broker_name] = entry
            # RouteInfoManager.registerBroker: "the same IP:PORT must only have one record"
            # (a slave switched to master is first removed under its old id).
            for old_id in [i for i, a in entry.broker_addrs.items() if a == broker_addr and i != broker_id]:
                del entry.broker_addrs[old_id]
            old_addr = entry.broker_addrs.get(broker_id)
            entry.broker_addrs[broker_id] = broker_addr
            register_first = register_first or old_addr is None

            if (
                topic_config_table is not None
                and broker_id == MASTER_ID
                and (self._is_changed(broker_addr, data_version) or register_first)
            ):
                for name, tc in topic_config_table.items():
                    topic = tc.topic_name or name
                    if topic:  # a nameless entry (bad input) registers nothing
                        self._create_and_update_queue_data(broker_name, topic, tc)

            prev = self._broker_live_table.get(broker_addr)
            self._broker_live_table[broker_addr] = BrokerLiveInfo(
                self._clock_ms(), data_version, channel, ha_server_addr
            )
            if prev is None:
                log.info("new broker registered, %s HAServer: %s", broker_addr, ha_server_addr)

            if filter_server_list is not None:
                if filter_server_list:
                    self._filter_server_table[broker_addr] = list(filter_server_list)
                else:
                    self._filter_server_table.pop(broker_addr, None)

            if broker_id != MASTER_ID:
                master_addr = entry.broker_addrs.get(MASTER_ID)
                if master_addr is not None:
                    master_live = self._broker_live_table.get(master_addr)
                    if master_live is not None:
                        return RegisterBrokerResult(master_live.ha_server_addr, master_addr)
            return RegisterBrokerResult()

    def _create_and_update_queue_data(self, broker_name: str, topic: str, tc: TopicConfig) -> None:
        # Java takes the name from topicConfig.getTopicName() (a null one fails the whole
        # registration); a config from the network without it is filed under its map key.
        qd = QueueData(
            broker_name=broker_name,
            read_queue_nums=tc.read_queue_nums,
            write_queue_nums=tc.write_queue_nums,
            perm=tc.perm,
            topic_sys_flag=tc.topic_sys_flag,
        )
        table = self._topic_queue_table.get(topic)
        if table is None:
            self._topic_queue_table[topic] = {broker_name: qd}
            log.info("new topic registered, %s %s", topic, qd)
            return
        old = table.get(broker_name)
        table[broker_name] = qd
        if old is not None and old != qd:
            log.info("topic changed, %s OLD: %s NEW: %s", topic, old, qd)

    def unregister_broker(
        self, cluster_name: str, broker_addr: str, broker_name: str, broker_id: int
    ) -> None:
        """``unregisterBroker``: forget one address; the last address takes the name with it."""
        with self._lock:
            removed = self._broker_live_table.pop(broker_addr, None)
            log.info(
                "unregisterBroker, remove from brokerLiveTable %s, %s",
                "OK" if removed else "Failed",
                broker_addr,
            )
            self._filter_server_table.pop(broker_addr, None)
            remove_broker_name = False
            entry = self._broker_addr_table.get(broker_name)
            if entry is not None:
                entry.broker_addrs.pop(broker_id, None)
                if not entry.broker_addrs:
                    del self._broker_addr_table[broker_name]
                    remove_broker_name = True
            if remove_broker_name:
                names = self._cluster_addr_table.get(cluster_name)
                if names is not None:
                    names.pop(broker_name, None)
                    if not names:
                        del self._cluster_addr_table[cluster_name]
                self._remove_topic_by_broker_name(broker_name)

    def _remove_topic_by_broker_name(self, broker_name: str) -> None:
        for topic in list(self._topic_queue_table):
            table = self._topic_queue_table[topic]
            table.pop(broker_name, None)
            if not table:
                del self._topic_queue_table[topic]

    # ------------------------------------------------------------------ data versions
    def _is_changed(self, broker_addr: str, data_version: DataVersion) -> bool:
        prev = self._broker_live_table.get(broker_addr)
        return prev is None or _dv_key(prev.data_version) != _dv_key(data_version)

    def is_broker_topic_config_changed(self, broker_addr: str, data_version: DataVersion) -> bool:
        """``isBrokerTopicConfigChanged``: unknown broker or a different DataVersion."""
        with self._lock:
            return self._is_changed(broker_addr, data_version)

    def query_broker_topic_config(self, broker_addr: str) -> DataVersion | None:
        """``queryBrokerTopicConfig``: the DataVersion the broker last registered."""
        with self._lock:
            live = self._broker_live_table.get(broker_addr)
            return None if live is None else live.data_version

    def update_broker_info_update_timestamp(self, broker_addr: str, timestamp_ms: int | None = None) -> None:
        """``updateBrokerInfoUpdateTimestamp`` (QUERY_DATA_VERSION keeps a broker alive)."""
        with self._lock:
            live = self._broker_live_table.get(broker_addr)
            if live is not None:
                live.last_update_ms = self._clock_ms() if timestamp_ms is None else timestamp_ms

    # ------------------------------------------------------------------ expiry
    def scan_not_active_broker(self) -> list[tuple[str, BrokerLiveInfo]]:
        """``scanNotActiveBroker``: drop brokers silent for longer than the expiry time.

        Returns the removed ``(brokerAddr, BrokerLiveInfo)`` pairs; the caller closes their
        channels (Java ``RemotingUtil.closeChannel``).
        """
        now = self._clock_ms()
        expired: list[tuple[str, BrokerLiveInfo]] = []
        with self._lock:
            for addr, live in list(self._broker_live_table.items()):
                if live.last_update_ms + self.broker_channel_expired_time_ms < now:
                    del self._broker_live_table[addr]
                    log.warning(
                        "The broker channel expired, %s %dms", addr, self.broker_channel_expired_time_ms
                    )
                    self.on_channel_destroy(addr, live.channel)
                    expired.append((addr, live))
        return expired

    def on_channel_destroy(self, remote_addr: str | None, channel: object | None) -> None:
        """``onChannelDestroy``: a connection closed; forget the broker registered over it.

        The broker is found by its channel; if none matches, ``remote_addr`` is taken as
        the broker address (Java does the same).
        """
        with self._lock:
            found: str | None = None
            if channel is not None:
                for addr, live in self._broker_live_table.items():
                    if live.channel is channel:
                        found = addr
                        break
            if found is None:
                found = remote_addr
            else:
                log.info("the broker's channel destroyed, %s, clean it's data structure at once", found)
            if not found:
                return
            self._broker_live_table.pop(found, None)
            self._filter_server_table.pop(found, None)

            name_found: str | None = None
            remove_name = False
            for name, entry in list(self._broker_addr_table.items()):
                for broker_id, addr in list(entry.broker_addrs.items()):
                    if addr == found:
                        name_found = name
                        del entry.broker_addrs[broker_id]
                        break
                if not entry.broker_addrs:
                    # Java removes every empty BrokerData it walks past, found or not.
                    remove_name = True
                    del self._broker_addr_table[name]
                if name_found is not None:
                    break

            if name_found is not None and remove_name:
                for cluster, names in list(self._cluster_addr_table.items()):
                    if name_found in names:
                        del names[name_found]
                        if not names:
                            del self._cluster_addr_table[cluster]
                        break
            if remove_name and name_found is not None:
                self._remove_topic_by_broker_name(name_found)

    # ------------------------------------------------------------------ write permission
    def wipe_write_perm_of_broker(self, broker_name: str) -> int:
        """``wipeWritePermOfBrokerByLock``: clear PERM_WRITE on every topic of a broker."""
        return self._operate_write_perm(broker_name, wipe=True)

    def add_write_perm_of_broker(self, broker_name: str) -> int:
        """``addWritePermOfBrokerByLock``: set perm to READ|WRITE on every topic of a broker."""
        return self._operate_write_perm(broker_name, wipe=False)

    def _operate_write_perm(self, broker_name: str, *, wipe: bool) -> int:
        count = 0
        with self._lock:
            for table in self._topic_queue_table.values():
                qd = table.get(broker_name)
                if qd is None:
                    continue
                if wipe:
                    perm = qd.perm & ~PermName.PERM_WRITE
                else:
                    # operateWritePermOfBroker: ADD sets READ|WRITE outright (drops INHERIT).
                    perm = PermName.PERM_READ | PermName.PERM_WRITE
                table[broker_name] = dataclasses.replace(qd, perm=int(perm))
                count += 1
        return count

    # ------------------------------------------------------------------ topics
    def delete_topic(self, topic: str, cluster_name: str | None = None) -> None:
        """``deleteTopic``: the whole topic, or only its queues on one cluster's brokers."""
        with self._lock:
            if not cluster_name:
                self._topic_queue_table.pop(topic, None)
                return
            names = self._cluster_addr_table.get(cluster_name)
            table = self._topic_queue_table.get(topic)
            if not names or table is None:
                return
            for name in names:
                table.pop(name, None)
            if not table:
                del self._topic_queue_table[topic]

    def pickup_topic_route_data(self, topic: str) -> TopicRouteData | None:
        """``pickupTopicRouteData``: the route of ``topic``, or ``None`` if no broker serves it."""
        with self._lock:
            table = self._topic_queue_table.get(topic)
            if table is None:
                return None
            names = hashmap_order(table)
            queue_datas = [dataclasses.replace(table[n]) for n in names]
            broker_datas: list[BrokerData] = []
            filter_servers: dict[str, list[str]] = {}
            for name in names:
                entry = self._broker_addr_table.get(name)
                if entry is None:
                    continue
                broker_datas.append(entry.to_broker_data())
                if self._filter_server_table:
                    for addr in entry.broker_addrs.values():
                        servers = self._filter_server_table.get(addr)
                        if servers is not None:
                            filter_servers[addr] = list(servers)
            if not broker_datas:
                return None
            return TopicRouteData(
                queue_datas=queue_datas,
                broker_datas=broker_datas,
                filter_server_table=filter_servers,
            )

    def get_all_cluster_info(self) -> ClusterInfo:
        """``getAllClusterInfo``: every broker and every cluster, in Java table order."""
        with self._lock:
            brokers = {
                name: self._broker_addr_table[name].to_broker_data()
                for name in hashmap_order(self._broker_addr_table, _BROKER_TABLE_CAPACITY)
            }
            clusters = {
                cluster: hashmap_order(self._cluster_addr_table[cluster])
                for cluster in hashmap_order(self._cluster_addr_table, _CLUSTER_TABLE_CAPACITY)
            }
            return ClusterInfo(broker_addr_table=brokers, cluster_addr_table=clusters)

    def _topics_in_java_order(self) -> list[str]:
        return hashmap_order(self._topic_queue_table, _TOPIC_TABLE_CAPACITY)

    def get_all_topic_list(self) -> TopicList:
        """``getAllTopicList``: every topic name (a Java ``HashSet``)."""
        with self._lock:
            return TopicList(topic_list=hashmap_order(self._topics_in_java_order()))

    def get_topics_by_cluster(self, cluster: str) -> TopicList:
        """``getTopicsByCluster``: topics with queues on any broker of ``cluster``.

        An unknown cluster gives an empty list (Java hits a NullPointerException that
        its catch-all turns into the empty result).
        """
        with self._lock:
            names = self._cluster_addr_table.get(cluster, {})
            topics = self._topics_in_java_order()
            found = [t for n in hashmap_order(names) for t in topics if n in self._topic_queue_table[t]]
            return TopicList(topic_list=hashmap_order(found))

    def get_system_topic_list(self) -> TopicList:
        """``getSystemTopicList``: cluster names and broker names, plus one broker address.

        Java answers GET_SYSTEM_TOPIC_LIST_FROM_NS with the names of clusters and brokers
        (each broker has a topic named after its cluster and after itself).
        """
        with self._lock:
            items: list[str] = []
            for cluster in hashmap_order(self._cluster_addr_table, _CLUSTER_TABLE_CAPACITY):
                items.append(cluster)
                items.extend(hashmap_order(self._cluster_addr_table[cluster]))
            broker_addr: str | None = None
            for name in hashmap_order(self._broker_addr_table, _BROKER_TABLE_CAPACITY):
                addrs = self._broker_addr_table[name].broker_addrs
                if addrs:
                    broker_addr = addrs[min(addrs)]
                    break
            return TopicList(topic_list=hashmap_order(items), broker_addr=broker_addr)

    def _topics_where(self, pick: Callable[[QueueData], bool]) -> TopicList:
        # topicQueueTableIter: only the first QueueData of each topic is tested.
        with self._lock:
            found: list[str] = []
            for topic in self._topics_in_java_order():
                table = self._topic_queue_table[topic]
                first = table[hashmap_order(table)[0]]
                if pick(first):
                    found.append(topic)
            return TopicList(topic_list=hashmap_order(found))

    def get_unit_topics(self) -> TopicList:
        """``getUnitTopics`` (GET_UNIT_TOPIC_LIST)."""
        return self._topics_where(lambda qd: bool(qd.topic_sys_flag & _FLAG_UNIT))

    def get_has_unit_sub_topic_list(self) -> TopicList:
        """``getHasUnitSubTopicList`` (GET_HAS_UNIT_SUB_TOPIC_LIST)."""
        return self._topics_where(lambda qd: bool(qd.topic_sys_flag & _FLAG_UNIT_SUB))

    def get_has_unit_sub_un_unit_topic_list(self) -> TopicList:
        """``getHasUnitSubUnUnitTopicList`` (GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST)."""
        return self._topics_where(
            lambda qd: not qd.topic_sys_flag & _FLAG_UNIT and bool(qd.topic_sys_flag & _FLAG_UNIT_SUB)
        )

    # ------------------------------------------------------------------ introspection
    def live_broker_addrs(self) -> list[str]:
        """Addresses of the brokers currently registered (``brokerLiveTable`` keys)."""
        with self._lock:
            return list(self._broker_live_table)

    def broker_live_info(self, broker_addr: str) -> BrokerLiveInfo | None:
        """A copy of one broker's live info, or ``None``."""
        with self._lock:
            live = self._broker_live_table.get(broker_addr)
            return None if live is None else dataclasses.replace(live)
