"""A real third-party RocketMQ client against rocketq: ali-ons 3.12.0 (pure JavaScript, npm).

ali-ons speaks RocketMQ 4.x remoting and was verified against a real Apache RocketMQ 4.9.7
(../shared/INTEROP.md). Here its producer sends messages to a rocketq server and a second
ali-ons consumer (another group, from the first offset) must receive every one of them.
Node 20 and `npm ci` in tests/interop are part of `make test`; a missing Node fails loudly.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from rocketq.testing.cluster import EmbeddedCluster

pytestmark = [pytest.mark.interop, pytest.mark.integration]

HERE = Path(__file__).resolve().parent


def _node() -> str:
    node = shutil.which("node")
    if node is None:
        raise RuntimeError(
            "Node.js (20+) is required for the interop tests: install it (e.g. apt-get install nodejs)"
        )
    if not (HERE / "node_modules" / "ali-ons").is_dir():
        raise RuntimeError("ali-ons is not installed: run `make interop-deps` (npm ci in tests/interop)")
    return node


def _roundtrip(
    node: str, cluster: EmbeddedCluster, topic: str, count: int, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [node, str(HERE / "roundtrip.js"), cluster.namesrv_addr, topic, str(count)],
        cwd=HERE,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, **(env or {})},
    )


def test_ali_ons_producer_and_consumer_roundtrip(tmp_path: Path) -> None:
    node = _node()
    topic = "InteropAliOnsTopic"
    count = 20
    with EmbeddedCluster(store_dir=tmp_path / "store") as cluster:
        # ali-ons does not fall back to TBW102: the topic must exist and be routed first
        cluster.create_topic(topic, queue_nums=4)
        proc = _roundtrip(node, cluster, topic, count)
    _check_roundtrip(proc, count)


def _check_roundtrip(proc: subprocess.CompletedProcess[str], count: int) -> None:
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    assert lines, (
        f"no result from node (rc={proc.returncode})\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    )
    result = json.loads(lines[-1])
    assert result["ok"], json.dumps(result, indent=2)[:4000]
    assert proc.returncode == 0
    assert len(result["sent"]) == count
    assert {s["status"] for s in result["sent"]} == {"SEND_OK"}
    received = result["received"]
    assert sorted(received) == sorted(f"interop message {i}" for i in range(count))
    for i in range(count):
        got = received[f"interop message {i}"]
        assert got["tags"] == ("TagB" if i % 2 else "TagA")
        assert got["keys"] == [f"interop-key-{i}"] or got["keys"] == f"interop-key-{i}"


ACL_FILE = """\
accounts:
  - accessKey: clusterAdmin1
    secretKey: clusterSecret1
    admin: true
  - accessKey: onsUser01
    secretKey: onsSecret01
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - InteropAclTopic=PUB|SUB
"""


def test_ali_ons_signs_against_a_broker_with_acl(tmp_path: Path) -> None:
    """ali-ons' accessKeyId/accessKeySecret (it signs as AclClientRPCHook, plus its
    OnsChannel field) are accepted by rocketq's PlainAccessValidator; a wrong secret is not."""
    from rocketq.acl import AclClientRPCHook, SessionCredentials

    node = _node()
    home = tmp_path / "home"
    (home / "conf").mkdir(parents=True)
    (home / "conf" / "plain_acl.yml").write_text(ACL_FILE)
    topic = "InteropAclTopic"
    with EmbeddedCluster(
        store_dir=tmp_path / "store",
        broker_conf={"aclEnable": "true", "accessKey": "clusterAdmin1", "secretKey": "clusterSecret1"},
        env={"ROCKETMQ_HOME": str(home)},
        rpc_hook=AclClientRPCHook(SessionCredentials("clusterAdmin1", "clusterSecret1")),
    ) as cluster:
        cluster.create_topic(topic, queue_nums=2)
        good = _roundtrip(
            node,
            cluster,
            topic,
            10,
            {"ROCKETMQ_ACCESS_KEY": "onsUser01", "ROCKETMQ_SECRET_KEY": "onsSecret01"},
        )
        bad = _roundtrip(
            node,
            cluster,
            topic,
            1,
            {"ROCKETMQ_ACCESS_KEY": "onsUser01", "ROCKETMQ_SECRET_KEY": "wrongSecret"},
        )
    _check_roundtrip(good, 10)
    assert bad.returncode != 0
    assert "still failed" in bad.stdout, bad.stdout[-2000:]  # ali-ons does not show the remark
    log = (tmp_path / "store" / "broker-a.log").read_text()
    assert "Check signature failed for accessKey=onsUser01" in log
