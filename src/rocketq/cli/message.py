"""``rocketq message ...``: query, send, consume, resend, resend-dlq, tx-state.

The mqadmin commands ``queryMsgById``, ``queryMsgByKey``, ``queryMsgByUniqueKey``,
``queryMsgByOffset`` (with the per-group consume state of ``messageTrackDetail``),
``sendMessage``, ``consumeMessage``, the dashboard's message/DLQ resend and the state of a
transactional message (:mod:`rocketq.admin.transactions`), over
:class:`~rocketq.admin.Admin`. Output rules are those of :mod:`rocketq.cli._output`;
``send --file`` and ``resend-dlq`` show a progress bar on stderr.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from rocketq.admin import Admin, ResendMethod, ResendResult, message_to_json
from rocketq.cli._output import (
    Output,
    add_admin_command,
    format_ms,
    parse_timestamp,
)
from rocketq.cli.message_trace import register_trace
from rocketq.protocol.message import Message, MessageExt

__all__ = ["register"]

_BODY_PREVIEW = 80


def register(subparsers: Any) -> None:
    """Add ``message`` and its subcommands to the ``rocketq`` parser."""
    message = subparsers.add_parser(
        "message",
        help="messages: query, send, consume, resend, resend-dlq",
        description="Messages (mqadmin queryMsgById/ByKey/ByUniqueKey/ByOffset, sendMessage, consumeMessage; dashboard resend and DLQ resend).",
    )
    sub = message.add_subparsers(dest="message_command", metavar="SUBCOMMAND", required=True)
    register_trace(sub)

    p = sub.add_parser(
        "query",
        help="find messages by id, key, unique key or queue offset, with their consume state per group",
        description="Exactly one of --id, --key, --unique-key, --offset. --id takes an offset message id "
        "(or, with -t, a unique key); --offset needs -t, -b and -q.",
    )
    how = p.add_mutually_exclusive_group(required=True)
    how.add_argument(
        "-i", "--id", dest="msg_id", default=None, help="message id (offsetMsgId, or UNIQ_KEY with -t)"
    )
    how.add_argument("-k", "--key", default=None, help="a message key (KEYS)")
    how.add_argument("-u", "--unique-key", default=None, help="the client message id (UNIQ_KEY)")
    how.add_argument("-o", "--offset", type=int, default=None, help="a consume-queue offset")
    p.add_argument("-t", "--topic", default=None)
    p.add_argument("-b", "--broker", default=None, help="broker name (with --offset)")
    p.add_argument("-q", "--queue", type=int, default=None, help="queue id (with --offset)")
    p.add_argument("--max", type=int, default=64, help="at most this many messages by key (default 64)")
    p.add_argument("--no-track", action="store_true", help="do not compute the consume state per group")
    add_admin_command(p, _query)

    p = sub.add_parser(
        "send",
        help="send one message, or one per line of a file (with a progress bar)",
        description="With --file, each line is one message: its body, or with --jsonl a JSON object "
        '{"body": ..., "tags": ..., "keys": ..., "properties": {...}}.',
    )
    p.add_argument("-t", "--topic", required=True)
    body = p.add_mutually_exclusive_group(required=True)
    body.add_argument("-p", "--body", default=None, help="the message body (UTF-8)")
    body.add_argument("-f", "--file", default=None, help="send one message per line of this file")
    p.add_argument("--jsonl", action="store_true", help="lines of --file are JSON objects")
    p.add_argument("--tags", default=None)
    p.add_argument("-k", "--keys", default=None, help="space-separated keys")
    add_admin_command(p, _send)

    p = sub.add_parser(
        "consume",
        help="read messages of a topic without committing any offset (mqadmin consumeMessage)",
    )
    p.add_argument("-t", "--topic", required=True, help="topic (e.g. %%DLQ%%<group> to list dead letters)")
    p.add_argument("-b", "--broker", default=None, help="only this broker name")
    p.add_argument("-q", "--queue", type=int, default=None, help="only this queue id")
    p.add_argument("-o", "--offset", type=int, default=None, help="start offset (default: each queue's min)")
    p.add_argument("-s", "--begin", default=None, help="start at this time (epoch ms or local date-time)")
    p.add_argument("-e", "--end", default=None, help="stop after this time")
    p.add_argument("-c", "--count", type=int, default=32, help="at most this many messages (default 32)")
    add_admin_command(p, _consume)

    p = sub.add_parser(
        "resend",
        help="hand stored messages (also dead letters) to a consumer group again",
        description="direct (default): the broker hands the stored message to a live client of the group, "
        "whose listener consumes it at once (CONSUME_MESSAGE_DIRECTLY); produce: a copy is produced into "
        "%RETRY%<group>, so only that group receives it, now or when it comes back online.",
    )
    p.add_argument("-g", "--group", required=True)
    p.add_argument(
        "-i",
        "--id",
        dest="msg_ids",
        action="append",
        required=True,
        metavar="ID",
        help="message id (repeatable)",
    )
    p.add_argument("-t", "--topic", default=None, help="topic, to look ids up as unique keys")
    p.add_argument("--method", choices=[m.value for m in ResendMethod], default="direct")
    p.add_argument("--client-id", default=None, help="direct: only this client")
    add_admin_command(p, _resend)

    p = sub.add_parser(
        "resend-dlq",
        help="resend the dead letters of a group (%%DLQ%%<group>), with a progress bar",
    )
    p.add_argument("-g", "--group", required=True)
    p.add_argument(
        "-i",
        "--id",
        dest="msg_ids",
        action="append",
        default=None,
        metavar="ID",
        help="only these ids (repeatable)",
    )
    p.add_argument("--method", choices=[m.value for m in ResendMethod], default="produce")
    p.add_argument("--max", type=int, default=10_000, help="at most this many messages (default 10000)")
    add_admin_command(p, _resend_dlq)

    p = sub.add_parser(
        "tx-state",
        help="where a transactional message stands: PREPARED, COMMITTED, ROLLED_BACK or DISCARDED",
        description="Looks up the half message by its client id (UNIQ_KEY, the msgId of the send "
        "result) and what the broker did with it.",
    )
    p.add_argument("-u", "--unique-key", required=True, help="the message's UNIQ_KEY")
    add_admin_command(p, _tx_state)


def _preview(msg: MessageExt) -> str:
    text = msg.body.decode("utf-8", errors="replace")
    return text if len(text) <= _BODY_PREVIEW else text[: _BODY_PREVIEW - 3] + "..."


def _print_messages(out: Output, msgs: list[MessageExt], title: str) -> None:
    out.table(
        ["Msg id", "Topic", "Broker", "Queue", "Offset", "Tags", "Keys", "Stored", "Body"],
        [
            [
                m.msg_id,
                m.topic,
                m.broker_name,
                m.queue_id,
                m.queue_offset,
                m.tags or "",
                " ".join(m.keys),
                format_ms(m.store_timestamp),
                _preview(m),
            ]
            for m in msgs
        ],
        title=title,
        caption=f"{len(msgs)} message(s)",
    )


def _query(args: argparse.Namespace, admin: Admin, out: Output) -> int:
    if args.msg_id is not None:
        msgs = [admin.view_message(args.msg_id, args.topic)]
    elif args.unique_key is not None:
        _need(args.topic, "--unique-key needs -t/--topic")
        msgs = [admin.query_by_unique_key(args.topic, args.unique_key)]
    elif args.key is not None:
        _need(args.topic, "--key needs -t/--topic")
        msgs = admin.query_by_key(args.topic, args.key, max_num=args.max)
    else:
        _need(args.topic and args.broker and args.queue is not None, "--offset needs -t, -b and -q")
        msgs = [admin.query_by_offset(args.topic, args.broker, args.queue, args.offset)]
    tracks = {} if args.no_track else {m.offset_msg_id: admin.message_track(m) for m in msgs}
    if out.json_mode:
        out.json(
            [
                {**message_to_json(m), "tracks": [t.to_json_obj() for t in tracks.get(m.offset_msg_id, [])]}
                for m in msgs
            ]
        )
        return 0
    if not msgs:
        out.line("no message found")
        return 0
    if len(msgs) > 1:
        _print_messages(out, msgs, "Messages")
    for m in msgs:
        info = message_to_json(m)
        info.pop("properties")
        info["keys"] = " ".join(m.keys)
        info["store_timestamp"] = format_ms(m.store_timestamp)
        info["born_timestamp"] = format_ms(m.born_timestamp)
        out.kv({**info, **{f"property {k}": v for k, v in m.properties.items()}}, title=f"Message {m.msg_id}")
        if m.offset_msg_id in tracks:
            rows = [
                [t.consumer_group, t.track_type.value, t.exception_desc or ""]
                for t in tracks[m.offset_msg_id]
            ]
            out.table(
                ["Group", "State", "Detail"], rows, caption=None if rows else "no group consumes this topic"
            )
    return 0


def _need(ok: object, what: str) -> None:
    if not ok:
        raise ValueError(what)


def _read_file(args: argparse.Namespace) -> list[Message]:
    msgs = []
    for n, line in enumerate(Path(args.file).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        if args.jsonl:
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{args.file}:{n}: not JSON: {exc.msg}") from exc
            if not isinstance(obj, dict) or "body" not in obj:
                raise ValueError(f'{args.file}:{n}: expected an object with a "body"')
            msgs.append(
                Message(
                    args.topic,
                    str(obj["body"]).encode("utf-8"),
                    tags=obj.get("tags", args.tags),
                    keys=obj.get("keys", args.keys),
                    properties={str(k): str(v) for k, v in (obj.get("properties") or {}).items()},
                )
            )
        else:
            msgs.append(Message(args.topic, line.encode("utf-8"), tags=args.tags, keys=args.keys))
    return msgs


def _send(args: argparse.Namespace, admin: Admin, out: Output) -> int:
    if args.file is None:
        results = admin.send_messages(
            [Message(args.topic, args.body.encode("utf-8"), tags=args.tags, keys=args.keys)]
        )
    else:
        msgs = _read_file(args)
        with out.progress(f"sending to {args.topic}", len(msgs)) as update:
            results = admin.send_messages(msgs, progress=update)
    if out.json_mode:
        out.json(
            [
                {
                    "status": r.status.name,
                    "msg_id": r.msg_id,
                    "offset_msg_id": r.offset_msg_id,
                    "broker_name": r.message_queue.broker_name,
                    "queue_id": r.message_queue.queue_id,
                    "queue_offset": r.queue_offset,
                }
                for r in results
            ]
        )
        return 0
    out.table(
        ["Status", "Msg id", "Broker", "Queue", "Offset"],
        [
            [r.status.name, r.msg_id, r.message_queue.broker_name, r.message_queue.queue_id, r.queue_offset]
            for r in results[:50]
        ],
        caption=f"{len(results)} message(s) sent" + (" (first 50 shown)" if len(results) > 50 else ""),
    )
    return 0


def _consume(args: argparse.Namespace, admin: Admin, out: Output) -> int:
    msgs = admin.pull_messages(
        args.topic,
        broker_name=args.broker,
        queue_id=args.queue,
        offset=args.offset,
        count=args.count,
        begin_ms=parse_timestamp(args.begin) if args.begin else None,
        end_ms=parse_timestamp(args.end) if args.end else None,
    )
    if out.json_mode:
        out.json([message_to_json(m) for m in msgs])
    else:
        _print_messages(out, msgs, f"Messages of {args.topic}")
    return 0


def _print_resends(out: Output, results: list[ResendResult]) -> int:
    if out.json_mode:
        out.json([r.to_json_obj() for r in results])
    else:
        out.table(
            ["Msg id", "Group", "Method", "OK", "Result", "Client", "New msg id"],
            [
                [r.msg_id, r.group, r.method.value, r.ok, r.detail, r.client_id or "", r.new_msg_id or ""]
                for r in results
            ],
            caption=f"{sum(r.ok for r in results)}/{len(results)} resent",
        )
    failed = sum(not r.ok for r in results)
    if failed:
        out.note(f"error: {failed} of {len(results)} message(s) were not resent")
        return 1
    return 0


def _resend(args: argparse.Namespace, admin: Admin, out: Output) -> int:
    method = ResendMethod(args.method)
    results = [
        admin.resend_message(i, args.group, topic=args.topic, method=method, client_id=args.client_id)
        for i in args.msg_ids
    ]
    return _print_resends(out, results)


def _resend_dlq(args: argparse.Namespace, admin: Admin, out: Output) -> int:
    method = ResendMethod(args.method)
    with out.progress(f"resending dead letters of {args.group}", 0) as update:
        results = admin.resend_dlq(
            args.group, method=method, msg_ids=args.msg_ids, max_messages=args.max, progress=update
        )
    if not results:
        out.note(f"no dead letter of {args.group} to resend")
    return _print_resends(out, results)


def _tx_state(args: argparse.Namespace, admin: Admin, out: Output) -> int:
    state = admin.half_message_state(args.unique_key)
    view = {
        "uniqKey": state.uniq_key,
        "state": state.state.value,
        "realTopic": state.real_topic,
        "producerGroup": state.producer_group,
        "halfCopies": state.half_copies,
        "checkTimes": state.check_times,
        "resolvedMsgId": state.resolved_msg_id,
    }
    if out.json_mode:
        out.json(view)
    else:
        out.kv(view, title="transactional message")
    return 0
