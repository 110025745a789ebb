"""The ``rocketq`` operator commands (topic, group, message, cluster) on the embedded cluster.

Commands run in-process through :func:`rocketq.cli.main.main` (one subprocess checks the
real entry point). Every command is run with ``--json`` and its stdout must be one valid
JSON document; errors must be one ``error:`` line on stderr with exit status 1.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from rocketq.cli.main import build_parser, main
from rocketq.client.config import ClientConfig
from rocketq.client.consumer.listener import ConsumeConcurrentlyContext, ConsumeConcurrentlyStatus
from rocketq.client.consumer.push import PushConsumer, PushConsumerConfig
from rocketq.client.producer import Producer
from rocketq.protocol.heartbeat import ConsumeFromWhere
from rocketq.protocol.message import Message, MessageExt
from rocketq.testing.cluster import EmbeddedCluster
from rocketq.testing.waits import wait_until

pytestmark = pytest.mark.integration

FAST = ClientConfig(
    poll_name_server_interval_ms=500, rebalance_interval_ms=1000, persist_consumer_offset_interval_ms=200
)
COMMANDS = {
    "topic": ["list", "route", "status", "create", "update", "delete", "stats", "consumers"],
    "group": [
        "progress",
        "connections",
        "status",
        "producers",
        "reset-offset",
        "client-offsets",
        "create",
        "update",
        "delete",
        "clone-offset",
    ],
    "message": ["query", "send", "consume", "resend", "resend-dlq", "trace"],
    "cluster": ["list", "runtime", "config", "ping"],
}


class Cli:
    def __init__(self, capsys: pytest.CaptureFixture[str], namesrv: str) -> None:
        self.capsys = capsys
        self.namesrv = namesrv

    def run(self, *argv: str, namesrv: bool = True) -> tuple[int, str, str]:
        self.capsys.readouterr()
        args = list(argv) + (["-n", self.namesrv] if namesrv else [])
        code = main(args)
        out, err = self.capsys.readouterr()
        return code, out, err

    def json(self, *argv: str) -> Any:
        code, out, err = self.run(*argv, "--json")
        assert code == 0, (argv, err)
        return json.loads(out)

    def human(self, *argv: str) -> str:
        code, out, err = self.run(*argv)
        assert code == 0, (argv, err)
        return out


@pytest.fixture
def cli(embedded_cluster: EmbeddedCluster, capsys: pytest.CaptureFixture[str]) -> Cli:
    return Cli(capsys, embedded_cluster.namesrv_addr)


class Recorder:
    def __init__(self, fail_once: str | None = None) -> None:
        self.seen: Counter[str] = Counter()
        self.fail_once = fail_once
        self.lock = threading.Lock()

    def __call__(self, msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        with self.lock:
            for m in msgs:
                body = m.body.decode()
                self.seen[body] += 1
                if body == self.fail_once:
                    self.fail_once = None
                    ctx.delay_level_when_next_consume = -1
                    return ConsumeConcurrentlyStatus.RECONSUME_LATER
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS


@pytest.fixture
def live_group(
    embedded_cluster: EmbeddedCluster, unique_name: Callable[..., str]
) -> Iterator[tuple[str, str, Recorder, PushConsumer]]:
    topic, group = unique_name("T"), unique_name("G")
    embedded_cluster.create_topic(topic, 2)
    recorder = Recorder(fail_once="dead")
    cfg = PushConsumerConfig(
        consumer_group=group, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
    )
    consumer = PushConsumer(config=cfg, namesrv_addr=embedded_cluster.namesrv_addr, client_config=FAST)
    consumer.subscribe(topic, "*")
    consumer.register_message_listener(recorder)
    consumer.start()
    try:
        wait_until(lambda: len(consumer.assigned_queues(topic)) == 2, what="rebalance")
        yield topic, group, recorder, consumer
    finally:
        consumer.shutdown()


def test_help_of_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "rocketq.cli.main", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0
    for name in COMMANDS:
        assert name in proc.stdout
    parser = build_parser()
    for command, subs in COMMANDS.items():
        for sub in [None, *subs]:
            argv = [command, "--help"] if sub is None else [command, sub, "--help"]
            with pytest.raises(SystemExit) as exit_:
                parser.parse_args(argv)
            assert exit_.value.code == 0
            text = capsys.readouterr().out
            assert "usage: rocketq " + command in text
            if sub is not None:
                assert "--namesrv" in text and "--json" in text, argv
            else:
                for s in subs:
                    assert s in text, (command, s)


def test_topic_commands(cli: Cli, embedded_cluster: EmbeddedCluster, unique_name: Callable[..., str]) -> None:
    topic = unique_name("T")
    created = cli.json("topic", "create", "-t", topic, "-r", "3", "-w", "3")
    assert created["brokers"] == embedded_cluster.broker_addrs
    embedded_cluster.wait_route(topic, 3)
    assert topic in cli.json("topic", "list")
    route = cli.json("topic", "route", "-t", topic)
    assert route["queues"][0]["write_queue_nums"] == 3 and route["brokers"][0]["broker_name"] == "broker-a"
    sent = cli.json("message", "send", "-t", topic, "-p", "hello", "--tags", "TagA", "-k", "k1 k2")
    assert sent[0]["status"] == "SEND_OK"
    status = cli.json("topic", "status", "-t", topic)
    assert status["total_messages"] == 1 and len(status["queues"]) == 3
    assert "Status of " + topic in cli.human("topic", "status", "-t", topic)
    stats = cli.json("topic", "stats", "-t", topic)
    assert stats == [
        {"topic": topic, "group": None, "accumulation": 0, "in_tps": stats[0]["in_tps"], "out_tps": 0.0,
         "in_msg_24h": 1, "out_msg_24h": 0}
    ]  # fmt: skip
    assert cli.json("topic", "consumers", "-t", topic) == []
    assert cli.json("topic", "update", "-t", topic, "-w", "4", "-r", "4", "-c", "DefaultCluster")["brokers"]
    embedded_cluster.wait_route(topic, 4)
    deleted = cli.json("topic", "delete", "-t", topic)
    assert deleted["brokers"] == embedded_cluster.broker_addrs
    assert embedded_cluster.route(topic) is None
    code, out, err = cli.run("topic", "status", "-t", topic)
    assert code == 1 and out == "" and err.startswith("error: ") and err.count("\n") == 1
    assert "No topic route info" in err


def test_cluster_commands(cli: Cli, embedded_cluster: EmbeddedCluster) -> None:
    view = cli.json("cluster", "list")
    assert view["clusters"] == {"DefaultCluster": ["broker-a"]}
    assert view["brokers"][0]["addr"] == embedded_cluster.broker_addrs[0]
    assert "broker-a" in cli.human("cluster", "list")
    runtime = cli.json("cluster", "runtime", "-b", embedded_cluster.broker_addrs[0])
    assert "msgPutTotalTodayNow" in runtime and "brokerVersionDesc" in runtime


def test_message_and_group_commands(
    cli: Cli,
    tmp_path: Path,
    live_group: tuple[str, str, Recorder, PushConsumer],
    unique_name: Callable[..., str],
) -> None:
    topic, group, recorder, consumer = live_group
    lines = tmp_path / "msgs.jsonl"
    lines.write_text(
        "\n".join(json.dumps({"body": f"file-{i}", "keys": f"fk{i}", "tags": "TagF"}) for i in range(5))
        + "\n",
        encoding="utf-8",
    )
    code, out, err = cli.run("message", "send", "-t", topic, "-f", str(lines), "--jsonl", "--json")
    assert code == 0, err
    sent = json.loads(out)
    assert len(sent) == 5 and {s["status"] for s in sent} == {"SEND_OK"}
    wait_until(lambda: sum(recorder.seen.values()) == 5, what="consumption")
    plain = tmp_path / "plain.txt"
    plain.write_text("dead\n", encoding="utf-8")
    dead_sent = cli.json("message", "send", "-t", topic, "-f", str(plain))
    wait_until(lambda: recorder.seen["dead"] == 1)

    # message queries, each with the consume state per group
    by_id = cli.json("message", "query", "-i", sent[0]["offset_msg_id"])
    assert by_id[0]["body"] == "file-0" and by_id[0]["keys"] == ["fk0"]
    by_uniq = cli.json("message", "query", "-u", sent[1]["msg_id"], "-t", topic)
    assert by_uniq[0]["body"] == "file-1"
    by_key = cli.json("message", "query", "-k", "fk2", "-t", topic)
    assert [m["body"] for m in by_key] == ["file-2"]
    s3 = sent[3]
    by_offset = cli.json("message", "query", "-o", str(s3["queue_offset"]), "-t", topic, "-b", "broker-a",
                         "-q", str(s3["queue_id"]))  # fmt: skip
    assert by_offset[0]["body"] == "file-3"
    # the queue offset is committed past the message by the next pull (the client's periodic
    # persist starts only after 10 s, as in Java)
    consumed_track = [{"consumer_group": group, "track_type": "CONSUMED", "exception_desc": None}]
    wait_until(
        lambda: cli.json("message", "query", "-i", sent[0]["offset_msg_id"])[0]["tracks"] == consumed_track,
        what="the CONSUMED state",
    )
    assert "CONSUMED" in cli.human("message", "query", "-i", sent[0]["offset_msg_id"])
    consumed = cli.json("message", "consume", "-t", topic, "-c", "100")
    assert sorted(m["body"] for m in consumed) == sorted([f"file-{i}" for i in range(5)] + ["dead"])

    # groups
    progress = cli.json("group", "progress", "-g", group)
    assert {q["client_id"] for q in progress["queues"]} == {consumer.client_id}
    assert "Total lag:" in cli.human("group", "progress", "-g", group)
    conns = cli.json("group", "connections", "-g", group)
    assert [c["client_id"] for c in conns["connections"]] == [consumer.client_id]
    status = cli.json("group", "status", "-g", group)
    assert {q["topic"] for q in status[consumer.client_id]["queues"]} >= {topic}
    assert topic in cli.human("group", "status", "-g", group, "-i", consumer.client_id)
    with Producer(unique_name("pg"), namesrv_addr=cli.namesrv, client_config=FAST) as producer:
        producer.send(Message(topic, b"from a producer"))

        def producers() -> list[str]:
            code, out, _ = cli.run("group", "producers", "-g", producer.producer_group, "-t", topic, "--json")
            return [p["client_id"] for p in json.loads(out)] if code == 0 else []

        wait_until(lambda: producers() == [producer.client_id], what="the producer's heartbeat")
    # rocketq consumers answer GET_CONSUMER_STATUS_FROM_CLIENT (221) with their offsets
    client_offsets = cli.json("group", "client-offsets", "-g", group, "-t", topic)
    assert list(client_offsets) == [consumer.client_id]
    assert {q["topic"] for q in client_offsets[consumer.client_id]} == {topic}

    # resend: directly to the live client, then the dead letter out of the DLQ
    direct = cli.json("message", "resend", "-g", group, "-i", sent[4]["offset_msg_id"])
    assert direct[0]["ok"] and direct[0]["detail"] == "CR_SUCCESS" and recorder.seen["file-4"] == 2
    wait_until(lambda: bool(cli.json("message", "consume", "-t", "%DLQ%" + group)), what="the dead letter")
    code, out, err = cli.run("message", "resend-dlq", "-g", group, "--json")
    assert code == 0, err
    assert [r["ok"] for r in json.loads(out)] == [True]
    wait_until(lambda: recorder.seen["dead"] == 2, what="the resent dead letter")
    assert dead_sent[0]["msg_id"]

    # online reset to the beginning: the live consumer gets everything again
    reset = cli.json("group", "reset-offset", "-g", group, "-t", topic, "-s", "earliest")
    assert reset["mode"] == "online" and {q["new_offset"] for q in reset["queues"]} == {0}
    wait_until(lambda: recorder.seen["file-0"] >= 2 and recorder.seen["file-2"] >= 2, what="re-consumption")
    assert "reset (online)" in cli.human("group", "reset-offset", "-g", group, "-t", topic, "-s", "latest")


def test_errors_are_one_line(
    cli: Cli, monkeypatch: pytest.MonkeyPatch, embedded_cluster: EmbeddedCluster
) -> None:
    monkeypatch.delenv("NAMESRV_ADDR", raising=False)
    code, out, err = cli.run("topic", "list", namesrv=False)
    assert (code, out) == (1, "") and err.startswith("error: ") and err.count("\n") == 1
    assert "NAMESRV_ADDR" in err
    monkeypatch.setenv("NAMESRV_ADDR", embedded_cluster.namesrv_addr)
    code, out, err = cli.run("topic", "list", "--json", namesrv=False)
    assert code == 0 and "TBW102" in json.loads(out)
    code, out, err = cli.run("group", "progress", "-g", "no_such_group_xyz")
    assert code == 1 and err.count("\n") == 1 and "consume stats" in err
    code, out, err = cli.run("group", "reset-offset", "-g", "g", "-t", "TBW102", "-s", "yesterday")
    assert code == 1 and err.startswith("error: invalid time")
    code, out, err = cli.run("message", "query", "-k", "x")
    assert code == 1 and "needs -t" in err
    code, out, err = cli.run("topic", "list", namesrv=False)
    assert code == 0
    code, out, err = cli.run("topic", "list", "-n", "127.0.0.1:1", "--timeout-ms", "500", namesrv=False)
    assert code == 1 and err.count("\n") == 1 and "name server" in err
    with pytest.raises(SystemExit) as exit_:
        main(["topic", "status"])
    assert exit_.value.code == 2
