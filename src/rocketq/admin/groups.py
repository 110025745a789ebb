"""Subscription groups and broker configuration for :class:`~rocketq.admin.Admin`.

Mirrors the parts of ``DefaultMQAdminExtImpl`` that mqadmin's ``updateSubGroup``,
``deleteSubGroup``, ``getBrokerConfig`` and rocketmq-dashboard's consumer list
(``ConsumerServiceImpl.queryGroupList``) use: ``examineSubscriptionGroupConfig`` /
GET_ALL_SUBSCRIPTIONGROUP_CONFIG on each master, ``createAndUpdateSubscriptionGroupConfig``,
``deleteSubscriptionGroup`` and ``getBrokerConfig``. Functions take the admin as their first
argument (as :mod:`rocketq.admin.messages` does) and are exposed as Admin methods.

Invariants: writes go to every master of the cluster (or of all clusters), like mqadmin with
``-c``; reads merge every broker's answer (a group exists if any master has it). A group
summary's lag and TPS are GET_CONSUME_STATS merged over the group's brokers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rocketq.client.config import validate_group
from rocketq.errors import BrokerError, ClientError, RocketqError
from rocketq.protocol.bodies import SubscriptionGroupConfig
from rocketq.protocol.codes import ResponseCode

if TYPE_CHECKING:
    from rocketq.admin.admin import Admin

__all__ = [
    "GroupSummary",
    "broker_config",
    "create_group",
    "delete_group",
    "group_configs",
    "group_summaries",
]


@dataclass
class GroupSummary:
    """One row of the consumer-group list (rocketmq-dashboard ``GroupConsumeInfo``)."""

    group: str
    #: live clients (0 = offline)
    clients: int = 0
    consume_type: str | None = None
    message_model: str | None = None
    consume_tps: float = 0.0
    #: broker offset - committed offset, summed over every queue of every broker
    lag: int = 0
    #: the topics it has offsets for
    topics: list[str] = field(default_factory=list)
    #: the latest store time of a message it consumed (ms), 0 = never
    last_timestamp: int = 0


def _masters(admin: Admin, cluster: str | None) -> list[tuple[str, str]]:
    info = admin.cluster_info()
    if cluster and cluster not in info.cluster_addr_table:
        raise ClientError(f"cluster [{cluster}] not exist")
    names = info.cluster_addr_table[cluster] if cluster else list(info.broker_addr_table)
    out = []
    for name in sorted(names):
        bd = info.broker_addr_table.get(name)
        addr = bd.master_addr() if bd is not None else None
        if addr is not None:
            out.append((name, addr))
    if not out:
        raise ClientError("no master broker found" + (f" in cluster [{cluster}]" if cluster else ""))
    return out


def broker_config(admin: Admin, addr: str) -> dict[str, str]:
    """``mqadmin getBrokerConfig``: one broker's configuration, sorted by key."""
    return dict(sorted(admin.api.get_broker_config(addr, admin.timeout_ms).items()))


def group_configs(admin: Admin, cluster: str | None = None) -> dict[str, SubscriptionGroupConfig]:
    """Every subscription group of the masters, by name (the first master's config wins)."""
    admin.start()
    out: dict[str, SubscriptionGroupConfig] = {}
    for _, addr in _masters(admin, cluster):
        wrapper = admin.api.get_all_subscription_group(addr, admin.timeout_ms)
        for name, sgc in wrapper.subscription_group_table.items():
            out.setdefault(name, sgc)
    return dict(sorted(out.items()))


def group_summaries(admin: Admin, cluster: str | None = None) -> list[GroupSummary]:
    """The consumer-group list: clients, type, TPS and lag of every group, by name."""
    rows: list[GroupSummary] = []
    for group in group_configs(admin, cluster):
        row = GroupSummary(group=group)
        try:
            conns = admin.consumer_connections(group)
            row.clients = len(conns.connections)
            row.consume_type = conns.consume_type
            row.message_model = conns.message_model
        except BrokerError as exc:
            if exc.code != ResponseCode.CONSUMER_NOT_ONLINE:
                raise
        try:
            stats = admin.consume_stats(group)
        except RocketqError:
            stats = None
        if stats is not None:
            row.consume_tps = stats.consume_tps
            row.lag = sum(max(0, w.broker_offset - w.consumer_offset) for w in stats.offset_table.values())
            row.topics = sorted({mq.topic for mq in stats.offset_table})
            row.last_timestamp = max((w.last_timestamp for w in stats.offset_table.values()), default=0)
        rows.append(row)
    return rows


def create_group(
    admin: Admin,
    group: str,
    *,
    cluster: str | None = None,
    retry_max_times: int = 16,
    consume_broadcast_enable: bool = True,
    consume_enable: bool = True,
) -> list[str]:
    """``mqadmin updateSubGroup``: create or update ``group`` on every master; their addresses."""
    validate_group(group)
    admin.start()
    config = SubscriptionGroupConfig(
        group_name=group,
        retry_max_times=retry_max_times,
        consume_broadcast_enable=consume_broadcast_enable,
        consume_enable=consume_enable,
    )
    targets = _masters(admin, cluster)
    for _, addr in targets:
        admin.api.create_subscription_group(addr, config, admin.timeout_ms)
    return [addr for _, addr in targets]


def delete_group(
    admin: Admin, group: str, *, cluster: str | None = None, remove_offset: bool = True
) -> list[str]:
    """``mqadmin deleteSubGroup``: delete ``group`` (and its offsets) on every master."""
    validate_group(group)
    admin.start()
    targets = _masters(admin, cluster)
    for _, addr in targets:
        admin.api.delete_subscription_group(addr, group, remove_offset, admin.timeout_ms)
    return [addr for _, addr in targets]
