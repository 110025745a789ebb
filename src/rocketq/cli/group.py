"""``rocketq group ...``: progress, connections, status, producers, reset-offset, client-offsets,
create/update, delete, clone-offset.

The mqadmin commands ``consumerProgress`` (every group without ``-g``), ``consumerConnection``,
``consumerStatus``, ``producerConnection``, ``resetOffsetByTime``, ``getConsumerStatus``,
``updateSubGroup``, ``deleteSubGroup`` and ``cloneGroupOffset`` over
:class:`~rocketq.admin.Admin` and :mod:`rocketq.admin.groups`. Output rules are those of
:mod:`rocketq.cli._output`.
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

from rocketq.admin import Admin, ResetMode
from rocketq.admin import groups as group_ops
from rocketq.admin.models import mq_to_json
from rocketq.cli._output import (
    Output,
    add_admin_command,
    add_target_options,
    format_ms,
    parse_timestamp,
)
from rocketq.errors import BrokerError
from rocketq.protocol.bodies import ConsumerRunningInfo, SubscriptionGroupConfig
from rocketq.protocol.codes import ResponseCode

__all__ = ["register"]

#: The settings of ``group create/update`` (updateSubGroup): every SubscriptionGroupConfig field.
_GROUP_DEFAULTS = SubscriptionGroupConfig()
_GROUP_FIELDS = [f for f in dataclasses.fields(SubscriptionGroupConfig) if f.name != "group_name"]


def register(subparsers: Any) -> None:
    """Add ``group`` and its subcommands to the ``rocketq`` parser."""
    group = subparsers.add_parser(
        "group",
        help="consumer/producer groups: progress, connections, status, reset-offset",
        description="Consumer and producer groups (mqadmin consumerProgress, consumerConnection, consumerStatus, producerConnection, resetOffsetByTime, getConsumerStatus).",
    )
    sub = group.add_subparsers(dest="group_command", metavar="SUBCOMMAND", required=True)

    p = sub.add_parser(
        "progress",
        help="per-queue broker/consumer offset, lag and holder; total lag and TPS; without -g one row "
        "per group (mqadmin consumerProgress)",
    )
    p.add_argument("-g", "--group", default=None, help="the group (default: a summary of every group)")
    p.add_argument("-t", "--topic", default=None, help="only this topic")
    p.add_argument("--no-clients", action="store_true", help="do not ask live clients which queue they hold")
    add_admin_command(p, _progress)

    p = sub.add_parser(
        "connections", help="live clients and subscriptions of a group (mqadmin consumerConnection)"
    )
    p.add_argument("-g", "--group", required=True)
    add_admin_command(p, _connections)

    p = sub.add_parser(
        "status", help="running info of each live client: queues, caches, TPS (mqadmin consumerStatus)"
    )
    p.add_argument("-g", "--group", required=True)
    p.add_argument("-i", "--client-id", default=None, help="only this client")
    p.add_argument("--jstack", action="store_true", help="also ask for the clients' thread stacks")
    add_admin_command(p, _status)

    p = sub.add_parser("producers", help="live producers of a producer group (mqadmin producerConnection)")
    p.add_argument("-g", "--group", required=True, help="producer group")
    p.add_argument("-t", "--topic", required=True, help="a topic the group sends to (locates the brokers)")
    add_admin_command(p, _producers)

    p = sub.add_parser(
        "reset-offset",
        help="move a group's offsets of a topic to a point in time (mqadmin resetOffsetByTime)",
        description="Online (default when a client of the group is live): the brokers push the new offsets "
        "to every live client, which resumes from them at once. Offline: the offsets are written to the "
        "brokers (UPDATE_CONSUMER_OFFSET per queue); only safe while no client runs.",
    )
    p.add_argument("-g", "--group", required=True)
    p.add_argument("-t", "--topic", required=True)
    p.add_argument(
        "-s",
        "--timestamp",
        required=True,
        help="epoch ms, 'now', 'earliest', 'latest' (-1) or a local time like 2026-11-22T08:30:00",
    )
    p.add_argument("--no-force", action="store_true", help="only move offsets backwards")
    p.add_argument("--mode", choices=["auto", "online", "offline"], default="auto", help="default auto")
    add_admin_command(p, _reset_offset)

    p = sub.add_parser(
        "client-offsets",
        help="each live client's own offsets of a topic, via the broker (mqadmin getConsumerStatus)",
    )
    p.add_argument("-g", "--group", required=True)
    p.add_argument("-t", "--topic", required=True)
    p.add_argument("-i", "--client-addr", default=None, help="only the client with this client id")
    add_admin_command(p, _client_offsets)

    for name in ("create", "update"):
        p = sub.add_parser(
            name,
            help=f"{name} a consumer group's settings on brokers (mqadmin updateSubGroup)",
            description="Targets one broker (-b), every master of a cluster (-c), or every master. "
            "Each option is a SubscriptionGroupConfig field, with Java's default.",
        )
        p.add_argument("-g", "--group", required=True)
        add_target_options(p)
        for f in _GROUP_FIELDS:
            default = getattr(_GROUP_DEFAULTS, f.name)
            p.add_argument(
                "--" + f.name.replace("_", "-"),
                type=_bool if isinstance(default, bool) else int,
                default=default,
                metavar="BOOL" if isinstance(default, bool) else "N",
                help=f"default {str(default).lower()}",
            )
        add_admin_command(p, _update)

    p = sub.add_parser(
        "delete",
        help="delete a consumer group's settings from brokers (mqadmin deleteSubGroup)",
        description="Without -b, the group's %%RETRY%% and %%DLQ%% topics are deleted too, as mqadmin -c does.",
    )
    p.add_argument("-g", "--group", required=True)
    add_target_options(p)
    p.add_argument("--remove-offset", action="store_true", help="also drop the group's offsets")
    add_admin_command(p, _delete)

    p = sub.add_parser(
        "clone-offset", help="copy one group's offsets to another group (mqadmin cloneGroupOffset)"
    )
    p.add_argument("-s", "--src-group", required=True)
    p.add_argument("-d", "--dest-group", required=True)
    p.add_argument("-t", "--topic", default=None, help="only this topic (default: every topic of the source)")
    p.add_argument(
        "-o", "--offline", action="store_true", help="also topics the live source group does not subscribe"
    )
    add_admin_command(p, _clone_offset)


def _bool(text: str) -> bool:
    lower = text.strip().lower()
    if lower not in ("true", "false"):
        raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")
    return lower == "true"


def _update(args: argparse.Namespace, admin: Admin, out: Output) -> int:
    config = SubscriptionGroupConfig(
        group_name=args.group, **{f.name: getattr(args, f.name) for f in _GROUP_FIELDS}
    )
    addrs = group_ops.update_group(admin, config, cluster=args.cluster, broker_addr=args.broker_addr)
    if out.json_mode:
        out.json({"group": args.group, "brokers": addrs, "config": dataclasses.asdict(config)})
    else:
        for addr in addrs:
            out.line(f"consumer group {args.group} created/updated on {addr}")
    return 0


def _delete(args: argparse.Namespace, admin: Admin, out: Output) -> int:
    addrs = group_ops.delete_group(
        admin,
        args.group,
        cluster=args.cluster,
        broker_addr=args.broker_addr,
        remove_offset=args.remove_offset,
    )
    if out.json_mode:
        out.json({"group": args.group, "brokers": addrs, "remove_offset": args.remove_offset})
    else:
        out.line(f"consumer group {args.group} deleted from {', '.join(addrs)}")
    return 0


def _clone_offset(args: argparse.Namespace, admin: Admin, out: Output) -> int:
    addrs = group_ops.clone_group_offset(
        admin, args.src_group, args.dest_group, args.topic, offline=args.offline
    )
    if out.json_mode:
        out.json(
            {
                "src_group": args.src_group,
                "dest_group": args.dest_group,
                "topic": args.topic,
                "brokers": addrs,
            }
        )
    else:
        out.line(
            f"offsets of {args.src_group} cloned to {args.dest_group}"
            + (f" for {args.topic}" if args.topic else "")
            + f" on {', '.join(addrs)}"
        )
    return 0


def _progress_all(admin: Admin, out: Output) -> int:
    rows = group_ops.groups_summary(admin)
    if out.json_mode:
        out.json([r.to_json_obj() for r in rows])
        return 0
    out.table(
        ["Group", "Clients", "Version", "Type", "Model", "Consume TPS", "Total lag"],
        [
            [r.group, r.clients, r.version, r.consume_type, r.message_model, r.consume_tps, r.total_lag]
            for r in rows
        ],
        caption=f"{len(rows)} group(s)",
    )
    return 0


def _progress(args: argparse.Namespace, admin: Admin, out: Output) -> int:
    if args.group is None:
        return _progress_all(admin, out)
    progress = admin.consumer_progress(args.group, args.topic, with_clients=not args.no_clients)
    if out.json_mode:
        out.json(progress.to_json_obj())
        return 0
    out.table(
        ["Topic", "Broker", "Queue", "Broker offset", "Consumer offset", "Lag", "Client", "Last consumed"],
        [
            [
                q.topic,
                q.broker_name,
                q.queue_id,
                q.broker_offset,
                q.consumer_offset,
                q.lag,
                q.client_id or "",
                format_ms(q.last_timestamp),
            ]
            for q in progress.queues
        ],
        title=f"Progress of {args.group}",
        caption=f"Consume TPS: {progress.consume_tps:.2f}   Total lag: {progress.total_lag}",
    )
    return 0


def _connections(args: argparse.Namespace, admin: Admin, out: Output) -> int:
    conns = admin.consumer_connections(args.group)
    if out.json_mode:
        out.json(conns.to_json_obj())
        return 0
    out.table(
        ["Client id", "Address", "Language", "Version"],
        [[c.client_id, c.client_addr, c.language, c.version_desc] for c in conns.connections],
        title=f"Connections of {args.group}",
    )
    out.table(["Topic", "Subscription"], [[t, s] for t, s in conns.subscriptions.items()])
    out.line(
        f"consume type {conns.consume_type}, message model {conns.message_model}, "
        f"consume from {conns.consume_from_where}"
    )
    return 0


def _status(args: argparse.Namespace, admin: Admin, out: Output) -> int:
    if args.client_id:
        infos = {args.client_id: admin.consumer_running_info(args.group, args.client_id, jstack=args.jstack)}
    else:
        infos = admin.consumer_status(args.group, jstack=args.jstack)
    if out.json_mode:
        out.json({cid: _running_info_json(info) for cid, info in infos.items()})
        return 0
    for cid, info in infos.items():
        out.table(
            [
                "Topic",
                "Broker",
                "Queue",
                "Commit offset",
                "Cached",
                "Cached min",
                "Cached max",
                "Locked",
                "Dropped",
                "Last pull",
            ],
            [
                [
                    mq.topic,
                    mq.broker_name,
                    mq.queue_id,
                    pq.commit_offset,
                    pq.cached_msg_count,
                    pq.cached_msg_min_offset,
                    pq.cached_msg_max_offset,
                    pq.locked,
                    pq.dropped,
                    format_ms(pq.last_pull_timestamp),
                ]
                for mq, pq in sorted(info.mq_table.items())
            ],
            title=f"Client {cid}",
        )
        out.table(
            ["Topic", "Pull TPS", "Pull RT", "Consume OK TPS", "Consume failed TPS", "Consume RT"],
            [
                [t, s.pull_tps, s.pull_rt, s.consume_ok_tps, s.consume_failed_tps, s.consume_rt]
                for t, s in sorted(info.status_table.items())
            ],
        )
        out.table(["Topic", "Subscription"], [[sd.topic, sd.sub_string] for sd in info.subscription_set])
        if info.jstack:
            out.line(info.jstack)
    return 0


def _running_info_json(info: ConsumerRunningInfo) -> dict[str, Any]:
    return {
        "properties": dict(info.properties),
        "subscriptions": {sd.topic: sd.sub_string for sd in info.subscription_set},
        "queues": [
            {
                **mq_to_json(mq),
                "commit_offset": pq.commit_offset,
                "cached_msg_count": pq.cached_msg_count,
                "cached_msg_min_offset": pq.cached_msg_min_offset,
                "cached_msg_max_offset": pq.cached_msg_max_offset,
                "cached_msg_size_mib": pq.cached_msg_size_in_mib,
                "locked": pq.locked,
                "dropped": pq.dropped,
                "last_pull_timestamp": pq.last_pull_timestamp,
                "last_consume_timestamp": pq.last_consume_timestamp,
            }
            for mq, pq in sorted(info.mq_table.items())
        ],
        "status": {
            t: {
                "pull_tps": s.pull_tps,
                "pull_rt": s.pull_rt,
                "consume_ok_tps": s.consume_ok_tps,
                "consume_failed_tps": s.consume_failed_tps,
                "consume_rt": s.consume_rt,
                "consume_failed_msgs": s.consume_failed_msgs,
            }
            for t, s in sorted(info.status_table.items())
        },
        "jstack": info.jstack,
    }


def _producers(args: argparse.Namespace, admin: Admin, out: Output) -> int:
    conns = admin.producer_connections(args.group, args.topic)
    if out.json_mode:
        out.json([c.to_json_obj() for c in conns])
        return 0
    out.table(
        ["Client id", "Address", "Language", "Version"],
        [[c.client_id, c.client_addr, c.language, c.version_desc] for c in conns],
        title=f"Producers of {args.group}",
    )
    return 0


def _reset_offset(args: argparse.Namespace, admin: Admin, out: Output) -> int:
    timestamp = parse_timestamp(args.timestamp)
    mode = None if args.mode == "auto" else ResetMode(args.mode)
    live = _live_clients(admin, args.group) if mode is ResetMode.OFFLINE else 0
    if live:
        out.note(
            f"warning: {live} client(s) of {args.group} are live: they keep "
            "their own offsets and will overwrite this offline reset at their next commit; stop them "
            "first, or use --mode online"
        )
    result = admin.reset_offset_by_time(args.group, args.topic, timestamp, force=not args.no_force, mode=mode)
    if out.json_mode:
        out.json(result.to_json_obj())
        return 0
    out.table(
        ["Topic", "Broker", "Queue", "Old offset", "New offset", "Broker offset"],
        [
            [
                q.message_queue.topic,
                q.message_queue.broker_name,
                q.message_queue.queue_id,
                q.old_offset,
                q.new_offset,
                q.broker_offset,
            ]
            for q in result.queues
        ],
        title=f"Offsets of {args.group} reset ({result.mode.value})",
        caption=f"to {_describe_time(timestamp)}",
    )
    return 0


def _live_clients(admin: Admin, group: str) -> int:
    try:
        return len(admin.consumer_connections(group).connections)
    except BrokerError as exc:
        if exc.code == ResponseCode.CONSUMER_NOT_ONLINE:
            return 0
        raise


def _describe_time(timestamp: int) -> str:
    if timestamp == -1:
        return "the end of each queue"
    if timestamp == 0:
        return "the beginning of each queue"
    return format_ms(timestamp)


def _client_offsets(args: argparse.Namespace, admin: Admin, out: Output) -> int:
    table = admin.consumer_offsets_from_clients(args.group, args.topic, client_addr=args.client_addr)
    if out.json_mode:
        out.json(
            {
                cid: [{**mq_to_json(mq), "offset": off} for mq, off in sorted(t.items())]
                for cid, t in table.items()
            }
        )
        return 0
    out.table(
        ["Client", "Topic", "Broker", "Queue", "Offset"],
        [
            [cid, mq.topic, mq.broker_name, mq.queue_id, off]
            for cid, t in table.items()
            for mq, off in sorted(t.items())
        ],
        title=f"Client offsets of {args.group}",
    )
    return 0
