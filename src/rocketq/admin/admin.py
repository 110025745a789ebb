"""Admin: the operator API behind the ``rocketq`` topic/group/message/cluster commands.

Mirrors ``org.apache.rocketmq.tools.admin.DefaultMQAdminExt`` / ``DefaultMQAdminExtImpl``
(4.9.7) and the mqadmin sub-commands built on it (``updateTopic``, ``deleteTopic``,
``topicList``, ``topicRoute``, ``topicStatus``, ``statsAll``, ``clusterList``,
``consumerProgress``, ``consumerConnection``, ``consumerStatus``, ``producerConnection``,
``resetOffsetByTime``, ``queryMsgById/ByKey/ByUniqueKey/ByOffset``, ``consumeMessage``,
``sendMessage``). It speaks only the remoting protocol, so it works unchanged against a
rocketq or an Apache RocketMQ cluster.

Threading and resources: an :class:`Admin` owns one :class:`RemotingClient` (one I/O
thread) and, only once something is sent (``send_messages``, ``resend_message`` with
PRODUCE), one :class:`~rocketq.client.producer.Producer` on a private client manager.
It keeps no background loop: every method is a blocking call on the caller's thread.
:meth:`Admin.close` (or leaving the ``with`` block) stops all of it. Thread-safe.

Broker choice follows Java: reads go to each broker's master if it has one, else to any of
its addresses (``BrokerData.selectBrokerAddr``); a group's brokers are those of its
``%RETRY%<group>`` route (every broker of the cluster when that route does not exist yet).
Message operations (query, track, resend, pull, send) live in
:mod:`rocketq.admin.messages` and are exposed here as methods.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import os
import threading
from collections.abc import Callable, Iterable, Sequence
from types import TracebackType

from rocketq.acl.client_security import client_security_of
from rocketq.admin import groups as _groups
from rocketq.admin import messages as _messages
from rocketq.admin import trace as _trace
from rocketq.admin.api import AdminAPI
from rocketq.admin.models import (
    BrokerSummary,
    ClientConnection,
    ClusterView,
    ConsumerProgress,
    GroupConnections,
    MessageTrack,
    QueueProgress,
    QueueReset,
    QueueStatus,
    ResendMethod,
    ResendResult,
    ResetMode,
    ResetOffsetResult,
    TopicGroupStats,
    TopicStatus,
)
from rocketq.admin.transactions import HalfMessageState, half_message_state
from rocketq.client.api_results import SendResult
from rocketq.client.config import ClientConfig, parse_namesrv_addr, validate_group, validate_topic
from rocketq.client.impl.mq_admin_impl import MQAdminImpl
from rocketq.client.impl.mq_client_api import MQClientAPI
from rocketq.client.impl.pull_api_wrapper import PullAPIWrapper
from rocketq.client.instance import MQClientManager
from rocketq.client.producer import Producer
from rocketq.errors import BrokerError, ClientError, IllegalArgumentError, RocketqError
from rocketq.protocol.bodies import (
    Connection,
    ConsumerRunningInfo,
    ConsumeStats,
    OffsetWrapper,
    SubscriptionGroupConfig,
)
from rocketq.protocol.codes import LanguageCode, PermName, ResponseCode, Version
from rocketq.protocol.message import Message, MessageExt
from rocketq.protocol.message_queue import MessageQueue
from rocketq.protocol.mixall import (
    AUTO_CREATE_TOPIC_KEY_TOPIC,
    DLQ_GROUP_TOPIC_PREFIX,
    RETRY_GROUP_TOPIC_PREFIX,
    RMQ_SYS_TRACE_TOPIC,
    TOOLS_CONSUMER_GROUP,
    retry_topic,
)
from rocketq.protocol.route import ClusterInfo, TopicConfig, TopicRouteData

__all__ = ["DEFAULT_TIMEOUT_MS", "Admin", "ProgressCallback"]

log = logging.getLogger(__name__)

#: ``DefaultMQAdminExt.timeoutMillis``
DEFAULT_TIMEOUT_MS = 5000
#: ``NamesrvUtil.NAMESPACE_ORDER_TOPIC_CONFIG``
_ORDER_TOPIC_NAMESPACE = "ORDER_TOPIC_CONFIG"
#: ``BrokerStatsManager`` stats names used by ``statsAll``
_TOPIC_PUT_NUMS = "TOPIC_PUT_NUMS"
_GROUP_GET_NUMS = "GROUP_GET_NUMS"

#: ``progress(done, total)``: called after each item of a bulk operation.
ProgressCallback = Callable[[int, int], None]

_ids = itertools.count(1)


def _version_desc(version: int) -> str:
    try:
        return Version(version).name
    except ValueError:
        return f"V{version}"


def _first_rate(text: str | None) -> float:
    """The first number of a rate string like ``"12.5 10.1 9.8 "`` (``putTps``)."""
    for part in (text or "").split():
        try:
            return float(part)
        except ValueError:
            continue
    return 0.0


def _int(text: str | None, default: int = 0) -> int:
    try:
        return int(text) if text is not None else default
    except ValueError:
        return default


class Admin:
    """The admin API (``DefaultMQAdminExt``); a context manager.

    ``namesrv_addr``: ``;``-separated name servers (``None`` = ``NAMESRV_ADDR``).
    ``timeout_ms``: per-RPC timeout (Java default 5000). ``producer_group``: the group of
    the producer used to send and re-produce messages (default ``rocketq_admin``).

    >>> with Admin("127.0.0.1:9876") as admin:          # doctest: +SKIP
    ...     print(admin.consumer_progress("my-group").total_lag)
    """

    def __init__(
        self,
        namesrv_addr: str | None = None,
        *,
        timeout_ms: int = DEFAULT_TIMEOUT_MS,
        producer_group: str = "rocketq_admin",
        client_config: ClientConfig | None = None,
    ) -> None:
        if timeout_ms <= 0:
            raise IllegalArgumentError(f"timeout_ms must be > 0, got {timeout_ms}")
        validate_group(producer_group)
        base = client_config or ClientConfig()
        if namesrv_addr is not None:
            base = dataclasses.replace(base, namesrv_addr=namesrv_addr)
        self._namesrv = parse_namesrv_addr(base.namesrv_addr)  # ClientError when none is known
        self._serial = next(_ids)
        self.client_config = dataclasses.replace(
            base,
            namesrv_addr=";".join(self._namesrv),
            instance_name=f"rocketq-admin-{os.getpid()}-{self._serial}",
        )
        self.timeout_ms = timeout_ms
        self.producer_group = producer_group
        rpc_hook, ssl_context = client_security_of(self.client_config)
        self.client = MQClientAPI.standalone(
            self._namesrv,
            name=f"rocketq-admin-{self._serial}",
            connect_timeout_ms=self.client_config.connect_timeout_ms,
            language=self.client_config.language,
            serialize_type=self.client_config.serialize_type,
            rpc_hook=rpc_hook,
            ssl_context=ssl_context,
        )
        self._remoting = self.client.remoting  # the admin's own I/O thread, started on first use
        #: the thread-free core: routes (cached), queue offsets, the tools' reads
        self.mq_admin = MQAdminImpl(self.client, timeout_ms=timeout_ms)
        #: the tools' reads (group ``TOOLS_CONSUMER``, never committing)
        self.reader = PullAPIWrapper(self.mq_admin, TOOLS_CONSUMER_GROUP)
        self.api = AdminAPI(self.client)
        self._lock = threading.Lock()
        self._producer: Producer | None = None
        self._manager = MQClientManager()
        self._started = False
        self._closed = False

    # ================================================================== lifecycle
    def start(self) -> Admin:
        """Start the I/O thread (implicit on first use); returns ``self``."""
        with self._lock:
            if self._closed:
                raise ClientError("the admin has been closed")
            if not self._started:
                self._remoting.start()
                self._started = True
        return self

    def close(self) -> None:
        """Stop the producer (if any) and the remoting client; idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            producer, self._producer = self._producer, None
        if producer is not None:
            producer.shutdown()
        self._remoting.close()

    def __enter__(self) -> Admin:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    @property
    def namesrv_addrs(self) -> list[str]:
        return list(self._namesrv)

    def _ready(self) -> AdminAPI:
        if not self._started:
            self.start()
        return self.api

    def producer(self) -> Producer:
        """The admin's producer, started on first use (group ``producer_group``)."""
        with self._lock:
            if self._closed:
                raise ClientError("the admin has been closed")
            if self._producer is None:
                producer = Producer(
                    self.producer_group, client_config=self.client_config, manager=self._manager
                )
                producer.start()
                self._producer = producer
            return self._producer

    # ================================================================== routes and brokers
    def cluster_info(self) -> ClusterInfo:
        """GET_BROKER_CLUSTER_INFO (``examineBrokerClusterInfo``)."""
        return self._ready().client.get_broker_cluster_info(self.timeout_ms)

    def topic_route(self, topic: str) -> TopicRouteData:
        """GET_ROUTEINFO_BY_TOPIC; BrokerError TOPIC_NOT_EXIST when the topic has no route."""
        self._ready()
        route = self.mq_admin.route(topic, refresh=True)
        if route is None:
            raise BrokerError(
                ResponseCode.TOPIC_NOT_EXIST, f"No topic route info in name server for the topic: {topic}"
            )
        return route

    def topic_brokers(self, topic: str) -> list[tuple[str, str]]:
        """(broker name, address to read from) for each broker of ``topic``'s route, by name."""
        out = []
        for bd in sorted(self.topic_route(topic).broker_datas, key=lambda b: b.broker_name or ""):
            addr = bd.select_broker_addr()
            if addr is not None:
                out.append((bd.broker_name or "", addr))
        return out

    def _group_brokers(self, group: str) -> list[tuple[str, str]]:
        """The brokers of ``%RETRY%<group>``, else every broker of the cluster."""
        try:
            return self.topic_brokers(retry_topic(group))
        except BrokerError as exc:
            if exc.code != ResponseCode.TOPIC_NOT_EXIST:
                raise
        return self._cluster_brokers()

    def _cluster_brokers(self, cluster: str | None = None, *, masters: bool = False) -> list[tuple[str, str]]:
        """(broker name, address) of every broker of ``cluster`` (else of all), by name.

        The address is the master's with ``masters`` (brokers without one are left out),
        else the one to read from (``BrokerData.select_broker_addr``).
        """
        info = self.cluster_info()
        if cluster and cluster not in info.cluster_addr_table:
            raise ClientError(f"cluster [{cluster}] not exist")
        names: Iterable[str] = info.cluster_addr_table[cluster] if cluster else info.broker_addr_table
        out = []
        for name in sorted(names):
            bd = info.broker_addr_table.get(name)
            if bd is None:
                continue
            addr = bd.master_addr() if masters else bd.select_broker_addr()
            if addr is not None:
                out.append((name, addr))
        return out

    # ================================================================== cluster
    def broker_runtime_info(self, addr: str) -> dict[str, str]:
        """GET_BROKER_RUNTIME_INFO of one broker (``fetchBrokerRuntimeStats``)."""
        return self._ready().get_broker_runtime_info(addr, self.timeout_ms)

    def cluster_list(self) -> ClusterView:
        """``mqadmin clusterList``: every broker address with its runtime figures."""
        info = self.cluster_info()
        cluster_of = {name: c for c, names in info.cluster_addr_table.items() for name in names}
        brokers: list[BrokerSummary] = []
        for name in sorted(info.broker_addr_table):
            bd = info.broker_addr_table[name]
            cluster = bd.cluster or cluster_of.get(name, "")
            for bid, addr in sorted(bd.broker_addrs.items()):
                try:
                    rt = self.broker_runtime_info(addr)
                except RocketqError as exc:
                    brokers.append(BrokerSummary(cluster, name, bid, addr, error=str(exc)))
                    continue
                brokers.append(
                    BrokerSummary(
                        cluster=cluster,
                        broker_name=name,
                        broker_id=bid,
                        addr=addr,
                        version=rt.get("brokerVersionDesc", ""),
                        in_tps=_first_rate(rt.get("putTps")),
                        out_tps=_first_rate(rt.get("getTransferedTps")),
                        in_today=_int(rt.get("msgPutTotalTodayNow"))
                        - _int(rt.get("msgPutTotalTodayMorning")),
                        out_today=_int(rt.get("msgGetTotalTodayNow"))
                        - _int(rt.get("msgGetTotalTodayMorning")),
                        earliest_message_timestamp=_int(rt.get("earliestMessageTimeStamp"), -1),
                        commit_log_disk_ratio=rt.get("commitLogDiskRatio", ""),
                        runtime=rt,
                    )
                )
        return ClusterView(
            clusters={k: sorted(v) for k, v in info.cluster_addr_table.items()}, brokers=brokers
        )

    # ================================================================== topics
    def topic_list(self, cluster: str | None = None) -> list[str]:
        """GET_ALL_TOPIC_LIST_FROM_NAMESERVER (or GET_TOPICS_BY_CLUSTER), sorted."""
        api = self._ready()
        if cluster is not None:
            return sorted(api.get_topics_by_cluster(cluster, self.timeout_ms))
        return sorted(api.client.get_topic_list_from_name_server(self.timeout_ms))

    def create_topic(
        self,
        topic: str,
        *,
        read_queue_nums: int = 8,
        write_queue_nums: int = 8,
        perm: int = int(PermName.PERM_READ | PermName.PERM_WRITE),
        cluster: str | None = None,
        broker_addr: str | None = None,
        order: bool = False,
    ) -> list[str]:
        """Create or update ``topic`` (``mqadmin updateTopic``); returns the broker addresses.

        Targets ``broker_addr``, else every master of ``cluster``, else every master known
        to the name server. Defaults are mqadmin's: 8 read and 8 write queues, perm 6 (RW).
        ``order`` also stores ``ORDER_TOPIC_CONFIG`` (``brokerName:writeQueueNums;...``) on
        every name server, as ``updateTopic -o true`` does.
        """
        validate_topic(topic)
        if not 1 <= write_queue_nums <= 1024 or not 1 <= read_queue_nums <= 1024:
            raise IllegalArgumentError("queue numbers must be within 1..1024")
        if perm & ~int(PermName.PERM_READ | PermName.PERM_WRITE | PermName.PERM_INHERIT):
            raise IllegalArgumentError(f"invalid perm {perm}: use 2 (W), 4 (R) or 6 (RW)")
        api = self._ready()
        if broker_addr is not None:
            targets = [("", broker_addr)]
        else:
            targets = self._cluster_brokers(cluster, masters=True)
            if not targets:
                raise ClientError("no master broker found" + (f" in cluster [{cluster}]" if cluster else ""))
        tc = TopicConfig(
            topic_name=topic,
            read_queue_nums=read_queue_nums,
            write_queue_nums=write_queue_nums,
            perm=perm,
            order=order,
        )
        for _, addr in targets:
            api.client.create_topic(addr, AUTO_CREATE_TOPIC_KEY_TOPIC, tc, self.timeout_ms)
        if order:
            names = [name for name, _ in targets if name]
            if not names:
                names = [bd.broker_name or "" for bd in self.topic_route(topic).broker_datas]
            conf = ";".join(f"{name}:{write_queue_nums}" for name in sorted(names))
            api.put_kv_config(_ORDER_TOPIC_NAMESPACE, topic, conf, self.timeout_ms)
        return [addr for _, addr in targets]

    def delete_topic(self, topic: str, *, cluster: str | None = None) -> list[str]:
        """``mqadmin deleteTopic``: delete in the brokers, then in every name server.

        Brokers: the masters of ``cluster``, else those of the topic's route. The topic's
        order configuration is removed too. Returns the broker addresses.
        """
        validate_topic(topic)
        api = self._ready()
        if cluster is not None:
            targets = [addr for _, addr in self._cluster_brokers(cluster, masters=True)]
        else:
            targets = []
            for bd in self.topic_route(topic).broker_datas:
                master = bd.master_addr()
                if master is not None:
                    targets.append(master)
        for addr in targets:
            api.delete_topic_in_broker(addr, topic, self.timeout_ms)
        api.delete_topic_in_namesrv(topic, self.timeout_ms)
        try:
            api.delete_kv_config(_ORDER_TOPIC_NAMESPACE, topic, self.timeout_ms)
        except BrokerError as exc:
            log.debug("no order conf for %s: %s", topic, exc)
        return targets

    def topic_status(self, topic: str) -> TopicStatus:
        """``mqadmin topicStatus``: GET_TOPIC_STATS_INFO of every broker of the topic."""
        api = self._ready()
        table = {}
        for _, addr in self.topic_brokers(topic):
            table.update(api.get_topic_stats_info(addr, topic, self.timeout_ms).offset_table)
        queues = [
            QueueStatus(mq.broker_name, mq.queue_id, t.min_offset, t.max_offset, t.last_update_timestamp)
            for mq, t in sorted(table.items())
        ]
        return TopicStatus(topic=topic, queues=queues)

    def topic_consumed_by(self, topic: str) -> list[str]:
        """QUERY_TOPIC_CONSUME_BY_WHO merged over the topic's brokers, sorted."""
        api = self._ready()
        groups: set[str] = set()
        for _, addr in self.topic_brokers(topic):
            groups.update(api.query_topic_consume_by_who(addr, topic, self.timeout_ms))
        return sorted(groups)

    def _stats_item(self, addr: str, name: str, key: str) -> tuple[float, int]:
        """(minute TPS, day sum) of one stats item; (0, 0) when the broker has none."""
        try:
            data = self._ready().view_broker_stats_data(addr, name, key, self.timeout_ms)
        except BrokerError as exc:
            if exc.code == ResponseCode.SYSTEM_ERROR:
                return 0.0, 0
            raise
        tps = data.stats_minute.tps if data.stats_minute is not None else 0.0
        day = data.stats_day.sum if data.stats_day is not None else 0
        return tps, day

    def topic_stats(self, topic: str | None = None) -> list[TopicGroupStats]:
        """``mqadmin statsAll``: in/out TPS and 24 h counts per topic and consuming group.

        ``topic`` None = every topic except ``%RETRY%``/``%DLQ%`` ones and topics without a
        route. A topic nobody consumes gets one row with ``group`` None.
        """
        topics = [topic] if topic is not None else self.topic_list()
        rows: list[TopicGroupStats] = []
        for t in topics:
            if topic is None and t.startswith((RETRY_GROUP_TOPIC_PREFIX, DLQ_GROUP_TOPIC_PREFIX)):
                continue
            try:
                brokers = self.topic_brokers(t)
            except BrokerError:
                if topic is not None:
                    raise
                continue
            in_tps, in_day = 0.0, 0
            for _, addr in brokers:
                tps, day = self._stats_item(addr, _TOPIC_PUT_NUMS, t)
                in_tps += tps
                in_day += day
            groups = self.topic_consumed_by(t)
            if not groups:
                rows.append(TopicGroupStats(t, None, 0, in_tps, 0.0, in_day, 0))
            for group in groups:
                out_tps, out_day = 0.0, 0
                for _, addr in brokers:
                    tps, day = self._stats_item(addr, _GROUP_GET_NUMS, f"{t}@{group}")
                    out_tps += tps
                    out_day += day
                try:
                    lag = self.consume_stats(group, t).compute_total_diff()
                except RocketqError:
                    lag = 0
                rows.append(TopicGroupStats(t, group, lag, in_tps, out_tps, in_day, out_day))
        return rows

    # ================================================================== groups
    def consume_stats(self, group: str, topic: str | None = None) -> ConsumeStats:
        """``examineConsumeStats``: GET_CONSUME_STATS merged over the group's brokers (raw)."""
        api = self._ready()
        merged = ConsumeStats()
        for _, addr in self._group_brokers(group):
            stats = api.get_consume_stats(addr, group, topic, self.timeout_ms)
            merged.offset_table.update(stats.offset_table)
            merged.consume_tps += stats.consume_tps
        return merged

    def consumer_progress(
        self, group: str, topic: str | None = None, *, with_clients: bool = True
    ) -> ConsumerProgress:
        """``mqadmin consumerProgress -g``: per-queue offsets, lag, holder; total lag, TPS.

        Raises :class:`ClientError` when no broker has offsets for the group (Java: "Not
        found the consumer group consume stats"). ``with_clients`` asks each live client for
        its running info to tell which one holds each queue.
        """
        stats = self.consume_stats(group, topic)
        if not stats.offset_table:
            raise ClientError(
                f"Not found the consumer group [{group}] consume stats, because return offset table is "
                "empty, maybe the consumer not consume any message"
            )
        holders: dict[MessageQueue, str] = {}
        if with_clients:
            try:
                for client_id, info in self.consumer_status(group).items():
                    for mq in info.mq_table:
                        holders[mq] = client_id
            except RocketqError as exc:
                log.debug("no running info for %s: %s", group, exc)
        queues = [
            QueueProgress(
                topic=mq.topic,
                broker_name=mq.broker_name,
                queue_id=mq.queue_id,
                broker_offset=w.broker_offset,
                consumer_offset=w.consumer_offset,
                last_timestamp=w.last_timestamp,
                client_id=holders.get(mq),
            )
            for mq, w in sorted(stats.offset_table.items())
        ]
        return ConsumerProgress(group=group, queues=queues, consume_tps=stats.consume_tps)

    def consumer_connections(self, group: str) -> GroupConnections:
        """``mqadmin consumerConnection``; BrokerError CONSUMER_NOT_ONLINE (206) when none."""
        api = self._ready()
        last: RocketqError | None = None
        for _, addr in self._group_brokers(group):
            try:
                cc = api.get_consumer_connection_list(addr, group, self.timeout_ms)
            except RocketqError as exc:
                last = exc
                continue
            return GroupConnections(
                group=group,
                connections=[
                    _connection(c) for c in sorted(cc.connection_set, key=lambda c: c.client_id or "")
                ],
                subscriptions={t: sd.sub_string or "" for t, sd in sorted(cc.subscription_table.items())},
                consume_type=cc.consume_type.name if cc.consume_type is not None else None,
                message_model=cc.message_model.name if cc.message_model is not None else None,
                consume_from_where=cc.consume_from_where.name if cc.consume_from_where is not None else None,
            )
        if last is not None:
            raise last
        raise BrokerError(ResponseCode.CONSUMER_NOT_ONLINE, f"the consumer group[{group}] not online")

    def consumer_running_info(
        self, group: str, client_id: str, *, jstack: bool = False
    ) -> ConsumerRunningInfo:
        """GET_CONSUMER_RUNNING_INFO of one client, relayed by a broker of the group."""
        api = self._ready()
        last: RocketqError | None = None
        for _, addr in self._group_brokers(group):
            try:
                return api.get_consumer_running_info(addr, group, client_id, jstack, self.timeout_ms)
            except RocketqError as exc:
                last = exc
        raise last if last is not None else ClientError(f"no broker for group {group}")

    def consumer_status(self, group: str, *, jstack: bool = False) -> dict[str, ConsumerRunningInfo]:
        """``mqadmin consumerStatus``: the running info of every live client of the group."""
        out: dict[str, ConsumerRunningInfo] = {}
        for conn in self.consumer_connections(group).connections:
            out[conn.client_id] = self.consumer_running_info(group, conn.client_id, jstack=jstack)
        return out

    def consumer_offsets_from_clients(
        self, group: str, topic: str, *, client_addr: str | None = None
    ) -> dict[str, dict[MessageQueue, int]]:
        """INVOKE_BROKER_TO_GET_CONSUMER_STATUS: each live client's offsets of ``topic``.

        Merged over the topic's brokers; clients that cannot answer are left out.
        """
        api = self._ready()
        out: dict[str, dict[MessageQueue, int]] = {}
        for _, addr in self.topic_brokers(topic):
            for cid, table in api.invoke_broker_to_get_consumer_status(
                addr, topic, group, client_addr, self.timeout_ms
            ).items():
                out.setdefault(cid, {}).update(table)
        return out

    def producer_connections(self, group: str, topic: str) -> list[ClientConnection]:
        """``mqadmin producerConnection -g -t``: the producers of ``group`` on the topic's brokers."""
        api = self._ready()
        seen: dict[str, ClientConnection] = {}
        last: RocketqError | None = None
        for _, addr in self.topic_brokers(topic):
            try:
                pc = api.get_producer_connection_list(addr, group, self.timeout_ms)
            except RocketqError as exc:
                last = exc
                continue
            for c in pc.connection_set:
                seen.setdefault(c.client_id or "", _connection(c))
        if not seen and last is not None:
            raise last
        return [seen[k] for k in sorted(seen)]

    # ================================================================== offsets
    def reset_offset_by_time(
        self,
        group: str,
        topic: str,
        timestamp_ms: int,
        *,
        force: bool = True,
        mode: ResetMode | None = None,
    ) -> ResetOffsetResult:
        """``mqadmin resetOffsetByTime``: move ``group``'s offsets of ``topic`` to a time.

        ``timestamp_ms`` -1 means the end of each queue. Without ``force`` an offset only
        moves backwards. ``mode`` None tries ONLINE (live clients jump at once) and falls
        back to OFFLINE when the group has no live client (checked first, since a broker
        refuses an online reset of a group without stored offsets) or the broker answers
        CONSUMER_NOT_ONLINE, like mqadmin.
        """
        validate_group(group)
        validate_topic(topic)
        if mode is None and not self._is_online(group):
            mode = ResetMode.OFFLINE
        if mode is not ResetMode.OFFLINE:
            try:
                return self._reset_online(group, topic, timestamp_ms, force)
            except BrokerError as exc:
                if mode is ResetMode.ONLINE or exc.code != ResponseCode.CONSUMER_NOT_ONLINE:
                    raise
                log.info("group %s not online (%s): resetting its offsets offline", group, exc.remark)
        return self._reset_offline(group, topic, timestamp_ms, force)

    def _is_online(self, group: str) -> bool:
        try:
            return bool(self.consumer_connections(group).connections)
        except BrokerError as exc:
            if exc.code == ResponseCode.CONSUMER_NOT_ONLINE:
                return False
            raise

    def _reset_online(self, group: str, topic: str, timestamp_ms: int, force: bool) -> ResetOffsetResult:
        api = self._ready()
        brokers = self.topic_brokers(topic)
        before: dict[MessageQueue, OffsetWrapper] = {}
        for _, addr in brokers:
            try:
                before.update(api.get_consume_stats(addr, group, topic, self.timeout_ms).offset_table)
            except RocketqError as exc:
                log.debug("consume stats of %s on %s: %s", group, addr, exc)
        table: dict[MessageQueue, int] = {}
        for _, addr in brokers:
            table.update(
                api.invoke_broker_to_reset_offset(addr, topic, group, timestamp_ms, force, self.timeout_ms)
            )
        queues = [
            QueueReset(
                message_queue=mq,
                new_offset=offset,
                old_offset=before[mq].consumer_offset if mq in before else None,
                broker_offset=before[mq].broker_offset if mq in before else None,
            )
            for mq, offset in sorted(table.items())
        ]
        return ResetOffsetResult(group, topic, timestamp_ms, ResetMode.ONLINE, queues)

    def _reset_offline(self, group: str, topic: str, timestamp_ms: int, force: bool) -> ResetOffsetResult:
        """``resetOffsetByTimestampOld``: compute each queue's offset, UPDATE_CONSUMER_OFFSET it."""
        api = self._ready()
        route = self.topic_route(topic)
        read_nums = {qd.broker_name: qd.read_queue_nums for qd in route.queue_datas}
        queues: list[QueueReset] = []
        for bd in sorted(route.broker_datas, key=lambda b: b.broker_name or ""):
            addr = bd.select_broker_addr()
            name = bd.broker_name or ""
            if addr is None:
                continue
            current: dict[MessageQueue, tuple[int, int]] = {
                mq: (w.broker_offset, w.consumer_offset)
                for mq, w in api.get_consume_stats(addr, group, topic, self.timeout_ms).offset_table.items()
                if mq.topic == topic
            }
            if not current:
                # never consumed here: start from the queues' min offsets (topic stats)
                stats = api.get_topic_stats_info(addr, topic, self.timeout_ms).offset_table
                for qid in range(read_nums.get(name, 0)):
                    mq = MessageQueue(topic, name, qid)
                    t = stats.get(mq)
                    current[mq] = (t.max_offset, t.min_offset) if t is not None else (0, 0)
            for mq, (broker_offset, consumer_offset) in sorted(current.items()):
                if timestamp_ms == -1:
                    target = api.client.get_max_offset(
                        addr, topic, mq.queue_id, self.timeout_ms, bname=mq.broker_name
                    )
                else:
                    target = api.client.search_offset(
                        addr, topic, mq.queue_id, timestamp_ms, self.timeout_ms, bname=mq.broker_name
                    )
                new = consumer_offset
                if force or target <= consumer_offset:
                    new = target
                    api.client.update_consumer_offset(
                        addr, group, topic, mq.queue_id, target, self.timeout_ms
                    )
                queues.append(QueueReset(mq, new, consumer_offset, broker_offset))
        return ResetOffsetResult(group, topic, timestamp_ms, ResetMode.OFFLINE, queues)

    # ================================================================== messages (rocketq.admin.messages)
    def view_message(self, msg_id: str, topic: str | None = None) -> MessageExt:
        """A message by offsetMsgId, or by UNIQ_KEY within ``topic`` (``viewMessage``)."""
        return _messages.view_message(self, msg_id, topic)

    def query_by_key(
        self, topic: str, key: str, *, max_num: int = 64, begin_ms: int = 0, end_ms: int = 2**63 - 1
    ) -> list[MessageExt]:
        """``mqadmin queryMsgByKey``: messages of ``topic`` whose KEYS contain ``key``."""
        return _messages.query_by_key(self, topic, key, max_num=max_num, begin_ms=begin_ms, end_ms=end_ms)

    def query_by_unique_key(self, topic: str, uniq_key: str) -> MessageExt:
        """``mqadmin queryMsgByUniqueKey``: the message with that UNIQ_KEY (client msgId)."""
        return _messages.query_by_unique_key(self, topic, uniq_key)

    def query_by_offset(self, topic: str, broker_name: str, queue_id: int, offset: int) -> MessageExt:
        """``mqadmin queryMsgByOffset``: the message at a consume-queue offset."""
        return _messages.query_by_offset(self, topic, broker_name, queue_id, offset)

    def pull_messages(
        self,
        topic: str,
        *,
        broker_name: str | None = None,
        queue_id: int | None = None,
        offset: int | None = None,
        count: int = 32,
        begin_ms: int | None = None,
        end_ms: int | None = None,
    ) -> list[MessageExt]:
        """``mqadmin consumeMessage``: read up to ``count`` messages without committing."""
        return _messages.pull_messages(
            self,
            topic,
            broker_name=broker_name,
            queue_id=queue_id,
            offset=offset,
            count=count,
            begin_ms=begin_ms,
            end_ms=end_ms,
        )

    def half_message_state(self, uniq_key: str) -> HalfMessageState:
        """Prepared, committed, rolled back or discarded (:mod:`rocketq.admin.transactions`)."""
        return half_message_state(self, uniq_key)

    def message_track(self, msg: MessageExt) -> list[MessageTrack]:
        """``messageTrackDetail``: the consume state of ``msg`` for each group of its topic."""
        return _messages.message_track(self, msg)

    def resend_message(
        self,
        msg_id: str,
        group: str,
        *,
        topic: str | None = None,
        method: ResendMethod = ResendMethod.DIRECT,
        client_id: str | None = None,
    ) -> ResendResult:
        """Hand a message (also one of ``%DLQ%<group>``) to ``group`` again; see :class:`ResendMethod`."""
        return _messages.resend_message(self, msg_id, group, topic=topic, method=method, client_id=client_id)

    def resend_dlq(
        self,
        group: str,
        *,
        method: ResendMethod = ResendMethod.PRODUCE,
        msg_ids: Sequence[str] | None = None,
        max_messages: int = 10_000,
        progress: ProgressCallback | None = None,
    ) -> list[ResendResult]:
        """Resend the messages of ``%DLQ%<group>`` (all, or those in ``msg_ids``) to the group."""
        return _messages.resend_dlq(
            self, group, method=method, msg_ids=msg_ids, max_messages=max_messages, progress=progress
        )

    def send_messages(
        self, messages: Sequence[Message], *, progress: ProgressCallback | None = None
    ) -> list[SendResult]:
        """Send ``messages`` one by one with the admin's producer (``mqadmin sendMessage``)."""
        return _messages.send_messages(self, messages, progress=progress)

    def query_msg_trace(
        self, msg_id: str, *, trace_topic: str = RMQ_SYS_TRACE_TOPIC, max_num: int = _trace.TRACE_QUERY_MAX
    ) -> _trace.MessageTrace:
        """``mqadmin queryMsgTraceById``: the trace records of ``msg_id``, grouped (:mod:`rocketq.admin.trace`)."""
        return _trace.query_msg_trace(self, msg_id, trace_topic=trace_topic, max_num=max_num)

    # ================================================================== groups and broker config (rocketq.admin.groups)
    def broker_config(self, addr: str) -> dict[str, str]:
        """GET_BROKER_CONFIG of one broker (``mqadmin getBrokerConfig``)."""
        return _groups.broker_config(self, addr)

    def group_configs(self, cluster: str | None = None) -> dict[str, SubscriptionGroupConfig]:
        """Every subscription group of the masters, by name."""
        return _groups.group_configs(self, cluster)

    def group_summaries(self) -> list[_groups.GroupSummary]:
        """Every group (``%RETRY%`` topics and subscription groups) with clients, TPS and lag."""
        return _groups.groups_summary(self, extra=self.group_configs())

    def create_group(self, group: str, *, cluster: str | None = None, retry_max_times: int = 16) -> list[str]:
        """``mqadmin updateSubGroup`` on every master; returns their addresses."""
        validate_group(group)
        config = SubscriptionGroupConfig(group_name=group, retry_max_times=retry_max_times)
        return _groups.update_group(self, config, cluster=cluster)

    def delete_group(
        self, group: str, *, cluster: str | None = None, remove_offset: bool = True
    ) -> list[str]:
        """``mqadmin deleteSubGroup`` on every master (its retry and DLQ topics too)."""
        validate_group(group)
        return _groups.delete_group(self, group, cluster=cluster, remove_offset=remove_offset)


def _connection(c: Connection) -> ClientConnection:
    language = c.language.name if isinstance(c.language, LanguageCode) else str(c.language or "")
    return ClientConnection(
        client_id=c.client_id or "",
        client_addr=c.client_addr or "",
        language=language,
        version=c.version,
        version_desc=_version_desc(c.version),
    )
