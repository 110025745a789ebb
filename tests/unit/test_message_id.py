"""offsetMsgId and UNIQ_KEY creation and decoding."""

from __future__ import annotations

import datetime as dt
import ipaddress
import itertools
import os
import re
import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.errors import IllegalArgumentError
from rocketq.protocol.message_id import (
    UniqueIdGenerator,
    create_offset_msg_id,
    decode_offset_msg_id,
    decode_unique_id,
    host_to_bytes,
    local_ip_bytes,
    new_unique_id,
    new_unique_ids,
)

UTC = dt.timezone.utc
HEX32 = re.compile(r"^[0-9A-F]{32}$")


def _ms(
    year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0, *, tz: dt.tzinfo = UTC
) -> int:
    return int(dt.datetime(year, month, day, hour, minute, second, tzinfo=tz).timestamp() * 1000)


class FakeClock:
    def __init__(self, ms: int) -> None:
        self.ms = ms

    def __call__(self) -> float:
        return self.ms / 1000.0


# --------------------------------------------------------------------------- offsetMsgId
def test_offset_msg_id_vector() -> None:
    assert create_offset_msg_id(("127.0.0.1", 10911), 0) == "7F00000100002A9F0000000000000000"
    assert create_offset_msg_id(("127.0.0.1", 10911), 3612) == "7F00000100002A9F0000000000000E1C"
    assert decode_offset_msg_id("7f00000100002a9f0000000000000e1c") == (("127.0.0.1", 10911), 3612)


def test_offset_msg_id_ipv6() -> None:
    msg_id = create_offset_msg_id(("fd00::2", 10911), 2**40)
    assert msg_id == "FD00000000000000000000000000000200002A9F0000010000000000"
    assert decode_offset_msg_id(msg_id) == (("fd00::2", 10911), 2**40)


@pytest.mark.parametrize(
    "bad", ["", "7F000001", "7F00000100002A9F000000000000000", "Z" * 32, "0" * 40, "0" * 57]
)
def test_offset_msg_id_rejects(bad: str) -> None:
    with pytest.raises(IllegalArgumentError):
        decode_offset_msg_id(bad)


def test_offset_msg_id_bad_input() -> None:
    with pytest.raises(IllegalArgumentError):
        create_offset_msg_id(("localhost", 1), 0)
    with pytest.raises(IllegalArgumentError):
        create_offset_msg_id(("127.0.0.1", 1), 2**63)


@given(
    st.one_of(st.ip_addresses(v=4), st.ip_addresses(v=6)),
    st.integers(0, 65535),
    st.integers(0, 2**63 - 1),
)
def test_offset_msg_id_round_trip(
    ip: ipaddress.IPv4Address | ipaddress.IPv6Address, port: int, offset: int
) -> None:
    msg_id = create_offset_msg_id((str(ip), port), offset)
    assert len(msg_id) == (32 if ip.version == 4 else 56)
    assert msg_id == msg_id.upper()
    (got_ip, got_port), got_offset = decode_offset_msg_id(msg_id)
    assert (ipaddress.ip_address(got_ip), got_port, got_offset) == (ip, port, offset)


def test_host_to_bytes() -> None:
    assert host_to_bytes(("127.0.0.1", 10911)) == bytes.fromhex("7f000001 00002a9f")
    assert len(host_to_bytes(("::1", 1))) == 20


# --------------------------------------------------------------------------- UNIQ_KEY
def test_generator_layout_ipv4() -> None:
    now = _ms(2026, 11, 21, 12, 0, 0)
    gen = UniqueIdGenerator(bytes([192, 0, 2, 2]), clock=FakeClock(now), tz=UTC, pid=0x12345, loader_hash=-1)
    first, second = gen.next_id(), gen.next_id()
    span = now - _ms(2026, 11, 1)
    assert first == f"C00002022345FFFFFFFF{span:08X}0000"
    assert second.endswith("0001") and second[:-4] == first[:-4]
    info = decode_unique_id(first, now_ms=now + 1, tz=UTC)
    assert (info.ip, info.pid, info.timestamp_ms, info.counter) == ("192.0.2.2", 0x2345, now, 0)
    assert info.loader_hash == 0xFFFFFFFF and info.ms_in_month == span


def test_generator_ipv6_form() -> None:
    gen = UniqueIdGenerator(
        ipaddress.IPv6Address("fd00::2").packed, clock=FakeClock(_ms(2026, 11, 2)), tz=UTC
    )
    uniq = gen.next_id()
    assert len(uniq) == 56 and uniq.startswith("FD000000000000000000000000000002")
    assert decode_unique_id(uniq, now_ms=_ms(2026, 11, 3), tz=UTC).ip == "fd00::2"


def test_generator_counter_wraps_and_month_rolls() -> None:
    clock = FakeClock(_ms(2026, 1, 31, 23, 59, 59))
    gen = UniqueIdGenerator(b"\x0a\x00\x00\x01", clock=clock, tz=UTC, pid=1, loader_hash=2)
    ids = [gen.next_id() for _ in range(0x10001)]
    assert ids[0xFFFF].endswith("FFFF") and ids[0x10000].endswith("0000")
    # 30 days into a month the (int) span exceeds 2^31: still 8 hex digits, decoded unsigned
    assert int(ids[0][-12:-4], 16) == clock.ms - _ms(2026, 1, 1) > 2**31
    assert decode_unique_id(ids[0], now_ms=clock.ms + 5, tz=UTC).timestamp_ms == clock.ms
    clock.ms = _ms(2026, 2, 1, 0, 0, 1)
    rolled = gen.next_id()
    assert int(rolled[-12:-4], 16) == 1000
    # decoded "now" in the next month: the span lies in the future -> previous month (Java)
    assert decode_unique_id(ids[0], now_ms=clock.ms, tz=UTC).timestamp_ms == _ms(2026, 1, 31, 23, 59, 59)


def test_generator_default_ip_and_new_unique_id() -> None:
    assert len(local_ip_bytes()) == 4
    gen = UniqueIdGenerator()
    uniq = gen.next_id()
    assert HEX32.match(uniq)
    assert decode_unique_id(uniq).pid == os.getpid() & 0xFFFF
    a, b = new_unique_id(), new_unique_id()
    assert HEX32.match(a) and HEX32.match(b) and a != b
    assert a[:20] == b[:20]  # same process-wide generator: same fixed prefix


def test_ids_in_bulk_equal_ids_one_by_one_and_wrap_alike() -> None:
    # next_ids(n) (an automatic batch's ids): what n next_id() calls at the same instant give
    now = _ms(2026, 3, 9, 12)
    one = UniqueIdGenerator(b"\x0a\x00\x00\x01", clock=FakeClock(now), tz=UTC, pid=1, loader_hash=2)
    bulk = UniqueIdGenerator(b"\x0a\x00\x00\x01", clock=FakeClock(now), tz=UTC, pid=1, loader_hash=2)
    expected = [one.next_id() for _ in range(0x10003)]
    got = bulk.next_ids(0xFFFE) + bulk.next_ids(5)  # the second call crosses the short's wrap
    assert got == expected
    assert bulk.next_id() == one.next_id()  # the counter continues where the bulk call left it
    assert bulk.next_ids(0) == []
    a, b = new_unique_ids(2)
    assert HEX32.match(a) and HEX32.match(b) and a != b and a[:20] == new_unique_id()[:20]


@given(
    ms_in_month=st.integers(0, 31 * 86_400_000 - 1),
    counter=st.integers(0, 3 * 0x10000),
    ip=st.sampled_from([b"\x00\x00\x00\x00", b"\xff\xfe\x0a\x01", bytes(range(16))]),
)
def test_ids_equal_the_hex_of_their_fields(ms_in_month: int, counter: int, ip: bytes) -> None:
    # the ids are written byte by byte from a table: every byte of the time field and the
    # counter must come out as the plain 12-digit upper-case hex of (span << 16 | short)
    now = _ms(2026, 1, 1) + ms_in_month
    gen = UniqueIdGenerator(ip, clock=FakeClock(now), tz=UTC, pid=0xBEEF, loader_hash=0x01020304)
    gen._counter = itertools.count(counter)
    prefix = (ip + bytes.fromhex("BEEF01020304")).hex().upper()
    expected = f"{prefix}{ms_in_month << 16 | (counter & 0xFFFF):012X}"
    assert gen.next_id() == expected
    gen._counter = itertools.count(counter)
    assert gen.next_ids(2) == [expected, f"{prefix}{ms_in_month << 16 | ((counter + 1) & 0xFFFF):012X}"]


def test_generator_rejects_bad_ip() -> None:
    with pytest.raises(IllegalArgumentError):
        UniqueIdGenerator(b"\x01\x02\x03")


def test_generator_is_thread_safe() -> None:
    gen = UniqueIdGenerator(b"\x7f\x00\x00\x01", clock=FakeClock(_ms(2026, 5, 5)), tz=UTC)
    results: list[list[str]] = [[] for _ in range(8)]

    def work(out: list[str]) -> None:  # single ids and ids in bulk, no lock between them
        for _ in range(500):
            out.append(gen.next_id())
            out.extend(gen.next_ids(3))

    threads = [threading.Thread(target=work, args=(r,)) for r in results]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    everything = [i for r in results for i in r]
    assert len(set(everything)) == len(everything) == 16000


@pytest.mark.parametrize("bad", ["", "ABC", "G" * 32, "0" * 33, "0" * 55])
def test_decode_unique_id_rejects(bad: str) -> None:
    with pytest.raises(IllegalArgumentError):
        decode_unique_id(bad)


@given(
    st.one_of(st.binary(min_size=4, max_size=4), st.binary(min_size=16, max_size=16)),
    st.integers(0, 0xFFFF),
    st.integers(-(2**31), 2**32 - 1),
    st.integers(_ms(2001, 1, 1), _ms(2099, 1, 1)),
    st.integers(0, 0x1FFFF),
    st.integers(1, 3_600_000),
)
def test_unique_id_round_trip(ip: bytes, pid: int, loader: int, now: int, skip: int, delay: int) -> None:
    gen = UniqueIdGenerator(ip, clock=FakeClock(now), tz=UTC, pid=pid, loader_hash=loader)
    gen._counter = itertools.count(skip)  # start the counter anywhere (it wraps at 16 bits)
    uniq = gen.next_id()
    assert len(uniq) == (32 if len(ip) == 4 else 56) and uniq == uniq.upper()
    info = decode_unique_id(uniq, now_ms=now + delay, tz=UTC)
    assert ipaddress.ip_address(info.ip).packed == ip
    assert (info.pid, info.loader_hash, info.counter) == (pid, loader & 0xFFFFFFFF, skip & 0xFFFF)
    assert info.timestamp_ms == now


def test_unique_id_month_in_other_time_zone() -> None:
    tz = dt.timezone(dt.timedelta(hours=8))
    now = _ms(2026, 3, 1, 0, 30, tz=tz)  # still February in UTC
    uniq = UniqueIdGenerator(b"\x01\x02\x03\x04", clock=FakeClock(now), tz=tz).next_id()
    assert int(uniq[-12:-4], 16) == 30 * 60 * 1000
    assert decode_unique_id(uniq, now_ms=now + 10, tz=tz).timestamp_ms == now
