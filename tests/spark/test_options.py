"""Options and offsets of the Spark connector (pure: no Spark, no broker)."""

from __future__ import annotations

import itertools
import platform
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.errors import IllegalArgumentError
from rocketq.protocol.message_queue import MessageQueue
from rocketq.spark.offsets import EARLIEST, from_json_obj, split_limit, to_json_obj
from rocketq.spark.options import include_properties, parse_read_options, parse_write_options
from rocketq.spark.source import plan_ranges

NS = "127.0.0.1:9876"


def test_defaults_differ_between_batch_and_stream() -> None:
    batch = parse_read_options({"nameserver": NS, "topic": "a, b"}, streaming=False)
    assert batch.topics == ("a", "b")
    assert batch.starting_offsets == "earliest"
    assert batch.fail_on_data_loss is True
    assert batch.pull_batch_size == 1024
    assert batch.tags == ()
    assert batch.include_properties is True
    stream = parse_read_options({"NameServer": NS, "TOPIC": "a", "maxOffsetsPerTrigger": "7"}, streaming=True)
    assert stream.starting_offsets == "latest"
    assert stream.max_offsets_per_trigger == 7


def test_json_offsets_and_tags() -> None:
    opts = parse_read_options(
        {
            "nameserver": NS,
            "topic": "a",
            "startingOffsets": '{"a": {"broker-a:0": 5, "broker-a:1": -2}}',
            "endingOffsets": '{"a": {"broker-a:0": -1}}',
            "subExpression": "TagA || TagB",
            "failOnDataLoss": "FALSE",
        },
        streaming=False,
    )
    assert opts.starting_offsets == {"a": {"broker-a:0": 5, "broker-a:1": -2}}
    assert opts.ending_offsets == {"a": {"broker-a:0": -1}}
    assert sorted(opts.tags) == ["TagA", "TagB"]
    assert opts.fail_on_data_loss is False


@pytest.mark.parametrize(
    ("options", "streaming", "message"),
    [
        ({"topic": "a"}, False, "nameserver is required"),
        ({"nameserver": NS}, False, "topic is required"),
        ({"nameserver": NS, "topic": "a", "bogus": "1"}, False, "unknown read option"),
        ({"nameserver": NS, "topic": "a", "startingOffsets": "{nope"}, False, "not JSON"),
        ({"nameserver": NS, "topic": "a", "startingOffsets": '{"b": {}}'}, False, "not read"),
        (
            {"nameserver": NS, "topic": "a", "startingOffsets": '{"a": {"q0": 1}}'},
            False,
            "brokerName:queueId",
        ),
        ({"nameserver": NS, "topic": "a", "endingOffsets": "latest"}, True, "batch reads only"),
        ({"nameserver": NS, "topic": "a", "endingOffsets": "earliest"}, False, "cannot be earliest"),
        ({"nameserver": NS, "topic": "a", "maxOffsetsPerTrigger": "5"}, False, "streaming reads only"),
        ({"nameserver": NS, "topic": "a", "maxOffsetsPerTrigger": "0"}, True, ">= 1"),
        ({"nameserver": NS, "topic": "a", "failOnDataLoss": "yes"}, False, "true or false"),
        ({"nameserver": NS, "topic": "a", "includeProperties": "no"}, True, "true or false"),
        ({"nameserver": NS, "topic": "a", "minPartitions": "0"}, False, ">= 1"),
        ({"nameserver": NS, "topic": "a", "endingTimestamp": "5"}, True, "endingTimestamp is for batch"),
        (
            {"nameserver": NS, "topic": "a", "endingTimestamp": "5", "endingOffsets": "latest"},
            False,
            "exclude",
        ),
        ({"nameserver": NS, "topic": "a", "endingTimestamp": "-1"}, False, ">= 0"),
        (
            {"nameserver": NS, "topic": "a", "startingOffsets": "earliest", "startingTimestamp": "1"},
            False,
            "exclude",
        ),
        ({"nameserver": "nohost", "topic": "a"}, False, "host:port"),
        ({"nameserver": NS, "topic": "bad topic"}, False, "illegal characters"),
    ],
)
def test_bad_read_options(options: dict[str, str], streaming: bool, message: str) -> None:
    with pytest.raises(IllegalArgumentError, match=message):
        parse_read_options(options, streaming=streaming)


def test_include_properties_option() -> None:
    off = parse_read_options({"nameserver": NS, "topic": "a", "IncludeProperties": " FALSE "}, streaming=True)
    assert off.include_properties is False
    # the data source's schema() reads the option alone, before the other options are parsed
    assert include_properties({"includeproperties": "false"}) is False
    assert include_properties({"INCLUDEPROPERTIES": "true"}) is True
    assert include_properties({}) is True
    with pytest.raises(IllegalArgumentError, match="includeproperties must be true or false"):
        include_properties({"includeProperties": "0"})


def _plan(min_partitions: str | None, sizes: dict[int, tuple[int, int]]) -> list[tuple[int, int, int]]:
    opts = {"nameserver": NS, "topic": "t"} | ({"minPartitions": min_partitions} if min_partitions else {})
    options = parse_read_options(opts, streaming=False)
    start = {MessageQueue("t", "broker-a", q): a for q, (a, _) in sizes.items()}
    end = {MessageQueue("t", "broker-a", q): b for q, (_, b) in sizes.items()}
    return [(r.queue_id, r.start, r.end) for r in plan_ranges(options, start, end)]


def test_min_partitions_splits_ranges_in_proportion_to_their_size() -> None:
    sizes = {0: (0, 900), 1: (100, 400), 2: (5, 5)}  # queue 2 has nothing to read
    assert _plan(None, sizes) == [(0, 0, 900), (1, 100, 400)]
    assert _plan("2", sizes) == [(0, 0, 900), (1, 100, 400)]  # already that many
    # 4 partitions: 900/1200*4 = 3 pieces and 300/1200*4 = 1 piece
    assert _plan("4", sizes) == [(0, 0, 300), (0, 300, 600), (0, 600, 900), (1, 100, 400)]
    # rounding as Math.round; every range keeps at least one piece
    assert _plan("5", {0: (0, 10), 1: (0, 1000)}) == [(0, 0, 10)] + [
        (1, 200 * k, 200 * (k + 1)) for k in range(5)
    ]
    # never more pieces than offsets
    assert _plan("8", {0: (7, 10)}) == [(0, 7, 8), (0, 8, 9), (0, 9, 10)]


@given(
    st.dictionaries(st.integers(0, 7), st.tuples(st.integers(0, 10**6), st.integers(0, 10**4)), min_size=1),
    st.integers(1, 64),
)
def test_min_partitions_pieces_cover_each_range_exactly(
    spans: dict[int, tuple[int, int]], min_partitions: int
) -> None:
    sizes = {q: (a, a + n) for q, (a, n) in spans.items()}
    planned = _plan(str(min_partitions), sizes)
    for q, (a, b) in sizes.items():
        pieces = [(s, e) for qq, s, e in planned if qq == q]
        if a == b:
            assert not pieces
            continue
        assert pieces[0][0] == a and pieces[-1][1] == b
        assert all(s < e for s, e in pieces)
        assert all(p[1] == n[0] for p, n in itertools.pairwise(pieces))


def test_min_partitions_leaves_a_range_from_earliest_whole() -> None:
    options = parse_read_options({"nameserver": NS, "topic": "t", "minPartitions": "6"}, streaming=True)
    mq0, mq1 = MessageQueue("t", "broker-a", 0), MessageQueue("t", "broker-a", 1)
    ranges = plan_ranges(options, {mq0: 0}, {mq0: 100, mq1: 50})  # mq1 is new: starts at EARLIEST
    assert [(r.queue_id, r.start, r.end) for r in ranges if r.queue_id == 1] == [(1, EARLIEST, 50)]
    assert len([r for r in ranges if r.queue_id == 0]) == 6


def test_write_options() -> None:
    opts = parse_write_options({"nameserver": NS, "topic": "t", "path": "x", "checkpointLocation": "/c"})
    assert (opts.topic, opts.producer_group, opts.batch_size) == ("t", "rocketq_spark_writer", 256)
    with pytest.raises(IllegalArgumentError, match="unknown write option"):
        parse_write_options({"nameserver": NS, "startingOffsets": "earliest"})


def test_offsets_json_round_trip() -> None:
    offsets = {
        MessageQueue("t", "broker-a", 1): 7,
        MessageQueue("t", "broker-b", 0): 3,
        MessageQueue("u", "broker-a", 0): 0,
    }
    obj = to_json_obj(offsets)
    assert obj == {"t": {"broker-a:1": 7, "broker-b:0": 3}, "u": {"broker-a:0": 0}}
    assert from_json_obj(obj) == offsets
    with pytest.raises(IllegalArgumentError):
        from_json_obj({"t": {"broker-a:x": 1}})


def test_split_limit_is_proportional_to_backlog() -> None:
    q = [MessageQueue("t", "broker-a", i) for i in range(4)]
    start = {q[0]: 0, q[1]: 10, q[2]: 0, q[3]: 5}
    latest = {q[0]: 40, q[1]: 40, q[2]: 20, q[3]: 15}  # backlogs 40, 30, 20, 10
    assert split_limit(start, latest, 30) == {q[0]: 12, q[1]: 19, q[2]: 6, q[3]: 8}
    assert split_limit(start, latest, 1000) == latest


@given(
    st.lists(st.tuples(st.integers(0, 1000), st.integers(0, 1000)), min_size=1, max_size=8),
    st.integers(0, 3000),
)
def test_split_limit_never_exceeds_limit_or_backlog(pairs: list[tuple[int, int]], limit: int) -> None:
    queues = [MessageQueue("t", "broker-a", i) for i in range(len(pairs))]
    start = {mq: s for mq, (s, _) in zip(queues, pairs, strict=True)}
    latest = {mq: s + lag for mq, (s, lag) in zip(queues, pairs, strict=True)}
    end = split_limit(start, latest, limit)
    taken = [end[mq] - start[mq] for mq in queues]
    assert all(0 <= t <= latest[mq] - start[mq] for t, mq in zip(taken, queues, strict=True))
    assert sum(taken) == min(limit, sum(latest[mq] - start[mq] for mq in queues))
    assert split_limit(start, latest, limit) == end  # deterministic


@pytest.mark.parametrize("streaming", [False, True])
def test_read_freezes_the_workers_heap(streaming: bool) -> None:
    """read() moves the Python worker's long-lived objects out of the collector's reach
    (Spark's daemon collects after every task) and tunes its allocator; the empty
    partition reads nothing."""
    import gc

    from pyspark.sql.datasource import InputPartition

    from rocketq.spark.reader import RocketMQReader, RocketMQStreamReader, tune_worker_allocator

    opts = parse_read_options({"nameserver": NS, "topic": "a"}, streaming=streaming)
    reader = RocketMQStreamReader(opts) if streaming else RocketMQReader(opts)
    gc.unfreeze()
    tune_worker_allocator.cache_clear()
    try:
        assert list(reader.read(InputPartition(None))) == []
        assert gc.get_freeze_count() > 0
        assert tune_worker_allocator.cache_info().currsize == 1  # and tune_worker_allocator() ran
    finally:
        gc.unfreeze()


def test_allocator_tuning_leaves_other_c_libraries_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without glibc (musl, macOS) there is no mallopt to call: nothing is set, nothing raises,
    and the answer is cached for the process."""
    from rocketq.spark.reader import tune_worker_allocator

    tune_worker_allocator.cache_clear()
    monkeypatch.setattr(platform, "libc_ver", lambda *a, **k: ("musl", "1.2"))
    try:
        assert tune_worker_allocator() is False
        monkeypatch.undo()  # glibc again: the cached answer stands
        assert tune_worker_allocator() is False
    finally:
        tune_worker_allocator.cache_clear()


_MALLINFO = """
import ctypes, sys
class Info(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in
                "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split()]
libc = ctypes.CDLL(None)
libc.mallinfo2.restype = Info
first = b"x" * (4 << 20)
before = libc.mallinfo2().hblkhd >> 20
del first  # glibc's dynamic threshold now sits just above 4 MiB
if sys.argv[1] == "tune":
    from rocketq.spark.reader import tune_worker_allocator
    assert tune_worker_allocator() and tune_worker_allocator()  # once per process, then cached
second = b"x" * (8 << 20)
print(before, libc.mallinfo2().hblkhd >> 20)
"""


@pytest.mark.skipif(
    platform.system() != "Linux" or platform.libc_ver()[0] != "glibc", reason="glibc's mallopt"
)
@pytest.mark.parametrize("tune", [False, True])
def test_read_keeps_large_buffers_on_the_workers_heap(tune: bool) -> None:
    """tune_worker_allocator (called by read()) fixes glibc's mmap threshold above the
    read's multi-MiB buffers: a fresh 8 MiB block comes from the heap, where freed blocks
    are reused, instead of being mmapped (and faulted in page by page) each time. Without
    it, glibc mmaps the block (the control case: the test sees the difference)."""
    out = subprocess.run(
        [sys.executable, "-c", _MALLINFO, "tune" if tune else "default"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.split()
    mmapped_4mib, mmapped_8mib = int(out[0]), int(out[1])
    assert mmapped_4mib >= 4  # glibc's default: a 4 MiB block is mmapped
    assert mmapped_8mib == (0 if tune else 8)


def test_security_options_sign_and_hide_secrets() -> None:
    base = {"nameserver": "127.0.0.1:9876", "topic": "T"}
    read = parse_read_options(
        {**base, "accessKey": "myAccess1", "secretKey": "mySecret1", "securityToken": "myToken1"},
        streaming=False,
    )
    assert (read.security.access_key, read.security.secret_key) == ("myAccess1", "mySecret1")
    assert read.security.security_token == "myToken1" and not read.security.use_tls
    for text in (repr(read), str(read)):
        assert "mySecret1" not in text and "myToken1" not in text
    write = parse_write_options(
        {
            **base,
            "useTls": "true",
            "tls.client.trustCertPath": "/ca.pem",
            "tls.client.keyPassword": "pw123456",
        }
    )
    assert write.security.use_tls and write.security.tls is not None
    assert write.security.tls.client_trust_cert_path == "/ca.pem"
    assert "pw123456" not in repr(write)
    with pytest.raises(IllegalArgumentError, match="together"):
        parse_read_options({**base, "accessKey": "onlyAccess"}, streaming=False)
