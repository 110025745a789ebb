"""Codec throughput: message records and RemotingCommand frames.

Run ``python benchmarks/codec_bench.py`` (``--profile`` adds a cProfile of
decode_records). Each figure is the median of several timed repeats
(``time.perf_counter``); a repeat runs the operation long enough (~0.2 s) to swamp the
timer's resolution.

* records decoded/s: ``decode_records`` over a 32-record pull body (100-byte bodies,
  typical properties); also with the lazily parsed properties touched (``msg_id`` +
  ``tags``), which is what a consumer does with every message.
* records encoded/s: ``encode_record`` of one such record.
* frames encoded/s: a SEND_MESSAGE_V2-like request (13 extFields, 100-byte body).
* frames decoded/s: ``FrameDecoder.feed`` over a stream of those frames in 64 KiB chunks.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import time
from collections.abc import Callable

from rocketq.protocol.frame import FrameDecoder, RemotingCommand
from rocketq.protocol.message import decode_records, encode_properties, encode_record
from rocketq.protocol.message_id import UniqueIdGenerator

RECORDS_PER_BODY = 32
BODY = bytes(range(100))


def _props(i: int, uniq: str) -> str:
    return encode_properties(
        {
            "KEYS": f"order-{i}",
            "UNIQ_KEY": uniq,
            "CLUSTER": "DefaultCluster",
            "TAGS": "TagA",
            "WAIT": "true",
            "color": "red",
        },
        java_order=True,
    )


def _record(i: int, props: str) -> bytes:
    return encode_record(
        topic="BenchTopic",
        queue_id=1,
        flag=0,
        queue_offset=1000 + i,
        physical_offset=1_000_000 + 300 * i,
        sys_flag=0,
        born_timestamp=1_795_308_008_147 + i,
        born_host=("10.0.0.7", 52950),
        store_timestamp=1_795_308_008_165 + i,
        store_host=("10.0.0.1", 10911),
        reconsume_times=0,
        prepared_transaction_offset=0,
        body=BODY,
        properties=props,
    )


def _pull_body() -> bytes:
    gen = UniqueIdGenerator(b"\x0a\x00\x00\x07")
    return b"".join(_record(i, _props(i, gen.next_id())) for i in range(RECORDS_PER_BODY))


def _send_frame(opaque: int) -> RemotingCommand:
    ext = {
        "a": "BenchProducerGroup",
        "b": "BenchTopic",
        "c": "TBW102",
        "d": "4",
        "e": "1",
        "f": "0",
        "g": "1795308008147",
        "h": "0",
        "i": "KEYS\x01order-1\x02UNIQ_KEY\x01C0000202" + "0" * 24 + "\x02WAIT\x01true\x02TAGS\x01TagA",
        "j": "0",
        "k": "false",
        "m": "false",
        "n": "broker-a",
    }
    cmd = RemotingCommand.request(310, ext, BODY)
    cmd.opaque = opaque
    return cmd


def _rate(fn: Callable[[], object], units_per_call: int, repeats: int) -> float:
    """Median units per second over ``repeats`` timed runs of ~0.2 s each."""
    calls = 1
    while True:  # calibrate
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        if time.perf_counter() - start > 0.05:
            break
        calls *= 2
    calls *= 4
    rates = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        rates.append(calls * units_per_call / (time.perf_counter() - start))
    return statistics.median(rates)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--profile", action="store_true", help="cProfile decode_records")
    args = parser.parse_args()

    body = _pull_body()
    assert len(decode_records(body)) == RECORDS_PER_BODY

    def decode_touching() -> None:
        for m in decode_records(body):
            _ = m.msg_id, m.tags

    props = _props(7, UniqueIdGenerator(b"\x0a\x00\x00\x07").next_id())
    frames = [_send_frame(i) for i in range(1000)]
    stream = b"".join(f.encode() for f in frames)
    chunks = [stream[i : i + 65536] for i in range(0, len(stream), 65536)]

    def feed_all() -> None:
        dec = FrameDecoder()
        n = 0
        for c in chunks:
            n += len(dec.feed(c))
        assert n == len(frames)

    one = frames[0]
    rows = [
        (
            "records decoded/s (decode_records, 32 x 100 B)",
            _rate(lambda: decode_records(body), 32, args.repeats),
        ),
        ("records decoded/s + msg_id/tags touched", _rate(decode_touching, 32, args.repeats)),
        ("records encoded/s (encode_record)", _rate(lambda: _record(7, props), 1, args.repeats)),
        ("frames encoded/s (SEND_MESSAGE_V2, 13 ext)", _rate(one.encode, 1, args.repeats)),
        ("frames decoded/s (FrameDecoder.feed)", _rate(feed_all, len(frames), args.repeats)),
    ]
    width = max(len(name) for name, _ in rows)
    print(f"{'operation':<{width}}  {'per second':>12}  {'us each':>8}")
    for name, rate in rows:
        print(f"{name:<{width}}  {rate:>12,.0f}  {1e6 / rate:>8.2f}")
    print(
        f"(pull body {len(body)} bytes, frame {len(stream) // len(frames)} bytes, median of {args.repeats})"
    )

    if args.profile:
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(3000):
            decode_records(body)
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(8)


if __name__ == "__main__":
    main()
