"""The mqadmin commands added for operators (issue #20): consumer group create/update/delete
(updateSubGroup, deleteSubGroup), cloneGroupOffset, consumerProgress of every group,
getBrokerConfig, the ``cluster ping`` health check, the disk column and the offline-reset
warning. Against the embedded cluster; commands run in-process through ``main``."""

from __future__ import annotations

import json
import re
from collections.abc import Callable

import pytest

from rocketq.client.config import ClientConfig
from rocketq.client.consumer.listener import ConsumeConcurrentlyStatus
from rocketq.client.consumer.push import PushConsumer
from rocketq.protocol.codes import RequestCode
from rocketq.protocol.frame import RemotingCommand
from rocketq.testing.cluster import EmbeddedCluster
from rocketq.testing.waits import wait_until
from tests.integration.test_cli import Cli

pytestmark = pytest.mark.integration


@pytest.fixture
def cli(embedded_cluster: EmbeddedCluster, capsys: pytest.CaptureFixture[str]) -> Cli:
    return Cli(capsys, embedded_cluster.namesrv_addr)


def _groups_on_broker(cluster: EmbeddedCluster) -> dict[str, dict[str, object]]:
    request = RemotingCommand.request(RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
    body = cluster.invoke(cluster.broker_addrs[0], request).body or b"{}"
    return dict(json.loads(body)["subscriptionGroupTable"])


def test_group_create_update_delete(
    cli: Cli, embedded_cluster: EmbeddedCluster, unique_name: Callable[..., str]
) -> None:
    group = unique_name("G")
    created = cli.json(
        "group", "create", "-g", group, "--retry-max-times", "3", "--consume-broadcast-enable", "false"
    )
    assert created["brokers"] == embedded_cluster.broker_addrs
    stored = _groups_on_broker(embedded_cluster)[group]
    assert stored["retryMaxTimes"] == 3 and stored["consumeBroadcastEnable"] is False
    cli.json("group", "update", "-g", group, "-b", embedded_cluster.broker_addrs[0], "--retry-max-times", "5")
    assert _groups_on_broker(embedded_cluster)[group]["retryMaxTimes"] == 5
    with pytest.raises(SystemExit) as usage:
        cli.run("group", "create", "-g", group, "--consume-enable", "maybe")
    assert usage.value.code == 2 and "true or false" in cli.capsys.readouterr().err
    assert cli.json("group", "delete", "-g", group)["brokers"] == embedded_cluster.broker_addrs
    assert group not in _groups_on_broker(embedded_cluster)


def test_clone_offset(cli: Cli, embedded_cluster: EmbeddedCluster, unique_name: Callable[..., str]) -> None:
    topic, src, dest = unique_name("T"), unique_name("src"), unique_name("dest")
    embedded_cluster.create_topic(topic, 2)
    for i in range(4):
        cli.json("message", "send", "-t", topic, "-p", f"m{i}")
    cli.json("group", "reset-offset", "-g", src, "-t", topic, "-s", "latest", "--mode", "offline")
    cloned = cli.json("group", "clone-offset", "-s", src, "-d", dest, "-t", topic)
    assert cloned["brokers"] == embedded_cluster.broker_addrs
    progress = cli.json("group", "progress", "-g", dest, "--no-clients")
    assert progress["total_lag"] == 0
    assert sum(q["consumer_offset"] for q in progress["queues"]) == 4


def test_progress_of_every_group_and_offline_reset_warning(
    cli: Cli, embedded_cluster: EmbeddedCluster, unique_name: Callable[..., str]
) -> None:
    topic, group = unique_name("T"), unique_name("live")
    embedded_cluster.create_topic(topic, 2)
    consumer = PushConsumer(
        group,
        namesrv_addr=embedded_cluster.namesrv_addr,
        client_config=ClientConfig(poll_name_server_interval_ms=500, rebalance_interval_ms=1000),
    )
    consumer.subscribe(topic, "*")
    consumer.register_message_listener(lambda msgs, ctx: ConsumeConcurrentlyStatus.CONSUME_SUCCESS)
    consumer.start()
    try:
        wait_until(lambda: len(consumer.assigned_queues(topic)) == 2, what="rebalance")

        def row() -> dict[str, object] | None:
            return next((r for r in cli.json("group", "progress") if r["group"] == group), None)

        wait_until(lambda: row() is not None, 15, "the group in the summary")  # %RETRY% topic registered
        summary = row()
        assert summary is not None and summary["clients"] == 1 and summary["message_model"] == "CLUSTERING"
        code, _, err = cli.run(
            "group", "reset-offset", "-g", group, "-t", topic, "-s", "earliest", "--mode", "offline"
        )
        assert code == 0 and "warning: 1 client(s)" in err and "--mode online" in err
    finally:
        consumer.shutdown()


def test_broker_config_ping_and_disk(cli: Cli, embedded_cluster: EmbeddedCluster) -> None:
    addr = embedded_cluster.broker_addrs[0]
    config = cli.json("cluster", "config", "-b", addr)
    assert config["brokerName"] == "broker-a" and config["listenPort"] == addr.rsplit(":", 1)[1]
    ping = cli.json("cluster", "ping")
    assert ping["ok"] is True and [b["addr"] for b in ping["brokers"]] == [addr]
    assert ping["brokers"][0]["rtt_ms"] > 0
    listing = cli.human("cluster", "list")
    assert re.search(r"\b\d{1,3}\.\d%", listing), listing  # a percentage, not 0.4213...
