"""``rocketq cluster ...``: list (mqadmin clusterList), runtime (mqadmin brokerStatus), config
(mqadmin getBrokerConfig), update-config (mqadmin updateBrokerConfig) and ping (a health check).

Output rules are those of :mod:`rocketq.cli._output`. ``cluster list`` exits 1 when the name
server knows no broker; ``cluster ping`` exits 1 unless every registered broker answers.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from rocketq.admin import Admin
from rocketq.admin import groups as group_ops
from rocketq.cli._output import NO_BROKER, Output, add_admin_command
from rocketq.errors import ClientError

__all__ = ["register"]


def register(subparsers: Any) -> None:
    """Add ``cluster`` and its subcommands to the ``rocketq`` parser."""
    cluster = subparsers.add_parser(
        "cluster",
        help="clusters and brokers: list, runtime, config, update-config, ping",
        description="Clusters and brokers (mqadmin clusterList, brokerStatus, getBrokerConfig, updateBrokerConfig).",
    )
    sub = cluster.add_subparsers(dest="cluster_command", metavar="SUBCOMMAND", required=True)

    p = sub.add_parser(
        "list", help="every broker with its version, TPS and today's counts (mqadmin clusterList)"
    )
    add_admin_command(p, _list)

    p = sub.add_parser("runtime", help="the runtime figures of one broker (mqadmin brokerStatus)")
    p.add_argument("-b", "--broker-addr", required=True, help="broker address ip:port")
    add_admin_command(p, _runtime)

    p = sub.add_parser("config", help="every setting of one broker (mqadmin getBrokerConfig)")
    p.add_argument("-b", "--broker-addr", required=True, help="broker address ip:port")
    add_admin_command(p, _config)

    p = sub.add_parser(
        "update-config",
        help="change one setting of running brokers (mqadmin updateBrokerConfig)",
        description="Change one broker.conf key of running brokers (mqadmin updateBrokerConfig). "
        "The change applies at once and is kept in <store>/config/broker.properties across restarts. "
        "Keys that cannot change while a broker runs (ports, addresses, names, store paths, file sizes, "
        "...) are refused: edit broker.conf and restart. docs/configuration.md lists the keys.",
    )
    target = p.add_mutually_exclusive_group(required=True)
    target.add_argument("-b", "--broker-addr", default=None, help="only this broker (ip:port)")
    target.add_argument("-c", "--cluster", default=None, help="every broker of this cluster")
    p.add_argument("-k", "--key", required=True, help="the broker.conf key, e.g. brokerPermission")
    p.add_argument("-v", "--value", required=True, help="its new value")
    add_admin_command(p, _update_config)

    p = sub.add_parser(
        "ping",
        help="health check: ask every registered broker for its runtime info, with round-trip times; "
        "exit 1 unless all answer",
    )
    add_admin_command(p, _ping)


def _hours_ago(ms: int) -> str:
    if ms <= 0:
        return "-"
    return f"{max(0.0, time.time() * 1000 - ms) / 3_600_000:.2f}"


def _list(args: argparse.Namespace, admin: Admin, out: Output) -> int:
    view = admin.cluster_list()
    if not view.brokers:
        # an empty table with status 0 reads as "all is well"
        raise ClientError(NO_BROKER.format(namesrv=", ".join(admin.namesrv_addrs)))
    if out.json_mode:
        out.json(view.to_json_obj())
        return 0
    out.table(
        [
            "Cluster",
            "Broker",
            "BID",
            "Address",
            "Version",
            "In TPS",
            "Out TPS",
            "In today",
            "Out today",
            "Hours",
            "Disk",
        ],
        [
            [
                b.cluster,
                b.broker_name,
                b.broker_id,
                b.addr,
                b.version if b.error is None else f"error: {b.error}",
                b.in_tps,
                b.out_tps,
                b.in_today,
                b.out_today,
                _hours_ago(b.earliest_message_timestamp),
                _disk(b.commit_log_disk_ratio),
            ]
            for b in view.brokers
        ],
        caption="Hours: age of the oldest stored message; Disk: share of the commit log's disk in use",
    )
    return 0


def _disk(ratio: str) -> str:
    """``commitLogDiskRatio`` (a fraction, as text) as a percentage: ``0.4213`` -> ``42.1%``."""
    try:
        value = float(ratio)
    except ValueError:
        return ratio or "-"
    return f"{value * 100:.1f}%" if value >= 0 else "-"


def _config(args: argparse.Namespace, admin: Admin, out: Output) -> int:
    config = group_ops.broker_config(admin, args.broker_addr)
    if out.json_mode:
        out.json(config)
    else:
        out.kv(config, title=f"Config of broker {args.broker_addr}")
    return 0


def _update_config(args: argparse.Namespace, admin: Admin, out: Output) -> int:
    addrs = group_ops.update_broker_config(
        admin, {args.key: args.value}, cluster=args.cluster, broker_addr=args.broker_addr
    )
    if out.json_mode:
        out.json({"key": args.key, "value": args.value, "brokers": addrs})
    else:
        for addr in addrs:
            out.line(f"update broker config success, {addr}")
    return 0


def _ping(args: argparse.Namespace, admin: Admin, out: Output) -> int:
    pings = group_ops.ping(admin)
    if not pings:
        raise ClientError(NO_BROKER.format(namesrv=", ".join(admin.namesrv_addrs)))
    failed = [p for p in pings if p.error is not None]
    if out.json_mode:
        out.json({"ok": not failed, "brokers": [p.to_json_obj() for p in pings]})
    else:
        out.table(
            ["Broker", "Address", "Round trip (ms)", "Error"],
            [
                [p.broker_name, p.addr, p.rtt_ms if p.rtt_ms is not None else "-", p.error or ""]
                for p in pings
            ],
            caption=f"{len(pings) - len(failed)}/{len(pings)} broker(s) answered",
        )
    if failed:
        out.note(f"error: {len(failed)} of {len(pings)} broker(s) did not answer")
        return 1
    return 0


def _runtime(args: argparse.Namespace, admin: Admin, out: Output) -> int:
    info = admin.broker_runtime_info(args.broker_addr)
    if out.json_mode:
        out.json(dict(sorted(info.items())))
    else:
        out.kv(dict(sorted(info.items())), title=f"Broker {args.broker_addr}")
    return 0
