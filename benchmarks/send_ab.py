"""Client CPU per blocking ``Producer.send``, two source trees A/B alternating (issue #27, workload 1).

One EmbeddedCluster (started from this tree, compiled unless ``ROCKETQ_PURE_PYTHON`` is set) serves
every run. Each round runs, for each source tree given (``--tree label=path/to/src``) and each build
(``--builds compiled,pure``), a child process that imports rocketq from that tree, starts a Producer,
warms up, then sends ``Message(topic, 100-byte body)`` one at a time for ``--seconds``, and reports:

- the client's CPU per send: ``time.process_time()`` (every thread of the process: the caller and
  the remoting I/O thread) over the window, divided by the sends;
- sends/s;
- the broker's CPU per send (``/proc/<pid>/stat`` utime+stime over the same window).

Prints every run and the medians per (tree, build). ``--aio`` measures workload A1 instead:
``await AsyncProducer.send`` one at a time on one event loop (uvloop when installed).
``--strace`` runs each (blocking) child once more under ``strace -c -f`` for a fixed number of
sends and prints the syscalls per send. A tree's compiled
build is the extensions built in place in that tree (``make`` there, or ``setup.py build_ext
--inplace``); the child says which build it loaded.

``python benchmarks/send_ab.py --tree base=/tmp/base/src --tree new=src --rounds 5``
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, os, sys, time
from rocketq import _build
from rocketq.client.producer import Producer
from rocketq.client.config import ProducerConfig
from rocketq.protocol.message import Message

namesrv, topic, seconds, count, broker_pid = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])

def cpu_of(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

p = Producer(namesrv_addr=namesrv, config=ProducerConfig(producer_group=f"ab_{os.getpid()}", send_msg_timeout_ms=30_000))
p.start()
payload = b"x" * 100
send = p.send
for _ in range(2000):
    send(Message(topic, payload))
if seconds <= 0:  # the strace run: a fixed count of sends
    for _ in range(count):
        send(Message(topic, payload))
    p.shutdown()
    sys.exit(0)
n = 0
b0 = cpu_of(broker_pid)
c0 = time.process_time()
w0 = time.perf_counter()
deadline = w0 + seconds
while True:
    for _ in range(200):
        send(Message(topic, payload))
    n += 200
    if time.perf_counter() >= deadline:
        break
w1 = time.perf_counter()
c1 = time.process_time()
b1 = cpu_of(broker_pid)
p.shutdown()
print(json.dumps({
    "build": "compiled" if _build.state().compiled else "pure",
    "file": __import__("rocketq").__file__,
    "client_us": (c1 - c0) / n * 1e6,
    "rate": n / (w1 - w0),
    "broker_us": (b1 - b0) / n * 1e6,
}))
"""


CHILD_AIO = r"""
import asyncio, json, os, sys, time
from rocketq import _build
from rocketq.aio import AsyncProducer
from rocketq.client.config import ProducerConfig
from rocketq.protocol.message import Message

namesrv, topic, seconds, broker_pid = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[5])
try:
    import uvloop
    new_loop = uvloop.new_event_loop
except ImportError:
    new_loop = asyncio.new_event_loop

def cpu_of(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

async def main():
    cfg = ProducerConfig(producer_group=f"aab_{os.getpid()}", send_msg_timeout_ms=30_000)
    async with AsyncProducer(namesrv_addr=namesrv, config=cfg) as p:
        payload = b"x" * 100
        for _ in range(2000):
            await p.send(Message(topic, payload))
        n = 0
        b0, c0, w0 = cpu_of(broker_pid), time.process_time(), time.perf_counter()
        deadline = w0 + seconds
        while True:
            for _ in range(200):
                await p.send(Message(topic, payload))
            n += 200
            if time.perf_counter() >= deadline:
                break
        w1, c1, b1 = time.perf_counter(), time.process_time(), cpu_of(broker_pid)
    return {
        "build": "compiled" if _build.state().compiled else "pure",
        "file": __import__("rocketq").__file__,
        "client_us": (c1 - c0) / n * 1e6,
        "rate": n / (w1 - w0),
        "broker_us": (b1 - b0) / n * 1e6,
    }

loop = new_loop()
print(json.dumps(loop.run_until_complete(main())))
loop.close()
"""


def _env(src: str, build: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(Path(src).resolve())
    env.pop("ROCKETQ_PURE_PYTHON", None)
    if build == "pure":
        env["ROCKETQ_PURE_PYTHON"] = "1"
    return env


def _run(
    src: str, build: str, namesrv: str, topic: str, seconds: float, broker_pid: int, *, aio: bool = False
) -> dict[str, float]:
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            CHILD_AIO if aio else CHILD,
            namesrv,
            topic,
            str(seconds),
            "0",
            str(broker_pid),
        ],
        env=_env(src, build),
        check=True,
        capture_output=True,
        text=True,
    )
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    if result["build"] != build:
        raise SystemExit(f"{src} {build}: the child loaded the {result['build']} build ({result['file']})")
    return result


def _strace(src: str, build: str, namesrv: str, topic: str, count: int) -> dict[str, float]:
    """Syscalls per send: strace -c -f over ``count`` sends minus over 0 sends (start-up)."""
    per: dict[str, dict[str, int]] = {}
    for n in (0, count):
        with tempfile.NamedTemporaryFile("r", suffix=".strace") as f:
            subprocess.run(
                [
                    "strace",
                    "-c",
                    "-f",
                    "-o",
                    f.name,
                    sys.executable,
                    "-c",
                    CHILD,
                    namesrv,
                    topic,
                    "0",
                    str(n),
                    "0",
                ],
                env=_env(src, build),
                check=True,
                capture_output=True,
            )
            calls: dict[str, int] = {}
            for line in f.read().splitlines():
                parts = line.split()
                if len(parts) >= 5 and parts[0][0].isdigit() and parts[-1] != "total":
                    calls[parts[-1]] = int(parts[3])
            per[str(n)] = calls
    names = set(per["0"]) | set(per[str(count)])
    return {
        name: round((per[str(count)].get(name, 0) - per["0"].get(name, 0)) / count, 2)
        for name in sorted(names)
        if (per[str(count)].get(name, 0) - per["0"].get(name, 0)) / count >= 0.05
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tree", action="append", required=True, help="label=path/to/src (repeat)")
    ap.add_argument("--builds", default="compiled,pure")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--strace", type=int, default=0, help="also count syscalls over this many sends")
    ap.add_argument("--aio", action="store_true", help="A1: await AsyncProducer.send (uvloop when installed)")
    args = ap.parse_args()
    trees = [tuple(t.split("=", 1)) for t in args.tree]
    builds = args.builds.split(",")

    sys.path.insert(0, str(HERE / "src"))
    from rocketq.testing.cluster import EmbeddedCluster

    results: dict[tuple[str, str], list[dict[str, float]]] = {}
    with EmbeddedCluster() as cluster:
        topic = "SendAB"
        cluster.create_topic(topic, 4)
        cluster.wait_route(topic)
        pid = cluster.broker_pid()
        for r in range(args.rounds):
            for label, src in trees:
                for build in builds:
                    res = _run(src, build, cluster.namesrv_addr, topic, args.seconds, pid, aio=args.aio)
                    results.setdefault((label, build), []).append(res)
                    print(
                        f"round {r} {label:>8} {build:>8}: client {res['client_us']:6.1f} us/send  "
                        f"{res['rate']:8.0f}/s  broker {res['broker_us']:6.1f} us/send",
                        flush=True,
                    )
        print("\nmedians")
        for (label, build), runs in results.items():
            print(
                f"{label:>8} {build:>8}: client {statistics.median(r['client_us'] for r in runs):6.1f} us/send  "
                f"{statistics.median(r['rate'] for r in runs):8.0f}/s  "
                f"broker {statistics.median(r['broker_us'] for r in runs):6.1f} us/send",
                flush=True,
            )
        if args.strace:
            for label, src in trees:
                for build in builds:
                    calls = _strace(src, build, cluster.namesrv_addr, topic, args.strace)
                    print(f"syscalls/send {label} {build}: {calls}", flush=True)


if __name__ == "__main__":
    main()
