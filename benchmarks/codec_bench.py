"""Codec throughput: message records and RemotingCommand frames.

Run ``python benchmarks/codec_bench.py`` (``--profile`` adds a cProfile of
decode_records). Each figure is the median of several timed repeats of CPU time
(``time.thread_time``, so other processes on a shared machine do not count); a repeat runs
the operation long enough (~0.2 s) to swamp the timer's resolution.

* records decoded/s: ``decode_records`` over a 32-record pull body (100-byte bodies,
  typical properties); also with the lazily parsed properties touched (``msg_id`` +
  ``tags``), which is what a consumer does with every message.
* records encoded/s: ``encode_record`` of one such record.
* frames encoded/s: a SEND_MESSAGE_V2-like request (13 extFields, 100-byte body).
* frames decoded/s: ``FrameDecoder.feed`` over a stream of those frames in 64 KiB chunks.
* a pull body through ``decode_pull_result`` (decode, stamp MIN/MAX_OFFSET, tag filter).
* the hot request/response headers both ways in both serializations (JSON and ROCKETMQ
  binary): typed header -> frame bytes, and frame bytes -> typed header, as the client
  and the broker each do them per pull and per send (``--headers``).
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import time
from collections.abc import Callable

from rocketq.client.api_results import PullResult, PullStatus
from rocketq.client.impl.pull_api_wrapper import decode_pull_result
from rocketq.protocol.codes import SerializeType
from rocketq.protocol.frame import FrameDecoder, RemotingCommand, decode_frame
from rocketq.protocol.headers import (
    CommandHeader,
    PullMessageRequestHeader,
    PullMessageResponseHeader,
    SendMessageRequestHeaderV2,
    SendMessageResponseHeader,
)
from rocketq.protocol.heartbeat import SubscriptionData
from rocketq.protocol.message import decode_records, encode_properties, encode_record
from rocketq.protocol.message_id import UniqueIdGenerator
from rocketq.protocol.message_queue import MessageQueue

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


_PULL = PullMessageRequestHeader(
    consumer_group="BenchConsumerGroup", topic="BenchTopic", queue_id=2, queue_offset=123_456, max_msg_nums=32,
    sys_flag=3, commit_offset=123_400, suspend_timeout_millis=15_000, subscription="*",
    sub_version=1_795_646_098_855, expression_type="TAG", bname="broker-a",
)  # fmt: skip
_PULL_RESPONSE = PullMessageResponseHeader(
    suggest_which_broker_id=0, next_begin_offset=123_488, min_offset=0, max_offset=200_000
)
_SEND = SendMessageRequestHeaderV2(
    producer_group="BenchProducerGroup", topic="BenchTopic", default_topic="TBW102", default_topic_queue_nums=4,
    queue_id=1, sys_flag=0, born_timestamp=1_795_308_008_147, flag=0,
    properties="UNIQ_KEY\x01C0000202" + "0" * 24 + "\x02WAIT\x01true", reconsume_times=0, bname="broker-a",
)  # fmt: skip
_SEND_RESPONSE = SendMessageResponseHeader(
    msg_id="7F00000100002A9F" + "0" * 12 + "1234", queue_id=1, queue_offset=1234
)
#: keys the broker adds to every send response (SendMessageProcessor)
_SEND_EXTRA = {"MSG_REGION": "DefaultRegion", "TRACE_ON": "true"}


def _header_rows(repeats: int) -> list[tuple[str, float]]:
    """Typed header <-> frame bytes for the hot commands, JSON vs ROCKETMQ (both sides)."""
    rows: list[tuple[str, float]] = []
    cases: list[tuple[str, int, CommandHeader, dict[str, str] | None, str | None, int]] = [
        ("PULL_MESSAGE request", 11, _PULL, None, None, 0),
        ("PULL_MESSAGE response", 0, _PULL_RESPONSE, None, "FOUND", 1),
        ("SEND_MESSAGE_V2 request", 310, _SEND, None, None, 0),
        ("SEND_MESSAGE_V2 response", 0, _SEND_RESPONSE, _SEND_EXTRA, None, 1),
    ]
    for name, code, header, extra, remark, flag in cases:
        cls = type(header)
        for stype in (SerializeType.JSON, SerializeType.ROCKETMQ):

            def encode(
                header: CommandHeader = header,
                extra: dict[str, str] | None = extra,
                stype: int = stype,
                head: tuple[int, int, str | None] = (code, flag, remark),
            ) -> bytes:
                ext = header.to_ext_fields(extra, serialize_type=stype)
                cmd = RemotingCommand(
                    code=head[0], flag=head[1], remark=head[2], ext_fields=ext, serialize_type=stype
                )
                return cmd.encode_head(0)

            frame = encode()

            def decode(frame: bytes = frame, cls: type[CommandHeader] = cls) -> CommandHeader:
                return cls.from_ext_fields(decode_frame(frame).ext_fields)

            label = f"{name} {stype.name}"
            rows.append((f"{label}: header -> frame ({len(frame)} B)", _rate(encode, 1, repeats)))
            rows.append((f"{label}: frame -> header", _rate(decode, 1, repeats)))
    return rows


def _rate(fn: Callable[[], object], units_per_call: int, repeats: int) -> float:
    """Median units per second over ``repeats`` timed runs of ~0.2 s each."""
    calls = 1
    while True:  # calibrate
        start = time.thread_time()
        for _ in range(calls):
            fn()
        if time.thread_time() - start > 0.05:
            break
        calls *= 2
    calls *= 4
    rates = []
    for _ in range(repeats):
        start = time.thread_time()
        for _ in range(calls):
            fn()
        rates.append(calls * units_per_call / (time.thread_time() - start))
    return statistics.median(rates)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--profile", action="store_true", help="cProfile decode_records")
    parser.add_argument("--headers", action="store_true", help="also the hot headers, JSON vs ROCKETMQ")
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

    mq = MessageQueue("BenchTopic", "broker-a", 1)
    everything = SubscriptionData(topic="BenchTopic", sub_string="*")

    def pull_result() -> None:
        found = PullResult(
            pull_status=PullStatus.FOUND,
            next_begin_offset=1032,
            min_offset=0,
            max_offset=200_000,
            suggest_which_broker_id=0,
            message_binary=body,
        )
        decode_pull_result(mq, found, everything)

    one = frames[0]
    rows = [
        (
            "records decoded/s (decode_records, 32 x 100 B)",
            _rate(lambda: decode_records(body), 32, args.repeats),
        ),
        ("records decoded/s + msg_id/tags touched", _rate(decode_touching, 32, args.repeats)),
        ("records/s through decode_pull_result", _rate(pull_result, 32, args.repeats)),
        ("records encoded/s (encode_record)", _rate(lambda: _record(7, props), 1, args.repeats)),
        ("frames encoded/s (SEND_MESSAGE_V2, 13 ext)", _rate(one.encode, 1, args.repeats)),
        ("frames decoded/s (FrameDecoder.feed)", _rate(feed_all, len(frames), args.repeats)),
    ]
    if args.headers:
        rows += _header_rows(args.repeats)
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
