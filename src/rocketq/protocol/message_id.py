"""Message ids: the broker's offsetMsgId and the producer's UNIQ_KEY.

Mirrors ``org.apache.rocketmq.common.message.MessageDecoder`` (``createMessageId`` /
``decodeMessageId``) and ``org.apache.rocketmq.common.message.MessageClientIDSetter``.

* **offsetMsgId** = uppercase hex of ``store host IP (4 or 16 bytes) + port (int) +
  commit-log offset (long)``: 32 hex characters for IPv4, 56 for IPv6. A decoder tells
  the two apart by length only.
* **UNIQ_KEY** = uppercase hex of ``IP (4 or 16) + pid (low 16 bits) + class-loader hash
  (int) + milliseconds since the start of the current month (int) + counter (short)``:
  32 hex characters for IPv4, 56 for IPv6. The first 22 (or 44) characters are fixed
  per generator; :class:`UniqueIdGenerator` computes them once.

Invariants: every id produced here is uppercase hex; decoders accept either case and
raise :class:`~rocketq.errors.IllegalArgumentError` for anything else. The only
process-wide state is the lazily created default generator behind
:func:`new_unique_id`; tests inject their own generator (ip, pid, clock, time zone).
"""

from __future__ import annotations

import datetime as _dt
import itertools
import os
import socket
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass

from rocketq._process_local import ProcessLocal
from rocketq.errors import IllegalArgumentError

__all__ = [
    "HostAddr",
    "UniqueIdGenerator",
    "UniqueIdInfo",
    "create_offset_msg_id",
    "decode_offset_msg_id",
    "decode_unique_id",
    "host_to_bytes",
    "local_ip_bytes",
    "new_unique_id",
    "new_unique_ids",
]

#: An ``(ip, port)`` pair; ``ip`` is a dotted IPv4 or an IPv6 literal (no brackets).
HostAddr = tuple[str, int]

_PORT_OFFSET = struct.Struct(">iq")
_PORT = struct.Struct(">i")


def host_to_bytes(host: HostAddr) -> bytes:
    """``InetSocketAddress`` as stored: the 4 or 16 address bytes followed by the port (int).

    The family is chosen by the literal: an ``ip`` containing ``:`` is IPv6.
    Raises :class:`IllegalArgumentError` for an unparsable address or port.
    """
    ip, port = host
    try:
        raw = socket.inet_pton(socket.AF_INET6 if ":" in ip else socket.AF_INET, ip)
        return raw + _PORT.pack(port)
    except (OSError, struct.error, TypeError) as exc:
        raise IllegalArgumentError(f"invalid host address {host!r}: {exc}") from exc


def _ip_to_str(raw: bytes) -> str:
    return socket.inet_ntop(socket.AF_INET6 if len(raw) == 16 else socket.AF_INET, raw)


def _unhex(text: str, what: str) -> bytes:
    try:
        return bytes.fromhex(text)
    except ValueError as exc:
        raise IllegalArgumentError(f"{what} is not hex: {text!r}") from exc


# --------------------------------------------------------------------------- offsetMsgId
def create_offset_msg_id(store_host: HostAddr, commit_log_offset: int) -> str:
    """``MessageDecoder.createMessageId``: 32 (IPv4) or 56 (IPv6) uppercase hex characters."""
    addr = host_to_bytes(store_host)
    try:
        tail = struct.pack(">q", commit_log_offset)
    except struct.error as exc:
        raise IllegalArgumentError(f"commit-log offset out of range: {commit_log_offset}") from exc
    return (addr + tail).hex().upper()


def decode_offset_msg_id(msg_id: str) -> tuple[HostAddr, int]:
    """``MessageDecoder.decodeMessageId``: ``((ip, port), commit_log_offset)``.

    Java tells IPv4 from IPv6 by the length (32 characters or not); anything but 32 or
    56 hex characters raises :class:`IllegalArgumentError`.
    """
    if len(msg_id) not in (32, 56):
        raise IllegalArgumentError(f"offset message id must be 32 or 56 hex characters: {msg_id!r}")
    raw = _unhex(msg_id, "offset message id")
    ip_len = 4 if len(raw) == 16 else 16
    port, offset = _PORT_OFFSET.unpack_from(raw, ip_len)
    return (_ip_to_str(raw[:ip_len]), port), offset


# --------------------------------------------------------------------------- UNIQ_KEY
def local_ip_bytes() -> bytes:
    """The 4 bytes of this host's outgoing IPv4 address (``UtilAll.getIP``, simplified).

    Java prefers the first public IPv4 of any interface, else the first private one.
    Here the kernel's route choice is asked through an unconnected UDP socket (no packet
    is sent). Without any non-loopback IPv4 the address is 4 bytes of the clock, like
    ``MessageClientIDSetter.createFakeIP``.
    """
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            sock.connect(("192.0.2.1", 9))  # TEST-NET-1: routing lookup only
            ip = str(sock.getsockname()[0])
        if not ip.startswith("127.") and ip != "0.0.0.0":
            return socket.inet_aton(ip)
    except OSError:
        pass
    return struct.pack(">q", int(time.time() * 1000))[4:]


def _month_bounds_ms(now_ms: int, tz: _dt.tzinfo | None) -> tuple[int, int]:
    """Start of the month containing ``now_ms`` and of the next one (``Calendar`` local time)."""
    now = _dt.datetime.fromtimestamp(now_ms / 1000.0, tz)
    start = now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    nxt = (
        start.replace(year=start.year + 1, month=1)
        if start.month == 12
        else start.replace(month=start.month + 1)
    )
    return int(start.timestamp() * 1000), int(nxt.timestamp() * 1000)


def _previous_month_start_ms(month_start_ms: int, tz: _dt.tzinfo | None) -> int:
    return _month_bounds_ms(month_start_ms - 1, tz)[0]


#: "00".."FF": a UNIQ_KEY's varying bytes are written through it
_HEX_BYTE: list[str] = [f"{i:02X}" for i in range(256)]


class UniqueIdGenerator:
    """``MessageClientIDSetter``: creates UNIQ_KEY values; thread-safe.

    ``ip`` is 4 bytes (IPv4, 32-hex ids; the default is :func:`local_ip_bytes`) or 16
    bytes (IPv6, 56-hex ids). ``clock`` returns wall-clock seconds (``time.time``);
    ``tz`` is the zone whose month start anchors the time field (``None`` = local, as
    Java's ``Calendar.getInstance()``). ``pid`` defaults to ``os.getpid()`` and
    ``loader_hash`` (Java: the class loader's ``hashCode``) to a random int.
    """

    __slots__ = ("_clock", "_counter", "_month", "_prefix", "_tz")

    def __init__(
        self,
        ip: bytes | None = None,
        *,
        clock: Callable[[], float] = time.time,
        tz: _dt.tzinfo | None = None,
        pid: int | None = None,
        loader_hash: int | None = None,
    ) -> None:
        ip_bytes = local_ip_bytes() if ip is None else bytes(ip)
        if len(ip_bytes) not in (4, 16):
            raise IllegalArgumentError(f"ip must be 4 or 16 bytes, got {len(ip_bytes)}")
        pid16 = (os.getpid() if pid is None else pid) & 0xFFFF
        loader = (int.from_bytes(os.urandom(4), "big") if loader_hash is None else loader_hash) & 0xFFFFFFFF
        self._prefix = (ip_bytes + struct.pack(">HI", pid16, loader)).hex().upper()
        self._clock = clock
        self._tz = tz
        # AtomicInteger COUNTER: next() on an itertools.count is atomic under the GIL (no lock)
        self._counter = itertools.count()
        # (start of the current month, start of the next) in ms, replaced as one object, read
        # without a lock as Java reads startTime/nextStartTime; (0, 0) computes it on first use
        self._month = (0, 0)

    def _span(self, now_ms: int) -> int:
        """``(int) (now - startTime)`` (the low 32 bits), the month moved on first when due."""
        start, next_start = self._month
        if now_ms >= next_start:
            self._month = month = _month_bounds_ms(now_ms, self._tz)
            start = month[0]
        return (now_ms - start) & 0xFFFFFFFF

    def next_id(self) -> str:
        """A new id: the fixed prefix + ms since the month start (int) + counter (short)."""
        span = self._span(round(self._clock() * 1000))
        # MessageClientIDSetter.createUniqIDBuffer: (int) cast of the span and (short) cast of
        # AtomicInteger.getAndIncrement(); both keep the low bits. Written byte by byte from a
        # table: a format spec (``:012X``) costs a compiled build a str.format call, twice
        # the time of the whole id (benchmarks/README.md, speed10)
        count = next(self._counter) & 0xFFFF
        h = _HEX_BYTE
        return "".join(
            [self._prefix, h[span >> 24], h[span >> 16 & 0xFF], h[span >> 8 & 0xFF], h[span & 0xFF],
             h[count >> 8], h[count & 0xFF]]
        )  # fmt: skip

    def next_ids(self, n: int) -> list[str]:
        """``n`` new ids at once (one clock read for all; the ids of an automatic batch): the
        same time field, the next ``n`` counters (consecutive unless another thread takes
        ids meanwhile; wrapping as a short)."""
        # the time field as next_id writes it: a helper both call cost next_id ~120 ns, a
        # fifth of a whole id (benchmarks/README.md, speed11)
        span = self._span(round(self._clock() * 1000))
        h = _HEX_BYTE
        head = "".join(
            [self._prefix, h[span >> 24], h[span >> 16 & 0xFF], h[span >> 8 & 0xFF], h[span & 0xFF]]
        )
        counter = self._counter
        ids = []
        for _ in range(n):
            count = next(counter) & 0xFFFF
            ids.append(head + h[count >> 8] + h[count & 0xFF])
        return ids


#: the process-wide generator; a forked child makes its own (its pid, a fresh counter and
#: loader hash): with its parent's it would hand out the parent's ids
_default = ProcessLocal(UniqueIdGenerator)


def new_unique_id() -> str:
    """A UNIQ_KEY from the process-wide :class:`UniqueIdGenerator`."""
    return _default.get().next_id()


def new_unique_ids(n: int) -> list[str]:
    """``n`` UNIQ_KEYs from the process-wide generator (:meth:`UniqueIdGenerator.next_ids`)."""
    return _default.get().next_ids(n)


@dataclass(frozen=True)
class UniqueIdInfo:
    """What a UNIQ_KEY carries (``MessageClientIDSetter.getIPStrFromID``/``getNearlyTimeFromID``).

    ``timestamp_ms`` is reconstructed the Java way: the month start of "now" plus the
    stored span, or of the previous month when that would lie in the future.
    """

    ip: str
    pid: int
    timestamp_ms: int
    counter: int
    #: The class-loader hash field (any per-process random int).
    loader_hash: int = 0
    #: The raw field: milliseconds since the start of the producer's month.
    ms_in_month: int = 0


def decode_unique_id(uniq: str, *, now_ms: int | None = None, tz: _dt.tzinfo | None = None) -> UniqueIdInfo:
    """Decode a 32-hex (IPv4) or 56-hex (IPv6) UNIQ_KEY.

    ``now_ms`` (default: the wall clock) and ``tz`` (default: local) anchor the month,
    as Java's ``getNearlyTimeFromID`` does. Raises :class:`IllegalArgumentError`.
    """
    if len(uniq) not in (32, 56):
        raise IllegalArgumentError(f"unique message id must be 32 or 56 hex characters: {uniq!r}")
    raw = _unhex(uniq, "unique message id")
    ip_len = len(raw) - 12
    pid, loader, span, counter = struct.unpack_from(">HIIH", raw, ip_len)
    if now_ms is None:
        now_ms = int(time.time() * 1000)
    month_start, _ = _month_bounds_ms(now_ms, tz)
    if month_start + span >= now_ms:
        month_start = _previous_month_start_ms(month_start, tz)
    return UniqueIdInfo(
        ip=_ip_to_str(raw[:ip_len]),
        pid=pid,
        timestamp_ms=month_start + span,
        counter=counter,
        loader_hash=loader,
        ms_in_month=span,
    )
