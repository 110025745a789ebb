"""UPDATE_BROKER_CONFIG (25) / ``rocketq cluster update-config`` (mqadmin updateBrokerConfig)
against a cluster of its own (the test changes the broker's permission and restarts it).

What it proves: a ``brokerPermission`` change is in the name server's route when the command
returns (``registerBrokerAll`` at once) and a read-only broker refuses sends to ordered topics
with NO_PERMISSION while it still stores others (``AbstractSendMessageProcessor.msgCheck``);
store settings apply live (``maxMessageSize``); GET_BROKER_CONFIG's version moves; the change
survives a restart (``<store>/config/broker.properties``); unknown keys, bad values and keys
that cannot change while the broker runs are refused with a remark naming them and change
nothing.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator

import pytest

from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frame import RemotingCommand
from rocketq.testing.cluster import EmbeddedCluster
from tests.conftest import send_request
from tests.integration.test_cli import Cli

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def cluster() -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster() as c:
        yield c


@pytest.fixture
def cli(cluster: EmbeddedCluster, capsys: pytest.CaptureFixture[str]) -> Cli:
    return Cli(capsys, cluster.namesrv_addr)


def _config(cluster: EmbeddedCluster) -> tuple[dict[str, str], int]:
    """GET_BROKER_CONFIG: the settings and the configuration data version's counter."""
    response = cluster.invoke(cluster.broker_addrs[0], RemotingCommand.request(RequestCode.GET_BROKER_CONFIG))
    assert response.code == ResponseCode.SUCCESS
    lines = (response.body or b"").decode().splitlines()
    props = dict(line.split("=", 1) for line in lines if "=" in line)
    return props, int(json.loads((response.ext_fields or {})["version"])["counter"])


def _send(cluster: EmbeddedCluster, topic: str, body: bytes = b"x") -> RemotingCommand:
    return cluster.invoke(cluster.broker_addrs[0], send_request(topic, body))


def test_bad_keys_are_refused_and_change_nothing(cli: Cli, cluster: EmbeddedCluster) -> None:
    before = _config(cluster)
    addr = cluster.broker_addrs[0]
    cases = [
        (
            "brokerPermision",
            "4",
            ["unknown broker config key 'brokerPermision'", "did you mean brokerPermission"],
        ),
        ("listenPort", "1234", ["listenPort cannot change while the broker runs", "restart"]),
        ("brokerName", "other", ["brokerName cannot change while the broker runs", "broker.conf"]),
        ("brokerPermission", "rw", ["brokerPermission='rw' is not a whole number"]),
        ("brokerPermission", "99", ["broker_permission must be PermName bits"]),
        ("cleanFileForciblyEnable", "ture", ["is not true or false"]),
    ]
    for key, value, expected in cases:
        code, _, err = cli.run("cluster", "update-config", "-b", addr, "-k", key, "-v", value)
        assert code == 1, (key, err)
        for text in expected:
            assert text in " ".join(err.split()), (key, err)
    # a restart-only key given with its running value is no change, so it is accepted
    assert cli.json("cluster", "update-config", "-b", addr, "-k", "brokerName", "-v", "broker-a")[
        "brokers"
    ] == [addr]
    assert _config(cluster) == before


def test_read_only_broker_refuses_ordered_sends_and_the_change_survives_a_restart(
    cli: Cli, cluster: EmbeddedCluster, unique_name: Callable[..., str]
) -> None:
    topic = unique_name("T")
    ordered = unique_name("O")
    cluster.create_topic(topic, 2)
    cluster.create_topic(ordered, 2, order=True)
    assert _send(cluster, topic).code == ResponseCode.SUCCESS
    props, version = _config(cluster)
    assert props["brokerPermission"] == "6"

    done = cli.json("cluster", "update-config", "-c", "DefaultCluster", "-k", "brokerPermission", "-v", "4")
    assert done == {"key": "brokerPermission", "value": "4", "brokers": cluster.broker_addrs}
    # registered before the answer: no waiting for the periodic registration
    route = cluster.route(topic)
    assert route is not None and {qd.perm for qd in route.queue_datas} == {4}
    # msgCheck refuses only ordered topics (the registration just made told the broker which
    # topics are ordered); the route keeps producers away from the others
    refused = _send(cluster, ordered)
    assert refused.code == ResponseCode.NO_PERMISSION
    assert refused.remark == "the broker[127.0.0.1] sending message is forbidden"
    assert _send(cluster, topic).code == ResponseCode.SUCCESS
    props, after = _config(cluster)
    assert props["brokerPermission"] == "4" and after == version + 1

    cluster.restart_broker()
    props, _ = _config(cluster)
    assert props["brokerPermission"] == "4"
    route = cluster.route(topic)
    assert route is not None and {qd.perm for qd in route.queue_datas} == {4}
    assert _send(cluster, ordered).code == ResponseCode.NO_PERMISSION

    out = cli.human(
        "cluster", "update-config", "-b", cluster.broker_addrs[0], "-k", "brokerPermission", "-v", "6"
    )
    assert f"update broker config success, {cluster.broker_addrs[0]}" in out
    route = cluster.route(topic)
    assert route is not None and {qd.perm for qd in route.queue_datas} == {6}
    assert _send(cluster, ordered).code == ResponseCode.SUCCESS


def test_store_setting_applies_live(
    cli: Cli, cluster: EmbeddedCluster, unique_name: Callable[..., str]
) -> None:
    topic = unique_name("T")
    cluster.create_topic(topic, 1)
    addr = cluster.broker_addrs[0]
    assert _send(cluster, topic, b"y" * 2000).code == ResponseCode.SUCCESS
    cli.json("cluster", "update-config", "-b", addr, "-k", "maxMessageSize", "-v", "1024")
    try:
        assert _send(cluster, topic, b"y" * 2000).code == ResponseCode.MESSAGE_ILLEGAL
        assert _send(cluster, topic, b"y" * 100).code == ResponseCode.SUCCESS
    finally:
        cli.json("cluster", "update-config", "-b", addr, "-k", "maxMessageSize", "-v", str(4 * 1024 * 1024))
    assert _send(cluster, topic, b"y" * 2000).code == ResponseCode.SUCCESS
