"""``rocketq topic ...``: list, route, status, create/update, delete, stats, consumers.

The mqadmin commands ``topicList``, ``topicRoute``, ``topicStatus``, ``updateTopic``,
``deleteTopic``, ``statsAll`` and ``topicConsumeByWho`` over :class:`~rocketq.admin.Admin`.
Output rules are those of :mod:`rocketq.cli._output`.
"""

from __future__ import annotations

import argparse
from typing import Any

from rocketq.admin import Admin
from rocketq.cli._output import Output, add_admin_command, add_target_options, format_ms
from rocketq.protocol.mixall import TRANSACTION_TOPICS

__all__ = ["register"]


def register(subparsers: Any) -> None:
    """Add ``topic`` and its subcommands to the ``rocketq`` parser."""
    topic = subparsers.add_parser(
        "topic",
        help="topics: list, route, status, create/update, delete, stats",
        description="Topic administration (mqadmin topicList, topicRoute, topicStatus, updateTopic, deleteTopic, statsAll, topicConsumeByWho).",
    )
    sub = topic.add_subparsers(dest="topic_command", metavar="SUBCOMMAND", required=True)

    p = sub.add_parser(
        "list",
        help="list every topic the name server knows (mqadmin topicList)",
        description="List topics. The transactional system topics (RMQ_SYS_TRANS_HALF_TOPIC, "
        "RMQ_SYS_TRANS_OP_HALF_TOPIC, TRANS_CHECK_MAX_TIME_TOPIC) are hidden unless --system is given.",
    )
    p.add_argument("-c", "--cluster", default=None, help="only the topics of this cluster")
    p.add_argument("-s", "--system", action="store_true", help="also list the transactional system topics")
    add_admin_command(p, _list)

    p = sub.add_parser("route", help="show a topic's route: brokers and queues (mqadmin topicRoute)")
    p.add_argument("-t", "--topic", required=True)
    add_admin_command(p, _route)

    p = sub.add_parser("status", help="min/max offset and last update time per queue (mqadmin topicStatus)")
    p.add_argument("-t", "--topic", required=True)
    add_admin_command(p, _status)

    for name in ("create", "update"):
        p = sub.add_parser(
            name,
            help=f"{name} a topic on brokers (mqadmin updateTopic)",
            description="Create or update a topic on one broker (-b), every master of a cluster (-c), "
            "or every master the name server knows.",
        )
        p.add_argument("-t", "--topic", required=True)
        p.add_argument("-r", "--read-queues", type=int, default=8, help="read queue count (default 8)")
        p.add_argument("-w", "--write-queues", type=int, default=8, help="write queue count (default 8)")
        p.add_argument("-p", "--perm", type=int, default=6, help="permission: 2=W, 4=R, 6=RW (default 6)")
        add_target_options(p)
        p.add_argument(
            "-o", "--order", action="store_true", help="an ordered topic (stores ORDER_TOPIC_CONFIG)"
        )
        add_admin_command(p, _create)

    p = sub.add_parser(
        "delete", help="delete a topic from its brokers and the name servers (mqadmin deleteTopic)"
    )
    p.add_argument("-t", "--topic", required=True)
    p.add_argument("-c", "--cluster", default=None, help="delete on every master of this cluster")
    add_admin_command(p, _delete)

    p = sub.add_parser(
        "stats",
        help="in/out TPS, 24 h counts and lag per topic and group (mqadmin statsAll)",
    )
    p.add_argument("-t", "--topic", default=None, help="only this topic (default: all but %%RETRY%%/%%DLQ%%)")
    add_admin_command(p, _stats)

    p = sub.add_parser("consumers", help="the groups consuming a topic (mqadmin topicConsumeByWho)")
    p.add_argument("-t", "--topic", required=True)
    add_admin_command(p, _consumers)


def _list(args: argparse.Namespace, admin: Admin, out: Output) -> int:
    topics = admin.topic_list(args.cluster)
    if not args.system:
        # TopicValidator system topics a broker creates on demand for transactions
        topics = [t for t in topics if t not in TRANSACTION_TOPICS]
    if out.json_mode:
        out.json(topics)
    else:
        out.table(["Topic"], [[t] for t in topics], caption=f"{len(topics)} topics")
    return 0


def _route(args: argparse.Namespace, admin: Admin, out: Output) -> int:
    route = admin.topic_route(args.topic)
    if out.json_mode:
        out.json(
            {
                "topic": args.topic,
                "order_topic_conf": route.order_topic_conf,
                "brokers": [
                    {
                        "broker_name": bd.broker_name,
                        "cluster": bd.cluster,
                        "broker_addrs": {str(bid): addr for bid, addr in sorted(bd.broker_addrs.items())},
                    }
                    for bd in sorted(route.broker_datas, key=lambda b: b.broker_name or "")
                ],
                "queues": [
                    {
                        "broker_name": qd.broker_name,
                        "read_queue_nums": qd.read_queue_nums,
                        "write_queue_nums": qd.write_queue_nums,
                        "perm": qd.perm,
                        "topic_sys_flag": qd.topic_sys_flag,
                    }
                    for qd in sorted(route.queue_datas, key=lambda q: q.broker_name or "")
                ],
            }
        )
        return 0
    out.table(
        ["Broker", "Cluster", "Addresses"],
        [
            [
                bd.broker_name,
                bd.cluster,
                ", ".join(f"{bid}={addr}" for bid, addr in sorted(bd.broker_addrs.items())),
            ]
            for bd in sorted(route.broker_datas, key=lambda b: b.broker_name or "")
        ],
        title=f"Route of {args.topic}",
    )
    out.table(
        ["Broker", "Read queues", "Write queues", "Perm", "Sys flag"],
        [
            [qd.broker_name, qd.read_queue_nums, qd.write_queue_nums, qd.perm, qd.topic_sys_flag]
            for qd in sorted(route.queue_datas, key=lambda q: q.broker_name or "")
        ],
    )
    if route.order_topic_conf:
        out.line(f"order conf: {route.order_topic_conf}")
    return 0


def _status(args: argparse.Namespace, admin: Admin, out: Output) -> int:
    status = admin.topic_status(args.topic)
    if out.json_mode:
        out.json(status.to_json_obj())
        return 0
    out.table(
        ["Broker", "Queue", "Min offset", "Max offset", "Last updated"],
        [
            [q.broker_name, q.queue_id, q.min_offset, q.max_offset, format_ms(q.last_update_timestamp)]
            for q in status.queues
        ],
        title=f"Status of {args.topic}",
        caption=f"{status.total_messages} messages stored",
    )
    return 0


def _create(args: argparse.Namespace, admin: Admin, out: Output) -> int:
    addrs = admin.create_topic(
        args.topic,
        read_queue_nums=args.read_queues,
        write_queue_nums=args.write_queues,
        perm=args.perm,
        cluster=args.cluster,
        broker_addr=args.broker_addr,
        order=args.order,
    )
    if out.json_mode:
        out.json(
            {
                "topic": args.topic,
                "brokers": addrs,
                "read_queue_nums": args.read_queues,
                "write_queue_nums": args.write_queues,
                "perm": args.perm,
                "order": args.order,
            }
        )
    else:
        for addr in addrs:
            out.line(
                f"topic {args.topic} created/updated on {addr} "
                f"(read {args.read_queues}, write {args.write_queues}, perm {args.perm})"
            )
    return 0


def _delete(args: argparse.Namespace, admin: Admin, out: Output) -> int:
    addrs = admin.delete_topic(args.topic, cluster=args.cluster)
    if out.json_mode:
        out.json({"topic": args.topic, "brokers": addrs, "namesrv": admin.namesrv_addrs})
    else:
        out.line(f"topic {args.topic} deleted from {', '.join(addrs) or 'no broker'} and the name server(s)")
    return 0


def _stats(args: argparse.Namespace, admin: Admin, out: Output) -> int:
    rows = admin.topic_stats(args.topic)
    if out.json_mode:
        out.json([r.to_json_obj() for r in rows])
        return 0
    out.table(
        ["Topic", "Group", "Lag", "In TPS", "Out TPS", "In 24h", "Out 24h"],
        [
            [r.topic, r.group or "", r.accumulation, r.in_tps, r.out_tps, r.in_msg_24h, r.out_msg_24h]
            for r in rows
        ],
    )
    return 0


def _consumers(args: argparse.Namespace, admin: Admin, out: Output) -> int:
    groups = admin.topic_consumed_by(args.topic)
    if out.json_mode:
        out.json(groups)
    else:
        out.table(["Group"], [[g] for g in groups], title=f"Groups consuming {args.topic}")
    return 0
