"""Operator commands on consumer groups and broker settings, over an :class:`~rocketq.admin.Admin`.

The mqadmin sub-commands ``updateSubGroup`` / ``deleteSubGroup`` (``UpdateSubGroupSubCommand``,
``DeleteSubscriptionGroupCommand``), ``cloneGroupOffset`` (``CloneGroupOffsetCommand``),
``getBrokerConfig`` (``GetBrokerConfigCommand``), ``updateBrokerConfig``
(``UpdateBrokerConfigSubCommand``), ``consumerProgress`` without ``-g``
(``ConsumerProgressSubCommand``: one summary row per group) and a health check
(``ping``: GET_BROKER_RUNTIME_INFO of every registered broker, timed), and the subscription
groups of the masters (``examineSubscriptionGroupConfig`` / GET_ALL_SUBSCRIPTIONGROUP_CONFIG,
201), the group list of the dashboard.

Targets follow mqadmin: ``broker_addr`` (``-b``), else every master of ``cluster`` (``-c``),
else (rocketq) every master the name server knows. The RPCs are UPDATE_AND_CREATE_SUBSCRIPTIONGROUP
(200, body ``SubscriptionGroupConfig``), DELETE_SUBSCRIPTIONGROUP (207), CLONE_GROUP_OFFSET (314)
GET_BROKER_CONFIG (26, a Java properties body) and UPDATE_BROKER_CONFIG (25, no header, a
``key=value`` lines body; with ``-c`` every broker of the cluster, masters and slaves, like
``CommandUtil.fetchMasterAndSlaveAddrByClusterName``), each as ``MQClientAPIImpl`` sends it.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rocketq.errors import BrokerError, ClientError, RocketqError
from rocketq.protocol.bodies import SubscriptionGroupConfig, SubscriptionGroupWrapper
from rocketq.protocol.codes import RequestCode
from rocketq.protocol.headers import CloneGroupOffsetRequestHeader, DeleteSubscriptionGroupRequestHeader
from rocketq.protocol.java_properties import format_properties, parse_properties
from rocketq.protocol.mixall import RETRY_GROUP_TOPIC_PREFIX, dlq_topic, retry_topic

if TYPE_CHECKING:
    from rocketq.admin.admin import Admin

__all__ = [
    "BrokerPing",
    "GroupSummary",
    "broker_config",
    "clone_group_offset",
    "delete_group",
    "group_configs",
    "groups_summary",
    "ping",
    "update_broker_config",
    "update_group",
]


def _targets(admin: Admin, cluster: str | None, broker_addr: str | None) -> list[str]:
    if broker_addr is not None:
        return [broker_addr]
    addrs = [addr for _, addr in admin._cluster_brokers(cluster, masters=True)]
    if not addrs:
        raise ClientError("no master broker found" + (f" in cluster [{cluster}]" if cluster else ""))
    return addrs


def update_group(
    admin: Admin,
    config: SubscriptionGroupConfig,
    *,
    cluster: str | None = None,
    broker_addr: str | None = None,
) -> list[str]:
    """``mqadmin updateSubGroup``: create or replace a group's config; the broker addresses."""
    if not config.group_name:
        raise ClientError("a consumer group needs a name")
    body = config.to_json()
    addrs = _targets(admin, cluster, broker_addr)
    for addr in addrs:
        admin.client.invoke_checked(
            addr, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, None, admin.timeout_ms, body
        )
    return addrs


def delete_group(
    admin: Admin,
    group: str,
    *,
    cluster: str | None = None,
    broker_addr: str | None = None,
    remove_offset: bool = False,
) -> list[str]:
    """``mqadmin deleteSubGroup``: drop the group's config (and, with ``remove_offset``, its
    offsets) on the brokers. Without ``broker_addr`` the group's ``%RETRY%`` and ``%DLQ%``
    topics are deleted too, as mqadmin does with ``-c``. Returns the broker addresses."""
    header = DeleteSubscriptionGroupRequestHeader(group_name=group, remove_offset=remove_offset)
    addrs = _targets(admin, cluster, broker_addr)
    for addr in addrs:
        admin.client.invoke_checked(addr, RequestCode.DELETE_SUBSCRIPTIONGROUP, header, admin.timeout_ms)
    if broker_addr is None:
        for topic in (retry_topic(group), dlq_topic(group)):
            try:
                admin.delete_topic(topic, cluster=cluster)
            except RocketqError:  # mqadmin prints the stack and goes on: the topic may not exist
                continue
    return addrs


def clone_group_offset(
    admin: Admin, src_group: str, dest_group: str, topic: str | None = None, *, offline: bool = False
) -> list[str]:
    """``mqadmin cloneGroupOffset``: CLONE_GROUP_OFFSET on every master of ``topic``'s route (or,
    without a topic, of the cluster); the broker addresses."""
    if topic:
        addrs = []
        for bd in admin.topic_route(topic).broker_datas:
            master = bd.master_addr()
            if master is not None:
                addrs.append(master)
    else:
        addrs = _targets(admin, None, None)
    header = CloneGroupOffsetRequestHeader(
        src_group=src_group, dest_group=dest_group, topic=topic, offline=offline
    )
    for addr in addrs:
        admin.client.invoke_checked(addr, RequestCode.CLONE_GROUP_OFFSET, header, admin.timeout_ms)
    return addrs


def broker_config(admin: Admin, broker_addr: str) -> dict[str, str]:
    """``mqadmin getBrokerConfig -b``: every setting of one broker (Java keys), sorted."""
    response = admin.client.invoke_checked(broker_addr, RequestCode.GET_BROKER_CONFIG, None, admin.timeout_ms)
    props = parse_properties(response.body.decode("utf-8")) if response.body else {}
    return dict(sorted(props.items()))


def update_broker_config(
    admin: Admin,
    props: Mapping[str, str],
    *,
    cluster: str | None = None,
    broker_addr: str | None = None,
) -> list[str]:
    """``mqadmin updateBrokerConfig``: set ``broker.conf`` keys on one broker (``broker_addr``)
    or on every broker of ``cluster``; the broker addresses, in order.

    The broker checks the keys: an unknown key, a bad value or one that cannot change while it
    runs raises ``BrokerError`` (SYSTEM_ERROR, the remark says which and why) and changes
    nothing on that broker; brokers after it are not asked.
    """
    if not props:
        raise ClientError("nothing to update: give at least one key and value")
    if broker_addr is not None:
        addrs = [broker_addr]
    elif cluster is not None:
        info = admin.cluster_info()
        names = info.cluster_addr_table.get(cluster)
        if names is None:
            raise ClientError(f"cluster [{cluster}] not exist")
        addrs = [
            addr
            for name in sorted(names)
            if (bd := info.broker_addr_table.get(name)) is not None
            for _, addr in sorted(bd.broker_addrs.items())
        ]
        if not addrs:
            raise ClientError(f"no broker found in cluster [{cluster}]")
    else:
        raise ClientError("say which brokers: a broker address or a cluster name")
    body = format_properties(props).encode("utf-8")
    for addr in addrs:
        admin.client.invoke_checked(addr, RequestCode.UPDATE_BROKER_CONFIG, None, admin.timeout_ms, body)
    return addrs


@dataclass(frozen=True)
class GroupSummary:
    """One row of ``consumerProgress`` without ``-g``."""

    group: str
    clients: int
    version: str
    consume_type: str
    message_model: str
    consume_tps: float
    total_lag: int

    def to_json_obj(self) -> dict[str, object]:
        return {
            "group": self.group,
            "clients": self.clients,
            "version": self.version,
            "consume_type": self.consume_type,
            "message_model": self.message_model,
            "consume_tps": self.consume_tps,
            "total_lag": self.total_lag,
        }


def group_configs(admin: Admin, cluster: str | None = None) -> dict[str, SubscriptionGroupConfig]:
    """Every subscription group of the masters of ``cluster`` (else of all), by name; the
    first master's config wins (GET_ALL_SUBSCRIPTIONGROUP_CONFIG on each)."""
    out: dict[str, SubscriptionGroupConfig] = {}
    for addr in _targets(admin, cluster, None):
        response = admin.client.invoke_checked(
            addr, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG, None, admin.timeout_ms
        )
        for name, sgc in SubscriptionGroupWrapper.from_json(response.body).subscription_group_table.items():
            out.setdefault(name, sgc)
    return dict(sorted(out.items()))


def groups_summary(admin: Admin, *, extra: Iterable[str] = ()) -> list[GroupSummary]:
    """Every consumer group (the name server's ``%RETRY%<group>`` topics, as mqadmin finds them,
    and the names in ``extra``) with its live clients and lag; a group no broker has offsets
    for shows lag 0."""
    groups = sorted(
        {
            t[len(RETRY_GROUP_TOPIC_PREFIX) :]
            for t in admin.topic_list()
            if t.startswith(RETRY_GROUP_TOPIC_PREFIX)
        }
        | set(extra)
    )
    out = []
    for group in groups:
        try:
            stats = admin.consume_stats(group)
            lag = sum(max(0, w.broker_offset - w.consumer_offset) for w in stats.offset_table.values())
            tps = stats.consume_tps
        except RocketqError:
            lag, tps = 0, 0.0
        try:
            conns = admin.consumer_connections(group)
            clients = len(conns.connections)
            versions = sorted({c.version_desc for c in conns.connections})
            version = versions[0] if len(versions) == 1 else ("mixed" if versions else "")
            consume_type, model = conns.consume_type or "", conns.message_model or ""
        except BrokerError:  # CONSUMER_NOT_ONLINE
            clients, version, consume_type, model = 0, "", "", ""
        out.append(GroupSummary(group, clients, version, consume_type, model, tps, lag))
    return out


@dataclass(frozen=True)
class BrokerPing:
    """One broker's answer to the health check: round trip in ms, or the error."""

    broker_name: str
    addr: str
    rtt_ms: float | None
    error: str | None

    def to_json_obj(self) -> dict[str, object]:
        return {
            "broker_name": self.broker_name,
            "addr": self.addr,
            "rtt_ms": self.rtt_ms,
            "error": self.error,
        }


def ping(admin: Admin) -> list[BrokerPing]:
    """GET_BROKER_RUNTIME_INFO of every registered broker (masters and slaves), timed."""
    out = []
    for name, bd in sorted(admin.cluster_info().broker_addr_table.items()):
        for _, addr in sorted(bd.broker_addrs.items()):
            started = time.monotonic()
            try:
                admin.broker_runtime_info(addr)
            except RocketqError as exc:
                out.append(BrokerPing(name, addr, None, str(exc)))
                continue
            out.append(BrokerPing(name, addr, round((time.monotonic() - started) * 1000, 2), None))
    return out
