"""A seeded mutator over the golden frames, and a driver that fires them at a server.

Used by ``tests/integration/test_server_hardening.py`` (a few thousand frames) and, for the
long run (>= 1 M frames), as a script::

    .venv/bin/python -m tests.tools.frame_fuzz --frames 1000000 --seed 1

which starts an :class:`~rocketq.testing.cluster.EmbeddedCluster`, fuzzes its broker and
name server while a good client sends, and prints frames, time, crashes, hangs, good-client
errors and the tracebacks found in the server logs.

Mutations (each frame picks one): flip random bytes anywhere; overwrite a JSON header
field with a hostile value (1e999, Infinity, NaN, -1e400, 2**70, deep nesting, objects,
arrays, booleans); nest ``extFields`` values; truncate the frame; lie in the length prefix
or the header length; change the serialize type; splice two frames together.
"""

from __future__ import annotations

import argparse
import json
import random
import socket
import struct
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass

from tests.conftest import load_golden_frames

__all__ = ["FuzzStats", "fuzz", "mutated_frames", "server_tracebacks"]

_HOSTILE: list[str] = [
    "1e999",
    "-1e999",
    "Infinity",
    "-Infinity",
    "NaN",
    str(2**70),
    str(-(2**64)),
    "1.5",
    "true",
    "null",
    '"x"',
    '"99999999999999999999"',
    "[1,2]",
    '{"a":{"b":1}}',
    "[" * 5000 + "]" * 5000,
    '{"a":' * 3000 + "1" + "}" * 3000,
]
_FIELDS = ["code", "flag", "opaque", "version", "language", "remark", "extFields", "serializeTypeCurrentRPC"]


def _bases() -> list[bytes]:
    return [f.frame for f in load_golden_frames() if f.dir == "client->server"]


def _reframe(header: bytes, body: bytes, stype: int = 0) -> bytes:
    return struct.pack(">iI", 4 + len(header) + len(body), (stype << 24) | len(header)) + header + body


def _split(frame: bytes) -> tuple[int, bytes, bytes]:
    (mark,) = struct.unpack_from(">I", frame, 4)
    hlen = mark & 0xFFFFFF
    return mark >> 24, frame[8 : 8 + hlen], frame[8 + hlen :]


def _mutate(rng: random.Random, frame: bytes, other: bytes) -> bytes:
    kind = rng.randrange(8)
    stype, header, body = _split(frame)
    if kind == 0:  # random bytes flipped anywhere
        data = bytearray(frame)
        for _ in range(rng.randint(1, 8)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        return bytes(data)
    if kind in (1, 2) and stype == 0:  # a hostile value in a JSON header field
        try:
            obj = json.loads(header)
        except ValueError:
            obj = {}
        field = rng.choice(_FIELDS)
        text = json.dumps({k: v for k, v in obj.items() if k != field})
        value = rng.choice(_HOSTILE)
        if kind == 2 and isinstance(obj.get("extFields"), dict) and obj["extFields"]:
            ext = dict(obj["extFields"])
            key = rng.choice(list(ext))
            ext_text = json.dumps({k: v for k, v in ext.items() if k != key})
            ext_text = ext_text[:-1] + ("," if len(ext_text) > 2 else "") + f'"{key}":{value}}}'
            text = json.dumps({k: v for k, v in obj.items() if k != "extFields"})
            text = text[:-1] + ("," if len(text) > 2 else "") + f'"extFields":{ext_text}}}'
        else:
            text = text[:-1] + ("," if len(text) > 2 else "") + f'"{field}":{value}}}'
        return _reframe(text.encode(), body, stype)
    if kind == 3:  # truncated (the rest arrives as the start of the next frame)
        return frame[: rng.randrange(1, len(frame))]
    if kind == 4:  # a lying length prefix
        total = rng.choice([0, 1, 3, -1, -(2**31), 2**31 - 1, len(frame) + rng.randint(-8, 8)])
        return struct.pack(">i", total) + frame[4:]
    if kind == 5:  # a lying header length or serialize type
        hlen = rng.choice([0, 1, 0xFFFFFF, len(header) + rng.randint(-5, 5)]) & 0xFFFFFF
        st = rng.choice([0, 1, 2, 255])
        return frame[:4] + struct.pack(">I", (st << 24) | hlen) + frame[8:]
    if kind == 6:  # the other serialize type on the same bytes
        return frame[:4] + struct.pack(">I", ((stype ^ 1) << 24) | len(header)) + frame[8:]
    # two frames spliced
    cut = rng.randrange(1, len(frame))
    return frame[:cut] + other[rng.randrange(len(other)) :]


def mutated_frames(seed: int) -> Iterator[bytes]:
    """An endless, reproducible stream of mutated golden client frames."""
    rng = random.Random(seed)
    bases = _bases()
    while True:
        yield _mutate(rng, rng.choice(bases), rng.choice(bases))


@dataclass
class FuzzStats:
    frames: int = 0
    connections: int = 0
    closed_by_server: int = 0
    refused: int = 0
    seconds: float = 0.0


def fuzz(addr: str, frames: int, seed: int, *, per_connection: int = 20) -> FuzzStats:
    """Send ``frames`` mutated frames to ``addr`` over fresh connections of
    ``per_connection`` frames each; answers are read and dropped. Raises if the server
    stops accepting connections."""
    host, port = addr.rsplit(":", 1)
    stats = FuzzStats()
    start = time.monotonic()
    source = mutated_frames(seed)
    sock: socket.socket | None = None
    sent_here = 0
    while stats.frames < frames:
        if sock is None:
            sock = socket.create_connection((host, int(port)), timeout=5.0)
            sock.setblocking(False)
            stats.connections += 1
            sent_here = 0
        data = next(source)
        try:
            _send_all(sock, data)
            stats.frames += 1
            sent_here += 1
            _drain(sock)
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            stats.closed_by_server += 1
            sock.close()
            sock = None
            continue
        if sent_here >= per_connection:
            sock.close()
            sock = None
    if sock is not None:
        sock.close()
    stats.seconds = time.monotonic() - start
    return stats


def _send_all(sock: socket.socket, data: bytes) -> None:
    view = memoryview(data)
    deadline = time.monotonic() + 5.0
    while view:
        try:
            n = sock.send(view)
        except BlockingIOError:
            _drain(sock)
            if time.monotonic() > deadline:
                raise TimeoutError("the server stopped reading for 5 s: a hang") from None
            time.sleep(0.001)
            continue
        view = view[n:]


def _drain(sock: socket.socket) -> None:
    try:
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                raise ConnectionResetError("closed by the server")
    except BlockingIOError:
        return


def server_tracebacks(log_text: str) -> list[str]:
    """Lines of a server log that start or report a traceback."""
    return [
        line
        for line in log_text.splitlines()
        if "Traceback" in line or "Fatal error" in line or "data_received() call failed" in line
    ]


def _main() -> int:
    from rocketq.protocol.codes import ResponseCode
    from rocketq.testing.cluster import EmbeddedCluster
    from tests.conftest import send_request

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--frames", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    with EmbeddedCluster() as cluster:
        cluster.create_topic("FuzzGood", 1)
        broker, namesrv = cluster.broker_addrs[0], cluster.namesrv_addr
        total = FuzzStats()
        errors = 0
        slowest = 0.0
        chunk = 10_000
        seed = args.seed
        while total.frames < args.frames:
            for addr in (broker, namesrv):
                stats = fuzz(addr, min(chunk, args.frames - total.frames), seed)
                seed += 1
                total.frames += stats.frames
                total.connections += stats.connections
                total.closed_by_server += stats.closed_by_server
                total.seconds += stats.seconds
                t0 = time.monotonic()
                response = cluster.invoke(broker, send_request("FuzzGood", b"good"))
                slowest = max(slowest, time.monotonic() - t0)
                errors += response.code != ResponseCode.SUCCESS
            print(f"{total.frames} frames, {total.seconds:.0f} s, good-client errors {errors}", flush=True)
        final = cluster.invoke(broker, send_request("FuzzGood", b"last"))
        alive = final.code == ResponseCode.SUCCESS
        logs = "\n".join(p.read_text(errors="replace") for p in cluster.store_dir.glob("*.log"))
    tracebacks = server_tracebacks(logs)
    print(
        json.dumps(
            {
                "frames": total.frames,
                "seconds": round(total.seconds, 1),
                "connections": total.connections,
                "closed_by_server": total.closed_by_server,
                "crashes": 0 if alive else 1,
                "hangs": 0,
                "good_client_errors": errors,
                "good_client_slowest_s": round(slowest, 3),
                "traceback_lines": len(tracebacks),
                "log_bytes": len(logs),
            }
        )
    )
    return 0 if alive and not tracebacks and not errors else 1


if __name__ == "__main__":
    sys.exit(_main())
