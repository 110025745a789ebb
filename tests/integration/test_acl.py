"""ACL against a real rocketq server process (name server + broker) with aclEnable=true.

The accounts live in ``$ROCKETMQ_HOME/conf/plain_acl.yml`` (where Java looks); the broker
signs its registrations with the admin account, as the name server demands. Refusals are
Java's answer to an ``AclException``: SYSTEM_ERROR with the exception's simple description.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from rocketq.acl import AclClientRPCHook, SessionCredentials
from rocketq.client import Message, MessageQueue, Producer, PullConsumer, PullStatus
from rocketq.client.config import ClientConfig
from rocketq.errors import BrokerError
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frame import RemotingCommand
from rocketq.remoting.client import RemotingClient
from rocketq.testing.cluster import EmbeddedCluster
from rocketq.testing.waits import wait_until
from tests.conftest import send_request

pytestmark = pytest.mark.integration

ADMIN = SessionCredentials("adminUser1", "adminSecret1")
APP = SessionCredentials("appUser01", "appSecret01")
ACL = textwrap.dedent(
    """\
    accounts:
      - accessKey: adminUser1
        secretKey: adminSecret1
        admin: true
      - accessKey: appUser01
        secretKey: appSecret01
        defaultTopicPerm: DENY
        defaultGroupPerm: DENY
        topicPerms:
          - TopicOk=PUB|SUB
          - TopicSubOnly=SUB
        groupPerms:
          - GroupOk=SUB
      - accessKey: whiteUser1
        secretKey: whiteSecret1
        whiteRemoteAddress: 127.0.0.1
      - accessKey: outsideUser1
        secretKey: outsideSecret1
        whiteRemoteAddress: 10.0.0.*
        topicPerms:
          - TopicOk=PUB
    """
)
_instances = itertools.count()


def acl_cluster(home: Path) -> EmbeddedCluster:
    """A (not yet started) server with aclEnable and :data:`ACL` in ``home``/conf/plain_acl.yml,
    whose own client and broker registrations use the admin account."""
    (home / "conf").mkdir(exist_ok=True)
    (home / "conf" / "plain_acl.yml").write_text(ACL)
    return EmbeddedCluster(
        broker_conf={"aclEnable": "true", "accessKey": ADMIN.access_key, "secretKey": ADMIN.secret_key},
        env={"ROCKETMQ_HOME": str(home)},
        rpc_hook=AclClientRPCHook(ADMIN),
    )


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("rocketmq-home")


@pytest.fixture(scope="module")
def cluster(home: Path) -> Iterator[EmbeddedCluster]:
    with acl_cluster(home) as c:
        c.create_topic("TopicOk", 1)
        c.create_topic("TopicSubOnly", 1)
        yield c


def _client_config(cluster: EmbeddedCluster, creds: SessionCredentials) -> ClientConfig:
    return ClientConfig(
        namesrv_addr=cluster.namesrv_addr,
        instance_name=f"acl-{next(_instances)}",
        access_key=creds.access_key,
        secret_key=creds.secret_key,
    )


def _call(
    addr: str, request: RemotingCommand, creds: SessionCredentials | None, *, secret: str | None = None
) -> RemotingCommand:
    hook = None
    if creds is not None:
        hook = AclClientRPCHook(dataclasses.replace(creds, secret_key=secret or creds.secret_key))
    with RemotingClient(name="acl-test", rpc_hook=hook) as client:
        return client.invoke_sync(addr, request, 5000)


def _max_offset(cluster: EmbeddedCluster, topic: str) -> int:
    request = RemotingCommand.request(RequestCode.GET_MAX_OFFSET, {"topic": topic, "queueId": "0"})
    response = _call(cluster.broker_addrs[0], request, ADMIN)
    assert response.code == ResponseCode.SUCCESS, response.remark
    assert response.ext_fields is not None
    return int(response.ext_fields["offset"])


def _refused(response: RemotingCommand, text: str) -> None:
    assert response.code == ResponseCode.SYSTEM_ERROR
    assert response.remark is not None
    assert response.remark.startswith(f"org.apache.rocketmq.acl.common.AclException: {text}"), response.remark


def test_the_right_account_produces_and_consumes(cluster: EmbeddedCluster) -> None:
    before = _max_offset(cluster, "TopicOk")
    mq = MessageQueue("TopicOk", cluster.broker_names[0], 0)
    with Producer("ProducerOk", client_config=_client_config(cluster, APP)) as producer:
        for i in range(3):
            producer.send(Message("TopicOk", f"m{i}".encode()), queue=mq)
    with PullConsumer("GroupOk", client_config=_client_config(cluster, APP)) as consumer:
        result = consumer.pull(mq, "*", before, 32)
    assert result.pull_status is PullStatus.FOUND
    assert [m.body for m in result.msg_found_list] == [b"m0", b"m1", b"m2"]


@pytest.mark.parametrize(
    ("creds", "secret", "topic", "text"),
    [
        (APP, "wrongSecret", "TopicOk", "Check signature failed for accessKey=appUser01"),
        (SessionCredentials("stranger1", "whatever1"), None, "TopicOk", "No acl config for stranger1"),
        (None, None, "TopicOk", "No accessKey is configured"),
        (APP, None, "TopicSubOnly", "No default permission for topic:TopicSubOnly"),
        # outside its whiteRemoteAddress the account must sign correctly
        (
            SessionCredentials("outsideUser1", "outsideSecret1"),
            "wrongSecret",
            "TopicOk",
            "Check signature failed",
        ),
    ],
    ids=["wrong-secret", "unknown-key", "unsigned", "topic-without-pub", "outside-white-address"],
)
def test_refused_sends_write_nothing(
    cluster: EmbeddedCluster, creds: SessionCredentials | None, secret: str | None, topic: str, text: str
) -> None:
    before = _max_offset(cluster, topic)
    response = _call(cluster.broker_addrs[0], send_request(topic, b"nope"), creds, secret=secret)
    _refused(response, text)
    assert _max_offset(cluster, topic) == before


def test_producer_api_reports_the_refusal(cluster: EmbeddedCluster) -> None:
    before = _max_offset(cluster, "TopicSubOnly")
    with (
        Producer("ProducerNoPub", client_config=_client_config(cluster, APP)) as producer,
        pytest.raises(BrokerError) as info,
    ):
        producer.send(
            Message("TopicSubOnly", b"x"), queue=MessageQueue("TopicSubOnly", cluster.broker_names[0], 0)
        )
    assert "AclException: No default permission for topic:TopicSubOnly" in (info.value.remark or "")
    assert _max_offset(cluster, "TopicSubOnly") == before


def test_account_inside_its_white_address_needs_no_signature(cluster: EmbeddedCluster) -> None:
    # Java's PlainPermissionManager.validate: a matching whiteRemoteAddress passes at once.
    before = _max_offset(cluster, "TopicOk")
    creds = SessionCredentials("whiteUser1", "whiteSecret1")
    response = _call(cluster.broker_addrs[0], send_request("TopicOk", b"w"), creds, secret="wrongSecret")
    assert response.code == ResponseCode.SUCCESS, response.remark
    assert _max_offset(cluster, "TopicOk") == before + 1


def test_group_without_sub_cannot_pull(cluster: EmbeddedCluster) -> None:
    request = RemotingCommand.request(
        RequestCode.PULL_MESSAGE,
        {
            "consumerGroup": "GroupOther",
            "topic": "TopicOk",
            "queueId": "0",
            "queueOffset": "0",
            "maxMsgNums": "32",
            "sysFlag": "0",
            "commitOffset": "0",
            "suspendTimeoutMillis": "0",
            "subVersion": "0",
        },
    )
    _refused(_call(cluster.broker_addrs[0], request, APP), "No default permission for group:GroupOther")


def test_non_admin_cannot_delete_topics_or_reset_offsets(cluster: EmbeddedCluster) -> None:
    broker = cluster.broker_addrs[0]
    delete = RemotingCommand.request(RequestCode.DELETE_TOPIC_IN_BROKER, {"topic": "TopicOk"})
    _refused(
        _call(broker, delete, APP),
        "Need admin permission for request code=215, but accessKey=appUser01 is not",
    )
    reset = RemotingCommand.request(
        RequestCode.INVOKE_BROKER_TO_RESET_OFFSET,
        {"topic": "TopicOk", "group": "GroupOk", "timestamp": "0", "isForce": "true"},
    )
    _refused(_call(broker, reset, APP), "Need admin permission for request code=222")
    route = cluster.route("TopicOk")
    assert route is not None and route.queue_datas, "the topic is still there"


def test_name_server_writes_need_an_admin_and_reads_stay_open(cluster: EmbeddedCluster) -> None:
    ns = cluster.namesrv_addr

    def register() -> RemotingCommand:
        return RemotingCommand.request(
            RequestCode.REGISTER_BROKER,
            {
                "brokerName": cluster.broker_names[0],
                "brokerAddr": "127.0.0.1:1",
                "clusterName": "DefaultCluster",
                "haServerAddr": "127.0.0.1:2",
                "brokerId": "0",
                "compressed": "false",
            },
            b"{}",
        )

    _refused(_call(ns, register(), APP), "Need admin permission for request code=103")
    _refused(_call(ns, register(), None), "No accessKey is configured")

    def put() -> RemotingCommand:
        return RemotingCommand.request(
            RequestCode.PUT_KV_CONFIG, {"namespace": "ns", "key": "k", "value": "v"}
        )

    _refused(_call(ns, put(), APP), "Need admin permission")
    assert _call(ns, put(), ADMIN).code == ResponseCode.SUCCESS
    get = RemotingCommand.request(RequestCode.GET_KV_CONFIG, {"namespace": "ns", "key": "k"})
    answer = _call(ns, get, None)  # reads need no account
    assert answer.code == ResponseCode.SUCCESS and answer.ext_fields == {"value": "v"}
    route = cluster.route("TopicOk")  # unsigned read; the fake registration changed nothing
    assert route is not None and [b.broker_addrs for b in route.broker_datas] == [
        {0: cluster.broker_addrs[0]}
    ]


def test_plain_acl_yml_changes_apply_without_restart(cluster: EmbeddedCluster, home: Path) -> None:
    newcomer = SessionCredentials("lateUser1", "lateSecret1")
    request = RemotingCommand.request(RequestCode.GET_MAX_OFFSET, {"topic": "TopicOk", "queueId": "0"})
    _refused(_call(cluster.broker_addrs[0], request, newcomer), "No acl config for lateUser1")
    path = home / "conf" / "plain_acl.yml"
    path.write_text(ACL + "  - accessKey: lateUser1\n    secretKey: lateSecret1\n")
    wait_until(
        lambda: _call(cluster.broker_addrs[0], request, newcomer).code == ResponseCode.SUCCESS,
        timeout_s=10,
        what="the broker to reload plain_acl.yml",
    )


def test_cli_signs_with_options_or_environment(
    cluster: EmbeddedCluster, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from rocketq.cli.main import main

    ns = ["-n", cluster.namesrv_addr]
    # an ordinary account: the admin-only create is refused with Java's text, in one line
    assert (
        main(
            [
                "topic",
                "create",
                "-t",
                "CliTopic",
                *ns,
                "--access-key",
                APP.access_key,
                "--secret-key",
                APP.secret_key,
            ]
        )
        == 1
    )
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "Need admin permission for request code=17" in err
    # the admin account from the environment
    monkeypatch.setenv("ROCKETMQ_ACCESS_KEY", ADMIN.access_key)
    monkeypatch.setenv("ROCKETMQ_SECRET_KEY", ADMIN.secret_key)
    assert main(["topic", "create", "-t", "CliTopic", *ns]) == 0, capsys.readouterr().err
    assert ADMIN.secret_key not in capsys.readouterr().out
    wait_until(lambda: cluster.route("CliTopic") is not None, timeout_s=10, what="CliTopic's route")


def test_server_with_acl_needs_broker_credentials(tmp_path: Path) -> None:
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "plain_acl.yml").write_text(ACL)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "rocketq.cli.main",
            "server",
            "--namesrv-port",
            "0",
            "--broker-port",
            "0",
            "--store",
            str(tmp_path / "store"),
            "--set",
            "aclEnable=true",
        ],
        env={**os.environ, "ROCKETMQ_HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 1
    assert "give the broker one with --set accessKey=... --set secretKey=..." in proc.stderr
