"""Pull throughput of the broker by filter kind: none, a tag filter, an SQL92 filter.

Against an EmbeddedCluster (``rocketq server``, ``enablePropertyFilter=true``): one queue
holds N messages (100-byte bodies, tags TagA/TagB in turn, a property ``region`` eu/us in
turn and ``n`` = the message's number); a single reader drains it with raw PULL_MESSAGE
requests (32 per pull, the subscription in each request, records not decoded) for each
filter, keeping half of the messages for the tag and the SQL filters. Reported: messages
returned per second and offsets scanned per second, best of ``--rounds``.

    python benchmarks/filter_bench.py [--messages 100000] [--rounds 3] [--no-sql]

``--no-sql`` runs the none/tag cases only, so the script also measures a rocketq without
SQL92 support (PYTHONPATH pointing at another checkout's ``src``).

Measured for issue #24 (2-core VM shared with other jobs, load average 7-14, 50,000
messages, best of 5 per run; msgs/s returned, one figure per alternating run):

====================================  =========================  =========================
case                                  before (main d70a4fa)      after (issue-24)
====================================  =========================  =========================
no filter                             184k 186k 191k 139k 184k   189k 188k 180k 151k
tag filter (half kept)                164k 167k 171k 175k 159k   170k 172k 174k 172k 166k
SQL92 ``region = 'eu'`` (half kept)   n/a                        91k 97k (183-193k offsets/s)
SQL92 ``n BETWEEN .. AND region IN``  n/a                        74k 74k (148k offsets/s)
====================================  =========================  =========================

The spread is the machine's load, not the code: the tag path is not slower (its
consume-queue check is now one closure over unsigned codes). An SQL92 pull decodes each
candidate record's properties and evaluates the compiled expression: about half the tag
path's rate per returned message.
"""

from __future__ import annotations

import argparse
import time

from rocketq.client import Message, Producer
from rocketq.client.impl.pull_api_wrapper import build_pull_sys_flag
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frame import RemotingCommand
from rocketq.protocol.headers import PullMessageRequestHeader
from rocketq.protocol.message_queue import MessageQueue
from rocketq.testing.cluster import EmbeddedCluster

TOPIC = "FilterBench"
BODY = b"x" * 100


def fill(cluster: EmbeddedCluster, n: int) -> None:
    cluster.create_topic(TOPIC, 1)
    mq = MessageQueue(TOPIC, cluster.broker_names[0], 0)
    with Producer("filter_bench_p", namesrv_addr=cluster.namesrv_addr) as producer:
        for start in range(0, n, 256):
            producer.send(
                [
                    Message(
                        TOPIC,
                        BODY,
                        tags="TagA" if i % 2 else "TagB",
                        properties={"region": "eu" if i % 2 else "us", "n": str(i)},
                    )
                    for i in range(start, min(n, start + 256))
                ],
                queue=mq,
            )


def drain(
    cluster: EmbeddedCluster, n: int, subscription: str, expression_type: str
) -> tuple[float, float, int]:
    """Pull the whole queue; (returned msgs/s, scanned offsets/s, returned)."""
    offset = returned = 0
    start = time.perf_counter()
    while offset < n:
        header = PullMessageRequestHeader(
            consumer_group="filter_bench_g",
            topic=TOPIC,
            queue_id=0,
            queue_offset=offset,
            max_msg_nums=32,
            sys_flag=build_pull_sys_flag(commit_offset=False, suspend=False, subscription=True),
            commit_offset=0,
            suspend_timeout_millis=0,
            subscription=subscription,
            sub_version=0,
            expression_type=expression_type,
        )
        response = cluster.invoke(
            cluster.broker_addrs[0], RemotingCommand.request(RequestCode.PULL_MESSAGE, header.to_ext_fields())
        )
        if response.code not in (ResponseCode.SUCCESS, ResponseCode.PULL_RETRY_IMMEDIATELY):
            raise RuntimeError(f"pull answered {response.code}: {response.remark}")
        if response.code == ResponseCode.SUCCESS and response.body:
            body = response.body
            pos = 0
            while pos < len(body):
                pos += int.from_bytes(body[pos : pos + 4], "big")
                returned += 1
        offset = int((response.ext_fields or {})["nextBeginOffset"])
    elapsed = time.perf_counter() - start
    return returned / elapsed, n / elapsed, returned


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-sql", action="store_true")
    args = parser.parse_args()
    n = args.messages
    cases = [("none", "*", "TAG"), ("tag TagA", "TagA", "TAG")]
    if not args.no_sql:
        cases.append(("sql region = 'eu'", "region = 'eu'", "SQL92"))
        cases.append(
            ("sql n BETWEEN.. AND region IN", "n BETWEEN 0 AND 99999999 AND region IN ('eu')", "SQL92")
        )
    with EmbeddedCluster(broker_conf={"enablePropertyFilter": "true"}) as cluster:
        fill(cluster, n)
        for name, sub, kind in cases:
            best = max((drain(cluster, n, sub, kind) for _ in range(args.rounds)), key=lambda r: r[0])
            print(
                f"{name:<32} {best[0]:>10,.0f} msgs/s returned {best[1]:>10,.0f} offsets/s  ({best[2]:,} returned)"
            )


if __name__ == "__main__":
    main()
