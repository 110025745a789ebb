"""Hostile input against real servers: fuzzed frames, a heartbeat flood (issue #21).

The servers run as processes on loopback (:class:`EmbeddedCluster`); the assertions are on
what a well-behaved client sees and on the servers' logs (no traceback, ever).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest

from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frame import RemotingCommand
from rocketq.protocol.heartbeat import (
    ConsumeFromWhere,
    ConsumerData,
    ConsumeType,
    HeartbeatData,
    MessageModel,
)
from rocketq.remoting.client import RemotingClient
from rocketq.testing.cluster import EmbeddedCluster
from tests.conftest import send_request
from tests.tools.frame_fuzz import fuzz, server_tracebacks

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def cluster() -> Iterator[EmbeddedCluster]:
    """A cluster of its own: its logs must hold only what these tests provoked."""
    with EmbeddedCluster(separate_namesrv=True) as c:
        yield c


def _logs(cluster: EmbeddedCluster) -> str:
    return "\n".join(p.read_text(errors="replace") for p in sorted(cluster.store_dir.glob("*.log")))


@pytest.mark.slow
def test_fuzzed_frames_close_connections_and_nothing_else(
    cluster: EmbeddedCluster, unique_name: Callable[..., str]
) -> None:
    topic = unique_name("Fuzz")
    cluster.create_topic(topic, 1)
    broker = cluster.broker_addrs[0]
    sent = 0
    for seed, addr in enumerate([broker, cluster.namesrv_addr] * 3):
        stats = fuzz(addr, 500, seed)
        sent += stats.frames
        # a good client keeps working after every round
        assert cluster.invoke(broker, send_request(topic, b"good")).code == ResponseCode.SUCCESS
        # The name server answers too. Its table itself may change: a mutated golden REGISTER_BROKER
        # is a valid registration of the captured broker-a (127.0.0.1:10911), which replaces the real
        # one until the connection closes (then broker-a is forgotten until its next heartbeat), as a
        # Java name server does; whether it is served before the close is a matter of timing.
        assert isinstance(cluster.cluster_info().broker_addr_table, dict)
    assert sent == 3000
    bad = server_tracebacks(_logs(cluster))
    assert not bad, bad[:5]
    assert "malformed frame" in _logs(cluster)  # refusals are logged, as one line each


def _heartbeat(client_id: str, group: str) -> RemotingCommand:
    data = HeartbeatData(
        client_id=client_id,
        consumer_data_set=[
            ConsumerData(
                group_name=group,
                consume_type=ConsumeType.CONSUME_PASSIVELY,
                message_model=MessageModel.CLUSTERING,
                consume_from_where=ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET,
                subscription_data_set=[],
                unit_mode=False,
            )
        ],
        producer_data_set=[],
    )
    return RemotingCommand.request(RequestCode.HEART_BEAT, None, data.to_json())


@pytest.mark.slow
def test_heartbeat_flood_does_not_stall_a_producer(
    cluster: EmbeddedCluster, unique_name: Callable[..., str]
) -> None:
    topic = unique_name("Flood")
    cluster.create_topic(topic, 4)
    broker = cluster.broker_addrs[0]
    prefix = unique_name("g")
    flood = RemotingClient()
    good = RemotingClient()
    flood.start()
    good.start()

    def timed_sends(n: int) -> list[float]:
        out = []
        for i in range(n):
            t0 = time.perf_counter()
            response = good.invoke_sync(broker, send_request(topic, b"m%d" % i, queue_id=i % 4), 3000)
            out.append(time.perf_counter() - t0)
            assert response.code == ResponseCode.SUCCESS, response.remark
        return sorted(out)

    try:
        baseline = timed_sends(100)  # what this (possibly loaded) machine does without a flood
        # 1,000 heartbeats naming new groups, oneway and as fast as they go out ...
        for i in range(1000):
            flood.invoke_oneway(broker, _heartbeat(f"{prefix}-c", f"{prefix}_{i}"))
        # ... while the producer sends and times each round trip
        latencies = timed_sends(300)
        # the flood was processed meanwhile: the last heartbeat is answered behind it
        last = flood.invoke_sync(broker, _heartbeat(f"{prefix}-c", f"{prefix}_last"), 10_000)
        assert last.code == ResponseCode.SUCCESS
    finally:
        flood.close()
        good.close()
    p99 = latencies[int(len(latencies) * 0.99) - 1]
    base_p99 = baseline[int(len(baseline) * 0.99) - 1]
    # 50 ms, or on a machine too loaded for that even without a flood, twice its own p99
    # (before issue #21 the flood took seconds and sends timed out after 3 s)
    limit = max(0.050, 2 * base_p99)
    assert p99 < limit, (
        f"producer p99 {p99 * 1000:.1f} ms during the flood (baseline {base_p99 * 1000:.1f} ms)"
    )
    assert not server_tracebacks(_logs(cluster))
