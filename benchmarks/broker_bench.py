"""The broker's own numbers: sends, batches, a pull drain and its memory, on 4 queues.

Against an EmbeddedCluster (one ``rocketq server`` process: name server + broker), with
100-byte bodies: sync sends from one thread, batches of 32 from one thread, a pull-consumer
drain of N messages (every queue pulled in turn, 32 per pull, records decoded), and the
server's RSS when idle and at the end. Reference (a real Apache RocketMQ 4.9.7 broker with its
Java client, same machine class): 6,000 sync sends/s (p99 0.7 ms), 55,000 msgs/s in batches of
32, 55,000 msgs/s drain; about 200 MB RSS at idle.

``--cpu`` measures instead what one send costs the broker's process (utime + stime from
``/proc/<pid>/stat``), alternating ``--rounds`` times between ``Producer.send`` (workload 1,
one in flight) and raw sends (pre-encoded SEND_MESSAGE_V2 frames over a blocking socket, one
in flight: the client costs next to nothing, so the broker's own cost shows), medians printed.
On a shared machine CPU per send is the steadier figure; msgs/s moves with the neighbours.

``--in-process`` takes the sockets and the event loop out as well: a broker started in this
process (no name server), SEND_MESSAGE_V2 frames fed straight to its server protocol
(``data_received``, a transport that only counts writes), CPU time per send from the frame's
bytes to the answer handed to the transport; ``--batch 32`` feeds SEND_BATCH_MESSAGE frames
instead and reports per message. It measures the broker's Python work alone.

    python benchmarks/broker_bench.py [--seconds 3] [--drain 200000]
    python benchmarks/broker_bench.py --cpu [--seconds 3] [--rounds 3] [--sync-flush] [--store-parent /dev/shm]
    python benchmarks/broker_bench.py --in-process [--sends 20000] [--batch 1]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import socket
import statistics
import tempfile
import time
from pathlib import Path

from rocketq.broker.broker import BrokerController
from rocketq.broker.config import BrokerConfig
from rocketq.broker.store.config import MessageStoreConfig
from rocketq.client import Message, Producer, PullConsumer
from rocketq.client.api_results import PullStatus
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frame import FrameDecoder, RemotingCommand
from rocketq.protocol.headers import SendMessageRequestHeaderV2
from rocketq.protocol.message import encode_batch
from rocketq.protocol.message_queue import MessageQueue
from rocketq.protocol.route import TopicConfig
from rocketq.remoting.helper import parse_addr
from rocketq.remoting.server import _ServerProtocol
from rocketq.testing.cluster import EmbeddedCluster

BODY = b"x" * 100


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def sync_sends(producer: Producer, topic: str, seconds: float) -> tuple[float, float]:
    lat: list[float] = []
    end = time.perf_counter() + seconds
    start = time.perf_counter()
    while time.perf_counter() < end:
        t = time.perf_counter()
        producer.send(Message(topic, BODY))
        lat.append((time.perf_counter() - t) * 1000)
    rate = len(lat) / (time.perf_counter() - start)
    return rate, statistics.quantiles(lat, n=100)[98]


def batch_sends(producer: Producer, topic: str, seconds: float) -> float:
    batch = [Message(topic, BODY) for _ in range(32)]
    n = 0
    end = time.perf_counter() + seconds
    start = time.perf_counter()
    while time.perf_counter() < end:
        producer.send(batch)
        n += 32
    return n / (time.perf_counter() - start)


def pull_drain(cluster: EmbeddedCluster, puller: PullConsumer, producer: Producer, n: int) -> float:
    topic = f"BenchPull{time.time_ns()}"
    cluster.create_topic(topic, 4)
    batch = [Message(topic, BODY) for _ in range(32)]
    for _ in range(n // 32):
        producer.send(batch)
    queues = [MessageQueue(topic, cluster.broker_names[0], q) for q in range(4)]
    offsets = dict.fromkeys(queues, 0)
    got = 0
    start = time.perf_counter()
    active = list(queues)
    while active:
        for mq in list(active):
            result = puller.pull(mq, "*", offsets[mq], 32)
            if result.pull_status is not PullStatus.FOUND:
                active.remove(mq)
                continue
            got += len(result.msg_found_list)
            offsets[mq] = result.next_begin_offset
    return got / (time.perf_counter() - start)


def _cpu_s(pid: int) -> float:
    """utime + stime of a process, seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def raw_sends(broker_addr: str, topic: str, seconds: float) -> int:
    """Pre-encoded SEND_MESSAGE_V2 frames (a producer's properties: UNIQ_KEY, WAIT), one in
    flight over a blocking socket; returns how many were stored."""
    frames = []
    for queue_id in range(4):
        header = SendMessageRequestHeaderV2(
            producer_group="bench-raw",
            topic=topic,
            default_topic="TBW102",
            default_topic_queue_nums=4,
            queue_id=queue_id,
            sys_flag=0,
            born_timestamp=int(time.time() * 1000),
            flag=0,
            properties=f"UNIQ_KEY\x017F0000010000{queue_id:020X}\x02WAIT\x01true\x02",
            reconsume_times=0,
        )
        frames.append(RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, header.to_ext_fields(), BODY))
    decoder = FrameDecoder()
    sent = 0
    with socket.create_connection(parse_addr(broker_addr)) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            frame = frames[sent % 4]
            frame.opaque = sent
            sock.sendall(frame.encode())
            answers: list[RemotingCommand] = []
            while not answers:
                chunk = sock.recv(65536)
                if not chunk:
                    raise ConnectionError("broker closed the connection")
                answers = decoder.feed(chunk)
            if answers[0].code != ResponseCode.SUCCESS:
                raise RuntimeError(f"raw send refused: {answers[0].code} {answers[0].remark}")
            sent += 1
    return sent


def cpu_per_send(
    seconds: float, rounds: int, *, sync_flush: bool = False, store_parent: str | None = None
) -> None:
    """``--cpu``: broker CPU per send, workload 1 against raw frames, alternating.

    ``sync_flush``: the broker runs ``flushDiskType=SYNC_FLUSH`` (every send acknowledged after
    a sync, workload 6); ``store_parent``: the store goes to a new directory there (a tmpfs
    such as /dev/shm takes the disk's own sync time out and leaves the broker's cost)."""
    samples: dict[str, list[tuple[float, float]]] = {"Producer.send": [], "raw frames": []}
    conf = {"flushDiskType": "SYNC_FLUSH"} if sync_flush else {}
    store = tempfile.mkdtemp(prefix="rocketq-bench-", dir=store_parent) if store_parent else None
    try:
        _cpu_rounds(samples, seconds, rounds, conf, store)
    finally:
        if store is not None:
            shutil.rmtree(store, ignore_errors=True)
    print(f"{'one in flight':<24} {'msgs/s':>10} {'broker CPU us/send':>20}   (medians of {rounds})")
    for name, values in samples.items():
        rate = statistics.median(v[0] for v in values)
        cpu = statistics.median(v[1] for v in values)
        print(f"{name:<24} {rate:>10,.0f} {cpu:>20.1f}")


def _cpu_rounds(
    samples: dict[str, list[tuple[float, float]]],
    seconds: float,
    rounds: int,
    conf: dict[str, str],
    store: str | None,
) -> None:
    with EmbeddedCluster(
        broker_conf=conf, store_dir=store, mapped_file_size_commit_log=256 * 1024 * 1024
    ) as cluster:
        pid = cluster.broker_pid(0)
        cluster.create_topic("BenchBrokerCpu", 4)
        with Producer("bench-broker-cpu", namesrv_addr=cluster.namesrv_addr) as producer:
            for _ in range(2_000):  # warm both paths
                producer.send(Message("BenchBrokerCpu", BODY))
            raw_sends(cluster.broker_addrs[0], "BenchBrokerCpu", 0.5)
            for _ in range(rounds):
                for name, values in samples.items():
                    before = _cpu_s(pid)
                    start = time.perf_counter()
                    if name == "raw frames":
                        n = raw_sends(cluster.broker_addrs[0], "BenchBrokerCpu", seconds)
                    else:
                        n = 0
                        end = start + seconds
                        while time.perf_counter() < end:
                            producer.send(Message("BenchBrokerCpu", BODY))
                            n += 1
                    elapsed = time.perf_counter() - start
                    values.append((n / elapsed, (_cpu_s(pid) - before) / n * 1e6))


class _CountingTransport(asyncio.Transport):
    """Stands in for a socket: counts what the server writes."""

    def __init__(self) -> None:
        super().__init__()
        self.writes = 0

    def get_extra_info(self, name: str, default: object = None) -> object:
        return ("127.0.0.1", 50001) if name in ("peername", "sockname") else default

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.writes += 1

    def is_closing(self) -> bool:
        return False

    def close(self) -> None:
        pass


def _send_frames(topic: str, count: int, batch: int) -> list[bytes]:
    """SEND_MESSAGE_V2 frames (``batch`` 1) or SEND_BATCH_MESSAGE frames of ``batch`` messages,
    each message with its own UNIQ_KEY, round robin over 4 queues."""
    frames = []
    for i in range(count):
        header = SendMessageRequestHeaderV2(
            producer_group="bench-in-process",
            topic=topic,
            default_topic="TBW102",
            default_topic_queue_nums=4,
            queue_id=i % 4,
            sys_flag=0,
            born_timestamp=1_700_000_000_000 + i,
            flag=0,
            properties=f"UNIQ_KEY\x017F0000010000{i:020X}\x02WAIT\x01true\x02"
            if batch == 1
            else "WAIT\x01true",
            reconsume_times=0,
            batch=batch > 1,
        )
        if batch == 1:
            code, body = RequestCode.SEND_MESSAGE_V2, BODY
        else:
            msgs = []
            for j in range(batch):
                msg = Message(topic, BODY)
                msg.properties["UNIQ_KEY"] = f"7F0000010000{i:010X}{j:010X}"
                msgs.append(msg)
            code, body = RequestCode.SEND_BATCH_MESSAGE, encode_batch(msgs)
        command = RemotingCommand.request(code, header.to_ext_fields(), body)
        command.opaque = i
        frames.append(command.encode())
    return frames


async def _in_process(sends: int, batch: int) -> float:
    root = tempfile.mkdtemp(prefix="rocketq-bench-")
    try:
        store = MessageStoreConfig(store_path_root_dir=root, mapped_file_size_commit_log=1 << 30)
        broker = BrokerController(BrokerConfig(broker_ip1="127.0.0.1", listen_port=0, message_store=store))
        await broker.start()
        protocol = _ServerProtocol(broker.server)
        try:
            broker.topic_config_manager.update_topic_config(
                TopicConfig(topic_name="BenchInProcess", read_queue_nums=4, write_queue_nums=4)
            )
            transport = _CountingTransport()
            protocol.connection_made(transport)
            warm = max(sends // 10, 1)
            frames = _send_frames("BenchInProcess", sends + warm, batch)
            for frame in frames[:warm]:
                protocol.data_received(frame)
            start = time.process_time()
            for frame in frames[warm:]:
                protocol.data_received(frame)
            elapsed = time.process_time() - start
            if transport.writes != sends + warm:
                raise RuntimeError(f"{transport.writes} answers for {sends + warm} sends")
            return elapsed / (sends * batch) * 1e6
        finally:
            protocol.connection_lost(None)  # the server's stop waits for its connections
            await broker.shutdown()
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--drain", type=int, default=200_000)
    parser.add_argument("--cpu", action="store_true", help="broker CPU per send, one in flight")
    parser.add_argument("--rounds", type=int, default=3, help="--cpu: alternating rounds")
    parser.add_argument("--sync-flush", action="store_true", help="--cpu: flushDiskType=SYNC_FLUSH")
    parser.add_argument("--store-parent", help="--cpu: put the store under this directory (e.g. /dev/shm)")
    parser.add_argument("--in-process", action="store_true", help="the send path without sockets")
    parser.add_argument("--sends", type=int, default=20_000, help="--in-process: frames fed")
    parser.add_argument("--batch", type=int, default=1, help="--in-process: messages per frame")
    args = parser.parse_args()
    if args.in_process:
        per_msg = asyncio.run(_in_process(args.sends, args.batch))
        what = "SEND_MESSAGE_V2" if args.batch == 1 else f"SEND_BATCH_MESSAGE of {args.batch}"
        print(f"in-process {what}: {per_msg:.1f} us CPU per message")
        return
    if args.cpu:
        cpu_per_send(args.seconds, args.rounds, sync_flush=args.sync_flush, store_parent=args.store_parent)
        return
    cluster = EmbeddedCluster(mapped_file_size_commit_log=256 * 1024 * 1024)
    with cluster:
        pid = cluster.broker_pid(0)
        idle = _rss_mb(pid)
        cluster.create_topic("BenchBroker", 4)
        with Producer("bench-broker", namesrv_addr=cluster.namesrv_addr) as producer:
            producer.send(Message("BenchBroker", BODY))
            rate, p99 = sync_sends(producer, "BenchBroker", args.seconds)
            batch = batch_sends(producer, "BenchBroker", args.seconds)
            puller = PullConsumer("bench-puller", namesrv_addr=cluster.namesrv_addr)
            puller.start()
            try:
                drain = pull_drain(cluster, puller, producer, args.drain)
            finally:
                puller.shutdown()
        busy = _rss_mb(pid)
    print(f"{'scenario':<36} {'result':>24}")
    print(f"{'sync send, 1 thread':<36} {rate:>12,.0f} msg/s p99 {p99:.2f} ms")
    print(f"{'batches of 32, 1 thread':<36} {batch:>18,.0f} msg/s")
    print(f"{'pull drain, 4 queues':<36} {drain:>18,.0f} msg/s")
    print(f"{'server RSS idle / after':<36} {idle:>10.0f} MB / {busy:.0f} MB")


if __name__ == "__main__":
    main()
