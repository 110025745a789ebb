"""The compiled build against pure Python, A/B alternating (issue #27, step 3).

Each round runs, for each build in turn, a child process (``ROCKETQ_PURE_PYTHON=1`` for the pure
one: its client and the server it starts are both pure) that starts a fresh EmbeddedCluster and
measures:

- **raw sends**: a pre-encoded SEND_MESSAGE_V2 frame (100-byte body) written on a plain socket, one
  in flight, for ``--seconds``: only the broker works. Reported as sends/s and the broker's CPU
  (``/proc/<pid>/stat`` utime+stime) per send.
- **drain**: ``--drain`` messages pre-published in batches, then pulled by one PushConsumer
  (batches of 32, CONSUME_SUCCESS): msgs/s and the client process's CPU (``time.process_time``) per
  message.

Prints every round and the medians. ``python benchmarks/build_ab.py [--rounds 3]``; needs the
compiled build (``make``), otherwise both columns are the pure build and it says so.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

BODY = b"x" * 100
TOPIC = "BuildAB"


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _raw_sends(broker_addr: str, broker_pid: int, seconds: float) -> tuple[float, float]:
    from rocketq.protocol.codes import RequestCode
    from rocketq.protocol.frame import FrameDecoder, RemotingCommand
    from rocketq.protocol.headers import SendMessageRequestHeader, SendMessageRequestHeaderV2

    header = SendMessageRequestHeader(
        producer_group="ab-raw",
        topic=TOPIC,
        default_topic="TBW102",
        default_topic_queue_nums=4,
        queue_id=0,
        sys_flag=0,
        born_timestamp=int(time.time() * 1000),
        flag=0,
        properties="",
    )
    fields = SendMessageRequestHeaderV2.from_v1(header).to_ext_fields()
    frame = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, fields, BODY).encode()
    host, port = broker_addr.rsplit(":", 1)
    with socket.create_connection((host, int(port))) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        decoder = FrameDecoder()

        def one() -> None:
            sock.sendall(frame)
            while True:
                data = sock.recv(65536)
                if not data:
                    raise ConnectionError("broker closed the connection")
                if decoder.feed(data):
                    return

        for _ in range(200):  # warm-up
            one()
        n, cpu0, t0 = 0, _cpu_s(broker_pid), time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            one()
            n += 1
        elapsed, cpu = time.perf_counter() - t0, _cpu_s(broker_pid) - cpu0
    return n / elapsed, cpu / n * 1e6


def _drain(namesrv: str, n: int) -> tuple[float, float]:
    from rocketq.client import ConsumeConcurrentlyStatus, ConsumeFromWhere, Message, Producer, PushConsumer
    from rocketq.client.config import PushConsumerConfig

    with Producer(f"ab-p-{time.time_ns()}", namesrv_addr=namesrv) as producer:
        for start in range(0, n, 32):
            producer.send([Message(TOPIC, BODY) for _ in range(min(32, n - start))])
    seen = [0]
    done = threading.Event()

    def listener(msgs: list[object], context: object) -> ConsumeConcurrentlyStatus:
        seen[0] += len(msgs)
        if seen[0] >= n:
            done.set()
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    config = PushConsumerConfig(
        consumer_group=f"ab-c-{time.time_ns()}",
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        consume_message_batch_max_size=32,
    )
    consumer = PushConsumer(namesrv_addr=namesrv, config=config)
    consumer.subscribe(TOPIC, "*")
    consumer.register_message_listener(listener)
    cpu0, t0 = time.process_time(), time.perf_counter()
    consumer.start()
    try:
        if not done.wait(300):
            raise TimeoutError(f"drained {seen[0]} of {n}")
        elapsed, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    finally:
        consumer.shutdown()
    return n / elapsed, cpu / n * 1e6


def child(seconds: float, drain: int) -> None:
    from rocketq import _build
    from rocketq.testing.cluster import EmbeddedCluster

    with EmbeddedCluster(mapped_file_size_commit_log=128 * 1024 * 1024) as cluster:
        cluster.create_topic(TOPIC, 4)
        rate, broker_us = _raw_sends(cluster.broker_addrs[0], cluster.broker_pid(), seconds)
        drain_rate, client_us = _drain(cluster.namesrv_addr, drain)
    print(
        json.dumps(
            {
                "compiled": _build.state().compiled,
                "raw_sends_per_s": rate,
                "broker_us_per_send": broker_us,
                "drain_msgs_per_s": drain_rate,
                "client_us_per_msg": client_us,
            }
        )
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=3.0, help="raw-send window per run")
    parser.add_argument("--drain", type=int, default=50_000, help="messages drained per run")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.seconds, args.drain)
        return 0
    runs: dict[str, list[dict[str, float]]] = {"compiled": [], "pure": []}
    for rnd in range(1, args.rounds + 1):
        for build in ("compiled", "pure"):
            env = {k: v for k, v in os.environ.items() if k != "ROCKETQ_PURE_PYTHON"}
            if build == "pure":
                env["ROCKETQ_PURE_PYTHON"] = "1"
            cmd = [
                sys.executable,
                __file__,
                "--child",
                "--seconds",
                str(args.seconds),
                "--drain",
                str(args.drain),
            ]
            out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True, timeout=900)
            result = json.loads(out.stdout.strip().splitlines()[-1])
            if build == "compiled" and not result["compiled"]:
                print("note: no compiled build is loaded (run make): both columns are pure Python")
            runs[build].append(result)
            print(
                f"r{rnd} {build:<8} raw {result['raw_sends_per_s']:>8,.0f}/s broker "
                f"{result['broker_us_per_send']:5.1f} µs/send | drain {result['drain_msgs_per_s']:>8,.0f}/s "
                f"client {result['client_us_per_msg']:5.2f} µs/msg",
                flush=True,
            )
    print("\nmedians | raw sends/s | broker µs CPU/send | drain msgs/s | client µs CPU/msg")
    for build, rs in runs.items():
        med = {k: statistics.median(r[k] for r in rs) for k in rs[0] if k != "compiled"}
        print(
            f"{build:<8} | {med['raw_sends_per_s']:,.0f} | {med['broker_us_per_send']:.1f} "
            f"| {med['drain_msgs_per_s']:,.0f} | {med['client_us_per_msg']:.2f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
