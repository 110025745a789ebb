"""Round-trip throughput of the remoting layer on loopback.

Starts an echo :class:`~rocketq.remoting.server.RemotingServer` in a child process (so the
client does not share its GIL), then measures, each for ``--seconds``:

* ``raw``: a bare blocking socket that encodes, sends, receives and decodes one frame at a
  time: the floor any Python client pays; ``sync`` minus ``raw`` is the client's overhead
  (as added latency, and as client-process CPU time per call, all threads counted);
* ``sync``: :meth:`RemotingClient.invoke_sync` from one thread;
* ``sync x8``: the same from 8 threads;
* ``async``: :meth:`RemotingClient.invoke_async` with ``--inflight`` (1000) calls in flight.

Usage: ``.venv/bin/python benchmarks/remoting_bench.py [--seconds 3] [--inflight 1000]``.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import socket
import subprocess
import sys
import threading
import time

from rocketq.protocol.frame import FrameDecoder, RemotingCommand
from rocketq.remoting.client import RemotingClient
from rocketq.remoting.server import Channel, RemotingServer

BODY = b"x" * 128


class _Echo:
    async def process(self, channel: Channel, request: RemotingCommand) -> RemotingCommand | None:
        return request.make_response(0, ext_fields=request.ext_fields, body=request.body)


async def _serve() -> None:
    server = RemotingServer(name="bench")
    server.register_default_processor(_Echo())
    await server.start()
    print(server.port, flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    await server.stop()


def _request() -> RemotingCommand:
    return RemotingCommand.request(10, {"topic": "BenchTopic", "queueId": "0"}, BODY)


def bench_raw(addr: tuple[str, int], seconds: float) -> tuple[float, float]:
    sock = socket.create_connection(addr)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    decoder = FrameDecoder()
    n = 0
    end = time.perf_counter() + seconds
    start = time.perf_counter()
    cpu = time.process_time()
    while time.perf_counter() < end:
        req = _request()
        req.opaque = n
        sock.sendall(req.encode())
        frames: list[RemotingCommand] = []
        while not frames:
            frames = decoder.feed(sock.recv(65536))
        n += 1
    elapsed = time.perf_counter() - start
    cpu = time.process_time() - cpu
    sock.close()
    return n / elapsed, cpu / n


def bench_sync(client: RemotingClient, addr: str, seconds: float, threads: int) -> tuple[float, float]:
    counts = [0] * threads
    end = time.perf_counter() + seconds

    def work(i: int) -> None:
        while time.perf_counter() < end:
            client.invoke_sync(addr, _request(), 3000)
            counts[i] += 1

    start = time.perf_counter()
    cpu = time.process_time()
    workers = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    n = sum(counts)
    return n / (time.perf_counter() - start), (time.process_time() - cpu) / n


def bench_async(client: RemotingClient, addr: str, seconds: float, inflight: int) -> float:
    sem = threading.Semaphore(inflight)
    done = [0]

    def on_done(fut: concurrent.futures.Future[RemotingCommand]) -> None:
        fut.result()
        done[0] += 1
        sem.release()

    end = time.perf_counter() + seconds
    start = time.perf_counter()
    sent = 0
    while time.perf_counter() < end:
        sem.acquire()
        client.invoke_async(addr, _request(), 10000).add_done_callback(on_done)
        sent += 1
    for _ in range(inflight):
        sem.acquire()
    return done[0] / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--inflight", type=int, default=1000)
    args = parser.parse_args()
    if args.serve:
        asyncio.run(_serve())
        return
    child = subprocess.Popen(
        [sys.executable, __file__, "--serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None
        port = int(child.stdout.readline())
        addr = f"127.0.0.1:{port}"
        raw, raw_cpu = bench_raw(("127.0.0.1", port), args.seconds)
        print(
            f"raw socket, 1 thread     : {raw:10,.0f} round trips/s  ({1e6 / raw:6.1f} us each, "
            f"client CPU {raw_cpu * 1e6:5.1f} us/call)"
        )
        with RemotingClient(name="bench") as client:
            client.invoke_sync(addr, _request(), 3000)
            sync, sync_cpu = bench_sync(client, addr, args.seconds, 1)
            print(
                f"invoke_sync, 1 thread    : {sync:10,.0f} round trips/s  ({1e6 / sync:6.1f} us each, "
                f"client CPU {sync_cpu * 1e6:5.1f} us/call; latency over raw {1e6 / sync - 1e6 / raw:5.1f} us)"
            )
            sync8, _ = bench_sync(client, addr, args.seconds, 8)
            print(f"invoke_sync, 8 threads   : {sync8:10,.0f} round trips/s")
            asyn = bench_async(client, addr, args.seconds, args.inflight)
            print(f"invoke_async, {args.inflight} in flight: {asyn:10,.0f} round trips/s")
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait(10)


if __name__ == "__main__":
    main()
